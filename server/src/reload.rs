//! Reload without restart (SIGHUP, what `systemctl reload` sends): re-read the config file and
//! the files it names, and put the reloadable settings in force — the TLS certificate chain,
//! its key, the client CAs and the grid-mapfile ([`RELOADABLE`]). A new set is built
//! completely first; if anything is wrong (unreadable or invalid file, a key that does not
//! match its certificate, a bad grid-mapfile line, an invalid config file) the reload is
//! refused with an error log line and the settings in force stay. Connections already open
//! keep their TLS session; handshakes after the reload use the new certificate.
//!
//! Other keys of the config file are read at start only: a reload that finds them changed says
//! which ones need a restart. Listeners cannot switch between plain and TLS on reload.

use std::collections::BTreeSet;
use std::sync::Arc;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, Flags};
use crate::state::Shared;
use crate::tls;

/// Config keys a reload puts in force.
pub const RELOADABLE: [&str; 4] = ["tls_cert", "tls_key", "tls_client_ca", "grid_mapfile"];

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{0}")]
    Tls(#[from] tls::TlsError),
    #[error("TLS cannot be turned on or off by a reload (the listeners are plain or TLS from the start); restart")]
    TlsMode,
}

/// What a successful reload did.
#[derive(Debug, Clone, Default)]
pub struct Reloaded {
    /// Lines of the grid-mapfile now in force (TLS on).
    pub gridmap_entries: Option<usize>,
    /// Keys whose new values need a restart.
    pub needs_restart: Vec<String>,
}

/// The settings the server would start with now: the same flags and environment, the config
/// file as it is now. Outside the server binary (no parsable command line) the settings it
/// started with stand (their files are still re-read).
fn current_config(started: &Config) -> Result<Config, ReloadError> {
    match Flags::try_parse() {
        Ok(flags) => Ok(Config::load(flags)?),
        Err(_) => Ok(started.clone()),
    }
}

/// Keys (other than [`RELOADABLE`]) whose values differ between two configs.
fn changed_keys(old: &Config, new: &Config) -> Vec<String> {
    let table = |c: &Config| toml::Table::try_from(c).unwrap_or_default();
    let (a, b) = (table(old), table(new));
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| !RELOADABLE.contains(&k.as_str()) && a.get(*k) != b.get(*k)).cloned().collect()
}

/// Re-read everything reloadable and put it in force, or change nothing.
pub fn reload(shared: &Shared) -> Result<Reloaded, ReloadError> {
    let config = current_config(&shared.config)?;
    let new_tls = tls::load(&config)?;
    let needs_restart = changed_keys(&shared.config, &config);
    let gridmap_entries = match (&shared.tls, new_tls) {
        (Some(slot), Some(setup)) => {
            let n = setup.gridmap_len();
            slot.replace(setup);
            Some(n)
        }
        (None, None) => None,
        _ => return Err(ReloadError::TlsMode),
    };
    Ok(Reloaded { gridmap_entries, needs_restart })
}

/// [`reload`] with its log lines.
pub fn reload_and_log(shared: &Shared) {
    match reload(shared) {
        Ok(r) => {
            tracing::info!(
                reloadable = ?RELOADABLE,
                gridmap_entries = r.gridmap_entries,
                "reloaded: TLS certificate, key, client CAs and grid-mapfile re-read"
            );
            if !r.needs_restart.is_empty() {
                tracing::warn!(keys = ?r.needs_restart, "reload: these changed settings need a restart to take effect");
            }
        }
        Err(e) => tracing::error!(error = %e, "reload refused; the settings in force stay"),
    }
}

/// Reload on every SIGHUP until `shutdown`. (The binary registers SIGHUP first thing, so a
/// SIGHUP never terminates the process.)
pub async fn on_sighup(shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; reload is unavailable");
            return;
        }
    };
    loop {
        tokio::select! {
            r = hup.recv() => {
                if r.is_none() {
                    return;
                }
                tracing::info!("SIGHUP: reloading");
                // File reads and key parsing: off the async workers.
                let shared = shared.clone();
                let _ = tokio::task::spawn_blocking(move || reload_and_log(&shared)).await;
            }
            _ = shutdown.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_keys_leave_out_reloadable_ones() {
        let old = Config::default();
        let new = Config {
            tls_cert: Some("/x.pem".into()),
            grid_mapfile: Some("/g".into()),
            tcp_port: 1,
            ..Config::default()
        };
        assert_eq!(changed_keys(&old, &new), vec!["tcp_port".to_string()]);
        assert!(changed_keys(&old, &old).is_empty());
    }
}
