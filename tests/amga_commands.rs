//! AMGA completeness (issue 13, items 3 to 6) on the wire, against the real `ardacat-server`
//! binary on both backends: user and group listings and AMGA's alias names, `rm -rf` of a
//! subtree (all or nothing, permissions on everything in it), `update` as AMGA's `updateattr`
//! told apart from SQL `UPDATE … SET`, ACL rights in every form, sites and replicas (every error
//! checked with its code and with nothing changed), and the CLI's Tab completion (item 8) asking
//! the real server.

#[macro_use]
mod common;

use ardacat_client::{Client, ClientConfig, Completer};
use common::{Backend, ROOT_PASSWORD, RawConn, TestServer, fails, ok};

on_both_backends!(
    user_and_group_listings,
    amga_alias_names,
    rm_rf_removes_the_whole_subtree,
    rm_rf_needs_write_on_everything,
    update_is_updateattr_not_sql,
    acl_rights_in_every_form,
    sites,
    replicas,
    replica_permissions,
    replica_list_by_entry,
    tab_completion,
);

/// Root's connection after creating these users (password `pw-<name>`).
async fn with_users(server: &TestServer, users: &[&str]) -> RawConn {
    let mut root = server.raw().await;
    for u in users {
        ok(&mut root, &format!("user_create {u} pw-{u}")).await;
    }
    root
}

async fn login(server: &TestServer, user: &str) -> RawConn {
    server.raw_as(user, &format!("pw-{user}")).await
}

async fn user_and_group_listings(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["carol", "bob"]).await;
    let everyone = ok(&mut root, "user_list").await;
    assert!(everyone.contains(&"bob".to_string()) && everyone.contains(&"carol".to_string()), "{everyone:?}");
    assert!(everyone.contains(&"root".to_string()), "{everyone:?}");
    let mut sorted = everyone.clone();
    sorted.sort();
    assert_eq!(everyone, sorted, "one line per user, sorted");

    ok(&mut root, "grp_create team").await;
    ok(&mut root, "grp_create alpha").await;
    ok(&mut root, "grp_adduser team carol").await;
    ok(&mut root, "grp_adduser team bob").await;
    assert_eq!(ok(&mut root, "grp_list").await, ["alpha", "team"]);
    assert_eq!(ok(&mut root, "grp_show team").await, ["bob", "carol"]);
    assert!(ok(&mut root, "grp_show alpha").await.is_empty());
    fails(&mut root, "grp_show nope", 1).await;
    fails(&mut root, "user_list extra", 3).await;
    fails(&mut root, "grp_show", 3).await;

    // Not root: no user list; group names yes; members only of one's own groups.
    let mut bob = login(&server, "bob").await;
    fails(&mut bob, "user_list", 4).await;
    assert_eq!(ok(&mut bob, "grp_list").await, ["alpha", "team"]);
    assert_eq!(ok(&mut bob, "grp_show team").await, ["bob", "carol"]);
    fails(&mut bob, "grp_show alpha", 4).await;
    fails(&mut bob, "grp_show nope", 1).await;
    server.assert_no_internal_errors();
}

async fn amga_alias_names(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    ok(&mut root, "user_password_change bob new-pw").await;
    let mut bob = server.raw_as("bob", "new-pw").await;
    fails(&mut bob, "user_password_change root x", 4).await;
    ok(&mut bob, "user_password_change bob pw-bob").await;
    login(&server, "bob").await;

    ok(&mut root, "user_subjectadd bob '/DC=org/CN=Bob One'").await;
    ok(&mut root, "user_subject_add bob '/DC=org/CN=Bob Two'").await;
    assert_eq!(ok(&mut root, "user_listcred bob").await, ["/DC=org/CN=Bob One", "/DC=org/CN=Bob Two"]);
    fails(&mut bob, "user_subjectremove bob '/DC=org/CN=Bob One'", 4).await;
    ok(&mut root, "user_subjectremove bob '/DC=org/CN=Bob One'").await;
    fails(&mut root, "user_subject_remove bob '/DC=org/CN=Bob One'", 1).await;
    fails(&mut root, "user_subject_remove nobody '/DC=org/CN=Bob Two'", 1).await;
    assert_eq!(ok(&mut root, "user_listcred bob").await, ["/DC=org/CN=Bob Two"]);
    ok(&mut root, "user_subject_remove bob '/DC=org/CN=Bob Two'").await;
    assert!(ok(&mut root, "user_listcred bob").await.is_empty());

    ok(&mut root, "grp_create team").await;
    fails(&mut bob, "grp_delete team", 4).await;
    ok(&mut root, "grp_delete team").await;
    fails(&mut root, "grp_delete team", 1).await;
    assert!(ok(&mut root, "grp_list").await.is_empty());
    server.assert_no_internal_errors();
}

async fn rm_rf_removes_the_whole_subtree(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    for d in ["/t", "/t/a", "/t/a/b", "/t/c", "/keep"] {
        ok(&mut root, &format!("createdir {d}")).await;
    }
    ok(&mut root, "addattr /t/a n int").await;
    ok(&mut root, "addattr /t/a/b s varchar(20)").await;
    ok(&mut root, "addentry /t/a/e1 n 1").await;
    ok(&mut root, "addentry /t/a/b/e2 s 'x'").await;
    ok(&mut root, "index_create /t/a ix n").await;
    ok(&mut root, "sequence_create seq /t/a").await;
    ok(&mut root, "acl_add /t/a bob rw").await;
    ok(&mut root, "acl_add /t/a/e1 bob r").await;
    ok(&mut root, "addattr /keep n int").await;
    ok(&mut root, "addentry /keep/k n 7").await;

    ok(&mut root, "rm -rf /t").await;
    let top = ok(&mut root, "ls /").await;
    assert!(top.iter().any(|l| l.contains("/keep")) && !top.iter().any(|l| l.contains("/t")), "{top:?}");
    fails(&mut root, "ls /t/a", 1).await;
    fails(&mut root, "getattr /t/a/e1 n", 1).await;
    // The same paths start empty: no attribute, index, sequence or ACL row survived.
    for d in ["/t", "/t/a"] {
        ok(&mut root, &format!("createdir {d} plain")).await;
    }
    assert!(ok(&mut root, "listattr /t/a").await.is_empty());
    assert!(ok(&mut root, "index_list /t/a").await.is_empty());
    assert!(ok(&mut root, "acl_show /t/a").await.is_empty());
    fails(&mut root, "sequence_next /t/a/seq", 17).await;
    // Other collections are untouched.
    assert_eq!(ok(&mut root, "getattr /keep/k n").await, ["k", "7"]);

    // Relative paths and the other flag spellings.
    ok(&mut root, "cd /t").await;
    ok(&mut root, "rm -r a").await;
    fails(&mut root, "ls /t/a", 1).await;
    ok(&mut root, "cd /").await;
    ok(&mut root, "rm -fr /t").await;

    fails(&mut root, "rm -rf /", 4).await;
    fails(&mut root, "rm -rf /missing", 1).await;
    fails(&mut root, "rm -rf /keep/k", 1).await;
    fails(&mut root, "rm -x /keep", 3).await;
    fails(&mut root, "rm -rf", 3).await;
    assert_eq!(ok(&mut root, "getattr /keep/k n").await, ["k", "7"]);

    // Inside a transaction it is one more step of it: abort brings the subtree back.
    ok(&mut root, "transaction").await;
    ok(&mut root, "rm -rf /keep").await;
    ok(&mut root, "abort").await;
    assert_eq!(ok(&mut root, "getattr /keep/k n").await, ["k", "7"]);
    server.assert_no_internal_errors();
}

async fn rm_rf_needs_write_on_everything(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob", "carol"]).await;
    ok(&mut root, "createdir /p").await;
    ok(&mut root, "chmod /p rwxrwxrwx").await;
    let mut bob = login(&server, "bob").await;
    let mut carol = login(&server, "carol").await;

    // A sub-collection bob may not write: 4, and nothing goes.
    ok(&mut bob, "createdir /p/x").await;
    ok(&mut bob, "addattr /p/x n int").await;
    ok(&mut bob, "addentry /p/x/e n 1").await;
    ok(&mut root, "createdir /p/x/y").await;
    fails(&mut bob, "rm -rf /p/x", 4).await;
    assert_eq!(ok(&mut bob, "getattr /p/x/e n").await, ["e", "1"]);
    assert_eq!(ok(&mut bob, "listentries /p/x/y").await.len(), 0);
    ok(&mut root, "chmod /p/x/y rwxrwxrwx").await;
    ok(&mut bob, "rm -rf /p/x").await;
    fails(&mut bob, "ls /p/x", 1).await;

    // A collection bob may write but does not own: its entries must be writable too.
    ok(&mut carol, "createdir /p/w").await;
    ok(&mut carol, "chmod /p/w rwxrwxrwx").await;
    ok(&mut carol, "addattr /p/w n int").await;
    ok(&mut carol, "addentry /p/w/mine n 1").await;
    ok(&mut bob, "addentry /p/w/his n 2").await;
    fails(&mut bob, "rm -rf /p/w", 4).await;
    assert_eq!(ok(&mut carol, "getattr /p/w/* n").await, ["his", "2", "mine", "1"]);
    ok(&mut carol, "chmod /p/w/mine rw-rw-rw-").await;
    ok(&mut bob, "rm -rf /p/w").await;
    fails(&mut carol, "ls /p/w", 1).await;

    // Write on the parent is needed too.
    ok(&mut root, "createdir /q").await;
    ok(&mut root, "createdir /q/r").await;
    ok(&mut root, "chmod /q/r rwxrwxrwx").await;
    fails(&mut bob, "rm -rf /q/r", 4).await;
    ok(&mut root, "ls /q/r").await;
    server.assert_no_internal_errors();
}

async fn update_is_updateattr_not_sql(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = server.raw().await;
    ok(&mut root, "createdir /u").await;
    ok(&mut root, "addattr /u n int").await;
    ok(&mut root, "addattr /u set int").await;
    ok(&mut root, "addentry /u/a n 1 set 10").await;
    ok(&mut root, "addentry /u/b n 5 set 20").await;
    // AMGA's `update <pattern> <attr> <expr> <condition>`: the original client's method.
    ok(&mut root, "update /u/* n 'n+1' 'n < 3'").await;
    assert_eq!(ok(&mut root, "getattr /u/* n").await, ["a", "2", "b", "5"]);
    ok(&mut root, "update /u/a n 'n+1' ''").await;
    assert_eq!(ok(&mut root, "getattr /u/a n").await, ["a", "3"]);
    // An attribute named `set` keeps the AMGA shape.
    ok(&mut root, "update /u/* set 'set + 1' ''").await;
    assert_eq!(ok(&mut root, "getattr /u/* set").await, ["a", "11", "b", "21"]);
    // SQL's UPDATE … SET … is native SQL.
    ok(&mut root, "UPDATE /u SET n = n + 100 WHERE FILE = 'b'").await;
    assert_eq!(ok(&mut root, "getattr /u/* n").await, ["a", "3", "b", "105"]);
    ok(&mut root, "update /u set set = 0").await;
    assert_eq!(ok(&mut root, "getattr /u/* set").await, ["a", "0", "b", "0"]);
    // Errors of each shape.
    fails(&mut root, "update /u/* nope '1' ''", 10).await;
    fails(&mut root, "update /u/* n", 3).await;
    fails(&mut root, "UPDATE /u SET nope = 1", 10).await;
    assert_eq!(ok(&mut root, "getattr /u/* n").await, ["a", "3", "b", "105"]);
    server.assert_no_internal_errors();
}

async fn acl_rights_in_every_form(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    ok(&mut root, "createdir /a").await;
    for (typed, shown) in [
        ("r", "r--"),
        ("w", "-w-"),
        ("x", "--x"),
        ("rw", "rw-"),
        ("rx", "r-x"),
        ("wx", "-wx"),
        ("rwx", "rwx"),
        ("xr", "r-x"),
        ("r--", "r--"),
        ("rw-", "rw-"),
        ("r-x", "r-x"),
        ("---", "---"),
    ] {
        ok(&mut root, &format!("acl_add /a bob {typed}")).await;
        assert_eq!(ok(&mut root, "acl_show /a").await, [format!("bob {shown}")], "{typed}");
    }
    ok(&mut root, "acl_add /a bob rw").await;
    for bad in ["rr", "rwxx", "R", "q", "rx-", "r-", "''"] {
        fails(&mut root, &format!("acl_add /a bob {bad}"), 3).await;
    }
    assert_eq!(ok(&mut root, "acl_show /a").await, ["bob rw-"]);
    // The rights work: bob may now write into /a.
    let mut bob = login(&server, "bob").await;
    ok(&mut bob, "createdir /a/sub").await;
    server.assert_no_internal_errors();
}

async fn sites(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    ok(&mut root, "site_add CERN-PROD srm://cern.ch:8443").await;
    ok(&mut root, "site_add desy").await;
    let lines = ok(&mut root, "site_list").await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    let cern_id = lines[0].split(' ').next().unwrap().to_string();
    let desy_id = lines[1].split(' ').next().unwrap().to_string();
    assert_eq!(lines[0], format!("{cern_id} CERN-PROD srm://cern.ch:8443"));
    assert_eq!(lines[1], format!("{desy_id} desy"));

    fails(&mut root, "site_add desy", 15).await;
    fails(&mut root, "site_add 42", 3).await;
    fails(&mut root, "site_add 'a b'", 3).await;
    fails(&mut root, "site_add x 'srv with space'", 3).await;
    fails(&mut root, "site_add", 3).await;
    let mut bob = login(&server, "bob").await;
    fails(&mut bob, "site_add mine", 4).await;
    fails(&mut bob, "site_remove desy", 4).await;
    assert_eq!(ok(&mut bob, "site_list").await, lines);

    // By name or by id; a missing site is 1; a site holding replicas is 11.
    ok(&mut root, &format!("site_remove {desy_id}")).await;
    fails(&mut root, "site_remove desy", 1).await;
    fails(&mut root, "site_remove 9999", 1).await;
    ok(&mut root, "replica_register -c g1 CERN-PROD").await;
    fails(&mut root, "site_remove CERN-PROD", 11).await;
    ok(&mut root, "replica_unregister g1 CERN-PROD").await;
    ok(&mut root, "site_remove CERN-PROD").await;
    assert!(ok(&mut root, "site_list").await.is_empty());
    server.assert_no_internal_errors();
}

/// Sites a and b; returns their ids.
async fn two_sites(root: &mut RawConn) -> (String, String) {
    ok(root, "site_add a").await;
    ok(root, "site_add b").await;
    let lines = ok(root, "site_list").await;
    let id = |l: &String| l.split(' ').next().unwrap().to_string();
    (id(&lines[0]), id(&lines[1]))
}

async fn replicas(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    let (a, b) = two_sites(&mut root).await;
    let mut bob = login(&server, "bob").await;

    // Without -c the GUID must have a record.
    fails(&mut bob, "replica_register g1 a", 1).await;
    ok(&mut bob, &format!("replica_register -c g1 a g2 {b}")).await;
    ok(&mut bob, "replica_register g1 b").await;
    assert_eq!(ok(&mut bob, "replica_list g1 g2").await, [format!("g1 {a} {b}"), format!("g2 {b}")]);

    // All pairs or none.
    fails(&mut bob, "replica_register -c g3 a g3 nosite", 1).await;
    fails(&mut bob, "replica_list g3", 1).await;
    fails(&mut bob, "replica_register g2 a g1 a", 15).await;
    assert_eq!(ok(&mut bob, "replica_list g2").await, [format!("g2 {b}")]);
    fails(&mut bob, "replica_register -c '-g' a", 3).await;
    fails(&mut bob, "replica_register -x g1 a", 3).await;
    fails(&mut bob, "replica_register g1", 3).await;

    // Unregister; -d removes the record with the last replica, plain keeps it (bare line).
    fails(&mut bob, "replica_unregister g2 a", 1).await;
    fails(&mut bob, "replica_unregister g9 a", 1).await;
    ok(&mut bob, "replica_unregister g2 b").await;
    assert_eq!(ok(&mut bob, "replica_list g2").await, ["g2"]);
    ok(&mut bob, "replica_unregister -d g1 a").await;
    assert_eq!(ok(&mut bob, "replica_list g1").await, [format!("g1 {b}")]);
    ok(&mut bob, &format!("replica_unregister -d g1 {b}")).await;
    fails(&mut bob, "replica_list g1", 1).await;
    fails(&mut bob, "replica_register g1 a", 1).await;
    fails(&mut bob, "replica_unregister -d g2", 3).await;
    fails(&mut bob, "replica_list", 3).await;
    server.assert_no_internal_errors();
}

async fn replica_permissions(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob", "carol"]).await;
    let (a, _) = two_sites(&mut root).await;
    let mut bob = login(&server, "bob").await;
    let mut carol = login(&server, "carol").await;
    ok(&mut bob, "replica_register -c g a").await;
    // Another user's GUID record: no registering (-c or not), no unregistering; listing yes.
    fails(&mut carol, "replica_register g b", 4).await;
    fails(&mut carol, "replica_register -c g b", 4).await;
    fails(&mut carol, "replica_unregister g a", 4).await;
    assert_eq!(ok(&mut carol, "replica_list g").await, [format!("g {a}")]);
    // Root may.
    ok(&mut root, "replica_register g b").await;
    ok(&mut root, "replica_unregister g b").await;
    assert_eq!(ok(&mut bob, "replica_list g").await, [format!("g {a}")]);
    server.assert_no_internal_errors();
}

async fn replica_list_by_entry(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    let (a, b) = two_sites(&mut root).await;
    ok(&mut root, "createdir /lfn").await;
    ok(&mut root, "addattr /lfn guid varchar(64)").await;
    ok(&mut root, "addentry /lfn/f1 guid 'g-1'").await;
    ok(&mut root, "addentry /lfn/f2").await;
    ok(&mut root, "createdir /plain").await;
    ok(&mut root, "addentry /plain/x").await;
    ok(&mut root, &format!("replica_register -c g-1 a g-1 {b}")).await;
    ok(&mut root, "cd /lfn").await;
    assert_eq!(ok(&mut root, "replica_list -l /lfn/f1 f2").await, [format!("/lfn/f1 {a} {b}"), "f2".to_string()]);
    fails(&mut root, "replica_list -l /lfn/nope", 1).await;
    fails(&mut root, "replica_list -l /plain/x", 10).await;
    fails(&mut root, "replica_list -l /lfn/*", 3).await;
    // Reading the GUID needs read permission on the entry.
    ok(&mut root, "chmod /lfn/f1 rw-------").await;
    let mut bob = login(&server, "bob").await;
    assert_eq!(ok(&mut bob, "replica_list g-1").await, [format!("g-1 {a} {b}")]);
    fails(&mut bob, "replica_list -l /lfn/f1", 4).await;
    server.assert_no_internal_errors();
}

async fn tab_completion(backend: Backend) {
    let server = TestServer::start(backend).await;
    let mut root = with_users(&server, &["bob"]).await;
    for d in ["/data", "/data/runs", "/data/raw", "/dark", "/secret"] {
        ok(&mut root, &format!("createdir {d}")).await;
    }
    ok(&mut root, "addentry /data/run_a").await;
    ok(&mut root, "addentry /data/rumour").await;
    ok(&mut root, "chmod /secret rwx------").await;
    let config = |login: &str, password: &str| ClientConfig {
        host: server.tcp.ip().to_string(),
        port: server.tcp.port(),
        login: login.into(),
        password: Some(password.into()),
        ..ClientConfig::default()
    };
    let mut client = Client::connect(config("root", ROOT_PASSWORD)).await.expect("connect");
    let mut c = Completer::new(&["quit", "exit"]);

    // Command names: the server's table (lowercase, any typed case), and the shell's words.
    let (start, names) = c.complete(&mut client, "user_l", 6).await;
    assert_eq!((start, names), (0, vec!["user_list".to_string(), "user_listcred".to_string()]));
    assert_eq!(c.complete(&mut client, "  REPLICA_U", 11).await, (2, vec!["replica_unregister".to_string()]));
    assert_eq!(c.complete(&mut client, "qu", 2).await, (0, vec!["quit".to_string()]));
    assert!(c.complete(&mut client, "nosuch", 6).await.1.is_empty());

    // Paths: collections end in `/`; entries do not; the name replaces from the last `/`.
    assert_eq!(c.complete(&mut client, "ls /da", 6).await, (4, vec!["dark/".to_string(), "data/".to_string()]));
    let line = "getattr /data/ru";
    assert_eq!(
        c.complete(&mut client, line, line.len()).await,
        (14, vec!["rumour".to_string(), "run_a".to_string(), "runs/".to_string()])
    );
    // Relative to the current directory, and the cursor in the middle of the line.
    client.cd("/data").await.expect("cd");
    assert_eq!(c.complete(&mut client, "rm -rf ra x", 9).await, (7, vec!["raw/".to_string()]));
    assert_eq!(c.complete(&mut client, "ls runs/", 8).await, (8, Vec::<String>::new()));
    // What the caller may not list completes to nothing, and the connection stays usable.
    let mut bob = Client::connect(config("bob", "pw-bob")).await.expect("connect bob");
    assert!(c.complete(&mut bob, "ls /secret/", 11).await.1.is_empty());
    assert!(c.complete(&mut bob, "ls /nowhere/x", 13).await.1.is_empty());
    assert_eq!(bob.whoami().await.expect("whoami"), "bob");
    server.assert_no_internal_errors();
}
