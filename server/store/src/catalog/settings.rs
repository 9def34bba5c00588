//! Server settings kept in the database and revoked session tokens. Must not interpret a
//! setting's value; SQL text comes from `sql::settings`.

use super::*;
use crate::sql::settings as settings_sql;

impl SqlConn {
    pub(super) async fn revoke_token(&mut self, id: &str, expires: i64) -> Result<bool> {
        self.writing()?;
        self.exec_compiled(&settings_sql::purge_revoked_tokens(self.dialect, Utc::now().timestamp())).await?;
        Ok(self.exec_compiled(&settings_sql::insert_revoked_token(self.dialect, id, expires)).await? > 0)
    }

    pub(super) async fn is_token_revoked(&mut self, id: &str) -> Result<bool> {
        Ok(!self.rows_compiled(&settings_sql::select_revoked_token(self.dialect, id)).await?.is_empty())
    }

    pub(super) async fn setting(&mut self, key: &str) -> Result<Option<String>> {
        let rows = self.rows_compiled(&settings_sql::select_setting(self.dialect, key)).await?;
        Ok(rows.first().map(|r| text_of(&r[0])))
    }

    pub(super) async fn init_setting(&mut self, key: &str, value: &str) -> Result<String> {
        self.writing()?;
        self.exec_compiled(&settings_sql::insert_setting(self.dialect, key, value)).await?;
        self.setting(key).await?.ok_or_else(|| Error::Internal(format!("setting {key} vanished")))
    }
}
