//! A catalogue with every attribute type and edge value, for the dump, restore and copy tests:
//! unicode, newlines, tabs, backslashes and control bytes, the longest varchar, NULL beside the
//! empty string, extreme, subnormal and negative-zero floats, the extreme integers, timestamps,
//! booleans, nested collections, collection and entry ACLs (user and group), an indexed
//! attribute and a composite index, every kind of constraint, a used sequence, users with a
//! certificate subject, a group, a site, and a collection and an entry that `alice` may not read.

#![allow(dead_code)]

use std::net::SocketAddr;

use ardacat_client::{Client, ClientConfig};

/// `alice`'s password; `root`'s becomes [`NEW_ROOT_PASSWORD`].
pub const ALICE_PASSWORD: &str = "alice-pw";
pub const NEW_ROOT_PASSWORD: &str = "root-pw-from-the-dump";

pub async fn client(addr: SocketAddr, login: &str, password: &str) -> Client {
    let config = ClientConfig {
        host: addr.ip().to_string(),
        port: addr.port(),
        login: login.into(),
        password: Some(password.into()),
        escape: true,
        ..ClientConfig::default()
    };
    Client::connect(config).await.expect("connect")
}

async fn run(c: &mut Client, args: &[&str]) {
    if let Err(e) = c.execute_args(args).await {
        panic!("{args:?}: {e}");
    }
}

/// Builds the catalogue through `root` (logged in with `root_password`), then sets root's
/// password to [`NEW_ROOT_PASSWORD`].
pub async fn build(addr: SocketAddr, root_password: &str) {
    let mut c = client(addr, "root", root_password).await;
    let longest = "x".repeat(1_000_000);
    let script: Vec<Vec<&str>> = vec![
        vec!["user_create", "alice", ALICE_PASSWORD],
        vec!["user_create", "bob", "bob-pw"],
        vec!["user_subject_add", "alice", "/C=CH/O=Grid/CN=Alice Ünïcödé"],
        vec!["grp_create", "team"],
        vec!["grp_adduser", "team", "alice"],
        vec!["grp_adduser", "team", "bob"],
        vec!["site_add", "cern", "md.cern.ch:8822"],
        vec!["site_add", "ral", ""],
        vec!["replica_register", "-c", "guid-1", "cern", "guid-1", "ral"],
        vec!["createdir", "/refs"],
        vec!["addattr", "/refs", "code", "varchar(10)"],
        vec!["addentry", "/refs/r1", "code", "A"],
        vec!["addentry", "/refs/r2", "code", "B"],
        vec!["constraint_add_unique", "/refs", "code", "code_u"],
        vec!["createdir", "/data"],
        vec!["addattr", "/data", "i", "int", "indexed"],
        vec!["addattr", "/data", "f", "float"],
        vec!["addattr", "/data", "s", "varchar(20)"],
        vec!["addattr", "/data", "t", "text"],
        vec!["addattr", "/data", "ts", "timestamp"],
        vec!["addattr", "/data", "b", "bool"],
        vec!["addattr", "/data", "r", "varchar(10)"],
        vec!["addattr", "/data", "big", "varchar(1000000)"],
        vec!["index_create", "/data", "ix", "i", "FILE"],
        vec![
            "addentry",
            "/data/e1",
            "i",
            "9223372036854775807",
            "f",
            "1.7976931348623157e308",
            "s",
            "",
            "t",
            "ünï\ncöde\twith\\back\rslash \\N \u{1}\u{7f}",
            "ts",
            "2024-02-29 23:59:59.999999",
            "b",
            "true",
            "r",
            "A",
        ],
        vec!["addentry", "/data/e2", "i", "-9223372036854775808", "f", "-0.0", "t", "", "b", "false"],
        vec!["addentry", "/data/e3", "f", "5e-324", "s", "ünïcödé 𝄞", "b", "true", "big", &longest],
        vec!["addentry", "/data/e4", "f", "-2.2250738585072014e-308", "ts", "1970-01-01 00:00:00", "b", "false"],
        vec!["addentry", "/data/name with spaces ü", "i", "0", "f", "0.1", "b", "true", "r", "B"],
        vec!["constraint_add_not_null", "/data", "b", "b_set"],
        vec!["constraint_add_reference", "/data", "r", "/refs:code", "r_ref"],
        vec!["constraint_add_check", "/data", "i > -1 or i <= -1", "i_chk"],
        vec!["acl_add", "/data", "team", "rwx"],
        vec!["acl_add", "/data", "bob", "r"],
        vec!["acl_add", "/data/e1", "bob", "rw"],
        vec!["acl_add", "/data/e1", "team", "r"],
        vec!["chown", "/data/e2", "alice:team"],
        vec!["chmod", "/data/e4", "rw-------"],
        vec!["sequence_create", "seq", "/data", "5", "100"],
        vec!["sequence_next", "/data/seq"],
        vec!["createdir", "/data/sub"],
        vec!["createdir", "/data/sub/deeper"],
        vec!["addattr", "/data/sub/deeper", "x", "int"],
        vec!["addentry", "/data/sub/deeper/d1", "x", "1"],
        vec!["chown", "/data/sub", "bob:team"],
        vec!["chmod", "/data/sub", "rwxr-x---"],
        vec!["createdir", "/private"],
        vec!["chmod", "/private", "rwx------"],
        vec!["addentry", "/private/secret"],
        vec!["user_passwd", "root", NEW_ROOT_PASSWORD],
    ];
    for args in &script {
        run(&mut c, args).await;
    }
}
