//! Running it in production (issue #19): the probes `/healthz` and `/readyz`, `/metrics` in the
//! Prometheus exposition format (checked by `promtool check metrics` and a strict parser), the
//! metrics listener, structured (JSON) request logs, and reload on SIGHUP.

#[macro_use]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use common::{Backend, TestDb, TestServer, ok};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One plain HTTP/1.1 GET: (status, body).
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    split_response(&out)
}

fn split_response(out: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(out).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.into() };
    (status, body)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

async fn store_exec(db: &TestDb, sql: &str) {
    let store = ardacat_store::Db::open(&db.url, ardacat_store::DbOptions::default()).await.unwrap();
    store.acquire().await.unwrap().execute(sql, &[]).await.unwrap();
    store.close().await;
}

fn check_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["check"].as_str().unwrap_or("").to_string()
}

async fn probes(b: Backend) {
    let server = TestServer::start(b).await;
    assert_eq!(get(server.http, "/healthz").await.0, 200);
    let (status, body) = get(server.http, "/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"ready\""), "{body}");

    // The database is at a migration this binary does not know.
    store_exec(
        &server.db,
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99999, 'future', 'x', '2026-01-01 00:00:00')",
    )
    .await;
    let (status, body) = get(server.http, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(check_of(&body), "schema", "{body}");
    assert!(body.contains("ahead"), "{body}");
    assert_eq!(get(server.http, "/healthz").await.0, 200, "the process still serves");
    store_exec(&server.db, "DELETE FROM schema_migrations WHERE version = 99999").await;
    assert_eq!(get(server.http, "/readyz").await.0, 200);

    // The database lacks this binary's last migration.
    store_exec(
        &server.db,
        "DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)",
    )
    .await;
    let (status, body) = get(server.http, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(check_of(&body), "schema");
    assert!(body.contains("behind"), "{body}");
}

async fn probes_database_gone(b: Backend) {
    let db = TestDb::new(b).await;
    let server = TestServer::start_with(db.share(), &[]).await;
    assert_eq!(get(server.http, "/readyz").await.0, 200);
    match b {
        Backend::Postgres => {
            // Drop the database under the server (its connections are terminated).
            let name = db.url.rsplit('/').next().unwrap().to_string();
            let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&common::pg_admin_url()).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                .execute(&mut admin)
                .await
                .unwrap();
        }
        Backend::Sqlite => {
            // The schema_migrations table disappears: the database no longer answers the probe.
            store_exec(&db, "DROP TABLE schema_migrations").await;
        }
    }
    let (status, body) = get(server.http, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(check_of(&body), "database", "{body}");
    assert!(!body.contains("ardacat_t_"), "no database names in the probe: {body}");
    assert_eq!(get(server.http, "/healthz").await.0, 200);
}

async fn metrics_listener(b: Backend) {
    let server = TestServer::start_flags(b, &["--metrics-bind", "127.0.0.1:0"]).await;
    let m = server.metrics.expect("metrics= in the banner");
    let (status, body) = get(m, "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.contains("# TYPE ardacat_tcp_connections_open gauge"), "{body}");
    assert_eq!(get(m, "/healthz").await.0, 200);
    assert_eq!(get(m, "/readyz").await.0, 200);
    assert_eq!(get(server.http, "/metrics").await.0, 404, "metrics only on the metrics listener");
    assert_eq!(get(server.http, "/readyz").await.0, 200, "probes stay on the service port");
    assert_eq!(get(m, "/soap.wsdl").await.0, 404, "no catalogue routes on the metrics listener");
}

on_both_backends!(probes, probes_database_gone, metrics_listener);

// ------------------------------------------------------------------------------------------
// /metrics in the exposition format

fn soap_ping() -> String {
    soap_request(
        "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
         <ping xmlns=\"urn:ardacat:metadata:1\"/></soap:Body></soap:Envelope>",
    )
}

/// A SOAP 1.1 POST of `body` as root.
fn soap_request(body: &str) -> String {
    let auth = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("root:{}", common::ROOT_PASSWORD))
    };
    format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nAuthorization: Basic {auth}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn post(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    split_response(&out)
}

/// A strict reading of the text format: every sample's family was announced by `# HELP` and
/// `# TYPE` (in that order) right before its first sample, a family's samples are contiguous and
/// it never reappears, names and labels are well-formed, no series repeats, counters end in
/// `_total`, histograms have cumulative buckets ending in `+Inf` = `_count`. Returns
/// family → (type, samples as (series, value)).
fn strict_parse(text: &str) -> BTreeMap<String, (String, Vec<(String, f64)>)> {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut families: BTreeMap<String, (String, Vec<(String, f64)>)> = BTreeMap::new();
    let mut closed: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut pending_help: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let at = |msg: &str| format!("line {}: {msg}: {line:?}", i + 1);
        assert!(!line.is_empty(), "{}", at("empty line"));
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at("HELP without text")));
            assert!(name_ok(name) && !help.trim().is_empty(), "{}", at("bad HELP"));
            assert!(!families.contains_key(name), "{}", at("family announced twice"));
            if let Some(c) = current.take() {
                closed.insert(c);
            }
            pending_help = Some(name.to_string());
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("{}", at("TYPE without type")));
            assert_eq!(pending_help.take().as_deref(), Some(name), "{}", at("TYPE not right after its HELP"));
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{}", at("unexpected type"));
            if kind == "counter" {
                assert!(name.ends_with("_total"), "{}", at("counter without _total"));
            } else {
                assert!(!name.ends_with("_total"), "{}", at("_total on a non-counter"));
            }
            families.insert(name.to_string(), (kind.to_string(), Vec::new()));
            current = Some(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "{}", at("unknown comment"));
        assert!(pending_help.is_none(), "{}", at("HELP without TYPE"));
        let (series_key, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{}", at("no value")));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{}", at("bad value")));
        let (name, labels) = match series_key.split_once('{') {
            Some((n, l)) => (n, Some(l.strip_suffix('}').unwrap_or_else(|| panic!("{}", at("unclosed labels"))))),
            None => (series_key, None),
        };
        assert!(name_ok(name), "{}", at("bad metric name"));
        if let Some(l) = labels {
            // k="v" pairs, values with only \\, \" and \n escapes.
            let mut rest = l;
            while !rest.is_empty() {
                let (k, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("{}", at("bad label")));
                assert!(name_ok(k) && !k.starts_with("__"), "{}", at("bad label name"));
                let mut chars = after.char_indices();
                let mut end = None;
                while let Some((j, c)) = chars.next() {
                    match c {
                        '\\' => assert!(matches!(chars.next(), Some((_, '\\' | '"' | 'n'))), "{}", at("bad escape")),
                        '"' => {
                            end = Some(j);
                            break;
                        }
                        _ => {}
                    }
                }
                let end = end.unwrap_or_else(|| panic!("{}", at("unterminated label value")));
                rest = &after[end + 1..];
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
        }
        let fam = current.clone().unwrap_or_else(|| panic!("{}", at("sample before any TYPE")));
        let kind = families[&fam].0.clone();
        let belongs = if kind == "histogram" {
            ["_bucket", "_sum", "_count"].iter().any(|s| name.strip_suffix(s) == Some(fam.as_str()))
        } else {
            name == fam
        };
        assert!(belongs, "{}", at(&format!("sample outside its family {fam}")));
        assert!(!closed.contains(&fam), "{}", at("family continued after another"));
        assert!(series.insert(series_key.to_string()), "{}", at("duplicate series"));
        if kind == "counter" {
            assert!(value >= 0.0, "{}", at("negative counter"));
        }
        families.get_mut(&fam).unwrap().1.push((series_key.to_string(), value));
    }
    // Histograms: per label set, buckets cumulative and +Inf == _count.
    for (fam, (kind, samples)) in &families {
        if kind != "histogram" {
            continue;
        }
        let mut last: BTreeMap<String, f64> = BTreeMap::new();
        for (key, v) in samples {
            if let Some(l) = key.strip_prefix(&format!("{fam}_bucket{{")) {
                let base = l.rsplit_once(",le=").map(|(b, _)| b.to_string()).expect("le label last");
                let prev = last.insert(base.clone(), *v).unwrap_or(0.0);
                assert!(*v >= prev, "{fam}: bucket decreases at {key}");
                if l.contains("le=\"+Inf\"") {
                    let count_key = format!("{fam}_count{{{base}}}");
                    let count = samples.iter().find(|(k, _)| *k == count_key).map(|(_, v)| *v);
                    assert_eq!(count, Some(*v), "{fam}: +Inf bucket != count for {base}");
                }
            }
        }
    }
    families
}

async fn exposition(b: Backend) {
    let server = TestServer::start(b).await;
    // A busy server: TCP commands (some failing), SOAP requests (DDS hits after the first).
    let mut c = server.raw().await;
    ok(&mut c, "createdir /m").await;
    ok(&mut c, "addattr /m n int").await;
    for i in 0..5 {
        ok(&mut c, &format!("addentry /m/e{i} n {i}")).await;
    }
    ok(&mut c, "selectattr /m:n 'n > 1'").await;
    common::fails(&mut c, "getattr /m/none FILE", 1).await;
    common::fails(&mut c, "nosuchcommand", 3).await;
    for _ in 0..4 {
        assert_eq!(post(server.http, &soap_ping()).await.0, 200);
    }
    let stats = ok(&mut c, "stats").await;
    let (status, text) = get(server.http, "/metrics").await;
    assert_eq!(status, 200);

    // promtool (Debian's prometheus package) must accept it without a single warning.
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is required (apt-get install prometheus; tests/run-all.sh installs it)");
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics:\n{said}\non\n{text}");

    let families = strict_parse(&text);
    let value = |series: &str| -> f64 {
        let fam = families
            .values()
            .flat_map(|(_, s)| s.iter())
            .find(|(k, _)| k == series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        fam.1
    };
    assert_eq!(families["ardacat_tcp_connections_open"].0, "gauge");
    assert_eq!(value("ardacat_tcp_connections_open"), 1.0);
    assert_eq!(value("ardacat_requests_total{frontend=\"tcp\",operation=\"addentry\"}"), 5.0);
    assert_eq!(value("ardacat_request_errors_total{frontend=\"tcp\",operation=\"getattr\"}"), 1.0);
    assert_eq!(value("ardacat_requests_total{frontend=\"soap\",operation=\"ping\"}"), 4.0);
    assert_eq!(value("ardacat_request_duration_seconds_count{frontend=\"soap\",operation=\"ping\"}"), 4.0);
    assert!(value("ardacat_soap_dds_hits_total") >= 3.0);
    assert!(families["ardacat_soap_dds_declines_total"].1.iter().any(|(k, _)| k.contains("reason=\"")));
    assert!(value("ardacat_db_pool_connections{state=\"idle\"}") >= 0.0);
    assert_eq!(families["ardacat_getattr_plans_total"].0, "counter");
    for source in ["session", "shared", "built"] {
        assert!(value(&format!("ardacat_getattr_plans_total{{source=\"{source}\"}}")) >= 0.0);
    }
    for gauge in ["process_open_fds", "process_resident_memory_bytes", "process_start_time_seconds"] {
        assert_eq!(families[gauge].0, "gauge");
        assert!(value(gauge) > 0.0, "{gauge}");
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let start = value("process_start_time_seconds");
    assert!(start <= now + 1.0 && start > now - 3600.0, "start {start} now {now}");
    assert_eq!(families["process_cpu_seconds_total"].0, "counter");

    // `stats` prints the same counters under the same names (without the ardacat_ prefix).
    for name in ["tcp_commands_total ", "tcp_connections_open 1", "soap_dds_hits_total ", "db_pool_size "] {
        assert!(stats.iter().any(|l| l.starts_with(name)), "{name} in {stats:?}");
    }
    assert!(stats.iter().any(|l| l.starts_with("soap_dds_declines_total{reason=\"")), "{stats:?}");
}

on_both_backends!(exposition);

// ------------------------------------------------------------------------------------------
// Structured logs

/// The server's stderr lines, collected as they come.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<String>>>);

impl Logs {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Wait (bounded) until a line satisfies `f`.
    async fn wait_for(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        for _ in 0..200 {
            if let Some(l) = self.lines().into_iter().find(|l| f(l)) {
                return l;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no log line {what} in:\n{}", self.lines().join("\n"));
    }
}

/// The real server binary with its stderr captured (`RUST_LOG=info`).
async fn start_logged(db: TestDb, extra: &[&str]) -> (TestServer, Logs) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ardacat-server"));
    cmd.args(["--database", &db.url, "--tcp-port", "0", "--http-port", "0"])
        .args(extra)
        .env("ARDACAT_ROOT_PASSWORD", common::ROOT_PASSWORD)
        .env("RUST_LOG", "info")
        .env_remove("ARDACAT_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("start ardacat-server");
    let logs = Logs::default();
    let stderr = child.stderr.take().unwrap();
    let sink = logs.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.0.lock().unwrap().push(line);
        }
    });
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    })
    .await
    .unwrap()
    .unwrap();
    let addr = |key: &str| -> SocketAddr {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
    };
    let (tcp, http) = (addr("tcp="), addr("http="));
    let server = TestServer::from_started(child, tcp, http, db, "this test reads the server's log itself");
    (server, logs)
}

fn json_lines(logs: &Logs) -> Vec<serde_json::Value> {
    logs.lines()
        .iter()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn request_line<'a>(lines: &'a [serde_json::Value], frontend: &str, command: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|v| v["target"] == "ardacat::request" && v["frontend"] == frontend && v["command"] == command)
        .unwrap_or_else(|| panic!("no request line for {frontend} {command} in {lines:#?}"))
}

async fn json_logs(b: Backend) {
    let (server, logs) = start_logged(TestDb::new(b).await, &["--log-format", "json"]).await;
    let mut c = server.raw().await;
    ok(&mut c, "createdir /j").await;
    ok(&mut c, "addattr /j n int").await;
    for i in 0..3 {
        ok(&mut c, &format!("addentry /j/e{i} n {i}")).await;
    }
    assert_eq!(ok(&mut c, "selectattr /j:n 'n >= 1'").await.len(), 2);
    common::fails(&mut c, "getattr /j/none n", 1).await;
    let query = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
                 <query xmlns=\"urn:ardacat:metadata:1\"><select>/j:n</select><condition>n &gt;= 0</condition></query>\
                 </soap:Body></soap:Envelope>";
    let (status, body) = post(server.http, &soap_request(query)).await;
    assert_eq!(status, 200, "{body}");
    logs.wait_for("for the SOAP query", |l| l.contains("\"ardacat::request\"") && l.contains("\"query\"")).await;

    let lines = json_lines(&logs);
    assert!(!lines.is_empty());
    let sel = request_line(&lines, "tcp", "selectattr");
    assert_eq!(sel["user"], "root");
    assert!(sel["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{sel}");
    assert_eq!(sel["code"], 0);
    assert_eq!(sel["rows"], 2);
    let ms = sel["duration_ms"].as_f64().unwrap();
    assert!(ms >= 0.0);
    assert_eq!((ms * 1e3).round() / 1e3, ms, "duration_ms to the microsecond: {sel}");
    let id = sel["request_id"].as_str().unwrap().to_string();
    assert!(!id.is_empty());
    // The request span carries the same id (every event inside the request has it).
    assert_eq!(sel["span"]["request_id"], id.as_str(), "{sel}");
    let failed = request_line(&lines, "tcp", "getattr");
    assert_eq!(failed["code"], 1);
    assert_ne!(failed["request_id"], id.as_str(), "ids are per request");

    let soap = request_line(&lines, "soap", "query");
    assert_eq!(soap["user"], "root");
    assert_eq!(soap["code"], 0);
    assert_eq!(soap["rows"], 3);
    assert!(soap["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(soap["span"]["request_id"], soap["request_id"]);

    // The audit log stays: every write has its own audit line (target audit).
    let audit: Vec<_> = lines.iter().filter(|v| v["target"] == "audit").collect();
    for cmd in ["createdir", "addattr", "addentry"] {
        assert!(audit.iter().any(|v| v["command"] == cmd), "audit line for {cmd} in {audit:#?}");
    }
    assert_eq!(audit.iter().filter(|v| v["command"] == "addentry").count(), 3);
}

/// Text lines: the request line holds every field once — it is written outside its span, whose
/// prefix would repeat five of them — while other events of the request keep the span's prefix.
async fn text_logs(b: Backend) {
    let (server, logs) = start_logged(TestDb::new(b).await, &[]).await;
    let mut c = server.raw().await;
    ok(&mut c, "createdir /t").await;
    let line =
        logs.wait_for("for createdir", |l| l.contains("ardacat::request") && l.contains("command=createdir")).await;
    assert_eq!(line.matches("request_id=").count(), 1, "{line}");
    assert_eq!(line.matches("peer=127.0.0.1:").count(), 1, "{line}");
    assert!(!line.contains("request{"), "no span prefix on the request line: {line}");
    assert!(line.contains("frontend=\"tcp\" user=root"), "{line}");
    let ms = line.split("duration_ms=").nth(1).unwrap_or_else(|| panic!("no duration in {line}"));
    assert!(ms.split('.').nth(1).is_none_or(|frac| frac.len() <= 3), "to the microsecond: {line}");
    let id = line.split("request_id=").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    // The audit line of a write is an event inside the request span.
    let audit = logs.wait_for("audit of createdir", |l| l.contains("audit") && l.contains("command=createdir")).await;
    assert!(audit.contains(&format!("request{{request_id={id} ")), "the audit line keeps the span: {audit}");
}

on_both_backends!(json_logs, text_logs);

/// A write by a service account acting as a user (`sudo`, as a forwarding replica does): the
/// audit line names the user and the account (`via`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_names_the_service_account() {
    let (server, logs) = start_logged(TestDb::new(Backend::Sqlite).await, &["--log-format", "json"]).await;
    let mut root = server.raw().await;
    for line in ["user_create forwarder fpw", "user_may_sudo forwarder on", "user_create alice apw", "createdir /w"] {
        ok(&mut root, line).await;
    }
    ok(&mut root, "chown /w alice").await;
    ok(&mut root, "createdir /w/direct").await;
    let mut f = server.raw_as("forwarder", "fpw").await;
    ok(&mut f, "sudo alice").await;
    ok(&mut f, "createdir /w/forwarded").await;
    logs.wait_for("the forwarded write's audit line", |l| l.contains("\"audit\"") && l.contains("\"via\"")).await;
    let audit: Vec<_> =
        json_lines(&logs).into_iter().filter(|v| v["target"] == "audit" && v["command"] == "createdir").collect();
    let via: Vec<_> = audit.iter().filter(|v| !v["via"].is_null()).collect();
    assert_eq!(via.len(), 1, "{audit:#?}");
    assert_eq!(via[0]["user"], "alice");
    assert_eq!(via[0]["via"], "forwarder");
    // Root's own writes carry no `via`.
    assert!(audit.iter().any(|v| v["user"] == "root" && v["via"].is_null()), "{audit:#?}");
}

// ------------------------------------------------------------------------------------------
// Reload on SIGHUP

mod pki {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        KeyUsagePurpose,
    };

    pub fn dn(parts: &[(DnType, &str)]) -> DistinguishedName {
        let mut d = DistinguishedName::new();
        for (t, v) in parts {
            d.push(t.clone(), *v);
        }
        d
    }

    pub fn ca() -> (String, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = dn(&[(DnType::OrganizationName, "Org"), (DnType::CommonName, "Reload CA")]);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let cert = p.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(p, key))
    }

    /// (certificate PEM, key PEM).
    pub fn leaf(issuer: &Issuer<'_, KeyPair>, cn: &str, client: bool) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let sans: Vec<String> = if client { vec![] } else { vec!["localhost".into(), "127.0.0.1".into()] };
        let mut p = CertificateParams::new(sans).unwrap();
        p.distinguished_name = if client {
            dn(&[(DnType::CountryName, "CH"), (DnType::OrganizationName, "Org"), (DnType::CommonName, cn)])
        } else {
            dn(&[(DnType::CommonName, cn)])
        };
        p.extended_key_usages =
            vec![if client { ExtendedKeyUsagePurpose::ClientAuth } else { ExtendedKeyUsagePurpose::ServerAuth }];
        let cert = p.signed_by(&key, issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

fn tls_client(ca_pem: &str, cert: Option<&(String, String)>) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap()).unwrap();
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut cfg = match cert {
        Some((c, k)) => b
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(c.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(k.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => b.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(cfg))
}

type Https = tokio_rustls::client::TlsStream<TcpStream>;

async fn https_connect(addr: SocketAddr, tls: &tokio_rustls::TlsConnector) -> Https {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tls.connect(rustls::pki_types::ServerName::try_from("localhost").unwrap(), tcp).await.unwrap()
}

/// The DER of the certificate the server presented on this connection.
fn served_cert(s: &Https) -> Vec<u8> {
    s.get_ref().1.peer_certificates().unwrap()[0].as_ref().to_vec()
}

fn der_of(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().as_ref().to_vec()
}

/// One request on a keep-alive connection; reads exactly one response (Content-Length bodies).
async fn exchange(s: &mut Https, request: &str) -> (u16, String) {
    s.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len = head
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
                .and_then(|v| v.parse::<usize>().ok())
                .expect("content-length");
            if body.len() >= len {
                return split_response(&buf);
            }
        }
        let n = tokio::time::timeout(std::time::Duration::from_secs(30), s.read(&mut chunk)).await.unwrap().unwrap();
        assert!(n > 0, "connection closed: {text}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

const HEALTHZ: &str = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";

fn sighup(server: &TestServer) {
    let st = std::process::Command::new("kill").args(["-HUP", &server.pid().to_string()]).status().unwrap();
    assert!(st.success());
}

/// A SOAP ping with no password: login by the client certificate only.
fn cert_ping() -> String {
    let body = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
                <ping xmlns=\"urn:ardacat:metadata:1\"/></soap:Body></soap:Envelope>";
    format!(
        "POST /soap HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/xml; charset=utf-8\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

async fn reload_on_sighup(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).display().to_string();
    let (ca_pem, ca) = pki::ca();
    let first = pki::leaf(&ca, "server-one", false);
    let second = pki::leaf(&ca, "server-two", false);
    let alice = pki::leaf(&ca, "Alice", true);
    std::fs::write(path("ca.pem"), &ca_pem).unwrap();
    std::fs::write(path("server.pem"), &first.0).unwrap();
    std::fs::write(path("server.key"), &first.1).unwrap();
    std::fs::write(path("grid-mapfile"), "# nobody yet\n").unwrap();
    let flags = [
        "--tls-cert".to_string(),
        path("server.pem"),
        "--tls-key".into(),
        path("server.key"),
        "--tls-client-ca".into(),
        path("ca.pem"),
        "--grid-mapfile".into(),
        path("grid-mapfile"),
        "--log-format".into(),
        "json".into(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (server, logs) = start_logged(TestDb::new(b).await, &flags).await;
    let anon = tls_client(&ca_pem, None);
    let as_alice = tls_client(&ca_pem, Some(&alice));

    // An AMGA user alice exists; her certificate is not mapped yet.
    let mut root = {
        let mut c = server.raw().await;
        ok(&mut c, "user_create alice alice-secret").await;
        c
    };
    let mut old = https_connect(server.http, &anon).await;
    assert_eq!(served_cert(&old), der_of(&first.0));
    assert_eq!(exchange(&mut old, HEALTHZ).await.0, 200);
    let mut a = https_connect(server.http, &as_alice).await;
    assert_eq!(exchange(&mut a, &cert_ping()).await.0, 401, "unmapped certificate");

    // Rotate the certificate and map alice; SIGHUP.
    std::fs::write(path("server.pem"), &second.0).unwrap();
    std::fs::write(path("server.key"), &second.1).unwrap();
    std::fs::write(path("grid-mapfile"), "\"/C=CH/O=Org/CN=Alice\" alice\n").unwrap();
    sighup(&server);
    logs.wait_for("reloaded", |l| l.contains("\"reloaded:")).await;
    let fresh = https_connect(server.http, &anon).await;
    assert_eq!(served_cert(&fresh), der_of(&second.0), "a new connection sees the new certificate");
    assert_eq!(exchange(&mut old, HEALTHZ).await.0, 200, "the old connection still works");
    assert_eq!(served_cert(&old), der_of(&first.0));
    let mut a = https_connect(server.http, &as_alice).await;
    let (status, body) = exchange(&mut a, &cert_ping()).await;
    assert_eq!(status, 200, "the new grid-mapfile is in force: {body}");
    ok(&mut root, "pwd").await;

    // A broken certificate file is refused; the certificate in force stays.
    std::fs::write(path("server.pem"), "-----BEGIN CERTIFICATE-----\nnot base64 at all\n").unwrap();
    sighup(&server);
    let refused = logs.wait_for("refusing the reload", |l| l.contains("reload refused")).await;
    assert!(refused.contains("server.pem"), "the line names the file: {refused}");
    let mut after = https_connect(server.http, &anon).await;
    assert_eq!(served_cert(&after), der_of(&second.0), "the previous certificate is still served");
    assert_eq!(exchange(&mut after, HEALTHZ).await.0, 200);
    // A key that does not match the certificate is refused too.
    std::fs::write(path("server.pem"), &second.0).unwrap();
    std::fs::write(path("server.key"), &first.1).unwrap();
    sighup(&server);
    for _ in 0..200 {
        if logs.lines().iter().filter(|l| l.contains("reload refused")).count() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(logs.lines().iter().filter(|l| l.contains("reload refused")).count(), 2, "{:?}", logs.lines());
    let mut last = https_connect(server.http, &anon).await;
    assert_eq!(served_cert(&last), der_of(&second.0));
    assert_eq!(exchange(&mut last, HEALTHZ).await.0, 200);
    ok(&mut root, "pwd").await;
}

on_both_backends!(reload_on_sighup);

/// docs/operations.md: PostgreSQL on the same machine is reached through its local socket, the
/// socket's directory percent-encoded as the URL's host. The server's connections to its
/// database are then all Unix-socket ones (`client_addr` is NULL in `pg_stat_activity`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_its_local_socket() {
    let db = TestDb::new(Backend::Postgres).await;
    let admin = common::pg_admin_url();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await.unwrap();
    let dirs: String = sqlx::query_scalar("SHOW unix_socket_directories").fetch_one(&mut conn).await.unwrap();
    let dir = dirs.split(',').map(str::trim).find(|d| d.starts_with('/')).expect("a socket directory");
    // postgres://USER@HOST:PORT/NAME → postgres://USER@%2Fsocket%2Fdir:PORT/NAME
    let (user, rest) = db.url.trim_start_matches("postgres://").split_once('@').unwrap();
    let (host, name) = rest.split_once('/').unwrap();
    let port = host.rsplit_once(':').map_or("5432", |(_, p)| p);
    let url = format!("postgres://{user}@{}:{port}/{name}", dir.replace('/', "%2F"));
    let server = TestServer::start_with(TestDb::external(url), &[]).await;
    let mut c = server.raw().await;
    ok(&mut c, "createdir /local").await;
    ok(&mut c, "addattr /local n int").await;
    ok(&mut c, "addentry /local/e n 7").await;
    assert_eq!(ok(&mut c, "getattr /local/e n").await, ["e", "7"]);
    let (unix, tcp): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE client_addr IS NULL), count(*) FILTER (WHERE client_addr IS NOT NULL)
           FROM pg_stat_activity WHERE datname = $1",
    )
    .bind(name)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(unix > 0 && tcp == 0, "the server's connections: {unix} over the socket, {tcp} over TCP");
    drop(c);
    drop(server);
    drop(db);
}
