//! Commands against a user transaction and the "nothing matched" rule, over the real server on
//! both backends (issues #12 and #20):
//! - every write command (and a read that fails in the database) made to fail inside a
//!   `transaction` leaves it usable: it still reads, writes and commits what it did before, and
//!   the failed command changed nothing;
//! - every command that takes an entry path answers an empty match by the one rule of
//!   `Target::matched` (server/core/src/service/entries.rs): an exact name that is missing is 1,
//!   one the caller may not use 4; an empty wildcard pattern is 1 for a command that acts on the
//!   matched entries (`setattr`, `clearattr`, `rm`, `chmod`, `chown`) and an empty answer for a
//!   query (`getattr`, `find`, `updateattr`, `rm` with a condition); a whole collection is 0.

#[macro_use]
mod common;

use common::{Backend, RawConn, TestServer};

on_both_backends!(failed_commands_keep_the_transaction, sequence_create_in_a_transaction, nothing_matched_codes);

async fn ok(c: &mut RawConn, line: &str) -> Vec<String> {
    common::ok(c, line).await
}

async fn code(c: &mut RawConn, line: &str) -> i32 {
    c.lines(line).await.0
}

/// The exact case of issue #20.
async fn sequence_create_in_a_transaction(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /f").await;
    ok(&mut c, "addattr /f a int").await;
    ok(&mut c, "sequence_create q /f").await;
    ok(&mut c, "transaction").await;
    ok(&mut c, "addentry /f/e5 a 5").await;
    let (code, lines) = c.lines("sequence_create q /f").await;
    assert_eq!((code, lines), (15, vec![]), "sequence_create of an existing name");
    assert_eq!(ok(&mut c, "getattr /f a").await, ["e5", "5"]);
    ok(&mut c, "commit").await;
    let mut other = srv.raw().await;
    assert_eq!(ok(&mut other, "getattr /f a").await, ["e5", "5"]);
    assert_eq!(ok(&mut other, "sequence_next /f/q").await, ["1"]);
}

/// Each write command, made to fail inside a transaction. The list names the commands that fail
/// in the database itself (a unique violation, an overflow), which spoiled the transaction
/// before every command ran under the write unit, and those the service refuses first.
async fn failed_commands_keep_the_transaction(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    for setup in [
        "createdir /t",
        "addattr /t a int",
        "addattr /t f float",
        "createdir /t/sub",
        "addentry /t/e a 1 f 1.5",
        "addentry /t/big a 9223372036854775807 f 1e308",
        "index_create /t ix a",
        "sequence_create q /t",
        "user_create u1 pw1",
        "user_subject_add u1 '/CN=u1'",
        "grp_create g1",
        "grp_adduser g1 u1",
    ] {
        ok(&mut c, setup).await;
    }
    // (command, expected code); each runs inside its own transaction between two good writes.
    let cases: &[(&str, i32)] = &[
        // Failing in the database:
        ("addentry /t/e a 2", 15),
        ("addentries /t/n1 /t/e", 15),
        ("sequence_create q /t", 15),
        ("user_subject_add u1 '/CN=u1'", 15),
        ("updateattr /t/big a 'a + 1' 'a > 0'", 18),
        ("updateattr /t/big f 'f * 10' 'f > 0'", 18),
        ("selectattr /t:a 'a * 2 > 10'", 18),
        // Refused by the service:
        ("createdir /t/sub", 16),
        ("rmdir /t", 11),
        ("addattr /t a int", 15),
        ("removeattr /t nosuch", 10),
        ("index_create /t ix a", 15),
        ("index_remove /t nosuch", 1),
        ("setattr /t/e a notanint", 18),
        ("setattr /t/e a 5 a 6", 3),
        ("clearattr /t/e nosuch", 10),
        ("rm /t/nosuch", 1),
        ("updateattr /t/e a 'a + 1' a 'a + 2' 'a > 0'", 3),
        ("sequence_next /t/nosuch", 17),
        ("sequence_remove /t/nosuch", 17),
        ("chmod /t/nosuch rwxr-xr-x", 1),
        ("chown /t/e nosuchuser", 1),
        ("acl_add /t nosuchuser rwx", 1),
        ("acl_remove /t nosuchuser", 1),
        ("user_create u1 pw", 15),
        ("user_remove nosuchuser", 1),
        ("user_passwd nosuchuser pw", 1),
        ("grp_create g1", 15),
        ("grp_remove nosuchgroup", 1),
        ("grp_adduser nosuchgroup u1", 1),
        ("grp_removeuser g1 nosuchuser", 1),
        ("getattr /t/nosuch a", 1),
    ];
    let mut other = srv.raw().await;
    for (i, (cmd, want)) in cases.iter().enumerate() {
        ok(&mut c, "transaction").await;
        ok(&mut c, &format!("addentry /t/k{i} a {i}")).await;
        ok(&mut c, "sequence_next /t/q").await;
        let (got, lines) = c.lines(cmd).await;
        assert_eq!(got, *want, "[{b:?}] {cmd}: {lines:?}");
        // Still reads its own work, still writes, and commits all of it.
        assert_eq!(ok(&mut c, &format!("getattr /t/k{i} a")).await, [format!("k{i}"), i.to_string()], "{cmd}");
        ok(&mut c, &format!("setattr /t/k{i} a {}", i + 1000)).await;
        ok(&mut c, &format!("addentry /t/l{i}")).await;
        let (got, lines) = c.lines("commit").await;
        assert_eq!(got, 0, "[{b:?}] commit after {cmd}: {lines:?}");
        assert_eq!(
            ok(&mut other, &format!("getattr /t/k{i} a")).await,
            [format!("k{i}"), (i + 1000).to_string()],
            "[{b:?}] committed after {cmd}"
        );
        assert_eq!(ok(&mut other, &format!("ls /t/l{i}")).await, [format!("/t/l{i}")]);
    }
    // The failed commands changed nothing.
    assert_eq!(code(&mut other, "getattr /t/n1 a").await, 1);
    assert_eq!(ok(&mut other, "getattr /t/e a f").await, ["e", "1", "1.5"]);
    assert_eq!(ok(&mut other, "getattr /t/big a").await, ["big", "9223372036854775807"]);
    assert_eq!(ok(&mut other, "listattr /t").await, ["a", "int", "f", "float"]);
    assert_eq!(ok(&mut other, "user_listcred u1").await, ["/CN=u1"]);
    assert_eq!(ok(&mut other, "grp_member u1").await, ["g1"]);
    // Every transaction's sequence_next was kept: one value per case, in order.
    assert_eq!(ok(&mut other, "sequence_next /t/q").await, [(cases.len() + 1).to_string()]);

    // An upload inside a transaction that fails at its commit leaves the transaction usable.
    ok(&mut c, "transaction").await;
    ok(&mut c, "addentry /t/up0").await;
    c.send(b"upload /t a\nput up1 1\nput e 2\n").await;
    assert_eq!(code(&mut c, "commit").await, 15, "the upload's commit");
    ok(&mut c, "addentry /t/up2").await;
    ok(&mut c, "commit").await;
    assert_eq!(ok(&mut other, "ls /t/up*").await, ["/t/up0", "/t/up2"]);

    // Several failures in a row, then an abort: nothing of the transaction stays.
    ok(&mut c, "transaction").await;
    ok(&mut c, "addentry /t/gone").await;
    assert_eq!(code(&mut c, "sequence_create q /t").await, 15);
    assert_eq!(code(&mut c, "addentry /t/e").await, 15);
    assert_eq!(code(&mut c, "selectattr /t:a 'a * 2 > 10'").await, 18);
    ok(&mut c, "abort").await;
    assert_eq!(code(&mut other, "getattr /t/gone a").await, 1);
}

/// One row per command: the same empty-match situations, the codes the rule gives.
async fn nothing_matched_codes(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut root = srv.raw().await;
    for setup in [
        "createdir /m",
        "addattr /m a int",
        "chmod /m rwxrwxrwx",
        "createdir /m/sub",
        "chmod /m/sub rwxrwxrwx",
        "addentry /m/hidden a 1",
        "chmod /m/hidden rw-------",
        "user_create u pw",
    ] {
        ok(&mut root, setup).await;
    }
    let mut u = srv.raw_as("u", "pw").await;
    ok(&mut u, "addentry /m/mine a 1").await;
    // (command, code): missing name, hidden name, empty wildcard, whole collection, condition
    // that excludes existing entries.
    let cases: &[(&str, i32)] = &[
        ("setattr /m/nosuch a 2", 1),
        ("setattr /m/hidden a 2", 4),
        ("setattr /m/zz* a 2", 1),
        ("setattr /m/sub a 2", 0),
        ("clearattr /m/nosuch a", 1),
        ("clearattr /m/hidden a", 4),
        ("clearattr /m/zz* a", 1),
        ("clearattr /m/sub a", 0),
        ("updateattr /m/nosuch a 'a + 1' 'a > 0'", 1),
        ("updateattr /m/hidden a 'a + 1' 'a > 0'", 4),
        ("updateattr /m/zz* a 'a + 1' 'a > 0'", 0),
        ("updateattr /m/sub a 'a + 1' 'a > 0'", 0),
        ("updateattr /m/mine a 'a + 1' 'a > 100'", 0),
        ("updateattr /m/mi* a 'a + 1' 'a > 100'", 0),
        ("rm /m/nosuch", 1),
        ("rm /m/hidden", 4),
        ("rm /m/zz*", 1),
        ("rm /m/sub", 0),
        ("rm /m/nosuch 'a > 0'", 1),
        ("rm /m/hidden 'a > 0'", 4),
        ("rm /m/zz* 'a > 0'", 0),
        ("rm /m/mine 'a > 100'", 0),
        ("rm /m/mi* 'a > 100'", 0),
        ("chmod /m/nosuch rw-r--r--", 1),
        ("chmod /m/hidden rw-r--r--", 4),
        ("chmod /m/zz* rw-r--r--", 1),
        ("chown /m/nosuch u", 1),
        ("chown /m/hidden u", 4),
        ("chown /m/zz* u", 1),
        // Reads: an exact name as for writes; an empty wildcard is an empty answer.
        ("getattr /m/nosuch a", 1),
        ("getattr /m/hidden a", 4),
        ("getattr /m/zz* a", 0),
        ("getattr /m/sub a", 0),
        ("find /m/nosuch 'a > 0'", 1),
        ("find /m/hidden 'a > 0'", 4),
        ("find /m/zz* 'a > 0'", 0),
    ];
    for (cmd, want) in cases {
        let (got, lines) = u.lines(cmd).await;
        assert_eq!(got, *want, "[{b:?}] {cmd}: {lines:?}");
    }
    // Inside a transaction the codes are the same, and the transaction survives them all.
    ok(&mut u, "transaction").await;
    for (cmd, want) in cases {
        assert_eq!(code(&mut u, cmd).await, *want, "[{b:?}] in a transaction: {cmd}");
    }
    ok(&mut u, "commit").await;
    assert_eq!(ok(&mut root, "getattr /m a").await, ["hidden", "1", "mine", "1"]);
}
