//! Probes for load balancers and orchestrators: `GET /healthz` (the process serves: always 200)
//! and `GET /readyz` (200 only when the database answers within `ready_timeout_ms`, its schema
//! is at this binary's migration version, and — on a standby — replay lags less than
//! `ready_max_lag_ms`; otherwise 503 naming the failed check). No authentication and no
//! catalogue data: the bodies say only which check failed. The questions asked of the database
//! are the store's (`Db::health`); this module only judges the answers.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::Shared;

/// The probe routes, merged by `crate::http` into the HTTP router and the metrics listener.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz)).with_state(shared)
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, "application/json"), (CACHE_CONTROL, "no-store")], body).into_response()
}

async fn healthz() -> Response {
    json(StatusCode::OK, "{\"status\":\"ok\"}\n".into())
}

/// Why the server is not ready: the check's name and a short reason (no catalogue data).
#[derive(Debug, Clone, PartialEq)]
pub struct NotReady {
    pub check: &'static str,
    pub reason: String,
}

/// Run the readiness checks.
pub async fn ready(shared: &Shared) -> Result<(), NotReady> {
    let cfg = &shared.config;
    let db = shared.catalogue.store().db();
    let timeout = Duration::from_millis(cfg.ready_timeout_ms.max(1));
    let health = match tokio::time::timeout(timeout, db.health()).await {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database does not answer");
            return Err(NotReady { check: "database", reason: "the database does not answer".into() });
        }
        Err(_) => {
            return Err(NotReady {
                check: "database",
                reason: format!("the database did not answer within {} ms", cfg.ready_timeout_ms),
            });
        }
    };
    let expected = ardacat_store::expected_schema_version(db.backend());
    match health.schema_version {
        Some(v) if v == expected => {}
        Some(v) => {
            let how = if v < expected { "behind" } else { "ahead of" };
            return Err(NotReady {
                check: "schema",
                reason: format!("schema version {v} is {how} this server's {expected}"),
            });
        }
        None => return Err(NotReady { check: "schema", reason: "no schema migrations recorded".into() }),
    }
    if health.in_recovery {
        match health.replay_lag_ms {
            Some(lag) if lag <= cfg.ready_max_lag_ms as f64 => {}
            Some(lag) => {
                return Err(NotReady {
                    check: "replication",
                    reason: format!("replay lag {} ms over {} ms", lag.round() as u64, cfg.ready_max_lag_ms),
                });
            }
            None => return Err(NotReady { check: "replication", reason: "replay lag unknown".into() }),
        }
    }
    Ok(())
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    match ready(&shared).await {
        Ok(()) => json(StatusCode::OK, "{\"status\":\"ready\"}\n".into()),
        Err(n) => json(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{{\"status\":\"unavailable\",\"check\":\"{}\",\"reason\":{}}}\n", n.check, json_string(&n.reason)),
        ),
    }
}

/// A JSON string literal (the reasons are our own text, but quote them properly anyway).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_strings_are_quoted() {
        assert_eq!(super::json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
