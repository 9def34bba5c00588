//! Request metrics for both frontends: counts and latency histograms per operation, and
//! per-stage timings (read/parse, auth, execute incl. SQL, serialize/write), rendered in the
//! Prometheus text format on `/metrics` and as lines by the TCP `stats` command. Recording is a
//! few atomic adds; it must not allocate or lock exclusively on the hot path.
//!
//! Submodules: `expo` writes the exposition format (HELP/TYPE, grouping, label escaping),
//! `process` reads the process metrics from /proc, `page` renders the whole `/metrics` page.

use foldhash::HashMap;
use std::fmt::Write;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub mod expo;
pub mod page;
pub mod process;

/// Upper bounds of the latency buckets, in microseconds.
const BUCKETS_US: [u64; 17] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000,
];

#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        if let Some(i) = BUCKETS_US.iter().position(|b| us <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, b) in BUCKETS_US.iter().enumerate() {
            cumulative += self.buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{}\"}} {cumulative}", *b as f64 / 1e6);
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum_us.load(Ordering::Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }
}

/// An operation's name, request count and error count.
type OpCounts = (&'static str, u64, u64);

#[derive(Default)]
struct OpStats {
    latency: Histogram,
    errors: AtomicU64,
}

/// The stages a request passes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Reading and parsing the request (line tokenizing / XML deserialization).
    Parse,
    /// Checking credentials.
    Auth,
    /// Running the catalogue operation, SQL included (for streams: until the last row is queued).
    Execute,
    /// Serializing and writing the reply (for streams: the final flush).
    Write,
}

impl Stage {
    const ALL: [Stage; 4] = [Stage::Parse, Stage::Auth, Stage::Execute, Stage::Write];
    fn name(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Auth => "auth",
            Stage::Execute => "execute",
            Stage::Write => "write",
        }
    }
}

#[derive(Default)]
struct FrontendStats {
    ops: RwLock<HashMap<&'static str, OpStats>>,
    stages: [Histogram; 4],
}

#[derive(Default)]
pub struct Metrics {
    tcp: FrontendStats,
    soap: FrontendStats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frontend {
    Tcp,
    Soap,
}

impl Metrics {
    fn frontend(&self, f: Frontend) -> &FrontendStats {
        match f {
            Frontend::Tcp => &self.tcp,
            Frontend::Soap => &self.soap,
        }
    }

    /// Record one finished request. `op` is a static operation name (command or SOAP operation).
    pub fn request(&self, f: Frontend, op: &'static str, latency: Duration, ok: bool) {
        let fs = self.frontend(f);
        {
            let map = fs.ops.read().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = map.get(op) {
                s.latency.observe(latency);
                if !ok {
                    s.errors.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
        }
        let mut map = fs.ops.write().unwrap_or_else(|p| p.into_inner());
        let s = map.entry(op).or_default();
        s.latency.observe(latency);
        if !ok {
            s.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn stage(&self, f: Frontend, stage: Stage, d: Duration) {
        let i = Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0);
        self.frontend(f).stages[i].observe(d);
    }

    /// Prometheus text exposition of everything recorded: each family once, with `# HELP` and
    /// `# TYPE`, its samples (both frontends, every operation) grouped after them.
    pub fn render(&self, out: &mut String) {
        use expo::{Kind, header};
        let fronts = [("tcp", Frontend::Tcp), ("soap", Frontend::Soap)];
        // One sorted snapshot of the operations per frontend, so every family lists the same ones.
        let ops: Vec<(&str, Vec<OpCounts>)> = fronts
            .iter()
            .map(|(fname, f)| {
                let map = self.frontend(*f).ops.read().unwrap_or_else(|p| p.into_inner());
                let mut v: Vec<_> =
                    map.iter().map(|(k, s)| (*k, s.latency.count(), s.errors.load(Ordering::Relaxed))).collect();
                v.sort_by_key(|(k, _, _)| *k);
                (*fname, v)
            })
            .collect();
        let labels = |fname: &str, op: &str| {
            let mut l = String::new();
            expo::push_labels(&mut l, [("frontend", fname), ("operation", op)]);
            l
        };
        header(out, "ardacat_requests_total", Kind::Counter, "Requests handled, by frontend and operation.");
        for (fname, list) in &ops {
            for (op, n, _) in list {
                let _ = writeln!(out, "ardacat_requests_total{} {n}", labels(fname, op));
            }
        }
        header(
            out,
            "ardacat_request_errors_total",
            Kind::Counter,
            "Requests answered with an error, by frontend and operation.",
        );
        for (fname, list) in &ops {
            for (op, _, e) in list {
                let _ = writeln!(out, "ardacat_request_errors_total{} {e}", labels(fname, op));
            }
        }
        header(
            out,
            "ardacat_request_duration_seconds",
            Kind::Histogram,
            "Request latency from command line or authentication to the last byte queued.",
        );
        for (fname, f) in fronts {
            let map = self.frontend(f).ops.read().unwrap_or_else(|p| p.into_inner());
            let mut list: Vec<_> = map.iter().collect();
            list.sort_by_key(|(k, _)| **k);
            for (op, s) in list {
                let l = labels(fname, op);
                s.latency.render(out, "ardacat_request_duration_seconds", &l[1..l.len() - 1]);
            }
        }
        header(
            out,
            "ardacat_stage_duration_seconds",
            Kind::Histogram,
            "Time spent per request stage (parse, auth, execute, write), by frontend.",
        );
        for (fname, f) in fronts {
            let fs = self.frontend(f);
            for (i, st) in Stage::ALL.iter().enumerate() {
                if fs.stages[i].count() > 0 {
                    let mut l = String::new();
                    expo::push_labels(&mut l, [("frontend", fname), ("stage", st.name())]);
                    fs.stages[i].render(out, "ardacat_stage_duration_seconds", &l[1..l.len() - 1]);
                }
            }
        }
    }

    /// Short summary lines for the `stats` command: per operation `count errors mean_us`.
    pub fn summary(&self) -> Vec<(String, String)> {
        let mut lines = Vec::new();
        for (fname, f) in [("tcp", Frontend::Tcp), ("soap", Frontend::Soap)] {
            let fs = self.frontend(f);
            let map = fs.ops.read().unwrap_or_else(|p| p.into_inner());
            let mut ops: Vec<_> = map.iter().collect();
            ops.sort_by_key(|(k, _)| **k);
            for (op, s) in ops {
                let n = s.latency.count();
                let mean = s.latency.sum_us.load(Ordering::Relaxed).checked_div(n).unwrap_or(0);
                lines.push((
                    format!("{fname}_{op}"),
                    format!("count={n} errors={} mean_us={mean}", s.errors.load(Ordering::Relaxed)),
                ));
            }
            for (i, st) in Stage::ALL.iter().enumerate() {
                let h = &fs.stages[i];
                let n = h.count();
                if let Some(mean) = h.sum_us.load(Ordering::Relaxed).checked_div(n) {
                    lines.push((format!("{fname}_stage_{}", st.name()), format!("count={n} mean_us={mean}")));
                }
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_and_rendering() {
        let m = Metrics::default();
        m.request(Frontend::Tcp, "getattr", Duration::from_micros(80), true);
        m.request(Frontend::Tcp, "getattr", Duration::from_millis(3), false);
        m.stage(Frontend::Tcp, Stage::Parse, Duration::from_micros(5));
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("ardacat_requests_total{frontend=\"tcp\",operation=\"getattr\"} 2"), "{out}");
        assert!(out.contains("ardacat_request_errors_total{frontend=\"tcp\",operation=\"getattr\"} 1"));
        assert!(out.contains(
            "ardacat_request_duration_seconds_bucket{frontend=\"tcp\",operation=\"getattr\",le=\"0.0001\"} 1"
        ));
        assert!(out.contains(
            "ardacat_request_duration_seconds_bucket{frontend=\"tcp\",operation=\"getattr\",le=\"0.005\"} 2"
        ));
        assert!(out.contains("ardacat_stage_duration_seconds_count{frontend=\"tcp\",stage=\"parse\"} 1"));
        assert!(!out.contains("soap\",operation"));
        assert_eq!(m.summary()[0].0, "tcp_getattr");
    }
}
