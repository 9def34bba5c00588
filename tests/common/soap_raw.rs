//! One SOAP 1.1 request over raw HTTP with Basic credentials, for the tests that speak SOAP to
//! several server processes (multi_process, replication); the SOAP suite has its own client.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const NS: &str = "urn:ardacat:metadata:1";

/// Sends operation `op` with body `inner` (elements in the `m:` namespace) as `user`; returns the
/// HTTP status and the whole response.
pub async fn soap(addr: SocketAddr, user: &str, pw: &str, op: &str, inner: &str) -> (u16, String) {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><m:{op} xmlns:m=\"{NS}\">{inner}</m:{op}></soap:Body></soap:Envelope>"
    );
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}"));
    let req = format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"{NS}#{op}\"\r\n\
         Authorization: Basic {auth}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out)).await.expect("answer").expect("read");
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}
