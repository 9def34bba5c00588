//! Dump and restore end to end (docs/dump-format.md): the real server binary on both backends,
//! the real `ardacat` CLI, files on disk. A catalogue with every type and edge value goes to the
//! other backend and back byte for byte; two dumps are byte-identical; the wire `dump` is the
//! CLI's file; gzip and zstd; `--into`; what a non-root caller sees; damaged, truncated and
//! foreign files and a restore failing midway change nothing.

#[macro_use]
mod common;
#[path = "common/cli.rs"]
mod cli;
#[path = "common/dump_fixture.rs"]
mod fixture;

use std::path::Path;

use common::{Backend, ROOT_PASSWORD, RawConn, TestDb, TestServer, ok};
use sha2::{Digest, Sha256};

fn other(b: Backend) -> Backend {
    match b {
        Backend::Sqlite => Backend::Postgres,
        Backend::Postgres => Backend::Sqlite,
    }
}

/// `dump <dir>` over the wire as root, as the bytes a file holds.
async fn wire_dump(srv: &TestServer, password: &str, dir: &str) -> Vec<u8> {
    let mut c = RawConn::login(srv.tcp, "root", Some(password)).await;
    let lines = ok(&mut c, &format!("dump {dir}")).await;
    lines.iter().flat_map(|l| format!("{l}\n").into_bytes()).collect()
}

async fn dump_file(srv: &TestServer, dir: &Path, login: &str, password: &str, path: &str, file: &str) -> Vec<u8> {
    let (code, _, err) = cli::cli_as(dir, srv.tcp, login, password, &["dump", path, "-o", file]).await;
    assert_eq!(code, 0, "dump {path} -o {file}: {err}");
    // No progress display and no summary when standard error is not a terminal.
    assert_eq!(err, "", "dump wrote to a pipe");
    std::fs::read(dir.join(file)).expect("read dump")
}

async fn restore(srv: &TestServer, dir: &Path, password: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["restore"];
    all.extend_from_slice(args);
    let (code, _, err) = cli::cli_as(dir, srv.tcp, "root", password, &all).await;
    (code, err)
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("utf8 dump")
}

/// SQLite → dump → restore on PostgreSQL → dump (and the other way): identical files; root's
/// password and every user come from the dump; the wire answer is the CLI's file; two dumps of
/// the same catalogue are byte-identical.
async fn round_trip_to_the_other_backend(backend: Backend) {
    let src = TestServer::start(backend).await;
    fixture::build(src.tcp, ROOT_PASSWORD).await;
    let pw = fixture::NEW_ROOT_PASSWORD;
    let tmp = tempfile::tempdir().unwrap();
    let first = dump_file(&src, tmp.path(), "root", pw, "/", "one.dump").await;
    let second = dump_file(&src, tmp.path(), "root", pw, "/", "two.dump").await;
    assert_eq!(first, second, "two dumps of the same catalogue differ");
    assert_eq!(wire_dump(&src, pw, "/").await, first, "the wire dump is not the CLI's file");
    let t = text(&first);
    assert!(t.starts_with("ARDACAT-DUMP\t1\t/\n"), "{}", &t[..40]);
    for needle in [
        "\nU\talice\t$argon2",
        "\nUS\talice\t/C=CH/O=Grid/CN=Alice Ünïcödé\n",
        "\nG\tteam\troot\n",
        "\nGM\tteam\tbob\n",
        "\nSITE\tcern\tmd.cern.ch:8822\n",
        "\nSITE\tral\t\n",
        "\nRF\tguid-1\troot\n",
        "\nR\tguid-1\tral\n",
        "\nA\t/data\ti\tint\t1\n",
        "\nX\t/data\tix\ti\tFILE\n",
        "\nL\t/data\tg\tteam\trwx\n",
        "\nS\t/data\tseq\t5\t105\n",
        "\nEL\t/data\te1\tg\tteam\tr--\n",
        "\nK\t/data\tr_ref\treference\tr\t/refs\tcode\n",
        "\nK\t/data\ti_chk\tcheck\ti > -1 or i <= -1\n",
        "\tünï\\ncöde\\twith\\\\back\\rslash \\\\N \\x01\\x7f\t",
        "\nE\t/data\te2\talice\tteam\t644\t-9223372036854775808\t0\t\\N\t\t\\N\tfalse\t\\N\t\\N\n",
        "\tfalse\t\\N\t\\N\n",
    ] {
        assert!(t.contains(needle), "dump lacks {needle:?}");
    }
    assert!(t.contains(&format!("\t{}\n", "x".repeat(1_000_000))), "the longest varchar is not whole");

    let dst = TestServer::start(other(backend)).await;
    let (code, err) = restore(&dst, tmp.path(), ROOT_PASSWORD, &["-i", "one.dump"]).await;
    assert_eq!(code, 0, "restore: {err}");
    assert_eq!(err, "", "restore wrote to a pipe");
    // Root's password is the dump's now, and so are the other users'.
    let back = dump_file(&dst, tmp.path(), "root", pw, "/", "back.dump").await;
    assert!(back == first, "the dump restored on the other backend dumps differently");
    let mut alice = RawConn::login(dst.tcp, "alice", Some(fixture::ALICE_PASSWORD)).await;
    assert_eq!(ok(&mut alice, "whoami").await, ["alice"]);
    let (code, _, _) = cli::cli_as(tmp.path(), dst.tcp, "root", ROOT_PASSWORD, &["-c", "whoami"]).await;
    assert_ne!(code, 0, "root's old password still works after restoring the dump of /");
    // The sequence goes on where it was.
    let mut c = RawConn::login(dst.tcp, "root", Some(pw)).await;
    assert_eq!(ok(&mut c, "sequence_next /data/seq").await, ["105"]);
}

/// `.gz` and `.zst` by the file name, recognised on restore by their bytes; `--into` re-roots
/// the subtree; compressed dumps are deterministic too.
async fn compressed_dumps_and_into(backend: Backend) {
    let srv = TestServer::start(backend).await;
    fixture::build(srv.tcp, ROOT_PASSWORD).await;
    let pw = fixture::NEW_ROOT_PASSWORD;
    let tmp = tempfile::tempdir().unwrap();
    let plain = dump_file(&srv, tmp.path(), "root", pw, "/data", "data.dump").await;
    let gz = dump_file(&srv, tmp.path(), "root", pw, "/data", "data.dump.gz").await;
    let zst = dump_file(&srv, tmp.path(), "root", pw, "/data", "data.dump.zst").await;
    assert_eq!(&gz[..2], [0x1f, 0x8b], "not gzip");
    assert_eq!(&zst[..4], [0x28, 0xb5, 0x2f, 0xfd], "not zstd");
    assert!(gz.len() < plain.len() / 10 && zst.len() < plain.len() / 10, "not compressed");
    assert_eq!(dump_file(&srv, tmp.path(), "root", pw, "/data", "again.gz").await, gz, "gzip output differs");
    let mut c = RawConn::login(srv.tcp, "root", Some(pw)).await;
    ok(&mut c, "createdir /copies").await;
    for (file, into) in [("data.dump.gz", "/copies/gz"), ("data.dump.zst", "/copies/zst")] {
        let (code, err) = restore(&srv, tmp.path(), pw, &["-i", file, "--into", into]).await;
        assert_eq!(code, 0, "restore {file}: {err}");
        let again = wire_dump(&srv, pw, into).await;
        let expected: Vec<&str> = text(&plain).lines().filter(|l| !l.starts_with("END\t")).collect();
        let got: Vec<String> = text(&again)
            .lines()
            .filter(|l| !l.starts_with("END\t"))
            .map(|l| l.replacen(&format!("\t{into}"), "\t/data", 1))
            .collect();
        assert_eq!(got, expected, "{file} restored into {into}");
    }
    // The entries are there with their values, owners and modes.
    assert_eq!(ok(&mut c, "getattr /copies/zst/e2 i").await, ["e2", "-9223372036854775808"]);
    // Every restored table has its planner statistics (the restore gathered them).
    if backend == Backend::Postgres {
        let stats = common::pg_planner_statistics(&srv.db, "/copies").await;
        assert!(!stats.is_empty() && stats.iter().all(|(_, s)| *s), "{stats:?}");
    }
}

/// A non-root caller dumps what it may read: no users, hashes, groups or sites, no collection
/// or entry it cannot read; and it may not restore.
async fn non_root_dumps_what_it_may_read(backend: Backend) {
    let srv = TestServer::start(backend).await;
    fixture::build(srv.tcp, ROOT_PASSWORD).await;
    let tmp = tempfile::tempdir().unwrap();
    let mine = dump_file(&srv, tmp.path(), "alice", fixture::ALICE_PASSWORD, "/", "alice.dump").await;
    let t = text(&mine);
    for absent in
        ["$argon2", "\nU\t", "\nUS\t", "\nG\t", "\nGM\t", "\nSITE\t", "\nRF\t", "\nR\t", "/private", "\nE\t/data\te4\t"]
    {
        assert!(!t.contains(absent), "alice's dump holds {absent:?}");
    }
    for present in ["\nC\t/data\t", "\nE\t/data\te1\t", "\nE\t/data/sub/deeper\td1\t", "\nEL\t/data\te1\t"] {
        assert!(t.contains(present), "alice's dump lacks {present:?}");
    }
    let all = dump_file(&srv, tmp.path(), "root", fixture::NEW_ROOT_PASSWORD, "/", "root.dump").await;
    assert!(text(&all).contains("\nE\t/data\te4\t") && text(&all).contains("/private"));
    // `dump_count` (the CLI's ETA) counts what that caller's dump holds, by the same rules.
    let entries = |d: &[u8]| text(d).matches("\nE\t").count().to_string();
    let mut a = RawConn::login(srv.tcp, "alice", Some(fixture::ALICE_PASSWORD)).await;
    assert_eq!(ok(&mut a, "dump_count /").await, [entries(&mine)]);
    assert_eq!(ok(&mut a, "dump_count").await, [entries(&mine)]);
    let refused = String::from_utf8_lossy(&a.cmd("dump_count /private").await).into_owned();
    assert!(refused.starts_with("4 "), "{refused:?}");
    let mut r = RawConn::login(srv.tcp, "root", Some(fixture::NEW_ROOT_PASSWORD)).await;
    assert_eq!(ok(&mut r, "dump_count /").await, [entries(&all)]);
    assert_ne!(entries(&all), entries(&mine), "the fixture hides entries from alice");
    let (code, _, err) = cli::cli_as(
        tmp.path(),
        srv.tcp,
        "alice",
        fixture::ALICE_PASSWORD,
        &["restore", "-i", "alice.dump", "--into", "/x"],
    )
    .await;
    assert_ne!(code, 0);
    assert!(err.contains("only root may restore"), "{err}");
    let (code, _, err) =
        cli::cli_as(tmp.path(), srv.tcp, "alice", fixture::ALICE_PASSWORD, &["dump", "/private", "-o", "p.dump"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("Error 4"), "{err}");
    assert!(!tmp.path().join("p.dump").exists(), "a failed dump left its file");
}

/// A flipped byte, a truncated file (no trailer; cut mid-record; a cut gzip stream), a wrong
/// version and a file that is no dump are refused with a clear message, and nothing changes.
async fn damaged_dumps_change_nothing(backend: Backend) {
    let srv = TestServer::start(backend).await;
    fixture::build(srv.tcp, ROOT_PASSWORD).await;
    let pw = fixture::NEW_ROOT_PASSWORD;
    let tmp = tempfile::tempdir().unwrap();
    let good = dump_file(&srv, tmp.path(), "root", pw, "/data", "good.dump").await;
    let gz = dump_file(&srv, tmp.path(), "root", pw, "/data", "good.dump.gz").await;
    let before = wire_dump(&srv, pw, "/").await;
    let t = text(&good);
    let mut flipped = good.clone();
    let at = t.find("\nE\t/data\te3\t").unwrap() + 12;
    flipped[at] ^= 0x01;
    let no_trailer = t[..t.rfind("END\t").unwrap()].to_string();
    let cut = &good[..good.len() * 2 / 3];
    let version = t.replacen("ARDACAT-DUMP\t1\t", "ARDACAT-DUMP\t2\t", 1);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("flipped.dump", flipped, "checksum mismatch"),
        ("no-trailer.dump", no_trailer.into_bytes(), "truncated"),
        ("cut.dump", cut.to_vec(), "damaged dump"),
        ("cut.dump.gz", gz[..gz.len() - 20].to_vec(), "reading the dump"),
        ("version.dump", version.into_bytes(), "format version 2"),
        ("foreign.dump", b"FILE,a,b\nx,1,2\n".to_vec(), "not an ardacat dump header"),
        ("empty.dump", Vec::new(), "damaged dump"),
    ];
    for (name, bytes, message) in cases {
        std::fs::write(tmp.path().join(name), bytes).unwrap();
        let (code, err) = restore(&srv, tmp.path(), pw, &["-i", name, "--into", "/restored"]).await;
        assert_ne!(code, 0, "{name} was accepted");
        assert!(err.contains(message), "{name}: {err}");
        assert_eq!(wire_dump(&srv, pw, "/").await, before, "{name} changed the catalogue");
    }
    // The good file is fine.
    let (code, err) = restore(&srv, tmp.path(), pw, &["-i", "good.dump", "--into", "/restored"]).await;
    assert_eq!(code, 0, "{err}");
}

/// A dump whose checksum is right but whose 4500th entry does not fit its attribute: the
/// restore fails there, after chunks of entries went in, and nothing of it stays.
async fn restore_failing_midway_changes_nothing(backend: Backend) {
    let srv = TestServer::start(backend).await;
    let tmp = tempfile::tempdir().unwrap();
    let mut lines = vec![
        "ARDACAT-DUMP\t1\t/m".to_string(),
        "C\t/m\troot\troot\t755".into(),
        "A\t/m\tn\tint\t0".into(),
        "S\t/m\tq\t1\t7".into(),
    ];
    for i in 0..5000 {
        let v = if i == 4500 { "not a number".to_string() } else { i.to_string() };
        lines.push(format!("E\t/m\te{i:05}\troot\troot\t644\t{v}"));
    }
    let mut body = String::new();
    for l in &lines {
        body.push_str(l);
        body.push('\n');
    }
    let sum: String = Sha256::digest(body.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    body.push_str(&format!("END\t{}\t5000\t{sum}\n", lines.len() - 1));
    std::fs::write(tmp.path().join("bad.dump"), &body).unwrap();
    let before = wire_dump(&srv, ROOT_PASSWORD, "/").await;
    let (code, err) = restore(&srv, tmp.path(), ROOT_PASSWORD, &["-i", "bad.dump"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("dump line 4505") && err.contains("not a number"), "{err}");
    assert_eq!(wire_dump(&srv, ROOT_PASSWORD, "/").await, before, "a failed restore left something");
    let mut c = RawConn::login(srv.tcp, "root", Some(ROOT_PASSWORD)).await;
    let (code, _) = c.lines("dir /m").await;
    assert_eq!(code, 1, "/m exists after the failed restore");
    // The same file with the bad value fixed restores.
    let fixed = body.replace("\tnot a number\n", "\t4500\n");
    let fixed_lines: Vec<&str> = fixed.lines().collect();
    let mut good = String::new();
    for l in &fixed_lines[..fixed_lines.len() - 1] {
        good.push_str(l);
        good.push('\n');
    }
    let sum: String = Sha256::digest(good.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    good.push_str(&format!("END\t{}\t5000\t{sum}\n", fixed_lines.len() - 2));
    std::fs::write(tmp.path().join("good.dump"), &good).unwrap();
    let (code, err) = restore(&srv, tmp.path(), ROOT_PASSWORD, &["-i", "good.dump"]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(wire_dump(&srv, ROOT_PASSWORD, "/m").await, good.into_bytes());
}

/// The protocol side of a restore: inside one only its own commands; another spoils it (and is
/// refused), and `restore_end` then reports the first problem with nothing kept.
async fn restore_commands_on_the_wire(backend: Backend) {
    let srv = TestServer::start(backend).await;
    let mut c = RawConn::login(srv.tcp, "root", Some(ROOT_PASSWORD)).await;
    ok(&mut c, "createdir /a").await;
    let dump = wire_dump(&srv, ROOT_PASSWORD, "/a").await;
    let lines: Vec<&str> = text(&dump).lines().collect();
    c.send(b"restore /b\n").await;
    let quoted: Vec<String> = lines.iter().map(|l| format!("'{l}'")).collect();
    c.send(format!("restore_put {}\n", quoted.join(" ")).as_bytes()).await;
    let (code, _) = c.lines("dir /").await;
    assert_eq!(code, 3, "another command inside a restore");
    let (code, reply) = c.lines("restore_end").await;
    assert_eq!(code, 3, "{reply:?}");
    assert_eq!(c.lines("dir /b").await.0, 1);
    // Again, cleanly: the restore answers its counts.
    c.send(b"restore /b\n").await;
    c.send(format!("restore_put {}\n", quoted.join(" ")).as_bytes()).await;
    assert_eq!(ok(&mut c, "restore_end").await, ["1", "0"]);
    assert_eq!(c.lines("dir /b").await.0, 0);
    // restore_abort keeps nothing; outside a restore its commands are errors.
    c.send(b"restore /c\n").await;
    c.send(format!("restore_put {}\n", quoted.join(" ")).as_bytes()).await;
    ok(&mut c, "restore_abort").await;
    assert_eq!(c.lines("dir /c").await.0, 1);
    assert_eq!(c.lines("restore_end").await.0, 3);
    assert_eq!(c.lines("restore_put x").await.0, 3);
}

/// `dir` with 60,000 entries of 300 bytes: far more than the socket buffers and the server's
/// row channel hold, so a dump of it waits for a client that does not read.
async fn load_big(root: &mut RawConn, dir: &str) {
    ok(root, &format!("createdir {dir}")).await;
    ok(root, &format!("addattr {dir} t text")).await;
    let pad = "p".repeat(300);
    let mut block = format!("upload {dir} t\n");
    for i in 0..60_000 {
        block.push_str(&format!("put e{i:05} {pad}\n"));
    }
    root.send(block.as_bytes()).await;
    ok(root, "commit").await;
}

/// A dump is one state of the catalogue: writes committed while it streams (its client reads
/// nothing for a while, so the server waits inside the first collection's entries) are not in
/// it, and the next dump has them.
async fn dump_is_one_state_while_writes_go_on(backend: Backend) {
    let srv = TestServer::start(backend).await;
    let mut root = srv.raw().await;
    load_big(&mut root, "/a").await;
    ok(&mut root, "createdir /b").await;
    ok(&mut root, "addattr /b v int").await;
    ok(&mut root, "addentry /b/old v 1").await;

    let mut d = srv.raw().await;
    d.send(b"dump /\n").await;
    let head = d.read_some(4096).await;
    assert!(String::from_utf8_lossy(&head).contains("E\t/a\te00000\t"), "the dump has begun: {head:?}");
    // Committed while the dump waits for its reader.
    ok(&mut root, "addentry /b/new v 2").await;
    ok(&mut root, "setattr /b/old v 3").await;
    ok(&mut root, "createdir /c").await;
    let (_, tail) = d.drain_reply(64 * 1024).await;
    let tail = String::from_utf8_lossy(&tail).into_owned();
    assert!(tail.contains("E\t/b\told\troot\t"), "the dump's end holds /b: {tail}");
    for later in ["E\t/b\tnew\t", "C\t/c\t"] {
        assert!(!tail.contains(later), "a write made during the dump is in it: {later:?}");
    }
    let old = tail.lines().find(|l| l.contains("E\t/b\told\t")).unwrap();
    assert!(old.ends_with("\t1"), "/b/old as before the dump: {old:?}");
    let next = wire_dump(&srv, ROOT_PASSWORD, "/b").await;
    assert!(text(&next).contains("E\t/b\tnew\t") && text(&next).contains("E\t/b\told\troot\troot\t644\t3\n"));
}

/// A dump that ends early — cancelled with CAN, or its client gone — leaves no snapshot behind
/// on the one pooled connection and gives that connection back (the next command waits for it):
/// the next readers see writes made since.
async fn an_interrupted_dump_leaves_no_snapshot(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ardacat.toml");
    std::fs::write(&cfg, "db_pool_size = 1\n").unwrap();
    let srv = TestServer::start_with(TestDb::new(backend).await, &["--config", cfg.to_str().unwrap()]).await;
    let mut root = srv.raw().await;
    load_big(&mut root, "/a").await;
    for (round, how) in ["cancel", "hang up"].iter().enumerate() {
        let mut d = srv.raw().await;
        d.send(b"dump /a\n").await;
        assert!(!d.read_some(4096).await.is_empty(), "{how}: the dump began");
        if *how == "cancel" {
            d.send(b"\x18").await;
            let (_, tail) = d.drain_reply(256).await;
            assert!(String::from_utf8_lossy(&tail).contains("\x1820 "), "{how}: {tail:?}");
            // The same connection goes on reading the present.
            ok(&mut d, &format!("addentry /a/x{round} t new")).await;
            assert_eq!(ok(&mut d, &format!("getattr /a/x{round} t")).await, [format!("x{round}"), "new".into()]);
        } else {
            drop(d);
            ok(&mut root, &format!("addentry /a/x{round} t new")).await;
        }
        // Another connection, on the same single pooled database connection.
        let mut r = srv.raw().await;
        assert_eq!(ok(&mut r, &format!("getattr /a/x{round} t")).await, [format!("x{round}"), "new".into()], "{how}");
    }
}

on_both_backends!(
    round_trip_to_the_other_backend,
    compressed_dumps_and_into,
    non_root_dumps_what_it_may_read,
    damaged_dumps_change_nothing,
    restore_failing_midway_changes_nothing,
    restore_commands_on_the_wire,
    dump_is_one_state_while_writes_go_on,
    an_interrupted_dump_leaves_no_snapshot,
);
