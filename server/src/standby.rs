//! Start-up and life of a server on a PostgreSQL hot standby (a site replica): the standby is
//! noticed (`pg_is_in_recovery()`), migrations are skipped there (the schema version must be
//! this binary's: the primary migrates, replication brings it), and the catalogue refuses
//! writes (code 20) until the standby is promoted, which this module notices by itself and
//! then lets the catalogue take writes without a restart. It owns no rule (the catalogue's
//! `standby`) and no SQL (the store's `exec::standby`).

use std::sync::Arc;
use std::time::Duration;

use ardacat_store::{Db, StandbyStatus, expected_schema_version};
use tokio_util::sync::CancellationToken;

use crate::StartError;
use crate::state::Shared;

/// How often a standby asks whether it was promoted.
const PROMOTION_POLL: Duration = Duration::from_millis(250);

/// Migrates a primary (or SQLite); on a standby checks that the schema is at this binary's
/// version instead. Returns what the database is.
pub async fn prepare(db: &Db) -> Result<StandbyStatus, StartError> {
    let status = db.standby_status().await?;
    if !status.in_recovery {
        db.migrate().await?;
        return Ok(status);
    }
    let want = expected_schema_version(db.backend());
    let have = match db.health().await {
        Ok(h) => h.schema_version,
        // Never migrated: not even the migrations table exists.
        Err(ardacat_store::StoreError::UndefinedObject(_)) => None,
        Err(e) => return Err(e.into()),
    };
    if have != Some(want) {
        let have = have.map_or("none".to_string(), |v| v.to_string());
        return Err(StartError::Standby(format!(
            "the database is a read-only standby at schema version {have}, this server needs {want}; \
             migrate the primary (start this version of ardacat-server on it) and let the standby catch up"
        )));
    }
    tracing::info!(upstream = ?status.upstream, "the database is a read-only standby: serving reads, refusing writes");
    Ok(status)
}

/// On a standby: wait for its promotion (`pg_promote()`), then take writes (and hear other
/// processes' changes) without a restart. Ends at shutdown or after the promotion.
pub async fn watch_promotion(shared: Arc<Shared>, shutdown: CancellationToken) {
    let cat = &shared.catalogue;
    while cat.is_read_only() {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(PROMOTION_POLL) => {}
        }
        match cat.store().db().standby_status().await {
            Ok(s) if !s.in_recovery => {
                cat.store().watch_changes(Duration::from_secs(5)).await;
                cat.set_read_only(false, None);
                tracing::info!("the standby was promoted: taking writes");
            }
            Ok(s) => {
                if s.upstream.is_some() && shared.config.primary.is_none() {
                    cat.set_read_only(true, s.upstream);
                }
            }
            Err(e) => tracing::debug!(error = %e, "standby check failed; asking again"),
        }
    }
}
