//! Streaming benchmark: bulk-loads N entries of 10 typed attributes, then streams all of them over
//! the TCP protocol (`getattr /big a0 … a9`) from a server running in this process, sampling the
//! process's resident memory. Flat RSS while N grows is the proof that results never sit whole
//! in memory.
//!
//! cargo bench -p ardacat-server --bench stream -- [--rows N] [--backend sqlite|postgres]

mod common;

use std::time::{Duration, Instant};

use ardacat_core::Session;
use ardacat_server::{Config, bind, open, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let arg = |k: &str| argv.iter().position(|a| a == k).and_then(|i| argv.get(i + 1)).cloned();
    let rows: usize = arg("--rows").map(|v| v.parse().expect("--rows N")).unwrap_or(1_000_000);
    let backend = arg("--backend").unwrap_or_else(|| "sqlite".into());
    let scratch = common::ScratchDb::new(&backend, "stream").await;
    let url = scratch.url.clone();
    let config = Config { database: url, tcp_port: 0, http_port: 0, ..Config::default() };
    let (cat, _) = open(&config, Some("pw".into())).await.unwrap();
    let mut se = Session::new(cat.authenticate("root", Some("pw")).await.unwrap());
    cat.createdir(&mut se, "/big", true).await.unwrap();
    let names: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        let ty = match i % 3 {
            0 => "int",
            1 => "float",
            _ => "varchar(40)",
        };
        cat.addattr(&mut se, "/big", n, ty, false).await.unwrap();
    }
    let t = Instant::now();
    let mut done = 0;
    while done < rows {
        let k = 20_000.min(rows - done);
        let batch = (done..done + k)
            .map(|i| {
                let v: Vec<Option<String>> = (0..10)
                    .map(|j| {
                        Some(match j % 3 {
                            0 => (i * 7 + j).to_string(),
                            1 => format!("{}.25", i % 1000),
                            _ => format!("value-{i}-{j}"),
                        })
                    })
                    .collect();
                (format!("e{i:09}"), v)
            })
            .collect();
        cat.insert(&mut se, "/big", &names, batch).await.unwrap();
        done += k;
    }
    let load_s = t.elapsed().as_secs_f64();
    let (tcp, http, bound) = bind(&config).await.unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve(cat.clone(), config.clone(), tcp, http, shutdown.clone()));

    let rss_before = rss_kib();
    let mut s = TcpStream::connect(bound.tcp).await.unwrap();
    s.write_all(format!("plain\n\n0 root\n5 pw\n\ngetattr /big {}\n", names.join(" ")).as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut newlines = 0u64;
    let mut bytes = 0u64;
    let mut peak = rss_before;
    let mut last_sample = Instant::now();
    let t = Instant::now();
    let mut tail = Vec::new();
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        bytes += n as u64;
        newlines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 8 {
            tail.drain(..tail.len() - 8);
        }
        if last_sample.elapsed() > Duration::from_millis(200) {
            peak = peak.max(rss_kib());
            last_sample = Instant::now();
        }
        if tail.ends_with(b"\x04\x04") {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    peak = peak.max(rss_kib());
    // greeting (3) + OK + status line, then 11 lines per entry.
    let streamed = (newlines - 5) / 11;
    assert_eq!(streamed as usize, rows, "every row streamed");
    println!(
        "| backend | rows | load entries/s | stream rows/s | MB/s | RSS before stream (MiB) | peak RSS while streaming (MiB) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| {backend} | {rows} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} |",
        rows as f64 / load_s,
        rows as f64 / secs,
        bytes as f64 / secs / 1e6,
        rss_before as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    shutdown.cancel();
    let _ = server.await;
    drop(cat);
    scratch.finish().await;
}
