//! Catalogue-level benchmark (issue: core): bulk load of entries with 10 typed attributes, and a
//! 3-predicate query with and without indexes, on SQLite and PostgreSQL, through the service layer.
//!
//! cargo bench -p ardacat-server --bench catalogue -- [--entries N] [--backend sqlite|postgres|both]
//!   [--queries N] [--analyze: run ANALYZE after the bulk load, before the queries]
//!   [--composite: also a composite index (s0, i0) on /indexed after the load, before ANALYZE]
//! PostgreSQL: ARDACAT_BENCH_PG (default postgres://postgres@127.0.0.1:5432/postgres); a scratch
//! database is created and dropped.

mod common;

use std::time::Instant;

use ardacat_core::service::SelectSpec;
use ardacat_core::{Catalogue, ServiceConfig, Session};
use ardacat_server::{Cat, Store};
use ardacat_store::{Db, DbOptions, SqlStore};

struct Args {
    entries: usize,
    backends: Vec<&'static str>,
    queries: usize,
    /// Refresh the planner's statistics after the bulk load (what autovacuum or a DBA does).
    analyze: bool,
    /// Add the composite index `(s0, i0)` to `/indexed` after the load (`index_create`).
    composite: bool,
}

fn args() -> Args {
    let mut a = Args {
        entries: 1_000_000,
        backends: vec!["sqlite", "postgres"],
        queries: 100,
        analyze: false,
        composite: false,
    };
    let v: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < v.len() {
        match v[i].as_str() {
            "--entries" => {
                a.entries = v[i + 1].parse().expect("--entries N");
                i += 1;
            }
            "--analyze" => a.analyze = true,
            "--composite" => a.composite = true,
            "--queries" => {
                a.queries = v[i + 1].parse().expect("--queries N");
                i += 1;
            }
            "--backend" => {
                a.backends = match v[i + 1].as_str() {
                    "sqlite" => vec!["sqlite"],
                    "postgres" => vec!["postgres"],
                    _ => vec!["sqlite", "postgres"],
                };
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    a
}

/// Deterministic pseudo-random numbers (xorshift) so both backends get the same data.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

async fn load(cat: &Cat, se: &mut Session<Store>, dir: &str, indexed: bool, n: usize) -> f64 {
    cat.createdir(se, dir, true).await.unwrap();
    for (name, ty, idx) in [
        ("i0", "int", indexed),
        ("i1", "int", false),
        ("i2", "int", false),
        ("i3", "int", false),
        ("f0", "float", indexed),
        ("f1", "float", false),
        ("f2", "float", false),
        ("s0", "varchar(32)", indexed),
        ("s1", "varchar(32)", false),
        ("s2", "text", false),
    ] {
        cat.addattr(se, dir, name, ty, idx).await.unwrap();
    }
    let names: Vec<String> =
        ["i0", "i1", "i2", "i3", "f0", "f1", "f2", "s0", "s1", "s2"].iter().map(|s| s.to_string()).collect();
    let mut rng = Rng(42);
    let start = Instant::now();
    let batch = 20_000;
    let mut done = 0;
    while done < n {
        let k = batch.min(n - done);
        let rows: Vec<(String, Vec<Option<String>>)> = (done..done + k)
            .map(|i| {
                let r = rng.next();
                (
                    format!("e{i:08}"),
                    vec![
                        (r % 100_000).to_string(),
                        (r % 7).to_string(),
                        i.to_string(),
                        (r >> 40).to_string(),
                        format!("{}", (r % 10_000) as f64 / 100.0),
                        format!("{}", (r % 3) as f64),
                        "1.5".into(),
                        format!("v{}", r % 1000),
                        format!("run{}", i % 50),
                        "a longer free-text value for the entry".into(),
                    ]
                    .into_iter()
                    .map(Some)
                    .collect(),
                )
            })
            .collect();
        cat.insert(se, dir, &names, rows).await.unwrap();
        done += k;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn query_latency(cat: &Cat, se: &mut Session<Store>, dir: &str, queries: usize) -> (f64, f64, f64, usize) {
    let mut rng = Rng(7);
    let mut times = Vec::new();
    let mut rows_total = 0;
    for _ in 0..queries {
        let lo = rng.next() % 99_000;
        let cond = format!(
            "{dir}:i0 between {lo} and {} and {dir}:f0 < {} and {dir}:s0 = \"v{}\"",
            lo + 1000,
            50 + rng.next() % 50,
            rng.next() % 1000
        );
        let spec =
            SelectSpec { select: vec![format!("{dir}:FILE"), format!("{dir}:i0")], condition: cond, order_by: None };
        let mut rows: Vec<Vec<Option<String>>> = Vec::new();
        let t = Instant::now();
        cat.selectattr(se, &spec, &mut rows).await.unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        rows_total += rows.len();
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    (pct(0.5), pct(0.95), pct(0.99), rows_total)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = args();
    println!(
        "| backend | entries | bulk load entries/s | query p50 no index (ms) | p95 no index | p50 indexed (ms) | p95 indexed | p99 indexed | rows matched |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for backend in &a.backends {
        let scratch = common::ScratchDb::new(backend, "bench").await;
        let url = scratch.url.clone();
        {
            let db = Db::open(&url, DbOptions::default()).await.unwrap();
            db.migrate().await.unwrap();
            let cat = Catalogue::new(SqlStore::new(db), ServiceConfig::default()).await.unwrap();
            cat.ensure_root("bench").await.unwrap();
            let mut se = Session::new(cat.authenticate("root", Some("bench")).await.unwrap());
            let rate = load(&cat, &mut se, "/plain", false, a.entries).await;
            let _ = load(&cat, &mut se, "/indexed", true, a.entries).await;
            if a.composite {
                let t = Instant::now();
                cat.index_create(&mut se, "/indexed", "s0_i0", &["s0".to_string(), "i0".to_string()]).await.unwrap();
                eprintln!(
                    "{backend}: composite index (s0, i0) on /indexed built in {:.1} s",
                    t.elapsed().as_secs_f64()
                );
            }
            if a.analyze {
                let db = Db::open(&url, DbOptions::default()).await.unwrap();
                db.acquire().await.unwrap().execute_batch("ANALYZE").await.unwrap();
            }
            let (p50, p95, _, n1) = query_latency(&cat, &mut se, "/plain", a.queries).await;
            let (ip50, ip95, ip99, n2) = query_latency(&cat, &mut se, "/indexed", a.queries).await;
            assert_eq!(n1, n2, "indexes must not change answers");
            println!(
                "| {backend} | {} | {rate:.0} | {p50:.1} | {p95:.1} | {ip50:.2} | {ip95:.2} | {ip99:.2} | {n1} |",
                a.entries
            );
        }
        scratch.finish().await;
    }
}
