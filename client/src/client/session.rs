//! Sessions: remembering the session id the server announces in end markers, resuming it on a
//! new connection (`resume<id>`, no login), and reconnecting with a fresh login. It decides
//! nothing about when to reconnect; callers (the CLI) do.

use super::Client;
use super::handshake::{Opened, open};
use crate::error::{ClientError, Result};

impl Client {
    /// Opens a new connection resuming the stored session: `resume<id>` and no login block.
    /// A session the server no longer knows is reported as the error of the next command.
    pub async fn reconnect_resume(&mut self) -> Result<()> {
        let id = self
            .session
            .ok_or_else(|| ClientError::InvalidArgument("the server has not announced a session id".into()))?;
        let opened = open(&self.config, Some(id), self.escape).await?;
        self.replace(opened);
        Ok(())
    }

    /// Opens a new connection with a fresh login (the session, if any, is forgotten).
    pub async fn reconnect(&mut self) -> Result<()> {
        let opened = open(&self.config, None, self.config.escape).await?;
        self.escape = opened.escape;
        self.replace(opened);
        self.session = None;
        Ok(())
    }

    fn replace(&mut self, opened: Opened) {
        self.framed = opened.framed;
        self.greeting = opened.greeting;
        self.tls = opened.tls;
        self.in_reply = false;
        self.broken = false;
    }

    pub(super) fn note_session(&mut self, session: Option<u64>) {
        if session.is_some() {
            self.session = session;
        }
    }
}
