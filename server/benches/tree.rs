//! Collection-tree benchmark: builds a tree of N collections (`/tree/dK/cI`, 1,000 children per
//! parent) through the service layer, then times the operations that walk it: path lookup
//! (`cd`), listing one parent's children (`dir`), creating and removing a leaf, and `stat`.
//!
//! cargo bench -p ardacat-server --bench tree -- [--collections N] [--backend sqlite|postgres]

mod common;

use std::time::Instant;

use ardacat_core::Session;
use ardacat_server::{Config, open};

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let arg = |k: &str| argv.iter().position(|a| a == k).and_then(|i| argv.get(i + 1)).cloned();
    let n: usize = arg("--collections").map(|v| v.parse().expect("--collections N")).unwrap_or(100_000);
    let backend = arg("--backend").unwrap_or_else(|| "sqlite".into());
    let scratch = common::ScratchDb::new(&backend, "tree").await;
    let url = scratch.url.clone();
    let config = Config { database: url, ..Config::default() };
    let (cat, _) = open(&config, Some("pw".into())).await.unwrap();
    let mut se = Session::new(cat.authenticate("root", Some("pw")).await.unwrap());
    cat.createdir(&mut se, "/tree", true).await.unwrap();
    let parents = n.div_ceil(1000);
    let t = Instant::now();
    for p in 0..parents {
        cat.createdir(&mut se, &format!("/tree/d{p}"), true).await.unwrap();
    }
    for i in 0..n {
        cat.createdir(&mut se, &format!("/tree/d{}/c{i}", i / 1000), true).await.unwrap();
    }
    let build = t.elapsed().as_secs_f64();
    let mut lookup = Vec::new();
    let mut list = Vec::new();
    let mut create = Vec::new();
    let mut remove = Vec::new();
    for k in 0..200 {
        let i = (k * 7919) % n;
        let t = Instant::now();
        cat.cd(&mut se, &format!("/tree/d{}/c{i}", i / 1000)).await.unwrap();
        lookup.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let mut rows: Vec<Vec<Option<String>>> = Vec::new();
        cat.dir(&mut se, &format!("/tree/d{}", (k * 13) % parents), &mut rows).await.unwrap();
        list.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(rows.len() >= 1000.min(n));
        let leaf = format!("/tree/d{}/new{k}", k % parents);
        let t = Instant::now();
        cat.createdir(&mut se, &leaf, true).await.unwrap();
        create.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        cat.rmdir(&mut se, &leaf).await.unwrap();
        remove.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "| backend | collections | build collections/s | cd p50/p95 ms | dir of 1,000 children p50/p95 ms | createdir p50/p95 ms | rmdir p50/p95 ms |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| {backend} | {n} | {:.0} | {:.3} / {:.3} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} |",
        n as f64 / build,
        pct(lookup.clone(), 0.5),
        pct(lookup, 0.95),
        pct(list.clone(), 0.5),
        pct(list, 0.95),
        pct(create.clone(), 0.5),
        pct(create, 0.95),
        pct(remove.clone(), 0.5),
        pct(remove, 0.95)
    );
    drop(cat);
    scratch.finish().await;
}
