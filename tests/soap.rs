//! End-to-end tests of the SOAP frontend over raw HTTP/1.1 (a tokio TcpStream and hand-written
//! envelopes; no SOAP library between the test and the server), on SQLite and PostgreSQL:
//! every operation, every fault kind, entry-level permissions, paging through 100k rows under
//! concurrent inserts, query token misuse and continuation across server processes, and hostile
//! input.

#[macro_use]
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine;
use common::*;
use quick_xml::events::Event;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NS: &str = "urn:ardacat:metadata:1";
const ENV11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const ENV12: &str = "http://www.w3.org/2003/05/soap-envelope";
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

// ------------------------------------------------------------------------------------------
// A minimal HTTP/1.1 client

#[derive(Debug)]
struct HttpResp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpResp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn doc(&self) -> Node {
        parse_xml(&self.text())
    }
}

/// One HTTP/1.1 connection; several requests may follow each other on it (keep-alive).
struct HttpConn {
    stream: TcpStream,
    buf: Vec<u8>,
    addr: SocketAddr,
}

impl HttpConn {
    async fn connect(addr: SocketAddr) -> HttpConn {
        let stream = TcpStream::connect(addr).await.expect("connect to the HTTP port");
        stream.set_nodelay(true).ok();
        HttpConn { stream, buf: Vec::new(), addr }
    }

    async fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResp {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-length")) {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut msg = head.into_bytes();
        msg.extend_from_slice(body);
        // A server may answer (and close) before reading everything: read the answer anyway.
        let _ = self.stream.write_all(&msg).await;
        self.read_response().await
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = vec![0u8; 65536];
        match tokio::time::timeout(Duration::from_secs(120), self.stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => false,
            Ok(Ok(n)) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(_) => panic!("timed out waiting for the server; have {:?}", String::from_utf8_lossy(&self.buf)),
        }
    }

    async fn read_line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return line;
            }
            assert!(
                self.fill().await,
                "connection closed in the response head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        }
    }

    async fn read_exact(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.fill().await, "connection closed in the response body");
        }
        self.buf.drain(..n).collect()
    }

    async fn read_response(&mut self) -> HttpResp {
        let status_line = self.read_line().await;
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.read_line().await;
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').expect("header line");
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let get = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        let body = if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            let mut body = Vec::new();
            loop {
                let size_line = self.read_line().await;
                let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                    .unwrap_or_else(|_| panic!("bad chunk size {size_line:?}"));
                if size == 0 {
                    // trailers
                    while !self.read_line().await.is_empty() {}
                    break;
                }
                body.extend(self.read_exact(size).await);
                assert!(self.read_line().await.is_empty(), "chunk not followed by CRLF");
            }
            body
        } else if let Some(n) = get("content-length") {
            let n: usize = n.parse().expect("content-length");
            self.read_exact(n).await
        } else {
            while self.fill().await {}
            std::mem::take(&mut self.buf)
        };
        HttpResp { status, headers, body }
    }
}

async fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResp {
    HttpConn::connect(addr).await.request(method, path, headers, body).await
}

// ------------------------------------------------------------------------------------------
// A tiny XML tree for reading responses

#[derive(Debug, Default, Clone)]
struct Node {
    name: String,
    ns: Option<String>,
    nil: bool,
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn find(&self, name: &str) -> Option<&Node> {
        if self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(name))
    }

    fn must(&self, name: &str) -> &Node {
        self.find(name).unwrap_or_else(|| panic!("no <{name}> in {self:#?}"))
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    fn texts(&self, name: &str) -> Vec<String> {
        self.all(name).map(|c| c.text.clone()).collect()
    }

    fn child_text(&self, name: &str) -> String {
        self.all(name).next().unwrap_or_else(|| panic!("no <{name}> child in {self:#?}")).text.clone()
    }

    fn value(&self) -> Option<String> {
        if self.nil { None } else { Some(self.text.clone()) }
    }
}

fn parse_xml(text: &str) -> Node {
    let mut reader = quick_xml::NsReader::from_str(text);
    reader.config_mut().expand_empty_elements = true;
    let mut stack: Vec<Node> = vec![Node::default()];
    loop {
        match reader.read_resolved_event().unwrap_or_else(|e| panic!("bad XML from the server: {e}\n{text}")) {
            (ns, Event::Start(e)) => {
                let mut n = Node { name: e.local_name().as_ref().to_string(), ..Node::default() };
                if let quick_xml::name::ResolveResult::Bound(ns) = ns {
                    n.ns = Some(ns.as_ref().to_string());
                }
                for a in e.attributes() {
                    let a = a.expect("attribute");
                    if a.key.local_name().as_ref() == "nil" && matches!(&*a.value, "true" | "1") {
                        n.nil = true;
                    }
                }
                stack.push(n);
            }
            (_, Event::End(_)) => {
                let n = stack.pop().expect("balanced");
                stack.last_mut().expect("parent").children.push(n);
            }
            (_, Event::Text(t)) => {
                stack.last_mut().expect("node").text.push_str(&t.xml10_content());
            }
            (_, Event::CData(t)) => {
                stack.last_mut().expect("node").text.push_str(&t.xml10_content());
            }
            (_, Event::GeneralRef(r)) => {
                let s = if r.is_char_ref() {
                    r.resolve_char_ref().expect("char ref").expect("char").to_string()
                } else {
                    match &*r {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "apos" => "'",
                        "quot" => "\"",
                        other => panic!("unknown entity {other}"),
                    }
                    .to_string()
                };
                stack.last_mut().expect("node").text.push_str(&s);
            }
            (_, Event::Eof) => break,
            _ => {}
        }
    }
    stack.pop().expect("document")
}

// ------------------------------------------------------------------------------------------
// Envelopes

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    V11,
    V12,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn envelope(v: V, op: &str, inner: &str) -> String {
    let env = if v == V::V11 { ENV11 } else { ENV12 };
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"{env}\" xmlns:xsi=\"{XSI}\"><soap:Body><m:{op} xmlns:m=\"{NS}\">{inner}</m:{op}></soap:Body></soap:Envelope>"
    )
}

fn el(name: &str, text: &str) -> String {
    format!("<m:{name}>{}</m:{name}>", esc(text))
}

fn els(name: &str, texts: &[&str]) -> String {
    texts.iter().map(|t| el(name, t)).collect()
}

fn attr_def(name: &str, t: &str) -> String {
    format!("<m:attribute>{}{}</m:attribute>", el("name", name), el("type", t))
}

fn attr_val(name: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("<m:attribute>{}{}</m:attribute>", el("name", name), el("value", v)),
        None => format!("<m:attribute>{}<m:value xsi:nil=\"true\"/></m:attribute>", el("name", name)),
    }
}

fn entry(name: &str, attrs: &[(&str, Option<&str>)]) -> String {
    let a: String = attrs.iter().map(|(n, v)| attr_val(n, *v)).collect();
    format!("<m:entry>{}{a}</m:entry>", el("name", name))
}

fn basic(user: &str, pw: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}")))
}

/// A SOAP caller with fixed credentials and SOAP version.
#[derive(Clone)]
struct Client {
    addr: SocketAddr,
    auth: Option<String>,
    v: V,
}

#[derive(Debug)]
struct FaultInfo {
    status: u16,
    /// `Client`, `Server`, `Sender`, `Receiver`, `MustUnderstand`, `VersionMismatch`.
    fault_code: String,
    code: Option<i32>,
    kind: Option<String>,
    message: String,
}

impl Client {
    fn root(srv: &TestServer) -> Client {
        Client { addr: srv.http, auth: Some(basic("root", ROOT_PASSWORD)), v: V::V11 }
    }

    fn user(srv: &TestServer, user: &str, pw: &str) -> Client {
        Client { addr: srv.http, auth: Some(basic(user, pw)), v: V::V11 }
    }

    fn v12(&self) -> Client {
        Client { v: V::V12, ..self.clone() }
    }

    fn headers(&self, op: &str) -> Vec<(String, String)> {
        let mut h = Vec::new();
        match self.v {
            V::V11 => {
                h.push(("Content-Type".into(), "text/xml; charset=utf-8".into()));
                h.push(("SOAPAction".into(), format!("\"{NS}#{op}\"")));
            }
            V::V12 => {
                h.push(("Content-Type".into(), format!("application/soap+xml; charset=utf-8; action=\"{NS}#{op}\"")));
            }
        }
        if let Some(a) = &self.auth {
            h.push(("Authorization".into(), a.clone()));
        }
        h
    }

    async fn call(&self, op: &str, inner: &str) -> HttpResp {
        let h = self.headers(op);
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        http(self.addr, "POST", "/soap", &h, envelope(self.v, op, inner).as_bytes()).await
    }

    /// Expects success; returns the response wrapper element.
    async fn ok(&self, op: &str, inner: &str) -> Node {
        let r = self.call(op, inner).await;
        assert_eq!(r.status, 200, "{op} failed: {}", r.text());
        let ct = r.header("content-type").unwrap_or_default().to_string();
        let want = if self.v == V::V11 { "text/xml" } else { "application/soap+xml" };
        assert!(ct.starts_with(want), "{op}: content-type {ct}");
        let doc = r.doc();
        let body = doc.must("Body");
        let resp = body.children.first().unwrap_or_else(|| panic!("{op}: empty Body"));
        assert_eq!(resp.name, format!("{op}Response"), "{}", r.text());
        assert_eq!(resp.ns.as_deref(), Some(NS));
        resp.clone()
    }

    async fn fault(&self, op: &str, inner: &str) -> FaultInfo {
        fault_of(&self.call(op, inner).await)
    }

    /// Expects a `MetadataFault` with this code; checks the HTTP status for the version.
    async fn fails(&self, op: &str, inner: &str, code: i32) -> FaultInfo {
        let f = self.fault(op, inner).await;
        assert_eq!(f.code, Some(code), "{op}: expected code {code}, got {f:?}");
        assert!(!f.message.is_empty(), "{f:?}");
        let expected_status = match (self.v, f.fault_code.as_str()) {
            (V::V12, "Sender") => 400,
            _ => 500,
        };
        assert_eq!(f.status, expected_status, "{f:?}");
        f
    }
}

fn fault_of(r: &HttpResp) -> FaultInfo {
    let doc = r.doc();
    let fault = doc.find("Fault").unwrap_or_else(|| panic!("not a fault (HTTP {}): {}", r.status, r.text()));
    let fault_code = match fault.find("faultcode") {
        Some(c) => c.text.clone(),
        None => fault.must("Code").must("Value").text.clone(),
    };
    let fault_code = fault_code.rsplit(':').next().unwrap_or_default().to_string();
    let message = match fault.find("faultstring") {
        Some(s) => s.text.clone(),
        None => fault.must("Reason").must("Text").text.clone(),
    };
    let detail = fault.find("MetadataFault");
    FaultInfo {
        status: r.status,
        fault_code,
        code: detail.map(|d| d.child_text("code").parse().expect("numeric code")),
        kind: detail.map(|d| d.child_text("kind")),
        message,
    }
}

#[derive(Debug)]
struct Page {
    token: Option<String>,
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
    more: bool,
}

fn page_of(resp: &Node) -> Page {
    let r = resp.must("result");
    Page {
        token: r.all("token").next().map(|t| t.text.clone()),
        columns: r.texts("column"),
        rows: r.all("row").map(|row| row.all("value").map(Node::value).collect()).collect(),
        more: r.child_text("more") == "true",
    }
}

/// getAttributes → [(entry name, [(attribute, value)])]
type Entries = Vec<(String, Vec<(String, Option<String>)>)>;

fn entries_of(resp: &Node) -> Entries {
    resp.all("entry")
        .map(|e| {
            (
                e.child_text("name"),
                e.all("attribute").map(|a| (a.child_text("name"), a.must("value").value())).collect(),
            )
        })
        .collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

async fn get(c: &Client, names: &[&str], attrs: &[&str]) -> Entries {
    entries_of(&c.ok("getAttributes", &(els("entryName", names) + &els("attributeName", attrs))).await)
}

async fn schemas(c: &Client, path: Option<&str>) -> Vec<String> {
    c.ok("listSchemas", &path.map(|p| el("path", p)).unwrap_or_default()).await.texts("schemaName")
}

async fn describe(c: &Client, schema: &str) -> Vec<(String, String)> {
    let r = c.ok("describeSchema", &el("schemaName", schema)).await;
    r.all("attribute").map(|a| (a.child_text("name"), a.child_text("type"))).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn write_config(dir: &tempfile::TempDir, text: &str) -> String {
    let p = dir.path().join("ardacat.toml");
    std::fs::write(&p, text).expect("write config");
    p.display().to_string()
}

// ------------------------------------------------------------------------------------------
// Every operation

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation() {
    for b in BACKENDS {
        every_operation_on(b).await;
    }
}

async fn every_operation_on(b: Backend) {
    let srv = TestServer::start(b).await;
    let c = Client::root(&srv);
    let c12 = c.v12();

    // WSDL with the real address, from the Host header or the bound address.
    for path in ["/soap?wsdl", "/soap?WSDL", "/soap.wsdl"] {
        let r = http(srv.http, "GET", path, &[], b"").await;
        assert_eq!(r.status, 200, "{path}");
        let t = r.text();
        assert_eq!(t.matches(&format!("location=\"http://{}/soap\"", srv.http)).count(), 2, "{path}: {t}");
        assert!(!t.contains("localhost:8823"));
    }
    let r = http(srv.http, "GET", "/soap?wsdl", &[("Host", "md.example.org:9443")], b"").await;
    assert_eq!(r.text().matches("location=\"http://md.example.org:9443/soap\"").count(), 2);
    // A Host header that is not a plain host[:port] is not copied into the WSDL.
    let r = http(srv.http, "GET", "/soap?wsdl", &[("Host", "a\"b")], b"").await;
    assert!(r.status != 200 || !r.text().contains("a\"b"));

    // gzip on request (Accept-Encoding), plain otherwise.
    let r = http(srv.http, "GET", "/soap.wsdl", &[("Accept-Encoding", "gzip")], b"").await;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert!(r.body.starts_with(&[0x1f, 0x8b]));
    let auth = basic("root", ROOT_PASSWORD);
    let r = http(
        srv.http,
        "POST",
        "/soap",
        &[("Content-Type", "text/xml"), ("Authorization", &auth), ("Accept-Encoding", "gzip, deflate")],
        envelope(V::V11, "getVersion", "").as_bytes(),
    )
    .await;
    assert_eq!((r.status, r.header("content-encoding")), (200, Some("gzip")));

    // ping / getVersion, both SOAP versions on the same address.
    c.ok("ping", "").await;
    c12.ok("ping", "").await;
    let v = c.ok("getVersion", "").await.child_text("version");
    assert!(v.contains("ardacat"), "{v}");

    // createSchema: collection + typed attributes.
    c.ok(
        "createSchema",
        &(el("schemaName", "/t")
            + &attr_def("size", "int")
            + &attr_def("label", "varchar(40)")
            + &attr_def("w", "float")),
    )
    .await;
    assert_eq!(describe(&c, "/t").await, pairs(&[("size", "int"), ("label", "varchar(40)"), ("w", "float")]));
    // One transaction: a failing attribute leaves no collection behind.
    c.fails("createSchema", &(el("schemaName", "/t2") + &attr_def("a", "int") + &attr_def("a", "int")), 15).await;
    c.fails("createSchema", &(el("schemaName", "/t3") + &attr_def("a", "nosuchtype")), 18).await;
    c.fails("createSchema", &(el("schemaName", "/t4") + &format!("<m:attribute>{}</m:attribute>", el("name", "a"))), 3)
        .await;
    assert_eq!(schemas(&c, None).await, vec!["/t".to_string()]);
    // plain vs inherited attributes.
    c.ok("createSchema", &(el("schemaName", "/t/sub") + &el("plain", "true"))).await;
    assert!(describe(&c, "/t/sub").await.is_empty());
    c.ok("createSchema", &el("schemaName", "/t/sub2")).await;
    assert_eq!(describe(&c, "/t/sub2").await.len(), 3);
    assert_eq!(schemas(&c, Some("/t")).await, vec!["/t/sub".to_string(), "/t/sub2".to_string()]);
    c.ok("dropSchema", &el("schemaName", "/t/sub")).await;
    c.ok("dropSchema", &el("schemaName", "/t/sub2")).await;
    assert!(schemas(&c, Some("/t")).await.is_empty());

    // add/removeSchemaAttributes, atomically.
    c.ok("addSchemaAttributes", &(el("schemaName", "/t") + &attr_def("x", "text") + &attr_def("y", "int"))).await;
    assert_eq!(describe(&c, "/t").await.len(), 5);
    c.ok("removeSchemaAttributes", &(el("schemaName", "/t") + &els("attributeName", &["x", "y"]))).await;
    assert_eq!(describe(&c, "/t").await.len(), 3);
    c.fails("addSchemaAttributes", &(el("schemaName", "/t") + &attr_def("z", "int") + &attr_def("size", "int")), 15)
        .await;
    c.fails("removeSchemaAttributes", &(el("schemaName", "/t") + &els("attributeName", &["w", "nosuch"])), 10).await;
    assert_eq!(describe(&c, "/t").await, pairs(&[("size", "int"), ("label", "varchar(40)"), ("w", "float")]));

    // createEntry: different attribute sets in one request, NULLs, names relative to the schema.
    let tricky = "a\"b\\c<&>'";
    let created = c
        .ok(
            "createEntry",
            &(el("schemaName", "/t")
                + &entry("f1", &[("size", Some("1")), ("label", Some("one"))])
                + &entry("f2", &[("size", Some("2"))])
                + &entry("f3", &[("label", Some(tricky)), ("size", Some("3"))])
                + &entry("f4", &[("label", None), ("size", Some("4"))])
                + &entry("/t/f5", &[])),
        )
        .await
        .child_text("created");
    assert_eq!(created, "5");
    // All or nothing: g2's bad int undoes g1.
    c.fails(
        "createEntry",
        &(el("schemaName", "/t") + &entry("g1", &[("size", Some("1"))]) + &entry("g2", &[("size", Some("zz"))])),
        18,
    )
    .await;
    c.fails("getAttributes", &el("entryName", "/t/g1"), 1).await;
    c.fails("createEntry", &(el("schemaName", "/t") + &entry("g3", &[]) + &entry("f1", &[])), 15).await;
    c.fails("getAttributes", &el("entryName", "/t/g3"), 1).await;

    // getAttributes: entries in request order, attributes in the requested order.
    assert_eq!(
        get(&c, &["/t/f3", "/t/f1"], &["label", "size"]).await,
        vec![
            ("/t/f3".to_string(), vec![("label".to_string(), s(tricky)), ("size".to_string(), s("3"))]),
            ("/t/f1".to_string(), vec![("label".to_string(), s("one")), ("size".to_string(), s("1"))]),
        ]
    );
    let all = get(&c, &["/t/f*"], &["size"]).await;
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["/t/f1", "/t/f2", "/t/f3", "/t/f4", "/t/f5"]);
    assert_eq!(all[4].1, vec![("size".to_string(), None)]);
    let whole = get(&c, &["/t"], &[]).await;
    assert_eq!(whole.len(), 5);
    assert_eq!(whole[3].1, vec![("size".into(), s("4")), ("label".into(), None), ("w".into(), None)]);
    // SOAP 1.2 works the same.
    assert_eq!(entries_of(&c12.ok("getAttributes", &el("entryName", "/t/f2")).await).len(), 1);

    // listAttributes of an entry.
    let la = c.ok("listAttributes", &el("entryName", "/t/f1")).await;
    assert_eq!(la.all("attribute").map(|a| a.child_text("name")).collect::<Vec<_>>(), ["size", "label", "w"]);

    // setAttributes without a condition: setattr (+ clearattr for NULLs).
    assert_eq!(
        c.ok("setAttributes", &(el("pattern", "/t/f1") + &attr_val("size", Some("10")))).await.child_text("updated"),
        "1"
    );
    c.ok("setAttributes", &(el("pattern", "/t/f1") + &attr_val("label", None) + &attr_val("size", Some("11")))).await;
    assert_eq!(
        get(&c, &["/t/f1"], &["size", "label"]).await[0].1,
        vec![("size".into(), s("11")), ("label".into(), None)]
    );
    c.fails("setAttributes", &(el("pattern", "/t/f1") + &attr_val("label", None) + &attr_val("size", Some("x"))), 18)
        .await;
    assert_eq!(get(&c, &["/t/f1"], &["size"]).await[0].1, vec![("size".into(), s("11"))]);
    // With a condition: updateattr with quoted literals (quotes and backslashes survive).
    let q = "q\"x\\y 'z'";
    let n = c
        .ok(
            "setAttributes",
            &(el("pattern", "/t/*") + &el("condition", "size > 2 and size < 5") + &attr_val("label", Some(q))),
        )
        .await
        .child_text("updated");
    assert_eq!(n, "2");
    let got = get(&c, &["/t/f3", "/t/f4", "/t/f2"], &["label"]).await;
    assert_eq!(got.iter().map(|(_, a)| a[0].1.clone()).collect::<Vec<_>>(), vec![s(q), s(q), None]);
    c.ok("setAttributes", &(el("pattern", "/t/*") + &el("condition", "size = 3") + &attr_val("w", Some("2.5")))).await;
    assert_eq!(get(&c, &["/t/f3"], &["w"]).await[0].1[0].1, s("2.5"));

    // clearAttributes.
    assert_eq!(
        c.ok("clearAttributes", &(el("pattern", "/t/f3") + &el("attributeName", "label"))).await.child_text("cleared"),
        "1"
    );
    assert_eq!(get(&c, &["/t/f3"], &["label"]).await[0].1[0].1, None);

    // query / nextQuery / endQuery.
    let q = els("select", &["/t:FILE", "/t:size"]) + &el("condition", "/t:size > 0") + &el("orderBy", "/t:size desc");
    let p1 = page_of(&c.ok("query", &(q.clone() + &el("pageSize", "3"))).await);
    assert_eq!(p1.columns, ["/t:FILE", "/t:size"]);
    assert_eq!(p1.rows, vec![vec![s("f1"), s("11")], vec![s("f4"), s("4")], vec![s("f3"), s("3")]]);
    assert!(p1.more);
    let t1 = p1.token.clone().expect("token");
    let p2 = page_of(&c.ok("nextQuery", &(el("token", &t1) + &el("pageSize", "3"))).await);
    assert_eq!(p2.rows, vec![vec![s("f2"), s("2")]]);
    assert!(!p2.more);
    assert!(p2.token.is_none());
    // The same token again gives the same page (tokens are positions, not iterators)...
    let again = page_of(&c12.ok("nextQuery", &el("token", &t1)).await);
    assert_eq!(again.rows, p2.rows);
    // ...until endQuery releases it.
    c.ok("endQuery", &el("token", &t1)).await;
    let f = c.fails("nextQuery", &el("token", &t1), 1).await;
    assert_eq!(f.kind.as_deref(), Some("NotExistsException"));
    // No pageSize: the default page holds everything here.
    let all = page_of(&c.ok("query", &q).await);
    assert_eq!(all.rows.len(), 4);
    assert!(!all.more && all.token.is_none());
    // Nothing matches: an empty page, no token.
    let none = page_of(&c.ok("query", &(els("select", &["/t:FILE"]) + &el("condition", "/t:size > 100"))).await);
    assert!(none.rows.is_empty() && !none.more);

    // removeEntry: by pattern and by condition.
    assert_eq!(c.ok("removeEntry", &el("pattern", "/t/f5")).await.child_text("removed"), "1");
    assert_eq!(
        c.ok("removeEntry", &(el("pattern", "/t/*") + &el("condition", "size = 2"))).await.child_text("removed"),
        "1"
    );
    let left = get(&c, &["/t/*"], &[]).await;
    assert_eq!(left.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["/t/f1", "/t/f3", "/t/f4"]);
    c.fails("removeEntry", &el("pattern", "/t/f5"), 1).await;

    // dropSchema: only empty collections.
    c.fails("dropSchema", &el("schemaName", "/t"), 11).await;
    c.ok("createSchema", &el("schemaName", "/empty")).await;
    c.ok("dropSchema", &el("schemaName", "/empty")).await;
    assert_eq!(schemas(&c, None).await, vec!["/t".to_string()]);

    // No SOAPAction at all (and an unquoted one) is fine: dispatch is on the body element.
    let r = http(
        srv.http,
        "POST",
        "/soap",
        &[("Content-Type", "text/xml"), ("Authorization", &auth)],
        envelope(V::V11, "ping", "").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http(
        srv.http,
        "POST",
        "/soap",
        &[("Content-Type", "text/xml"), ("SOAPAction", "urn:whatever"), ("Authorization", &auth)],
        envelope(V::V11, "ping", "").as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // HTTP/1.1 keep-alive: several requests on one connection, faults included.
    let mut conn = HttpConn::connect(srv.http).await;
    for i in 0..5 {
        let op = if i % 2 == 0 { "ping" } else { "describeSchema" };
        let inner = if i % 2 == 0 { String::new() } else { el("schemaName", "/nosuch") };
        let r = conn
            .request(
                "POST",
                "/soap",
                &[("Content-Type", "text/xml; charset=utf-8"), ("Authorization", &auth)],
                envelope(V::V11, op, &inner).as_bytes(),
            )
            .await;
        assert_eq!(r.status, if i % 2 == 0 { 200 } else { 500 });
        assert!(!r.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close")));
    }
}

// ------------------------------------------------------------------------------------------
// Faults

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_kind() {
    for b in BACKENDS {
        every_fault_kind_on(b).await;
    }
}

async fn every_fault_kind_on(b: Backend) {
    let srv = TestServer::start(b).await;
    let c = Client::root(&srv);
    let mut tcp = srv.raw().await;
    ok(&mut tcp, "user_create bob bobpw").await;
    let bob = Client::user(&srv, "bob", "bobpw");

    c.ok("createSchema", &(el("schemaName", "/f") + &attr_def("n", "int"))).await;
    c.ok("createEntry", &(el("schemaName", "/f") + &entry("e1", &[("n", Some("1"))]))).await;

    // AuthorizationException (4): bob may read /f but not write / or /f.
    let f = bob.fails("createSchema", &el("schemaName", "/bobs"), 4).await;
    assert_eq!(f.kind.as_deref(), Some("AuthorizationException"));
    assert_eq!(f.fault_code, "Client");
    bob.fails("createEntry", &(el("schemaName", "/f") + &entry("e9", &[])), 4).await;
    bob.fails("setAttributes", &(el("pattern", "/f/e1") + &attr_val("n", Some("5"))), 4).await;
    assert_eq!(get(&bob, &["/f/e1"], &["n"]).await[0].1[0].1, s("1"));

    // ExistsException: 16 (collection exists), 15 (entry/attribute exists).
    let f = c.fails("createSchema", &el("schemaName", "/f"), 16).await;
    assert_eq!(f.kind.as_deref(), Some("ExistsException"));
    let f = c.fails("createEntry", &(el("schemaName", "/f") + &entry("e1", &[])), 15).await;
    assert_eq!(f.kind.as_deref(), Some("ExistsException"));
    c.fails("addSchemaAttributes", &(el("schemaName", "/f") + &attr_def("N", "int")), 15).await;

    // NotExistsException: 1 (no such entry/collection), 10 (no such attribute).
    let f = c.fails("getAttributes", &el("entryName", "/nope/x"), 1).await;
    assert_eq!(f.kind.as_deref(), Some("NotExistsException"));
    c.fails("describeSchema", &el("schemaName", "/nope"), 1).await;
    c.fails("dropSchema", &el("schemaName", "/nope"), 1).await;
    let f = c.fails("getAttributes", &(el("entryName", "/f/e1") + &el("attributeName", "nosuch")), 10).await;
    assert_eq!(f.kind.as_deref(), Some("NotExistsException"));
    // A missing entry with an unknown attribute: the entry's fault comes first (the collection is
    // found by the entry's lookup, before the attributes are checked).
    c.fails("getAttributes", &(el("entryName", "/f/missing") + &el("attributeName", "nosuch")), 1).await;
    c.fails("getAttributes", &(el("entryName", "/nope/x") + &el("attributeName", "nosuch")), 1).await;
    c.fails("clearAttributes", &(el("pattern", "/f/e1") + &el("attributeName", "nosuch")), 10).await;

    // InvalidArgumentException: 3 (bad command/argument or bad request), 8 (bad query), 18 (bad value).
    let f = c.fails("createSchema", &el("schemaName", "/bad*name"), 3).await;
    assert_eq!(f.kind.as_deref(), Some("InvalidArgumentException"));
    c.fails("setAttributes", &el("pattern", "/f/e1"), 3).await;
    let f = c.fails("query", &(el("select", "/f:n") + &el("condition", "n >")), 8).await;
    assert_eq!(f.kind.as_deref(), Some("InvalidArgumentException"));
    c.fails("query", &(el("select", "/f:n") + &el("condition", "n = 1") + &el("orderBy", "((")), 8).await;
    let f = c.fails("createEntry", &(el("schemaName", "/f") + &entry("e2", &[("n", Some("1.5x"))])), 18).await;
    assert_eq!(f.kind.as_deref(), Some("InvalidArgumentException"));
    // A request the contract does not allow (wrong element order) is a Client fault, code 3.
    let f = c.fails("createSchema", &(attr_def("a", "int") + &el("schemaName", "/x")), 3).await;
    assert_eq!(f.fault_code, "Client");
    let f = c.fails("query", &(el("select", "/f:n") + &el("pageSize", "-1")), 3).await;
    assert_eq!(f.kind.as_deref(), Some("InvalidArgumentException"));

    // SOAP 1.2: Sender faults are HTTP 400, with the same detail.
    let c12 = c.v12();
    let f = c12.fails("getAttributes", &el("entryName", "/nope/x"), 1).await;
    assert_eq!((f.status, f.fault_code.as_str()), (400, "Sender"));
    let f = bob.v12().fails("createSchema", &el("schemaName", "/bobs"), 4).await;
    assert_eq!((f.status, f.fault_code.as_str()), (400, "Sender"));
    let r = c12.call("createSchema", &el("schemaName", "/f")).await;
    assert_eq!(r.status, 400);
    assert!(r.header("content-type").unwrap_or_default().starts_with("application/soap+xml"));

    // HTTP Basic: missing or wrong credentials → 401 with a challenge.
    for auth in [None, Some(basic("root", "wrong")), Some(basic("nobody", "x")), Some("Basic %%%".to_string())] {
        let anon = Client { addr: srv.http, auth, v: V::V11 };
        let r = anon.call("ping", "").await;
        assert_eq!(r.status, 401, "{}", r.text());
        assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"ardacat\""));
    }
    // A successful login is cached; a wrong password for the same user still fails.
    c.ok("ping", "").await;
    assert_eq!(Client { auth: Some(basic("root", "nope")), ..c.clone() }.call("ping", "").await.status, 401);
    c.ok("ping", "").await;

    // Nothing of the failed calls changed anything.
    assert_eq!(schemas(&c, None).await, vec!["/f".to_string()]);
    assert_eq!(get(&c, &["/f/*"], &["n"]).await, vec![("/f/e1".to_string(), vec![("n".to_string(), s("1"))])]);
    drop(srv);

    // allow_anonymous: no credentials → user `anonymous` (who may read, not write).
    let srv = TestServer::start_with(TestDb::new(b).await, &["--allow-anonymous", "true"]).await;
    let anon = Client { addr: srv.http, auth: None, v: V::V11 };
    anon.ok("ping", "").await;
    assert!(schemas(&anon, None).await.is_empty());
    anon.fails("createSchema", &el("schemaName", "/anon"), 4).await;
    // Wrong credentials are still refused.
    assert_eq!(Client { auth: Some(basic("root", "nope")), ..anon.clone() }.call("ping", "").await.status, 401);
}

// ------------------------------------------------------------------------------------------
// Paging through 100k rows while rows are being inserted

const BIG: usize = 100_000;

// ------------------------------------------------------------------------------------------
// Entry-level permissions

on_both_backends!(entry_permissions);

/// SOAP requests have no session to keep a `getAttributes` plan in, so they borrow plans of the
/// same shape from a shelf the catalogue shares between requests; whatever a plan was made from
/// — the collection, its schema, the attribute names and their order, the caller and the
/// caller's groups — still changes the very next request's answer, as a fresh plan would.
async fn repeated_get_attributes_follow_every_change(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut tcp = srv.raw().await;
    for line in REPEATED_GETATTR_SETUP {
        ok(&mut tcp, line).await;
    }
    let root = Client::root(&srv);
    let row = |name: &str, values: &[(&str, &str)]| {
        (name.to_string(), values.iter().map(|(a, v)| (a.to_string(), s(v))).collect::<Vec<_>>())
    };
    let before = getattr_plans(&mut tcp).await;
    for _ in 0..2 {
        assert_eq!(get(&root, &["/g/e1"], &["n", "s"]).await, [row("/g/e1", &[("n", "1"), ("s", "one")])]);
        assert_eq!(get(&root, &["/g/e2"], &["n", "s"]).await, [row("/g/e2", &[("n", "2"), ("s", "two")])]);
    }
    // One request after another: the first builds the plan, the other three borrow it.
    let after = getattr_plans(&mut tcp).await;
    assert_eq!(
        (after.session - before.session, after.shared - before.shared, after.built - before.built),
        (0, 3, 1),
        "{before:?} → {after:?}"
    );
    let both = [row("/g/e1", &[("n", "1"), ("s", "one")]), row("/g/e2", &[("n", "2"), ("s", "two")])];
    assert_eq!(get(&root, &["/g/e*"], &["n", "s"]).await, both);
    // The same names in another collection, and in another order.
    assert_eq!(get(&root, &["/h/e1"], &["n", "s"]).await, [row("/h/e1", &[("n", "9"), ("s", "nine")])]);
    assert_eq!(get(&root, &["/g/e1"], &["s", "n"]).await, [row("/g/e1", &[("s", "one"), ("n", "1")])]);
    root.fails("getAttributes", &(el("entryName", "/g/e1") + &els("attributeName", &["s", "nosuch"])), 10).await;
    root.fails("getAttributes", &(el("entryName", "/g/e9") + &els("attributeName", &["s", "n"])), 1).await;
    assert_eq!(get(&root, &["/g/e1"], &["s", "n"]).await, [row("/g/e1", &[("s", "one"), ("n", "1")])]);
    // The schema changes under the same names: `s` is now another attribute of another type.
    ok(&mut tcp, "removeattr /g s").await;
    root.fails("getAttributes", &(el("entryName", "/g/e1") + &els("attributeName", &["s", "n"])), 10).await;
    ok(&mut tcp, "addattr /g s int").await;
    ok(&mut tcp, "setattr /g/e1 s 5").await;
    assert_eq!(get(&root, &["/g/e1"], &["s", "n"]).await, [row("/g/e1", &[("s", "5"), ("n", "1")])]);
    // Changes made in a transaction of another session show once it commits.
    ok(&mut tcp, "transaction").await;
    ok(&mut tcp, "removeattr /g s").await;
    ok(&mut tcp, "addattr /g s varchar(9)").await;
    ok(&mut tcp, "setattr /g/e1 s five").await;
    ok(&mut tcp, "commit").await;
    assert_eq!(get(&root, &["/g/e1"], &["s", "n"]).await, [row("/g/e1", &[("s", "five"), ("n", "1")])]);

    // The caller: bob reads e2 only through his group.
    ok(&mut tcp, "chmod /g rwxr-xr-x").await;
    ok(&mut tcp, "chown /g/e2 root:team").await;
    ok(&mut tcp, "chmod /g/e2 rw-r-----").await;
    let bob = Client::user(&srv, "bob", "bpw");
    assert_eq!(get(&root, &["/g/e1"], &["n"]).await, [row("/g/e1", &[("n", "1")])]);
    let before = getattr_plans(&mut tcp).await;
    assert_eq!(get(&bob, &["/g/e1"], &["n"]).await, [row("/g/e1", &[("n", "1")])]);
    bob.fails("getAttributes", &(el("entryName", "/g/e2") + &el("attributeName", "n")), 4).await;
    // Root's plan of these names is on the shelf but not lent to bob: his first request builds
    // his own, his second borrows it.
    let after = getattr_plans(&mut tcp).await;
    assert_eq!((after.shared - before.shared, after.built - before.built), (1, 1), "{before:?} → {after:?}");
    ok(&mut tcp, "grp_adduser team bob").await;
    assert_eq!(get(&bob, &["/g/e2"], &["n"]).await, [row("/g/e2", &[("n", "2")])]);
    ok(&mut tcp, "grp_removeuser team bob").await;
    bob.fails("getAttributes", &(el("entryName", "/g/e2") + &el("attributeName", "n")), 4).await;
    // Root's plan of the same shape reads everything; bob's still does not.
    assert_eq!(get(&root, &["/g/e2"], &["n"]).await, [row("/g/e2", &[("n", "2")])]);
    bob.fails("getAttributes", &(el("entryName", "/g/e2") + &el("attributeName", "n")), 4).await;
    assert_eq!(get(&bob, &["/g/*"], &["n"]).await, [row("/g/e1", &[("n", "1")])]);
}

on_both_backends!(repeated_get_attributes_follow_every_change);

/// Entry modes and ACLs over SOAP: getAttributes, query/nextQuery and setAttributes/
/// clearAttributes see and touch only what the caller may; a named entry it may not use is an
/// AuthorizationException.
async fn entry_permissions(b: Backend) {
    let srv = TestServer::start(b).await;
    let mut tcp = srv.raw().await;
    ok(&mut tcp, "user_create alice apw").await;
    ok(&mut tcp, "user_create bob bpw").await;
    ok(&mut tcp, "createdir /p").await;
    ok(&mut tcp, "addattr /p n int").await;
    ok(&mut tcp, "chmod /p rwxrwxrwx").await;
    let mut alice = srv.raw_as("alice", "apw").await;
    for i in 1..=3 {
        ok(&mut alice, &format!("addentry /p/e{i} n {i}")).await;
    }
    ok(&mut alice, "chmod /p/e2 rw-------").await;
    let bob = Client::user(&srv, "bob", "bpw");

    // getAttributes: the named hidden entry is denied, patterns and collections skip it.
    let f = bob.fails("getAttributes", &(el("entryName", "/p/e2") + &el("attributeName", "n")), 4).await;
    assert_eq!(f.kind.as_deref(), Some("AuthorizationException"));
    let visible =
        vec![("/p/e1".to_string(), vec![("n".to_string(), s("1"))]), ("/p/e3".into(), vec![("n".into(), s("3"))])];
    assert_eq!(get(&bob, &["/p/*"], &["n"]).await, visible);
    assert_eq!(get(&bob, &["/p"], &["n"]).await, visible);
    // query / nextQuery: pages never hold e2, and the paging does not stop at it.
    let q = els("select", &["/p:FILE", "/p:n"]) + &el("condition", "/p:n > 0");
    let p1 = page_of(&bob.ok("query", &(q.clone() + &el("pageSize", "1"))).await);
    assert_eq!(p1.rows, vec![vec![s("e1"), s("1")]]);
    let p2 = page_of(&bob.ok("nextQuery", &(el("token", &p1.token.expect("token")) + &el("pageSize", "1"))).await);
    assert_eq!(p2.rows, vec![vec![s("e3"), s("3")]]);
    assert!(!p2.more);
    let hidden = page_of(&bob.ok("query", &(els("select", &["/p:FILE"]) + &el("condition", "/p:n = 2"))).await);
    assert!(hidden.rows.is_empty());

    // setAttributes / clearAttributes of the named entry: denied, nothing changes.
    let f = bob.fails("setAttributes", &(el("pattern", "/p/e2") + &attr_val("n", Some("9"))), 4).await;
    assert_eq!(f.kind.as_deref(), Some("AuthorizationException"));
    bob.fails("clearAttributes", &(el("pattern", "/p/e2") + &el("attributeName", "n")), 4).await;
    // bob may write e1 only (ACL): a pattern with a condition updates just that one.
    ok(&mut alice, "acl_add /p/e1 bob rw-").await;
    let by_query = el("pattern", "/p/*") + &el("condition", "n > 0") + &attr_val("n", Some("5"));
    assert_eq!(bob.ok("setAttributes", &by_query).await.child_text("updated"), "1");
    let r = bob.ok("setAttributes", &(el("pattern", "/p/*") + &attr_val("n", Some("6")))).await;
    assert_eq!(r.child_text("updated"), "1");
    let root = Client::root(&srv);
    assert_eq!(
        get(&root, &["/p/*"], &["n"]).await.into_iter().map(|(_, v)| v[0].1.clone()).collect::<Vec<_>>(),
        vec![s("6"), s("2"), s("3")]
    );
    // An ACL grant applies to the next request at once.
    ok(&mut alice, "acl_add /p/e2 bob r--").await;
    assert_eq!(get(&bob, &["/p/e2"], &["n"]).await, vec![("/p/e2".to_string(), vec![("n".to_string(), s("2"))])]);
    bob.fails("setAttributes", &(el("pattern", "/p/e2") + &attr_val("n", Some("9"))), 4).await;
    // removeEntry of a named entry bob may not write: denied.
    bob.fails("removeEntry", &el("pattern", "/p/e2"), 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_100k_rows_under_concurrent_inserts() {
    for b in BACKENDS {
        paging_on(b).await;
    }
}

async fn paging_on(b: Backend) {
    let srv = TestServer::start(b).await;
    let c = Client::root(&srv);
    c.ok("createSchema", &(el("schemaName", "/big") + &attr_def("i", "int") + &attr_def("tag", "varchar(16)"))).await;
    // Original rows have even i; concurrent inserts get odd i, so they interleave in i order.
    let started = Instant::now();
    for batch in 0..(BIG / 10_000) {
        let mut body = el("schemaName", "/big");
        for k in batch * 10_000..(batch + 1) * 10_000 {
            body.push_str(&entry(&format!("e{k:06}"), &[("i", Some(&(2 * k).to_string())), ("tag", Some("orig"))]));
        }
        assert_eq!(c.ok("createEntry", &body).await.child_text("created"), "10000");
    }
    eprintln!("{b:?}: created {BIG} rows in {:?}", started.elapsed());

    let writer = {
        let c = c.clone();
        tokio::spawn(async move {
            let mut n = 0;
            for round in 0..40 {
                let mut body = el("schemaName", "/big");
                for j in 0..50 {
                    let k = (round * 2477 + j * 1999) % BIG;
                    body.push_str(&entry(
                        &format!("n{round:02}_{j:02}"),
                        &[("i", Some(&(2 * k + 1).to_string())), ("tag", Some("new"))],
                    ));
                }
                c.ok("createEntry", &body).await;
                n += 50;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            n
        })
    };

    let q = els("select", &["/big:FILE", "/big:i", "/big:tag"]) + &el("orderBy", "/big:i");
    let mut page = page_of(&c.ok("query", &(q + &el("pageSize", "1000"))).await);
    let mut seen = vec![false; BIG];
    let mut last_i = -1i64;
    let mut total = 0usize;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(page.rows.len() <= 1000);
        for row in &page.rows {
            let i: i64 = row[1].as_deref().expect("i").parse().expect("int");
            // Concurrent rows may share an (odd) i; original rows are unique and even.
            assert!(i > last_i || (i == last_i && i % 2 == 1), "order broken or row repeated: {i} after {last_i}");
            last_i = i;
            total += 1;
            if i % 2 == 0 {
                let k = (i / 2) as usize;
                assert!(!seen[k], "original row {k} served twice");
                seen[k] = true;
                assert_eq!(row[0].as_deref(), Some(format!("e{k:06}").as_str()));
                assert_eq!(row[2].as_deref(), Some("orig"));
            } else {
                assert_eq!(row[2].as_deref(), Some("new"));
            }
        }
        if !page.more {
            assert!(page.token.is_none());
            break;
        }
        assert_eq!(page.rows.len(), 1000, "a page before the last one is full");
        let token = page.token.clone().expect("token");
        page = page_of(&c.ok("nextQuery", &(el("token", &token) + &el("pageSize", "1000"))).await);
    }
    let inserted = writer.await.expect("writer");
    let missing: Vec<usize> = seen.iter().enumerate().filter(|(_, s)| !**s).map(|(k, _)| k).take(5).collect();
    assert!(missing.is_empty(), "original rows never served, e.g. {missing:?}");
    assert!(total >= BIG && total <= BIG + inserted, "{total} rows");
    eprintln!("{b:?}: paged {total} rows in {pages} pages, {:?} in all", started.elapsed());

    // pageSize above soap_max_page_size (10000) is clamped silently.
    let p = page_of(&c.ok("query", &(el("select", "/big:i") + &el("pageSize", "50000"))).await);
    assert_eq!(p.rows.len(), 10_000);
    assert!(p.more);
    c.ok("endQuery", &el("token", p.token.as_deref().expect("token"))).await;

    // A big getAttributes streams (larger than the server's buffer) and is complete.
    let all = c.ok("getAttributes", &(el("entryName", "/big/e0*") + &els("attributeName", &["i"]))).await;
    let entries = entries_of(&all);
    assert_eq!(entries.len(), BIG);
    assert_eq!(entries[BIG - 1], ("/big/e099999".to_string(), vec![("i".to_string(), s("199998"))]));
}

// ------------------------------------------------------------------------------------------
// Query tokens: misuse, expiry, other processes, restarts

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_tokens() {
    for b in BACKENDS {
        query_tokens_on(b).await;
    }
}

async fn setup_rows(c: &Client, n: usize) {
    c.ok("createSchema", &(el("schemaName", "/q") + &attr_def("i", "int"))).await;
    let mut body = el("schemaName", "/q");
    for k in 0..n {
        body.push_str(&entry(&format!("r{k:03}"), &[("i", Some(&k.to_string()))]));
    }
    c.ok("createEntry", &body).await;
}

fn query_q(page: usize) -> String {
    els("select", &["/q:i"]) + &el("orderBy", "/q:i") + &el("pageSize", &page.to_string())
}

fn ints(p: &Page) -> Vec<i64> {
    p.rows.iter().map(|r| r[0].as_deref().expect("value").parse().expect("int")).collect()
}

async fn query_tokens_on(b: Backend) {
    // Short token TTL from a config file.
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(&dir, "soap_token_ttl_secs = 2\n");
    let srv = TestServer::start_with(TestDb::new(b).await, &["--config", &cfg]).await;
    let c = Client::root(&srv);
    setup_rows(&c, 30).await;
    let mut tcp = srv.raw().await;
    ok(&mut tcp, "user_create eve evepw").await;
    let eve = Client::user(&srv, "eve", "evepw");

    let p = page_of(&c.ok("query", &query_q(10)).await);
    let token = p.token.clone().expect("token");
    // Someone else's token → 4.
    let f = eve.fails("nextQuery", &el("token", &token), 4).await;
    assert_eq!(f.kind.as_deref(), Some("AuthorizationException"));
    eve.fails("endQuery", &el("token", &token), 4).await;
    // Forged / tampered → 8.
    let (body, sig) = token.split_once('.').expect("body.sig");
    let flipped = {
        let mut b = body.as_bytes().to_vec();
        let i = b.len() / 2;
        b[i] = if b[i] == b'A' { b'B' } else { b'A' };
        format!("{}.{sig}", String::from_utf8(b).expect("ascii"))
    };
    for bad in [flipped.as_str(), "garbage", "", "a.b", &format!("{body}.")] {
        let f = c.fails("nextQuery", &el("token", bad), 8).await;
        assert_eq!(f.kind.as_deref(), Some("InvalidArgumentException"), "{bad}");
    }
    // Still valid, then expired after the TTL → 1.
    assert_eq!(ints(&page_of(&c.ok("nextQuery", &el("token", &token)).await)), (10..30).collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let f = c.fails("nextQuery", &el("token", &token), 1).await;
    assert_eq!(f.kind.as_deref(), Some("NotExistsException"));
    // endQuery → the token is dead.
    let p = page_of(&c.ok("query", &query_q(10)).await);
    let token = p.token.expect("token");
    c.ok("endQuery", &el("token", &token)).await;
    c.fails("nextQuery", &el("token", &token), 1).await;
    // A second endQuery of the same query is a fault (code 1), not a silent success.
    let f = c.fails("endQuery", &el("token", &token), 1).await;
    assert_eq!(f.kind.as_deref(), Some("NotExistsException"));
    let db = srv.kill();

    // A second server process on the same database continues a token; so does a restarted one.
    let a = TestServer::start_with(db, &[]).await;
    let second = TestServer::start_with(a.db.share(), &[]).await;
    let ca = Client::root(&a);
    let cb = Client::root(&second);
    let p1 = page_of(&ca.ok("query", &query_q(7)).await);
    assert_eq!(ints(&p1), (0..7).collect::<Vec<_>>());
    let p2 =
        page_of(&cb.ok("nextQuery", &(el("token", p1.token.as_deref().expect("t1")) + &el("pageSize", "7"))).await);
    assert_eq!(ints(&p2), (7..14).collect::<Vec<_>>());
    // A token ended on one process is dead on the other.
    let p3 = page_of(&cb.ok("query", &query_q(5)).await);
    cb.ok("endQuery", &el("token", p3.token.as_deref().expect("t3"))).await;
    ca.fails("nextQuery", &el("token", p3.token.as_deref().expect("t3")), 1).await;
    // Restart: the key lives in the database, so the token survives.
    drop(second);
    let db = a.kill();
    let restarted = TestServer::start_with(db, &[]).await;
    let cr = Client::root(&restarted);
    let p4 =
        page_of(&cr.ok("nextQuery", &(el("token", p2.token.as_deref().expect("t2")) + &el("pageSize", "100"))).await);
    assert_eq!(ints(&p4), (14..30).collect::<Vec<_>>());
    assert!(!p4.more);
}

// ------------------------------------------------------------------------------------------
// Hostile and broken input

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input() {
    for b in BACKENDS {
        hostile_input_on(b).await;
    }
}

/// Expects a SOAP fault (or, where given, just this HTTP status) and returns it.
async fn refused(srv: &TestServer, what: &str, headers: &[(&str, &str)], body: &[u8]) -> HttpResp {
    let auth = basic("root", ROOT_PASSWORD);
    let mut h: Vec<(&str, &str)> = headers.to_vec();
    h.push(("Authorization", &auth));
    let r = http(srv.http, "POST", "/soap", &h, body).await;
    assert!(matches!(r.status, 400..=500), "{what}: HTTP {} {}", r.status, r.text());
    r
}

fn client_fault(what: &str, r: &HttpResp, status: u16) {
    assert_eq!(r.status, status, "{what}: {}", r.text());
    let f = fault_of(r);
    assert_eq!(f.code, Some(3), "{what}: {f:?}");
    assert!(matches!(f.fault_code.as_str(), "Client" | "Sender"), "{what}: {f:?}");
}

async fn hostile_input_on(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let limit = 4 << 20;
    let cfg = write_config(
        &dir,
        &format!("soap_max_body_bytes = {limit}\nsoap_max_depth = 64\nsoap_max_elements = 100000\n"),
    );
    let srv = TestServer::start_with(TestDb::new(b).await, &["--config", &cfg]).await;
    let c = Client::root(&srv);
    c.ok("createSchema", &(el("schemaName", "/h") + &attr_def("n", "int"))).await;
    c.ok("createEntry", &(el("schemaName", "/h") + &entry("keep", &[("n", Some("7"))]))).await;
    let xml = [("Content-Type", "text/xml; charset=utf-8")];
    let evil = envelope(V::V11, "createSchema", &el("schemaName", "/evil"));

    // Truncated envelope.
    let cut = &evil.as_bytes()[..evil.len() / 2];
    client_fault("truncated", &refused(&srv, "truncated", &xml, cut).await, 500);
    // Empty body, garbage, invalid UTF-8.
    client_fault("empty", &refused(&srv, "empty", &xml, b"").await, 500);
    client_fault("garbage", &refused(&srv, "garbage", &xml, b"\x00\x01hello").await, 500);
    client_fault("utf8", &refused(&srv, "utf8", &xml, b"<a>\xff\xfe</a>").await, 500);
    // Envelope in an unknown namespace → VersionMismatch; a 1.2 envelope sent as 1.1 likewise.
    let wrong_env = evil.replace(ENV11, "urn:not-soap");
    let r = refused(&srv, "wrong env ns", &xml, wrong_env.as_bytes()).await;
    assert_eq!(fault_of(&r).fault_code, "VersionMismatch");
    let v12_as_11 = envelope(V::V12, "createSchema", &el("schemaName", "/evil"));
    let r = refused(&srv, "1.2 as 1.1", &xml, v12_as_11.as_bytes()).await;
    assert_eq!(fault_of(&r).fault_code, "VersionMismatch");
    // Answered in the envelope's version, also after the same client's 1.1 requests of this
    // operation under this Content-Type (DDS templates: the envelope is sniffed before a full parse).
    for _ in 0..2 {
        c.fails("createSchema", &el("schemaName", "/h"), 16).await;
        let r = refused(&srv, "1.2 as 1.1 after 1.1", &xml, v12_as_11.as_bytes()).await;
        let text = r.text();
        assert_eq!(fault_of(&r).fault_code, "VersionMismatch", "{text}");
        assert_eq!(r.doc().must("Envelope").ns.as_deref(), Some(ENV12), "{text}");
    }
    // Operation element in a foreign namespace, unknown operation, two operations.
    client_fault("payload ns", &refused(&srv, "payload ns", &xml, evil.replace(NS, "urn:other").as_bytes()).await, 500);
    client_fault(
        "unknown op",
        &refused(&srv, "unknown op", &xml, envelope(V::V11, "format", "").as_bytes()).await,
        500,
    );
    let two = evil.replace("</soap:Body>", "<m:ping xmlns:m=\"urn:ardacat:metadata:1\"/></soap:Body>");
    client_fault("two ops", &refused(&srv, "two ops", &xml, two.as_bytes()).await, 500);
    // SOAP 1.2 Sender fault for a broken 1.2 request → 400.
    let cut12 = &v12_as_11.as_bytes()[..v12_as_11.len() - 20];
    client_fault(
        "1.2 truncated",
        &refused(&srv, "1.2 truncated", &[("Content-Type", "application/soap+xml")], cut12).await,
        400,
    );
    // Billion laughs (and any DTD).
    let laughs = format!(
        "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">{}]><soap:Envelope xmlns:soap=\"{ENV11}\"><soap:Body><m:createSchema xmlns:m=\"{NS}\"><m:schemaName>/evil&lol9;</m:schemaName></m:createSchema></soap:Body></soap:Envelope>",
        (1..10)
            .map(|i| format!(
                "<!ENTITY lol{i} \"{}\">",
                format!("&lol{};", if i == 1 { String::new() } else { (i - 1).to_string() }).repeat(10)
            ))
            .collect::<String>()
    );
    let t = Instant::now();
    let r = refused(&srv, "billion laughs", &xml, laughs.as_bytes()).await;
    client_fault("billion laughs", &r, 500);
    assert!(fault_of(&r).message.contains("DTD"), "{}", r.text());
    assert!(t.elapsed() < Duration::from_secs(5));
    // Undeclared entity, processing instruction.
    client_fault("entity", &refused(&srv, "entity", &xml, evil.replace("/evil", "/evil&x;").as_bytes()).await, 500);
    client_fault(
        "pi",
        &refused(&srv, "pi", &xml, evil.replace("<soap:Body>", "<soap:Body><?php x?>").as_bytes()).await,
        500,
    );
    // Deep nesting.
    // (inside an ignorable header block, which the parser skips element by element)
    let nest = format!("<x:h xmlns:x=\"urn:x\">{}{}</x:h>", "<x:a>".repeat(100_000), "</x:a>".repeat(100_000));
    let deep = evil.replace("<soap:Body>", &format!("<soap:Header>{nest}</soap:Header><soap:Body>"));
    let r = refused(&srv, "deep", &xml, deep.as_bytes()).await;
    client_fault("deep", &r, 500);
    assert!(fault_of(&r).message.contains("nesting depth"), "{}", r.text());
    // Too many elements (each one valid on its own).
    let many = envelope(V::V11, "getAttributes", &"<m:entryName/>".repeat(150_000));
    let r = refused(&srv, "many elements", &xml, many.as_bytes()).await;
    client_fault("many elements", &r, 500);
    assert!(fault_of(&r).message.contains("element count"), "{}", r.text());
    // Wrong Content-Type → 415.
    for ct in ["application/json", "text/plain", "multipart/related; type=\"application/xop+xml\""] {
        let r = refused(&srv, ct, &[("Content-Type", ct)], evil.as_bytes()).await;
        assert_eq!(r.status, 415, "{ct}");
    }
    // mustUnderstand header → MustUnderstand fault, for both versions.
    let mu = evil.replace(
        "<soap:Body>",
        "<soap:Header><x:Tx xmlns:x=\"urn:tx\" soap:mustUnderstand=\"1\">1</x:Tx></soap:Header><soap:Body>",
    );
    let r = refused(&srv, "mustUnderstand", &xml, mu.as_bytes()).await;
    assert_eq!((r.status, fault_of(&r).fault_code.as_str()), (500, "MustUnderstand"));
    let mu12 = v12_as_11.replace(
        "<soap:Body>",
        "<soap:Header><x:Tx xmlns:x=\"urn:tx\" soap:mustUnderstand=\"true\">1</x:Tx></soap:Header><soap:Body>",
    );
    let r = refused(&srv, "mustUnderstand 1.2", &[("Content-Type", "application/soap+xml")], mu12.as_bytes()).await;
    assert_eq!((r.status, fault_of(&r).fault_code.as_str()), (500, "MustUnderstand"));
    // Over the body limit, declared up front: refused before reading it.
    let (status, _) = send_huge(srv.http, false, limit + 1).await;
    assert_eq!(status, 413);

    // 100 MB with Content-Length, and 100 MB chunked: refused fast, never buffered whole.
    for chunked in [false, true] {
        let t = Instant::now();
        let (status, sent) = send_huge(srv.http, chunked, 100 << 20).await;
        eprintln!(
            "{b:?}: 100 MB body (chunked: {chunked}) refused with {status} after {sent} bytes, {:?}",
            t.elapsed()
        );
        assert_eq!(status, 413, "chunked={chunked}");
        assert!(sent < 60 << 20, "chunked={chunked}: the server read {sent} bytes before refusing");
        assert!(t.elapsed() < Duration::from_secs(30), "chunked={chunked}: took {:?}", t.elapsed());
    }

    // Still alive, and nothing changed.
    assert!(srv.child_alive(), "server died");
    c.ok("ping", "").await;
    assert_eq!(schemas(&c, None).await, vec!["/h".to_string()]);
    assert_eq!(get(&c, &["/h/*"], &["n"]).await, vec![("/h/keep".to_string(), vec![("n".to_string(), s("7"))])]);
    // The same request, well-formed, does work (so the refusals above were about the input).
    c.ok("createSchema", &el("schemaName", "/evil")).await;
}

/// Streams `total` bytes of envelope-ish filler as a request body; returns the response status
/// and how many body bytes got sent before the server answered.
async fn send_huge(addr: SocketAddr, chunked: bool, total: usize) -> (u16, usize) {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut rd, mut wr) = stream.into_split();
    let auth = basic("root", ROOT_PASSWORD);
    let framing = if chunked { "Transfer-Encoding: chunked".to_string() } else { format!("Content-Length: {total}") };
    let head = format!(
        "POST /soap HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/xml\r\nAuthorization: {auth}\r\n{framing}\r\n\r\n"
    );
    wr.write_all(head.as_bytes()).await.expect("head");
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = sent.clone();
    let writer = tokio::spawn(async move {
        let chunk = vec![b' '; 64 * 1024];
        let mut n = 0;
        while n < total {
            let r = if chunked {
                let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                framed.extend_from_slice(&chunk);
                framed.extend_from_slice(b"\r\n");
                wr.write_all(&framed).await
            } else {
                wr.write_all(&chunk).await
            };
            if r.is_err() {
                break;
            }
            n += chunk.len();
            counter.store(n, std::sync::atomic::Ordering::Relaxed);
        }
        if chunked {
            let _ = wr.write_all(b"0\r\n\r\n").await;
        }
    });
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let status = loop {
        if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&buf[..i]).into_owned();
            break line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        }
        match tokio::time::timeout(Duration::from_secs(30), rd.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break 0,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => break 0,
        }
    };
    let at_answer = sent.load(std::sync::atomic::Ordering::Relaxed);
    writer.abort();
    (status, at_answer)
}

trait Alive {
    fn child_alive(&self) -> bool;
}

impl Alive for TestServer {
    fn child_alive(&self) -> bool {
        // `try_wait` needs `&mut`; a signal 0 probe does not.
        std::process::Command::new("kill").args(["-0", &self.pid().to_string()]).status().is_ok_and(|s| s.success())
    }
}

on_both_backends!(index_operations_and_constraint_faults);

/// indexCreate/indexRemove/indexList answer as the TCP index commands do (same rules, same
/// codes); a constraint violation is fault 21 naming the constraint, and nothing is stored.
async fn index_operations_and_constraint_faults(b: Backend) {
    let srv = TestServer::start(b).await;
    let c = Client::root(&srv);
    c.ok("createSchema", &(el("schemaName", "/ix") + &attr_def("run", "int") + &attr_def("s", "text"))).await;
    let create =
        |name: &str, attrs: &[&str]| el("schemaName", "/ix") + &el("indexName", name) + &els("attributeName", attrs);
    c.ok("indexCreate", &create("by_run", &["run", "FILE"])).await;
    c.ok("indexCreate", &create("by_s", &["s"])).await;
    let list = c.ok("indexList", &el("schemaName", "/ix")).await;
    let got: Vec<(String, Vec<String>)> =
        list.all("index").map(|ix| (ix.child_text("name"), ix.texts("attributeName"))).collect();
    assert_eq!(
        got,
        [
            ("by_run".to_string(), vec!["run".to_string(), "FILE".to_string()]),
            ("by_s".to_string(), vec!["s".to_string()])
        ]
    );
    // The same codes as index_create/index_remove/index_list.
    c.fails("indexCreate", &create("BY_RUN", &["s"]), 15).await;
    c.fails("indexCreate", &create("x", &["nosuch"]), 10).await;
    c.fails("indexCreate", &create("x", &[]), 3).await;
    c.fails("indexCreate", &create("1x", &["s"]), 3).await;
    c.fails("indexRemove", &(el("schemaName", "/ix") + &el("indexName", "nosuch")), 1).await;
    c.fails("indexList", &el("schemaName", "/nosuch"), 1).await;
    c.ok("indexRemove", &(el("schemaName", "/ix") + &el("indexName", "by_s"))).await;
    let list = c.ok("indexList", &el("schemaName", "/ix")).await;
    assert_eq!(list.all("index").map(|ix| ix.child_text("name")).collect::<Vec<_>>(), ["by_run"]);
    // The TCP side sees the same indexes.
    let mut tcp = srv.raw().await;
    assert_eq!(ok(&mut tcp, "index_list /ix").await, ["by_run run,FILE"]);

    // A constraint violation through SOAP: fault 21 naming it; nothing stored.
    ok(&mut tcp, "constraint_add_not_null /ix s s_set").await;
    let f = c.fails("createEntry", &(el("schemaName", "/ix") + &entry("e1", &[("run", Some("1"))])), 21).await;
    assert!(f.message.contains("s_set"), "{f:?}");
    assert!(ok(&mut tcp, "ls /ix").await.is_empty());
    c.ok("createEntry", &(el("schemaName", "/ix") + &entry("e1", &[("s", Some("x"))]))).await;
    let f = c.fails("clearAttributes", &(el("pattern", "/ix/e1") + &el("attributeName", "s")), 21).await;
    assert!(f.message.contains("s_set"), "{f:?}");
}

on_both_backends!(sql_query_pages);

/// sqlQuery: a native SQL SELECT whose result pages like query (the same tokens, nextQuery and
/// endQuery); the columns are the header names; LIMIT counts over all pages and OFFSET once;
/// anything but a SELECT is fault 8.
async fn sql_query_pages(b: Backend) {
    let srv = TestServer::start(b).await;
    let c = Client::root(&srv);
    setup_rows(&c, 10).await;
    let sq = |stmt: &str, page: usize| el("statement", stmt) + &el("pageSize", &page.to_string());
    let values = |p: &Page| -> Vec<String> { p.rows.iter().map(|r| r.join_values()).collect() };

    // Pages of 3, descending; the header names the columns as written.
    let mut p = page_of(&c.ok("sqlQuery", &sq("SELECT FILE, i AS n FROM /q WHERE i >= 2 ORDER BY i DESC", 3)).await);
    assert_eq!(p.columns, ["FILE", "n"]);
    let mut got = values(&p);
    while p.more {
        let token = p.token.clone().expect("token");
        p = page_of(&c.ok("nextQuery", &(el("token", &token) + &el("pageSize", "3"))).await);
        assert_eq!(p.columns, ["FILE", "n"]);
        got.extend(values(&p));
    }
    assert_eq!(got, (2..10).rev().map(|k| format!("r{k:03},{k}")).collect::<Vec<_>>());

    // LIMIT over all pages, OFFSET once.
    let mut p = page_of(&c.ok("sqlQuery", &sq("SELECT i FROM /q ORDER BY i LIMIT 5 OFFSET 2", 2)).await);
    let mut got = values(&p);
    while p.more {
        p = page_of(&c.ok("nextQuery", &el("token", p.token.as_deref().expect("token"))).await);
        got.extend(values(&p));
    }
    assert_eq!(got, ["2", "3", "4", "5", "6"]);

    // Groups, and a page that holds everything: no token.
    let p = page_of(&c.ok("sqlQuery", &sq("select count(*), max(i) from /q where i < 4", 10)).await);
    assert_eq!(
        (p.columns.clone(), values(&p), p.more, p.token),
        (vec!["count(*)".to_string(), "max(i)".into()], vec!["4,3".to_string()], false, None)
    );

    // endQuery releases an sqlQuery token; a second endQuery is fault 1.
    let p = page_of(&c.ok("sqlQuery", &sq("SELECT FILE FROM /q", 4)).await);
    let token = p.token.expect("token");
    c.ok("endQuery", &el("token", &token)).await;
    c.fails("nextQuery", &el("token", &token), 1).await;
    c.fails("endQuery", &el("token", &token), 1).await;

    // Only SELECT; the TCP codes otherwise.
    c.fails("sqlQuery", &sq("INSERT INTO /q (FILE, i) VALUES ('x', 1)", 5), 8).await;
    c.fails("sqlQuery", &sq("SELECT FILE FROM /q WHERE", 5), 8).await;
    c.fails("sqlQuery", &sq("SELECT FILE FROM /nosuch", 5), 1).await;
    c.fails("sqlQuery", &sq("SELECT nosuch FROM /q", 5), 10).await;
    // Nothing was inserted.
    let p = page_of(&c.ok("sqlQuery", &sq("SELECT count(*) FROM /q", 5)).await);
    assert_eq!(values(&p), ["10"]);
}

trait JoinValues {
    fn join_values(&self) -> String;
}

impl JoinValues for Vec<Option<String>> {
    fn join_values(&self) -> String {
        self.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join(",")
    }
}
