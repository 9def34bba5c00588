//! Whether this catalogue runs on a read-only standby (a site replica on PostgreSQL streaming
//! replication), and the one rule that follows: every write is refused with code 20
//! `read-only replica; primary is <host:port>` before it reaches the database. The server sets
//! the state at start-up and flips it when the standby is promoted; this module only keeps it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Catalogue;
use crate::error::{Error, Result};
use crate::store::Store;

#[derive(Default)]
pub(super) struct Standby {
    read_only: AtomicBool,
    primary: Mutex<Option<String>>,
}

impl<S: Store> Catalogue<S> {
    /// Marks the database as a read-only standby (with the primary's `host:port` when known), or
    /// as writable again (after promotion).
    pub fn set_read_only(&self, read_only: bool, primary: Option<String>) {
        *self.inner.standby.primary.lock().unwrap_or_else(|p| p.into_inner()) = primary;
        self.inner.standby.read_only.store(read_only, Ordering::Release);
    }

    /// Whether writes are refused (the database is a standby).
    pub fn is_read_only(&self) -> bool {
        self.inner.standby.read_only.load(Ordering::Acquire)
    }

    /// Code 20 on a standby; nothing otherwise.
    pub(crate) fn refuse_on_standby(&self) -> Result<()> {
        if !self.is_read_only() {
            return Ok(());
        }
        let primary = self.inner.standby.primary.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Err(Error::ReadOnlyReplica(primary))
    }
}
