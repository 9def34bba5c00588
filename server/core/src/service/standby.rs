//! Whether this catalogue runs on a read-only standby (a site replica on PostgreSQL streaming
//! replication), and the rules that follow: every write is refused with code 20
//! `read-only replica; primary is <host:port>` before it reaches the database, and a session that
//! had a write forwarded to the primary reads locally only once the standby has replayed past
//! that write (read-your-writes, [`Catalogue::catch_up`]). The server sets the state at start-up
//! and flips it when the standby is promoted; forwarding itself is the TCP frontend's.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::store::{Store, StoreConn};

/// A PostgreSQL WAL position `X/Y` (two hex numbers of up to 32 bits) as one number.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.split_once('/')?;
    let part = |p: &str| {
        if p.is_empty() || p.len() > 8 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(p, 16).ok()
    };
    Some((part(hi)? << 32) | part(lo)?)
}

/// The pauses between two looks at the standby's replay position while a read waits for it:
/// 1 ms doubling up to 20 ms, then 20 ms.
pub fn replica_poll_pauses() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(Duration::from_millis(1)), |p| Some((*p * 2).min(Duration::from_millis(20))))
}

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

    /// `wal_lsn` (an ardacat extension): the database's WAL position, the current one on a
    /// primary and the last replayed one on a standby. Any logged-in user may ask.
    pub async fn wal_lsn(&self, s: &mut Session<S>) -> Result<String> {
        self.read(s, async |c| c.wal_lsn().await)
            .await?
            .ok_or_else(|| Error::IllegalCommand("wal_lsn: no WAL position: the catalogue is not on PostgreSQL".into()))
    }

    /// Read-your-writes: before a local read of a session whose write was forwarded to the
    /// primary, wait until this standby has replayed past that write's WAL position (polling,
    /// [`replica_poll_pauses`]), at most `bound`. `true`: read locally (caught up, nothing to
    /// wait for, or promoted meanwhile; the wait is then forgotten). `false`: still behind after
    /// `bound`: the caller forwards the read, and the next read waits again.
    pub async fn catch_up(&self, s: &mut Session<S>, bound: Duration) -> Result<bool> {
        let Some(want) = s.wait_lsn.as_deref() else { return Ok(true) };
        let want = parse_lsn(want)
            .ok_or_else(|| Error::Internal(format!("the primary answered a bad WAL position {want:?}")))?;
        let deadline = Instant::now() + bound;
        let mut pauses = replica_poll_pauses();
        loop {
            if !self.is_read_only() {
                break;
            }
            let have = self.inner.store.acquire().await?.wal_lsn().await?;
            if have.as_deref().and_then(parse_lsn).is_some_and(|h| h >= want) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            tokio::time::sleep(pauses.next().unwrap_or(Duration::from_millis(20)).min(left)).await;
        }
        s.wait_lsn = None;
        Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_text_parses_as_pg_lsn_orders() {
        assert_eq!(parse_lsn("0/0"), Some(0));
        assert_eq!(parse_lsn("0/3000148"), Some(0x300_0148));
        assert_eq!(parse_lsn("16/B374D848"), Some((0x16 << 32) | 0xB374_D848));
        assert_eq!(parse_lsn("FFFFFFFF/FFFFFFFF"), Some(u64::MAX));
        // A higher segment beats any offset of a lower one, as pg_lsn compares.
        assert!(parse_lsn("1/0").unwrap() > parse_lsn("0/FFFFFFFF").unwrap());
        for bad in ["", "0", "/0", "0/", "x/1", "1/2/3", "100000000/0", "0/ 1", "-1/0", "+1/0"] {
            assert_eq!(parse_lsn(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn poll_pauses_double_from_one_ms_to_twenty() {
        let ms: Vec<u128> = replica_poll_pauses().take(8).map(|d| d.as_millis()).collect();
        assert_eq!(ms, [1, 2, 4, 8, 16, 20, 20, 20]);
    }
}
