//! Resumable TCP sessions (AMGA `Sessions = allow|force`) as the catalogue sees them: the id,
//! signed with the token key every process sharing the database holds (so a forged id, or one of
//! another catalogue, is refused before anything is looked up), and the session's state kept in
//! the database for any process to resume. Must not know the wire form beyond "a number": the
//! TCP frontend puts it in `EOT session<id> EOT`.
//!
//! An id is 63 bits (clients that parse it as a signed 64-bit integer cope): 39 random bits, then
//! the first 24 bits of HMAC-SHA256(token key, "tcp-session" ‖ those 39 bits).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::Catalogue;
use crate::error::Result;
use crate::store::{SavedTcpSession, Store, StoreConn};

const MAC_BITS: u32 = 24;
const SERIAL_BITS: u32 = 63 - MAC_BITS;

impl<S: Store> Catalogue<S> {
    fn session_mac(&self, serial: u64) -> u64 {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.inner.token_key).expect("HMAC takes any key length");
        mac.update(b"tcp-session");
        mac.update(&serial.to_be_bytes());
        let d = mac.finalize().into_bytes();
        (u64::from(d[0]) << 16 | u64::from(d[1]) << 8 | u64::from(d[2])) & ((1 << MAC_BITS) - 1)
    }

    /// A fresh signed session id (not yet stored anywhere).
    pub fn new_tcp_session_id(&self) -> u64 {
        loop {
            let serial = rand::random::<u64>() >> (64 - SERIAL_BITS);
            if serial != 0 {
                return serial << MAC_BITS | self.session_mac(serial);
            }
        }
    }

    /// Whether this catalogue signed `id`.
    pub fn tcp_session_id_valid(&self, id: u64) -> bool {
        let serial = id >> MAC_BITS;
        id >> 63 == 0 && serial != 0 && id & ((1 << MAC_BITS) - 1) == self.session_mac(serial)
    }

    /// Stores a session in the database until `expires` (unix seconds). With `create`, only
    /// when the id is not taken yet (false then: draw another).
    pub async fn put_tcp_session(
        &self,
        id: u64,
        saved: &SavedTcpSession,
        expires: i64,
        now: i64,
        create: bool,
    ) -> Result<bool> {
        let mut conn = self.inner.store.acquire().await?;
        let id = id as i64;
        Self::unit(&mut conn, async |c| c.put_tcp_session(id, saved, expires, now, create).await).await
    }

    /// The stored session of a valid id, unless it expired at `now`; with its expiry.
    pub async fn tcp_session(&self, id: u64, now: i64) -> Result<Option<(SavedTcpSession, i64)>> {
        if !self.tcp_session_id_valid(id) {
            return Ok(None);
        }
        self.inner.store.acquire().await?.tcp_session(id as i64, now).await
    }
}
