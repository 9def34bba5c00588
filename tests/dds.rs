//! Differential deserialization end to end: repeated same-shape SOAP requests take the fast
//! path (counted on /metrics) with shadow checking on, and a server with DDS off on the same
//! database gives byte-identical answers. Both backends.

mod common;

use std::net::SocketAddr;

use common::{Backend, TestDb, TestServer, ok};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NS: &str = "urn:ardacat:metadata:1";

fn auth() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("root:{}", common::ROOT_PASSWORD))
}

async fn post(addr: SocketAddr, body: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\n\
         Authorization: Basic {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        auth(),
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    // The body only: headers carry a date.
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

fn envelope(inner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><soap-env:Envelope xmlns:soap-env=\"http://schemas.xmlsoap.org/soap/envelope/\">\
         <soap-env:Body>{inner}</soap-env:Body></soap-env:Envelope>"
    )
}

fn set_attributes(entry: &str, status: &str, n: i64) -> String {
    envelope(&format!(
        "<ns0:setAttributes xmlns:ns0=\"{NS}\"><ns0:pattern>{entry}</ns0:pattern>\
         <ns0:attribute><ns0:name>status</ns0:name><ns0:value>{status}</ns0:value></ns0:attribute>\
         <ns0:attribute><ns0:name>n</ns0:name><ns0:value>{n}</ns0:value></ns0:attribute></ns0:setAttributes>"
    ))
}

fn get_all() -> String {
    envelope(&format!(
        "<ns0:getAttributes xmlns:ns0=\"{NS}\"><ns0:entryName>/d/*</ns0:entryName>\
         <ns0:attributeName>status</ns0:attributeName><ns0:attributeName>n</ns0:attributeName></ns0:getAttributes>"
    ))
}

async fn metric(server: &TestServer, name: &str) -> u64 {
    let mut s = TcpStream::connect(server.http).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("ardacat_{name} ")).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no {name} in metrics:\n{out}"))
}

async fn dds_on_and_off(backend: Backend) {
    let db = TestDb::new(backend).await;
    let shared = db.share();
    let on = TestServer::start_with(db, &["--soap-dds", "on"]).await;
    let off = TestServer::start_with(shared, &["--soap-dds", "off"]).await;
    let mut c = on.raw().await;
    ok(&mut c, "createdir /d").await;
    ok(&mut c, "addattr /d status varchar(40)").await;
    ok(&mut c, "addattr /d n int").await;
    ok(&mut c, "addentries /d/e0 /d/e1 /d/e2 /d/e3 /d/e4 /d/e5 /d/e6 /d/e7").await;
    // Job-manager style: the same request shape again and again with a few values changed,
    // values of changing length included.
    for i in 0..40i64 {
        let status = ["done", "running", "failed-with-a-longer-status", "x"][i as usize % 4];
        post(on.http, &set_attributes(&format!("/d/e{}", i % 8), status, i * 1000 - 7)).await;
    }
    let hits = metric(&on, "soap_dds_hits_total").await;
    assert!(hits >= 30, "DDS fast path taken only {hits} times");
    assert!(metric(&on, "soap_dds_shadow_checks_total").await >= hits);
    assert_eq!(metric(&on, "soap_dds_shadow_mismatches_total").await, 0);
    let a = post(on.http, &get_all()).await;
    let b = post(off.http, &get_all()).await;
    assert_eq!(a, b, "answers differ with DDS on and off");
    assert!(a.contains("failed-with-a-longer-status"), "{a}");
    // The same writes through the DDS-off server leave the same state.
    for i in 0..8i64 {
        post(off.http, &set_attributes(&format!("/d/e{i}"), "final", i)).await;
    }
    let a = post(on.http, &get_all()).await;
    let b = post(off.http, &get_all()).await;
    assert_eq!(a, b);
    let mut c = off.raw().await;
    assert_eq!(ok(&mut c, "getattr /d/e3 status n").await, vec!["e3", "final", "3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dds_sqlite() {
    dds_on_and_off(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dds_postgres() {
    dds_on_and_off(Backend::Postgres).await;
}
