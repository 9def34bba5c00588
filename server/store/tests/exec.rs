//! Executor tests, run against SQLite (a temp file and memory) and a real PostgreSQL.
//!
//! PostgreSQL: `ARDACAT_TEST_PG` (default `postgres://postgres@127.0.0.1:5432/postgres`) must be
//! reachable with rights to create databases. Each test creates `ardacat_test_<unique>` and drops
//! it afterwards, also when the test fails. An unreachable server fails the tests; it never skips.

use ardacat_core::types::{Value, ValueType, parse_timestamp};
use ardacat_store::exec::migrate;
use ardacat_store::{Backend, Db, DbOptions, ROW_BATCH, StoreError};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One message of a stream: a batch of rows, or the error that ended it.
type RowResult = Result<Vec<Vec<Value>>, StoreError>;

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn admin_url() -> String {
    std::env::var("ARDACAT_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_string())
}

fn unique_name() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("ardacat_test_{}_{}_{}", std::process::id(), nanos, N.fetch_add(1, Ordering::Relaxed))
}

fn small_opts() -> DbOptions {
    DbOptions { acquire_timeout: Duration::from_secs(10), ..DbOptions::default() }
}

/// Run `f` against a fresh PostgreSQL database; drop the database afterwards, even on panic.
async fn on_pg<F, Fut>(opts: DbOptions, f: F)
where
    F: FnOnce(Db, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let admin_url = admin_url();
    let admin = Db::open(&admin_url, DbOptions { pool_size: 1, ..DbOptions::default() })
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL must be reachable at {admin_url} for these tests: {e}"));
    let name = unique_name();
    admin.acquire().await.unwrap().execute_batch(&format!("CREATE DATABASE {name}")).await.unwrap();
    let base = admin_url.rsplit_once('/').expect("database url with a path").0;
    let url = format!("{base}/{name}");
    let db = Db::open(&url, opts).await.expect("open the test database");
    let outcome = AssertUnwindSafe(f(db, url)).catch_unwind().await;
    admin
        .acquire()
        .await
        .unwrap()
        .execute_batch(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await
        .expect("drop the test database");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Run `f` against a fresh SQLite file in a temporary folder.
async fn on_sqlite_file<F, Fut>(opts: DbOptions, f: F)
where
    F: FnOnce(Db, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("catalogue.db").display());
    let db = Db::open(&url, opts).await.expect("open the SQLite file");
    f(db, url).await;
}

/// Run `f` against a private in-memory SQLite database.
async fn on_sqlite_memory<F, Fut>(opts: DbOptions, f: F)
where
    F: FnOnce(Db, String) -> Fut,
    Fut: Future<Output = ()>,
{
    let db = Db::open("sqlite::memory:", opts).await.expect("open sqlite::memory:");
    f(db, "sqlite::memory:".into()).await;
}

/// Test SQL is written with `$n`; SQLite wants `?n`.
fn sql(db: &Db, pg: &str) -> String {
    match db.backend() {
        Backend::Postgres => pg.to_string(),
        Backend::Sqlite => pg.replace('$', "?"),
    }
}

fn ts(s: &str) -> Value {
    Value::Timestamp(parse_timestamp(s).unwrap())
}

/// sqlx hands a connection back to the pool from a spawned task: give it a moment.
async fn assert_all_released(db: &Db) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while db.pool_stats().in_use != 0 {
        assert!(Instant::now() < deadline, "connections still in use: {:?}", db.pool_stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn count(db: &Db, table: &str) -> i64 {
    let mut c = db.acquire().await.unwrap();
    let rows = c.query(&format!("SELECT count(*) FROM {table}"), &[], &[ValueType::Int]).await.unwrap();
    match rows.as_slice() {
        [row] => match row.as_slice() {
            [Value::Int(n)] => *n,
            other => panic!("count: {other:?}"),
        },
        other => panic!("count: {other:?}"),
    }
}

const ALL_TYPES: [ValueType; 6] =
    [ValueType::Int, ValueType::Int, ValueType::Float, ValueType::Text, ValueType::Bool, ValueType::Timestamp];

fn create_rt(db: &Db) -> &'static str {
    match db.backend() {
        Backend::Postgres => {
            "CREATE TABLE rt (id BIGINT PRIMARY KEY, i BIGINT, f DOUBLE PRECISION, t TEXT COLLATE \"C\", b BOOLEAN, ts TIMESTAMP);
             CREATE TABLE parent (id BIGINT PRIMARY KEY, k TEXT UNIQUE);
             CREATE TABLE child (id BIGINT PRIMARY KEY, parent_id BIGINT REFERENCES parent(id));"
        }
        Backend::Sqlite => {
            "CREATE TABLE rt (id INTEGER PRIMARY KEY, i INTEGER, f REAL, t TEXT, b INTEGER, ts TEXT) STRICT;
             CREATE TABLE parent (id INTEGER PRIMARY KEY, k TEXT UNIQUE) STRICT;
             CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id)) STRICT;"
        }
    }
}

fn rt_rows() -> Vec<Vec<Value>> {
    vec![
        vec![
            Value::Int(1),
            Value::Int(i64::MAX),
            Value::Float(0.1),
            Value::Text("héllo 'quoted' \"x\" ☃ \\ %_".into()),
            Value::Bool(true),
            ts("2024-02-29 10:11:12.123456"),
        ],
        vec![
            Value::Int(2),
            Value::Int(i64::MIN),
            Value::Float(-1.5e300),
            Value::Text(String::new()),
            Value::Bool(false),
            ts("0001-01-01 00:00:00"),
        ],
        vec![
            Value::Int(3),
            Value::Int(0),
            Value::Float(3.0),
            Value::Text("Hello".into()),
            Value::Bool(true),
            ts("9999-12-31 23:59:59.999999"),
        ],
        vec![Value::Int(4), Value::Null, Value::Null, Value::Null, Value::Null, Value::Null],
        vec![
            Value::Int(5),
            Value::Int(-1),
            Value::Float(f64::MIN_POSITIVE),
            Value::Text("line\nbreak\ttab".into()),
            Value::Bool(false),
            ts("1970-01-01 00:00:00.000001"),
        ],
    ]
}

/// Everything a round trip yields; compared across backends by `round_trip_parity`.
async fn round_trip(db: Db) -> Vec<Vec<Vec<Value>>> {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let insert = sql(&db, "INSERT INTO rt (id, i, f, t, b, ts) VALUES ($1, $2, $3, $4, $5, $6)");
    for row in rt_rows() {
        assert_eq!(c.execute(&insert, &row).await.unwrap(), 1);
    }
    let mut answers = Vec::new();

    let all = c.query("SELECT id, i, f, t, b, ts FROM rt ORDER BY id", &[], &ALL_TYPES).await.unwrap();
    assert_eq!(all, rt_rows());
    answers.push(all);

    // Parameters in comparisons: timestamps order the same way on both backends (SQLite compares
    // the fixed-width sort key), NULL parameters bind, LIKE is case-sensitive on both.
    let ids = c
        .query(&sql(&db, "SELECT id FROM rt WHERE ts >= $1 ORDER BY id"), &[ts("1970-01-01")], &[ValueType::Int])
        .await
        .unwrap();
    assert_eq!(ids, vec![vec![Value::Int(1)], vec![Value::Int(3)], vec![Value::Int(5)]]);
    answers.push(ids);
    let like = c.query("SELECT id FROM rt WHERE t LIKE 'h%' ORDER BY id", &[], &[ValueType::Int]).await.unwrap();
    assert_eq!(like, vec![vec![Value::Int(1)]]);
    answers.push(like);
    let by_bool = c
        .query(&sql(&db, "SELECT id FROM rt WHERE b = $1 ORDER BY id"), &[Value::Bool(true)], &[ValueType::Int])
        .await
        .unwrap();
    assert_eq!(by_bool, vec![vec![Value::Int(1)], vec![Value::Int(3)]]);
    answers.push(by_bool);

    // Parameter echo, NULLs of every type included.
    let echo_sql = match db.backend() {
        Backend::Postgres => "SELECT $1::int8, $2::float8, $3::text, $4::bool, $5::timestamp",
        Backend::Sqlite => "SELECT ?1, ?2, ?3, ?4, ?5",
    };
    let echo_types = [ValueType::Int, ValueType::Float, ValueType::Text, ValueType::Bool, ValueType::Timestamp];
    for params in [
        vec![
            Value::Int(-42),
            Value::Float(2.5),
            Value::Text("x".into()),
            Value::Bool(true),
            ts("2001-02-03 04:05:06.7"),
        ],
        vec![Value::Null; 5],
    ] {
        let got = c.query(echo_sql, &params, &echo_types).await.unwrap();
        assert_eq!(got, vec![params]);
        answers.push(got);
    }

    // An integer where a float is expected is converted on both backends.
    let three = c.query("SELECT 3", &[], &[ValueType::Float]).await.unwrap();
    assert_eq!(three, vec![vec![Value::Float(3.0)]]);
    answers.push(three);
    answers
}

#[tokio::test]
async fn round_trip_sqlite_file() {
    on_sqlite_file(small_opts(), |db, _| async move {
        round_trip(db).await;
    })
    .await;
}

#[tokio::test]
async fn round_trip_sqlite_memory() {
    on_sqlite_memory(small_opts(), |db, _| async move {
        round_trip(db).await;
    })
    .await;
}

#[tokio::test]
async fn round_trip_postgres() {
    on_pg(small_opts(), |db, _| async move {
        round_trip(db).await;
    })
    .await;
}

#[tokio::test]
async fn round_trip_parity() {
    let mut sqlite = Vec::new();
    on_sqlite_memory(small_opts(), |db, _| async {
        sqlite = round_trip(db).await;
    })
    .await;
    let mut pg = Vec::new();
    on_pg(small_opts(), |db, _| async {
        pg = round_trip(db).await;
    })
    .await;
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, pg);
}

/// One SQL text executed with different value types (and NULL first) keeps giving right answers.
async fn rebinding(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    // NULL first into typed columns, then real values, through the same statement.
    let insert = sql(&db, "INSERT INTO rt (id, i, f, t, b, ts) VALUES ($1, $2, $3, $4, $5, $6)");
    let null_row = vec![Value::Int(4), Value::Null, Value::Null, Value::Null, Value::Null, Value::Null];
    c.execute(&insert, &null_row).await.unwrap();
    for row in rt_rows().into_iter().filter(|r| r[0] != Value::Int(4)) {
        c.execute(&insert, &row).await.unwrap();
    }
    let all = c.query("SELECT id, i, f, t, b, ts FROM rt ORDER BY id", &[], &ALL_TYPES).await.unwrap();
    assert_eq!(all, rt_rows());

    // An Int, then a Float, then NULL compared with a float column.
    let q = sql(&db, "SELECT id FROM rt WHERE f > $1 ORDER BY id");
    let ids = |v: &[i64]| v.iter().map(|i| vec![Value::Int(*i)]).collect::<Vec<_>>();
    assert_eq!(c.query(&q, &[Value::Int(1)], &[ValueType::Int]).await.unwrap(), ids(&[3]));
    assert_eq!(c.query(&q, &[Value::Float(0.05)], &[ValueType::Int]).await.unwrap(), ids(&[1, 3]));
    assert_eq!(c.query(&q, &[Value::Null], &[ValueType::Int]).await.unwrap(), ids(&[]));
    // NULL first where only the select list gives context: text.
    let echo = "SELECT $1 AS echo";
    let echo = sql(&db, echo);
    assert_eq!(c.query(&echo, &[Value::Null], &[ValueType::Text]).await.unwrap(), vec![vec![Value::Null]]);
    assert_eq!(
        c.query(&echo, &[Value::Text("x".into())], &[ValueType::Text]).await.unwrap(),
        vec![vec![Value::Text("x".into())]]
    );
    // A value that cannot be what the statement expects is an error, never garbage.
    if db.backend() == Backend::Postgres {
        let e = c.query(&q, &[Value::Text("abc".into())], &[ValueType::Int]).await.unwrap_err();
        assert!(matches!(e, StoreError::Database(_)), "{e:?}");
    }
}

#[tokio::test]
async fn rebinding_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| rebinding(db)).await;
}

#[tokio::test]
async fn rebinding_postgres() {
    on_pg(small_opts(), |db, _| rebinding(db)).await;
}

/// A point read decoded into old rows (`query_point_into`, what a `get` does with the rows of
/// the one before) reads exactly what a fresh one reads: every old value overwritten, whatever
/// its kind, shorter and longer rows, fewer and more rows, none; a decode error stays an error;
/// and a text value is read into the old text's buffer.
async fn point_reads_into_old_rows(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let insert = sql(&db, "INSERT INTO rt (id, i, f, t, b, ts) VALUES ($1, $2, $3, $4, $5, $6)");
    for row in rt_rows() {
        c.execute(&insert, &row).await.unwrap();
    }
    let by_id = sql(&db, "SELECT id, i, f, t, b, ts FROM rt WHERE id = $1");
    let by_ids = sql(&db, "SELECT id, i, f, t, b, ts FROM rt WHERE id >= $1 ORDER BY id");
    let two = sql(&db, "SELECT t, id FROM rt WHERE id = $1");
    let old = || {
        let long = "old text that a fresh read would never show ".repeat(4);
        vec![vec![Value::Text(long.clone()); 9], vec![Value::Int(77); 3], vec![Value::Text(long); 6]]
    };
    // (statement, parameter, types): each read into old rows of other kinds and shapes.
    let two_types = [ValueType::Text, ValueType::Int];
    let reads: Vec<(&str, i64, &[ValueType])> = vec![
        (&by_id, 1, &ALL_TYPES),
        (&by_id, 4, &ALL_TYPES),  // all NULL but the id
        (&by_id, 99, &ALL_TYPES), // no row
        (&by_ids, 2, &ALL_TYPES), // four rows: more than the old ones
        (&two, 5, &two_types),    // fewer columns than the old rows
    ];
    for (statement, id, types) in reads {
        let fresh = c.query_point(statement, &[Value::Int(id)], types).await.unwrap();
        let reused = c.query_point_into(statement, &[Value::Int(id)], types, old()).await.unwrap();
        assert_eq!(reused, fresh, "{statement} with {id}");
        // Into the rows it just gave (the way `get`s follow each other).
        let again = c.query_point_into(statement, &[Value::Int(id)], types, reused).await.unwrap();
        assert_eq!(again, fresh, "{statement} with {id}, into its own rows");
    }
    assert_eq!(c.query_point(&by_ids, &[Value::Int(2)], &ALL_TYPES).await.unwrap(), rt_rows()[1..].to_vec());
    // The point of it: a text read into an old text value is written into that value's buffer.
    let text_at = |rows: &[Vec<Value>]| match &rows[0][3] {
        Value::Text(t) => t.as_ptr(),
        other => panic!("not a text: {other:?}"),
    };
    let first = c.query_point(&by_id, &[Value::Int(1)], &ALL_TYPES).await.unwrap();
    let buffer = text_at(&first);
    let next = c.query_point_into(&by_id, &[Value::Int(3)], &ALL_TYPES, first).await.unwrap();
    assert_eq!(next, rt_rows()[2..3].to_vec());
    assert_eq!(text_at(&next), buffer, "the old text's buffer was not reused");
    let e = c.query_point_into(&by_id, &[Value::Int(1)], &[ValueType::Int; 6], old()).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { column: 2, .. }), "{e:?}");
}

#[tokio::test]
async fn point_reads_into_old_rows_sqlite() {
    on_sqlite_file(small_opts(), |db, _| point_reads_into_old_rows(db)).await;
}

#[tokio::test]
async fn point_reads_into_old_rows_postgres() {
    on_pg(small_opts(), |db, _| point_reads_into_old_rows(db)).await;
}

async fn decode_errors(db: Db) {
    let mut c = db.acquire().await.unwrap();
    let e = c.query("SELECT 1, 'abc'", &[], &[ValueType::Int, ValueType::Int]).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { column: 1, .. }), "{e:?}");
    let e = c.query("SELECT 1, 'abc'", &[], &[ValueType::Int]).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { .. }), "{e:?}");
    let e = c.query("SELECT 'not a date'", &[], &[ValueType::Timestamp]).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { column: 0, .. }), "{e:?}");
    let e = c.query("SELECT 1.5", &[], &[ValueType::Text]).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { column: 0, .. }), "{e:?}");
    // Wrong number of parameters is an error, not a panic.
    assert!(c.query(&sql(&db, "SELECT $1"), &[], &[ValueType::Int]).await.is_err());
    // The connection is still fine.
    assert_eq!(c.query("SELECT 7", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(7)]]);
}

#[tokio::test]
async fn decode_errors_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| decode_errors(db)).await;
}

#[tokio::test]
async fn decode_errors_postgres() {
    on_pg(small_opts(), |db, _| decode_errors(db)).await;
}

async fn migrate_twice(db: Db) {
    db.migrate().await.unwrap();
    db.migrate().await.unwrap();
    let list = migrate::migrations(db.backend());
    let mut c = db.acquire().await.unwrap();
    let rows = c
        .query(
            "SELECT version, name, checksum FROM schema_migrations ORDER BY version",
            &[],
            &[ValueType::Int, ValueType::Text, ValueType::Text],
        )
        .await
        .unwrap();
    let expected: Vec<Vec<Value>> = list
        .iter()
        .map(|m| vec![Value::Int(m.version), Value::Text(m.name.into()), Value::Text(m.checksum.into())])
        .collect();
    assert_eq!(rows, expected);
    // The schema is there: the root collection exists.
    let root = c.query("SELECT path, perms FROM collections WHERE id = 1", &[], &[ValueType::Text, ValueType::Int]);
    assert_eq!(root.await.unwrap(), vec![vec![Value::Text("/".into()), Value::Int(493)]]);

    // An edited migration is refused.
    c.execute(
        &sql(&db, "UPDATE schema_migrations SET checksum = $1 WHERE version = $2"),
        &[Value::Text("0".repeat(64)), Value::Int(list[0].version)],
    )
    .await
    .unwrap();
    let e = db.migrate().await.unwrap_err();
    assert!(matches!(e, StoreError::Migration(_)), "{e:?}");
    // A version this build does not know is refused too.
    c.execute(
        &sql(&db, "UPDATE schema_migrations SET checksum = $1 WHERE version = $2"),
        &[Value::Text(list[0].checksum.into()), Value::Int(list[0].version)],
    )
    .await
    .unwrap();
    c.execute(
        &sql(
            &db,
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99999, 'future', 'x', $1)",
        ),
        &[ts("2030-01-01")],
    )
    .await
    .unwrap();
    let e = db.migrate().await.unwrap_err();
    assert!(matches!(e, StoreError::Migration(_)), "{e:?}");
    c.execute("DELETE FROM schema_migrations WHERE version = 99999", &[]).await.unwrap();
    drop(c);
    db.migrate().await.unwrap();
    // Nothing is left in use (PostgreSQL: the advisory-lock connection went back to the pool).
    assert_all_released(&db).await;
}

#[tokio::test]
async fn migrate_twice_sqlite_file() {
    on_sqlite_file(small_opts(), |db, _| migrate_twice(db)).await;
}

#[tokio::test]
async fn migrate_twice_sqlite_memory() {
    on_sqlite_memory(small_opts(), |db, _| migrate_twice(db)).await;
}

#[tokio::test]
async fn migrate_twice_postgres() {
    on_pg(small_opts(), |db, _| migrate_twice(db)).await;
}

#[tokio::test]
async fn migrate_concurrently_postgres() {
    on_pg(small_opts(), |db, url| async move {
        // Several "processes" (separate pools) starting at once.
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                let db = Db::open(&url, small_opts()).await.unwrap();
                db.migrate().await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(count(&db, "schema_migrations").await, migrate::POSTGRES.len() as i64);
    })
    .await;
}

#[tokio::test]
async fn migrate_concurrently_sqlite_file() {
    on_sqlite_file(small_opts(), |db, url| async move {
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                let db = Db::open(&url, small_opts()).await.unwrap();
                db.migrate().await
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        assert_eq!(count(&db, "schema_migrations").await, migrate::SQLITE.len() as i64);
    })
    .await;
}

async fn constraint_errors(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let ins_parent = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
    c.execute(&ins_parent, &[Value::Int(1), Value::Text("a".into())]).await.unwrap();
    // Primary key and UNIQUE column.
    let e = c.execute(&ins_parent, &[Value::Int(1), Value::Text("b".into())]).await.unwrap_err();
    assert!(e.is_unique_violation(), "{e:?}");
    let e = c.execute(&ins_parent, &[Value::Int(2), Value::Text("a".into())]).await.unwrap_err();
    assert!(e.is_unique_violation(), "{e:?}");
    // Foreign key.
    let e = c
        .execute(&sql(&db, "INSERT INTO child (id, parent_id) VALUES ($1, $2)"), &[Value::Int(1), Value::Int(99)])
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::ForeignKeyViolation(_)), "{e:?}");
    // Undefined table and column: PostgreSQL's SQLSTATE says so; SQLite has only a message for
    // it, which is never matched, so there it is a plain database error.
    let undefined = |e: &StoreError| match db.backend() {
        Backend::Postgres => matches!(e, StoreError::UndefinedObject(_)),
        Backend::Sqlite => matches!(e, StoreError::Database(_)),
    };
    let e = c.query("SELECT x FROM no_such_table", &[], &[ValueType::Int]).await.unwrap_err();
    assert!(undefined(&e), "{e:?}");
    let e = c.query("SELECT no_such_column FROM parent", &[], &[ValueType::Int]).await.unwrap_err();
    assert!(undefined(&e), "{e:?}");
    // Syntax errors are plain database errors.
    let e = c.execute("SELEKT 1", &[]).await.unwrap_err();
    assert!(matches!(e, StoreError::Database(_)), "{e:?}");

    // A failed statement aborts the transaction on both backends.
    c.begin().await.unwrap();
    c.execute(&ins_parent, &[Value::Int(10), Value::Text("x".into())]).await.unwrap();
    let e = c.execute(&ins_parent, &[Value::Int(10), Value::Text("y".into())]).await.unwrap_err();
    assert!(e.is_unique_violation(), "{e:?}");
    let e = c.execute(&ins_parent, &[Value::Int(11), Value::Text("z".into())]).await.unwrap_err();
    assert!(matches!(e, StoreError::Database(_)), "{e:?}");
    assert!(c.commit().await.is_err());
    assert!(!c.in_transaction());
    assert_eq!(count(&db, "parent").await, 1);
    // And the connection works normally afterwards.
    c.execute(&ins_parent, &[Value::Int(12), Value::Text("w".into())]).await.unwrap();
    assert_eq!(count(&db, "parent").await, 2);
}

#[tokio::test]
async fn constraint_errors_sqlite() {
    on_sqlite_file(small_opts(), |db, _| constraint_errors(db)).await;
}

#[tokio::test]
async fn constraint_errors_postgres() {
    on_pg(small_opts(), |db, _| constraint_errors(db)).await;
}

async fn transactions(db: Db, url: String) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let ins = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");

    // Rollback leaves nothing.
    c.begin().await.unwrap();
    assert!(c.in_transaction());
    assert!(c.begin().await.is_err(), "no nesting");
    for i in 0..3 {
        c.execute(&ins, &[Value::Int(i), Value::Text(format!("k{i}"))]).await.unwrap();
    }
    c.rollback().await.unwrap();
    assert!(!c.in_transaction());
    assert_eq!(count(&db, "parent").await, 0);

    // Commit keeps.
    c.begin().await.unwrap();
    c.execute(&ins, &[Value::Int(100), Value::Text("kept".into())]).await.unwrap();
    c.commit().await.unwrap();
    assert_eq!(count(&db, "parent").await, 1);
    assert!(c.commit().await.is_err(), "commit without a transaction");
    c.rollback().await.unwrap(); // a no-op
    drop(c);

    // Dropping a connection with an open transaction rolls it back. The pool has one
    // connection, so the next user gets the very same one: its autocommit insert must not
    // end up in the abandoned transaction. Check through a second, independent pool.
    let one = Db::open(&url, DbOptions { pool_size: 1, ..small_opts() }).await.unwrap();
    {
        let mut c = one.acquire().await.unwrap();
        c.begin().await.unwrap();
        c.execute(&ins, &[Value::Int(200), Value::Text("dropped".into())]).await.unwrap();
    }
    let mut c = one.acquire().await.unwrap();
    assert!(!c.in_transaction());
    c.execute(&ins, &[Value::Int(201), Value::Text("autocommit".into())]).await.unwrap();
    let other = Db::open(&url, small_opts()).await.unwrap();
    let rows = other
        .acquire()
        .await
        .unwrap()
        .query("SELECT id FROM parent ORDER BY id", &[], &[ValueType::Int])
        .await
        .unwrap();
    assert_eq!(rows, vec![vec![Value::Int(100)], vec![Value::Int(201)]]);
    drop(c);
    assert_all_released(&one).await;
}

/// A failure after a savepoint is undone by rolling back to it; the transaction goes on.
async fn savepoints(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let ins = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
    assert!(c.savepoint().await.is_err(), "outside a transaction");
    c.begin().await.unwrap();
    c.execute(&ins, &[Value::Int(1), Value::Text("a".into())]).await.unwrap();

    // A failing unit: undone, the transaction survives.
    c.savepoint().await.unwrap();
    c.execute(&ins, &[Value::Int(2), Value::Text("b".into())]).await.unwrap();
    let e = c.execute(&ins, &[Value::Int(1), Value::Text("dup".into())]).await.unwrap_err();
    assert!(e.is_unique_violation());
    assert!(c.release_savepoint().await.is_err(), "aborted until rolled back to the savepoint");
    c.rollback_to_savepoint().await.unwrap();
    c.release_savepoint().await.unwrap();

    // A succeeding unit, nested.
    c.savepoint().await.unwrap();
    c.execute(&ins, &[Value::Int(3), Value::Text("c".into())]).await.unwrap();
    c.savepoint().await.unwrap();
    c.execute(&ins, &[Value::Int(4), Value::Text("d".into())]).await.unwrap();
    c.rollback_to_savepoint().await.unwrap();
    c.release_savepoint().await.unwrap();
    c.release_savepoint().await.unwrap();
    assert!(c.release_savepoint().await.is_err(), "none left");
    c.commit().await.unwrap();
    let ids = c.query("SELECT id FROM parent ORDER BY id", &[], &[ValueType::Int]).await.unwrap();
    assert_eq!(ids, vec![vec![Value::Int(1)], vec![Value::Int(3)]]);
}

#[tokio::test]
async fn savepoints_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| savepoints(db)).await;
}

#[tokio::test]
async fn savepoints_postgres() {
    on_pg(small_opts(), |db, _| savepoints(db)).await;
}

#[tokio::test]
async fn transactions_sqlite() {
    on_sqlite_file(small_opts(), transactions).await;
}

#[tokio::test]
async fn transactions_postgres() {
    on_pg(small_opts(), transactions).await;
}

/// Two connections of one in-memory Db see the same database; two Dbs do not.
#[tokio::test]
async fn sqlite_memory_is_shared_within_a_db_only() {
    let db = Db::open("sqlite::memory:", small_opts()).await.unwrap();
    let mut a = db.acquire().await.unwrap();
    let mut b = db.acquire().await.unwrap();
    a.execute_batch("CREATE TABLE m (x INTEGER)").await.unwrap();
    a.execute("INSERT INTO m VALUES (?1)", &[Value::Int(5)]).await.unwrap();
    assert_eq!(b.query("SELECT x FROM m", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(5)]]);
    assert_eq!(db.pool_stats().in_use, 2);
    drop((a, b));
    assert_eq!(db.pool_stats(), ardacat_store::PoolStats { size: 4, idle: 4, in_use: 0 });
    let other = Db::open("sqlite::memory:", small_opts()).await.unwrap();
    let e = other.acquire().await.unwrap().query("SELECT x FROM m", &[], &[ValueType::Int]).await.unwrap_err();
    // "no such table" (SQLite gives it no code of its own).
    assert!(matches!(e, StoreError::Database(_)), "{e:?}");
}

#[tokio::test]
async fn sqlite_pool_timeout_and_pragmas() {
    let db = Db::open(
        "sqlite::memory:",
        DbOptions { pool_size: 1, acquire_timeout: Duration::from_millis(100), ..DbOptions::default() },
    )
    .await
    .unwrap();
    let mut c = db.acquire().await.unwrap();
    assert_eq!(db.acquire().await.unwrap_err(), StoreError::PoolTimeout);
    let fk = c.query("PRAGMA foreign_keys", &[], &[ValueType::Bool]).await.unwrap();
    assert_eq!(fk, vec![vec![Value::Bool(true)]]);
    let like = c.query("SELECT 'abc' LIKE 'ABC'", &[], &[ValueType::Bool]).await.unwrap();
    assert_eq!(like, vec![vec![Value::Bool(false)]]);
    let cache = c.query("PRAGMA cache_size", &[], &[ValueType::Int]).await.unwrap();
    let kib = i64::from(DbOptions::default().sqlite_cache_kib);
    assert_eq!(cache, vec![vec![Value::Int(-kib)]], "page cache of sqlite_cache_kib");
}

#[tokio::test]
async fn sqlite_file_is_wal_and_durable() {
    on_sqlite_file(small_opts(), |db, _| async move {
        let mut c = db.acquire().await.unwrap();
        let mode = c.query("PRAGMA journal_mode", &[], &[ValueType::Text]).await.unwrap();
        assert_eq!(mode, vec![vec![Value::Text("wal".into())]]);
        let sync = c.query("PRAGMA synchronous", &[], &[ValueType::Int]).await.unwrap();
        assert_eq!(sync, vec![vec![Value::Int(2)]]); // FULL
    })
    .await;
}

#[tokio::test]
async fn bad_urls() {
    assert!(matches!(Db::open("mysql://x", DbOptions::default()).await, Err(StoreError::Config(_))));
    assert!(Db::open("sqlite:/nonexistent-dir/x/y.db", DbOptions::default()).await.is_err());
}

fn series_sql(db: &Db) -> &'static str {
    match db.backend() {
        // A set-returning function in the select list streams (one in FROM is materialized).
        Backend::Postgres => "SELECT g, 'row' || g FROM (SELECT generate_series(1::int8, $1::int8) AS g) s",
        Backend::Sqlite => {
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?1) SELECT x, 'row' || x FROM c"
        }
    }
}

const SERIES_TYPES: [ValueType; 2] = [ValueType::Int, ValueType::Text];

async fn stream_slow_consumer(db: Db) {
    const N: i64 = 200_000;
    let (tx, mut rx) = mpsc::channel::<RowResult>(16);
    let producer = {
        let db = db.clone();
        tokio::spawn(async move {
            let mut c = db.acquire().await.unwrap();
            c.stream(series_sql(&db), &[Value::Int(N)], &SERIES_TYPES, tx).await
        })
    };
    // Nobody reads yet: the producer must be blocked on the full channel, not racing ahead.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!producer.is_finished(), "the stream did not wait for its consumer");
    let (mut n, mut sum, mut batches) = (0i64, 0i64, 0i64);
    while let Some(batch) = rx.recv().await {
        let batch = batch.unwrap();
        assert!((1..=ROW_BATCH).contains(&batch.len()), "a batch of {} rows", batch.len());
        batches += 1;
        for row in batch {
            n += 1;
            match row.as_slice() {
                [Value::Int(x), Value::Text(t)] => {
                    assert_eq!(*x, n);
                    assert_eq!(t, &format!("row{x}"));
                    sum += x;
                }
                other => panic!("{other:?}"),
            }
            if n % 20_000 == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await; // a slow consumer
            }
        }
    }
    assert_eq!(n, N);
    // Rows travel batched: a consumer slower than the database finds full batches waiting.
    assert!(batches < N / 8, "{batches} batches for {N} rows");
    assert_eq!(sum, N * (N + 1) / 2);
    assert_eq!(producer.await.unwrap().unwrap(), N as u64);
}

#[tokio::test]
async fn stream_slow_consumer_sqlite() {
    on_sqlite_file(small_opts(), |db, _| stream_slow_consumer(db)).await;
}

#[tokio::test]
async fn stream_slow_consumer_postgres() {
    on_pg(small_opts(), |db, _| stream_slow_consumer(db)).await;
}

async fn stream_early_drop(db: Db, in_tx: bool) {
    let mut c = db.acquire().await.unwrap();
    if in_tx {
        c.execute_batch(create_rt(&db)).await.unwrap();
        c.begin().await.unwrap();
        c.execute(&sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)"), &[Value::Int(1), Value::Text("t".into())])
            .await
            .unwrap();
    }
    // A result far too large to finish: the test only passes if the stream really stops.
    let (tx, mut rx) = mpsc::channel::<RowResult>(16);
    let consumer = tokio::spawn(async move {
        let mut i = 0;
        while i < 100 {
            for row in rx.recv().await.unwrap().unwrap() {
                i += 1;
                assert_eq!(row[0], Value::Int(i));
            }
        }
        // rx dropped here
    });
    let t0 = Instant::now();
    let sent = c.stream(series_sql(&db), &[Value::Int(2_000_000_000)], &SERIES_TYPES, tx).await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "stream took {:?}", t0.elapsed());
    // At most the channel's 16 batches and the two around the consumer's last read.
    let most = (100 + (16 + 2) * ROW_BATCH) as u64;
    assert!((100..=most).contains(&sent), "sent {sent}");
    consumer.await.unwrap();

    // The same Conn still works (PostgreSQL in a transaction: it drains the rest first).
    if in_tx {
        // Inside a transaction the session is kept; rolling back discards the unread rows.
        assert!(c.in_transaction());
        c.rollback().await.unwrap();
        assert_eq!(count(&db, "parent").await, 0);
    }
    let one = c.query("SELECT 1", &[], &[ValueType::Int]).await.unwrap();
    assert_eq!(one, vec![vec![Value::Int(1)]]);
    drop(c);
    // And so does the Db.
    let mut d = db.acquire().await.unwrap();
    assert_eq!(d.query("SELECT 2", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(2)]]);
    drop(d);
    assert_all_released(&db).await;
}

#[tokio::test]
async fn stream_early_drop_sqlite() {
    on_sqlite_file(small_opts(), |db, _| stream_early_drop(db, false)).await;
}

#[tokio::test]
async fn stream_early_drop_in_transaction_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| stream_early_drop(db, true)).await;
}

#[tokio::test]
async fn stream_early_drop_postgres() {
    on_pg(small_opts(), |db, _| stream_early_drop(db, false)).await;
}

#[tokio::test]
async fn stream_early_drop_in_transaction_postgres() {
    on_pg(small_opts(), |db, _| stream_early_drop(db, true)).await;
}

/// A stream abandoned inside a transaction keeps the transaction: the next statement drains the
/// unread rows and the commit succeeds.
async fn stream_abandoned_then_commit(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    c.begin().await.unwrap();
    c.execute(&sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)"), &[Value::Int(1), Value::Text("t".into())])
        .await
        .unwrap();
    let (tx, mut rx) = mpsc::channel::<RowResult>(4);
    let consumer = tokio::spawn(async move {
        rx.recv().await.unwrap().unwrap();
    });
    let sent = c.stream(series_sql(&db), &[Value::Int(50_000)], &SERIES_TYPES, tx).await.unwrap();
    assert!(sent < 50_000);
    consumer.await.unwrap();
    c.execute(&sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)"), &[Value::Int(2), Value::Text("u".into())])
        .await
        .unwrap();
    c.commit().await.unwrap();
    assert_eq!(count(&db, "parent").await, 2);
}

#[tokio::test]
async fn stream_abandoned_then_commit_sqlite() {
    on_sqlite_file(small_opts(), |db, _| stream_abandoned_then_commit(db)).await;
}

#[tokio::test]
async fn stream_abandoned_then_commit_postgres() {
    on_pg(small_opts(), |db, _| stream_abandoned_then_commit(db)).await;
}

/// Dropping the receiver stops a query that has not produced its first row yet.
async fn stream_cancel_before_first_row(db: Db) {
    let slow = match db.backend() {
        Backend::Postgres => "SELECT count(*) FROM (SELECT generate_series(1::int8, 20000000000::int8)) s",
        Backend::Sqlite => {
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000000000) SELECT count(*) FROM c"
        }
    };
    let mut c = db.acquire().await.unwrap();
    let (tx, rx) = mpsc::channel::<RowResult>(16);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(rx);
    });
    let t0 = Instant::now();
    let sent = c.stream(slow, &[], &[ValueType::Int], tx).await.unwrap();
    assert_eq!(sent, 0);
    assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());
    assert_eq!(c.query("SELECT 3", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(3)]]);

    if db.backend() == Backend::Postgres {
        // The server noticed the closed connection and stopped the query.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let rows = c
                .query(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%20000000000%' AND pid <> pg_backend_pid()",
                    &[],
                    &[ValueType::Int],
                )
                .await
                .unwrap();
            if rows == vec![vec![Value::Int(0)]] {
                break;
            }
            assert!(Instant::now() < deadline, "the abandoned query still runs on the server");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[tokio::test]
async fn stream_cancel_before_first_row_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| stream_cancel_before_first_row(db)).await;
}

#[tokio::test]
async fn stream_cancel_before_first_row_postgres() {
    on_pg(small_opts(), |db, _| stream_cancel_before_first_row(db)).await;
}

/// Every PostgreSQL column type a value type may be read from, through the per-statement
/// decoders; a column of a type that cannot hold the asked one reads its NULLs and fails on its
/// first value, in a query and mid-stream.
#[tokio::test]
async fn decode_column_types_postgres() {
    on_pg(small_opts(), |db, _| async move {
        let mut c = db.acquire().await.unwrap();
        use ValueType::*;
        let q = "SELECT 7::int4, 8::int2, 1.5::float4, 9::int8, 10::int4, 11::int2, 'v'::varchar, 'c'::char, \
                 'n'::name, true, '2026-12-03'::date, '2026-12-03 10:00:00+02'::timestamptz, NULL::bool";
        let types = [Int, Int, Float, Float, Float, Float, Text, Text, Text, Bool, Timestamp, Timestamp, Int];
        let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 3).unwrap();
        let row = vec![
            Value::Int(7),
            Value::Int(8),
            Value::Float(1.5),
            Value::Float(9.0),
            Value::Float(10.0),
            Value::Float(11.0),
            Value::Text("v".into()),
            Value::Text("c".into()),
            Value::Text("n".into()),
            Value::Bool(true),
            Value::Timestamp(day.and_hms_opt(0, 0, 0).unwrap()),
            Value::Timestamp(day.and_hms_opt(8, 0, 0).unwrap()),
            Value::Null,
        ];
        assert_eq!(c.query(q, &[], &types).await.unwrap(), vec![row]);

        // Column 1 is a bool asked for as an int: NULL in rows 1..=99, true in row 100.
        let mixed =
            "SELECT x, CASE WHEN x < 100 THEN NULL ELSE true END FROM generate_series(1::int8, 300::int8) AS s(x)";
        let e = c.query(mixed, &[], &[Int, Int]).await.unwrap_err();
        assert!(matches!(e, StoreError::Decode { column: 1, .. }), "{e:?}");
        let (tx, rx) = mpsc::channel::<RowResult>(16);
        let consumer = collect_all(rx);
        let e = c.stream(mixed, &[], &[Int, Int], tx).await.unwrap_err();
        assert!(matches!(e, StoreError::Decode { column: 1, .. }), "{e:?}");
        let items = consumer.await.unwrap();
        let (last, batches) = items.split_last().unwrap();
        assert_eq!(last, &Err(e));
        let rows: Vec<Vec<Value>> = batches.iter().flat_map(|b| b.clone().unwrap()).collect();
        assert_eq!(rows, (1..100).map(|x| vec![Value::Int(x), Value::Null]).collect::<Vec<_>>());
        assert_eq!(c.query("SELECT 4", &[], &[Int]).await.unwrap(), vec![vec![Value::Int(4)]]);
    })
    .await;
}

/// A statement run again on one connection answers as the first time: read as other value types,
/// after the driver prepared it anew (a statement cache of one, two statements taking turns),
/// after more statements than a connection remembers, and failing on a value its column cannot
/// hold after a run whose rows held none (PostgreSQL keeps each statement's row decoders:
/// `exec::postgres::Statements`).
async fn statements_run_again(db: Db) {
    let mut c = db.acquire().await.unwrap();
    let nine = sql(&db, "SELECT $1 + 0");
    for (types, want) in [
        ([ValueType::Int], Value::Int(9)),
        ([ValueType::Float], Value::Float(9.0)),
        ([ValueType::Int], Value::Int(9)),
        ([ValueType::Text], Value::Null),
    ] {
        let got = c.query(&nine, &[Value::Int(9)], &types).await;
        if want == Value::Null {
            // An int column read as text is a decode error on both backends.
            assert!(matches!(got, Err(StoreError::Decode { column: 0, .. })), "{got:?}");
        } else {
            assert_eq!(got.unwrap(), vec![vec![want]]);
        }
    }
    let a = sql(&db, "SELECT $1 * 2");
    let b = sql(&db, "SELECT $1 * 3");
    for n in 0..6 {
        assert_eq!(c.query(&a, &[Value::Int(n)], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(2 * n)]]);
        assert_eq!(c.query(&b, &[Value::Int(n)], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(3 * n)]]);
    }
    for round in 0..2 {
        for k in 0..40i64 {
            let q = sql(&db, &format!("SELECT $1 + {k}"));
            let got = c.query(&q, &[Value::Int(round)], &[ValueType::Int]).await.unwrap();
            assert_eq!(got, vec![vec![Value::Int(round + k)]]);
        }
    }
    if db.backend() == Backend::Postgres {
        // Column 1 is a bool asked for as an int: only NULLs the first time, a value the second.
        let q = "SELECT x, CASE WHEN x < $1 THEN NULL ELSE true END FROM generate_series(1::int8, 3::int8) AS s(x)";
        let nulls = c.query(q, &[Value::Int(10)], &[ValueType::Int, ValueType::Int]).await.unwrap();
        assert_eq!(nulls, (1..=3).map(|x| vec![Value::Int(x), Value::Null]).collect::<Vec<_>>());
        let e = c.query(q, &[Value::Int(2)], &[ValueType::Int, ValueType::Int]).await.unwrap_err();
        assert!(matches!(e, StoreError::Decode { column: 1, .. }), "{e:?}");
    }
}

#[tokio::test]
async fn statements_run_again_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| statements_run_again(db)).await;
    on_sqlite_file(DbOptions { statement_cache: 1, ..small_opts() }, |db, _| statements_run_again(db)).await;
}

#[tokio::test]
async fn statements_run_again_postgres() {
    on_pg(small_opts(), |db, _| statements_run_again(db)).await;
    on_pg(DbOptions { statement_cache: 1, ..small_opts() }, |db, _| statements_run_again(db)).await;
}

/// Every message a stream sends, in order, once it ends.
fn collect_all(mut rx: mpsc::Receiver<RowResult>) -> tokio::task::JoinHandle<Vec<RowResult>> {
    tokio::spawn(async move {
        let mut items = Vec::new();
        while let Some(r) = rx.recv().await {
            items.push(r);
        }
        items
    })
}

/// A decode error mid-stream reaches both the caller and the consumer.
async fn stream_decode_error(db: Db) {
    let mut c = db.acquire().await.unwrap();
    let (tx, rx) = mpsc::channel::<RowResult>(16);
    let consumer = collect_all(rx);
    let e = c.stream(series_sql(&db), &[Value::Int(10)], &[ValueType::Int, ValueType::Int], tx).await.unwrap_err();
    assert!(matches!(e, StoreError::Decode { column: 1, .. }), "{e:?}");
    let items = consumer.await.unwrap();
    assert_eq!(items, vec![Err(e)]);
    assert_eq!(c.query("SELECT 4", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(4)]]);
}

/// Rows decoded into spent batches (what a consumer hands back, `spent_rows`) are exactly the
/// rows read: nothing of a spent row shows through, whatever its values' types or its width.
async fn stream_into_spent_rows(db: Db) {
    use ardacat_core::store::spent_rows;
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let insert = sql(&db, "INSERT INTO rt (id, i, f, t, b, ts) VALUES ($1, $2, $3, $4, $5, $6)");
    for row in rt_rows() {
        c.execute(&insert, &row).await.unwrap();
    }
    let spent = || {
        vec![
            vec![Value::Text("a spent text value".into()); 9],
            vec![Value::Int(9)],
            vec![Value::Text("x".repeat(spent_rows::MAX_KEPT_TEXT + 1)); 6],
            Vec::new(),
            vec![Value::Float(1.0), Value::Bool(true), Value::Null, Value::Int(1), Value::Text("t".into())],
        ]
    };
    for round in 0..3 {
        for _ in 0..spent_rows::MAX_BATCHES {
            spent_rows::give(spent());
        }
        let (tx, rx) = mpsc::channel::<RowResult>(16);
        let consumer = collect_all(rx);
        c.stream("SELECT id, i, f, t, b, ts FROM rt ORDER BY id", &[], &ALL_TYPES, tx).await.unwrap();
        let batches: Vec<Vec<Vec<Value>>> = consumer.await.unwrap().into_iter().map(Result::unwrap).collect();
        assert_eq!(batches.concat(), rt_rows(), "round {round}");
        // The stream's own batches go back too: the next round reads into them.
        for b in batches {
            spent_rows::give(b);
        }
    }
}

#[tokio::test]
async fn stream_into_spent_rows_sqlite() {
    on_sqlite_file(DbOptions::default(), |db, _| stream_into_spent_rows(db)).await;
}

#[tokio::test]
async fn stream_into_spent_rows_postgres() {
    on_pg(DbOptions::default(), |db, _| stream_into_spent_rows(db)).await;
}

/// Rows read before an error mid-stream reach the consumer, in order, before the error (they
/// travel batched, but are not lost with the batch the error cut short).
async fn stream_rows_before_an_error_come_first(db: Db) {
    let mut c = db.acquire().await.unwrap();
    let (tx, rx) = mpsc::channel::<RowResult>(16);
    let consumer = collect_all(rx);
    // Row 100 fails: on SQLite it holds text where an integer is expected (a decode error on
    // our side); PostgreSQL divides by zero there (an error the server reports mid-result).
    let bad = match db.backend() {
        Backend::Sqlite => {
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) \
             SELECT CASE WHEN x < 100 THEN x ELSE 'x' || x END FROM c"
        }
        Backend::Postgres => {
            "SELECT CASE WHEN x < 100 THEN x ELSE x / (x - x) END FROM generate_series(1::int8, 500::int8) AS s(x)"
        }
    };
    let e = c.stream(bad, &[], &[ValueType::Int], tx).await.unwrap_err();
    if db.backend() == Backend::Sqlite {
        assert!(matches!(e, StoreError::Decode { column: 0, .. }), "{e:?}");
    }
    let items = consumer.await.unwrap();
    let (last, batches) = items.split_last().unwrap();
    assert_eq!(last, &Err(e));
    let rows: Vec<Vec<Value>> = batches.iter().flat_map(|b| b.clone().unwrap()).collect();
    assert_eq!(rows, (1..100).map(|x| vec![Value::Int(x)]).collect::<Vec<_>>());
}

#[tokio::test]
async fn stream_rows_before_an_error_come_first_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| stream_rows_before_an_error_come_first(db)).await;
}

#[tokio::test]
async fn stream_rows_before_an_error_come_first_postgres() {
    on_pg(small_opts(), |db, _| stream_rows_before_an_error_come_first(db)).await;
}

/// Rows read just before a long stretch without matches reach the consumer during it, not when
/// the query ends (the batch they wait in goes out from SQLite's progress handler).
#[tokio::test]
async fn stream_rows_before_a_long_scan_arrive_during_it_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| async move {
        let mut c = db.acquire().await.unwrap();
        let (tx, mut rx) = mpsc::channel::<RowResult>(16);
        // Two matches at once, then a scan of a billion rows that matches nothing.
        let sparse = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) \
                      SELECT x FROM c WHERE x <= 2";
        let consumer = tokio::spawn(async move {
            // Had the two rows waited for the end they would come after the whole scan
            // (minutes). Either way rx is dropped here, which cancels the stream and the scan.
            tokio::time::timeout(Duration::from_secs(20), rx.recv())
                .await
                .expect("the rows read before the scan waited for its end")
                .unwrap()
                .unwrap()
        });
        let sent = c.stream(sparse, &[], &[ValueType::Int], tx).await.unwrap();
        assert_eq!(consumer.await.unwrap(), vec![vec![Value::Int(1)], vec![Value::Int(2)]]);
        assert_eq!(sent, 2);
        assert_eq!(c.query("SELECT 5", &[], &[ValueType::Int]).await.unwrap(), vec![vec![Value::Int(5)]]);
    })
    .await;
}

#[tokio::test]
async fn stream_decode_error_sqlite() {
    on_sqlite_memory(small_opts(), |db, _| stream_decode_error(db)).await;
}

#[tokio::test]
async fn stream_decode_error_postgres() {
    on_pg(small_opts(), |db, _| stream_decode_error(db)).await;
}

async fn execute_many_10k(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let insert = sql(&db, "INSERT INTO rt (id, i, f, t, b, ts) VALUES ($1, $2, $3, $4, $5, $6)");
    let rows = |from: i64, n: i64| -> Vec<Vec<Value>> {
        (from..from + n)
            .map(|i| {
                vec![
                    Value::Int(i),
                    Value::Int(i * 2),
                    Value::Float(i as f64 / 4.0),
                    Value::Text(format!("file{i}")),
                    Value::Bool(i % 2 == 0),
                    if i % 3 == 0 { Value::Null } else { ts("2020-01-01 00:00:00.5") },
                ]
            })
            .collect()
    };
    let t0 = Instant::now();
    c.begin().await.unwrap();
    assert_eq!(c.execute_many(&insert, rows(0, 10_000)).await.unwrap(), 10_000);
    c.commit().await.unwrap();
    eprintln!("{:?}: execute_many of 10k rows in {:?}", db.backend(), t0.elapsed());
    assert_eq!(count(&db, "rt").await, 10_000);
    let sample = c
        .query(&sql(&db, "SELECT id, i, f, t, b, ts FROM rt WHERE id = $1"), &[Value::Int(4242)], &ALL_TYPES)
        .await
        .unwrap();
    assert_eq!(sample, rows(4242, 1));

    // Rolled back with the caller's transaction.
    c.begin().await.unwrap();
    assert_eq!(c.execute_many(&insert, rows(10_000, 500)).await.unwrap(), 500);
    c.rollback().await.unwrap();
    assert_eq!(count(&db, "rt").await, 10_000);

    // Without a transaction: all or nothing (row 1_000 collides with an existing id).
    let mut batch = rows(20_000, 999);
    batch.extend(rows(5, 1));
    let e = c.execute_many(&insert, batch).await.unwrap_err();
    assert!(e.is_unique_violation(), "{e:?}");
    assert!(!c.in_transaction());
    assert_eq!(count(&db, "rt").await, 10_000);
    assert_eq!(c.execute_many(&insert, rows(20_000, 10)).await.unwrap(), 10);
    assert_eq!(count(&db, "rt").await, 10_010);
}

#[tokio::test]
async fn execute_many_10k_sqlite() {
    on_sqlite_file(small_opts(), |db, _| execute_many_10k(db)).await;
}

#[tokio::test]
async fn execute_many_10k_postgres() {
    on_pg(small_opts(), |db, _| execute_many_10k(db)).await;
}

/// Writers on several connections at once: no deadlock, no Busy, every row arrives.
async fn concurrent_writers(db: Db) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    drop(c);
    let mut tasks = Vec::new();
    for w in 0..4i64 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let insert = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
            for i in 0..50i64 {
                let mut c = db.acquire().await.unwrap();
                let id = w * 1000 + i;
                if i % 2 == 0 {
                    c.begin().await.unwrap();
                    c.execute(&insert, &[Value::Int(id), Value::Text(format!("k{id}"))]).await.unwrap();
                    c.commit().await.unwrap();
                } else {
                    c.execute(&insert, &[Value::Int(id), Value::Text(format!("k{id}"))]).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(count(&db, "parent").await, 200);
}

#[tokio::test]
async fn concurrent_writers_sqlite_file() {
    on_sqlite_file(small_opts(), |db, _| concurrent_writers(db)).await;
}

#[tokio::test]
async fn concurrent_writers_sqlite_memory() {
    on_sqlite_memory(small_opts(), |db, _| concurrent_writers(db)).await;
}

#[tokio::test]
async fn concurrent_writers_postgres() {
    on_pg(small_opts(), |db, _| concurrent_writers(db)).await;
}

#[tokio::test]
async fn postgres_unreachable_is_an_error() {
    let e = Db::open(
        "postgres://postgres@127.0.0.1:1/postgres",
        DbOptions { acquire_timeout: Duration::from_secs(2), ..DbOptions::default() },
    )
    .await
    .unwrap_err();
    assert!(!matches!(e, StoreError::Config(_)), "{e:?}");
}

/// The executor is used from multi-threaded servers: everything, futures included, is `Send`.
#[allow(dead_code)]
fn api_is_send() {
    fn send<T: Send>(_: &T) {}
    fn sync<T: Send + Sync + Clone + 'static>() {}
    sync::<Db>();
    async fn uses(db: Db, mut c: ardacat_store::Conn, tx: mpsc::Sender<RowResult>) {
        send(&db.acquire());
        send(&db.migrate());
        send(&c.execute("", &[]));
        send(&c.query("", &[], &[]));
        send(&c.stream("", &[], &[], tx));
        send(&c.execute_batch(""));
        send(&c.execute_many("", vec![]));
        send(&c.begin());
        send(&c.commit());
        send(&c.rollback());
        send(&c.savepoint());
        send(&c.release_savepoint());
        send(&c.rollback_to_savepoint());
        send(&c);
    }
    let _ = uses;
}

/// `query_point` answers like `query`, runs writes (on SQLite: on the connection thread), and
/// never overtakes the previous owner's rollback: with one pooled connection, a point read right
/// after a connection was dropped mid-transaction must not see the abandoned row.
async fn point_reads(db: Db, url: String) {
    let mut c = db.acquire().await.unwrap();
    c.execute_batch(create_rt(&db)).await.unwrap();
    let ins = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
    let by_id = sql(&db, "SELECT id, k FROM parent WHERE id = $1");
    let types = [ValueType::Int, ValueType::Text];
    c.execute(&ins, &[Value::Int(1), Value::Text("one".into())]).await.unwrap();
    let want = vec![vec![Value::Int(1), Value::Text("one".into())]];
    assert_eq!(c.query_point(&by_id, &[Value::Int(1)], &types).await.unwrap(), want);
    assert_eq!(c.query(&by_id, &[Value::Int(1)], &types).await.unwrap(), want);
    assert!(c.query_point(&by_id, &[Value::Int(2)], &types).await.unwrap().is_empty());
    assert!(c.query_point(&by_id, &[Value::Text("x".into())], &[ValueType::Int]).await.is_err(), "type check");
    let upd = sql(&db, "UPDATE parent SET k = $1 WHERE id = $2 RETURNING id");
    c.begin().await.unwrap();
    let r = c.query_point(&upd, &[Value::Text("uno".into()), Value::Int(1)], &[ValueType::Int]).await.unwrap();
    assert_eq!(r, vec![vec![Value::Int(1)]]);
    assert_eq!(c.query_point(&by_id, &[Value::Int(1)], &types).await.unwrap()[0][1], Value::Text("uno".into()));
    c.commit().await.unwrap();
    drop(c);

    let one = Db::open(&url, DbOptions { pool_size: 1, ..small_opts() }).await.unwrap();
    for round in 0..50 {
        {
            let mut c = one.acquire().await.unwrap();
            c.begin().await.unwrap();
            c.execute(&ins, &[Value::Int(1000 + round), Value::Text("abandoned".into())]).await.unwrap();
        }
        let mut c = one.acquire().await.unwrap();
        let seen = c.query_point(&by_id, &[Value::Int(1000 + round)], &types).await.unwrap();
        assert!(seen.is_empty(), "round {round}: the abandoned insert is visible");
    }
    assert_all_released(&one).await;
}

#[tokio::test]
async fn point_reads_sqlite() {
    on_sqlite_file(small_opts(), point_reads).await;
}

#[tokio::test]
async fn point_reads_postgres() {
    on_pg(small_opts(), point_reads).await;
}

/// Write transactions from several sessions share one connection on SQLite (the reserved
/// writer, whose page cache stays warm that way). Whatever connection a transaction runs on, the
/// outcome is that of the transactions alone: commits kept, an abandoned transaction rolled back
/// before the next writer starts on the same connection.
async fn writer_handoff(db: Db) {
    let mut setup = db.acquire().await.unwrap();
    setup.execute_batch(create_rt(&db)).await.unwrap();
    drop(setup);
    let ins = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
    let row = |i: i64| [Value::Int(i), Value::Text(format!("k{i}"))];
    for round in 0..20 {
        let base = round * 10;
        let mut a = db.acquire().await.unwrap();
        let mut b = db.acquire().await.unwrap();
        a.begin().await.unwrap();
        a.execute(&ins, &row(base + 1)).await.unwrap();
        a.commit().await.unwrap();
        drop(a);
        b.query_point(&sql(&db, "SELECT count(*) FROM parent"), &[], &[ValueType::Int]).await.unwrap();
        b.begin().await.unwrap();
        b.execute(&ins, &row(base + 2)).await.unwrap();
        b.commit().await.unwrap();
        let mut c = db.acquire().await.unwrap();
        c.begin().await.unwrap();
        c.execute(&ins, &row(base + 3)).await.unwrap();
        drop(c); // abandoned: rolled back
        drop(b);
        let mut d = db.acquire().await.unwrap();
        d.begin().await.unwrap();
        d.execute(&ins, &row(base + 4)).await.unwrap();
        d.commit().await.unwrap();
    }
    let mut check = db.acquire().await.unwrap();
    let rows = check.query("SELECT id FROM parent ORDER BY id", &[], &[ValueType::Int]).await.unwrap();
    let want: Vec<Vec<Value>> =
        (0..20).flat_map(|r| [r * 10 + 1, r * 10 + 2, r * 10 + 4]).map(|i| vec![Value::Int(i)]).collect();
    assert_eq!(rows, want);
    drop(check);
    assert_all_released(&db).await;
}

#[tokio::test]
async fn writer_handoff_sqlite() {
    on_sqlite_file(DbOptions { pool_size: 3, ..small_opts() }, |db, _| writer_handoff(db)).await;
}

#[tokio::test]
async fn writer_handoff_postgres() {
    on_pg(DbOptions { pool_size: 3, ..small_opts() }, |db, _| writer_handoff(db)).await;
}

/// The `i64` of a one-row, one-column result.
async fn scalar(c: &mut ardacat_store::Conn, sql: &str) -> i64 {
    match c.query(sql, &[], &[ValueType::Int]).await.unwrap().as_slice() {
        [row] => match row.as_slice() {
            [Value::Int(n)] => *n,
            other => panic!("{sql}: {other:?}"),
        },
        other => panic!("{sql}: {other:?}"),
    }
}

/// SQLite: every write, from whichever session, runs on the one reserved writer connection, so
/// that connection never sees another connection's commit and keeps its page cache. Observed
/// through `PRAGMA data_version`, which changes on a connection exactly when another connection
/// committed (the event that makes SQLite drop the page cache). Every pooled connection is held
/// by a session at once, so no write can borrow a previous writer's connection.
#[tokio::test]
async fn writes_from_every_session_use_the_writer_connection_sqlite() {
    on_sqlite_file(DbOptions { pool_size: 3, ..small_opts() }, |db, _| async move {
        let mut sessions = Vec::new();
        for _ in 0..3 {
            sessions.push(db.acquire().await.unwrap());
        }
        sessions[0].execute_batch(create_rt(&db)).await.unwrap();
        let ins = "INSERT INTO parent (id, k) VALUES (?1, ?2)";
        let row = |i: i64| vec![Value::Int(i), Value::Text(format!("k{i}"))];
        let mut versions = Vec::new();
        let mut id = 0;
        for _round in 0..5 {
            for s in sessions.iter_mut() {
                s.begin().await.unwrap();
                versions.push(scalar(s, "PRAGMA data_version").await);
                id += 1;
                s.execute(ins, &row(id)).await.unwrap();
                s.commit().await.unwrap();
                id += 1;
                s.execute(ins, &row(id)).await.unwrap(); // outside a transaction
                s.execute_many(ins, vec![row(id + 1), row(id + 2)]).await.unwrap();
                id += 2;
            }
        }
        assert!(versions.windows(2).all(|w| w[0] == w[1]), "another connection committed in between: {versions:?}");
        // The pooled connections see every commit at once.
        for s in sessions.iter_mut() {
            assert_eq!(scalar(s, "SELECT count(*) FROM parent").await, id);
        }
        drop(sessions);
        assert_all_released(&db).await;
    })
    .await;
}

/// Whichever connection runs a transaction: it reads its own writes (query, point read,
/// stream), others do not see them before the commit and see them right after it, a write
/// outside a transaction is visible to the session's next read, and a transaction abandoned by
/// dropping its connection or rolled back leaves nothing behind.
async fn transaction_visibility(db: Db) {
    let mut a = db.acquire().await.unwrap();
    let mut b = db.acquire().await.unwrap();
    a.execute_batch(create_rt(&db)).await.unwrap();
    let ins = sql(&db, "INSERT INTO parent (id, k) VALUES ($1, $2)");
    let by_id = sql(&db, "SELECT id FROM parent WHERE id = $1");
    let row = |i: i64| [Value::Int(i), Value::Text(format!("k{i}"))];
    let int = [ValueType::Int];
    let one = |i: i64| vec![vec![Value::Int(i)]];

    a.begin().await.unwrap();
    a.execute(&ins, &row(1)).await.unwrap();
    assert_eq!(a.query(&by_id, &[Value::Int(1)], &int).await.unwrap(), one(1));
    assert_eq!(a.query_point(&by_id, &[Value::Int(1)], &int).await.unwrap(), one(1));
    let (tx, mut rx) = mpsc::channel::<RowResult>(4);
    assert_eq!(a.stream(&by_id, &[Value::Int(1)], &int, tx).await.unwrap(), 1);
    assert_eq!(rx.recv().await.unwrap().unwrap(), vec![vec![Value::Int(1)]]);
    assert!(b.query_point(&by_id, &[Value::Int(1)], &int).await.unwrap().is_empty(), "uncommitted row seen");
    assert!(b.query(&by_id, &[Value::Int(1)], &int).await.unwrap().is_empty(), "uncommitted row seen");
    a.commit().await.unwrap();
    assert_eq!(b.query_point(&by_id, &[Value::Int(1)], &int).await.unwrap(), one(1));

    a.execute(&ins, &row(2)).await.unwrap();
    assert_eq!(a.query_point(&by_id, &[Value::Int(2)], &int).await.unwrap(), one(2));
    assert_eq!(a.query(&by_id, &[Value::Int(2)], &int).await.unwrap(), one(2));

    for round in 0..10 {
        let abandoned = 100 + round;
        let mut c = db.acquire().await.unwrap();
        c.begin().await.unwrap();
        c.execute(&ins, &row(abandoned)).await.unwrap();
        drop(c);
        // The next writer starts after the rollback and sees nothing of it.
        b.begin().await.unwrap();
        assert!(b.query(&by_id, &[Value::Int(abandoned)], &int).await.unwrap().is_empty());
        b.execute(&ins, &row(200 + round)).await.unwrap();
        b.commit().await.unwrap();
        assert!(a.query_point(&by_id, &[Value::Int(abandoned)], &int).await.unwrap().is_empty());
        assert_eq!(a.query_point(&by_id, &[Value::Int(200 + round)], &int).await.unwrap(), one(200 + round));

        a.begin().await.unwrap();
        a.execute(&ins, &row(300 + round)).await.unwrap();
        a.rollback().await.unwrap();
        assert!(a.query_point(&by_id, &[Value::Int(300 + round)], &int).await.unwrap().is_empty());
    }
    let ids = a.query("SELECT id FROM parent ORDER BY id", &[], &int).await.unwrap();
    let want: Vec<Vec<Value>> = [1, 2].into_iter().chain(200..210).map(|i| vec![Value::Int(i)]).collect();
    assert_eq!(ids, want);
    drop((a, b));
    assert_all_released(&db).await;
}

#[tokio::test]
async fn transaction_visibility_sqlite() {
    on_sqlite_file(DbOptions { pool_size: 3, ..small_opts() }, |db, _| transaction_visibility(db)).await;
}

#[tokio::test]
async fn transaction_visibility_postgres() {
    on_pg(DbOptions { pool_size: 3, ..small_opts() }, |db, _| transaction_visibility(db)).await;
}

/// SQLite: a `begin` whose future is dropped half-way (its `BEGIN` already sent to the database)
/// leaves no transaction open and does not keep the write gate: another session writes at once,
/// the session itself writes outside a transaction and that write is committed. A short
/// `busy_timeout` turns a leftover lock into an error instead of a long wait.
#[tokio::test]
async fn cancelled_begin_leaves_no_transaction_sqlite() {
    let opts = DbOptions { pool_size: 2, busy_timeout: Duration::from_millis(300), ..small_opts() };
    on_sqlite_file(opts, |db, _| async move {
        let mut other = db.acquire().await.unwrap();
        other.execute_batch(create_rt(&db)).await.unwrap();
        let ins = "INSERT INTO parent (id, k) VALUES (?1, ?2)";
        let row = |i: i64| [Value::Int(i), Value::Text(format!("k{i}"))];
        let mut want = Vec::new();
        for round in 0..20i64 {
            let mut c = db.acquire().await.unwrap();
            // Polled once: the gate is free, so `BEGIN` is queued before the future is dropped
            // (unless the thread answered within that one poll: then the transaction is open).
            if tokio::time::timeout(Duration::ZERO, c.begin()).await.is_ok() {
                c.rollback().await.unwrap();
            }
            assert!(!c.in_transaction());
            if round % 2 == 0 {
                drop(c);
            } else {
                c.execute(ins, &row(1000 + round)).await.unwrap();
                want.push(1000 + round);
                drop(c);
            }
            other.begin().await.unwrap();
            other.execute(ins, &row(round)).await.unwrap();
            other.commit().await.unwrap();
            want.push(round);
        }
        want.sort_unstable();
        let ids = other.query("SELECT id FROM parent ORDER BY id", &[], &[ValueType::Int]).await.unwrap();
        assert_eq!(ids, want.into_iter().map(|i| vec![Value::Int(i)]).collect::<Vec<_>>());
        drop(other);
        assert_all_released(&db).await;
    })
    .await;
}

/// SQLite: a batch outside `begin` must not leave a transaction open on the shared writer
/// connection (the session's next read, on its pooled connection, would not see it, and the
/// next writer would inherit it): it is rolled back and refused, and the next writer proceeds.
#[tokio::test]
async fn batch_leaving_a_transaction_open_is_refused_sqlite() {
    let opts = DbOptions { pool_size: 2, busy_timeout: Duration::from_millis(300), ..small_opts() };
    on_sqlite_file(opts, |db, _| async move {
        let mut a = db.acquire().await.unwrap();
        let mut b = db.acquire().await.unwrap();
        a.execute_batch(create_rt(&db)).await.unwrap();
        let err = a.execute_batch("BEGIN; INSERT INTO parent (id, k) VALUES (1, 'one')").await.unwrap_err();
        assert!(matches!(err, StoreError::Database(ref m) if m.contains("transaction open")), "{err:?}");
        assert!(!a.in_transaction());
        b.begin().await.unwrap();
        b.execute("INSERT INTO parent (id, k) VALUES (2, 'two')", &[]).await.unwrap();
        b.commit().await.unwrap();
        let ids = a.query("SELECT id FROM parent ORDER BY id", &[], &[ValueType::Int]).await.unwrap();
        assert_eq!(ids, vec![vec![Value::Int(2)]]);
    })
    .await;
}

/// The PostgreSQL pool (`exec/postgres/pool.rs`) hands the connection given back last to the next
/// `acquire` without a ping round trip; a connection the server has ended (as a restart would)
/// fails one statement, is then pinged before reuse and replaced, and the pool serves again.
#[tokio::test]
async fn pooled_connection_reused_and_an_ended_one_replaced_postgres() {
    on_pg(DbOptions { pool_size: 1, ..small_opts() }, |db, _url| async move {
        const PID: &str = "SELECT pg_backend_pid()::int8";
        let pid =
            async || db.acquire().await.unwrap().query(PID, &[], &[ValueType::Int]).await.map(|r| r[0][0].clone());
        let first = pid().await.unwrap();
        assert_eq!(pid().await.unwrap(), first, "the same connection serves the next acquire");

        let admin = Db::open(&admin_url(), DbOptions { pool_size: 1, ..DbOptions::default() }).await.unwrap();
        let mut a = admin.acquire().await.unwrap();
        a.query("SELECT pg_terminate_backend($1)", std::slice::from_ref(&first), &[ValueType::Bool]).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = a
                .query(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                    std::slice::from_ref(&first),
                    &[ValueType::Int],
                )
                .await
                .unwrap();
            if left[0][0] == Value::Int(0) {
                break;
            }
            assert!(Instant::now() < deadline, "backend {first:?} did not end");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(a);

        assert!(pid().await.is_err(), "the ended connection fails its statement (it was not pinged)");
        let replaced = pid().await.expect("the next acquire pings the failed connection and opens a new one");
        assert_ne!(replaced, first);
        assert_eq!(pid().await.unwrap(), replaced);
        assert_all_released(&db).await;
    })
    .await;
}

/// Which pooled connection a `Conn` reads on: PostgreSQL's backend pid; on SQLite the page cache
/// size `mark_sqlite` gave the connection (SQLite has no connection id a statement can read).
async fn connection_identity(c: &mut ardacat_store::Conn, backend: Backend) -> i64 {
    let sql = match backend {
        Backend::Postgres => "SELECT pg_backend_pid()::int8",
        Backend::Sqlite => "PRAGMA cache_size",
    };
    match c.query(sql, &[], &[ValueType::Int]).await.unwrap().as_slice() {
        [row] => match row.as_slice() {
            [Value::Int(n)] => *n,
            other => panic!("identity: {other:?}"),
        },
        other => panic!("identity: {other:?}"),
    }
}

/// Both pools hand a thread the connection it gave back last, not merely the most recent one
/// (exec::thread_slot): thread T gives back `a` then `b`, thread O takes `b` (T's most recent: O
/// has none of its own) and gives it back, so `b` is now the most recent of all — and T's next
/// `Conn` is `a` again. Plain threads drive the futures with `Handle::block_on`, so which OS
/// thread runs each step is fixed while the runtime's workers drive the sockets.
async fn a_thread_gets_back_its_own_connection(db: Db) {
    let backend = db.backend();
    let handle = tokio::runtime::Handle::current();
    let t = std::thread::spawn(move || {
        let (a, b) = handle.block_on(async {
            let mut a = db.acquire().await.unwrap();
            let mut b = db.acquire().await.unwrap();
            if backend == Backend::Sqlite {
                a.query("PRAGMA cache_size = -1001", &[], &[]).await.unwrap();
                b.query("PRAGMA cache_size = -1002", &[], &[]).await.unwrap();
            }
            let ids = (connection_identity(&mut a, backend).await, connection_identity(&mut b, backend).await);
            drop(a);
            drop(b);
            ids
        });
        assert_ne!(a, b);
        let (db_o, handle_o) = (db.clone(), handle.clone());
        let taken_by_o = std::thread::spawn(move || {
            handle_o.block_on(async {
                let mut c = db_o.acquire().await.unwrap();
                connection_identity(&mut c, backend).await
            })
        })
        .join()
        .unwrap();
        assert_eq!(taken_by_o, b, "a thread with no connection of its own takes the most recent one");
        let again = handle.block_on(async {
            let mut c = db.acquire().await.unwrap();
            connection_identity(&mut c, backend).await
        });
        assert_eq!(again, a, "the thread gets back the connection it gave back, not the other thread's");
    });
    tokio::task::spawn_blocking(move || t.join().unwrap()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_gets_back_its_own_connection_sqlite() {
    on_sqlite_file(small_opts(), |db, _| a_thread_gets_back_its_own_connection(db)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_gets_back_its_own_connection_postgres() {
    on_pg(small_opts(), |db, _| a_thread_gets_back_its_own_connection(db)).await;
}

/// A PostgreSQL `Conn` gives its connection back early (`release`) or moves it to another `Conn`
/// (`hand_over` / `take_over`: the point lane's waiting reads and leads) only when that changes
/// nothing a statement could see: never inside a transaction, never after a failed statement
/// (handed over; released, the pool pings it first); SQLite's stay where they are.
#[tokio::test]
async fn pg_connections_move_between_conns_only_when_clean() {
    on_pg(DbOptions { pool_size: 2, ..small_opts() }, |db, _| async move {
        let pid = "SELECT pg_backend_pid()::int8";
        let in_use = |db: &Db| db.pool_stats().in_use;
        let mut a = db.acquire().await.unwrap();
        let first = a.query(pid, &[], &[ValueType::Int]).await.unwrap();
        assert_eq!(in_use(&db), 1);
        a.release();
        assert_eq!(in_use(&db), 0, "released at once");
        // The next statement takes a connection again (the same one, the only one idle).
        assert_eq!(a.query(pid, &[], &[ValueType::Int]).await.unwrap(), first);
        let mut b = db.acquire().await.unwrap();
        b.release();
        let moved = a.hand_over().expect("a clean connection moves");
        assert_eq!(in_use(&db), 1, "moved, not given back");
        b.take_over(moved);
        assert_eq!(b.query(pid, &[], &[ValueType::Int]).await.unwrap(), first, "b runs on a's connection");
        assert!(a.hand_over().is_none(), "a holds none now");
        // Inside a transaction nothing moves.
        b.begin().await.unwrap();
        b.release();
        assert!(b.hand_over().is_none());
        assert_eq!(in_use(&db), 1);
        assert_eq!(b.query(pid, &[], &[ValueType::Int]).await.unwrap(), first, "still the transaction's");
        b.rollback().await.unwrap();
        // After a failed statement it is not handed on.
        assert!(b.query("SELECT 1/0", &[], &[ValueType::Int]).await.is_err());
        assert!(b.hand_over().is_none());
        drop((a, b));
        assert_eq!(in_use(&db), 0);
    })
    .await;
}

#[tokio::test]
async fn sqlite_connections_do_not_move() {
    let db = Db::open("sqlite::memory:", small_opts()).await.unwrap();
    let mut a = db.acquire().await.unwrap();
    a.release();
    assert_eq!(db.pool_stats().in_use, 1);
    assert!(a.hand_over().is_none());
}
