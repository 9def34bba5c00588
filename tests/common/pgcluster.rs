//! Throwaway PostgreSQL clusters for the replication tests: a primary (`initdb`, WAL for
//! streaming) and hot standbys of it (`pg_basebackup -R`), on free loopback ports, run as the
//! `postgres` user through `runuser` (PostgreSQL refuses to run as root), stopped and removed
//! on drop. Nothing is optional: missing binaries or a failing step fail the test with a clear
//! message (`ARDACAT_PG_BIN` overrides the binaries' folder).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pg_bin(tool: &str) -> PathBuf {
    let dir = std::env::var("ARDACAT_PG_BIN").unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".into());
    let p = Path::new(&dir).join(tool);
    assert!(
        p.exists(),
        "{} is missing: the replication tests need the PostgreSQL server binaries \
         (apt-get install postgresql-15, or set ARDACAT_PG_BIN)",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Runs a PostgreSQL tool as the `postgres` user; panics with its output when it fails.
fn run_as_postgres(tool: &str, args: &[&str]) {
    let out = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(pg_bin(tool))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} through runuser: {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub struct Cluster {
    root: PathBuf,
    pub port: u16,
}

impl Cluster {
    fn data(&self) -> String {
        self.root.join("data").display().to_string()
    }

    fn new_root() -> PathBuf {
        let root = std::env::temp_dir().join(format!("ardacat-pg-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&root).expect("cluster dir");
        let ok = Command::new("chown").args(["postgres:postgres", &root.display().to_string()]).status();
        assert!(ok.map(|s| s.success()).unwrap_or(false), "cannot chown {} to postgres", root.display());
        root
    }

    /// A fresh primary, trust authentication on 127.0.0.1, ready for streaming standbys.
    pub fn primary() -> Cluster {
        let c = Cluster { root: Self::new_root(), port: free_port() };
        run_as_postgres("initdb", &["-D", &c.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"]);
        c.start(&["-c", "wal_level=replica", "-c", "max_wal_senders=8", "-c", "hot_standby=on"]);
        c
    }

    /// A hot standby streaming from `primary` (`pg_basebackup -R`).
    pub fn standby_of(primary: &Cluster) -> Cluster {
        let c = Cluster { root: Self::new_root(), port: free_port() };
        run_as_postgres(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "postgres",
                "-D",
                &c.data(),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
            ],
        );
        c.start(&["-c", "hot_standby=on"]);
        c
    }

    fn start(&self, extra: &[&str]) {
        let mut opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=on",
            self.port,
            self.root.display()
        );
        for e in extra {
            opts.push(' ');
            opts.push_str(e);
        }
        let log = self.root.join("log").display().to_string();
        run_as_postgres("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &opts, "-w", "start"]);
    }

    /// `postgres://postgres@127.0.0.1:<port>/<db>`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Runs SQL on the cluster's `postgres` database.
    pub async fn sql(&self, statement: &str) {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to the cluster on {}: {e}", self.port));
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_string()))
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }

    /// One value of a query on the cluster's `postgres` database, as text.
    pub async fn value(&self, query: &str) -> Option<String> {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&self.url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("connect to the cluster on {}: {e}", self.port));
        let row: (Option<String>,) =
            sqlx::query_as(sqlx::AssertSqlSafe(query.to_string())).fetch_one(&mut conn).await.expect(query);
        row.0
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(pg_bin("pg_ctl"))
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
