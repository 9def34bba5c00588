//! One session's connection to the primary's ardacat, through the AMGA client library
//! (`ardacat-client`: login, TLS, escaping, reply parsing): opened as the service account, kept
//! acting as the session's user in its directory (`sudo`, `cd` when they changed), a line sent
//! as the client sent it and the primary's status and data lines relayed through the replica's
//! own `Reply`. It decides nothing about what is forwarded (that is `forward::decide`).

use std::path::PathBuf;
use std::time::Duration;

use ardacat_client::{Client, ClientConfig, ClientError, TlsClientConfig};
use ardacat_core::Error;
use tokio::io::AsyncWrite;

use super::Failure;
use crate::config::Config;
use crate::tcp::reply::Reply;

/// Where the CLI looks for CA certificates too when none is given.
const DEFAULT_CA_DIR: &str = "/etc/grid-security/certificates";

pub(super) struct Upstream {
    client: Client,
    /// Who the upstream session acts as, and where it is (`None`: not yet set).
    user: Option<String>,
    cwd: Option<String>,
}

/// A failure of the connection itself (as opposed to an error status of one command).
fn unreachable(e: &ClientError) -> Failure {
    Failure::Unreachable(e.to_string())
}

impl Upstream {
    /// Connects and logs in as the service account; `escape` when the client's session has it,
    /// so that a forwarded line means there what it means here.
    pub(super) async fn open(config: &Config, escape: bool) -> Result<Upstream, Failure> {
        let target = config.primary.as_deref().unwrap_or_default();
        let (host, port) = target
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']).to_string(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| Failure::Unreachable(format!("{target:?} is not HOST:PORT")))?;
        let tls = config.primary_ssl.then(|| TlsClientConfig {
            ca: config.primary_tls_ca.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_CA_DIR)),
            cert: config.primary_tls_cert.clone(),
            key: config.primary_tls_key.clone(),
        });
        let settings = ClientConfig {
            host,
            port,
            login: config.primary_login.clone().unwrap_or_default(),
            // A secret: only ever from the environment, never from flags or the file.
            password: std::env::var("ARDACAT_PRIMARY_PASSWORD").ok(),
            escape,
            connect_timeout: Some(Duration::from_secs(config.primary_timeout_secs.max(1))),
            tls,
            ..ClientConfig::default()
        };
        let client = Client::connect(settings).await.map_err(|e| unreachable(&e))?;
        Ok(Upstream { client, user: None, cwd: None })
    }

    pub(super) fn is_broken(&self) -> bool {
        self.client.is_broken()
    }

    /// Runs one bookkeeping command of the forwarder's own (`sudo`, `cd`); its failure is a
    /// refusal of the forwarding, not the client's error.
    async fn own(&mut self, args: &[&str]) -> Result<Vec<String>, Failure> {
        let line = self.client.command_line(args).map_err(|e| Failure::Refused(e.to_string()))?;
        match self.client.execute(&line).await {
            Ok(lines) => Ok(lines),
            Err(e @ (ClientError::Server { .. } | ClientError::Cancelled { .. })) => Err(Failure::Refused(e.message())),
            Err(e) => Err(unreachable(&e)),
        }
    }

    /// Makes the upstream session act as `user` in `cwd` (the client's session here may have
    /// changed either since the last forward).
    pub(super) async fn follow(&mut self, user: &str, cwd: &str) -> Result<(), Failure> {
        if self.user.as_deref() != Some(user) {
            self.user = None;
            self.own(&["sudo", user]).await?;
            self.user = Some(user.to_string());
            // A new user starts where the old one was; say where again.
            self.cwd = None;
        }
        if self.cwd.as_deref() != Some(cwd) {
            self.own(&["cd", cwd]).await?;
            self.cwd = Some(cwd.to_string());
        }
        Ok(())
    }

    /// Sends a line the primary does not answer (inside an upload).
    pub(super) async fn send_unanswered(&mut self, raw: &str) -> Result<(), Failure> {
        self.client.send_unanswered(raw).await.map_err(|e| unreachable(&e))
    }

    /// Sends `raw` and relays the primary's answer: its data lines through `reply` (encoded for
    /// the client as the replica's own rows are), its error status as the same code and text.
    pub(super) async fn relay<W: AsyncWrite + Unpin + Send>(
        &mut self,
        raw: &str,
        reply: &mut Reply<'_, W>,
    ) -> Result<(), Failure> {
        let relayed = |e: ClientError| match e {
            ClientError::Server { code, message } | ClientError::Cancelled { code, message } => {
                Failure::Relayed(Error::Relayed { code: u16::try_from(code).unwrap_or(99), message })
            }
            other => unreachable(&other),
        };
        let mut rows = self.client.stream(raw).await.map_err(relayed)?;
        while let Some(line) = rows.next_line().await.map_err(relayed)? {
            let value = rows.decode(&line).map_err(relayed)?;
            reply.value(value.as_deref()).await.map_err(Failure::Relayed)?;
        }
        Ok(())
    }

    /// The primary's WAL position now (`wal_lsn`); `None` when it has none (SQLite).
    pub(super) async fn wal_lsn(&mut self) -> Result<Option<String>, Failure> {
        match self.client.execute("wal_lsn").await {
            Ok(lines) => Ok(lines.into_iter().next()),
            Err(ClientError::Server { .. }) => Ok(None),
            Err(e) => Err(unreachable(&e)),
        }
    }
}
