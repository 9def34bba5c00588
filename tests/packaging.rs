//! What the packages ship, tested against the code: the example configuration
//! (`packaging/ardacat.toml`, the Debian package's `/etc/ardacat/ardacat.toml`) lists every key of
//! `server/src/config.rs` with its default and meaning and nothing else, it starts a real server on
//! both backends, and `ardacat-server --check-config FILE` accepts it and names the key of every
//! problem in a bad file. The package itself (build, `dpkg -i`, smoke test, unit check) is
//! `.ci/package.sh`.

#[macro_use]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ardacat_server::config::{self, Config};
use ardacat_server::preflight;
use common::*;

on_both_backends!(example_config_serves);

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/ardacat.toml");
/// The one key the example sets to something else than the code's default, and to what.
const PACKAGE_DATABASE: &str = "sqlite:/var/lib/ardacat/ardacat.db";

/// One setting of the example: its value (a TOML `key = value` line), whether it is commented
/// out (`#key = value`), and the comment lines just above it.
struct Setting {
    value: toml::Value,
    commented: bool,
    comment: Vec<String>,
}

/// Read the example line by line: comment blocks (`# text`) end at a setting or a blank line; a
/// setting is `key = value`, or `#key = value` (no space after `#`) when commented out.
fn example_settings(text: &str) -> BTreeMap<String, Setting> {
    let mut settings = BTreeMap::new();
    let mut comment = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() {
            comment.clear();
            continue;
        }
        let (commented, body) = match line.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) => (true, rest),
            Some(rest) => {
                comment.push(rest.trim().to_string());
                continue;
            }
            None => (false, line),
        };
        let table: toml::Table =
            toml::from_str(body).unwrap_or_else(|e| panic!("example line {}: not a `key = value` line: {e}", n + 1));
        let (key, value) = table.into_iter().next().unwrap_or_else(|| panic!("example line {}: no key", n + 1));
        let previous =
            settings.insert(key.clone(), Setting { value, commented, comment: std::mem::take(&mut comment) });
        assert!(previous.is_none(), "example line {}: `{key}` appears twice", n + 1);
    }
    settings
}

#[test]
fn example_config_lists_every_key_with_its_default() {
    let text = std::fs::read_to_string(EXAMPLE).expect("read packaging/ardacat.toml");
    let settings = example_settings(&text);
    let defaults = toml::Table::try_from(Config::default()).expect("defaults as TOML");
    let keys = config::keys();
    // `keys()` is read from the struct; every default it serializes must be one of them.
    for k in defaults.keys() {
        assert!(keys.contains(&k.as_str()), "config::keys() lacks `{k}`");
    }

    let missing: Vec<&&str> = keys.iter().filter(|k| !settings.contains_key(**k)).collect();
    let unknown: Vec<&String> = settings.keys().filter(|k| !keys.contains(&k.as_str())).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "packaging/ardacat.toml is out of step with server/src/config.rs: missing {missing:?}, unknown {unknown:?}"
    );

    for (key, s) in &settings {
        assert!(!s.comment.is_empty(), "`{key}`: no comment saying what it means");
        // The value must be of the key's type (a commented-out example too).
        let one = toml::Value::Table(toml::Table::from_iter([(key.clone(), s.value.clone())]));
        if let Err(e) = one.try_into::<Config>() {
            panic!("`{key}`: example value {} is not accepted: {e}", s.value);
        }
        match defaults.get(key) {
            // Keys without a default are commented out and say so.
            None => {
                assert!(s.commented, "`{key}` has no default: it must be commented out (`#{key} = …`)");
                assert!(
                    s.comment.iter().any(|l| l.contains("Default: unset")),
                    "`{key}`: the comment must say `Default: unset`"
                );
            }
            Some(default) => {
                assert!(!s.commented, "`{key}` has a default ({default}): set it, do not comment it out");
                if key == "database" {
                    assert_eq!(s.value.as_str(), Some(PACKAGE_DATABASE), "the package's database");
                    let code_default = format!("{default}");
                    assert!(
                        s.comment.iter().any(|l| l.contains(&code_default)),
                        "`database`: the comment must name the code's default {code_default}"
                    );
                } else {
                    assert_eq!(&s.value, default, "`{key}`: the example's value is not the code's default");
                }
            }
        }
    }

    // The file as a whole is what the server reads: it checks, and it is the defaults.
    let cfg = preflight::check_file(Path::new(EXAMPLE)).unwrap_or_else(|p| panic!("example does not check: {p:?}"));
    assert_eq!(cfg.database, PACKAGE_DATABASE);
    let back = toml::Table::try_from(Config { database: Config::default().database, ..cfg }).unwrap();
    assert_eq!(back, defaults);
}

/// The shipped file starts a real server (database and ports from flags, which win over it).
async fn example_config_serves(backend: Backend) {
    let server = TestServer::start_with(TestDb::new(backend).await, &["--config", EXAMPLE]).await;
    let mut c = server.raw().await;
    assert_eq!(ok(&mut c, "pwd").await, vec!["/".to_string()]);
}

fn check_config(file: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ardacat-server"))
        .arg("--check-config")
        .arg(file)
        .env_remove("ARDACAT_CONFIG")
        .output()
        .expect("run ardacat-server --check-config");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Write `text` as a config file in `dir`; `{dir}` in it stands for the directory.
fn write_config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text.replace("{dir}", &dir.display().to_string())).expect("write config");
    path
}

#[test]
fn check_config_accepts_good_files() {
    let (code, out, err) = check_config(Path::new(EXAMPLE));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("OK"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.path().join("grid-mapfile"), "\"/C=CH/O=Org/CN=Alice\" alice\n").unwrap();
    // The database is not contacted: a PostgreSQL server that is down does not fail the check.
    let good = write_config(
        dir.path(),
        "good.toml",
        "database = \"postgres://nobody:secret@127.0.0.1:1/nothing\"\ntcp_port = 9000\nhttp_port = 9001\n\
         tls_cert = \"{dir}/cert.pem\"\ntls_key = \"{dir}/key.pem\"\ngrid_mapfile = \"{dir}/grid-mapfile\"\n",
    );
    let (code, out, err) = check_config(&good);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    // An empty file is all defaults.
    let empty = write_config(dir.path(), "empty.toml", "");
    assert_eq!(check_config(&empty).0, 0);
}

#[test]
fn check_config_names_the_key_of_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    // Several problems at once: each is reported, under its key.
    let bad = write_config(
        dir.path(),
        "bad.toml",
        "tcp_port = \"x\"\nsessions = \"maybe\"\nbind = \"nowhere\"\nmax_line_byte = 10\nidle_timeout_secs = -1\n",
    );
    let (code, out, err) = check_config(&bad);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    for key in ["tcp_port", "sessions", "bind", "max_line_byte", "idle_timeout_secs"] {
        assert!(err.lines().any(|l| l.contains(&format!(": {key}: "))), "no line for `{key}` in:\n{err}");
    }
    assert!(err.contains("max_line_byte: unknown key"), "{err}");

    // What would stop the start: the database kind, a port clash, TLS files. The URL's
    // password is not echoed.
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("other-key.pem"), other.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.path().join("not-pem.txt"), "hello\n").unwrap();
    std::fs::write(dir.path().join("grid-mapfile"), "\"/C=CH/O=Org/CN=Alice alice\n").unwrap();
    let cases: &[(&str, &str)] = &[
        ("database = \"mysql://u:hunter2@h/db\"\n", "database"),
        ("database = \"sqlite:\"\n", "database"),
        ("tcp_port = 9000\nhttp_port = 9000\n", "http_port"),
        ("database = \"postgres://u@h/db\"\nsqlite_exclusive = true\n", "sqlite_exclusive"),
        ("database = \"sqlite::memory:\"\nsqlite_exclusive = true\n", "sqlite_exclusive"),
        ("tls_cert = \"{dir}/cert.pem\"\n", "tls_key"),
        ("tls_key = \"{dir}/key.pem\"\n", "tls_cert"),
        ("grid_mapfile = \"{dir}/grid-mapfile\"\n", "grid_mapfile"),
        ("tls_cert = \"{dir}/missing.pem\"\ntls_key = \"{dir}/key.pem\"\n", "tls_cert"),
        ("tls_cert = \"{dir}/cert.pem\"\ntls_key = \"{dir}/missing.pem\"\n", "tls_key"),
        ("tls_cert = \"{dir}/not-pem.txt\"\ntls_key = \"{dir}/key.pem\"\n", "tls_cert"),
        ("tls_cert = \"{dir}/cert.pem\"\ntls_key = \"{dir}/other-key.pem\"\n", "tls_cert"),
        (
            "tls_cert = \"{dir}/cert.pem\"\ntls_key = \"{dir}/key.pem\"\ntls_client_ca = \"{dir}/not-pem.txt\"\n",
            "tls_client_ca",
        ),
        (
            "tls_cert = \"{dir}/cert.pem\"\ntls_key = \"{dir}/key.pem\"\ngrid_mapfile = \"{dir}/grid-mapfile\"\n",
            "grid_mapfile",
        ),
    ];
    for (i, (text, key)) in cases.iter().enumerate() {
        let file = write_config(dir.path(), &format!("case{i}.toml"), text);
        let (code, out, err) = check_config(&file);
        assert_eq!(code, 1, "{text}: {out}{err}");
        assert!(err.contains(&format!(": {key}: ")), "{text}: expected a problem under `{key}`, got:\n{err}");
        assert!(!err.contains("hunter2"), "the database password was echoed: {err}");
    }

    // A syntax error and a missing file fail too (no key to name).
    let syntax = write_config(dir.path(), "syntax.toml", "tcp_port = \n");
    let (code, _, err) = check_config(&syntax);
    assert_eq!(code, 1);
    assert!(err.contains("line 1"), "{err}");
    let (code, _, err) = check_config(&dir.path().join("absent.toml"));
    assert_eq!(code, 1);
    assert!(err.contains("cannot read"), "{err}");
}
