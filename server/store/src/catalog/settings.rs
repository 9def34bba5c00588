//! Server settings kept in the database and revoked session tokens. Must not interpret a
//! setting's value; SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn revoke_token(&mut self, id: &str, expires: i64) -> Result<bool> {
        self.writing()?;
        let purge = format!("DELETE FROM revoked_tokens WHERE expires < {}", self.p(1, ValueType::Int));
        self.exec(&purge, &[Value::Int(Utc::now().timestamp())]).await?;
        let sql = format!(
            "INSERT INTO revoked_tokens (id, expires) VALUES ({}, {}) ON CONFLICT (id) DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Int)
        );
        Ok(self.exec(&sql, &[Value::Text(id.into()), Value::Int(expires)]).await? > 0)
    }

    pub(super) async fn is_token_revoked(&mut self, id: &str) -> Result<bool> {
        let sql = format!("SELECT id FROM revoked_tokens WHERE id = {}", self.p(1, ValueType::Text));
        Ok(!self.rows(&sql, &[Value::Text(id.into())], &[ValueType::Text]).await?.is_empty())
    }

    pub(super) async fn setting(&mut self, key: &str) -> Result<Option<String>> {
        let sql = format!("SELECT value FROM settings WHERE key = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(key.into())], &[ValueType::Text]).await?;
        Ok(rows.first().map(|r| text_of(&r[0])))
    }

    pub(super) async fn init_setting(&mut self, key: &str, value: &str) -> Result<String> {
        self.writing()?;
        let sql = format!(
            "INSERT INTO settings (key, value) VALUES ({}, {}) ON CONFLICT (key) DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(key.into()), Value::Text(value.into())]).await?;
        self.setting(key).await?.ok_or_else(|| Error::Internal(format!("setting {key} vanished")))
    }
}
