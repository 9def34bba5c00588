//! The HTTP frontend: SOAP endpoint, WSDL and metrics on one axum router. (SOAP operations are
//! wired in `soap`; this module owns the listener and the routes.)

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::tcp::Shared;

pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: CancellationToken) {
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "http listener has no address");
            return;
        }
    };
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(shared.clone())
        .merge(crate::soap::router(shared, bound));
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(listener, service).with_graceful_shutdown(shutdown.cancelled_owned()).await {
        tracing::error!(error = %e, "http server failed");
    }
}

/// Prometheus text format: connection and session gauges, database pool, per-operation and
/// per-stage latency histograms.
async fn metrics(State(shared): State<Arc<Shared>>) -> String {
    let mut out = String::new();
    for (k, v) in shared.stats.snapshot(&shared) {
        out.push_str(&format!("ardacat_{k} {v}\n"));
    }
    let pool = shared.catalogue.store().db().pool_stats();
    out.push_str(&format!(
        "ardacat_db_pool_size {}\nardacat_db_pool_idle {}\nardacat_db_pool_in_use {}\n",
        pool.size, pool.idle, pool.in_use
    ));
    shared.metrics.render(&mut out);
    out
}
