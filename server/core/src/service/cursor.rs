//! Resumable query positions as signed, self-contained tokens. A token carries the query, the
//! caller and the keyset position of the last row served, so any server process sharing the
//! database (and holding the same key, stored there) can continue it, also after a restart.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{Catalogue, SelectSpec, Session};
use crate::error::{Error, Result};
use crate::store::{Store, StoreConn};
use crate::types::{Value, parse_timestamp, timestamp_sort_key};

/// What a continuation token encodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CursorState {
    /// Random id; a frontend may keep a revocation list keyed by it (`endQuery`).
    pub id: String,
    pub user: String,
    pub cwd: String,
    pub select: Vec<String>,
    pub condition: String,
    pub order_by: Option<String>,
    /// Keyset position, each value tagged with its type.
    pub after: Vec<String>,
    /// A native SQL `SELECT` (SOAP `sqlQuery`) instead of `select`/`condition`/`order_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// Rows served by earlier pages (counts against the statement's own `LIMIT`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub served: u64,
    /// Unix seconds when the token was issued (for idle expiry).
    pub issued: i64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn encode_value(v: &Value) -> String {
    match v {
        Value::Null => "n".into(),
        Value::Int(i) => format!("i{i}"),
        Value::Float(f) => format!("f{:016x}", f.to_bits()),
        Value::Text(s) => format!("s{s}"),
        Value::Bool(b) => format!("b{}", *b as u8),
        Value::Timestamp(t) => format!("t{}", timestamp_sort_key(t)),
    }
}

fn decode_value(s: &str) -> Option<Value> {
    let (tag, rest) = s.split_at_checked(1)?;
    Some(match tag {
        "n" => Value::Null,
        "i" => Value::Int(rest.parse().ok()?),
        "f" => Value::Float(f64::from_bits(u64::from_str_radix(rest, 16).ok()?)),
        "s" => Value::Text(rest.to_string()),
        "b" => Value::Bool(rest == "1"),
        "t" => Value::Timestamp(parse_timestamp(rest)?),
        _ => return None,
    })
}

impl CursorState {
    pub fn position(&self) -> Option<Vec<Value>> {
        if self.after.is_empty() { None } else { self.after.iter().map(|s| decode_value(s)).collect() }
    }

    pub fn spec(&self) -> SelectSpec {
        SelectSpec { select: self.select.clone(), condition: self.condition.clone(), order_by: self.order_by.clone() }
    }
}

type HmacSha256 = Hmac<Sha256>;

impl<S: Store> Catalogue<S> {
    /// Sign a cursor state into an opaque token.
    pub fn issue_token(&self, state: &CursorState) -> String {
        let body = serde_json::to_vec(state).unwrap_or_default();
        let mut mac = HmacSha256::new_from_slice(&self.inner.token_key).expect("HMAC takes any key length");
        mac.update(&body);
        let sig = mac.finalize().into_bytes();
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&body), URL_SAFE_NO_PAD.encode(sig))
    }

    /// Verify a token's signature, owner and age. Forged or altered → 8; someone else's → 4;
    /// older than `ttl_secs` since issue → 1.
    pub fn open_token(&self, s: &Session<S>, token: &str, now: i64, ttl_secs: i64) -> Result<CursorState> {
        let bad = || Error::IllegalQuery("invalid query token".into());
        let (body, sig) = token.split_once('.').ok_or_else(bad)?;
        let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| bad())?;
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| bad())?;
        let mut mac = HmacSha256::new_from_slice(&self.inner.token_key).expect("HMAC takes any key length");
        mac.update(&body);
        mac.verify_slice(&sig).map_err(|_| bad())?;
        let state: CursorState = serde_json::from_slice(&body).map_err(|_| bad())?;
        if state.user != s.principal.user {
            return Err(Error::PermissionDenied("this query token belongs to another user".into()));
        }
        if now - state.issued > ttl_secs {
            return Err(Error::NotFound("query token expired".into()));
        }
        if state.position().is_none() && !state.after.is_empty() {
            return Err(bad());
        }
        Ok(state)
    }

    /// Opens a token and refuses one that `end_token` released.
    pub async fn open_live_token(&self, s: &Session<S>, token: &str, now: i64, ttl_secs: i64) -> Result<CursorState> {
        let state = self.open_token(s, token, now, ttl_secs)?;
        let mut conn = self.inner.store.acquire().await?;
        if conn.is_token_revoked(&state.id).await? {
            return Err(Error::NotFound("query token was ended".into()));
        }
        Ok(state)
    }

    /// `endQuery`: release a token (and every later token of the same query). Ending a query
    /// that was ended already is error 1, as continuing it is: the token names no live query.
    pub async fn end_token(&self, s: &Session<S>, token: &str, now: i64, ttl_secs: i64) -> Result<()> {
        let state = self.open_token(s, token, now, ttl_secs)?;
        self.refuse_on_standby()?;
        let mut conn = self.inner.store.acquire().await?;
        let ended =
            Self::unit(&mut conn, async |c| c.revoke_token(&state.id, state.issued + ttl_secs + 60).await).await?;
        if ended { Ok(()) } else { Err(Error::NotFound("query token was ended".into())) }
    }

    /// A fresh cursor for a new query.
    pub fn new_cursor(&self, s: &Session<S>, spec: &SelectSpec, now: i64) -> CursorState {
        let id: [u8; 16] = rand::random();
        CursorState {
            id: id.iter().map(|b| format!("{b:02x}")).collect(),
            user: s.principal.user.clone(),
            cwd: s.cwd.clone(),
            select: spec.select.clone(),
            condition: spec.condition.clone(),
            order_by: spec.order_by.clone(),
            after: Vec::new(),
            sql: None,
            served: 0,
            issued: now,
        }
    }

    /// A fresh cursor for a native SQL `SELECT` (SOAP `sqlQuery`).
    pub fn new_sql_cursor(&self, s: &Session<S>, statement: &str, now: i64) -> CursorState {
        let spec = SelectSpec { select: Vec::new(), condition: String::new(), order_by: None };
        CursorState { sql: Some(statement.to_string()), ..self.new_cursor(s, &spec, now) }
    }

    /// Encode a page's continuation into a new state (same query, later position).
    pub fn continue_state(&self, prev: &CursorState, after: &[Value], now: i64) -> CursorState {
        CursorState { after: after.iter().map(encode_value).collect(), issued: now, ..prev.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let t = parse_timestamp("2020-01-02 03:04:05.000006").unwrap();
        for v in [
            Value::Null,
            Value::Int(-5),
            Value::Float(0.1),
            Value::Text("a.b".into()),
            Value::Bool(true),
            Value::Timestamp(t),
        ] {
            assert_eq!(decode_value(&encode_value(&v)), Some(v));
        }
        assert_eq!(decode_value("x1"), None);
        assert_eq!(decode_value(""), None);
    }
}
