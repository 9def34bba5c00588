//! The PostgreSQL connection pool: which connection a `Conn` gets and what happens to it when the
//! `Conn` is done. It must not run statements beyond a liveness ping; what a connection runs is
//! the parent module's business.
//!
//! Why not sqlx's `PgPool` alone: it pings every connection it takes back (a Sync round trip,
//! unconditionally) and by default every connection it hands out, so a single `get` cost three
//! round trips where its statement needs one. Here a connection given back clean (no open
//! transaction, nothing unread, no session state: the parent decides) goes straight onto a stack
//! and the next `acquire` takes the most recently used one that its own thread gave back (else the
//! most recent of all: see `exec::thread_slot`). A connection that sat there for
//! [`PING_IF_IDLE_FOR`] or longer, or on which a statement failed (a broken socket fails like any
//! statement), is pinged first, and closed and replaced if that fails, so a connection gone stale
//! unseen (the server restarted, a firewall dropped it) is still caught before use; one in steady
//! use has just answered a statement. sqlx's pool remains the
//! connection factory (connect options, `after_connect`); each new connection is detached from
//! it at once, and the number of connections is bounded here by one semaphore permit each.
//!
//! A `Conn` may also give its connection back early or hand it to another `Conn` (a point read
//! waiting in, or leading, `catalog::point_lane`'s queue): `Conn::release`, `hand_over`,
//! `take_over` below.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgConnection, PgPool, Postgres};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{Conn, Statements};
use crate::error::StoreError;
use crate::exec::PoolStats;

/// A connection idle at least this long is pinged before it is handed out again.
pub(super) const PING_IF_IDLE_FOR: Duration = Duration::from_secs(1);

/// The pooled connections of one database.
pub(super) struct Slots {
    /// Opens connections (and runs `after_connect`); they are detached from it at once.
    factory: PgPool,
    /// One permit per connection that may be in use; `size` in all.
    permits: Arc<Semaphore>,
    /// Clean connections given back; the last one is the most recently used.
    idle: Mutex<Vec<Idle>>,
    size: usize,
    acquire_timeout: Duration,
}

/// A connection given back: since when, and whether a statement failed on it (see `acquire`).
struct Idle {
    conn: PgConnection,
    /// What the connection's prepared statements are, kept with it (they live as long as it).
    statements: Statements,
    since: Instant,
    failed: bool,
    /// The [`super::super::thread_slot`] of the thread that gave it back.
    thread: u32,
}

/// A connection in use, with the permit it holds. Dropping it closes the connection.
pub(super) struct Live {
    pub(super) conn: PgConnection,
    pub(super) statements: Statements,
    permit: OwnedSemaphorePermit,
}

impl Slots {
    pub(super) fn new(factory: PgPool, size: usize, acquire_timeout: Duration) -> Arc<Slots> {
        Arc::new(Slots {
            factory,
            permits: Arc::new(Semaphore::new(size)),
            idle: Mutex::new(Vec::with_capacity(size)),
            size,
            acquire_timeout,
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        // A poisoned lock only means a panic elsewhere during a push or pop.
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection: a permit (waiting at most `acquire_timeout`), then the most recently given
    /// back connection, pinged if it was idle long or a statement failed on it (a broken socket
    /// fails like any statement error), or a new one.
    pub(super) async fn acquire(&self) -> Result<Live, StoreError> {
        let permit = match tokio::time::timeout(self.acquire_timeout, self.permits.clone().acquire_owned()).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => return Err(StoreError::Closed),
            Err(_) => return Err(StoreError::PoolTimeout),
        };
        loop {
            let warm = super::super::take_for_this_thread(&mut self.idle(), |i| i.thread);
            let Some(Idle { mut conn, statements, since, failed, .. }) = warm else { break };
            // A failed ping drops (closes) the connection; try the next one.
            if (!failed && since.elapsed() < PING_IF_IDLE_FOR) || conn.ping().await.is_ok() {
                return Ok(Live { conn, statements, permit });
            }
        }
        // Boxed: sqlx's acquire is an 8.6 KB future, and inline it made every store, service
        // and frontend future above it that much larger, each copy of them copying it too.
        let conn = Box::pin(self.factory.acquire()).await?;
        Ok(Live { conn: PoolConnection::<Postgres>::detach(conn), statements: Statements::default(), permit })
    }

    /// A clean connection back onto the stack; its permit is released after it is there.
    pub(super) fn give_back(&self, live: Live, failed: bool) {
        let Live { conn, statements, permit } = live;
        self.idle().push(Idle { conn, statements, since: Instant::now(), failed, thread: super::super::thread_slot() });
        drop(permit);
    }

    pub(super) fn stats(&self) -> PoolStats {
        let in_use = self.size - self.permits.available_permits().min(self.size);
        let idle = self.idle().len();
        PoolStats { size: in_use + idle, idle, in_use }
    }

    /// Waits until every connection in use has been given back or dropped, then closes them all.
    pub(super) async fn close(&self) {
        if let Ok(all) = self.permits.acquire_many(u32::try_from(self.size).unwrap_or(u32::MAX)).await {
            self.permits.close();
            drop(all);
        }
        let idle = std::mem::take(&mut *self.idle());
        for Idle { conn, .. } in idle {
            let _ = conn.close().await;
        }
        self.factory.close().await;
    }
}

impl Conn {
    /// Outside a transaction, with nothing unread and no session state: the database connection
    /// goes back to the pool now (the next statement takes one again). Otherwise nothing happens.
    pub(crate) fn release(&mut self) {
        if self.in_tx || self.dirty || self.discard {
            return;
        }
        if let Some(live) = self.conn.take() {
            self.slots.give_back(live, std::mem::take(&mut self.failed));
        }
    }

    /// Under [`Conn::release`]'s conditions: this `Conn`'s database connection moved into a new
    /// `Conn` (this one takes another at its next statement).
    /// A connection on which a statement just failed is not handed over (it may be broken,
    /// and would fail the next leader's statement for all its reads): the pool pings it first.
    pub(crate) fn hand_over(&mut self) -> Option<Conn> {
        if self.in_tx || self.dirty || self.discard || self.failed {
            return None;
        }
        let live = self.conn.take()?;
        Some(Conn {
            conn: Some(live),
            slots: self.slots.clone(),
            in_tx: false,
            dirty: false,
            discard: false,
            failed: false,
        })
    }

    /// Takes `other`'s database connection in place of this one's, which goes back to the pool
    /// (when this `Conn` holds one it may not give back, `other`'s goes back instead).
    pub(crate) fn take_over(&mut self, mut other: Conn) {
        self.release();
        if self.conn.is_none() && !self.in_tx {
            self.conn = other.conn.take();
            self.failed = other.failed;
        }
    }
}
