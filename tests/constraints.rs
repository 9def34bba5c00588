//! Constraints on entries (issue 13, item 2) against the real server on both backends: every
//! command and every error code, the list output, violations (code 21 naming the constraint,
//! nothing changed) through addentry, setattr, clearattr, updateattr, rm, upload, a transaction
//! and native SQL INSERT/UPDATE/DELETE, constraints added before the entry table exists, and
//! adding a constraint that existing entries break.

#[macro_use]
mod common;

use common::{Backend, RawConn, TestServer, fails, ok};

/// The status line of a reply (`0`, or `<code> <message>`).
async fn status(c: &mut RawConn, line: &str) -> String {
    let r = c.cmd(line).await;
    let text = String::from_utf8(r).expect("utf8 reply");
    text.split('\n').next().unwrap_or_default().to_string()
}

/// Expect code 21 naming the constraint `name`.
async fn violates(c: &mut RawConn, line: &str, name: &str) {
    let s = status(c, line).await;
    assert!(s.starts_with("21 constraint violated: "), "{line}: {s}");
    assert!(s.contains(name), "{line}: {s} does not name {name}");
}

async fn jobs(c: &mut RawConn) {
    ok(c, "createdir /jobs").await;
    ok(c, "addattr /jobs status varchar(10)").await;
    ok(c, "addattr /jobs events int").await;
    ok(c, "addattr /jobs run int").await;
    ok(c, "createdir /runs").await;
    ok(c, "addattr /runs num int").await;
    ok(c, "addattr /runs label text").await;
}

async fn values(c: &mut RawConn, pattern: &str, attrs: &str) -> Vec<String> {
    ok(c, &format!("getattr {pattern} {attrs}")).await
}

on_both_backends!(
    commands_and_errors,
    violations_change_nothing,
    existing_entries_refuse_a_constraint,
    rm_rf_takes_constraints_along
);

async fn commands_and_errors(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    jobs(&mut c).await;
    // Added while neither collection has an entry table yet (lazy tables).
    ok(&mut c, "constraint_add_not_null /jobs status st_set").await;
    ok(&mut c, "constraint_add_unique /runs num num_unique").await;
    ok(&mut c, "constraint_add_reference /jobs run /runs:num run_ref").await;
    ok(&mut c, "constraint_add_check /jobs 'events >= 0 and events < 1000' ev_range").await;
    ok(&mut c, "constraint_add_reference /jobs status /runs:FILE by_name").await;
    assert_eq!(
        ok(&mut c, "constraint_list /jobs").await,
        [
            "by_name reference status /runs:FILE",
            "ev_range check events >= 0 and events < 1000",
            "run_ref reference run /runs:num",
            "st_set not_null status",
        ]
    );
    assert_eq!(ok(&mut c, "constraint_list /runs").await, ["num_unique unique num"]);
    ok(&mut c, "constraint_drop /jobs by_name").await;

    // Names: invalid 3, taken (any case) 15, missing 1.
    fails(&mut c, "constraint_add_not_null /jobs status 1bad", 3).await;
    fails(&mut c, "constraint_add_not_null /jobs events ST_SET", 15).await;
    fails(&mut c, "constraint_drop /jobs nosuch", 1).await;
    // Collections and attributes: 1, 10; pseudo-attributes 3.
    fails(&mut c, "constraint_add_unique /nosuch a u", 1).await;
    fails(&mut c, "constraint_list /nosuch", 1).await;
    fails(&mut c, "constraint_add_unique /jobs nosuch u", 10).await;
    fails(&mut c, "constraint_add_not_null /jobs FILE f", 3).await;
    // References: a bad target 3, a missing one 1/10, a non-unique attribute 3, other types 3.
    fails(&mut c, "constraint_add_reference /jobs run runs r2", 3).await;
    fails(&mut c, "constraint_add_reference /jobs run /nosuch:num r2", 1).await;
    fails(&mut c, "constraint_add_reference /jobs run /runs:nosuch r2", 10).await;
    fails(&mut c, "constraint_add_reference /jobs status /runs:label r2", 3).await;
    fails(&mut c, "constraint_add_reference /jobs status /runs:num r2", 3).await;
    // Checks: syntax 8, type 8, another collection 8, modifiers 8, unknown attribute 10.
    fails(&mut c, "constraint_add_check /jobs 'events >' c2", 8).await;
    fails(&mut c, "constraint_add_check /jobs 'events > \"x\"' c2", 8).await;
    fails(&mut c, "constraint_add_check /jobs '/runs:num > 0' c2", 8).await;
    fails(&mut c, "constraint_add_check /jobs 'events > 0 order by events' c2", 8).await;
    fails(&mut c, "constraint_add_check /jobs 'nosuch > 0' c2", 10).await;
    // Wrong argument counts: 3 with the usage line.
    let s = status(&mut c, "constraint_add_check /jobs 'events > 0'").await;
    assert_eq!(s, "3 usage: constraint_add_check <dir> '<condition>' <name>");
    fails(&mut c, "constraint_add_reference /jobs run /runs:num", 3).await;
    fails(&mut c, "constraint_drop /jobs", 3).await;
    fails(&mut c, "constraint_list", 3).await;
    // None of the failures added anything.
    assert_eq!(ok(&mut c, "constraint_list /jobs").await.len(), 3);

    // A used attribute cannot be removed (3), nor a unique constraint a reference relies on,
    // nor a collection a reference refers to.
    let s = status(&mut c, "removeattr /jobs status").await;
    assert!(s.starts_with("3 ") && s.contains("st_set"), "{s}");
    fails(&mut c, "removeattr /jobs events", 3).await;
    fails(&mut c, "removeattr /runs num", 3).await;
    let s = status(&mut c, "constraint_drop /runs num_unique").await;
    assert!(s.starts_with("3 ") && s.contains("run_ref"), "{s}");
    let s = status(&mut c, "rmdir /runs").await;
    assert!(s.starts_with("3 ") && s.contains("run_ref"), "{s}");
    // An unconstrained attribute still comes and goes; the constraints stay in force.
    ok(&mut c, "addattr /jobs extra int").await;
    ok(&mut c, "removeattr /jobs extra").await;
    violates(&mut c, "addentry /jobs/j0 events 1", "st_set").await;

    // Permissions: bob may list (read) but not add or drop (write): 4.
    ok(&mut c, "user_create bob bobpw").await;
    let mut bob = srv.raw_as("bob", "bobpw").await;
    assert_eq!(ok(&mut bob, "constraint_list /jobs").await.len(), 3);
    fails(&mut bob, "constraint_add_not_null /jobs events c3", 4).await;
    fails(&mut bob, "constraint_drop /jobs st_set", 4).await;
    // A reference needs write on the referred collection too.
    ok(&mut c, "createdir /bobs").await;
    ok(&mut c, "chown /bobs bob").await;
    ok(&mut bob, "addattr /bobs r int").await;
    fails(&mut bob, "constraint_add_reference /bobs r /runs:num r", 4).await;
    ok(&mut c, "chmod /jobs rwx------").await;
    fails(&mut bob, "constraint_list /jobs", 4).await;

    // Dropping lifts the rule; after the reference is gone, the unique one and /runs can go.
    ok(&mut c, "constraint_drop /jobs st_set").await;
    ok(&mut c, "addentry /jobs/j0 events 1").await;
    ok(&mut c, "constraint_drop /jobs RUN_REF").await;
    ok(&mut c, "constraint_drop /runs num_unique").await;
    ok(&mut c, "removeattr /jobs status").await;
    ok(&mut c, "rmdir /runs").await;
    assert_eq!(ok(&mut c, "constraint_list /jobs").await, ["ev_range check events >= 0 and events < 1000"]);
    // rmdir removes a collection's own constraints with it.
    ok(&mut c, "rm /jobs/j0").await;
    ok(&mut c, "rmdir /jobs").await;
    ok(&mut c, "createdir /jobs").await;
    assert!(ok(&mut c, "constraint_list /jobs").await.is_empty());
    srv.assert_no_internal_errors();
}

async fn violations_change_nothing(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    jobs(&mut c).await;
    ok(&mut c, "addentry /runs/r1 num 1 label 'first'").await;
    ok(&mut c, "addentry /runs/r2 num 2 label 'second'").await;
    ok(&mut c, "addentry /jobs/j1 status 'ok' events 5 run 1").await;
    // Added on tables with entries.
    ok(&mut c, "constraint_add_not_null /jobs status st_set").await;
    ok(&mut c, "constraint_add_unique /runs num num_unique").await;
    ok(&mut c, "constraint_add_unique /jobs status st_unique").await;
    ok(&mut c, "constraint_add_reference /jobs run /runs:num run_ref").await;
    ok(&mut c, "constraint_add_check /jobs 'events >= 0' ev_pos").await;

    // Not null: addentry without it, clearattr, setattr, SQL INSERT with NULL.
    violates(&mut c, "addentry /jobs/j2 events 1", "st_set").await;
    violates(&mut c, "clearattr /jobs/j1 status", "st_set").await;
    violates(&mut c, "INSERT INTO /jobs (FILE, status) VALUES ('j3', NULL)", "st_set").await;
    // The message names the constraint with its definition and collection.
    let s = status(&mut c, "addentry /jobs/j2 events 1").await;
    assert_eq!(s, "21 constraint violated: st_set (not_null status) on /jobs");
    // Unique: addentry, setattr, SQL UPDATE; NULLs do not collide.
    violates(&mut c, "addentry /jobs/j2 status 'ok'", "st_unique").await;
    ok(&mut c, "addentry /jobs/j2 status 'two' events 1").await;
    violates(&mut c, "setattr /jobs/j2 status 'ok'", "st_unique").await;
    violates(&mut c, "UPDATE /jobs SET status = 'same'", "st_unique").await;
    violates(&mut c, "addentry /runs/r3 num 2", "num_unique").await;
    ok(&mut c, "addentry /runs/r3").await;
    ok(&mut c, "addentry /runs/r4").await;
    // Check: updateattr, SQL UPDATE; NULL (unknown) passes.
    violates(&mut c, "updateattr /jobs events 'events - 10' 'events > 0'", "ev_pos").await;
    violates(&mut c, "UPDATE /jobs SET events = -1 WHERE FILE = 'j2'", "ev_pos").await;
    ok(&mut c, "clearattr /jobs/j2 events").await;
    // Reference: a value that refers to nothing; removing or changing a referred entry.
    violates(&mut c, "setattr /jobs/j2 run 9", "run_ref").await;
    violates(&mut c, "INSERT INTO /jobs (FILE, status, run) VALUES ('j4', 'four', 7)", "run_ref").await;
    violates(&mut c, "rm /runs/r1", "run_ref").await;
    violates(&mut c, "DELETE FROM /runs WHERE num = 1", "run_ref").await;
    violates(&mut c, "setattr /runs/r1 num 5", "run_ref").await;
    ok(&mut c, "setattr /jobs/j2 run 2").await;
    ok(&mut c, "rm /runs/r3").await;

    // Nothing of the failed commands is stored.
    assert_eq!(values(&mut c, "/jobs", "status events run").await, ["j1", "ok", "5", "1", "j2", "two", "", "2"]);
    assert_eq!(values(&mut c, "/runs", "num").await, ["r1", "1", "r2", "2", "r4", ""]);

    // Inside a transaction: the failed command is undone, the transaction stays usable.
    ok(&mut c, "transaction").await;
    ok(&mut c, "addentry /jobs/t1 status 't1'").await;
    violates(&mut c, "addentry /jobs/t2 events 1", "st_set").await;
    violates(&mut c, "addentry /jobs/t3 status 't1'", "st_unique").await;
    ok(&mut c, "addentry /jobs/t4 status 't4'").await;
    ok(&mut c, "commit").await;
    assert_eq!(ok(&mut c, "find /jobs 'FILE like \"t%\"'").await, ["t1", "t4"]);

    // An upload: one duplicate spoils all of it, reported at commit.
    c.send(b"upload /jobs status events\nput u1 'u1' 1\nput u2 'ok' 2\nput u3 'u3' 3\n").await;
    violates(&mut c, "commit", "st_unique").await;
    // ... also inside a transaction, which stays usable.
    ok(&mut c, "transaction").await;
    c.send(b"upload /jobs status\nput u4 'u4'\nput u5 'u4'\n").await;
    violates(&mut c, "commit", "st_unique").await;
    ok(&mut c, "addentry /jobs/u6 status 'u6'").await;
    ok(&mut c, "commit").await;
    assert_eq!(ok(&mut c, "find /jobs 'FILE like \"u%\"'").await, ["u6"]);
    // A good upload goes through the same constraints.
    c.send(b"upload /jobs status events run\nput v1 'v1' 1 1\nput v2 'v2' 2 2\n").await;
    ok(&mut c, "commit").await;
    assert_eq!(values(&mut c, "/jobs/v*", "run").await, ["v1", "1", "v2", "2"]);
    srv.assert_no_internal_errors();
}

async fn existing_entries_refuse_a_constraint(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    jobs(&mut c).await;
    ok(&mut c, "addentry /runs/r1 num 1").await;
    ok(&mut c, "addentry /runs/r2 num 1").await;
    ok(&mut c, "addentry /jobs/j1 status 'a' events -5 run 3").await;
    ok(&mut c, "addentry /jobs/j2 status 'a'").await;
    for (line, name) in [
        ("constraint_add_not_null /jobs events c1", "c1"),
        ("constraint_add_unique /jobs status c2", "c2"),
        ("constraint_add_unique /runs num c3", "c3"),
        ("constraint_add_check /jobs 'events > 0' c4", "c4"),
    ] {
        let s = status(&mut c, line).await;
        assert!(s.starts_with("21 constraint violated: ") && s.contains(name), "{line}: {s}");
    }
    ok(&mut c, "setattr /runs/r2 num 2").await;
    ok(&mut c, "constraint_add_unique /runs num c3").await;
    violates(&mut c, "constraint_add_reference /jobs run /runs:num c5", "c5").await;
    // Nothing was added; after fixing the data each one goes in.
    assert!(ok(&mut c, "constraint_list /jobs").await.is_empty());
    ok(&mut c, "setattr /jobs/j1 run 2 events 5").await;
    ok(&mut c, "setattr /jobs/j2 status 'b' events 6").await;
    ok(&mut c, "constraint_add_not_null /jobs events c1").await;
    ok(&mut c, "constraint_add_unique /jobs status c2").await;
    ok(&mut c, "constraint_add_check /jobs 'events > 0' c4").await;
    ok(&mut c, "constraint_add_reference /jobs run /runs:num c5").await;
    assert_eq!(ok(&mut c, "constraint_list /jobs").await.len(), 4);
    srv.assert_no_internal_errors();
}

/// `rm -rf` removes the constraints of the subtree with it (a reference inside the subtree
/// included), but not a collection that a constraint outside the subtree refers to: that is
/// code 3 and nothing is removed. A collection made again under the old name starts without
/// constraints.
async fn rm_rf_takes_constraints_along(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut c = srv.raw().await;
    for line in [
        "createdir /t",
        "createdir /t/runs",
        "addattr /t/runs num int",
        "constraint_add_unique /t/runs num num_unique",
        "createdir /t/jobs",
        "addattr /t/jobs run int",
        "constraint_add_not_null /t/jobs run run_nn",
        "constraint_add_reference /t/jobs run /t/runs:num run_ref",
        "addentry /t/runs/r1 num 1",
        "addentry /t/jobs/j1 run 1",
        "createdir /outside",
        "addattr /outside run int",
        "constraint_add_reference /outside run /t/runs:num outside_ref",
    ] {
        ok(&mut c, line).await;
    }
    let s = status(&mut c, "rm -rf /t").await;
    assert!(s.starts_with("3 ") && s.contains("outside_ref"), "[{b:?}] referred from outside: {s}");
    assert_eq!(values(&mut c, "/t/jobs/j1", "run").await, ["j1", "1"], "[{b:?}] nothing removed");
    assert_eq!(ok(&mut c, "constraint_list /t/jobs").await.len(), 2, "[{b:?}] constraints kept");
    ok(&mut c, "constraint_drop /outside outside_ref").await;
    ok(&mut c, "rm -rf /t").await;
    fails(&mut c, "constraint_list /t/jobs", 1).await;
    // The names and the tables are free again: no trigger or table constraint survived.
    for line in ["createdir /t", "createdir /t/jobs", "addattr /t/jobs run int", "addentry /t/jobs/j1 run 5"] {
        ok(&mut c, line).await;
    }
    assert!(ok(&mut c, "constraint_list /t/jobs").await.is_empty(), "[{b:?}] a new collection has none");
    ok(&mut c, "constraint_add_not_null /t/jobs run run_nn").await;
    assert_eq!(ok(&mut c, "constraint_list /t/jobs").await, ["run_nn not_null run"], "[{b:?}]");
}
