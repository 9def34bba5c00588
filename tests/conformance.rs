//! The service-layer conformance suite, one test per thing checked, each on SQLite and the real
//! PostgreSQL (`<test>::sqlite`, `<test>::postgres`): every catalogue operation and error code,
//! typed comparisons, joins, patterns, transactions, bulk load, cursor resume and injection
//! attempts. Tests share set-up through small fixtures (`jobs`, `bulk`, …), never state: each
//! starts from a fresh database, so one failure hides nothing else. The answers of the query
//! tests must be the same on both backends (`parity_sqlite_postgres`). Entry permissions: the
//! SQL filters of both backends must agree with the Rust rule (`perm::Guard`) on every
//! combination of mode, ownership, group and ACL.

#[macro_use]
mod common;

use ardacat_core::error::Error;
use ardacat_core::service::{NamedValues, Names, SelectSpec};
use ardacat_core::types::{Value, ValueType};
use ardacat_core::{Catalogue, ServiceConfig, Session};
use ardacat_server::{Cat, Store};
use ardacat_store::{Db, DbOptions, SqlStore};
use common::{Backend, TestDb};

type Rows = Vec<Vec<Option<String>>>;

/// Query answers a test records, by label, for `parity_sqlite_postgres`.
type Answers = Vec<(String, Rows)>;

on_both_backends!(
    createdir_reports_exists_missing_parent_and_bad_name,
    addattr_reports_duplicate_unknown_type_reserved_name_and_missing_collection,
    listattr_lists_attributes_in_creation_order,
    subcollections_inherit_attributes_unless_plain,
    addentry_refuses_duplicates_bad_values_unknown_attributes_and_shadowing,
    addentries_is_all_or_nothing,
    comparisons_are_typed,
    bad_conditions_and_unknown_references_are_refused,
    query_extensions,
    getattr_by_pattern_and_system_attributes,
    setattr_and_clearattr_by_pattern,
    find_returns_entries_matching_a_condition,
    dir_lists_collections_then_entries,
    implicit_join_across_collections,
    updateattr_by_query_and_by_join,
    abort_discards_the_whole_transaction,
    a_failed_command_inside_a_transaction_keeps_the_rest,
    bulk_insert_is_all_or_nothing,
    rm_by_pattern_and_by_condition,
    rmdir_refuses_a_non_empty_collection_and_the_root,
    sequences_step_and_are_removed,
    removeattr_of_a_missing_attribute_is_code_10,
    injection_attempts_change_nothing,
    other_users_need_permission_or_an_acl,
    cursor_resume,
    entry_permission_matrix,
    lazy_entry_tables,
    composite_indexes,
    a_path_below_a_leaf_collection_becomes_a_collection_at_once,
);

async fn catalogue(db: &TestDb) -> Cat {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    store.migrate().await.expect("migrate");
    let cat = Catalogue::new(SqlStore::new(store), ServiceConfig::default()).await.expect("catalogue");
    cat.ensure_root("pw").await.expect("root");
    cat
}

async fn root(cat: &Cat) -> Session<Store> {
    Session::new(cat.authenticate("root", Some("pw")).await.expect("root login"))
}

fn code<T: std::fmt::Debug>(r: Result<T, Error>) -> u16 {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code(),
    }
}

fn names(v: &[&str]) -> Names {
    v.into()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// A bulk-insert row: the entry name and its values (none NULL).
fn row(name: &str, values: &[&str]) -> NamedValues {
    (name.to_string(), values.iter().map(|v| Some(v.to_string())).collect())
}

/// `addentry`'s pairs: every value given (none NULL).
fn values(v: &[(&str, &str)]) -> Vec<(String, Option<String>)> {
    v.iter().map(|(a, b)| (a.to_string(), Some(b.to_string()))).collect()
}

fn spec(cols: &[&str], cond: &str) -> SelectSpec {
    SelectSpec { select: s(cols), condition: cond.into(), order_by: None }
}

async fn select(cat: &Cat, se: &mut Session<Store>, cols: &[&str], cond: &str) -> Rows {
    let mut rows: Rows = Vec::new();
    let spec = SelectSpec { select: s(cols), condition: cond.into(), order_by: None };
    cat.selectattr(se, &spec, &mut rows).await.unwrap_or_else(|e| panic!("selectattr {cols:?} '{cond}': {e}"));
    rows
}

// ----------------------------------------------------------------------------------------------
// Fixtures

/// A fresh database with its catalogue and root's session.
struct Fixture {
    /// Held for the test's duration: dropping it removes the database.
    _db: TestDb,
    cat: Cat,
    se: Session<Store>,
}

async fn fresh(backend: Backend) -> Fixture {
    let db = TestDb::new(backend).await;
    let cat = catalogue(&db).await;
    let se = root(&cat).await;
    Fixture { _db: db, cat, se }
}

/// `/jobs` with five typed attributes (`events` indexed) and no entries.
async fn jobs_schema(backend: Backend) -> Fixture {
    let mut fx = fresh(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.createdir(se, "/jobs", false).await.unwrap();
    cat.addattr(se, "/jobs", "events", "int", true).await.unwrap();
    cat.addattr(se, "/jobs", "energy", "float", false).await.unwrap();
    cat.addattr(se, "/jobs", "status", "varchar(10)", false).await.unwrap();
    cat.addattr(se, "/jobs", "started", "timestamp", false).await.unwrap();
    cat.addattr(se, "/jobs", "ok", "bool", false).await.unwrap();
    fx
}

/// The entries [`jobs`] makes directly in `/jobs`, in name order.
const JOB_ENTRIES: [&str; 6] = ["e1", "e2", "j0", "j1", "j2", "j3"];

/// [`jobs_schema`] plus the sub-collections `/jobs/sub` (inheriting) and `/jobs/plain`, the
/// entries j0..j3 with typed values (events 9, 10, 100, 2; energy 1.5, 2.25, -3.0, 0.0; status
/// done, run, done, new; started 2024-01-01..04 10:00; ok true, false, true, false) and e1, e2,
/// sub/e3 without values.
async fn jobs(backend: Backend) -> Fixture {
    let mut fx = jobs_schema(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.createdir(se, "/jobs/sub", false).await.unwrap();
    cat.createdir(se, "/jobs/plain", true).await.unwrap();
    for (i, (ev, en, st)) in
        [(9, 1.5, "done"), (10, 2.25, "run"), (100, -3.0, "done"), (2, 0.0, "new")].iter().enumerate()
    {
        cat.addentry(
            se,
            &format!("/jobs/j{i}"),
            &values(&[
                ("events", &ev.to_string()),
                ("energy", &en.to_string()),
                ("status", st),
                ("started", &format!("2024-01-0{} 10:00:00", i + 1)),
                ("ok", if i % 2 == 0 { "true" } else { "false" }),
            ]),
        )
        .await
        .unwrap();
    }
    assert_eq!(cat.addentries(se, &s(&["/jobs/e1", "/jobs/e2", "/jobs/sub/e3"])).await.unwrap(), 3);
    fx
}

/// `/lock` (plain) with an int `id` and one entry `l` whose id (10) equals j1's events.
async fn add_lock(cat: &Cat, se: &mut Session<Store>) {
    cat.createdir(se, "/lock", true).await.unwrap();
    cat.addattr(se, "/lock", "id", "int", false).await.unwrap();
    cat.addentry(se, "/lock/l", &values(&[("id", "10")])).await.unwrap();
}

/// A fresh database with [`add_bulk`].
async fn bulk(backend: Backend) -> Fixture {
    let mut fx = fresh(backend).await;
    add_bulk(&fx.cat, &mut fx.se).await;
    fx
}

/// `/bulk` (plain, `n` int indexed, `x` float) loaded with b00000..b09999, n = i, x = i / 4.
async fn add_bulk(cat: &Cat, se: &mut Session<Store>) {
    let rows: Vec<(String, Vec<Option<String>>)> = (0..10_000)
        .map(|i| (format!("b{i:05}"), vec![Some(i.to_string()), Some(format!("{}", i as f64 / 4.0))]))
        .collect();
    cat.createdir(se, "/bulk", true).await.unwrap();
    cat.addattr(se, "/bulk", "n", "int", true).await.unwrap();
    cat.addattr(se, "/bulk", "x", "float", false).await.unwrap();
    assert_eq!(cat.insert(se, "/bulk", &s(&["n", "x"]), rows).await.unwrap(), 10_000);
}

// ----------------------------------------------------------------------------------------------
// Collections and schemas

async fn createdir_reports_exists_missing_parent_and_bad_name(backend: Backend) {
    let mut fx = fresh(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.createdir(se, "/jobs", false).await.unwrap();
    assert_eq!(code(cat.createdir(se, "/jobs", false).await), 16);
    assert_eq!(code(cat.createdir(se, "/nope/x", false).await), 1);
    assert_eq!(code(cat.createdir(se, "/bad'name", false).await), 3);
}

async fn addattr_reports_duplicate_unknown_type_reserved_name_and_missing_collection(backend: Backend) {
    let mut fx = jobs_schema(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(code(cat.addattr(se, "/jobs", "events", "int", false).await), 15);
    assert_eq!(code(cat.addattr(se, "/jobs", "x", "blob", false).await), 18);
    assert_eq!(code(cat.addattr(se, "/jobs", "FILE", "int", false).await), 3);
    assert_eq!(code(cat.addattr(se, "/missing", "x", "int", false).await), 1);
}

async fn listattr_lists_attributes_in_creation_order(backend: Backend) {
    let mut fx = jobs_schema(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    let attrs: Vec<(String, String)> =
        cat.listattr(se, "/jobs").await.unwrap().into_iter().map(|a| (a.name, a.attr_type.to_string())).collect();
    assert_eq!(
        attrs,
        pairs(&[
            ("events", "int"),
            ("energy", "float"),
            ("status", "varchar(10)"),
            ("started", "timestamp"),
            ("ok", "bool")
        ])
    );
}

/// A sub-collection takes the parent's attributes unless created plain.
async fn subcollections_inherit_attributes_unless_plain(backend: Backend) {
    let mut fx = jobs_schema(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.createdir(se, "/jobs/sub", false).await.unwrap();
    cat.createdir(se, "/jobs/plain", true).await.unwrap();
    assert_eq!(cat.listattr(se, "/jobs/sub").await.unwrap().len(), 5);
    assert!(cat.listattr(se, "/jobs/plain").await.unwrap().is_empty());
}

// ----------------------------------------------------------------------------------------------
// Entries: typed values, validation

async fn addentry_refuses_duplicates_bad_values_unknown_attributes_and_shadowing(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(code(cat.addentry(se, "/jobs/j0", &[]).await), 15);
    assert_eq!(code(cat.addentry(se, "/jobs/bad", &values(&[("events", "12x")])).await), 18);
    assert_eq!(code(cat.addentry(se, "/jobs/bad", &values(&[("status", "much too long")])).await), 18);
    assert_eq!(code(cat.addentry(se, "/jobs/bad", &values(&[("started", "yesterday")])).await), 18);
    assert_eq!(code(cat.addentry(se, "/jobs/bad", &values(&[("nosuch", "1")])).await), 10);
    assert_eq!(code(cat.addentry(se, "/jobs/sub", &[]).await), 15, "an entry may not shadow a collection");
    assert_eq!(code(cat.addentry(se, "/missing/e", &[]).await), 1);
}

/// `jobs` adds three entries with one `addentries`; one existing name voids the whole call.
async fn addentries_is_all_or_nothing(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(code(cat.addentries(se, &s(&["/jobs/e4", "/jobs/e1"])).await), 15);
    let mut rows: Rows = Vec::new();
    cat.getattr(se, "/jobs/e4", &names(&["events"]), &mut rows).await.map(|_| ()).expect_err("e4 must not exist");
}

// ----------------------------------------------------------------------------------------------
// Queries

/// 10 > 9 numerically, not as text; floats, timestamps and booleans compare by type too.
async fn comparisons_are_typed(backend: Backend) {
    let mut fx = jobs(backend).await;
    typed_comparison_answers(&fx.cat, &mut fx.se).await;
}

async fn typed_comparison_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let mut answers = Answers::new();
    let r = select(cat, se, &["/jobs:FILE", "/jobs:events"], "/jobs:events > 9 order by /jobs:events").await;
    assert_eq!(r, vec![vec![Some("j1".into()), Some("10".into())], vec![Some("j2".into()), Some("100".into())]]);
    answers.push(("typed int".into(), r));
    let r = select(cat, se, &["/jobs:FILE", "/jobs:energy"], "/jobs:energy <= 1.5 order by /jobs:energy desc").await;
    assert_eq!(r.len(), 3);
    assert_eq!(r[0][1].as_deref(), Some("1.5"));
    answers.push(("typed float".into(), r));
    let r = select(cat, se, &["/jobs:FILE"], "/jobs:started >= \"2024-01-03\" order by FILE").await;
    assert_eq!(r, vec![vec![Some("j2".into())], vec![Some("j3".into())]]);
    answers.push(("typed timestamp".into(), r));
    let r = select(cat, se, &["/jobs:FILE", "/jobs:ok", "/jobs:started"], "/jobs:ok = true order by FILE").await;
    assert_eq!(r[0], vec![Some("j0".into()), Some("true".into()), Some("2024-01-01 10:00:00".into())]);
    answers.push(("typed bool".into(), r));
    answers
}

async fn bad_conditions_and_unknown_references_are_refused(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(code(cat.selectattr(se, &spec(&["/jobs:FILE"], "/jobs:events = \"abc\""), &mut Vec::new()).await), 8);
    assert_eq!(code(cat.selectattr(se, &spec(&["/jobs:FILE"], "/jobs:status > 3 +"), &mut Vec::new()).await), 8);
    assert_eq!(code(cat.selectattr(se, &spec(&["/jobs:nosuch"], ""), &mut Vec::new()).await), 10);
    assert_eq!(code(cat.selectattr(se, &spec(&["/nowhere:x"], ""), &mut Vec::new()).await), 1);
}

/// Extensions: in, between, is null, like/ilike, lower/upper, arithmetic, distinct, limit, and
/// where NULL sorts.
async fn query_extensions(backend: Backend) {
    let mut fx = jobs(backend).await;
    query_extension_answers(&fx.cat, &mut fx.se).await;
}

async fn query_extension_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let mut answers = Answers::new();
    for (label, cols, cond) in [
        ("in", vec!["/jobs:FILE"], "/jobs:events in (2, 9) order by FILE"),
        ("between", vec!["/jobs:FILE"], "/jobs:events between 5 and 50 order by FILE"),
        ("is null", vec!["/jobs:FILE"], "/jobs:events is null order by FILE"),
        ("like", vec!["/jobs:FILE"], "like(/jobs:FILE, \"j%\") and not /jobs:FILE like \"j1\" order by FILE"),
        ("ilike", vec!["/jobs:FILE"], "/jobs:status ilike \"DO%\" order by FILE"),
        ("upper", vec!["upper(/jobs:status)"], "/jobs:FILE = \"j0\""),
        ("arith", vec!["/jobs:events * 2 + 1", "/jobs:events / 0"], "/jobs:FILE = \"j1\""),
        ("distinct", vec!["/jobs:status"], "/jobs:status is not null distinct order by /jobs:status"),
        ("limit", vec!["/jobs:FILE"], "order by /jobs:events desc limit 2"),
        ("null order", vec!["/jobs:FILE", "/jobs:events"], "order by /jobs:events, FILE"),
    ] {
        let r = select(cat, se, &cols, cond).await;
        answers.push((label.into(), r));
    }
    let get = |label: &str| answers.iter().find(|(l, _)| l == label).map(|(_, r)| r.clone()).unwrap();
    assert_eq!(get("in").len(), 2);
    assert_eq!(get("between"), vec![vec![Some("j0".into())], vec![Some("j1".into())]]);
    assert_eq!(get("is null"), vec![vec![Some("e1".into())], vec![Some("e2".into())]]);
    assert_eq!(get("ilike").len(), 2);
    assert_eq!(get("upper"), vec![vec![Some("DONE".into())]]);
    assert_eq!(get("arith"), vec![vec![Some("21".into()), None]]);
    assert_eq!(get("distinct"), vec![vec![Some("done".into())], vec![Some("new".into())], vec![Some("run".into())]]);
    assert_eq!(get("limit"), vec![vec![Some("j2".into())], vec![Some("j1".into())]]);
    assert_eq!(get("null order")[0][1], None, "NULL sorts first ascending");
    answers
}

// ----------------------------------------------------------------------------------------------
// Patterns

async fn getattr_by_pattern_and_system_attributes(backend: Backend) {
    let mut fx = jobs(backend).await;
    getattr_answers(&fx.cat, &mut fx.se).await;
}

async fn getattr_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let mut rows: Rows = Vec::new();
    cat.getattr(se, "/jobs/j?", &names(&["events", "status"]), &mut rows).await.unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], vec![Some("j0".into()), Some("9".into()), Some("done".into())]);
    let answers = vec![("getattr pattern".into(), rows)];
    let mut rows: Rows = Vec::new();
    cat.getattr(se, "/jobs", &names(&["FILE", "OWNER", "PERMISSIONS"]), &mut rows).await.unwrap();
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[0][2].as_deref(), Some("root"));
    assert_eq!(rows[0][3].as_deref(), Some("rw-r--r--"));
    assert_eq!(code(cat.getattr(se, "/jobs/zz", &names(&["events"]), &mut Vec::new()).await), 1);
    assert_eq!(code(cat.getattr(se, "/jobs/j0", &names(&["nosuch"]), &mut Vec::new()).await), 10);
    answers
}

/// The schema cache knows `/jobs` has no child collection, so `/jobs/kid` is not looked up per
/// request; a `createdir` (also inside a transaction, and after it commits) or `rmdir` below it is
/// seen by the next command at once.
async fn a_path_below_a_leaf_collection_becomes_a_collection_at_once(backend: Backend) {
    let mut fx = jobs_schema(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    let ev = names(&["events"]);
    for _ in 0..2 {
        assert_eq!(code(cat.getattr(se, "/jobs/kid", &ev, &mut Vec::new()).await), 1);
    }
    cat.createdir(se, "/jobs/kid", false).await.unwrap();
    assert_eq!(cat.getattr(se, "/jobs/kid", &ev, &mut Vec::new()).await.unwrap(), 0);
    assert_eq!(cat.stat(se, "/jobs/kid").await.unwrap()[0][1].as_deref(), Some("collection"));
    cat.rmdir(se, "/jobs/kid").await.unwrap();
    assert_eq!(code(cat.getattr(se, "/jobs/kid", &ev, &mut Vec::new()).await), 1);

    assert_eq!(code(cat.getattr(se, "/jobs/kid2", &ev, &mut Vec::new()).await), 1);
    cat.begin(se).await.unwrap();
    cat.createdir(se, "/jobs/kid2", false).await.unwrap();
    assert_eq!(cat.getattr(se, "/jobs/kid2", &ev, &mut Vec::new()).await.unwrap(), 0);
    cat.commit(se).await.unwrap();
    assert_eq!(cat.getattr(se, "/jobs/kid2", &ev, &mut Vec::new()).await.unwrap(), 0);
}

/// Both count the entries they changed; nothing matched is 1, a bad value 18.
async fn setattr_and_clearattr_by_pattern(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(cat.setattr(se, "/jobs/e*", &pairs(&[("status", "new")])).await.unwrap(), 2);
    assert_eq!(code(cat.setattr(se, "/jobs/none*", &pairs(&[("status", "x")])).await), 1);
    assert_eq!(code(cat.setattr(se, "/jobs/e1", &pairs(&[("events", "x")])).await), 18);
    assert_eq!(cat.clearattr(se, "/jobs/e*", &s(&["status"])).await.unwrap(), 2);
}

async fn find_returns_entries_matching_a_condition(backend: Backend) {
    let mut fx = jobs(backend).await;
    find_answers(&fx.cat, &mut fx.se).await;
}

async fn find_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let mut rows: Rows = Vec::new();
    cat.find(se, "/jobs", "status = \"done\"", &mut rows).await.unwrap();
    assert_eq!(rows, vec![vec![Some("j0".into())], vec![Some("j2".into())]]);
    vec![("find".into(), rows)]
}

async fn dir_lists_collections_then_entries(backend: Backend) {
    let mut fx = jobs(backend).await;
    dir_answers(&fx.cat, &mut fx.se).await;
}

async fn dir_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let mut rows: Rows = Vec::new();
    cat.dir(se, "/jobs", &mut rows).await.unwrap();
    assert_eq!(rows[0], vec![Some("/jobs/plain".into()), Some("collection".into())]);
    assert_eq!(rows.len(), 2 + 6);
    vec![("dir".into(), rows)]
}

// ----------------------------------------------------------------------------------------------
// Implicit joins and update-by-query

async fn implicit_join_across_collections(backend: Backend) {
    let mut fx = jobs(backend).await;
    add_lock(&fx.cat, &mut fx.se).await;
    join_answers(&fx.cat, &mut fx.se).await;
}

/// Needs [`add_lock`].
async fn join_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let r = select(cat, se, &["/jobs:FILE", "/lock:FILE"], "/jobs:events = /lock:id").await;
    assert_eq!(r, vec![vec![Some("j1".into()), Some("l".into())]]);
    vec![("join".into(), r)]
}

/// `updateattr` by a join condition and by a plain one, counting the entries it changed;
/// a value reading another collection is 8, a value of the wrong type 18.
async fn updateattr_by_query_and_by_join(backend: Backend) {
    let mut fx = jobs(backend).await;
    add_lock(&fx.cat, &mut fx.se).await;
    updateattr_answers(&fx.cat, &mut fx.se).await;
}

/// Needs [`add_lock`]; changes `/jobs`.
async fn updateattr_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let n = cat.updateattr(se, "/jobs", &pairs(&[("energy", "energy + 1")]), "/jobs:events = /lock:id").await.unwrap();
    assert_eq!(n, 1);
    let r = select(cat, se, &["/jobs:energy"], "/jobs:FILE = \"j1\"").await;
    assert_eq!(r, vec![vec![Some("3.25".into())]]);
    assert_eq!(code(cat.updateattr(se, "/jobs", &pairs(&[("energy", "/lock:id")]), "").await), 8);
    assert_eq!(code(cat.updateattr(se, "/jobs", &pairs(&[("events", "\"many\"")]), "").await), 18);
    let n = cat.updateattr(se, "/jobs/j*", &pairs(&[("status", "\"seen\"")]), "events < 10").await.unwrap();
    assert_eq!(n, 2);
    let r = select(cat, se, &["/jobs:FILE", "/jobs:status"], "order by FILE").await;
    vec![("after updates".into(), r)]
}

// ----------------------------------------------------------------------------------------------
// Transactions

async fn abort_discards_the_whole_transaction(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.begin(se).await.unwrap();
    assert_eq!(code(cat.begin(se).await), 9);
    cat.addentry(se, "/jobs/tx1", &[]).await.unwrap();
    cat.createdir(se, "/txdir", false).await.unwrap();
    assert_eq!(code(cat.addentry(se, "/jobs/tx1", &[]).await), 15);
    cat.addentry(se, "/jobs/tx2", &[]).await.unwrap();
    cat.abort(se).await.unwrap();
    assert_eq!(code(cat.commit(se).await), 9);
    assert_eq!(code(cat.getattr(se, "/jobs/tx1", &names(&["events"]), &mut Vec::new()).await), 1);
    assert_eq!(code(cat.cd(se, "/txdir").await), 1);
}

async fn a_failed_command_inside_a_transaction_keeps_the_rest(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.begin(se).await.unwrap();
    cat.addentry(se, "/jobs/tx3", &[]).await.unwrap();
    assert_eq!(code(cat.addentry(se, "/jobs/tx3", &[]).await), 15);
    cat.commit(se).await.unwrap();
    cat.getattr(se, "/jobs/tx3", &names(&["events"]), &mut Vec::new()).await.unwrap();
}

// ----------------------------------------------------------------------------------------------
// Bulk load, rm, rmdir, sequences, removeattr

/// `bulk` loads 10,000 rows in one insert; a bad value or an existing name voids the whole
/// insert.
async fn bulk_insert_is_all_or_nothing(backend: Backend) {
    let mut fx = bulk(backend).await;
    bulk_answers(&fx.cat, &mut fx.se).await;
}

async fn bulk_answers(cat: &Cat, se: &mut Session<Store>) -> Answers {
    let bad = vec![row("c1", &["1", "1"]), row("c2", &["x", "1"])];
    assert_eq!(code(cat.insert(se, "/bulk", &s(&["n", "x"]), bad).await), 18);
    let dup = vec![row("c1", &["1", "1"]), row("b00001", &["1", "1"])];
    assert_eq!(code(cat.insert(se, "/bulk", &s(&["n", "x"]), dup).await), 15);
    assert_eq!(code(cat.getattr(se, "/bulk/c1", &names(&["n"]), &mut Vec::new()).await), 1);
    let r = select(cat, se, &["/bulk:FILE", "/bulk:x"], "/bulk:n >= 9998 and /bulk:n < 10000 and /bulk:x > 0").await;
    assert_eq!(
        r,
        vec![vec![Some("b09998".into()), Some("2499.5".into())], vec![Some("b09999".into()), Some("2499.75".into())]]
    );
    vec![("bulk".into(), r)]
}

/// `rm` counts what it removed; a name that no longer exists is 1.
async fn rm_by_pattern_and_by_condition(backend: Backend) {
    let mut fx = bulk(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(cat.rm(se, "/bulk/b0000?", None).await.unwrap(), 10);
    assert_eq!(cat.rm(se, "/bulk", Some("/bulk:n >= 5000")).await.unwrap(), 5000);
    assert_eq!(code(cat.rm(se, "/bulk/b00000", None).await), 1);
}

async fn rmdir_refuses_a_non_empty_collection_and_the_root(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    assert_eq!(code(cat.rmdir(se, "/jobs").await), 11);
    assert_eq!(code(cat.rmdir(se, "/").await), 4);
}

/// A sequence starts at its start value and steps by its increment; a duplicate is 15, and
/// `sequence_next` of an entry or of a removed sequence is 17.
async fn sequences_step_and_are_removed(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.sequence_create(se, "seq", "/jobs", 5, 10).await.unwrap();
    assert_eq!(code(cat.sequence_create(se, "seq", "/jobs", 1, 1).await), 15);
    assert_eq!(cat.sequence_next(se, "/jobs/seq").await.unwrap(), 10);
    assert_eq!(cat.sequence_next(se, "/jobs/seq").await.unwrap(), 15);
    assert_eq!(code(cat.sequence_next(se, "/jobs/j0").await), 17);
    cat.sequence_remove(se, "/jobs/seq").await.unwrap();
    assert_eq!(code(cat.sequence_next(se, "/jobs/seq").await), 17);
}

async fn removeattr_of_a_missing_attribute_is_code_10(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    cat.removeattr(se, "/jobs", "energy").await.unwrap();
    assert_eq!(code(cat.removeattr(se, "/jobs", "energy").await), 10);
}

// ----------------------------------------------------------------------------------------------
// Injection and permissions

/// SQL in conditions, entry names, attribute names and values is data, never SQL: afterwards
/// `/jobs` holds exactly its entries and the users table still works.
async fn injection_attempts_change_nothing(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    for evil in ["x'; DROP TABLE e1; --", "\"; DROP TABLE collections; --", "a\0b", "/jobs:FILE = 1; DROP TABLE users"]
    {
        let _ = cat.selectattr(se, &spec(&["/jobs:FILE"], evil), &mut Vec::new()).await;
        let _ = cat.addentry(se, &format!("/jobs/{evil}"), &[]).await;
        let _ = cat.addattr(se, "/jobs", evil, "int", false).await;
        let _ = cat.setattr(se, "/jobs/j0", &pairs(&[("status", evil)])).await;
    }
    let r = select(cat, se, &["/jobs:FILE"], "/jobs:FILE = \"x'; DROP TABLE e1; --\"").await;
    assert!(r.is_empty());
    let names: Vec<String> = select(cat, se, &["/jobs:FILE"], "order by FILE")
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_default())
        .collect();
    assert_eq!(names, JOB_ENTRIES, "no entry added or lost");
    cat.authenticate("root", Some("pw")).await.expect("users table intact");
}

/// Another user cannot read or write root's private collection, not even through a join, nor
/// create users or collections in `/`; an ACL grants read (not write) until it is removed.
async fn other_users_need_permission_or_an_acl(backend: Backend) {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    add_lock(cat, se).await;
    cat.user_create(se, "alice", "apw").await.unwrap();
    assert_eq!(code(cat.user_create(se, "alice", "apw").await), 15);
    cat.chmod(se, "/jobs", "rwx------").await.unwrap();
    let mut alice = Session::new(cat.authenticate("alice", Some("apw")).await.unwrap());
    assert_eq!(code(cat.authenticate("alice", Some("wrong")).await), 4);
    assert_eq!(code(cat.selectattr(&mut alice, &spec(&["/jobs:FILE"], ""), &mut Vec::new()).await), 4);
    assert_eq!(
        code(cat.selectattr(&mut alice, &spec(&["/lock:FILE"], "/lock:id = /jobs:events"), &mut Vec::new()).await),
        4
    );
    assert_eq!(code(cat.addentry(&mut alice, "/jobs/mine", &[]).await), 4);
    assert_eq!(code(cat.user_create(&mut alice, "bob", "x").await), 4);
    assert_eq!(code(cat.createdir(&mut alice, "/alice", false).await), 4, "root collection is rwxr-xr-x");
    cat.acl_add(se, "/jobs", "alice", "r-x").await.unwrap();
    assert_eq!(select(cat, &mut alice, &["/jobs:FILE"], "order by FILE").await.len(), JOB_ENTRIES.len());
    assert_eq!(code(cat.addentry(&mut alice, "/jobs/mine", &[]).await), 4);
    cat.acl_remove(se, "/jobs", "alice").await.unwrap();
    assert_eq!(code(cat.selectattr(&mut alice, &spec(&["/jobs:FILE"], ""), &mut Vec::new()).await), 4);
}

// ----------------------------------------------------------------------------------------------
// Parity

/// Every recorded answer, in a fixed order, from one database per backend (as one scenario: the
/// readers first, then the one test that changes `/jobs`), so that parity costs two set-ups, not
/// one per test.
async fn all_answers(backend: Backend) -> Answers {
    let mut fx = jobs(backend).await;
    let (cat, se) = (&fx.cat, &mut fx.se);
    add_lock(cat, se).await;
    add_bulk(cat, se).await;
    let mut all = Answers::new();
    all.extend(typed_comparison_answers(cat, se).await);
    all.extend(query_extension_answers(cat, se).await);
    all.extend(getattr_answers(cat, se).await);
    all.extend(find_answers(cat, se).await);
    all.extend(dir_answers(cat, se).await);
    all.extend(join_answers(cat, se).await);
    all.extend(Box::pin(bulk_answers(cat, se)).await);
    all.extend(updateattr_answers(cat, se).await);
    all
}

/// The query tests give the same answers, row for row, on SQLite and PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parity_sqlite_postgres() {
    let a = Box::pin(all_answers(Backend::Sqlite)).await;
    let b = Box::pin(all_answers(Backend::Postgres)).await;
    assert_eq!(a.len(), b.len());
    for ((la, ra), (lb, rb)) in a.iter().zip(&b) {
        assert_eq!(la, lb);
        assert_eq!(ra, rb, "backends disagree on '{la}'");
    }
}

// ----------------------------------------------------------------------------------------------
// Cursors, the permission matrix, lazy entry tables, composite indexes

/// Keyset cursors: page through a query by serialised positions while another session
/// inserts rows; every original row is seen exactly once, in order.
async fn cursor_resume(backend: Backend) {
    let db = TestDb::new(backend).await;
    let cat = catalogue(&db).await;
    let mut se = root(&cat).await;
    cat.createdir(&mut se, "/c", true).await.unwrap();
    cat.addattr(&mut se, "/c", "k", "int", false).await.unwrap();
    let rows: Vec<NamedValues> = (0..3000).map(|i| row(&format!("r{i}"), &[&(i % 97).to_string()])).collect();
    cat.insert(&mut se, "/c", &s(&["k"]), rows).await.unwrap();
    let q = SelectSpec { select: s(&["/c:FILE", "/c:k"]), condition: "order by /c:k desc".into(), order_by: None };
    let mut seen = Vec::new();
    let mut state = cat.new_cursor(&se, &q, 0);
    let mut writer = root(&cat).await;
    let mut extra = 0;
    loop {
        // The position travels as a signed token, as between server processes.
        let token = cat.issue_token(&state);
        let st = cat.open_token(&se, &token, 0, 60).expect("token");
        let page = cat.query_page(&mut se, &st.spec(), st.position(), 250).await.unwrap();
        seen.extend(page.rows.iter().map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap().parse::<i64>().unwrap())));
        // Concurrent inserts, both before and after the current position.
        for k in [0, 50, 96] {
            cat.addentry(&mut writer, &format!("/c/new{extra}"), &values(&[("k", &k.to_string())])).await.unwrap();
            extra += 1;
        }
        match page.next {
            Some(next) => state = cat.continue_state(&st, &next, 0),
            None => break,
        }
    }
    let originals: Vec<&(String, i64)> = seen.iter().filter(|(n, _)| n.starts_with('r')).collect();
    assert_eq!(originals.len(), 3000, "every original row exactly once");
    let mut names: Vec<&String> = originals.iter().map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 3000, "no row repeated");
    assert!(seen.windows(2).all(|w| w[0].1 >= w[1].1), "order kept across pages");
    // Tampering is refused.
    let token = cat.issue_token(&state);
    let mut forged = token.clone().into_bytes();
    forged[5] ^= 1;
    assert!(cat.open_token(&se, &String::from_utf8_lossy(&forged), 0, 60).is_err());
    let alice_cat = cat.clone();
    cat.user_create(&mut se, "alice", "a").await.unwrap();
    let alice = Session::new(alice_cat.authenticate("alice", Some("a")).await.unwrap());
    assert_eq!(code(cat.open_token(&alice, &token, 0, 60)), 4);
    assert_eq!(code(cat.open_token(&se, &token, 1000, 60)), 1);
}

/// Every mode of r/w bits for owner, group and other (64), each with three ACL variants, read
/// and written by an owner, a member of the entry's group, a stranger, a user named in ACLs
/// and a member of a group named in ACLs: which entries each of them can see (getattr of a
/// pattern) and change (setattr of a pattern) must be exactly what `Guard::rights` says.
async fn entry_permission_matrix(backend: Backend) {
    use ardacat_core::perm::{AclEntry, Guard, Mode, READ, WRITE};
    let db = TestDb::new(backend).await;
    let cat = catalogue(&db).await;
    let mut se = root(&cat).await;
    let se = &mut se;
    cat.begin(se).await.unwrap();
    for u in ["own", "mem", "oth", "au", "ag"] {
        cat.user_create(se, u, "pw").await.unwrap();
    }
    for (g, members) in [("g", &["own", "mem"][..]), ("h", &["ag"][..])] {
        cat.grp_create(se, g).await.unwrap();
        for m in members {
            cat.grp_adduser(se, g, m).await.unwrap();
        }
    }
    cat.createdir(se, "/m", true).await.unwrap();
    cat.chmod(se, "/m", "rwxrwxrwx").await.unwrap();
    cat.addattr(se, "/m", "x", "int", false).await.unwrap();
    let bits = ["---", "r--", "-w-", "rw-"];
    let acl_variants: [Vec<AclEntry>; 3] = [
        vec![],
        vec![
            AclEntry { principal: "au".into(), is_group: false, rights: READ },
            AclEntry { principal: "h".into(), is_group: true, rights: WRITE },
        ],
        vec![
            AclEntry { principal: "au".into(), is_group: false, rights: WRITE },
            AclEntry { principal: "h".into(), is_group: true, rights: READ | WRITE },
        ],
    ];
    let mut facts = Vec::new();
    for i in 0..64 {
        let mode = format!("{}{}{}", bits[i / 16], bits[i / 4 % 4], bits[i % 4]);
        for (v, acl) in acl_variants.iter().enumerate() {
            facts.push((format!("e{i:02}_{v}"), Mode::parse(&mode).unwrap(), acl.clone()));
        }
    }
    let rows: Vec<NamedValues> = facts.iter().map(|(n, _, _)| row(n, &["0"])).collect();
    cat.insert(se, "/m", &s(&["x"]), rows).await.unwrap();
    cat.chown(se, "/m/*", "own:g").await.unwrap();
    for (name, mode, acl) in &facts {
        let path = format!("/m/{name}");
        cat.chmod(se, &path, &mode.to_string()).await.unwrap();
        for a in acl {
            cat.acl_add(se, &path, &a.principal, &Mode::rights_string(a.rights)).await.unwrap();
        }
    }
    cat.commit(se).await.unwrap();

    for user in ["own", "mem", "oth", "au", "ag"] {
        let who = cat.principal(user).await.unwrap();
        let expect = |need: u16| -> Vec<String> {
            facts
                .iter()
                .filter(|(_, mode, acl)| {
                    Guard { owner: "own", group: "g", mode: *mode, acl }.rights(&who) & need == need
                })
                .map(|(n, _, _)| n.clone())
                .collect()
        };
        let mut us = Session::new(who.clone());
        let mut rows: Rows = Vec::new();
        cat.getattr(&mut us, "/m/*", &Names::default(), &mut rows).await.unwrap();
        let readable: Vec<String> = rows.into_iter().map(|r| r[0].clone().unwrap()).collect();
        assert_eq!(readable, expect(READ), "{backend:?}: entries {user} may read");
        // The same through selectattr.
        let selected: Vec<String> = select(&cat, &mut us, &["/m:FILE"], "order by /m:FILE")
            .await
            .into_iter()
            .map(|r| r[0].clone().unwrap())
            .collect();
        assert_eq!(selected, readable, "{backend:?}: {user} via selectattr");

        cat.setattr(se, "/m/*", &pairs(&[("x", "0")])).await.unwrap();
        match cat.setattr(&mut us, "/m/*", &pairs(&[("x", "1")])).await {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), 1, "{e}"),
        }
        let mut rows: Rows = Vec::new();
        cat.getattr(se, "/m/*", &names(&["x"]), &mut rows).await.unwrap();
        let written: Vec<String> =
            rows.into_iter().filter(|r| r[1].as_deref() == Some("1")).map(|r| r[0].clone().unwrap()).collect();
        assert_eq!(written, expect(WRITE), "{backend:?}: entries {user} may write");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_match_across_dialects() {
    let sqlite: Vec<(i64, &str)> = ardacat_store::exec::migrate::SQLITE.iter().map(|m| (m.version, m.name)).collect();
    let pg: Vec<(i64, &str)> = ardacat_store::exec::migrate::POSTGRES.iter().map(|m| (m.version, m.name)).collect();
    assert_eq!(sqlite, pg);
    assert!(sqlite.len() >= 2);
}

/// Entry tables (`e<id>`) in the database, counted through the database's own catalogue.
async fn entry_tables(db: &TestDb) -> (i64, i64) {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    let mut conn = store.acquire().await.expect("connection");
    let (tables, indexes) = match db.backend {
        Backend::Sqlite => (
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name GLOB 'e[0-9]*'",
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name GLOB 'e[0-9]*_a[0-9]*'",
        ),
        Backend::Postgres => (
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename ~ '^e[0-9]+$'",
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND indexname ~ '^e[0-9]+_a[0-9]+$'",
        ),
    };
    let count = |rows: Vec<Vec<Value>>| match rows[0][0] {
        Value::Int(n) => n,
        ref v => panic!("count: {v:?}"),
    };
    let t = count(conn.query(tables, &[], &[ValueType::Int]).await.unwrap());
    let i = count(conn.query(indexes, &[], &[ValueType::Int]).await.unwrap());
    (t, i)
}

/// A collection's entry table appears with its first entry: until then every read answers
/// empty, schema changes touch only rows, and the table that finally appears has exactly the
/// attributes and indexes the collection has by then — also when first entries and schema
/// changes race on separate connections.
async fn lazy_entry_tables(backend: Backend) {
    let db = TestDb::new(backend).await;
    let cat = catalogue(&db).await;
    let mut se = root(&cat).await;
    let se = &mut se;
    let (base_tables, base_indexes) = entry_tables(&db).await;

    cat.createdir(se, "/lazy", true).await.unwrap();
    cat.addattr(se, "/lazy", "n", "int", true).await.unwrap();
    cat.addattr(se, "/lazy", "gone", "text", true).await.unwrap();
    cat.addattr(se, "/lazy", "s", "varchar(8)", false).await.unwrap();
    cat.removeattr(se, "/lazy", "gone").await.unwrap();
    cat.createdir(se, "/lazy/child", false).await.unwrap();
    cat.createdir(se, "/full", true).await.unwrap();
    cat.addattr(se, "/full", "n", "int", false).await.unwrap();
    cat.addentry(se, "/full/f1", &values(&[("n", "1")])).await.unwrap();
    assert_eq!(entry_tables(&db).await, (base_tables + 1, base_indexes), "only /full has a table");

    // Reads and by-query writes on a collection that never had an entry.
    let mut rows: Rows = Vec::new();
    assert_eq!(cat.getattr(se, "/lazy", &names(&["n", "s"]), &mut rows).await.unwrap(), 0);
    assert_eq!(code(cat.getattr(se, "/lazy/none", &names(&["n"]), &mut rows).await), 1);
    assert_eq!(cat.find(se, "/lazy/*", "n > 0", &mut rows).await.unwrap(), 0);
    assert_eq!(cat.listentries(se, "/lazy", &mut rows).await.unwrap(), 0);
    assert!(select(&cat, se, &["/lazy:FILE", "/full:n"], "/lazy:n = /full:n").await.is_empty());
    assert!(select(&cat, se, &["/full:FILE"], "/full:n = /lazy:n").await.is_empty());
    assert_eq!(cat.updateattr(se, "/lazy/*", &pairs(&[("n", "n + 1")]), "").await.unwrap(), 0);
    assert_eq!(code(cat.rm(se, "/lazy/*", None).await), 1, "rm of a pattern that matches nothing");
    assert_eq!(code(cat.setattr(se, "/lazy/none", &pairs(&[("n", "1")])).await), 1);
    assert!(rows.is_empty());
    assert_eq!(entry_tables(&db).await, (base_tables + 1, base_indexes), "reads create nothing");

    // A failed first insert leaves no table behind.
    assert_eq!(code(cat.addentry(se, "/lazy/bad", &values(&[("n", "x")])).await), 18);
    assert_eq!(code(cat.addentry(se, "/lazy/bad", &values(&[("gone", "x")])).await), 10);
    assert_eq!(entry_tables(&db).await, (base_tables + 1, base_indexes));

    // The first entry creates the table with the attributes and indexes of the moment.
    cat.addentry(se, "/lazy/a", &values(&[("n", "5"), ("s", "five")])).await.unwrap();
    assert_eq!(entry_tables(&db).await, (base_tables + 2, base_indexes + 1), "one table, index on n only");
    cat.addattr(se, "/lazy", "later", "float", true).await.unwrap();
    assert_eq!(entry_tables(&db).await, (base_tables + 2, base_indexes + 2));
    cat.addentry(se, "/lazy/b", &values(&[("n", "6"), ("later", "2.5")])).await.unwrap();
    let got = select(&cat, se, &["/lazy:FILE", "/lazy:n", "/lazy:s", "/lazy:later"], "/lazy:n >= 5");
    assert_eq!(
        got.await,
        vec![
            vec![Some("a".into()), Some("5".into()), Some("five".into()), None],
            vec![Some("b".into()), Some("6".into()), None, Some("2.5".into())],
        ]
    );
    assert_eq!(code(cat.rmdir(se, "/lazy").await), 11);
    cat.rmdir(se, "/lazy/child").await.unwrap();
    assert_eq!(cat.rm(se, "/lazy/*", None).await.unwrap(), 2);
    cat.rmdir(se, "/lazy").await.unwrap();
    assert_eq!(entry_tables(&db).await, (base_tables + 1, base_indexes));

    // First entries and schema changes racing on separate connections.
    cat.createdir(se, "/race", true).await.unwrap();
    cat.addattr(se, "/race", "n", "int", false).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..8 {
        let cat = cat.clone();
        tasks.push(tokio::spawn(async move {
            let mut se = root(&cat).await;
            if w % 2 == 0 {
                cat.addattr(&mut se, "/race", &format!("x{w}"), "int", w == 0).await
            } else {
                let names: Vec<String> = (0..20).map(|i| format!("/race/w{w}_{i}")).collect();
                cat.addentries(&mut se, &names).await.map(|_| ())
            }
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    for w in (0..8).step_by(2) {
        let a = format!("x{w}");
        assert_eq!(cat.setattr(se, "/race/*", &pairs(&[(a.as_str(), "7")])).await.unwrap(), 80, "{a}");
    }
    let got = select(&cat, se, &["/race:FILE"], "/race:x0 = 7 and /race:x6 = 7").await;
    assert_eq!(got.len(), 80);
}

/// Composite indexes (`e<id>_x<id>`) in the database catalogue and index definitions in
/// `entry_indexes` / `entry_index_columns`.
async fn composite_counts(db: &TestDb) -> (i64, i64, i64) {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    let mut conn = store.acquire().await.expect("connection");
    let sql_indexes = match db.backend {
        Backend::Sqlite => "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name GLOB 'e[0-9]*_x[0-9]*'",
        Backend::Postgres => {
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND indexname ~ '^e[0-9]+_x[0-9]+$'"
        }
    };
    let mut out = [0; 3];
    for (i, sql) in [sql_indexes, "SELECT count(*) FROM entry_indexes", "SELECT count(*) FROM entry_index_columns"]
        .iter()
        .enumerate()
    {
        out[i] = match conn.query(sql, &[], &[ValueType::Int]).await.unwrap()[0][0] {
            Value::Int(n) => n,
            ref v => panic!("count: {v:?}"),
        };
    }
    (out[0], out[1], out[2])
}

/// The database's query plan for `sql` (PostgreSQL with sequential scans discouraged, so any
/// usable index shows), as one text.
async fn query_plan(db: &TestDb, sql: &str) -> String {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    let mut conn = store.acquire().await.expect("connection");
    let rows = match db.backend {
        Backend::Sqlite => conn
            .query(
                &format!("EXPLAIN QUERY PLAN {sql}"),
                &[],
                &[ValueType::Int, ValueType::Int, ValueType::Int, ValueType::Text],
            )
            .await
            .unwrap()
            .into_iter()
            .map(|mut r| r.remove(3))
            .collect::<Vec<_>>(),
        Backend::Postgres => {
            conn.execute_batch("SET enable_seqscan = off").await.unwrap();
            conn.query(&format!("EXPLAIN {sql}"), &[], &[ValueType::Text])
                .await
                .unwrap()
                .into_iter()
                .map(|mut r| r.remove(0))
                .collect()
        }
    };
    rows.iter().map(|v| v.to_wire().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// Integer id of a system-table row, read straight from the database.
async fn db_id(db: &TestDb, sql: &str) -> i64 {
    let store = Db::open(&db.url, DbOptions::default()).await.expect("open database");
    let mut conn = store.acquire().await.expect("connection");
    match conn.query(sql, &[], &[ValueType::Int]).await.unwrap()[0][0] {
        Value::Int(n) => n,
        ref v => panic!("id: {v:?}"),
    }
}

fn index_rows(list: Vec<ardacat_core::service::IndexInfo>) -> Vec<(String, Vec<String>)> {
    list.into_iter().map(|ix| (ix.name, ix.columns)).collect()
}

/// `index_create` / `index_remove` / `index_list`: definitions, error codes, the SQL index
/// built lazily with the entry table or at once, `removeattr` refused for an indexed attribute,
/// cleanup by `rmdir`, and identical query answers with and without the index.
async fn composite_indexes(backend: Backend) {
    let db = TestDb::new(backend).await;
    let cat = catalogue(&db).await;
    let mut se = root(&cat).await;
    let se = &mut se;
    assert_eq!(composite_counts(&db).await, (0, 0, 0));

    cat.createdir(se, "/ci", true).await.unwrap();
    for (n, t) in [("i0", "int"), ("f0", "float"), ("s0", "varchar(32)"), ("x", "text")] {
        cat.addattr(se, "/ci", n, t, false).await.unwrap();
    }
    // No entry table yet: only the definition is stored.
    cat.index_create(se, "/ci", "by_s_i", &s(&["s0", "I0"])).await.unwrap();
    assert_eq!(composite_counts(&db).await, (0, 1, 2));
    assert_eq!(index_rows(cat.index_list(se, "/ci").await.unwrap()), vec![("by_s_i".into(), s(&["s0", "i0"]))]);

    // Errors and their codes; none of them changes anything.
    assert_eq!(code(cat.index_create(se, "/missing", "ix", &s(&["i0"])).await), 1);
    assert_eq!(code(cat.index_create(se, "/ci", "ix", &s(&["nosuch"])).await), 10);
    assert_eq!(code(cat.index_create(se, "/ci", "ix", &s(&["i0", "nosuch"])).await), 10);
    assert_eq!(code(cat.index_create(se, "/ci", "BY_S_I", &s(&["i0"])).await), 15, "names are case-insensitive");
    assert_eq!(code(cat.index_create(se, "/ci", "1x", &s(&["i0"])).await), 3);
    assert_eq!(code(cat.index_create(se, "/ci", "a-b", &s(&["i0"])).await), 3);
    assert_eq!(code(cat.index_create(se, "/ci", "ix", &[]).await), 3);
    assert_eq!(code(cat.index_create(se, "/ci", "ix", &s(&["i0", "I0"])).await), 3);
    assert_eq!(code(cat.index_create(se, "/ci", "ix", &s(&["OWNER"])).await), 3);
    assert_eq!(code(cat.index_remove(se, "/ci", "nosuch").await), 1);
    assert_eq!(code(cat.index_remove(se, "/missing", "by_s_i").await), 1);
    assert_eq!(code(cat.index_list(se, "/missing").await), 1);
    cat.user_create(se, "u", "pw").await.unwrap();
    let mut user = Session::new(cat.authenticate("u", Some("pw")).await.unwrap());
    assert_eq!(code(cat.index_create(&mut user, "/ci", "ix", &s(&["i0"])).await), 4, "needs write");
    assert_eq!(code(cat.index_remove(&mut user, "/ci", "by_s_i").await), 4);
    assert_eq!(cat.index_list(&mut user, "/ci").await.unwrap().len(), 1, "read suffices to list");
    cat.chmod(se, "/ci", "rwx------").await.unwrap();
    assert_eq!(code(cat.index_list(&mut user, "/ci").await), 4);
    cat.chmod(se, "/ci", "rwxr-xr-x").await.unwrap();
    assert_eq!(composite_counts(&db).await, (0, 1, 2));

    // removeattr of an attribute an index uses is refused (3) and changes nothing.
    let e = cat.removeattr(se, "/ci", "s0").await.unwrap_err();
    assert_eq!(e.code(), 3);
    assert!(e.to_string().contains("by_s_i"), "{e}");
    cat.removeattr(se, "/ci", "x").await.unwrap();
    assert_eq!(cat.listattr(se, "/ci").await.unwrap().len(), 3);

    // The first entry creates the table and, with it, the composite index.
    let names = s(&["i0", "f0", "s0"]);
    let rows: Vec<NamedValues> = (0..400u64)
        .map(|i| {
            let r = i.wrapping_mul(2_654_435_761) % 1_000_003;
            let (a, b, c) = ((r % 1000).to_string(), format!("{}", (r % 100) as f64 / 4.0), format!("v{}", r % 7));
            row(&format!("e{i:04}"), &[&a, &b, &c])
        })
        .collect();
    cat.insert(se, "/ci", &names, rows).await.unwrap();
    assert_eq!(composite_counts(&db).await, (1, 1, 2), "built with the entry table");

    // Answers with and without the index are the same.
    let queries = [
        "/ci:i0 between 100 and 600 and /ci:f0 < 20 and /ci:s0 = \"v3\"",
        "/ci:s0 = \"v1\" and /ci:i0 > 500 order by /ci:i0 desc",
        "/ci:s0 >= \"v5\" order by /ci:s0, /ci:i0",
        "/ci:FILE like \"e01%\" and /ci:s0 = \"v2\"",
    ];
    let cols = ["/ci:FILE", "/ci:i0", "/ci:s0"];
    let mut with = Vec::new();
    for q in queries {
        with.push(select(&cat, se, &cols, q).await);
    }
    assert!(with.iter().all(|r| !r.is_empty()), "every query matches something: {with:?}");
    cat.index_remove(se, "/ci", "By_S_I").await.unwrap();
    assert_eq!(composite_counts(&db).await, (0, 0, 0));
    for (q, want) in queries.iter().zip(&with) {
        assert_eq!(&select(&cat, se, &cols, q).await, want, "{q}");
    }

    // With the table in place, index_create builds the index at once; FILE may be a column.
    cat.index_create(se, "/ci", "by_s_i", &s(&["s0", "i0"])).await.unwrap();
    cat.index_create(se, "/ci", "by_name", &s(&["FILE", "f0"])).await.unwrap();
    assert_eq!(composite_counts(&db).await, (2, 2, 4));
    assert_eq!(
        index_rows(cat.index_list(se, "/ci").await.unwrap()),
        vec![("by_name".into(), s(&["FILE", "f0"])), ("by_s_i".into(), s(&["s0", "i0"]))]
    );
    for (q, want) in queries.iter().zip(&with) {
        assert_eq!(&select(&cat, se, &cols, q).await, want, "{q}");
    }
    // The database can use it for the 2-predicate shape (column order s0, i0).
    let coll = db_id(&db, "SELECT id FROM collections WHERE path = '/ci'").await;
    let attr = |n: &str| format!("SELECT id FROM attributes WHERE collection_id = {coll} AND name = '{n}'");
    let (s0, i0) = (db_id(&db, &attr("s0")).await, db_id(&db, &attr("i0")).await);
    let ix = db_id(&db, "SELECT id FROM entry_indexes WHERE name = 'by_s_i'").await;
    let plan =
        query_plan(&db, &format!("SELECT file FROM e{coll} WHERE a{s0} = 'v3' AND a{i0} BETWEEN 100 AND 600")).await;
    assert!(plan.contains(&format!("e{coll}_x{ix}")), "plan does not use the composite index:\n{plan}");

    // Inside a user transaction an aborted index_create leaves nothing behind.
    cat.begin(se).await.unwrap();
    cat.index_create(se, "/ci", "tmp", &s(&["i0", "f0", "s0"])).await.unwrap();
    cat.abort(se).await.unwrap();
    assert_eq!(composite_counts(&db).await, (2, 2, 4));

    // rmdir removes definitions and indexes; a new collection of the same name starts clean.
    cat.rm(se, "/ci/*", None).await.unwrap();
    cat.rmdir(se, "/ci").await.unwrap();
    assert_eq!(composite_counts(&db).await, (0, 0, 0));
    cat.createdir(se, "/ci", true).await.unwrap();
    assert!(cat.index_list(se, "/ci").await.unwrap().is_empty());
    cat.addattr(se, "/ci", "i0", "int", false).await.unwrap();
    cat.addentry(se, "/ci/a", &values(&[("i0", "1")])).await.unwrap();
    assert_eq!(composite_counts(&db).await, (0, 0, 0));
    cat.removeattr(se, "/ci", "i0").await.unwrap();

    // index_create and removeattr of the same attribute racing on separate connections: either
    // the index exists over a live attribute, or the attribute is gone and no index names it.
    cat.createdir(se, "/race", true).await.unwrap();
    for k in 0..6 {
        cat.addattr(se, "/race", &format!("a{k}"), "int", false).await.unwrap();
    }
    cat.addentry(se, "/race/e", &[]).await.unwrap();
    let mut tasks = Vec::new();
    for k in 0..12 {
        let cat = cat.clone();
        tasks.push(tokio::spawn(async move {
            let mut se = root(&cat).await;
            let attr = format!("a{}", k / 2);
            if k % 2 == 0 {
                cat.index_create(&mut se, "/race", &format!("ix{k}"), &[attr]).await.map_err(|e| e.code())
            } else {
                cat.removeattr(&mut se, "/race", &attr).await.map_err(|e| e.code())
            }
        }));
    }
    for (k, t) in tasks.into_iter().enumerate() {
        match t.await.unwrap() {
            Ok(()) | Err(10) if k % 2 == 0 => {}
            Ok(()) | Err(3) if k % 2 == 1 => {}
            other => panic!("task {k}: {other:?}"),
        }
    }
    let attrs: Vec<String> = cat.listattr(se, "/race").await.unwrap().into_iter().map(|a| a.name).collect();
    let indexes = index_rows(cat.index_list(se, "/race").await.unwrap());
    for (name, cols) in &indexes {
        assert!(attrs.contains(&cols[0]), "{name} names a removed attribute {cols:?}");
    }
    // Each index names its own attribute: equal counts mean every surviving attribute kept its index.
    assert_eq!(attrs.len(), indexes.len(), "an attribute stayed without its index or went with it: {attrs:?}");
    let (sql, defs, _) = composite_counts(&db).await;
    assert_eq!((sql, defs), (indexes.len() as i64, indexes.len() as i64));
}
