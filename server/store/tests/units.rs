//! Write units of the storage port (`StoreConn::begin_unit` / `end_unit`), on SQLite and a real
//! PostgreSQL: a write outside a unit is refused and changes nothing; a failed unit inside the
//! user's transaction leaves it usable; a unit its command never ended (a cancel) is undone.

use ardacat_core::error::Error;
use ardacat_core::store::{Store, StoreConn};
use ardacat_store::{Db, DbOptions, SqlStore};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;

const DEFAULT_PG: &str = "postgres://postgres@127.0.0.1:5432/postgres";

async fn on_both(f: impl AsyncFn(SqlStore)) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&format!("sqlite:{}", dir.path().join("c.db").display()), DbOptions::default()).await.unwrap();
    db.migrate().await.unwrap();
    f(SqlStore::new(db)).await;

    let admin_url = std::env::var("ARDACAT_TEST_PG").unwrap_or_else(|_| DEFAULT_PG.to_string());
    let admin = Db::open(&admin_url, DbOptions { pool_size: 1, ..DbOptions::default() })
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL must be reachable at {admin_url}: {e}"));
    let name = format!("ardacat_units_{:x}", std::process::id() as u64 * 1_000_003 + rand_suffix());
    admin.acquire().await.unwrap().execute_batch(&format!("CREATE DATABASE {name}")).await.unwrap();
    let url = format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0);
    let outcome = AssertUnwindSafe(async {
        let db = Db::open(&url, DbOptions::default()).await.unwrap();
        db.migrate().await.unwrap();
        f(SqlStore::new(db.clone())).await;
        db.close().await;
    })
    .catch_unwind()
    .await;
    let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    admin.acquire().await.unwrap().execute_batch(&drop).await.unwrap();
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64
}

#[tokio::test]
async fn writes_need_a_unit() {
    on_both(async |store: SqlStore| {
        let mut c = store.acquire().await.unwrap();
        assert!(matches!(c.create_group("g0", "root").await, Err(Error::Internal(_))));
        assert!(!c.group_exists("g0").await.unwrap(), "a refused write changed nothing");
        // Inside the user's transaction too: a transaction is not a unit.
        c.begin().await.unwrap();
        assert!(matches!(c.create_group("g0", "root").await, Err(Error::Internal(_))));
        c.rollback().await.unwrap();

        c.begin_unit().await.unwrap();
        c.create_group("g1", "root").await.unwrap();
        c.end_unit(true).await.unwrap();
        assert!(c.group_exists("g1").await.unwrap());
        // A failed unit of its own: nothing stays.
        c.begin_unit().await.unwrap();
        c.create_group("g2", "root").await.unwrap();
        c.end_unit(false).await.unwrap();
        assert!(!c.group_exists("g2").await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn a_failed_unit_keeps_the_transaction() {
    on_both(async |store: SqlStore| {
        let mut c = store.acquire().await.unwrap();
        c.begin().await.unwrap();
        c.begin_unit().await.unwrap();
        c.create_group("kept", "root").await.unwrap();
        c.end_unit(true).await.unwrap();
        // A statement that fails in the database (a unique violation) inside a unit.
        c.begin_unit().await.unwrap();
        c.create_group("lost", "root").await.unwrap();
        assert!(matches!(c.create_group("kept", "root").await, Err(Error::Exists(_))));
        c.end_unit(false).await.unwrap();
        // The transaction still reads and writes, and commits what it did before.
        assert!(c.group_exists("kept").await.unwrap());
        assert!(!c.group_exists("lost").await.unwrap());
        c.begin_unit().await.unwrap();
        c.create_group("after", "root").await.unwrap();
        c.end_unit(true).await.unwrap();
        c.commit().await.unwrap();
        let mut other = store.acquire().await.unwrap();
        for (g, there) in [("kept", true), ("lost", false), ("after", true)] {
            assert_eq!(other.group_exists(g).await.unwrap(), there, "{g}");
        }
    })
    .await;
}

#[tokio::test]
async fn an_abandoned_unit_is_undone() {
    on_both(async |store: SqlStore| {
        let mut c = store.acquire().await.unwrap();
        c.begin().await.unwrap();
        c.begin_unit().await.unwrap();
        c.create_group("before", "root").await.unwrap();
        c.end_unit(true).await.unwrap();
        // A command whose future was dropped mid-way: its unit is never ended.
        c.begin_unit().await.unwrap();
        c.create_group("half", "root").await.unwrap();
        // The next command's unit undoes it first; so does a commit.
        c.begin_unit().await.unwrap();
        assert!(!c.group_exists("half").await.unwrap());
        c.create_group("half2", "root").await.unwrap();
        c.commit().await.unwrap();
        let mut other = store.acquire().await.unwrap();
        for (g, there) in [("before", true), ("half", false), ("half2", false)] {
            assert_eq!(other.group_exists(g).await.unwrap(), there, "{g}");
        }
    })
    .await;
}
