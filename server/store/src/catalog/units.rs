//! Transactions, write units (own transaction or savepoint) and read snapshots on one connection. Must not run
//! catalogue statements; every write method checks `writing` first.

use super::*;

impl SqlConn {
    /// Every write method starts here: a write outside a unit is a bug of the caller, refused
    /// before anything changes (see `StoreConn::begin_unit`).
    pub(super) fn writing(&self) -> Result<()> {
        match self.unit {
            Some(_) if self.conn.in_transaction() => Ok(()),
            _ => Err(Error::Internal("a write outside a write unit (Catalogue::write)".into())),
        }
    }

    /// Undoes a unit whose command never ended it (its future was dropped: a cancel).
    pub(super) async fn abandon_unit(&mut self) -> Result<()> {
        match self.unit {
            None => Ok(()),
            Some(_) => self.close_unit(false).await,
        }
    }

    pub(super) async fn close_unit(&mut self, ok: bool) -> Result<()> {
        let Some(unit) = self.unit.take() else {
            return Err(Error::Internal("no write unit is open".into()));
        };
        match (unit, ok) {
            (Unit::Own, true) => self.commit_tx().await,
            (Unit::Own, false) => self.rollback_tx().await,
            (Unit::Savepoint, true) => self.conn.release_savepoint().await.map_err(map_err),
            (Unit::Savepoint, false) => {
                self.conn.rollback_to_savepoint().await.map_err(map_err)?;
                self.conn.release_savepoint().await.map_err(map_err)
            }
        }
    }

    pub(super) async fn commit_tx(&mut self) -> Result<()> {
        if let Err(e) = self.send_announcement().await {
            let _ = self.rollback_tx().await;
            return Err(e);
        }
        let r = self.conn.commit().await.map_err(map_err);
        self.end_transaction();
        r
    }

    pub(super) async fn rollback_tx(&mut self) -> Result<()> {
        self.announce = shared::Announce::Nothing;
        let r = self.conn.rollback().await.map_err(map_err);
        self.end_transaction();
        r
    }

    pub(super) async fn begin(&mut self) -> Result<()> {
        self.abandon_unit().await?;
        self.conn.begin().await.map_err(map_err)
    }

    pub(super) async fn commit(&mut self) -> Result<()> {
        // A command is all or nothing: one cancelled mid-way leaves nothing in the commit.
        if self.unit == Some(Unit::Savepoint) {
            self.abandon_unit().await?;
        }
        self.unit = None;
        self.commit_tx().await
    }

    pub(super) async fn rollback(&mut self) -> Result<()> {
        self.unit = None;
        self.rollback_tx().await
    }

    pub(super) async fn begin_snapshot(&mut self) -> Result<()> {
        if self.unit.is_some() {
            return Err(Error::Internal("a snapshot opens only outside a unit".into()));
        }
        self.conn.begin_snapshot().await.map_err(map_err)
    }

    pub(super) async fn end_snapshot(&mut self) -> Result<()> {
        self.conn.end_snapshot().await.map_err(map_err)
    }

    pub(super) async fn begin_unit(&mut self) -> Result<()> {
        self.abandon_unit().await?;
        if self.conn.in_transaction() {
            self.conn.savepoint().await.map_err(map_err)?;
            self.unit = Some(Unit::Savepoint);
        } else {
            self.conn.begin().await.map_err(map_err)?;
            self.unit = Some(Unit::Own);
        }
        Ok(())
    }

    pub(super) async fn end_unit(&mut self, ok: bool) -> Result<()> {
        self.close_unit(ok).await
    }

    pub(super) async fn begin_group(&mut self) -> Result<()> {
        if self.unit.is_some() || !self.conn.in_transaction() {
            return Err(Error::Internal("a group opens only between units, inside a transaction".into()));
        }
        self.conn.savepoint().await.map_err(map_err)
    }

    pub(super) async fn end_group(&mut self, ok: bool) -> Result<()> {
        // A unit still open here belongs to a step whose future was dropped: undo it first.
        self.abandon_unit().await?;
        if !ok {
            self.conn.rollback_to_savepoint().await.map_err(map_err)?;
        }
        self.conn.release_savepoint().await.map_err(map_err)
    }
}
