//! Stateful fuzzing of the TCP protocol against the real server binary, on both backends:
//! seeded random sequences of valid and mutated commands over four connections (a root
//! connection with a resumable session and `escape`, a checker, a second user `bob`, and a
//! "chaos" connection that gets mutated lines), checked against a reference model as it goes.
//!
//! Families: namespace (createdir/rmdir/dir), attributes (addattr/removeattr/listattr),
//! entries (addentry/addentries/setattr/updateattr/clearattr/rm/getattr/find/selectattr),
//! sequences, ACLs/chmod/chown, users and groups, transactions with commit and abort,
//! upload/put/commit/abort, session resume, CAN cancels, writes by a second user while root
//! changes permissions, and mutated lines.
//!
//! Invariants: no reply is ever code 99 (and the server's log shows no internal error); no
//! valid line closes the connection; the server stays up; every reply's code is one the model
//! allows, and a failed command changes nothing; after every `commit` (and every few steps) the
//! committed state read back by another connection equals the model's, and inside a
//! transaction the transaction's own view equals the model's working state while other
//! connections still see the committed one.
//!
//! Runs: the default seeds plus one random seed (printed) with `ARDACAT_FUZZ_STEPS` steps each
//! (default 300). `ARDACAT_FUZZ_SEEDS=1,2` runs only those seeds (a failure prints the seed
//! that reproduces it); `ARDACAT_FUZZ_SECS=<n>` keeps running fresh random seeds for n seconds
//! (the soak run, see docs/fuzzing.md). What the model does not know exactly (the effect of a
//! mutated line, whether `bob` may write) it learns from the reply and then checks against the
//! state read back.

#[macro_use]
mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ardacat_proto::{join_args, join_escaped_args, unescape_value};
use common::*;
use rng::Rng;

#[path = "fuzz/rng.rs"]
mod rng;

on_both_backends!(stateful_tcp);

// ------------------------------------------------------------------------------------------
// Run settings and the random source

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The seeds of this run: `ARDACAT_FUZZ_SEEDS`, or the fixed list plus one random seed.
fn seeds() -> Vec<u64> {
    if let Ok(list) = std::env::var("ARDACAT_FUZZ_SEEDS") {
        return list.split(',').filter_map(|s| s.trim().parse().ok()).collect();
    }
    vec![1, 2, 3, rand::random::<u64>() % 1_000_000_000]
}

// ------------------------------------------------------------------------------------------
// The reference model of `/m0`

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    Int,
    Float,
    /// varchar(n)
    Str(usize),
}

impl Ty {
    fn name(self) -> String {
        match self {
            Ty::Int => "int".into(),
            Ty::Float => "float".into(),
            Ty::Str(n) => format!("varchar({n})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Val {
    I(i64),
    F(f64),
    S(String),
}

impl Val {
    fn num(&self) -> Option<f64> {
        match self {
            Val::I(i) => Some(*i as f64),
            Val::F(f) => Some(*f),
            Val::S(_) => None,
        }
    }
}

type Row = BTreeMap<String, Option<Val>>;

/// How `updateattr` computes an attribute from the old row (`Err`: the value overflows).
type Compute = Box<dyn Fn(&Row) -> Result<Option<Val>, ()>>;

#[derive(Debug, Clone, PartialEq)]
struct Seq {
    /// The value the next `sequence_next` returns; `None` once the following one would overflow.
    next: Option<i64>,
    incr: i64,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct Model {
    attrs: BTreeMap<String, Ty>,
    entries: BTreeMap<String, Row>,
    dirs: BTreeSet<String>,
    seqs: BTreeMap<String, Seq>,
    groups: BTreeSet<String>,
    bob_groups: BTreeSet<String>,
    /// ACL of `/m0`: who → rights.
    acl: BTreeMap<String, String>,
    /// A sequence whose state the model lost (a reply it could not predict): learn on next use.
    unknown_seqs: BTreeSet<String>,
}

const ENTRY_NAMES: &[&str] = &["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9", "e10", "e11"];
const EXTRA_ATTRS: &[&str] = &["t0", "t1"];
const DIRS: &[&str] = &["d0", "d1", "d2"];
const SEQS: &[&str] = &["q0", "q1", "q2"];
const GROUPS: &[&str] = &["fzg0", "fzg1", "fzg2"];

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

// ------------------------------------------------------------------------------------------
// Conditions (a tiny subset of the query language, evaluated with SQL's three-valued logic)

#[derive(Debug, Clone)]
enum Cond {
    Cmp(String, &'static str, i64),
    StrEq(String),
    IsNull(String),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

impl Cond {
    fn text(&self) -> String {
        match self {
            Cond::Cmp(a, op, n) => format!("{a} {op} {n}"),
            Cond::StrEq(v) => format!("s = \"{v}\""),
            Cond::IsNull(a) => format!("{a} is null"),
            Cond::And(a, b) => format!("({}) and ({})", a.text(), b.text()),
            Cond::Or(a, b) => format!("({}) or ({})", a.text(), b.text()),
            Cond::Not(a) => format!("not ({})", a.text()),
        }
    }

    fn eval(&self, row: &Row) -> Option<bool> {
        match self {
            Cond::Cmp(a, op, n) => {
                let v = row.get(a)?.as_ref()?.num()?;
                let n = *n as f64;
                Some(match *op {
                    ">" => v > n,
                    "<" => v < n,
                    "=" => v == n,
                    _ => v >= n,
                })
            }
            Cond::StrEq(v) => match row.get("s")?.as_ref()? {
                Val::S(s) => Some(s == v),
                _ => None,
            },
            Cond::IsNull(a) => Some(row.get(a).is_none_or(|v| v.is_none())),
            Cond::And(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Cond::Or(a, b) => match (a.eval(row), b.eval(row)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Cond::Not(a) => a.eval(row).map(|b| !b),
        }
    }
}

// ------------------------------------------------------------------------------------------
// Replies

#[derive(Debug)]
struct Rep {
    code: i32,
    lines: Vec<String>,
    /// The code of an inline CAN failure after data lines.
    inline: Option<i32>,
    session: Option<u64>,
}

fn parse_reply(raw: &[u8], escape: bool) -> Rep {
    let session = session_of(raw);
    let text = String::from_utf8_lossy(raw);
    let body = text.split('\x04').next().unwrap_or_default();
    let mut it = body.split('\n');
    let status = it.next().unwrap_or_default();
    let code = status.split(' ').next().unwrap_or_default().parse().unwrap_or(-1);
    let mut lines = Vec::new();
    let mut inline = None;
    for l in it {
        if let Some(rest) = l.strip_prefix('\x18') {
            inline = Some(rest.split(' ').next().unwrap_or_default().parse().unwrap_or(-1));
            break;
        }
        lines.push(l.to_string());
    }
    if inline.is_none() {
        lines.pop(); // after the last \n
    }
    let _ = escape;
    Rep { code, lines, inline, session }
}

/// A data line of an `escape` connection: `None` for NULL.
fn unesc(line: &str) -> Option<String> {
    unescape_value(line).unwrap_or_else(|e| panic!("bad escaped value {line:?}: {e}"))
}

async fn login_with(addr: std::net::SocketAddr, user: &str, pw: &str, opts: &[&str]) -> RawConn {
    RawConn::login_with(addr, user, Some(pw), opts).await
}

// ------------------------------------------------------------------------------------------
// The driver

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Who {
    M,
    Chk,
    Bob,
    Chaos,
}

const BOB_PW: &str = "bob-secret";

struct Fuzz<'a> {
    seed: u64,
    step: usize,
    rng: Rng,
    srv: &'a TestServer,
    m: RawConn,
    chk: RawConn,
    bob: RawConn,
    chaos: RawConn,
    committed: Model,
    /// The transaction's working state while `m` has one open.
    work: Option<Model>,
    session: Option<u64>,
    /// The open transaction altered `/m0`'s table (addattr, removeattr, rmdir): on PostgreSQL
    /// that locks the table until the end of the transaction, so other connections leave `/m0`
    /// alone meanwhile (they would wait, then answer 9 "busy").
    tx_ddl: bool,
    transcript: VecDeque<String>,
    codes: BTreeMap<i32, u64>,
    corpus: Vec<Vec<u8>>,
    commits: u64,
    checks: u64,
}

fn corpus() -> Vec<Vec<u8>> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz/corpus/command");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("corpus").map(|e| e.expect("entry").path()).collect();
    files.sort();
    for f in files {
        for line in std::fs::read(&f).expect("seed").split(|b| *b == b'\n') {
            if !line.is_empty() {
                out.push(line.to_vec());
            }
        }
    }
    out
}

impl<'a> Fuzz<'a> {
    fn fail(&self, msg: &str) -> ! {
        let mut t = String::new();
        for l in &self.transcript {
            let _ = writeln!(t, "  {l}");
        }
        panic!(
            "stateful fuzz failed: {msg}\n  seed {} step {} on {:?} (reproduce: ARDACAT_FUZZ_SEEDS={} ARDACAT_FUZZ_STEPS={})\nlast commands:\n{t}",
            self.seed,
            self.step,
            self.srv.db.backend,
            self.seed,
            self.step + 1
        )
    }

    fn note(&mut self, who: Who, line: &str, rep: &str) {
        if self.transcript.len() >= 40 {
            self.transcript.pop_front();
        }
        let mut line = line.to_string();
        if line.len() > 300 {
            line.truncate(300);
            line.push('…');
        }
        self.transcript.push_back(format!("[{}] {who:?}: {line:?} -> {rep:?}", self.step));
    }

    fn conn(&mut self, who: Who) -> &mut RawConn {
        match who {
            Who::M => &mut self.m,
            Who::Chk => &mut self.chk,
            Who::Bob => &mut self.bob,
            Who::Chaos => &mut self.chaos,
        }
    }

    async fn send_raw(&mut self, who: Who, bytes: &[u8]) -> Rep {
        let escape = matches!(who, Who::M | Who::Chk);
        let c = self.conn(who);
        c.send(bytes).await;
        c.send(b"\n").await;
        let raw = c.reply().await;
        let rep = parse_reply(&raw, escape);
        let shown: String = String::from_utf8_lossy(&raw).chars().take(200).collect();
        self.note(who, &String::from_utf8_lossy(bytes), &shown);
        *self.codes.entry(rep.code).or_default() += 1;
        if rep.code == 99 || rep.inline == Some(99) {
            self.fail("code 99 (internal server error)");
        }
        if rep.code < 0 {
            self.fail("unparseable status line");
        }
        if who == Who::M
            && let Some(id) = rep.session
        {
            self.session = Some(id);
        }
        rep
    }

    /// Send one command built from arguments (escaped for the `escape` connections).
    async fn cmd(&mut self, who: Who, args: &[&str]) -> Rep {
        let line = if matches!(who, Who::M | Who::Chk) {
            let a: Vec<Option<&str>> = args.iter().map(|a| Some(*a)).collect();
            join_escaped_args(&a)
        } else {
            join_args(args)
        };
        self.send_raw(who, line.as_bytes()).await
    }

    fn expect(&self, rep: &Rep, allowed: &[i32]) {
        if !allowed.contains(&rep.code) {
            self.fail(&format!("reply code {} not in {allowed:?}", rep.code));
        }
        if rep.inline.is_some() {
            self.fail("unexpected inline failure");
        }
    }

    fn cur(&mut self) -> &mut Model {
        match self.work.as_mut() {
            Some(w) => w,
            None => &mut self.committed,
        }
    }

    fn in_tx(&self) -> bool {
        self.work.is_some()
    }

    // ---- values ----

    /// A value for `ty`: its wire text and the value it must store (`None`: must be refused).
    fn value(&mut self, ty: Ty) -> (String, Option<Val>) {
        let r = &mut self.rng;
        match ty {
            Ty::Int => {
                if r.chance(80) {
                    let v = r.range(-5, 30);
                    (v.to_string(), Some(Val::I(v)))
                } else {
                    r.pick(&[
                        (i64::MAX.to_string(), Some(Val::I(i64::MAX))),
                        (i64::MIN.to_string(), Some(Val::I(i64::MIN))),
                        (" 7".to_string(), Some(Val::I(7))),
                        ("12x".to_string(), None),
                        (String::new(), None),
                        ("1.5".to_string(), None),
                        ("9223372036854775808".to_string(), None),
                    ])
                }
            }
            Ty::Float => r.pick(&[
                ("0.5".to_string(), Some(Val::F(0.5))),
                ("-2.25".to_string(), Some(Val::F(-2.25))),
                ("3".to_string(), Some(Val::F(3.0))),
                ("100.125".to_string(), Some(Val::F(100.125))),
                ("1e300".to_string(), Some(Val::F(1e300))),
                ("abc".to_string(), None),
                ("1e999".to_string(), None),
                ("NaN".to_string(), None),
            ]),
            Ty::Str(n) => {
                let v = r.pick(&["x", "hello world", "it's", "q\"uote", "ünï", "", "0123456789ab", "0123456789abc"]);
                let ok = v.chars().count() <= n;
                (v.to_string(), ok.then(|| Val::S(v.to_string())))
            }
        }
    }

    fn attr_any(&mut self) -> String {
        let m = self.cur().clone();
        if self.rng.chance(5) {
            return "zz".into();
        }
        let names: Vec<String> = m.attrs.keys().cloned().collect();
        self.rng.pick(&names)
    }

    fn int_attr(&mut self) -> String {
        let m = self.cur().clone();
        let names: Vec<String> = m.attrs.iter().filter(|(_, t)| **t == Ty::Int).map(|(n, _)| n.clone()).collect();
        self.rng.pick(&names)
    }

    fn cond(&mut self, depth: usize) -> Cond {
        let k = if depth > 1 { self.rng.below(3) } else { self.rng.below(6) };
        match k {
            0 => {
                let a = if self.rng.chance(70) { self.int_attr() } else { "x".into() };
                let op = self.rng.pick(&[">", "<", "=", ">="]);
                Cond::Cmp(a, op, self.rng.range(-3, 25))
            }
            1 => Cond::StrEq(self.rng.pick(&["x", "it's", "hello world"]).to_string()),
            2 => Cond::IsNull(self.rng.pick(&["a", "s", "x"]).to_string()),
            3 => Cond::And(Box::new(self.cond(depth + 1)), Box::new(self.cond(depth + 1))),
            4 => Cond::Or(Box::new(self.cond(depth + 1)), Box::new(self.cond(depth + 1))),
            _ => Cond::Not(Box::new(self.cond(depth + 1))),
        }
    }

    /// An entry target: an exact name, or a pattern.
    fn target(&mut self) -> (String, Vec<String>, bool) {
        let m = self.cur().clone();
        let pat = if self.rng.chance(60) {
            self.rng.pick(ENTRY_NAMES).to_string()
        } else {
            self.rng.pick(&["e*", "e1*", "e?", "*", "e1?"]).to_string()
        };
        let matched: Vec<String> = m.entries.keys().filter(|n| glob(&pat, n)).cloned().collect();
        let exact = !pat.contains(['*', '?']);
        (format!("/m0/{pat}"), matched, exact)
    }

    // ---- checks ----

    /// Read `/m0` back on `who` and compare with `model`.
    async fn check_view(&mut self, who: Who, model: &Model, full: bool) {
        self.checks += 1;
        let attrs: Vec<String> = model.attrs.keys().cloned().collect();
        let mut args = vec!["getattr", "/m0"];
        args.extend(attrs.iter().map(String::as_str));
        let rep = self.cmd(who, &args).await;
        self.expect(&rep, &[0]);
        let n = attrs.len() + 1;
        if rep.lines.len() % n != 0 {
            self.fail(&format!("getattr /m0: {} lines for rows of {n}", rep.lines.len()));
        }
        let mut got: BTreeMap<String, Row> = BTreeMap::new();
        for row in rep.lines.chunks(n) {
            let name = unesc(&row[0]).unwrap_or_default();
            let mut r = Row::new();
            for (a, text) in attrs.iter().zip(&row[1..]) {
                let v = unesc(text).map(|t| match model.attrs[a] {
                    Ty::Int => Val::I(t.parse().unwrap_or_else(|_| self.fail(&format!("int value {t:?}")))),
                    Ty::Float => Val::F(t.parse().unwrap_or_else(|_| self.fail(&format!("float value {t:?}")))),
                    Ty::Str(_) => Val::S(t),
                });
                r.insert(a.clone(), v);
            }
            got.insert(name, r);
        }
        if got != model.entries {
            let mut diff = String::new();
            for k in got.keys().chain(model.entries.keys()).collect::<BTreeSet<_>>() {
                let (g, w) = (got.get(k), model.entries.get(k));
                if g != w {
                    let _ = writeln!(diff, "    {k}: server {g:?}, model {w:?}");
                }
            }
            self.fail(&format!("{who:?} view of /m0 differs from the model:\n{diff}"));
        }
        if !full {
            return;
        }
        let rep = self.cmd(who, &["listattr", "/m0"]).await;
        self.expect(&rep, &[0]);
        let got: BTreeMap<String, String> = rep
            .lines
            .chunks(2)
            .map(|c| (unesc(&c[0]).unwrap_or_default(), unesc(c.get(1).map_or("", |s| s)).unwrap_or_default()))
            .collect();
        let want: BTreeMap<String, String> = model.attrs.iter().map(|(k, t)| (k.clone(), t.name())).collect();
        if got != want {
            self.fail(&format!("listattr /m0: server {got:?}, model {want:?}"));
        }
        let rep = self.cmd(who, &["dir", "/m0"]).await;
        self.expect(&rep, &[0]);
        let got: BTreeSet<(String, String)> = rep
            .lines
            .chunks(2)
            .map(|c| {
                let p = unesc(&c[0]).unwrap_or_default();
                (
                    p.rsplit('/').next().unwrap_or_default().to_string(),
                    unesc(c.get(1).map_or("", |s| s)).unwrap_or_default(),
                )
            })
            .collect();
        let want: BTreeSet<(String, String)> = model
            .dirs
            .iter()
            .map(|d| (d.clone(), "collection".to_string()))
            .chain(model.entries.keys().map(|e| (e.clone(), "entry".to_string())))
            .collect();
        if got != want {
            self.fail(&format!("dir /m0: server {got:?}, model {want:?}"));
        }
        let rep = self.cmd(who, &["acl_show", "/m0"]).await;
        self.expect(&rep, &[0]);
        let got: BTreeMap<String, String> = rep
            .lines
            .iter()
            .filter_map(|l| unesc(l))
            .filter_map(|l| l.rsplit_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
            .collect();
        if got != model.acl {
            self.fail(&format!("acl_show /m0: server {got:?}, model {:?}", model.acl));
        }
        let rep = self.cmd(who, &["grp_member", "bob"]).await;
        self.expect(&rep, &[0]);
        let got: BTreeSet<String> = rep
            .lines
            .first()
            .and_then(|l| unesc(l))
            .unwrap_or_default()
            .split(',')
            .filter(|g| g.starts_with("fz"))
            .map(String::from)
            .collect();
        if got != model.bob_groups {
            self.fail(&format!("grp_member bob: server {got:?}, model {:?}", model.bob_groups));
        }
    }

    /// The committed state on the checker; inside a transaction also the transaction's view.
    async fn check_all(&mut self, full: bool) {
        if !self.tx_ddl {
            let committed = self.committed.clone();
            self.check_view(Who::Chk, &committed, full).await;
        }
        if let Some(w) = self.work.clone() {
            self.check_view(Who::M, &w, full).await;
        }
    }

    // ---- operations of `m` (root) ----

    async fn op_addentry(&mut self) {
        let name = self.rng.pick(ENTRY_NAMES).to_string();
        let m = self.cur().clone();
        let mut args = vec!["addentry".to_string(), format!("/m0/{name}")];
        let mut row: Row = m.attrs.keys().map(|a| (a.clone(), None)).collect();
        let mut allowed = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for _ in 0..self.rng.below(4) {
            let a = self.attr_any();
            let ty = m.attrs.get(&a).copied();
            let (text, v) = self.value(ty.unwrap_or(Ty::Int));
            if ty.is_none() {
                allowed.insert(10);
            } else if v.is_none() {
                allowed.insert(18);
            }
            if !seen.insert(a.clone()) {
                allowed.insert(3);
            }
            row.insert(a.clone(), v);
            args.push(a);
            args.push(text);
        }
        if m.entries.contains_key(&name) {
            allowed.insert(15);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let rep = self.cmd(Who::M, &refs).await;
        if allowed.is_empty() {
            self.expect(&rep, &[0]);
            self.cur().entries.insert(name, row);
        } else {
            self.expect(&rep, &allowed.into_iter().collect::<Vec<_>>());
        }
    }

    async fn op_addentries(&mut self) {
        let names: Vec<String> = (0..1 + self.rng.below(3)).map(|_| self.rng.pick(ENTRY_NAMES).to_string()).collect();
        let m = self.cur().clone();
        let mut args = vec!["addentries".to_string()];
        args.extend(names.iter().map(|n| format!("/m0/{n}")));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let rep = self.cmd(Who::M, &refs).await;
        let distinct: BTreeSet<&String> = names.iter().collect();
        let clash = names.iter().any(|n| m.entries.contains_key(n)) || distinct.len() != names.len();
        if clash {
            self.expect(&rep, &[15, 3]);
        } else {
            self.expect(&rep, &[0]);
            let row: Row = m.attrs.keys().map(|a| (a.clone(), None)).collect();
            for n in names {
                self.cur().entries.insert(n, row.clone());
            }
        }
    }

    async fn op_setattr(&mut self) {
        let (target, matched, exact) = self.target();
        let m = self.cur().clone();
        let mut args = vec!["setattr".to_string(), target];
        let mut pairs = Vec::new();
        let mut allowed = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for _ in 0..1 + self.rng.below(2) + usize::from(self.rng.chance(15)) {
            let a = if !pairs.is_empty() && self.rng.chance(25) {
                pairs.iter().map(|(a, _): &(String, Option<Val>)| a.clone()).next().unwrap_or_default()
            } else {
                self.attr_any()
            };
            let ty = m.attrs.get(&a).copied();
            let (text, v) = self.value(ty.unwrap_or(Ty::Int));
            if ty.is_none() {
                allowed.insert(10);
            } else if v.is_none() {
                allowed.insert(18);
            }
            if !seen.insert(a.clone()) {
                allowed.insert(3);
            }
            pairs.push((a.clone(), v));
            args.push(a);
            args.push(text);
        }
        if matched.is_empty() {
            allowed.insert(1);
            if !exact {
                allowed.insert(0);
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let rep = self.cmd(Who::M, &refs).await;
        if allowed.is_empty() || (allowed == BTreeSet::from([0, 1]) && rep.code == 0) {
            self.expect(&rep, &[0]);
            let cur = self.cur();
            for n in &matched {
                let row = cur.entries.get_mut(n).expect("matched");
                for (a, v) in &pairs {
                    row.insert(a.clone(), v.clone());
                }
            }
        } else {
            self.expect(&rep, &allowed.into_iter().collect::<Vec<_>>());
        }
    }

    async fn op_clearattr(&mut self) {
        let (target, matched, exact) = self.target();
        let m = self.cur().clone();
        let a = self.attr_any();
        let rep = self.cmd(Who::M, &["clearattr", &target, &a]).await;
        if !m.attrs.contains_key(&a) {
            self.expect(&rep, &[10, 1]);
        } else if matched.is_empty() {
            self.expect(&rep, if exact { &[1] } else { &[0, 1] });
        } else {
            self.expect(&rep, &[0]);
            let cur = self.cur();
            for n in &matched {
                cur.entries.get_mut(n).expect("matched").insert(a.clone(), None);
            }
        }
    }

    async fn op_rm(&mut self) {
        let with_cond = self.rng.chance(40);
        let (target, mut matched, exact) = if with_cond {
            let m = self.cur().clone();
            ("/m0/*".to_string(), m.entries.keys().cloned().collect(), false)
        } else {
            self.target()
        };
        let cond = with_cond.then(|| self.cond(0));
        let m = self.cur().clone();
        if let Some(c) = &cond {
            matched.retain(|n| c.eval(&m.entries[n]) == Some(true));
        }
        let mut args = vec!["rm".to_string(), target];
        if let Some(c) = &cond {
            args.push(c.text());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let rep = self.cmd(Who::M, &refs).await;
        if matched.is_empty() {
            self.expect(&rep, if exact { &[1] } else { &[0, 1] });
        } else {
            self.expect(&rep, &[0]);
            let cur = self.cur();
            for n in matched {
                cur.entries.remove(&n);
            }
        }
    }

    async fn op_updateattr(&mut self) {
        let m = self.cur().clone();
        let cond = self.cond(0);
        let matched: Vec<String> =
            m.entries.iter().filter(|(_, r)| cond.eval(r) == Some(true)).map(|(n, _)| n.clone()).collect();
        let mut args = vec!["updateattr".to_string(), "/m0/*".to_string()];
        // (attribute, how to compute it)
        let mut sets: Vec<(String, Compute)> = Vec::new();
        let mut allowed = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for _ in 0..1 + usize::from(self.rng.chance(25)) {
            match self.rng.below(3) {
                0 => {
                    let a = self.int_attr();
                    let src = self.int_attr();
                    let op = self.rng.pick(&["+", "-", "*"]);
                    let k: i64 = if self.rng.chance(80) { self.rng.range(-3, 9) } else { i64::MAX };
                    args.push(a.clone());
                    args.push(format!("{src} {op} {k}"));
                    let s2 = src.clone();
                    sets.push((
                        a.clone(),
                        Box::new(move |r: &Row| match r.get(&s2).cloned().flatten() {
                            Some(Val::I(v)) => {
                                let out = match op {
                                    "+" => v.checked_add(k),
                                    "-" => v.checked_sub(k),
                                    _ => v.checked_mul(k),
                                };
                                out.map(|o| Some(Val::I(o))).ok_or(())
                            }
                            _ => Ok(None),
                        }),
                    ));
                    if !seen.insert(a) {
                        allowed.insert(3);
                    }
                }
                1 => {
                    let k = self.rng.pick(&[2.0f64, 0.5, 1e10]);
                    args.push("x".into());
                    args.push(format!("x * {k}"));
                    sets.push((
                        "x".into(),
                        Box::new(move |r: &Row| match r.get("x").cloned().flatten() {
                            Some(Val::F(v)) => {
                                let o = v * k;
                                if o.is_finite() { Ok(Some(Val::F(o))) } else { Err(()) }
                            }
                            _ => Ok(None),
                        }),
                    ));
                    if !seen.insert("x".to_string()) {
                        allowed.insert(3);
                    }
                }
                _ => {
                    let (text, v) = self.value(Ty::Str(12));
                    args.push("s".into());
                    args.push(format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")));
                    if v.is_none() {
                        // Refused even when no entry matches (the literal is checked first),
                        // or accepted as a no-op then.
                        allowed.insert(18);
                        if matched.is_empty() {
                            allowed.insert(0);
                        }
                    }
                    sets.push(("s".into(), Box::new(move |_: &Row| Ok(v.clone()))));
                    if !seen.insert("s".to_string()) {
                        allowed.insert(3);
                    }
                }
            }
        }
        args.push(cond.text());
        // Compute the new rows; an overflow anywhere refuses the whole command.
        let mut new_rows = Vec::new();
        for n in &matched {
            let old = &m.entries[n];
            let mut row = old.clone();
            for (a, f) in &sets {
                match f(old) {
                    Ok(v) => {
                        if v.is_none() && matches!(a.as_str(), "s") {
                            // a too-long literal: refused (18, counted above)
                        }
                        row.insert(a.clone(), v);
                    }
                    Err(()) => {
                        allowed.insert(18);
                        allowed.insert(8);
                    }
                }
            }
            new_rows.push((n.clone(), row));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let rep = self.cmd(Who::M, &refs).await;
        if allowed.is_empty() {
            self.expect(&rep, &[0]);
            let cur = self.cur();
            for (n, r) in new_rows {
                cur.entries.insert(n, r);
            }
        } else {
            self.expect(&rep, &allowed.into_iter().collect::<Vec<_>>());
        }
    }

    async fn op_read(&mut self) {
        let m = self.cur().clone();
        match self.rng.below(3) {
            0 => {
                let cond = self.cond(0);
                let rep = self.cmd(Who::M, &["find", "/m0", &cond.text()]).await;
                self.expect(&rep, &[0]);
                let got: BTreeSet<String> = rep.lines.iter().filter_map(|l| unesc(l)).collect();
                let want: BTreeSet<String> =
                    m.entries.iter().filter(|(_, r)| cond.eval(r) == Some(true)).map(|(n, _)| n.clone()).collect();
                if got != want {
                    self.fail(&format!("find {}: server {got:?}, model {want:?}", cond.text()));
                }
            }
            1 => {
                let cond = self.cond(0);
                let big = self.rng.chance(20);
                let k: i64 = if big { i64::MAX } else { self.rng.range(0, 5) };
                let expr = format!("/m0:a + {k}");
                let rep = self.cmd(Who::M, &["selectattr", "/m0:FILE", &expr, &cond.text()]).await;
                let rows: Vec<(&String, &Row)> = m.entries.iter().filter(|(_, r)| cond.eval(r) == Some(true)).collect();
                let mut want = Vec::new();
                let mut overflow = false;
                for (n, r) in rows {
                    let v = match r.get("a").cloned().flatten() {
                        Some(Val::I(v)) => match v.checked_add(k) {
                            Some(s) => Some(s.to_string()),
                            None => {
                                overflow = true;
                                None
                            }
                        },
                        _ => None,
                    };
                    want.push((n.clone(), v));
                }
                if overflow {
                    // One documented error, before or after some rows (never 99).
                    if rep.code == 0 && rep.inline.is_none() {
                        self.fail("selectattr with an overflowing expression succeeded");
                    }
                    return;
                }
                self.expect(&rep, &[0]);
                let mut got: Vec<(String, Option<String>)> =
                    rep.lines.chunks(2).map(|c| (unesc(&c[0]).unwrap_or_default(), unesc(&c[1]))).collect();
                got.sort();
                want.sort();
                if got != want {
                    self.fail(&format!("selectattr: server {got:?}, model {want:?}"));
                }
            }
            _ => {
                let (target, matched, exact) = self.target();
                let a = self.attr_any();
                let rep = self.cmd(Who::M, &["getattr", &target, &a]).await;
                if !m.attrs.contains_key(&a) {
                    self.expect(&rep, &[10, 1]);
                } else if matched.is_empty() && exact {
                    self.expect(&rep, &[1]);
                } else if matched.is_empty() {
                    self.expect(&rep, &[0, 1]);
                } else {
                    self.expect(&rep, &[0]);
                    if rep.lines.len() != 2 * matched.len() {
                        self.fail(&format!(
                            "getattr {target}: {} lines for {} entries",
                            rep.lines.len(),
                            matched.len()
                        ));
                    }
                }
            }
        }
    }

    async fn op_namespace(&mut self) {
        let m = self.cur().clone();
        let k = self.rng.below(4);
        if k > 0 && self.in_tx() {
            self.tx_ddl = true;
        }
        match k {
            0 => {
                let d = self.rng.pick(DIRS);
                let rep = self.cmd(Who::M, &["createdir", &format!("/m0/{d}")]).await;
                if m.dirs.contains(d) {
                    self.expect(&rep, &[16]);
                } else {
                    self.expect(&rep, &[0]);
                    self.cur().dirs.insert(d.into());
                }
            }
            1 => {
                let d = self.rng.pick(DIRS);
                let rep = self.cmd(Who::M, &["rmdir", &format!("/m0/{d}")]).await;
                if m.dirs.contains(d) {
                    self.expect(&rep, &[0]);
                    self.cur().dirs.remove(d);
                } else {
                    self.expect(&rep, &[1]);
                }
            }
            2 => {
                let a = self.rng.pick(EXTRA_ATTRS);
                let rep = self.cmd(Who::M, &["addattr", "/m0", a, "int"]).await;
                if m.attrs.contains_key(a) {
                    self.expect(&rep, &[15]);
                } else {
                    self.expect(&rep, &[0]);
                    let cur = self.cur();
                    cur.attrs.insert(a.into(), Ty::Int);
                    for r in cur.entries.values_mut() {
                        r.insert(a.into(), None);
                    }
                }
            }
            _ => {
                let a = self.rng.pick(EXTRA_ATTRS);
                let rep = self.cmd(Who::M, &["removeattr", "/m0", a]).await;
                if m.attrs.contains_key(a) {
                    self.expect(&rep, &[0]);
                    let cur = self.cur();
                    cur.attrs.remove(a);
                    for r in cur.entries.values_mut() {
                        r.remove(a);
                    }
                } else {
                    self.expect(&rep, &[10]);
                }
            }
        }
    }

    async fn op_sequence(&mut self) {
        let m = self.cur().clone();
        let q = self.rng.pick(SEQS).to_string();
        match self.rng.below(4) {
            0 => {
                let incr = self.rng.pick(&[1i64, 2, -1, 5, 0]);
                let start = self.rng.pick(&[1i64, 0, 100, -7, i64::MAX - 3, i64::MIN + 2]);
                let rep =
                    self.cmd(Who::M, &["sequence_create", &q, "/m0", &incr.to_string(), &start.to_string()]).await;
                if incr == 0 {
                    self.expect(&rep, &[3]);
                } else if m.seqs.contains_key(&q) {
                    self.expect(&rep, &[15]);
                } else {
                    self.expect(&rep, &[0]);
                    self.cur().seqs.insert(q.clone(), Seq { next: Some(start), incr });
                    self.cur().unknown_seqs.remove(&q);
                }
            }
            1 => {
                let rep = self.cmd(Who::M, &["sequence_remove", &format!("/m0/{q}")]).await;
                if m.seqs.contains_key(&q) {
                    self.expect(&rep, &[0]);
                    self.cur().seqs.remove(&q);
                } else {
                    self.expect(&rep, &[17]);
                }
            }
            _ => {
                let rep = self.cmd(Who::M, &["sequence_next", &format!("/m0/{q}")]).await;
                let Some(seq) = m.seqs.get(&q).cloned() else {
                    self.expect(&rep, &[17]);
                    return;
                };
                if m.unknown_seqs.contains(&q) {
                    if rep.code == 0 {
                        let v: i64 = rep.lines[0].parse().unwrap_or_else(|_| self.fail("sequence value"));
                        let next = v.checked_add(seq.incr);
                        self.cur().seqs.insert(q.clone(), Seq { next, incr: seq.incr });
                        self.cur().unknown_seqs.remove(&q);
                    }
                    return;
                }
                match seq.next {
                    None => {
                        if rep.code == 0 {
                            self.fail("sequence_next past the end of the int range succeeded");
                        }
                    }
                    Some(v) => match v.checked_add(seq.incr) {
                        Some(n) => {
                            self.expect(&rep, &[0]);
                            if rep.lines.first().map(String::as_str) != Some(&v.to_string()) {
                                self.fail(&format!("sequence_next {q}: expected {v}"));
                            }
                            self.cur().seqs.insert(q, Seq { next: Some(n), incr: seq.incr });
                        }
                        None => {
                            // The value itself is fine; the one after it does not exist.
                            if rep.code == 0 {
                                if rep.lines.first().map(String::as_str) != Some(&v.to_string()) {
                                    self.fail(&format!("sequence_next {q}: expected {v}"));
                                }
                                self.cur().seqs.insert(q, Seq { next: None, incr: seq.incr });
                            }
                        }
                    },
                }
            }
        }
    }

    async fn op_perms(&mut self) {
        match self.rng.below(5) {
            0 => {
                let mode = self.rng.pick(&["rwxrwxrwx", "rwxr-xr-x", "rwx------", "rwxrwx---", "rwxr-x-w-"]);
                let rep = self.cmd(Who::M, &["chmod", "/m0", mode]).await;
                self.expect(&rep, &[0]);
            }
            1 => {
                let e = self.rng.pick(ENTRY_NAMES);
                let exists = self.cur().entries.contains_key(e);
                let mode = self.rng.pick(&["rw-rw-rw-", "rw-r--r--", "rw-------"]);
                let rep = self.cmd(Who::M, &["chmod", &format!("/m0/{e}"), mode]).await;
                self.expect(&rep, if exists { &[0] } else { &[1] });
            }
            2 => {
                let e = self.rng.pick(ENTRY_NAMES);
                let exists = self.cur().entries.contains_key(e);
                let who = self.rng.pick(&["bob", "root"]);
                let rep = self.cmd(Who::M, &["chown", &format!("/m0/{e}"), who]).await;
                self.expect(&rep, if exists { &[0] } else { &[1] });
            }
            3 => {
                // acl_add takes a user or group name; acl_show writes groups as group:<name>.
                let who = self.rng.pick(&["bob", "group:fzg0", "group:fzg1"]);
                let rights = self.rng.pick(&["rwx", "r-x", "rw-", "---"]);
                let name = who.strip_prefix("group:").unwrap_or(who);
                let rep = self.cmd(Who::M, &["acl_add", "/m0", name, rights]).await;
                let group_missing = who.strip_prefix("group:").is_some_and(|g| !self.cur().groups.contains(g));
                if group_missing {
                    self.expect(&rep, &[1]);
                } else {
                    self.expect(&rep, &[0]);
                    self.cur().acl.insert(who.into(), rights.into());
                }
            }
            _ => {
                let who = self.rng.pick(&["bob", "group:fzg0", "group:fzg1"]);
                let name = who.strip_prefix("group:").unwrap_or(who);
                let rep = self.cmd(Who::M, &["acl_remove", "/m0", name]).await;
                if self.cur().acl.contains_key(who) {
                    self.expect(&rep, &[0]);
                    self.cur().acl.remove(who);
                } else {
                    self.expect(&rep, &[1]);
                }
            }
        }
    }

    async fn op_users(&mut self) {
        let g = self.rng.pick(GROUPS).to_string();
        let m = self.cur().clone();
        match self.rng.below(4) {
            0 => {
                let rep = self.cmd(Who::M, &["grp_create", &g]).await;
                if m.groups.contains(&g) {
                    self.expect(&rep, &[15]);
                } else {
                    self.expect(&rep, &[0]);
                    self.cur().groups.insert(g);
                }
            }
            1 => {
                let rep = self.cmd(Who::M, &["grp_remove", &g]).await;
                if m.groups.contains(&g) {
                    // A group in an ACL may be refused or take its ACL entries with it.
                    let in_acl = m.acl.contains_key(&format!("group:{g}"));
                    if in_acl && rep.code != 0 {
                        self.expect(&rep, &[3, 11, 15]);
                        return;
                    }
                    self.expect(&rep, &[0]);
                    let cur = self.cur();
                    cur.groups.remove(&g);
                    cur.bob_groups.remove(&g);
                    cur.acl.remove(&format!("group:{g}"));
                } else {
                    self.expect(&rep, &[1]);
                }
            }
            2 => {
                let rep = self.cmd(Who::M, &["grp_adduser", &g, "bob"]).await;
                if !m.groups.contains(&g) {
                    self.expect(&rep, &[1]);
                } else if m.bob_groups.contains(&g) {
                    // Adding a member twice: refused, or a no-op.
                    self.expect(&rep, &[0, 15]);
                } else {
                    self.expect(&rep, &[0]);
                    self.cur().bob_groups.insert(g);
                }
            }
            _ => {
                let rep = self.cmd(Who::M, &["grp_removeuser", &g, "bob"]).await;
                if m.bob_groups.contains(&g) {
                    self.expect(&rep, &[0]);
                    self.cur().bob_groups.remove(&g);
                } else {
                    self.expect(&rep, &[1]);
                }
            }
        }
    }

    async fn op_upload(&mut self) {
        let m = self.cur().clone();
        let attrs: Vec<String> = if self.rng.chance(80) { vec!["a".into(), "s".into()] } else { vec!["a".into()] };
        let mut lines = vec![format!("upload /m0 {}", attrs.join(" "))];
        let mut rows = Vec::new();
        let mut bad = false;
        let mut names = BTreeSet::new();
        for _ in 0..1 + self.rng.below(4) {
            let name = self.rng.pick(ENTRY_NAMES).to_string();
            if m.entries.contains_key(&name) || !names.insert(name.clone()) {
                bad = true;
            }
            let mut row: Row = m.attrs.keys().map(|a| (a.clone(), None)).collect();
            let mut args = vec![Some("put".to_string()), Some(name.clone())];
            for a in &attrs {
                let (text, v) = self.value(m.attrs[a]);
                bad |= v.is_none();
                row.insert(a.clone(), v);
                args.push(Some(text));
            }
            if self.rng.chance(5) {
                args.pop();
                bad = true;
            }
            let refs: Vec<Option<&str>> = args.iter().map(|a| a.as_deref()).collect();
            lines.push(join_escaped_args(&refs));
            rows.push((name, row));
        }
        let commit = self.rng.chance(80);
        for l in &lines {
            self.m.send(format!("{l}\n").as_bytes()).await;
            self.note(Who::M, l, "(no reply)");
        }
        let rep = self.send_raw(Who::M, if commit { b"commit" } else { b"abort" }).await;
        if !commit {
            self.expect(&rep, &[0]);
        } else if bad {
            self.expect(&rep, &[3, 15, 18]);
        } else {
            self.expect(&rep, &[0]);
            for (n, r) in rows {
                self.cur().entries.insert(n, r);
            }
        }
    }

    async fn op_transaction(&mut self) {
        if !self.in_tx() {
            if self.rng.chance(10) {
                let which: &[u8] = if self.rng.chance(50) { b"commit" } else { b"abort" };
                let rep = self.send_raw(Who::M, which).await;
                self.expect(&rep, &[9]);
                return;
            }
            let rep = self.send_raw(Who::M, b"transaction").await;
            self.expect(&rep, &[0]);
            self.work = Some(self.committed.clone());
            return;
        }
        match self.rng.below(10) {
            0 => {
                let rep = self.send_raw(Who::M, b"transaction").await;
                self.expect(&rep, &[9]);
            }
            1..=3 => {
                let rep = self.send_raw(Who::M, b"abort").await;
                self.expect(&rep, &[0]);
                self.work = None;
                self.tx_ddl = false;
                self.check_all(false).await;
            }
            _ => {
                // Before the commit, others still see the committed state.
                let rep = self.send_raw(Who::M, b"commit").await;
                self.expect(&rep, &[0]);
                self.committed = self.work.take().expect("in a transaction");
                self.tx_ddl = false;
                self.commits += 1;
                self.check_all(true).await;
            }
        }
    }

    /// Hang up and resume the session: an open transaction is rolled back.
    async fn op_resume(&mut self) {
        let Some(id) = self.session else { return };
        let _ = self.m.shutdown_write().await;
        assert!(self.m.closed().await, "the server did not close the connection after EOF");
        self.m = RawConn::resume(self.srv.tcp, id).await;
        self.note(Who::M, &format!("(hang up; resume{id})"), "");
        self.work = None;
        self.tx_ddl = false;
        let rep = self.cmd(Who::M, &["whoami"]).await;
        self.expect(&rep, &[0]);
        if rep.lines != ["root"] {
            self.fail(&format!("whoami after resume: {:?}", rep.lines));
        }
        self.check_all(false).await;
    }

    /// A query cancelled with CAN right after it is sent: one reply, and the connection goes on.
    async fn op_cancel(&mut self) {
        let who = if self.rng.chance(70) || self.tx_ddl { Who::M } else { Who::Chk };
        let c = self.conn(who);
        c.send(b"selectattr /m0:FILE /m0:a /m0:s 'true'\n\x18").await;
        let raw = c.reply().await;
        let rep = parse_reply(&raw, true);
        self.note(who, "selectattr … + CAN", &String::from_utf8_lossy(&raw).chars().take(120).collect::<String>());
        if rep.code == 99 || rep.inline == Some(99) {
            self.fail("code 99 after a cancel");
        }
        if rep.code != 0 && rep.code != 20 {
            self.fail(&format!("cancelled query answered {}", rep.code));
        }
        if rep.inline.is_some_and(|c| c != 20) {
            self.fail("cancelled query failed inline with a code other than 20");
        }
        let rep = self.cmd(who, &["pwd"]).await;
        self.expect(&rep, &[0]);
    }

    /// `bob` (not root): writes and reads of single entries; he may or may not be allowed.
    async fn op_bob(&mut self) {
        if self.tx_ddl {
            return;
        }
        let e = self.rng.pick(ENTRY_NAMES).to_string();
        let path = format!("/m0/{e}");
        let writes = !self.in_tx();
        match self.rng.below(if writes { 5 } else { 1 }) {
            0 => {
                let rep = self.cmd(Who::Bob, &["getattr", &path, "a", "s"]).await;
                let row = self.committed.entries.get(&e).cloned();
                match row {
                    None => self.expect(&rep, &[1, 4]),
                    Some(r) => {
                        self.expect(&rep, &[0, 4]);
                        if rep.code == 0 {
                            let show = |v: Option<Val>| match v {
                                Some(Val::I(i)) => i.to_string(),
                                Some(Val::S(s)) => s,
                                Some(Val::F(f)) => f.to_string(),
                                None => String::new(),
                            };
                            let want = vec![e.clone(), show(r["a"].clone()), show(r["s"].clone())];
                            if rep.lines != want {
                                self.fail(&format!("bob's getattr: server {:?}, model {want:?}", rep.lines));
                            }
                        }
                    }
                }
            }
            1 => {
                let (text, v) = self.value(Ty::Int);
                let rep = self.cmd(Who::Bob, &["setattr", &path, "a", &text]).await;
                let exists = self.committed.entries.contains_key(&e);
                match (exists, v) {
                    (false, None) => self.expect(&rep, &[1, 4, 18]),
                    (false, _) => self.expect(&rep, &[1, 4]),
                    (true, None) => self.expect(&rep, &[4, 18]),
                    (true, Some(v)) => {
                        self.expect(&rep, &[0, 4]);
                        if rep.code == 0 {
                            self.committed.entries.get_mut(&e).expect("exists").insert("a".into(), Some(v));
                        }
                    }
                }
            }
            2 => {
                let rep = self.cmd(Who::Bob, &["addentry", &path]).await;
                if self.committed.entries.contains_key(&e) {
                    self.expect(&rep, &[4, 15]);
                } else {
                    self.expect(&rep, &[0, 4]);
                    if rep.code == 0 {
                        let row: Row = self.committed.attrs.keys().map(|a| (a.clone(), None)).collect();
                        self.committed.entries.insert(e, row);
                    }
                }
            }
            3 => {
                // bob changes permissions: of entries he owns (root may have given him some).
                let rep = if self.rng.chance(50) {
                    let mode = self.rng.pick(&["rw-rw-rw-", "rw-------", "r--r--r--"]);
                    self.cmd(Who::Bob, &["chmod", &path, mode]).await
                } else {
                    let rights = self.rng.pick(&["rw-", "r--"]);
                    self.cmd(Who::Bob, &["acl_add", &path, "anonymous", rights]).await
                };
                if self.committed.entries.contains_key(&e) {
                    self.expect(&rep, &[0, 4]);
                } else {
                    self.expect(&rep, &[1, 4]);
                }
            }
            _ => {
                let rep = self.cmd(Who::Bob, &["rm", &path]).await;
                if self.committed.entries.contains_key(&e) {
                    self.expect(&rep, &[0, 4]);
                    if rep.code == 0 {
                        self.committed.entries.remove(&e);
                    }
                } else {
                    self.expect(&rep, &[1, 4]);
                }
            }
        }
    }

    /// A valid command line for the scratch collection `/z`, as a seed for mutation.
    fn scratch_line(&mut self) -> Vec<u8> {
        let n = self.rng.below(12);
        let v = self.rng.range(-5, 30);
        let l = match self.rng.below(16) {
            0 => format!("addentry /z/e{n} a {v} s 'it''s' x 0.5"),
            1 => format!("setattr /z/e* a {v} s x"),
            2 => format!("updateattr /z/* a 'a + {v}' 'a > 3'"),
            3 => format!("selectattr /z:FILE /z:a 'a > {v} and s = \"x\"'"),
            4 => format!("find /z 'a between 1 and {v}'"),
            5 => format!("rm /z/e{n}"),
            6 => format!("sequence_create s{n} /z {v} 1"),
            7 => format!("sequence_next /z/s{n}"),
            8 => format!("createdir /z/d{n}"),
            9 => format!("addattr /z n{n} varchar(9)"),
            10 => "transaction".into(),
            11 => format!("acl_add /z/e{n} anonymous r--"),
            12 => "chmod /z/e* rw-r-----".to_string(),
            13 => "getattr /z/e? a s x".to_string(),
            14 => format!("clearattr /z/e{n} a"),
            _ => format!("upload /z a\nput z{n} {v}"),
        };
        l.into_bytes()
    }

    fn mutate(&mut self, mut v: Vec<u8>) -> Vec<u8> {
        const TOKENS: &[&[u8]] = &[
            b"'",
            b"\\'",
            b"\\",
            b" ",
            b"\0",
            b"\xff",
            b"*",
            b"?",
            b"/",
            b"..",
            b"9223372036854775807",
            b"-",
            b"\"",
            b" and ",
            b" or ",
            b"(",
            b")",
            b"1e308",
            b"a a",
            b"\\N",
        ];
        for _ in 0..self.rng.below(5) {
            let len = v.len();
            let at = self.rng.below(len + 1);
            match self.rng.below(5) {
                0 if len > 0 => {
                    let i = self.rng.below(len);
                    v[i] ^= 1 << self.rng.below(8);
                }
                1 => {
                    let t = self.rng.pick(TOKENS);
                    v.splice(at..at, t.iter().copied());
                }
                2 if len > 0 => {
                    let end = (at + 1 + self.rng.below(6)).min(len);
                    v.drain(at.min(len - 1)..end);
                }
                3 if len > 0 => {
                    let from = self.rng.below(len);
                    let piece = v[from..(from + 1 + self.rng.below(12)).min(len)].to_vec();
                    v.splice(at..at, piece);
                }
                _ => v.truncate(at),
            }
        }
        v
    }

    /// A mutated line on the chaos connection: any code but 99, then `abort` ends whatever it
    /// opened (a transaction, an upload).
    async fn op_chaos(&mut self) {
        let seed = if self.rng.chance(50) { self.rng.pick(&self.corpus.clone()) } else { self.scratch_line() };
        let mut line = self.mutate(seed);
        for b in line.iter_mut() {
            if *b == b'\n' || *b == 0x18 {
                *b = b' ';
            }
        }
        let lower = String::from_utf8_lossy(&line).to_lowercase();
        // Leave what the model owns alone.
        if ["m0", "bob", "fz", "root"].iter().any(|p| lower.contains(p)) {
            return;
        }
        if lower.trim_start().starts_with("upload") {
            // No reply to an upload that parses (`abort` answers for it); one that does not
            // parse answers with an error, before `abort`'s 0 or 9.
            self.chaos.send(&line).await;
            self.chaos.send(b"\n").await;
            self.note(Who::Chaos, &lower, "(no reply)");
            let first = self.send_raw(Who::Chaos, b"abort").await;
            if first.code != 0 && first.code != 9 {
                let raw = self.chaos.reply().await;
                let rep = parse_reply(&raw, false);
                self.note(Who::Chaos, "(abort, answered second)", &String::from_utf8_lossy(&raw));
                self.expect(&rep, &[0, 9]);
            }
            return;
        } else {
            let rep = self.send_raw(Who::Chaos, &line).await;
            if !(0..=20).contains(&rep.code) {
                self.fail(&format!("mutated line answered code {}", rep.code));
            }
        }
        let rep = self.send_raw(Who::Chaos, b"abort").await;
        self.expect(&rep, &[0, 9]);
    }

    async fn step_once(&mut self) {
        let k = self.rng.below(100);
        match k {
            0..=11 => self.op_addentry().await,
            12..=14 => self.op_addentries().await,
            15..=24 => self.op_setattr().await,
            25..=28 => self.op_clearattr().await,
            29..=34 => self.op_rm().await,
            35..=42 => self.op_updateattr().await,
            43..=52 => self.op_read().await,
            53..=57 => self.op_namespace().await,
            58..=62 => self.op_sequence().await,
            63..=66 => self.op_perms().await,
            67..=69 => self.op_users().await,
            70..=73 => self.op_upload().await,
            74..=83 => self.op_transaction().await,
            84..=85 => self.op_resume().await,
            86..=87 => self.op_cancel().await,
            88..=92 => self.op_bob().await,
            _ => {
                if !self.in_tx() {
                    self.op_chaos().await
                }
            }
        }
    }
}

/// One seeded run on a fresh server.
async fn run(backend: Backend, seed: u64, steps: usize) -> BTreeMap<i32, u64> {
    let srv = TestServer::start_flags(backend, &["--sessions", "allow"]).await;
    let mut setup = srv.raw().await;
    for l in [
        "createdir /m0",
        "addattr /m0 a int",
        "addattr /m0 s varchar(12)",
        "addattr /m0 x float",
        "createdir /z",
        "addattr /z a int",
        "addattr /z s varchar(12)",
        "addattr /z x float",
        &format!("user_create bob {BOB_PW}"),
    ] {
        ok(&mut setup, l).await;
    }
    let base = ok(&mut setup, "grp_member bob").await;
    assert!(!base.concat().contains("fz"), "{base:?}");
    drop(setup);
    let mut model = Model::default();
    for (a, t) in [("a", Ty::Int), ("s", Ty::Str(12)), ("x", Ty::Float)] {
        model.attrs.insert(a.into(), t);
    }
    let m = login_with(srv.tcp, "root", ROOT_PASSWORD, &["escape", "session"]).await;
    let chk = login_with(srv.tcp, "root", ROOT_PASSWORD, &["escape"]).await;
    let bob = srv.raw_as("bob", BOB_PW).await;
    let chaos = srv.raw().await;
    let mut f = Fuzz {
        seed,
        step: 0,
        rng: Rng::new(seed),
        srv: &srv,
        m,
        chk,
        bob,
        chaos,
        committed: model,
        work: None,
        session: None,
        tx_ddl: false,
        transcript: VecDeque::new(),
        codes: BTreeMap::new(),
        corpus: corpus(),
        commits: 0,
        checks: 0,
    };
    // The first reply carries the session id.
    let rep = f.cmd(Who::M, &["pwd"]).await;
    f.expect(&rep, &[0]);
    for step in 0..steps {
        f.step = step;
        f.step_once().await;
        if step % 25 == 24 {
            f.check_all(step % 100 == 99).await;
        }
        let errors = srv.internal_errors();
        if !errors.is_empty() {
            f.fail(&format!("the server logged an internal error: {}", errors.join("\n")));
        }
    }
    f.check_all(true).await;
    // The server is still up and answers a fresh login.
    let mut again = srv.raw().await;
    ok(&mut again, "pwd").await;
    eprintln!("seed {seed}: {steps} steps, {} commits, {} state checks, codes {:?}", f.commits, f.checks, f.codes);
    f.codes
}

async fn stateful_tcp(backend: Backend) {
    let steps = env_num("ARDACAT_FUZZ_STEPS").unwrap_or(300) as usize;
    let seeds = seeds();
    eprintln!("stateful TCP fuzz on {backend:?}: seeds {seeds:?}, {steps} steps each");
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
    // The run must have exercised both outcomes, or it checks nothing.
    assert!(total.get(&0).copied().unwrap_or(0) > 100, "too few successful commands: {total:?}");
    assert!(total.keys().filter(|c| **c != 0).count() >= 5, "too few kinds of errors: {total:?}");
    eprintln!("stateful TCP fuzz on {backend:?}: reply codes {total:?}");
}

// ------------------------------------------------------------------------------------------
// The internal-error check of the test servers (tests/common): it must see a real one.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_error_in_the_log_is_seen() {
    let mut srv = TestServer::start(Backend::Postgres).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /c").await;
    ok(&mut c, "sequence_create q /c").await;
    // Break the database under the server: the next sequence_next is a storage failure.
    let mut pg = <sqlx::PgConnection as sqlx::Connection>::connect(&srv.db.url).await.expect("connect");
    sqlx::query("DROP TABLE sequences").execute(&mut pg).await.expect("drop");
    let (code, _) = c.lines("sequence_next /c/q").await;
    assert_eq!(code, 99);
    // The line is in the pipe before the reply was sent; the reading thread may lag a little.
    let mut errors = srv.internal_errors();
    for _ in 0..100 {
        if !errors.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        errors = srv.internal_errors();
    }
    assert!(!errors.is_empty(), "the log check did not see the internal error");
    assert!(common::is_internal_error_line(&errors[0]), "{errors:?}");
    srv.expect_internal_errors("this test breaks the database on purpose");
}

#[test]
fn log_lines_recognised() {
    assert!(is_internal_error_line(
        "2025-01-01T00:00:00.000000Z ERROR ardacat_server::tcp::conn: internal error peer=127.0.0.1:1 command=getattr"
    ));
    assert!(is_internal_error_line("2025-01-01T00:00:00.000000Z  WARN ardacat_store::catalog: storage error error=x"));
    assert!(!is_internal_error_line("2025-01-01T00:00:00.000000Z  WARN ardacat_server::tcp: accept failed ERROR"));
    assert!(!is_internal_error_line("2025-01-01T00:00:00.000000Z  INFO audit: denied"));
}

// ------------------------------------------------------------------------------------------
// Regressions found by the stateful fuzzer

on_both_backends!(entry_commands_before_the_first_entry);

/// A collection that never had an entry has no entry table yet: every command naming an entry
/// in it answers "no such entry", never 99 (chmod and chown of `/c/e` answered 99; seed 4).
async fn entry_commands_before_the_first_entry(backend: Backend) {
    let srv = TestServer::start(backend).await;
    let mut c = srv.raw().await;
    ok(&mut c, "createdir /c").await;
    ok(&mut c, "addattr /c a int").await;
    ok(&mut c, "user_create bob pw").await;
    for line in [
        "chmod /c/e rw-------",
        "chown /c/e bob",
        "acl_add /c/e bob rwx",
        "acl_remove /c/e bob",
        "acl_show /c/e",
        "getattr /c/e a",
        "setattr /c/e a 1",
        "clearattr /c/e a",
        "rm /c/e",
        "stat /c/e",
        "listattr /c/e",
        "sequence_next /c/e",
    ] {
        let (code, lines) = c.lines(line).await;
        assert!(code == 1 || code == 17, "{line}: {code} {lines:?}");
    }
    for line in ["chmod /c/e* rw-------", "chown /c/e* bob", "rm /c/e*", "setattr /c/* a 1"] {
        let (code, lines) = c.lines(line).await;
        assert!(code == 0 || code == 1, "{line}: {code} {lines:?}");
    }
    // Inside a transaction too, and the transaction still commits.
    ok(&mut c, "transaction").await;
    let (code, _) = c.lines("chmod /c/e rw-------").await;
    assert_eq!(code, 1);
    ok(&mut c, "addentry /c/f a 1").await;
    ok(&mut c, "commit").await;
    assert_eq!(ok(&mut c, "getattr /c/f a").await, ["f", "1"]);
}
