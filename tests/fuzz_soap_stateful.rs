//! Stateful fuzzing of the SOAP frontend against the real server binary, on both backends:
//! seeded random sequences of operations (createEntry, setAttributes with and without a
//! condition and with NULLs, clearAttributes, removeEntry, getAttributes, add/removeSchema-
//! Attributes, query/nextQuery/endQuery paging with tokens, a second user) and mutated
//! envelopes, checked against a reference model of one collection as they go.
//!
//! Invariants: no response carries code 99; every fault's code is one the model allows and a
//! fault changes nothing; counts (`created`, `updated`, `cleared`, `removed`) and read-backs
//! equal the model's; paging a query page by page gives exactly the model's rows when nothing
//! changes in between, and no row twice when something does; an ended or mangled token is a
//! clean fault; the server stays up and logs no internal error.
//!
//! Seeds and lengths as in tests/fuzz_stateful.rs (`ARDACAT_FUZZ_SEEDS`, `ARDACAT_FUZZ_STEPS`,
//! `ARDACAT_FUZZ_SECS`); see docs/fuzzing.md.

#[macro_use]
mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use base64::Engine;
use common::*;
use quick_xml::events::Event;
use rng::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "fuzz/rng.rs"]
mod rng;

on_both_backends!(stateful_soap);

const NS: &str = "urn:ardacat:metadata:1";
const ENV11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn seeds() -> Vec<u64> {
    if let Ok(list) = std::env::var("ARDACAT_FUZZ_SEEDS") {
        return list.split(',').filter_map(|s| s.trim().parse().ok()).collect();
    }
    vec![1, 2, 3, rand::random::<u64>() % 1_000_000_000]
}

// ------------------------------------------------------------------------------------------
// HTTP and XML, minimal

struct Resp {
    status: u16,
    body: String,
}

/// One POST on a fresh connection (`Connection: close`), the whole response read to EOF.
async fn post(addr: SocketAddr, auth: &str, op: &str, body: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).await.expect("connect to the HTTP port");
    let head = format!(
        "POST /soap HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"{NS}#{op}\"\r\n\
         Authorization: {auth}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut msg = head.into_bytes();
    msg.extend_from_slice(body);
    let _ = s.write_all(&msg).await;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut raw))
        .await
        .expect("the server did not answer within 60 s")
        .expect("read the response");
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| {
        panic!("no complete HTTP response head (server down?): {:?}", String::from_utf8_lossy(&raw))
    });
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut body = raw[split + 4..].to_vec();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status code");
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(String::from_utf8_lossy(&rest[..eol]).split(';').next().unwrap_or("").trim(), 16)
                    .expect("chunk size");
            rest = &rest[eol + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    Resp { status, body: String::from_utf8_lossy(&body).into_owned() }
}

#[derive(Debug, Default, Clone)]
struct Node {
    name: String,
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
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
    fn child_text(&self, name: &str) -> Option<String> {
        self.all(name).next().map(|c| c.text.clone())
    }
    fn value(&self) -> Option<String> {
        if self.nil { None } else { Some(self.text.clone()) }
    }
}

fn parse_xml(text: &str) -> Option<Node> {
    let mut reader = quick_xml::NsReader::from_str(text);
    reader.config_mut().expand_empty_elements = true;
    let mut stack: Vec<Node> = vec![Node::default()];
    loop {
        match reader.read_resolved_event().ok()? {
            (_, Event::Start(e)) => {
                let mut n = Node { name: e.local_name().as_ref().to_string(), ..Node::default() };
                for a in e.attributes().flatten() {
                    if a.key.local_name().as_ref() == "nil" && matches!(&*a.value, "true" | "1") {
                        n.nil = true;
                    }
                }
                stack.push(n);
            }
            (_, Event::End(_)) => {
                let n = stack.pop()?;
                stack.last_mut()?.children.push(n);
            }
            (_, Event::Text(t)) => stack.last_mut()?.text.push_str(&t.xml10_content()),
            (_, Event::CData(t)) => stack.last_mut()?.text.push_str(&t.xml10_content()),
            (_, Event::GeneralRef(r)) => {
                let s = if r.is_char_ref() {
                    r.resolve_char_ref().ok()??.to_string()
                } else {
                    match &*r {
                        "lt" => "<",
                        "gt" => ">",
                        "amp" => "&",
                        "apos" => "'",
                        "quot" => "\"",
                        _ => return None,
                    }
                    .to_string()
                };
                stack.last_mut()?.text.push_str(&s);
            }
            (_, Event::Eof) => break,
            _ => {}
        }
    }
    stack.pop()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn el(name: &str, text: &str) -> String {
    format!("<m:{name}>{}</m:{name}>", esc(text))
}

fn attr_val(name: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("<m:attribute>{}{}</m:attribute>", el("name", name), el("value", v)),
        None => format!("<m:attribute>{}<m:value xsi:nil=\"true\"/></m:attribute>", el("name", name)),
    }
}

fn envelope(op: &str, inner: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<soap:Envelope xmlns:soap=\"{ENV11}\" xmlns:xsi=\"{XSI}\"><soap:Body><m:{op} xmlns:m=\"{NS}\">{inner}</m:{op}></soap:Body></soap:Envelope>"
    )
}

fn basic(user: &str, pw: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pw}")))
}

/// The outcome of one call: the response element, or a fault's MetadataFault code (`None`
/// when the fault has no MetadataFault, e.g. an envelope that does not parse).
enum Outcome {
    Ok(Node),
    Fault(Option<i32>),
}

// ------------------------------------------------------------------------------------------
// The model of `/s0`

type Row = BTreeMap<String, Option<String>>;

#[derive(Debug, Clone, PartialEq, Default)]
struct Model {
    /// Attribute → is it an int (else varchar(12)).
    attrs: BTreeMap<String, bool>,
    entries: BTreeMap<String, Row>,
}

const NAMES: &[&str] = &["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"];

fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// `a > n` on a row (NULL: no match).
fn matches(row: &Row, n: i64) -> bool {
    row.get("a").cloned().flatten().and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > n)
}

struct Fuzz {
    seed: u64,
    step: usize,
    rng: Rng,
    addr: SocketAddr,
    backend: Backend,
    root: String,
    bob: String,
    model: Model,
    transcript: VecDeque<String>,
    codes: BTreeMap<i32, u64>,
    pages: u64,
}

impl Fuzz {
    fn fail(&self, msg: &str) -> ! {
        let mut t = String::new();
        for l in &self.transcript {
            let _ = writeln!(t, "  {l}");
        }
        panic!(
            "stateful SOAP fuzz failed: {msg}\n  seed {} step {} on {:?} (reproduce: ARDACAT_FUZZ_SEEDS={} ARDACAT_FUZZ_STEPS={})\nlast requests:\n{t}",
            self.seed,
            self.step,
            self.backend,
            self.seed,
            self.step + 1
        )
    }

    async fn call_raw(&mut self, user_bob: bool, op: &str, body: &[u8]) -> Outcome {
        let auth = if user_bob { self.bob.clone() } else { self.root.clone() };
        let r = post(self.addr, &auth, op, body).await;
        if self.transcript.len() >= 30 {
            self.transcript.pop_front();
        }
        let req: String = String::from_utf8_lossy(body).chars().skip(200).take(400).collect();
        let resp: String = r.body.chars().skip(150).take(400).collect();
        self.transcript.push_back(format!(
            "[{}] {}{op}: …{req:?} -> {} …{resp:?}",
            self.step,
            if user_bob { "bob " } else { "" },
            r.status
        ));
        let Some(doc) = parse_xml(&r.body) else {
            self.fail(&format!("response is not XML (HTTP {})", r.status));
        };
        if let Some(f) = doc.find("Fault") {
            let code = f.find("MetadataFault").and_then(|d| d.child_text("code")).and_then(|c| c.parse().ok());
            *self.codes.entry(code.unwrap_or(-1)).or_default() += 1;
            if code == Some(99) {
                self.fail("fault code 99 (internal server error)");
            }
            if r.status != 500 && r.status != 400 {
                self.fail(&format!("a fault with HTTP status {}", r.status));
            }
            return Outcome::Fault(code);
        }
        if r.status != 200 {
            self.fail(&format!("HTTP {} without a fault", r.status));
        }
        *self.codes.entry(0).or_default() += 1;
        let resp =
            doc.find("Body").and_then(|b| b.children.first().cloned()).unwrap_or_else(|| self.fail("empty Body"));
        Outcome::Ok(resp)
    }

    async fn call(&mut self, op: &str, inner: &str) -> Outcome {
        self.call_raw(false, op, envelope(op, inner).as_bytes()).await
    }

    fn expect_fault(&self, out: &Outcome, allowed: &[i32]) {
        match out {
            Outcome::Fault(Some(c)) if allowed.contains(c) => {}
            Outcome::Fault(c) => self.fail(&format!("fault {c:?}, expected one of {allowed:?}")),
            Outcome::Ok(_) => self.fail(&format!("success, expected a fault in {allowed:?}")),
        }
    }

    fn expect_ok(&self, out: Outcome, count_name: Option<&str>, count: usize) -> Node {
        match out {
            Outcome::Ok(n) => {
                if let Some(name) = count_name {
                    let got = n.child_text(name).unwrap_or_default();
                    if got != count.to_string() {
                        self.fail(&format!("{name} = {got}, model {count}"));
                    }
                }
                n
            }
            Outcome::Fault(c) => self.fail(&format!("fault {c:?}, expected success")),
        }
    }

    fn value(&mut self, int: bool) -> (Option<String>, bool) {
        if self.rng.chance(10) {
            return (None, true);
        }
        if int {
            if self.rng.chance(85) {
                (Some(self.rng.range(-3, 20).to_string()), true)
            } else {
                (Some(self.rng.pick(&["x1", "1.5", "99999999999999999999"]).to_string()), false)
            }
        } else {
            let v = self.rng.pick(&["x", "a<b>&c", "it's \"q\"", "", "0123456789ab", "0123456789abc"]);
            (Some(v.to_string()), v.chars().count() <= 12)
        }
    }

    fn attr(&mut self) -> String {
        if self.rng.chance(5) {
            return "zz".into();
        }
        let names: Vec<String> = self.model.attrs.keys().cloned().collect();
        self.rng.pick(&names)
    }

    /// (attribute, value) pairs; the refusal codes they call for.
    fn pairs(&mut self, n: usize) -> (Vec<(String, Option<String>)>, BTreeSet<i32>) {
        let mut out: Vec<(String, Option<String>)> = Vec::new();
        let mut bad = BTreeSet::new();
        for _ in 0..n {
            let a = if !out.is_empty() && self.rng.chance(15) { out[0].0.clone() } else { self.attr() };
            if out.iter().any(|(x, _)| *x == a) {
                bad.insert(3);
            }
            match self.model.attrs.get(&a).copied() {
                None => {
                    bad.insert(10);
                    out.push((a, Some("1".into())));
                }
                Some(int) => {
                    let (v, ok) = self.value(int);
                    if !ok {
                        bad.insert(18);
                    }
                    out.push((a, v));
                }
            }
        }
        (out, bad)
    }

    async fn op_create(&mut self) {
        let mut inner = el("schemaName", "/s0");
        let mut new = Vec::new();
        let mut bad = BTreeSet::new();
        let mut names = BTreeSet::new();
        for _ in 0..1 + self.rng.below(3) {
            let name = self.rng.pick(NAMES).to_string();
            if self.model.entries.contains_key(&name) || !names.insert(name.clone()) {
                bad.insert(15);
            }
            let n = self.rng.below(3);
            let (pairs, b) = self.pairs(n);
            bad.extend(b);
            let mut row: Row = self.model.attrs.keys().map(|a| (a.clone(), None)).collect();
            let mut e = format!("<m:entry>{}", el("name", &name));
            for (a, v) in &pairs {
                e.push_str(&attr_val(a, v.as_deref()));
                row.insert(a.clone(), v.clone());
            }
            e.push_str("</m:entry>");
            inner.push_str(&e);
            new.push((name, row));
        }
        let out = self.call("createEntry", &inner).await;
        if bad.is_empty() {
            self.expect_ok(out, Some("created"), new.len());
            self.model.entries.extend(new);
        } else {
            self.expect_fault(&out, &bad.into_iter().collect::<Vec<_>>());
        }
    }

    fn target(&mut self) -> (String, Vec<String>, bool) {
        let pat = if self.rng.chance(60) {
            self.rng.pick(NAMES).to_string()
        } else {
            self.rng.pick(&["e*", "e?", "*", "e1*"]).to_string()
        };
        let matched = self.model.entries.keys().filter(|n| glob(&pat, n)).cloned().collect();
        let exact = !pat.contains(['*', '?']);
        (format!("/s0/{pat}"), matched, exact)
    }

    async fn op_set(&mut self) {
        let (pattern, mut matched, exact) = self.target();
        let cond = self.rng.chance(40).then(|| self.rng.range(-2, 15));
        let n = 1 + self.rng.below(2);
        let (pairs, mut bad) = self.pairs(n);
        // An exact name must exist, condition or not (the one "nothing matched" rule).
        if exact && matched.is_empty() {
            bad.insert(1);
        }
        let mut inner = el("pattern", &pattern);
        if let Some(c) = cond {
            inner.push_str(&el("condition", &format!("a > {c}")));
            matched.retain(|e| matches(&self.model.entries[e], c));
        }
        for (a, v) in &pairs {
            inner.push_str(&attr_val(a, v.as_deref()));
        }
        if matched.is_empty() && cond.is_none() {
            bad.insert(1);
        }
        let out = self.call("setAttributes", &inner).await;
        if bad.is_empty() || (bad == BTreeSet::from([1]) && !exact && matches!(out, Outcome::Ok(_))) {
            self.expect_ok(out, Some("updated"), matched.len());
            for e in matched {
                let row = self.model.entries.get_mut(&e).expect("matched");
                for (a, v) in &pairs {
                    row.insert(a.clone(), v.clone());
                }
            }
        } else {
            // With a condition, an empty match may still refuse a bad value first, or not.
            if cond.is_some() && matched.is_empty() && matches!(out, Outcome::Ok(_)) && !bad.contains(&3) {
                return;
            }
            self.expect_fault(&out, &bad.into_iter().collect::<Vec<_>>());
        }
    }

    async fn op_clear(&mut self) {
        let (pattern, matched, exact) = self.target();
        let a = self.attr();
        let out = self.call("clearAttributes", &(el("pattern", &pattern) + &el("attributeName", &a))).await;
        if !self.model.attrs.contains_key(&a) {
            self.expect_fault(&out, &[10, 1]);
        } else if matched.is_empty() {
            if exact || matches!(out, Outcome::Fault(_)) {
                self.expect_fault(&out, &[1]);
            } else {
                self.expect_ok(out, Some("cleared"), 0);
            }
        } else {
            self.expect_ok(out, Some("cleared"), matched.len());
            for e in matched {
                self.model.entries.get_mut(&e).expect("matched").insert(a.clone(), None);
            }
        }
    }

    async fn op_remove(&mut self) {
        let (pattern, mut matched, exact) = self.target();
        let exists = !matched.is_empty();
        let cond = self.rng.chance(40).then(|| self.rng.range(-2, 15));
        let mut inner = el("pattern", &pattern);
        if let Some(c) = cond {
            inner.push_str(&el("condition", &format!("a > {c}")));
            matched.retain(|e| matches(&self.model.entries[e], c));
        }
        let out = self.call("removeEntry", &inner).await;
        if matched.is_empty() {
            // An exact name that does not exist is "no such entry", condition or not; a
            // pattern or a condition that matches nothing removes 0 (with a condition) or is
            // "no such entry" (without one).
            if (exact && !exists) || (cond.is_none() && !exact) {
                self.expect_fault(&out, &[1]);
            } else {
                self.expect_ok(out, Some("removed"), 0);
            }
        } else {
            self.expect_ok(out, Some("removed"), matched.len());
            for e in matched {
                self.model.entries.remove(&e);
            }
        }
    }

    async fn op_schema(&mut self) {
        let add = self.rng.chance(50);
        let exists = self.model.attrs.contains_key("t0");
        if add {
            let out = self
                .call(
                    "addSchemaAttributes",
                    &(el("schemaName", "/s0") + "<m:attribute><m:name>t0</m:name><m:type>int</m:type></m:attribute>"),
                )
                .await;
            if exists {
                self.expect_fault(&out, &[15]);
            } else {
                self.expect_ok(out, None, 0);
                self.model.attrs.insert("t0".into(), true);
                for r in self.model.entries.values_mut() {
                    r.insert("t0".into(), None);
                }
            }
        } else {
            let out =
                self.call("removeSchemaAttributes", &(el("schemaName", "/s0") + &el("attributeName", "t0"))).await;
            if exists {
                self.expect_ok(out, None, 0);
                self.model.attrs.remove("t0");
                for r in self.model.entries.values_mut() {
                    r.remove("t0");
                }
            } else {
                self.expect_fault(&out, &[10]);
            }
        }
    }

    /// Read everything back with getAttributes and compare.
    async fn check(&mut self) {
        let out = self.call("getAttributes", &el("entryName", "/s0")).await;
        let n = self.expect_ok(out, None, 0);
        let got: BTreeMap<String, Row> = n
            .all("entry")
            .map(|e| {
                let name = e.child_text("name").unwrap_or_default();
                let name = name.rsplit('/').next().unwrap_or_default().to_string();
                let row = e
                    .all("attribute")
                    .map(|a| (a.child_text("name").unwrap_or_default(), a.find("value").and_then(Node::value)))
                    .collect();
                (name, row)
            })
            .collect();
        if got != self.model.entries {
            let mut diff = String::new();
            for k in got.keys().chain(self.model.entries.keys()).collect::<BTreeSet<_>>() {
                if got.get(k) != self.model.entries.get(k) {
                    let _ = writeln!(diff, "    {k}: server {:?}, model {:?}", got.get(k), self.model.entries.get(k));
                }
            }
            self.fail(&format!("/s0 differs from the model:\n{diff}"));
        }
    }

    /// query + nextQuery to the end (or endQuery halfway), maybe with a change between pages.
    async fn op_query(&mut self) {
        let c = self.rng.range(-2, 15);
        let size = 1 + self.rng.below(4);
        let q = el("select", "/s0:FILE") + &el("select", "/s0:a") + &el("condition", &format!("/s0:a > {c}"));
        let mut want: Vec<(String, String)> = self
            .model
            .entries
            .iter()
            .filter(|(_, r)| matches(r, c))
            .map(|(n, r)| (n.clone(), r["a"].clone().unwrap_or_default()))
            .collect();
        want.sort();
        let mut got: Vec<(String, String)> = Vec::new();
        let mut changed = false;
        let mut out = self.call("query", &(q + &el("pageSize", &size.to_string()))).await;
        loop {
            let n = self.expect_ok(out, None, 0);
            self.pages += 1;
            let Some(r) = n.find("result") else { self.fail("no result") };
            for row in r.all("row") {
                let v: Vec<String> = row.all("value").map(|v| v.value().unwrap_or_default()).collect();
                got.push((v.first().cloned().unwrap_or_default(), v.get(1).cloned().unwrap_or_default()));
            }
            let more = r.child_text("more").as_deref() == Some("true");
            let token = r.child_text("token");
            if !more {
                if token.is_some() {
                    self.fail("a token on the last page");
                }
                break;
            }
            let Some(token) = token else { self.fail("more pages but no token") };
            if self.rng.chance(10) {
                let out = self.call("endQuery", &el("token", &token)).await;
                self.expect_ok(out, None, 0);
                let out = self.call("nextQuery", &el("token", &token)).await;
                self.expect_fault(&out, &[1]);
                // Ending it again is a fault too (the token names no live query).
                let out = self.call("endQuery", &el("token", &token)).await;
                self.expect_fault(&out, &[1]);
                return;
            }
            if self.rng.chance(10) {
                // A mangled token is refused cleanly.
                let mut bad = token.clone().into_bytes();
                let i = self.rng.below(bad.len());
                bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
                let out = self.call("nextQuery", &el("token", &String::from_utf8_lossy(&bad))).await;
                if let Outcome::Ok(_) = out {
                    self.fail("nextQuery with a mangled token succeeded");
                }
            }
            if self.rng.chance(20) {
                changed = true;
                self.op_create().await;
            }
            out = self.call("nextQuery", &(el("token", &token) + &el("pageSize", &size.to_string()))).await;
        }
        let names: BTreeSet<&String> = got.iter().map(|(n, _)| n).collect();
        if names.len() != got.len() {
            self.fail(&format!("a row came twice while paging: {got:?}"));
        }
        got.sort();
        if !changed && got != want {
            self.fail(&format!("paged query: server {got:?}, model {want:?}"));
        }
    }

    /// bob writes one entry; he may or may not be allowed.
    async fn op_bob(&mut self) {
        let e = self.rng.pick(NAMES).to_string();
        let v = self.rng.range(0, 9).to_string();
        let inner = el("pattern", &format!("/s0/{e}")) + &attr_val("a", Some(&v));
        let out = self.call_raw(true, "setAttributes", envelope("setAttributes", &inner).as_bytes()).await;
        match (&out, self.model.entries.contains_key(&e)) {
            (Outcome::Ok(_), true) => {
                self.model.entries.get_mut(&e).expect("exists").insert("a".into(), Some(v));
            }
            (Outcome::Ok(_), false) => self.fail("bob changed an entry that does not exist"),
            (Outcome::Fault(_), exists) => self.expect_fault(&out, if exists { &[4] } else { &[1, 4] }),
        }
    }

    /// A mutated envelope of a valid request: any answer but code 99; then the state is checked.
    async fn op_mutated(&mut self) {
        let inner = el("pattern", "/s0/e*") + &attr_val("s", Some("m")) + &attr_val("a", Some("1"));
        let ops = [
            ("setAttributes", inner),
            ("createEntry", el("schemaName", "/s0") + "<m:entry><m:name>e1</m:name></m:entry>"),
            ("query", el("select", "/s0:FILE") + &el("condition", "/s0:a > 1") + &el("pageSize", "2")),
            ("getAttributes", el("entryName", "/s0/e*") + &el("attributeName", "a")),
            ("removeEntry", el("pattern", "/s0/e9")),
        ];
        let (op, inner) = ops[self.rng.below(ops.len())].clone();
        let mut body = envelope(op, &inner).into_bytes();
        const TOKENS: &[&[u8]] =
            &[b"<", b">", b"</m:name>", b"<m:attribute>", b"&amp;", b"&#0;", b"xsi:nil=\"true\"", b"\xff", b"'", b"\""];
        for _ in 0..1 + self.rng.below(4) {
            let at = self.rng.below(body.len() + 1);
            match self.rng.below(3) {
                0 if !body.is_empty() => {
                    let i = self.rng.below(body.len());
                    body[i] ^= 1 << self.rng.below(8);
                }
                1 => {
                    let t = self.rng.pick(TOKENS);
                    body.splice(at..at, t.iter().copied());
                }
                _ => {
                    let end = (at + 1 + self.rng.below(8)).min(body.len());
                    if at < end {
                        body.drain(at..end);
                    }
                }
            }
        }
        let out = self.call_raw(false, op, &body).await;
        // A mutation may still be a valid request that changed /s0: learn it from a read-back.
        if let Outcome::Ok(_) = out
            && matches!(op, "setAttributes" | "createEntry" | "removeEntry")
        {
            self.relearn().await;
        }
    }

    /// Replace the model's entries by what the server holds (after a change the model could not
    /// predict); the next checks compare against it again.
    async fn relearn(&mut self) {
        let out = self.call("getAttributes", &el("entryName", "/s0")).await;
        let n = self.expect_ok(out, None, 0);
        self.model.entries = n
            .all("entry")
            .map(|e| {
                let name = e.child_text("name").unwrap_or_default().rsplit('/').next().unwrap_or_default().to_string();
                let row = e
                    .all("attribute")
                    .map(|a| (a.child_text("name").unwrap_or_default(), a.find("value").and_then(Node::value)))
                    .collect();
                (name, row)
            })
            .collect();
    }

    async fn step_once(&mut self) {
        match self.rng.below(100) {
            0..=19 => self.op_create().await,
            20..=39 => self.op_set().await,
            40..=46 => self.op_clear().await,
            47..=56 => self.op_remove().await,
            57..=60 => self.op_schema().await,
            61..=75 => self.op_query().await,
            76..=82 => self.op_bob().await,
            83..=89 => self.check().await,
            _ => self.op_mutated().await,
        }
    }
}

async fn run(backend: Backend, seed: u64, steps: usize) -> BTreeMap<i32, u64> {
    let srv = TestServer::start(backend).await;
    let mut c = srv.raw().await;
    for l in [
        "createdir /s0",
        "addattr /s0 a int",
        "addattr /s0 s varchar(12)",
        "user_create bob bobpw",
        "chmod /s0 rwxrwxrwx",
    ] {
        ok(&mut c, l).await;
    }
    let mut model = Model::default();
    model.attrs.insert("a".into(), true);
    model.attrs.insert("s".into(), false);
    let mut f = Fuzz {
        seed,
        step: 0,
        rng: Rng::new(seed),
        addr: srv.http,
        backend,
        root: basic("root", ROOT_PASSWORD),
        bob: basic("bob", "bobpw"),
        model,
        transcript: VecDeque::new(),
        codes: BTreeMap::new(),
        pages: 0,
    };
    for step in 0..steps {
        f.step = step;
        f.step_once().await;
        let errors = srv.internal_errors();
        if !errors.is_empty() {
            f.fail(&format!("the server logged an internal error: {}", errors.join("\n")));
        }
    }
    f.check().await;
    eprintln!("seed {seed}: {steps} steps, {} query pages, codes {:?}", f.pages, f.codes);
    f.codes
}

async fn stateful_soap(backend: Backend) {
    let steps = env_num("ARDACAT_FUZZ_STEPS").unwrap_or(300) as usize;
    let seeds = seeds();
    eprintln!("stateful SOAP fuzz on {backend:?}: seeds {seeds:?}, {steps} steps each");
    let mut total: BTreeMap<i32, u64> = BTreeMap::new();
    for &seed in &seeds {
        for (c, n) in run(backend, seed, steps).await {
            *total.entry(c).or_default() += n;
        }
    }
    if let Some(secs) = env_num("ARDACAT_FUZZ_SECS") {
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            let seed = rand::random::<u64>() % 1_000_000_000;
            eprintln!("soak: seed {seed}");
            for (c, n) in run(backend, seed, steps).await {
                *total.entry(c).or_default() += n;
            }
        }
    }
    assert!(total.get(&0).copied().unwrap_or(0) > 100, "too few successful requests: {total:?}");
    assert!(total.keys().filter(|c| **c != 0).count() >= 4, "too few kinds of faults: {total:?}");
    eprintln!("stateful SOAP fuzz on {backend:?}: codes {total:?}");
}
