//! A minimal HTTP/1.1 client for the web interface tests (tests/ui.rs) and the WebDriver client
//! (tests/ui_browser.rs): one request per connection, chunked or sized bodies, a cookie jar of
//! the cookies the server set. Included with `#[path]` by the tests that use it.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    /// Header names in lower case; repeated headers (Set-Cookie) each kept.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn set_cookies(&self) -> Vec<&str> {
        self.headers.iter().filter(|(k, _)| k == "set-cookie").map(|(_, v)| v.as_str()).collect()
    }

    /// The value of `name="..."` in the first hidden input named `name`.
    pub fn hidden(&self, name: &str) -> Option<String> {
        let at = self.body.find(&format!("name=\"{name}\" value=\""))?;
        let rest = &self.body[at + name.len() + 15..];
        Some(rest[..rest.find('"')?].to_string())
    }
}

/// Percent-encodes a form or query value.
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn form(fields: &[(&str, &str)]) -> String {
    fields.iter().map(|(k, v)| format!("{}={}", enc(k), enc(v))).collect::<Vec<_>>().join("&")
}

/// Undoes the HTML escaping of the UI (for values read out of attributes).
pub fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// One request on a fresh connection.
pub async fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Resp {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.expect("send");
    // Read the head, then exactly the body (some servers keep the connection open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let n = s.read(&mut buf).await.expect("read");
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            let chunked = head.contains("transfer-encoding: chunked");
            let complete = match (length, chunked) {
                (Some(n), _) => raw.len() >= end + 4 + n,
                (None, true) => chunked_complete(&raw[end + 4..]),
                (None, false) => n == 0,
            };
            if complete || n == 0 {
                break;
            }
        } else if n == 0 {
            break;
        }
    }
    parse(&raw)
}

/// Has a chunked body arrived up to its last (empty) chunk?
fn chunked_complete(mut rest: &[u8]) -> bool {
    while let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") {
        let Ok(size) = usize::from_str_radix(String::from_utf8_lossy(&rest[..nl]).trim(), 16) else { return false };
        if size == 0 {
            return rest.len() >= nl + 4;
        }
        if rest.len() < nl + 2 + size + 2 {
            return false;
        }
        rest = &rest[nl + 2 + size + 2..];
    }
    false
}

fn parse(raw: &[u8]) -> Resp {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..nl]).trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[nl + 2..nl + 2 + size]);
            rest = &rest[nl + 2 + size + 2..];
        }
        body = out;
    }
    Resp { status, headers, body: String::from_utf8_lossy(&body).to_string() }
}

/// A browser-like client: keeps the cookies the server sets.
pub struct Web {
    pub addr: SocketAddr,
    pub cookies: HashMap<String, String>,
}

impl Web {
    pub fn new(addr: SocketAddr) -> Web {
        Web { addr, cookies: HashMap::new() }
    }

    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep(&mut self, r: &Resp) {
        for c in r.set_cookies() {
            let pair = c.split(';').next().unwrap_or("");
            if let Some((k, v)) = pair.split_once('=') {
                if v.is_empty() || c.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_string(), v.to_string());
                }
            }
        }
    }

    pub async fn get(&mut self, target: &str) -> Resp {
        let cookie = self.cookie_header();
        let r = request(self.addr, "GET", target, &[("Cookie", &cookie)], "").await;
        self.keep(&r);
        r
    }

    pub async fn post(&mut self, target: &str, fields: &[(&str, &str)]) -> Resp {
        let cookie = self.cookie_header();
        let body = form(fields);
        let r = request(
            self.addr,
            "POST",
            target,
            &[("Cookie", &cookie), ("Content-Type", "application/x-www-form-urlencoded")],
            &body,
        )
        .await;
        self.keep(&r);
        r
    }

    /// Logs in through the form; returns the response to the POST.
    pub async fn login(&mut self, user: &str, password: &str) -> Resp {
        let page = self.get("/ui/login").await;
        assert_eq!(page.status, 200, "{}", page.body);
        let csrf = page.hidden("csrf").expect("login form has a csrf field");
        self.post("/ui/login", &[("user", user), ("password", password), ("csrf", &csrf), ("next", "/ui/browse/")])
            .await
    }

    /// The CSRF token of the session (from any logged-in page).
    pub async fn csrf(&mut self) -> String {
        let r = self.get("/ui/status").await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.hidden("csrf").expect("logged-in pages carry the csrf token")
    }
}
