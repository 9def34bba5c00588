//! A synchronous wrapper around [`Client`] for callers without an async runtime: it owns a
//! current-thread tokio runtime and blocks on each call. It must not add protocol behaviour.

use crate::client::{Client, ClientConfig};
use crate::error::{ClientError, Result};

/// A [`Client`] plus the runtime that drives it.
pub struct BlockingClient {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl BlockingClient {
    pub fn connect(config: ClientConfig) -> Result<BlockingClient> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ClientError::Io)?;
        let client = runtime.block_on(Client::connect(config))?;
        Ok(BlockingClient { runtime, client })
    }

    /// Runs one command line and returns its data lines as sent.
    pub fn execute(&mut self, line: &str) -> Result<Vec<String>> {
        self.runtime.block_on(self.client.execute(line))
    }

    /// Runs any async operation on the client, e.g.
    /// `bc.with(async |c| c.getattr("/d", &["a"]).await)`.
    pub fn with<R>(&mut self, f: impl AsyncFnOnce(&mut Client) -> R) -> R {
        self.runtime.block_on(f(&mut self.client))
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn into_inner(self) -> (tokio::runtime::Runtime, Client) {
        (self.runtime, self.client)
    }
}
