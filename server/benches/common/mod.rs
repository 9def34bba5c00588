//! Scratch databases for the benchmarks: a temporary SQLite file, or a PostgreSQL database
//! (server from ARDACAT_BENCH_PG, default postgres://postgres@127.0.0.1:5432/postgres) created for
//! the run and dropped by `finish`. Measures nothing itself.

pub struct ScratchDb {
    pub url: String,
    _dir: tempfile::TempDir,
    pg: Option<(String, String)>,
}

impl ScratchDb {
    pub async fn new(backend: &str, tag: &str) -> ScratchDb {
        let dir = tempfile::tempdir().unwrap();
        if backend == "postgres" {
            let admin = std::env::var("ARDACAT_BENCH_PG")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
            let name = format!("ardacat_{tag}_{}", std::process::id());
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.expect("PostgreSQL");
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut c).await.unwrap();
            let url = format!("{}/{name}", &admin[..admin.rfind('/').unwrap()]);
            ScratchDb { url, _dir: dir, pg: Some((admin, name)) }
        } else {
            let url = format!("sqlite:{}", dir.path().join(format!("{tag}.db")).display());
            ScratchDb { url, _dir: dir, pg: None }
        }
    }

    /// Drop the PostgreSQL database (the SQLite file goes with the temp dir).
    pub async fn finish(self) {
        if let Some((admin, name)) = self.pg {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                .execute(&mut c)
                .await
                .unwrap();
        }
    }
}
