//! ardacat-server: wires the catalogue service to its two frontends — the AMGA-compatible TCP
//! streaming protocol (`tcp`) and SOAP over HTTP (`soap`, routed by `http`) — and owns start-up
//! and shutdown. Frontends only translate; every rule lives in ardacat-core, every SQL text in
//! ardacat-store.
//!
//! Module layering (no import circle between these modules): `config` and `metrics` depend on
//! nothing here; `tls`, `admission`, `logging` and `preflight` (`--check-config`) on `config`
//! (`preflight` also on `tls`); `state` (shared state, counters, version) on those; `auth` (the
//! one login path), `health` and `reload` on `state`; the frontends `tcp`, `soap` and `ui` on
//! `state` and `auth`; `http` (the one place the HTTP router is composed) on the frontends.
//! Nothing imports `http` but this file, nor `tcp` but `http`. A module split into files keeps
//! its parts as child modules, which may use their parent's items.
//!
//! `run` is the one seam `main` and the tests use: it opens and migrates the database, makes
//! sure `root` exists, binds both listeners, reports their addresses, and serves until the
//! cancellation token fires.

pub mod admission;
pub mod auth;
pub mod config;
pub mod copy;
pub mod health;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod preflight;
pub mod reload;
pub mod soap;
pub mod standby;
pub mod state;
pub mod tcp;
pub mod tls;
pub mod ui;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ardacat_core::{Catalogue, ServiceConfig};
use ardacat_store::{Db, DbOptions, SqlStore};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::Config;

/// The storage the server runs on.
pub type Store = SqlStore;
/// The catalogue handle every frontend holds.
pub type Cat = Catalogue<Store>;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open database: {0}")]
    Database(#[from] ardacat_store::StoreError),
    #[error("catalogue: {0}")]
    Catalogue(#[from] ardacat_core::Error),
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    #[error("TLS: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("{0}")]
    Standby(String),
    #[error("configuration: {0}")]
    Config(String),
}

/// Addresses the server actually listens on (ports may have been 0).
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub tcp: SocketAddr,
    pub http: SocketAddr,
}

/// How the root password was settled at start-up.
pub enum RootPassword {
    /// `root` existed already.
    Existing,
    /// Created from `ARDACAT_ROOT_PASSWORD`.
    FromEnv,
    /// Created with a generated password, to be shown once.
    Generated(String),
}

/// Open the database, migrate, create `root` if needed. Separate from `serve` so `main` can
/// print the generated password before serving.
pub async fn open(config: &Config, root_password: Option<String>) -> Result<(Cat, RootPassword), StartError> {
    if let Some((key, problem)) = config.primary_problems().into_iter().next() {
        return Err(StartError::Config(format!("{key}: {problem}")));
    }
    let opts = DbOptions {
        pool_size: config.db_pool_size,
        statement_timeout: Duration::from_secs(config.query_timeout_secs),
        acquire_timeout: Duration::from_millis(config.db_acquire_timeout_ms.max(1)),
        sqlite_exclusive: config.sqlite_exclusive,
        point_reads_in_flight: config.db_point_reads_in_flight,
        ..DbOptions::default()
    };
    let db = Db::open(&config.database, opts).await?;
    let standby = standby::prepare(&db).await?;
    let store = SqlStore::new(db);
    if !standby.in_recovery {
        // PostgreSQL: hear other processes' user, group, ACL and schema changes at once (a
        // standby cannot LISTEN; its caches expire by time).
        store.watch_changes(Duration::from_secs(5)).await;
    }
    let cat = Catalogue::new(store, ServiceConfig::default()).await?;
    // With `--primary` the refusals name the primary's ardacat, not its PostgreSQL.
    cat.set_read_only(standby.in_recovery, config.primary.clone().or(standby.upstream));
    let (pw, generated) = match root_password {
        Some(p) => (p, false),
        None => {
            let bytes: [u8; 18] = rand::random();
            (base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes), true)
        }
    };
    let created = cat.ensure_root(&pw).await?;
    let how = match (created, generated) {
        (false, _) => RootPassword::Existing,
        (true, false) => RootPassword::FromEnv,
        (true, true) => RootPassword::Generated(pw),
    };
    Ok((cat, how))
}

/// Bind both listeners.
pub async fn bind(config: &Config) -> Result<(TcpListener, TcpListener, Bound), StartError> {
    let tcp_addr = SocketAddr::new(config.bind, config.tcp_port);
    let http_addr = SocketAddr::new(config.bind, config.http_port);
    let tcp = TcpListener::bind(tcp_addr).await.map_err(|e| StartError::Bind(tcp_addr, e))?;
    let http = TcpListener::bind(http_addr).await.map_err(|e| StartError::Bind(http_addr, e))?;
    let bound = Bound {
        tcp: tcp.local_addr().map_err(|e| StartError::Bind(tcp_addr, e))?,
        http: http.local_addr().map_err(|e| StartError::Bind(http_addr, e))?,
    };
    Ok((tcp, http, bound))
}

/// Serve both frontends until `shutdown` fires, then drain (bounded) and return. TLS settings
/// are loaded first; if they are unusable the error is logged and nothing is served (`main`
/// checks them with [`tls::load`] before it binds and calls [`serve_with`]).
pub async fn serve(cat: Cat, config: Config, tcp: TcpListener, http: TcpListener, shutdown: CancellationToken) {
    match tls::load(&config) {
        Ok(tls) => serve_with(cat, config, tcp, http, tls, shutdown).await,
        Err(e) => tracing::error!(error = %e, "cannot serve"),
    }
}

/// [`serve`] with TLS settings already loaded (`None`: plain TCP and HTTP only).
pub async fn serve_with(
    cat: Cat,
    config: Config,
    tcp: TcpListener,
    http: TcpListener,
    tls: Option<Arc<tls::TlsSetup>>,
    shutdown: CancellationToken,
) {
    serve_full(cat, config, Listeners { tcp, http, metrics: None }, tls, shutdown).await
}

/// Every listener the server serves on.
pub struct Listeners {
    pub tcp: TcpListener,
    pub http: TcpListener,
    /// `metrics_bind`: `/metrics`, `/healthz`, `/readyz` on their own listener.
    pub metrics: Option<TcpListener>,
}

/// Bind the metrics listener when `metrics_bind` is set; returns it with its actual address.
pub async fn bind_metrics(config: &Config) -> Result<Option<(TcpListener, SocketAddr)>, StartError> {
    let Some(addr) = config.metrics_bind else { return Ok(None) };
    let l = TcpListener::bind(addr).await.map_err(|e| StartError::Bind(addr, e))?;
    let bound = l.local_addr().map_err(|e| StartError::Bind(addr, e))?;
    Ok(Some((l, bound)))
}

/// [`serve_with`] on every listener, the metrics listener included.
pub async fn serve_full(
    cat: Cat,
    config: Config,
    listeners: Listeners,
    tls: Option<Arc<tls::TlsSetup>>,
    shutdown: CancellationToken,
) {
    let shared = Arc::new(state::Shared::new(cat, Arc::new(config), tls));
    let http_task = tokio::spawn(http::serve(listeners.http, shared.clone(), shutdown.clone()));
    let ops_task = listeners.metrics.map(|l| tokio::spawn(http::serve_ops(l, shared.clone(), shutdown.clone())));
    tokio::spawn(reload::on_sighup(shared.clone(), shutdown.clone()));
    if shared.catalogue.is_read_only() {
        tokio::spawn(standby::watch_promotion(shared.clone(), shutdown.clone()));
    }
    tcp::serve(listeners.tcp, shared, shutdown).await;
    let _ = http_task.await;
    if let Some(t) = ops_task {
        let _ = t.await;
    }
}

#[cfg(test)]
mod layout_tests;
