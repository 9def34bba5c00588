//! ardacat-store: the storage layer of the catalogue. SQLite (rusqlite, embedded default) and
//! PostgreSQL (sqlx, production) behind one executor API that binds and decodes
//! `ardacat_core::types::Value`s identically on both backends.
//!
//! - [`exec`]: connection pools, statement execution, streaming, transactions, migrations.
//! - [`error`]: [`StoreError`], the backend-independent classification of failures.

pub mod error;
pub mod exec;

pub use error::StoreError;
pub use exec::health::{Health, expected_schema_version};
pub use exec::migrate::Migration;
pub use exec::standby::StandbyStatus;
pub use exec::{AcquireStats, Backend, Conn, Db, DbOptions, PoolStats, ROW_BATCH, RowBatch};

pub mod catalog;
pub mod sql;

pub use catalog::{SqlConn, SqlStore, map_err};
