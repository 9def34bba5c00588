//! What several server processes on one PostgreSQL database share besides the catalogue itself:
//! the change feed (`LISTEN`/`NOTIFY` on [`shared::CHANGES_CHANNEL`]: a connection that changed
//! users, groups, ACLs, modes, owners or schema notifies inside its transaction; every process
//! listens and drops its schema cache at once, and for user and group changes (payload `auth`)
//! also moves its change number, so sessions re-read their groups) and the resumable
//! TCP sessions (`tcp_sessions`). Must not decide what a change or a session means (the core
//! does); SQL text comes from `sql::shared`.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use ardacat_core::store::{RemoteChanges, SavedTcpSession};

use super::*;
use crate::sql::shared;

const NOT_WATCHED: u8 = 0;
const LIVE: u8 = 1;
const LOST: u8 = 2;

/// Longest pause between two attempts to get the listener back.
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// What a connection's open transaction must announce at commit, the most first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Announce {
    #[default]
    Nothing,
    Schema,
    Auth,
}

/// This process's view of other processes' changes (see [`Store::remote_changes`]).
#[derive(Default)]
pub(super) struct Feed {
    state: AtomicU8,
    epoch: AtomicU64,
}

impl Feed {
    pub(super) fn remote_changes(&self) -> RemoteChanges {
        match self.state.load(Ordering::Acquire) {
            NOT_WATCHED => RemoteChanges::NotWatched,
            LIVE => RemoteChanges::Live(self.epoch.load(Ordering::Acquire)),
            _ => RemoteChanges::Lost,
        }
    }

    pub(super) fn lost(&self) -> bool {
        self.state.load(Ordering::Acquire) == LOST
    }

    /// Something changed (or may have, unseen): forget what was read before; with `auth` also
    /// the group lists and credentials read before.
    fn moved(&self, cache: &Mutex<SchemaCache>, auth: bool) {
        cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
        if auth {
            self.epoch.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn set(&self, state: u8, cache: &Mutex<SchemaCache>) {
        self.state.store(state, Ordering::Release);
        self.moved(cache, true);
    }
}

impl SqlStore {
    /// On PostgreSQL: start listening for other processes' changes and wait (up to `wait`) until
    /// the listener is in place. Until it is, and whenever it is lost, the store serves no cached
    /// schema fact and [`Store::remote_changes`] says `Lost`; the task reconnects by itself and
    /// ends when the pool closes. A no-op on SQLite.
    pub async fn watch_changes(&self, wait: Duration) {
        let Some(pool) = self.db.pg_listen_pool() else { return };
        let (feed, cache) = (self.feed.clone(), self.cache.clone());
        feed.set(LOST, &cache);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            let mut pause = Duration::from_millis(50);
            while !pool.is_closed() {
                if let Ok(mut l) = sqlx::postgres::PgListener::connect_with(&pool).await
                    && l.listen(shared::CHANGES_CHANNEL).await.is_ok()
                {
                    // Whatever happened while nobody listened is unknown: start afresh.
                    feed.set(LIVE, &cache);
                    pause = Duration::from_millis(50);
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                    while let Ok(Some(n)) = l.try_recv().await {
                        feed.moved(&cache, n.payload() != shared::SCHEMA_PAYLOAD);
                    }
                    if !pool.is_closed() {
                        tracing::warn!("lost the change listener; re-reading everything until it is back");
                    }
                    feed.set(LOST, &cache);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RECONNECT_MAX);
            }
        });
        let _ = tokio::time::timeout(wait, ready_rx).await;
    }
}

impl SqlConn {
    /// Collections, attributes, ACLs, modes or owners changed on this connection (`auth`: users,
    /// groups, members, subjects or passwords): other processes are told when the transaction
    /// commits.
    pub(super) fn announce(&mut self, auth: bool) {
        if self.dialect == Dialect::Postgres {
            self.announce = self.announce.max(if auth { Announce::Auth } else { Announce::Schema });
        }
    }

    /// Just before a commit: the notification rides on the transaction (delivered at commit,
    /// dropped on rollback).
    pub(super) async fn send_announcement(&mut self) -> Result<()> {
        let sql = match std::mem::take(&mut self.announce) {
            Announce::Nothing => return Ok(()),
            Announce::Schema => shared::NOTIFY_SCHEMA,
            Announce::Auth => shared::NOTIFY_AUTH,
        };
        if self.conn.in_transaction() {
            self.exec(sql, &[]).await?;
        }
        Ok(())
    }

    pub(super) async fn put_tcp_session(
        &mut self,
        id: i64,
        saved: &SavedTcpSession,
        expires: i64,
        now: i64,
        create: bool,
    ) -> Result<bool> {
        self.writing()?;
        self.exec_compiled(&shared::purge_tcp_sessions(self.dialect, now)).await?;
        let c = shared::put_tcp_session(self.dialect, id, &saved.user, &saved.cwd, saved.escape, expires, create);
        Ok(self.exec_compiled(&c).await? > 0)
    }

    pub(super) async fn tcp_session(&mut self, id: i64, now: i64) -> Result<Option<(SavedTcpSession, i64)>> {
        let c = shared::select_tcp_session(self.dialect, id, now);
        let rows = self.point_rows(&c.sql, &c.params, &c.types).await?;
        Ok(rows.first().map(|r| {
            (
                SavedTcpSession {
                    user: text_of(&r[0]),
                    cwd: text_of(&r[1]),
                    escape: matches!(r[2], Value::Bool(true)),
                },
                int_of(&r[3]),
            )
        }))
    }
}
