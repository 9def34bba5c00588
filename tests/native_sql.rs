//! Native SQL (issue 13, item 1) end to end through the catalogue service, on a real SQLite file
//! and the real PostgreSQL: every clause family, the reply shape (one header row, then rows),
//! writes as atomic units, every error with its code (8 with the position for anything outside
//! the subset), and permissions: joins, counts and aggregates never see rows the caller may not
//! read, and writes never touch entries the caller may not write.

#[macro_use]
mod common;

use ardacat_core::error::Error;
use ardacat_core::{Catalogue, ServiceConfig, Session};
use ardacat_server::{Cat, Store};
use ardacat_store::{Db, DbOptions, SqlStore};
use common::{Backend, TestDb};

async fn catalogue(db: &TestDb, config: ServiceConfig) -> Cat {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    store.migrate().await.expect("migrate");
    let cat = Catalogue::new(SqlStore::new(store), config).await.expect("catalogue");
    cat.ensure_root("pw").await.expect("root");
    cat
}

async fn login(cat: &Cat, user: &str, pw: &str) -> Session<Store> {
    Session::new(cat.authenticate(user, Some(pw)).await.expect("login"))
}

/// The reply of a statement as lines: the header row, then each row; NULL as `NULL`.
async fn run(cat: &Cat, se: &mut Session<Store>, stmt: &str) -> Result<Vec<Vec<String>>, Error> {
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let n = cat.sql(se, stmt, &mut rows).await?;
    let out: Vec<Vec<String>> =
        rows.into_iter().map(|r| r.into_iter().map(|v| v.unwrap_or_else(|| "NULL".into())).collect()).collect();
    // The count is the rows after the header row (writes: entries changed, no lines at all).
    if !out.is_empty() {
        assert_eq!(n as usize, out.len() - 1, "{stmt}");
    }
    Ok(out)
}

async fn ok(cat: &Cat, se: &mut Session<Store>, stmt: &str) -> Vec<Vec<String>> {
    run(cat, se, stmt).await.unwrap_or_else(|e| panic!("{stmt}: {e}"))
}

/// A write: answers no lines; returns how many entries it changed.
async fn write(cat: &Cat, se: &mut Session<Store>, stmt: &str) -> u64 {
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let n = cat.sql(se, stmt, &mut rows).await.unwrap_or_else(|e| panic!("{stmt}: {e}"));
    assert!(rows.is_empty(), "{stmt} answered {rows:?}");
    n
}

async fn fails(cat: &Cat, se: &mut Session<Store>, stmt: &str, code: u16) -> String {
    match run(cat, se, stmt).await {
        Ok(rows) => panic!("{stmt}: expected error {code}, got {rows:?}"),
        Err(e) => {
            assert_eq!(e.code(), code, "{stmt}: {e}");
            e.to_string()
        }
    }
}

/// Code 8 whose message carries the byte position of `at` in the statement.
async fn fails_at(cat: &Cat, se: &mut Session<Store>, stmt: &str, at: &str) {
    let msg = fails(cat, se, stmt, 8).await;
    let pos = stmt.find(at).unwrap_or_else(|| panic!("'{at}' not in {stmt}"));
    assert!(msg.contains(&format!("at position {pos}:")), "{stmt}: expected position {pos} ('{at}'), got {msg}");
}

fn rows(v: &[&[&str]]) -> Vec<Vec<String>> {
    v.iter().map(|r| r.iter().map(|x| x.to_string()).collect()).collect()
}

async fn setup(cat: &Cat, se: &mut Session<Store>) {
    cat.createdir(se, "/jobs", false).await.unwrap();
    for (n, t) in [("events", "int"), ("energy", "float"), ("status", "varchar(10)"), ("ok", "bool")] {
        cat.addattr(se, "/jobs", n, t, false).await.unwrap();
    }
    cat.createdir(se, "/cfg", false).await.unwrap();
    cat.addattr(se, "/cfg", "key", "int", false).await.unwrap();
    cat.addattr(se, "/cfg", "label", "text", false).await.unwrap();
    let n = write(
        cat,
        se,
        "INSERT INTO /jobs (FILE, events, energy, status, ok) VALUES ('j0', 9, 1.5, 'done', TRUE), \
         ('j1', 10, 2.25, 'run', FALSE), ('j2', 100, -3, 'done', true), ('j3', 2, 0, 'new', false), \
         ('j4', NULL, NULL, NULL, NULL)",
    )
    .await;
    assert_eq!(n, 5);
    assert_eq!(
        write(cat, se, "insert into /cfg values ('c1', 10, 'ten'), ('c2', 100, 'hundred'), ('c3', 7, 'seven')").await,
        3
    );
}

async fn select_clauses(b: Backend) {
    let db = TestDb::new(b).await;
    let cat = catalogue(&db, ServiceConfig::default()).await;
    let mut se = login(&cat, "root", "pw").await;
    let se = &mut se;
    setup(&cat, se).await;

    // One header line per column (as written), then one line per value.
    assert_eq!(
        ok(&cat, se, "SELECT FILE, events FROM /jobs WHERE events > 5 ORDER BY FILE").await,
        rows(&[&["FILE", "events"], &["j0", "9"], &["j1", "10"], &["j2", "100"]])
    );
    // Any case; /dir:attr, /dir.attr and alias.attr; an alias heads its column.
    assert_eq!(
        ok(&cat, se, "select /jobs:FILE, /jobs.events, j.status as st from /jobs j where j.events = 9").await,
        rows(&[&["/jobs:FILE", "/jobs.events", "st"], &["j0", "9", "done"]])
    );
    // `*`: the entry name and every attribute, headed /dir:attr.
    assert_eq!(
        ok(&cat, se, "SELECT * FROM /cfg WHERE key < 10").await,
        rows(&[&["/cfg:FILE", "/cfg:key", "/cfg:label"], &["c3", "7", "seven"]])
    );
    // No rows: the header line alone.
    assert_eq!(ok(&cat, se, "SELECT FILE FROM /jobs WHERE events > 1000").await, rows(&[&["FILE"]]));
    // Entry columns.
    assert_eq!(
        ok(&cat, se, "SELECT FILE, OWNER, PERMISSIONS, GROUP_RIGHT FROM /cfg WHERE FILE = 'c1'").await[1][..3],
        ["c1", "root", "rw-r--r--"]
    );
    // WHERE: and/or/not, comparisons, LIKE, IN, BETWEEN, IS [NOT] NULL, arithmetic.
    let files = |r: Vec<Vec<String>>| r[1..].iter().map(|x| x[0].clone()).collect::<Vec<_>>();
    for (cond, want) in [
        ("events >= 10 AND NOT status = 'run'", vec!["j2"]),
        ("events < 5 OR status = 'run'", vec!["j1", "j3"]),
        ("status LIKE 'd%'", vec!["j0", "j2"]),
        ("status NOT LIKE 'd%'", vec!["j1", "j3"]),
        ("events IN (2, 9, 11)", vec!["j0", "j3"]),
        ("status NOT IN ('done')", vec!["j1", "j3"]),
        ("events BETWEEN 9 AND 10", vec!["j0", "j1"]),
        ("events NOT BETWEEN 3 AND 99", vec!["j2", "j3"]),
        ("events IS NULL", vec!["j4"]),
        ("energy IS NOT NULL AND ok", vec!["j0", "j2"]),
        ("events * 2 + 1 = 21", vec!["j1"]),
        ("-energy > 0", vec!["j2"]),
        ("(events > 5) <> ok", vec!["j1"]),
        ("events = '9'", vec!["j0"]),
        ("lower(status) = 'new'", vec!["j3"]),
    ] {
        assert_eq!(
            files(ok(&cat, se, &format!("SELECT FILE FROM /jobs WHERE {cond} ORDER BY FILE")).await),
            want,
            "{cond}"
        );
    }
    // ORDER BY positions and names, ASC/DESC; NULL sorts first ascending, last descending.
    assert_eq!(
        ok(&cat, se, "SELECT FILE, events FROM /jobs ORDER BY 2 DESC").await[1..],
        rows(&[&["j2", "100"], &["j1", "10"], &["j0", "9"], &["j3", "2"], &["j4", "NULL"]])
    );
    assert_eq!(
        files(ok(&cat, se, "SELECT FILE, energy AS e FROM /jobs ORDER BY e ASC, FILE").await),
        ["j4", "j2", "j3", "j0", "j1"]
    );
    assert_eq!(
        files(ok(&cat, se, "SELECT FILE FROM /jobs ORDER BY status DESC, events").await),
        ["j1", "j3", "j0", "j2", "j4"]
    );
    // DISTINCT, LIMIT, OFFSET.
    assert_eq!(
        ok(&cat, se, "SELECT DISTINCT status FROM /jobs WHERE status IS NOT NULL ORDER BY 1").await,
        rows(&[&["status"], &["done"], &["new"], &["run"]])
    );
    assert_eq!(files(ok(&cat, se, "SELECT FILE FROM /jobs ORDER BY FILE LIMIT 2").await), ["j0", "j1"]);
    assert_eq!(files(ok(&cat, se, "SELECT FILE FROM /jobs ORDER BY FILE LIMIT 2 OFFSET 2").await), ["j2", "j3"]);
    assert_eq!(files(ok(&cat, se, "SELECT FILE FROM /jobs ORDER BY FILE OFFSET 3").await), ["j3", "j4"]);
    // Joins: comma, JOIN … ON, self-join with aliases, a bare name found in one table only.
    assert_eq!(
        ok(&cat, se, "SELECT j.FILE, label FROM /jobs j, /cfg c WHERE j.events = c.key ORDER BY 1").await,
        rows(&[&["j.FILE", "label"], &["j1", "ten"], &["j2", "hundred"]])
    );
    assert_eq!(
        ok(
            &cat,
            se,
            "SELECT /jobs:FILE, /cfg:label FROM /jobs JOIN /cfg ON /jobs:events = /cfg:key WHERE label <> 'ten'"
        )
        .await[1..],
        rows(&[&["j2", "hundred"]])
    );
    assert_eq!(
        ok(&cat, se, "SELECT a.FILE, b.FILE FROM /jobs a, /jobs b WHERE a.events * 10 = b.events ORDER BY 1").await
            [1..],
        rows(&[&["j1", "j2"]])
    );
    // A table named relative to the current directory.
    cat.cd(se, "/cfg").await.unwrap();
    fails(&cat, se, "SELECT label FROM cfg WHERE key = 7", 1).await; // /cfg/cfg
    cat.cd(se, "/").await.unwrap();
    assert_eq!(ok(&cat, se, "SELECT label FROM cfg WHERE cfg.key = 7").await, rows(&[&["label"], &["seven"]]));
}

async fn aggregates(b: Backend) {
    let db = TestDb::new(b).await;
    let cat = catalogue(&db, ServiceConfig::default()).await;
    let mut se = login(&cat, "root", "pw").await;
    let se = &mut se;
    setup(&cat, se).await;

    assert_eq!(
        ok(&cat, se, "SELECT COUNT(*), count(events), COUNT(DISTINCT status), SUM(events), AVG(energy), MIN(status), MAX(events) FROM /jobs").await,
        rows(&[
            &["COUNT(*)", "count(events)", "COUNT(DISTINCT status)", "SUM(events)", "AVG(energy)", "MIN(status)", "MAX(events)"],
            &["5", "4", "3", "121", "0.1875", "done", "100"],
        ])
    );
    // No rows: COUNT is 0, the others NULL; still one row.
    assert_eq!(
        ok(&cat, se, "SELECT COUNT(*), SUM(events), MAX(status) FROM /jobs WHERE events > 1000").await[1..],
        rows(&[&["0", "NULL", "NULL"]])
    );
    // GROUP BY, HAVING, ORDER BY aggregates and positions.
    assert_eq!(
        ok(&cat, se, "SELECT status, COUNT(*) AS n, SUM(energy) FROM /jobs GROUP BY status ORDER BY n DESC, 1").await,
        rows(&[
            &["status", "n", "SUM(energy)"],
            &["done", "2", "-1.5"],
            &["NULL", "1", "NULL"],
            &["new", "1", "0"],
            &["run", "1", "2.25"],
        ])
    );
    assert_eq!(
        ok(&cat, se, "SELECT status FROM /jobs GROUP BY status HAVING COUNT(*) > 1 AND MIN(events) < 50").await[1..],
        rows(&[&["done"]])
    );
    assert_eq!(ok(&cat, se, "SELECT COUNT(*) FROM /jobs HAVING COUNT(*) > 10").await, rows(&[&["COUNT(*)"]]));
    // Aggregates over a join, and arithmetic on aggregates.
    assert_eq!(
        ok(&cat, se, "SELECT c.label, COUNT(*), MAX(j.events) - MIN(j.events) FROM /jobs j, /cfg c WHERE j.events >= c.key GROUP BY c.label ORDER BY 2, 1").await[1..],
        rows(&[&["hundred", "1", "0"], &["ten", "2", "90"], &["seven", "3", "91"]])
    );
    // DISTINCT over groups, LIMIT/OFFSET over groups.
    assert_eq!(
        ok(&cat, se, "SELECT DISTINCT COUNT(*) FROM /jobs GROUP BY status ORDER BY 1").await[1..],
        rows(&[&["1"], &["2"]])
    );
    assert_eq!(
        ok(
            &cat,
            se,
            "SELECT status FROM /jobs WHERE status IS NOT NULL GROUP BY status ORDER BY status LIMIT 1 OFFSET 1"
        )
        .await[1..],
        rows(&[&["new"]])
    );
    // Grouping rules: every output is a grouping column or an aggregate.
    fails_at(&cat, se, "SELECT FILE, COUNT(*) FROM /jobs GROUP BY status", "FILE").await;
    fails_at(&cat, se, "SELECT status FROM /jobs GROUP BY status ORDER BY events", "events").await;
    fails_at(&cat, se, "SELECT status FROM /jobs GROUP BY status HAVING events > 1", "events > 1").await;
    fails_at(&cat, se, "SELECT FILE FROM /jobs WHERE COUNT(*) > 1", "COUNT(*) > 1").await;
    fails_at(&cat, se, "SELECT SUM(status) FROM /jobs", "SUM(status)").await;
    fails_at(&cat, se, "SELECT MAX(ok) FROM /jobs", "MAX(ok)").await;
    fails_at(&cat, se, "SELECT COUNT(SUM(events)) FROM /jobs", "SUM(events)").await;
}

async fn writes(b: Backend) {
    let db = TestDb::new(b).await;
    let cat = catalogue(&db, ServiceConfig::default()).await;
    let mut se = login(&cat, "root", "pw").await;
    let se = &mut se;
    setup(&cat, se).await;
    let all = "SELECT FILE, events, status FROM /jobs ORDER BY FILE";
    let before = ok(&cat, se, all).await;

    // UPDATE with expressions, WHERE, and an implicit join on another collection.
    assert_eq!(write(&cat, se, "UPDATE /jobs SET events = events + 1, status = 'x' WHERE events < 10").await, 2);
    assert_eq!(
        write(&cat, se, "update /jobs j set status = 'cfg' where j.events = /cfg:key").await,
        3,
        "j0 (10 now), j1 (10) and j2 (100) match a /cfg key"
    );
    assert_eq!(
        ok(&cat, se, all).await[1..],
        rows(&[
            &["j0", "10", "cfg"],
            &["j1", "10", "cfg"],
            &["j2", "100", "cfg"],
            &["j3", "3", "x"],
            &["j4", "NULL", "NULL"]
        ])
    );
    assert_eq!(write(&cat, se, "UPDATE /jobs SET status = NULL WHERE FILE = 'j0'").await, 1);
    // DELETE.
    assert_eq!(write(&cat, se, "DELETE FROM /jobs WHERE status IS NULL AND events IS NULL").await, 1);
    assert_eq!(write(&cat, se, "delete from /cfg where label like 's%'").await, 1);
    assert_eq!(ok(&cat, se, "SELECT COUNT(*) FROM /cfg").await[1], ["2"]);
    // INSERT without a column list: FILE then the attributes in schema order.
    assert_eq!(write(&cat, se, "INSERT INTO /jobs VALUES ('k1', -5, 1e3, 'neg', NULL)").await, 1);
    assert_eq!(ok(&cat, se, "SELECT events, energy, ok FROM /jobs WHERE FILE = 'k1'").await[1], ["-5", "1000", "NULL"]);

    // A failing statement changes nothing: the second row is invalid, the first stays out.
    fails(&cat, se, "INSERT INTO /jobs (FILE, events) VALUES ('n1', 1), ('n2', 'x')", 18).await;
    fails(&cat, se, "INSERT INTO /jobs (FILE) VALUES ('n1'), ('j1')", 15).await;
    fails(&cat, se, "INSERT INTO /jobs (FILE, status) VALUES ('n1', 'far too long for it')", 18).await;
    fails(&cat, se, "INSERT INTO /jobs (FILE, nosuch) VALUES ('n1', 1)", 10).await;
    fails(&cat, se, "INSERT INTO /jobs (FILE) VALUES ('bad/name')", 3).await;
    fails(&cat, se, "INSERT INTO /missing (FILE) VALUES ('n1')", 1).await;
    fails_at(&cat, se, "INSERT INTO /jobs (events) VALUES (1)", "/jobs").await;
    fails_at(&cat, se, "INSERT INTO /jobs (FILE, OWNER) VALUES ('n1', 'bob')", "OWNER").await;
    fails_at(&cat, se, "INSERT INTO /jobs (FILE, events) VALUES ('n1', 1, 2)", "'n1'").await;
    fails_at(&cat, se, "INSERT INTO /jobs (FILE) VALUES (5)", "5").await;
    fails_at(&cat, se, "UPDATE /jobs SET FILE = 'x'", "FILE").await;
    fails_at(&cat, se, "UPDATE /jobs SET events = 1, events = 2", "events = 2").await;
    fails_at(&cat, se, "UPDATE /jobs SET events = /cfg:key WHERE /cfg:key = 1", "/cfg:key WHERE").await;
    fails(&cat, se, "UPDATE /jobs SET events = 'many'", 18).await; // as setattr and updateattr
    fails(&cat, se, "UPDATE /jobs SET nosuch = 1", 10).await;
    fails(&cat, se, "DELETE FROM /missing", 1).await;
    assert_eq!(ok(&cat, se, "SELECT COUNT(*) FROM /jobs WHERE FILE LIKE 'n%'").await[1], ["0"]);

    // Inside a transaction: a failed statement leaves the transaction usable; abort undoes all.
    let now = ok(&cat, se, all).await;
    cat.begin(se).await.unwrap();
    assert_eq!(write(&cat, se, "DELETE FROM /jobs WHERE FILE = 'j0'").await, 1);
    fails(&cat, se, "INSERT INTO /jobs (FILE) VALUES ('t1'), ('j1')", 15).await;
    assert_eq!(write(&cat, se, "INSERT INTO /jobs (FILE) VALUES ('t1')").await, 1);
    assert_eq!(ok(&cat, se, "SELECT COUNT(*) FROM /jobs").await[1], ["5"]);
    cat.abort(se).await.unwrap();
    assert_eq!(ok(&cat, se, all).await, now);
    assert_ne!(now, before);
}

async fn errors(b: Backend) {
    let db = TestDb::new(b).await;
    let config = ServiceConfig { max_join_tables: 2, ..ServiceConfig::default() };
    let cat = catalogue(&db, config).await;
    let mut se = login(&cat, "root", "pw").await;
    let se = &mut se;
    setup(&cat, se).await;

    // Syntax and constructs outside the subset: 8 with the position in the user's text.
    for (stmt, at) in [
        ("SELECT FILE FORM /jobs", "/jobs"),
        ("SELECT FILE FROM /jobs UNION SELECT FILE FROM /cfg", "SELECT FILE FROM /cfg"),
        ("SELECT FILE FROM /jobs WHERE events % 2 = 1", "2 = 1"),
        ("SELECT FILE FROM /jobs WHERE events IN (SELECT key FROM /cfg)", "SELECT key"),
        ("SELECT FILE FROM /jobs LEFT JOIN /cfg ON events = key", "/cfg"),
        ("SELECT CASE WHEN ok THEN 1 END FROM /jobs", "CASE"),
        ("SELECT now() FROM /jobs", "now"),
        ("SELECT FILE FROM /jobs ORDER BY 3", "3"),
        ("SELECT FILE FROM /jobs ORDER BY 0", "0"),
        ("SELECT FILE FROM /jobs LIMIT -1", "-1"),
        ("SELECT FILE FROM /jobs GROUP BY 1", "1"),
        ("SELECT FILE FROM /jobs; DELETE FROM /jobs", "DELETE"),
        ("SELECT FILE FROM /jobs WHERE status = 'open", "'open"),
        ("SELECT FILE FROM /jobs WHERE events = 'abc'", "events = 'abc'"),
        ("SELECT FILE FROM /jobs WHERE events", "events"),
        ("SELECT FILE FROM /jobs WHERE status LIKE events", "status LIKE events"),
        ("SELECT j.FILE FROM /jobs j, /cfg c WHERE FILE = 'x'", "FILE = "),
        ("SELECT a.FILE FROM /jobs a, /jobs b WHERE /jobs:events = 1", "/jobs:events = 1"),
        ("SELECT FILE FROM /jobs WHERE /cfg:key = 1", "/cfg:key"),
        ("SELECT x.FILE FROM /jobs j", "x.FILE"),
        ("SELECT FILE FROM /jobs WHERE /jobs = 1", "/jobs = 1"),
        ("TRUNCATE /jobs", "TRUNCATE"),
        ("DELETE FROM /jobs, /cfg", "DELETE"),
    ] {
        fails_at(&cat, se, stmt, at).await;
    }
    fails(&cat, se, "   ", 8).await;
    // At the end of the statement: the position is its length.
    let msg = fails(&cat, se, "SELECT FILE FROM /jobs WHERE", 8).await;
    assert!(msg.contains("at position 28:"), "{msg}");
    // Names that do not exist keep their own codes (as in selectattr).
    fails(&cat, se, "SELECT nosuch FROM /jobs", 10).await;
    fails(&cat, se, "SELECT FILE FROM /nowhere", 1).await;
    // The join limit of the query language.
    fails(&cat, se, "SELECT a.FILE FROM /jobs a, /jobs b, /cfg c", 19).await;
    // Nothing was changed by any of it.
    assert_eq!(ok(&cat, se, "SELECT COUNT(*) FROM /jobs").await[1], ["5"]);
}

/// Like the selectattr permission tests: an unreadable collection is error 4 wherever it is
/// named; entries the caller may not read are never returned, joined, counted, summed or
/// grouped; writes change only entries the caller may write.
async fn permissions(b: Backend) {
    let db = TestDb::new(b).await;
    let cat = catalogue(&db, ServiceConfig::default()).await;
    let mut root = login(&cat, "root", "pw").await;
    let r = &mut root;
    cat.user_create(r, "alice", "apw").await.unwrap();
    for d in ["/pub", "/priv", "/mine"] {
        cat.createdir(r, d, false).await.unwrap();
        cat.addattr(r, d, "x", "int", false).await.unwrap();
    }
    cat.chmod(r, "/priv", "rwx------").await.unwrap();
    cat.chown(r, "/mine", "alice").await.unwrap();
    write(&cat, r, "INSERT INTO /pub (FILE, x) VALUES ('a', 1), ('b', 2), ('hidden', 100), ('acl', 1000)").await;
    write(&cat, r, "INSERT INTO /priv (FILE, x) VALUES ('p', 1)").await;
    write(&cat, r, "INSERT INTO /mine (FILE, x) VALUES ('locked', 3)").await;
    cat.chmod(r, "/pub/hidden", "rw-------").await.unwrap();
    cat.chmod(r, "/pub/acl", "rw-------").await.unwrap();
    cat.acl_add(r, "/pub/acl", "alice", "r--").await.unwrap();
    cat.chmod(r, "/mine/locked", "rw-r--r--").await.unwrap(); // root's entry: alice may read, not write
    let mut alice = login(&cat, "alice", "apw").await;
    let a = &mut alice;
    write(&cat, a, "INSERT INTO /mine (FILE, x) VALUES ('m1', 1), ('m2', 2)").await;

    // Collections: reading, joining or filtering on an unreadable one is 4.
    fails(&cat, a, "SELECT FILE FROM /priv", 4).await;
    fails(&cat, a, "SELECT p.FILE FROM /pub p, /priv q", 4).await;
    fails(&cat, a, "SELECT FILE FROM /pub JOIN /priv ON /pub:x = /priv:x", 4).await;
    fails(&cat, a, "SELECT COUNT(*) FROM /priv", 4).await;
    fails(&cat, a, "UPDATE /mine SET x = 0 WHERE x = /priv:x", 4).await;
    fails(&cat, a, "DELETE FROM /mine WHERE /priv:x = 1", 4).await;
    fails(&cat, a, "UPDATE /pub SET x = 0", 4).await;
    fails(&cat, a, "DELETE FROM /pub", 4).await;
    fails(&cat, a, "INSERT INTO /pub (FILE) VALUES ('new')", 4).await;
    // Entries: the hidden one takes part in nothing; the one with an ACL row for alice does.
    assert_eq!(ok(&cat, a, "SELECT FILE FROM /pub ORDER BY FILE").await[1..], rows(&[&["a"], &["acl"], &["b"]]));
    assert_eq!(ok(&cat, a, "SELECT * FROM /pub WHERE x > 50").await[1..], rows(&[&["acl", "1000"]]));
    assert_eq!(
        ok(&cat, a, "SELECT COUNT(*), SUM(x), MAX(x), AVG(x) FROM /pub").await[1],
        ["3", "1003", "1000", &(1003.0f64 / 3.0).to_string()]
    );
    assert_eq!(ok(&cat, a, "SELECT COUNT(*) FROM /pub p, /pub q").await[1], ["9"]);
    assert_eq!(
        ok(&cat, a, "SELECT x > 10, COUNT(*) FROM /pub GROUP BY x ORDER BY 2, x").await.len(),
        4,
        "three groups of the visible rows only"
    );
    assert_eq!(
        ok(&cat, a, "SELECT m.FILE FROM /mine m, /pub p WHERE m.x * 100 = p.x").await.len(),
        1,
        "the join meets no hidden row"
    );
    assert_eq!(ok(&cat, a, "SELECT FILE FROM /pub WHERE FILE = 'hidden'").await.len(), 1);
    // Root sees everything.
    assert_eq!(ok(&cat, r, "SELECT COUNT(*) FROM /pub").await[1], ["4"]);
    // Writes: only entries alice may write change.
    assert_eq!(write(&cat, a, "UPDATE /mine SET x = x + 10").await, 2);
    assert_eq!(
        ok(&cat, r, "SELECT FILE, x FROM /mine ORDER BY FILE").await[1..],
        rows(&[&["locked", "3"], &["m1", "11"], &["m2", "12"]])
    );
    // alice owns /mine, so (as with rm) she may delete its entries; a filter over /pub sees only
    // what she may read there.
    assert_eq!(write(&cat, a, "DELETE FROM /mine WHERE x * 100 = /pub:x").await, 0, "only 'hidden' has x = 100");
    assert_eq!(write(&cat, a, "INSERT INTO /mine (FILE, x) VALUES ('m3', 1)").await, 1);
    assert_eq!(ok(&cat, a, "SELECT OWNER FROM /mine WHERE FILE = 'm3'").await[1], ["alice"]);
}

/// The same statements over the real server's TCP port: the raw line reaches the catalogue (SQL's
/// single quotes survive), a SELECT answers one header line per column then one line per value,
/// writes answer no lines, errors keep their codes, and a statement inside an `upload` is refused
/// like any other command there.
async fn over_tcp(b: Backend) {
    let server = common::TestServer::start(b).await;
    let mut c = server.raw().await;
    for line in ["createdir /jobs", "addattr /jobs events int", "addattr /jobs status varchar(20)"] {
        common::ok(&mut c, line).await;
    }
    assert!(
        common::ok(
            &mut c,
            "INSERT INTO /jobs (FILE, events, status) VALUES ('j1', 3, 'done'), ('j2', 9, 'it''s running')"
        )
        .await
        .is_empty()
    );
    assert_eq!(
        common::ok(&mut c, "SELECT FILE, events FROM /jobs WHERE events > 5").await,
        ["FILE", "events", "j2", "9"]
    );
    assert_eq!(common::ok(&mut c, "select status from /jobs where FILE = 'j2'").await, ["status", "it's running"]);
    assert_eq!(
        common::ok(&mut c, "SELECT COUNT(*), SUM(events) FROM /jobs").await,
        ["COUNT(*)", "SUM(events)", "2", "12"]
    );
    assert!(common::ok(&mut c, "UPDATE /jobs SET events = events + 1 WHERE FILE = 'j1'").await.is_empty());
    assert_eq!(common::ok(&mut c, "getattr /jobs/j1 events").await, ["j1", "4"]);
    assert!(common::ok(&mut c, "DELETE FROM /jobs WHERE events > 5").await.is_empty());
    assert_eq!(common::ok(&mut c, "SELECT FILE FROM /jobs").await, ["FILE", "j1"]);
    // AMGA's own `update <pattern> …` is not SQL; the SQL shape needs SET.
    common::fails(&mut c, "SELECT FILE FROM /jobs WHERE", 8).await;
    common::fails(&mut c, "SELECT nosuch FROM /jobs", 10).await;
    common::fails(&mut c, "SELECT FILE FROM /nowhere", 1).await;
    // Inside an upload only put/commit/abort: the statement spoils the upload, the commit says so.
    c.send(b"upload /jobs events status\nput j5 5 new\nSELECT FILE FROM /jobs\n").await;
    let (code, _) = c.lines("commit").await;
    assert_eq!(code, 3, "the upload failed because of the statement");
    assert_eq!(common::ok(&mut c, "SELECT COUNT(*) FROM /jobs").await, ["COUNT(*)", "1"]);
}

on_both_backends!(select_clauses, aggregates, writes, errors, permissions, over_tcp);
