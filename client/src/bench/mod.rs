//! The load generator behind `ardacat bench`: N connections (persistent; SOAP optionally one per
//! request), each driven by its own task for a fixed time, per-operation latencies merged into
//! percentiles; plus the `--setup` data set under `/bench`. It measures and reports; it must not
//! print (the CLI does) or check results.

pub mod soap;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::client::{Client, ClientConfig};
use crate::error::{ClientError, Result};
use soap::SoapClient;

/// Attributes per bench entry: 20 int, 20 float, 20 varchar(20).
pub const ATTRS: usize = 60;
/// The main data set.
pub const BENCH_DIR: &str = "/bench";
/// 1000 entries for `bulkget`.
pub const BENCH_1K_DIR: &str = "/bench1k";
pub const BENCH_1K_ENTRIES: usize = 1000;
/// Target of the `add` scenario.
pub const BENCH_ADD_DIR: &str = "/bench_add";
/// Largest value of the int attributes (uniform in `0..INT_RANGE`).
pub const INT_RANGE: i64 = 1_000_000;
/// Rows per upload batch in `--setup`.
pub const SETUP_BATCH: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `pwd`.
    Ping,
    /// `getattr /bench/e<random> a0..a59`.
    Get,
    /// `addentry /bench_add/<unique> a0 v0 … a59 v59`.
    Add,
    /// `getattr /bench1k a0..a59`: 1000 entries per operation (SOAP: `getAttributes` of `/bench1k`).
    Bulkget,
    /// `selectattr /bench:FILE /bench:a0 '/bench:a0 > X and /bench:a1 < Y'`.
    Query,
    /// A job-status update: each connection sets all 60 attributes of its own entry
    /// `/bench/e<connection>`, the same values every time except three (an int counter `a0`, a
    /// float clock `a20`, a status word `a40`). `setattr` over TCP, `setAttributes` over SOAP.
    Setattr,
    /// `--batch` new entries of 60 attributes per operation into `/bench_add`: `upload` + `put`s
    /// + `commit` over TCP, one `createEntry` of that many entries over SOAP.
    Addbulk,
    /// Update by query: `updateattr /bench/* a2 'a2 + 1' 'a0 >= X and a0 < X+1000'` (about one
    /// entry in a thousand of `/bench` matches). TCP only.
    Update,
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "ping" => Scenario::Ping,
            "get" => Scenario::Get,
            "add" => Scenario::Add,
            "bulkget" => Scenario::Bulkget,
            "query" => Scenario::Query,
            "setattr" => Scenario::Setattr,
            "addbulk" => Scenario::Addbulk,
            "update" => Scenario::Update,
            other => {
                return Err(format!(
                    "unknown scenario {other:?} (ping, get, add, bulkget, query, setattr, addbulk, update)"
                ));
            }
        })
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scenario::Ping => "ping",
            Scenario::Get => "get",
            Scenario::Add => "add",
            Scenario::Bulkget => "bulkget",
            Scenario::Query => "query",
            Scenario::Setattr => "setattr",
            Scenario::Addbulk => "addbulk",
            Scenario::Update => "update",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Tcp,
    Soap,
}

impl FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Ok(Protocol::Tcp),
            "soap" => Ok(Protocol::Soap),
            other => Err(format!("unknown protocol {other:?} (tcp, soap)")),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "tcp",
            Protocol::Soap => "soap",
        })
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Host, port and credentials; for SOAP the port is the HTTP port.
    pub client: ClientConfig,
    pub scenario: Scenario,
    pub protocol: Protocol,
    pub connections: usize,
    pub duration: Duration,
    /// Entries in `/bench` (random `get` targets are drawn from `e0..e<entries-1>`).
    pub entries: usize,
    /// HTTP path of the SOAP endpoint.
    pub soap_path: String,
    /// SOAP: keep connections alive (else one connection per request, `Connection: close`).
    pub keep_alive: bool,
    /// Entries per operation of `addbulk`.
    pub batch: usize,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub scenario: Scenario,
    pub protocol: Protocol,
    pub connections: usize,
    /// SOAP keep-alive (always true over TCP).
    pub keep_alive: bool,
    /// Entries per operation (`addbulk`).
    pub batch: Option<usize>,
    pub elapsed: Duration,
    /// Successful operations.
    pub ops: u64,
    pub errors: u64,
    pub ops_per_sec: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// Entries returned (bulkget), rows returned (query) or entries created (add, addbulk) per
    /// second.
    pub entries_per_sec: Option<f64>,
    pub first_error: Option<String>,
}

impl BenchReport {
    /// The JSON object printed by `--json`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "scenario": self.scenario.to_string(),
            "protocol": self.protocol.to_string(),
            "connections": self.connections,
            "duration_s": round3(self.elapsed.as_secs_f64()),
            "ops": self.ops,
            "errors": self.errors,
            "ops_per_sec": round3(self.ops_per_sec),
            "p50_us": self.p50_us,
            "p90_us": self.p90_us,
            "p99_us": self.p99_us,
            "max_us": self.max_us,
        });
        if let Some(map) = v.as_object_mut() {
            if let Some(eps) = self.entries_per_sec {
                map.insert("entries_per_sec".into(), serde_json::json!(round3(eps)));
            }
            if let Some(e) = &self.first_error {
                map.insert("first_error".into(), serde_json::json!(e));
            }
            if self.protocol == Protocol::Soap {
                map.insert("keep_alive".into(), serde_json::json!(self.keep_alive));
            }
            if let Some(b) = self.batch {
                map.insert("batch".into(), serde_json::json!(b));
            }
        }
        v
    }
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario {} over {}{}, {} connection(s), {:.1} s{}",
            self.scenario,
            self.protocol,
            if self.keep_alive { "" } else { " (no keep-alive)" },
            self.connections,
            self.elapsed.as_secs_f64(),
            self.batch.map_or(String::new(), |b| format!(", {b} entries per operation"))
        )?;
        writeln!(f, "  ops        {} ({} errors)", self.ops, self.errors)?;
        writeln!(f, "  ops/s      {:.1}", self.ops_per_sec)?;
        if let Some(eps) = self.entries_per_sec {
            writeln!(f, "  entries/s  {eps:.1}")?;
        }
        write!(
            f,
            "  latency    p50 {} µs, p90 {} µs, p99 {} µs, max {} µs",
            self.p50_us, self.p90_us, self.p99_us, self.max_us
        )?;
        if let Some(e) = &self.first_error {
            write!(f, "\n  first error: {e}")?;
        }
        Ok(())
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The value at quantile `q` (0..=1) of sorted samples, nearest-rank; 0 when empty.
pub fn percentile(sorted: &[u32], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    u64::from(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// `a0`..`a59`.
pub fn attr_names() -> Vec<String> {
    (0..ATTRS).map(|i| format!("a{i}")).collect()
}

/// The type of attribute `a<i>`.
pub fn attr_type(i: usize) -> &'static str {
    match i {
        0..20 => "int",
        20..40 => "float",
        _ => "varchar(20)",
    }
}

/// Random values for one entry, about 700 bytes in all.
pub fn entry_values(rng: &mut impl Rng) -> Vec<String> {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..ATTRS)
        .map(|i| match attr_type(i) {
            "int" => rng.random_range(0..INT_RANGE).to_string(),
            "float" => format!("{:.4}", rng.random_range(0.0..10000.0f64)),
            _ => (0..18).map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())])).collect(),
        })
        .collect()
}

/// Drops `dir` if it exists, then creates it with the 60 bench attributes.
pub async fn recreate_dir(client: &mut Client, dir: &str) -> Result<()> {
    match client.createdir(dir).await {
        Ok(()) => {}
        Err(ClientError::Server { code: 16, .. }) => {
            match client.rm(&format!("{dir}/*")).await {
                Ok(()) | Err(ClientError::Server { code: 1, .. }) => {}
                Err(e) => return Err(e),
            }
            client.rmdir(dir).await?;
            client.createdir(dir).await?;
        }
        Err(e) => return Err(e),
    }
    for (i, name) in attr_names().iter().enumerate() {
        client.addattr(dir, name, attr_type(i)).await?;
    }
    Ok(())
}

/// Creates `dir` with the bench attributes unless it exists already.
pub async fn ensure_dir(client: &mut Client, dir: &str) -> Result<()> {
    match client.createdir(dir).await {
        Ok(()) => {
            for (i, name) in attr_names().iter().enumerate() {
                client.addattr(dir, name, attr_type(i)).await?;
            }
            Ok(())
        }
        Err(ClientError::Server { code: 16, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Uploads `count` random entries `e0..` into `dir` in batches; `progress` gets the running total.
pub async fn fill_dir(client: &mut Client, dir: &str, count: usize, progress: &mut dyn FnMut(u64)) -> Result<()> {
    let attrs = attr_names();
    let mut rng = StdRng::from_rng(&mut rand::rng());
    let mut done = 0usize;
    while done < count {
        let end = (done + SETUP_BATCH).min(count);
        let rows: Vec<(String, Vec<Option<String>>)> =
            (done..end).map(|i| (format!("e{i}"), entry_values(&mut rng).into_iter().map(Some).collect())).collect();
        client.upload(dir, &attrs, rows).await?;
        done = end;
        progress(done as u64);
    }
    Ok(())
}

/// The `--setup` data set: `/bench` with `entries` entries, `/bench1k` with 1000, empty `/bench_add`.
pub async fn setup(client: &mut Client, entries: usize, progress: &mut dyn FnMut(&str, u64)) -> Result<()> {
    for (dir, count) in [(BENCH_DIR, entries), (BENCH_1K_DIR, BENCH_1K_ENTRIES), (BENCH_ADD_DIR, 0)] {
        recreate_dir(client, dir).await?;
        fill_dir(client, dir, count, &mut |n| progress(dir, n)).await?;
    }
    Ok(())
}

enum Conn {
    Tcp(Client),
    Soap(SoapClient),
}

/// Per-task state that stays constant over a run.
struct Plan {
    scenario: Scenario,
    entries: usize,
    attrs: Vec<String>,
    /// `getattr <dir> a0 … a59` without the entry name, shared by get and bulkget.
    getattr_tail: String,
    run_tag: String,
    batch: usize,
    /// `setattr`: the job record of each connection (the values that do not change).
    jobs: Vec<Vec<String>>,
}

/// Status words of the `setattr` scenario, in the order a job goes through them.
const JOB_STATES: [&str; 5] = ["Submitted", "Waiting", "Running", "Completing", "Done"];

/// The `setattr` values of connection `task` at operation `seq`: its job record with the
/// counter `a0`, the clock `a20` and the status `a40` replaced.
fn job_update(plan: &Plan, task: usize, seq: u64) -> Vec<(&str, String)> {
    let job = &plan.jobs[task % plan.jobs.len()];
    plan.attrs
        .iter()
        .zip(job)
        .enumerate()
        .map(|(i, (a, v))| {
            let v = match i {
                0 => (seq % INT_RANGE as u64).to_string(),
                20 => format!("{:.4}", seq as f64 * 0.25),
                40 => JOB_STATES[(seq % JOB_STATES.len() as u64) as usize].to_owned(),
                _ => v.clone(),
            };
            (a.as_str(), v)
        })
        .collect()
}

/// `n` new entries for `/bench_add`, named uniquely for this run, connection and operation.
fn new_entries(plan: &Plan, rng: &mut StdRng, task: usize, seq: u64, n: usize) -> Vec<(String, Vec<String>)> {
    (0..n).map(|k| (format!("{}_{task}_{seq}_{k}", plan.run_tag), entry_values(rng))).collect()
}

#[derive(Default)]
struct TaskResult {
    latencies: Vec<u32>,
    ops: u64,
    errors: u64,
    items: u64,
    first_error: Option<String>,
}

/// Opens one connection and runs one untimed request on it, so that the login (password hashing
/// on the server) and any authentication error happen before the clock starts.
async fn open(opts: &BenchOptions) -> Result<Conn> {
    Ok(match opts.protocol {
        Protocol::Tcp => {
            let mut client = Client::connect(opts.client.clone()).await?;
            client.pwd().await?;
            Conn::Tcp(client)
        }
        Protocol::Soap => {
            let c = &opts.client;
            let mut soap = SoapClient::new(&c.host, c.port, &opts.soap_path, &c.login, c.password.as_deref());
            soap.set_keep_alive(opts.keep_alive);
            soap.ping().await?;
            Conn::Soap(soap)
        }
    })
}

/// One operation; returns the number of entries/rows it returned.
async fn operation(conn: &mut Conn, plan: &Plan, rng: &mut StdRng, seq: u64, task: usize) -> Result<u64> {
    match conn {
        Conn::Tcp(client) => {
            let line = match plan.scenario {
                Scenario::Ping => "pwd".to_owned(),
                Scenario::Get => {
                    format!("getattr {BENCH_DIR}/e{} {}", rng.random_range(0..plan.entries), plan.getattr_tail)
                }
                Scenario::Bulkget => format!("getattr {BENCH_1K_DIR} {}", plan.getattr_tail),
                Scenario::Query => {
                    let x = rng.random_range(INT_RANGE * 9 / 10..INT_RANGE);
                    let y = rng.random_range(0..INT_RANGE / 10);
                    format!(
                        "selectattr {BENCH_DIR}:FILE {BENCH_DIR}:a0 '{BENCH_DIR}:a0 > {x} and {BENCH_DIR}:a1 < {y}'"
                    )
                }
                Scenario::Add => {
                    let values = entry_values(rng);
                    let mut args =
                        vec!["addentry".to_owned(), format!("{BENCH_ADD_DIR}/{}_{task}_{seq}", plan.run_tag)];
                    for (a, v) in plan.attrs.iter().zip(values) {
                        args.push(a.clone());
                        args.push(v);
                    }
                    client.command_line(&args)?
                }
                Scenario::Setattr => {
                    let entry = format!("{BENCH_DIR}/e{}", task % plan.entries);
                    let mut args = vec!["setattr".to_owned(), entry];
                    for (a, v) in job_update(plan, task, seq) {
                        args.push(a.to_owned());
                        args.push(v);
                    }
                    client.command_line(&args)?
                }
                Scenario::Update => {
                    let x = rng.random_range(0..INT_RANGE);
                    format!("updateattr {BENCH_DIR}/* a2 'a2 + 1' 'a0 >= {x} and a0 < {}'", x + INT_RANGE / 1000)
                }
                Scenario::Addbulk => {
                    let rows = new_entries(plan, rng, task, seq, plan.batch)
                        .into_iter()
                        .map(|(name, values)| (name, values.into_iter().map(Some).collect()));
                    return client.upload(BENCH_ADD_DIR, &plan.attrs, rows).await;
                }
            };
            let lines = client.start(&line).await?.drain().await?;
            Ok(match plan.scenario {
                Scenario::Bulkget => lines / (ATTRS as u64 + 1),
                Scenario::Query => lines / 2,
                _ => 1,
            })
        }
        Conn::Soap(soap) => match plan.scenario {
            Scenario::Ping => soap.ping().await.map(|_| 1),
            Scenario::Get => {
                let entry = format!("{BENCH_DIR}/e{}", rng.random_range(0..plan.entries));
                soap.get_attributes(&entry, &plan.attrs).await.map(|_| 1)
            }
            Scenario::Bulkget => soap.get_entries(BENCH_1K_DIR, &plan.attrs).await,
            Scenario::Setattr => {
                let entry = format!("{BENCH_DIR}/e{}", task % plan.entries);
                soap.set_attributes(&entry, &job_update(plan, task, seq)).await.map(|_| 1)
            }
            Scenario::Add | Scenario::Addbulk => {
                let n = if plan.scenario == Scenario::Add { 1 } else { plan.batch };
                soap.create_entries(BENCH_ADD_DIR, &plan.attrs, &new_entries(plan, rng, task, seq, n)).await
            }
            other => Err(ClientError::InvalidArgument(format!("scenario {other} is not available over SOAP"))),
        },
    }
}

async fn task_loop(
    mut conn: Conn,
    opts: BenchOptions,
    plan: std::sync::Arc<Plan>,
    task: usize,
    start: Instant,
) -> TaskResult {
    let deadline = start + opts.duration;
    let mut rng = StdRng::from_rng(&mut rand::rng());
    let mut out = TaskResult { latencies: Vec::with_capacity(4096), ..TaskResult::default() };
    tokio::time::sleep_until(start.into()).await;
    let mut seq = 0u64;
    while Instant::now() < deadline {
        seq += 1;
        let t0 = Instant::now();
        match operation(&mut conn, &plan, &mut rng, seq, task).await {
            Ok(items) => {
                out.latencies.push(u32::try_from(t0.elapsed().as_micros()).unwrap_or(u32::MAX));
                out.ops += 1;
                out.items += items;
            }
            Err(e) => {
                out.errors += 1;
                let lost = e.is_connection_lost() || matches!(&conn, Conn::Tcp(c) if c.is_broken());
                out.first_error.get_or_insert_with(|| e.to_string());
                if matches!(e, ClientError::InvalidArgument(_)) {
                    break;
                }
                if lost {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    match open(&opts).await {
                        Ok(c) => conn = c,
                        Err(_) => continue,
                    }
                }
            }
        }
    }
    out
}

/// Runs the scenario: connects all clients first, then starts them together.
pub async fn run(opts: &BenchOptions) -> Result<BenchReport> {
    let connections = opts.connections.max(1);
    if opts.protocol == Protocol::Soap && matches!(opts.scenario, Scenario::Query | Scenario::Update) {
        return Err(ClientError::InvalidArgument(format!("scenario {} is not available over SOAP", opts.scenario)));
    }
    let attrs = attr_names();
    let mut job_rng = StdRng::seed_from_u64(0x10b5);
    let plan = std::sync::Arc::new(Plan {
        scenario: opts.scenario,
        entries: opts.entries.max(1),
        getattr_tail: attrs.join(" "),
        attrs,
        run_tag: format!(
            "r{}",
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis())
        ),
        batch: opts.batch.max(1),
        jobs: (0..connections).map(|_| entry_values(&mut job_rng)).collect(),
    });
    let mut conns = futures::future::try_join_all((0..connections).map(|_| open(opts))).await?;
    if matches!(opts.scenario, Scenario::Add | Scenario::Addbulk)
        && let Some(Conn::Tcp(client)) = conns.first_mut()
    {
        ensure_dir(client, BENCH_ADD_DIR).await?;
    }
    let start = Instant::now() + Duration::from_millis(50);
    let handles: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(task, conn)| tokio::spawn(task_loop(conn, opts.clone(), plan.clone(), task, start)))
        .collect();
    let mut all = TaskResult::default();
    for h in handles {
        let r = h.await.map_err(|e| ClientError::Protocol(format!("bench task failed: {e}")))?;
        all.latencies.extend(r.latencies);
        all.ops += r.ops;
        all.errors += r.errors;
        all.items += r.items;
        if all.first_error.is_none() {
            all.first_error = r.first_error;
        }
    }
    let elapsed = start.elapsed().max(Duration::from_millis(1));
    all.latencies.sort_unstable();
    let secs = elapsed.as_secs_f64();
    Ok(BenchReport {
        scenario: opts.scenario,
        protocol: opts.protocol,
        connections,
        keep_alive: opts.protocol == Protocol::Tcp || opts.keep_alive,
        batch: (opts.scenario == Scenario::Addbulk).then_some(plan.batch),
        elapsed,
        ops: all.ops,
        errors: all.errors,
        ops_per_sec: all.ops as f64 / secs,
        p50_us: percentile(&all.latencies, 0.50),
        p90_us: percentile(&all.latencies, 0.90),
        p99_us: percentile(&all.latencies, 0.99),
        max_us: all.latencies.last().copied().map_or(0, u64::from),
        entries_per_sec: matches!(
            opts.scenario,
            Scenario::Bulkget | Scenario::Query | Scenario::Add | Scenario::Addbulk
        )
        .then(|| all.items as f64 / secs),
        first_error: all.first_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }

    #[test]
    fn entries_are_about_700_bytes() {
        let mut rng = StdRng::seed_from_u64(7);
        let values = entry_values(&mut rng);
        assert_eq!(values.len(), ATTRS);
        let size: usize = values.iter().map(String::len).sum();
        assert!((600..800).contains(&size), "{size} bytes");
        assert!(values[0].parse::<i64>().is_ok());
        assert!(values[25].parse::<f64>().is_ok());
        assert_eq!(values[59].len(), 18);
        assert_eq!(attr_type(19), "int");
        assert_eq!(attr_type(20), "float");
        assert_eq!(attr_type(40), "varchar(20)");
    }

    #[test]
    fn names_parse() {
        assert_eq!("BulkGet".parse::<Scenario>(), Ok(Scenario::Bulkget));
        assert_eq!("update".parse::<Scenario>(), Ok(Scenario::Update));
        assert!("nope".parse::<Scenario>().is_err());
        assert_eq!("soap".parse::<Protocol>(), Ok(Protocol::Soap));
    }

    #[test]
    fn report_json_has_the_agreed_keys() {
        let r = BenchReport {
            scenario: Scenario::Bulkget,
            protocol: Protocol::Tcp,
            connections: 4,
            keep_alive: true,
            batch: None,
            elapsed: Duration::from_secs(2),
            ops: 10,
            errors: 1,
            ops_per_sec: 5.0,
            p50_us: 100,
            p90_us: 150,
            p99_us: 200,
            max_us: 300,
            entries_per_sec: Some(5000.0),
            first_error: None,
        };
        let j = r.to_json();
        for key in ["ops_per_sec", "p50_us", "p99_us", "ops", "errors", "scenario", "connections", "protocol"] {
            assert!(j.get(key).is_some(), "{key}");
        }
        assert_eq!(j["scenario"], "bulkget");
        assert_eq!(j["entries_per_sec"], 5000.0);
        assert!(j.get("keep_alive").is_none() && j.get("batch").is_none());
        let j = BenchReport { protocol: Protocol::Soap, keep_alive: false, batch: Some(100), ..r }.to_json();
        assert_eq!((j["keep_alive"].as_bool(), j["batch"].as_u64()), (Some(false), Some(100)));
    }

    #[test]
    fn job_updates_change_three_values() {
        let attrs = attr_names();
        let mut rng = StdRng::seed_from_u64(1);
        let plan = Plan {
            scenario: Scenario::Setattr,
            entries: 10,
            getattr_tail: String::new(),
            run_tag: "r".into(),
            batch: 1,
            jobs: vec![entry_values(&mut rng), entry_values(&mut rng)],
            attrs,
        };
        let (a, b) = (job_update(&plan, 1, 7), job_update(&plan, 1, 8));
        assert_eq!(a.len(), ATTRS);
        let differ: Vec<&str> = a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0).collect();
        assert_eq!(differ, ["a0", "a20", "a40"]);
        assert!(a.iter().all(|(_, v)| v.len() <= 20), "values fit varchar(20)");
        assert_ne!(job_update(&plan, 0, 7)[1].1, a[1].1, "connections have their own job records");
        let e = new_entries(&plan, &mut rng, 3, 9, 2);
        assert_eq!((e[0].0.as_str(), e[1].0.as_str(), e[1].1.len()), ("r_3_9_0", "r_3_9_1", ATTRS));
    }
}
