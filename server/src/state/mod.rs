//! Per-process server state every frontend shares: the catalogue handle, the settings, the
//! resumable TCP sessions, the login limiter, the counters, request metrics, TLS set-up and the
//! SOAP differential deserializer; the version string of the greeting and `getVersion`; and
//! [`Shared::counters`], the one counters report behind both the TCP `stats` command and
//! `/metrics`. It holds state only: no protocol, no login policy (`crate::auth`), no rules.
//!
//! This module imports no frontend (`tcp`, `soap`, `http`); they all import it.

pub mod limiter;
pub mod sessions;

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ardacat_soap::dds::ShadowPolicy;
use ardacat_soap::{DdsCache, DdsConfig};

use crate::Cat;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::tls::TlsSetup;
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

/// State every connection and request shares.
pub struct Shared {
    pub catalogue: Cat,
    pub config: Arc<Config>,
    pub sessions: SessionRegistry,
    pub stats: Stats,
    pub login_limiter: LoginLimiter,
    pub metrics: Metrics,
    /// Certificates and acceptors when TLS is configured (`ssl` on TCP, HTTPS on HTTP).
    pub tls: Option<Arc<TlsSetup>>,
    /// SOAP differential deserializer (None when `soap_dds` is off).
    pub dds: Option<DdsCache>,
}

impl Shared {
    /// The state a server with these settings starts with.
    pub fn new(catalogue: Cat, config: Arc<Config>, tls: Option<Arc<TlsSetup>>) -> Self {
        Shared {
            catalogue,
            sessions: SessionRegistry::new(Duration::from_secs(config.idle_timeout_secs)),
            stats: Stats::default(),
            login_limiter: LoginLimiter::new(config.max_failed_logins_per_minute),
            metrics: Metrics::default(),
            dds: new_dds(&config),
            config,
            tls,
        }
    }

    /// Every counter and gauge of this process, by name (without the `ardacat_` prefix
    /// `/metrics` adds): TCP connections, commands and sessions, the database pool, and the
    /// SOAP DDS counters (none when DDS is off). `stats` and `/metrics` both print this.
    pub fn counters(&self) -> Vec<(Cow<'static, str>, u64)> {
        let s = &self.stats;
        let pool = self.catalogue.store().db().pool_stats();
        let mut out: Vec<(Cow<'static, str>, u64)> = vec![
            ("tcp_connections_open".into(), s.connections_open.load(Ordering::Relaxed)),
            ("tcp_connections_total".into(), s.connections_total.load(Ordering::Relaxed)),
            ("tcp_commands_total".into(), s.commands.load(Ordering::Relaxed)),
            ("tcp_errors_total".into(), s.errors.load(Ordering::Relaxed)),
            ("tcp_sessions".into(), self.sessions.len() as u64),
            ("db_pool_size".into(), pool.size as u64),
            ("db_pool_idle".into(), pool.idle as u64),
            ("db_pool_in_use".into(), pool.in_use as u64),
        ];
        if let Some(dds) = &self.dds {
            let d = dds.stats();
            out.extend([
                ("soap_dds_hits".into(), d.hits),
                ("soap_dds_loop_hits".into(), d.loop_hits),
                ("soap_dds_misses".into(), d.misses),
                ("soap_dds_bypassed".into(), d.bypassed),
                ("soap_dds_bytes_skipped".into(), d.bytes_skipped),
                ("soap_dds_templates".into(), d.templates as u64),
                ("soap_dds_template_bytes".into(), d.template_bytes as u64),
                ("soap_dds_shadow_checks".into(), d.shadow_checks),
                ("soap_dds_shadow_mismatches".into(), d.shadow_mismatches),
            ]);
            for (reason, n) in d.declines {
                out.push((format!("soap_dds_declines_{}", format!("{reason:?}").to_lowercase()).into(), n));
            }
        }
        out
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
