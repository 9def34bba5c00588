//! A bounded load and soak test on loopback, against SQLite and PostgreSQL: 100 concurrent
//! clients (70 on the TCP protocol, 30 SOAP over HTTP/1.1 keep-alive) mix writes of uniquely
//! named entries, reads of their own earlier writes, streamed queries and provoked errors for
//! `ARDACAT_SOAK_SECS` seconds (default 60). Afterwards every acknowledged write must be in the
//! catalogue exactly once, no request may have failed except the provoked ones, and the server's
//! resident memory, sampled from /proc, must stay flat (peak after warm-up < 2x the early value
//! and < 500 MB). Prints one summary line per backend; with `ARDACAT_SOAK_REPORT=<file>` it also
//! appends the Markdown table row there (see docs/benchmarks-soak.md).

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TCP_CLIENTS: usize = 70;
const SOAP_CLIENTS: usize = 30;
/// SOAP clients' ids start here, so that ids never clash with TCP clients'.
const SOAP_BASE: usize = 1000;
/// Rows of the collection the streamed queries read.
const BIG_ROWS: usize = 2000;

/// The two backends' runs take turns: each wants the whole (2-core) machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_sqlite() {
    let _turn = ONE_AT_A_TIME.lock().await;
    Box::pin(soak(Backend::Sqlite)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_postgres() {
    let _turn = ONE_AT_A_TIME.lock().await;
    Box::pin(soak(Backend::Postgres)).await
}

fn soak_secs() -> u64 {
    std::env::var("ARDACAT_SOAK_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(60)
}

/// What every client counts.
#[derive(Default)]
struct Tally {
    writes: AtomicU64,
    reads: AtomicU64,
    streams: AtomicU64,
    provoked: AtomicU64,
    errors: AtomicU64,
}

impl Tally {
    fn ops(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
            + self.reads.load(Ordering::Relaxed)
            + self.streams.load(Ordering::Relaxed)
            + self.provoked.load(Ordering::Relaxed)
    }

    fn error(&self, what: String) {
        // The first few are shown; all are counted.
        if self.errors.fetch_add(1, Ordering::Relaxed) < 10 {
            eprintln!("soak: unexpected: {what}");
        }
    }
}

/// A small deterministic generator per client (no shared RNG state between tasks).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// One TCP client: returns the sequence numbers of its acknowledged writes.
async fn tcp_client(addr: SocketAddr, id: usize, stop: Arc<AtomicBool>, tally: Arc<Tally>) -> Vec<u64> {
    let mut c = RawConn::login(addr, "root", Some(ROOT_PASSWORD)).await;
    c.timeout = Duration::from_secs(120);
    let mut rng = Lcg(id as u64 + 1);
    let mut acked: Vec<u64> = Vec::new();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let dice = rng.next() % 100;
        if dice < 40 || acked.is_empty() {
            let line =
                format!("addentry /soak/t{id}_{seq} client {id} seq {seq} payload 'tcp client {id} entry {seq}'");
            match c.lines(&line).await {
                (0, _) => {
                    acked.push(seq);
                    tally.writes.fetch_add(1, Ordering::Relaxed);
                }
                (code, lines) => tally.error(format!("tcp {id}: {line} -> {code} {lines:?}")),
            }
            seq += 1;
        } else if dice < 80 {
            let k = acked[(rng.next() as usize) % acked.len()];
            let (code, lines) = c.lines(&format!("getattr /soak/t{id}_{k} seq")).await;
            if code == 0 && lines == [format!("t{id}_{k}"), k.to_string()] {
                tally.reads.fetch_add(1, Ordering::Relaxed);
            } else {
                tally.error(format!("tcp {id}: getattr t{id}_{k} -> {code} {lines:?}"));
            }
        } else if dice < 95 {
            let lo = rng.next() % (BIG_ROWS as u64 / 2);
            let (code, lines) = c.lines(&format!("selectattr /big:v 'v >= {lo} order by v'")).await;
            let want = BIG_ROWS - lo as usize;
            if code == 0 && lines.len() == want && lines.first() == Some(&lo.to_string()) {
                tally.streams.fetch_add(1, Ordering::Relaxed);
            } else {
                tally.error(format!("tcp {id}: stream from {lo} -> {code}, {} rows", lines.len()));
            }
        } else {
            // Provoked: a missing entry (1) and a malformed condition (8).
            let (a, _) = c.lines(&format!("getattr /soak/missing{id} seq")).await;
            let (b, _) = c.lines("selectattr /big:v 'v >>> 1'").await;
            if a == 1 && b == 8 {
                tally.provoked.fetch_add(2, Ordering::Relaxed);
            } else {
                tally.error(format!("tcp {id}: provoked errors answered {a} and {b}"));
            }
        }
    }
    acked
}

/// A keep-alive HTTP/1.1 connection with just enough parsing for SOAP responses.
struct Http {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    auth: String,
}

impl Http {
    fn new(addr: SocketAddr) -> Http {
        let auth =
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("root:{ROOT_PASSWORD}")));
        Http { addr, stream: None, buf: Vec::new(), auth }
    }

    async fn fill(&mut self) -> Result<(), String> {
        let s = self.stream.as_mut().ok_or("no connection")?;
        let mut chunk = vec![0u8; 65536];
        match tokio::time::timeout(Duration::from_secs(120), s.read(&mut chunk)).await {
            Ok(Ok(0)) => Err("connection closed".into()),
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out".into()),
        }
    }

    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(l);
            }
            self.fill().await?;
        }
    }

    async fn exact(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.buf.len() < n {
            self.fill().await?;
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// POST one SOAP 1.1 request; (status, body).
    async fn call(&mut self, op: &str, inner: &str) -> Result<(u16, String), String> {
        if self.stream.is_none() {
            let s = TcpStream::connect(self.addr).await.map_err(|e| e.to_string())?;
            s.set_nodelay(true).ok();
            self.stream = Some(s);
            self.buf.clear();
        }
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><m:{op} xmlns:m=\"urn:ardacat:metadata:1\">{inner}</m:{op}></soap:Body></soap:Envelope>"
        );
        let head = format!(
            "POST /soap HTTP/1.1\r\nHost: {}\r\nContent-Type: text/xml; charset=utf-8\r\nAuthorization: {}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            self.auth,
            body.len()
        );
        let s = self.stream.as_mut().ok_or("no connection")?;
        s.write_all(head.as_bytes()).await.map_err(|e| e.to_string())?;
        s.write_all(body.as_bytes()).await.map_err(|e| e.to_string())?;
        let status_line = self.line().await?;
        let status = status_line.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or("bad status line")?;
        let mut length = None;
        let mut chunked = false;
        let mut close = false;
        loop {
            let l = self.line().await?;
            if l.is_empty() {
                break;
            }
            let lower = l.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            } else if lower.starts_with("connection:") && lower.contains("close") {
                close = true;
            }
        }
        let mut out = Vec::new();
        if chunked {
            loop {
                let size = usize::from_str_radix(self.line().await?.split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| "bad chunk size")?;
                if size == 0 {
                    while !self.line().await?.is_empty() {}
                    break;
                }
                out.extend(self.exact(size).await?);
                self.line().await?;
            }
        } else if let Some(n) = length {
            out = self.exact(n).await?;
        }
        if close {
            self.stream = None;
        }
        Ok((status, String::from_utf8_lossy(&out).into_owned()))
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

fn el(name: &str, text: &str) -> String {
    format!("<m:{name}>{text}</m:{name}>")
}

fn attr(name: &str, value: &str) -> String {
    format!("<m:attribute>{}{}</m:attribute>", el("name", name), el("value", value))
}

/// One SOAP client: returns the sequence numbers of its acknowledged writes.
async fn soap_client(addr: SocketAddr, id: usize, stop: Arc<AtomicBool>, tally: Arc<Tally>) -> Vec<u64> {
    let mut h = Http::new(addr);
    let mut rng = Lcg(id as u64 + 7);
    let mut acked: Vec<u64> = Vec::new();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let dice = rng.next() % 100;
        if dice < 40 || acked.is_empty() {
            let entry = format!(
                "<m:entry>{}{}{}{}</m:entry>",
                el("name", &format!("s{id}_{seq}")),
                attr("client", &id.to_string()),
                attr("seq", &seq.to_string()),
                attr("payload", &format!("soap client {id} entry {seq}"))
            );
            match h.call("createEntry", &(el("schemaName", "/soak") + &entry)).await {
                Ok((200, _)) => {
                    acked.push(seq);
                    tally.writes.fetch_add(1, Ordering::Relaxed);
                }
                other => tally.error(format!("soap {id}: createEntry s{id}_{seq} -> {other:?}")),
            }
            seq += 1;
        } else if dice < 80 {
            let k = acked[(rng.next() as usize) % acked.len()];
            let inner = el("entryName", &format!("/soak/s{id}_{k}")) + &el("attributeName", "seq");
            match h.call("getAttributes", &inner).await {
                Ok((200, body)) if between(&body, "<value>", "</value>") == Some(&k.to_string()) => {
                    tally.reads.fetch_add(1, Ordering::Relaxed);
                }
                other => tally.error(format!("soap {id}: getAttributes s{id}_{k} -> {other:?}")),
            }
        } else if dice < 95 {
            // A paged query over the big collection: first page, then follow the tokens.
            let lo = rng.next() % (BIG_ROWS as u64 / 2);
            let inner = el("select", "/big:v")
                + &el("condition", &format!("/big:v &gt;= {lo}"))
                + &el("orderBy", "/big:v")
                + &el("pageSize", "400");
            let mut rows = 0usize;
            let mut r = h.call("query", &inner).await;
            let ok = loop {
                match &r {
                    Ok((200, body)) => {
                        rows += body.matches("<row>").count();
                        if between(body, "<more>", "</more>") != Some("true") {
                            break true;
                        }
                        let Some(token) = between(body, "<token>", "</token>") else { break false };
                        let next = el("token", token) + &el("pageSize", "400");
                        r = h.call("nextQuery", &next).await;
                    }
                    _ => break false,
                }
            };
            if ok && rows == BIG_ROWS - lo as usize {
                tally.streams.fetch_add(1, Ordering::Relaxed);
            } else {
                tally.error(format!("soap {id}: query from {lo}: {rows} rows, last {:?}", r.map(|(s, _)| s)));
            }
        } else {
            // Provoked: a missing collection (fault code 1).
            match h.call("getAttributes", &(el("entryName", "/nosuch/x") + &el("attributeName", "seq"))).await {
                Ok((500, body)) if body.contains("<code>1</code>") => {
                    tally.provoked.fetch_add(1, Ordering::Relaxed);
                }
                other => tally.error(format!("soap {id}: provoked fault -> {other:?}")),
            }
        }
    }
    acked
}

async fn soak(b: Backend) {
    let secs = soak_secs();
    // A hundred clients from one address, as from a frontend host: no per-address cap.
    let srv = TestServer::start_flags(b, &["--max-connections-per-peer", "0"]).await;
    let pid = srv.pid();
    let mut root = srv.raw().await;
    root.timeout = Duration::from_secs(300);
    ok(&mut root, "createdir /soak").await;
    ok(&mut root, "addattr /soak client int").await;
    ok(&mut root, "addattr /soak seq int").await;
    ok(&mut root, "addattr /soak payload text").await;
    ok(&mut root, "createdir /big").await;
    ok(&mut root, "addattr /big v int").await;
    let mut up = String::from("upload /big v\n");
    for i in 0..BIG_ROWS {
        up.push_str(&format!("put b{i} {i}\n"));
    }
    root.send(up.as_bytes()).await;
    ok(&mut root, "commit").await;

    // Memory samples every 250 ms: (seconds since start, kB).
    let samples: Arc<std::sync::Mutex<Vec<(f64, u64)>>> = Arc::default();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (samples, sampling) = (samples.clone(), sampling.clone());
        let t0 = Instant::now();
        std::thread::spawn(move || {
            while sampling.load(Ordering::Relaxed) {
                if let Some(kb) = proc_status_kb(pid, "VmRSS") {
                    samples.lock().expect("samples").push((t0.elapsed().as_secs_f64(), kb));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
        })
    };

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let mut tcp = Vec::new();
    for id in 0..TCP_CLIENTS {
        tcp.push((id, tokio::spawn(tcp_client(srv.tcp, id, stop.clone(), tally.clone()))));
    }
    let mut soap = Vec::new();
    for i in 0..SOAP_CLIENTS {
        let id = SOAP_BASE + i;
        soap.push((id, tokio::spawn(soap_client(srv.http, id, stop.clone(), tally.clone()))));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked: HashMap<(String, u64), ()> = HashMap::new();
    for (id, h) in tcp {
        for s in h.await.expect("tcp client task") {
            acked.insert((format!("t{id}"), s), ());
        }
    }
    for (id, h) in soap {
        for s in h.await.expect("soap client task") {
            acked.insert((format!("s{id}"), s), ());
        }
    }
    let elapsed = started.elapsed();
    sampling.store(false, Ordering::Relaxed);
    sampler.join().expect("sampler");

    // Every acknowledged write is there exactly once.
    let (code, lines) = root.lines("selectattr /soak:FILE /soak:seq ''").await;
    assert_eq!(code, 0, "reading back the writes failed");
    let mut seen: HashMap<(String, u64), u32> = HashMap::new();
    for pair in lines.chunks(2) {
        let [name, seq] = pair else { panic!("odd row count") };
        let prefix = name.split('_').next().unwrap_or_default().to_string();
        *seen.entry((prefix, seq.parse().expect("seq"))).or_default() += 1;
    }
    let lost = acked.keys().filter(|k| !seen.contains_key(*k)).count();
    let duplicated = seen.values().filter(|n| **n > 1).count();
    let unacked_present = seen.keys().filter(|k| !acked.contains_key(*k)).count();

    // Memory: the early value is the first sample after a warm-up of a sixth of the run.
    let samples = samples.lock().expect("samples").clone();
    let warm = (secs as f64 / 6.0).max(2.0) + samples.first().map(|s| s.0).unwrap_or(0.0);
    let early = samples.iter().find(|(t, _)| *t >= warm).map(|s| s.1).unwrap_or(0);
    let peak = samples.iter().filter(|(t, _)| *t >= warm).map(|s| s.1).max().unwrap_or(0);
    let first = samples.first().map(|s| s.1).unwrap_or(0);
    let ops = tally.ops();
    let errors = tally.errors.load(Ordering::Relaxed);
    let backend = format!("{b:?}").to_lowercase();
    let summary = format!(
        "soak backend={backend} secs={:.0} clients={} (tcp {TCP_CLIENTS}, soap {SOAP_CLIENTS}) ops={ops} ({:.0}/s: writes {} reads {} streams {} provoked {}) errors={errors} lost={lost} duplicated={duplicated} unacked_present={unacked_present} rss_start={}MB rss_early={}MB rss_peak={}MB",
        elapsed.as_secs_f64(),
        TCP_CLIENTS + SOAP_CLIENTS,
        ops as f64 / elapsed.as_secs_f64(),
        tally.writes.load(Ordering::Relaxed),
        tally.reads.load(Ordering::Relaxed),
        tally.streams.load(Ordering::Relaxed),
        tally.provoked.load(Ordering::Relaxed),
        first / 1024,
        early / 1024,
        peak / 1024,
    );
    println!("{summary}");
    eprintln!("{summary}");
    if let Ok(path) = std::env::var("ARDACAT_SOAK_REPORT") {
        let row = format!(
            "| {backend} | {:.0} | {} | {ops} | {:.0} | {} / {} / {} / {} | {errors} | {lost} | {duplicated} | {} | {} | {} |\n",
            elapsed.as_secs_f64(),
            TCP_CLIENTS + SOAP_CLIENTS,
            ops as f64 / elapsed.as_secs_f64(),
            tally.writes.load(Ordering::Relaxed),
            tally.reads.load(Ordering::Relaxed),
            tally.streams.load(Ordering::Relaxed),
            tally.provoked.load(Ordering::Relaxed),
            first / 1024,
            early / 1024,
            peak / 1024,
        );
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("report file");
        std::io::Write::write_all(&mut f, row.as_bytes()).expect("write report");
    }

    assert_eq!(errors, 0, "unexpected errors (first ones printed above)");
    assert_eq!(lost, 0, "acknowledged writes missing");
    assert_eq!(duplicated, 0, "writes present more than once");
    assert!(tally.writes.load(Ordering::Relaxed) > 0 && tally.streams.load(Ordering::Relaxed) > 0);
    assert!(early > 0, "no memory samples");
    assert!(peak < 2 * early, "RSS grew from {early} kB to {peak} kB");
    assert!(peak < 500 * 1024, "RSS peak {peak} kB");
    // The server is still fine.
    assert_eq!(ok(&mut root, "whoami").await, vec!["root"]);
}
