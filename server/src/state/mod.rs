//! Per-process server state every frontend shares: the catalogue handle, the settings, the
//! resumable TCP sessions, the login limiter, the counters, request metrics, TLS set-up and the
//! SOAP differential deserializer; the version string of the greeting and `getVersion`; and
//! [`Shared::counters`], the one counters report behind both the TCP `stats` command and
//! `/metrics`. It holds state only: no protocol, no login policy (`crate::auth`), no rules.
//!
//! This module imports no frontend (`tcp`, `soap`, `http`); they all import it.

pub mod limiter;
pub mod sessions;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ardacat_core::service::PlanSource;
use ardacat_soap::dds::ShadowPolicy;
use ardacat_soap::{DdsCache, DdsConfig};

use crate::Cat;
use crate::admission::{Gate, Refusal};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::metrics::expo::Sample;
use crate::tls::{TlsSetup, TlsSlot};
pub use limiter::LoginLimiter;
use sessions::SessionRegistry;

/// The version in the greeting banner and in SOAP `getVersion`. AMGA clients only read the
/// `Protocol` line's digit.
pub const SERVER_VERSION: &str = concat!("2.5.0 (ardacat ", env!("CARGO_PKG_VERSION"), ")");

/// TCP connection and command counters.
#[derive(Default)]
pub struct Stats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub commands: AtomicU64,
    pub errors: AtomicU64,
}

/// HTTP connection counters (admission is counted by the port's [`Gate`]).
#[derive(Default)]
pub struct HttpStats {
    pub connections_total: AtomicU64,
    /// Connections closed for a slow or idle client, by phase (see [`HttpTimeout`]).
    pub timeouts: [AtomicU64; 4],
}

/// The phase in which an HTTP client was too slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpTimeout {
    /// The request header did not arrive within `http_header_timeout_ms`.
    Header,
    /// The request body arrived slower than `http_body_timeout_ms`/`http_body_min_rate` allow.
    Body,
    /// A kept-alive connection sat idle for `http_idle_timeout_ms`.
    Idle,
    /// The client left a response unread for `http_idle_timeout_ms`.
    Write,
}

impl HttpTimeout {
    pub const ALL: [HttpTimeout; 4] = [HttpTimeout::Header, HttpTimeout::Body, HttpTimeout::Idle, HttpTimeout::Write];

    pub fn label(self) -> &'static str {
        match self {
            HttpTimeout::Header => "header",
            HttpTimeout::Body => "body",
            HttpTimeout::Idle => "idle",
            HttpTimeout::Write => "write",
        }
    }
}

impl HttpStats {
    pub fn timed_out(&self, t: HttpTimeout) {
        self.timeouts[t as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// State every connection and request shares.
pub struct Shared {
    pub catalogue: Cat,
    pub config: Arc<Config>,
    pub sessions: SessionRegistry,
    pub stats: Stats,
    /// Connection slots of the TCP port (`max_connections`, per-peer cap).
    pub tcp_gate: Arc<Gate>,
    /// Connection slots of the HTTP port (`max_http_connections`, per-peer cap).
    pub http_gate: Arc<Gate>,
    pub http_stats: HttpStats,
    pub login_limiter: LoginLimiter,
    pub metrics: Metrics,
    /// Certificates and acceptors when TLS is configured (`ssl` on TCP, HTTPS on HTTP);
    /// replaced on reload (`crate::reload`).
    pub tls: Option<Arc<TlsSlot>>,
    /// SOAP differential deserializer (None when `soap_dds` is off).
    pub dds: Option<DdsCache>,
}

impl Shared {
    /// The state a server with these settings starts with.
    pub fn new(catalogue: Cat, config: Arc<Config>, tls: Option<Arc<TlsSetup>>) -> Self {
        // A standby cannot store sessions: they stay in this process (also after a promotion).
        let in_database =
            catalogue.store().db().backend() == ardacat_store::Backend::Postgres && !catalogue.is_read_only();
        Shared {
            catalogue,
            sessions: SessionRegistry::new(Duration::from_secs(config.idle_timeout_secs), in_database),
            stats: Stats::default(),
            tcp_gate: Gate::new(config.max_connections, config.max_connections_per_peer, config.trusted_peers.clone()),
            http_gate: Gate::new(
                config.max_http_connections,
                config.max_connections_per_peer,
                config.trusted_peers.clone(),
            ),
            http_stats: HttpStats::default(),
            login_limiter: LoginLimiter::new(config.max_failed_logins_per_minute),
            metrics: Metrics::default(),
            dds: new_dds(&config),
            config,
            tls: tls.map(|t| Arc::new(TlsSlot::new(t))),
        }
    }

    /// Every counter and gauge of this process (names without the `ardacat_` prefix `/metrics`
    /// adds; counters end in `_total`, units are in the names, variants are labels): TCP
    /// connections, commands and sessions, the database pool, and the SOAP DDS counters (none
    /// when DDS is off). `stats` and `/metrics` both print this.
    pub fn counters(&self) -> Vec<Sample> {
        let s = &self.stats;
        let pool = self.catalogue.store().db().pool_stats();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = vec![
            Sample::gauge("tcp_connections_open", "TCP connections open now.", load(&s.connections_open)),
            Sample::counter("tcp_connections_total", "TCP connections accepted.", load(&s.connections_total)),
            Sample::counter("tcp_commands_total", "TCP command lines received.", load(&s.commands)),
            Sample::counter("tcp_errors_total", "TCP commands answered with an error.", load(&s.errors)),
            Sample::gauge("tcp_sessions", "Resumable TCP sessions held.", self.sessions.len() as u64),
            Sample::gauge("db_pool_size", "Database connections the pool may open.", pool.size as u64),
            Sample::gauge("db_pool_connections", "Database connections open, by state.", pool.idle as u64)
                .label("state", "idle"),
            Sample::gauge("db_pool_connections", "Database connections open, by state.", pool.in_use as u64)
                .label("state", "in_use"),
        ];
        let queue = self.catalogue.store().db().acquire_stats();
        out.extend([
            Sample::counter("db_acquires_total", "Database connections requests took from the pool.", queue.acquires),
            Sample::gauge("db_acquire_waiting", "Requests waiting for a free database connection now.", queue.waiting),
            Sample::seconds_counter(
                "db_acquire_wait_seconds_total",
                "Time requests spent waiting for a free database connection.",
                queue.wait_seconds,
            ),
            Sample::counter(
                "db_acquire_timeouts_total",
                "Requests that found no free database connection within db_acquire_timeout_ms (code 19).",
                queue.timeouts,
            ),
        ]);
        let batches = self.catalogue.store().point_batches();
        out.extend([
            Sample::counter(
                "db_point_batches_total",
                "Statements that answered several point reads at once (PostgreSQL, db_point_reads_in_flight).",
                batches.batches,
            ),
            Sample::counter("db_point_batched_reads_total", "Point reads answered by those statements.", batches.reads),
        ]);
        out.extend(PlanSource::ALL.map(|source| {
            Sample::counter(
                "getattr_plans_total",
                "getattr plans used, by source (session: the session's kept plan; shared: lent to a SOAP or web request; built: made anew).",
                self.catalogue.getattr_plans(source),
            )
            .label("source", plan_source_label(source))
        }));
        let refused = |gate: &Gate, name, help| {
            [Refusal::Full, Refusal::PeerFull]
                .map(|r| Sample::counter(name, help, gate.refused(r)).label("reason", r.label()))
        };
        out.extend(refused(
            &self.tcp_gate,
            "tcp_connections_refused_total",
            "TCP connections refused at once, by reason (max_connections, per_peer).",
        ));
        out.extend([
            Sample::gauge("http_connections_open", "HTTP connections open now.", self.http_gate.open() as u64),
            Sample::counter(
                "http_connections_total",
                "HTTP connections accepted.",
                load(&self.http_stats.connections_total),
            ),
        ]);
        out.extend(refused(
            &self.http_gate,
            "http_connections_refused_total",
            "HTTP connections refused with 503, by reason (max_connections, per_peer).",
        ));
        for t in HttpTimeout::ALL {
            out.push(
                Sample::counter(
                    "http_timeouts_total",
                    "HTTP connections closed for a slow or idle client, by phase.",
                    load(&self.http_stats.timeouts[t as usize]),
                )
                .label("phase", t.label()),
            );
        }
        if let Some(dds) = &self.dds {
            let d = dds.stats();
            out.extend([
                Sample::counter("soap_dds_hits_total", "SOAP requests answered from a DDS template.", d.hits),
                Sample::counter(
                    "soap_dds_loop_hits_total",
                    "SOAP requests answered from a DDS template with a repeated section.",
                    d.loop_hits,
                ),
                Sample::counter("soap_dds_misses_total", "SOAP requests DDS declined (the full parser ran).", d.misses),
                Sample::counter("soap_dds_bypassed_total", "SOAP requests that did not try DDS.", d.bypassed),
                Sample::counter(
                    "soap_dds_skipped_bytes_total",
                    "Request bytes DDS matched without parsing.",
                    d.bytes_skipped,
                ),
                Sample::gauge("soap_dds_templates", "DDS templates held.", d.templates as u64),
                Sample::gauge(
                    "soap_dds_template_bytes",
                    "Memory held by DDS templates in bytes.",
                    d.template_bytes as u64,
                ),
                Sample::counter(
                    "soap_dds_shadow_checks_total",
                    "DDS answers checked against the full parser.",
                    d.shadow_checks,
                ),
                Sample::counter(
                    "soap_dds_shadow_mismatches_total",
                    "DDS answers that differed from the full parser.",
                    d.shadow_mismatches,
                ),
            ]);
            for (reason, n) in d.declines {
                out.push(
                    Sample::counter("soap_dds_declines_total", "DDS declines, by reason.", n)
                        .label("reason", format!("{reason:?}").to_lowercase()),
                );
            }
        }
        out
    }
}

/// The `source` label of `getattr_plans_total`.
fn plan_source_label(source: PlanSource) -> &'static str {
    match source {
        PlanSource::Session => "session",
        PlanSource::Shared => "shared",
        PlanSource::Built => "built",
    }
}

/// The differential deserializer the server runs with, if `soap_dds` is on. In shadow mode
/// (`soap_dds_shadow`, used by the test suite) every fast-path answer is checked against the
/// full parser and a difference panics the request loudly.
fn new_dds(cfg: &Config) -> Option<DdsCache> {
    cfg.soap_dds.then(|| {
        DdsCache::new(DdsConfig {
            shadow: cfg.soap_dds_shadow,
            shadow_policy: ShadowPolicy::Panic,
            ..DdsConfig::default()
        })
    })
}
