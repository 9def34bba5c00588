//! Users, groups, group members and certificate subjects. Stores them only; must not hash
//! passwords or decide logins (the core's auth does); SQL text comes from `sql`.

use super::*;

impl SqlConn {
    pub(super) async fn user(&mut self, name: &str) -> Result<Option<UserRecord>> {
        let sql = format!("SELECT name, password_hash FROM users WHERE name = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text, ValueType::Text]).await?;
        Ok(rows.into_iter().next().map(|r| UserRecord { name: text_of(&r[0]), password_hash: r[1].to_wire() }))
    }

    pub(super) async fn user_by_subject(&mut self, subject: &str) -> Result<Option<String>> {
        let sql = format!("SELECT user_name FROM user_subjects WHERE subject = {}", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(subject.into())], &[ValueType::Text]).await?;
        Ok(rows.into_iter().next().map(|r| text_of(&r[0])))
    }

    pub(super) async fn create_user(&mut self, name: &str, password_hash: Option<&str>) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "INSERT INTO users (name, password_hash, created) VALUES ({}, {}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text),
            self.p(3, ValueType::Timestamp)
        );
        let hash = password_hash.map(|h| Value::Text(h.into())).unwrap_or(Value::Null);
        self.exec(&sql, &[Value::Text(name.into()), hash, now()]).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("user {name}")),
            e => e,
        })
    }

    pub(super) async fn remove_user(&mut self, name: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let p = self.p(1, ValueType::Text);
        self.exec(&format!("DELETE FROM group_members WHERE user_name = {p}"), &[Value::Text(name.into())]).await?;
        self.exec(&format!("DELETE FROM acls WHERE principal = {p} AND NOT is_group"), &[Value::Text(name.into())])
            .await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, false)).await?;
        Ok(self.exec(&format!("DELETE FROM users WHERE name = {p}"), &[Value::Text(name.into())]).await? > 0)
    }

    pub(super) async fn set_password(&mut self, name: &str, password_hash: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "UPDATE users SET password_hash = {} WHERE name = {}",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Text(password_hash.into()), Value::Text(name.into())]).await? > 0)
    }

    pub(super) async fn add_subject(&mut self, name: &str, subject: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "INSERT INTO user_subjects (user_name, subject) VALUES ({}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(name.into()), Value::Text(subject.into())]).await.map(|_| ()).map_err(|e| match e
        {
            Error::Exists(_) => Error::Exists(format!("subject {subject}")),
            e => e,
        })
    }

    pub(super) async fn remove_subject(&mut self, name: &str, subject: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        Ok(self.exec_compiled(&statements::delete_user_subject(self.dialect, name, subject)).await? > 0)
    }

    pub(super) async fn subjects(&mut self, name: &str) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT subject FROM user_subjects WHERE user_name = {} ORDER BY subject",
            self.p(1, ValueType::Text)
        );
        let rows = self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text]).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn groups_of(&mut self, user: &str) -> Result<Vec<String>> {
        let sql =
            format!("SELECT grp FROM group_members WHERE user_name = {} ORDER BY grp", self.p(1, ValueType::Text));
        let rows = self.rows(&sql, &[Value::Text(user.into())], &[ValueType::Text]).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn create_group(&mut self, name: &str, owner: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "INSERT INTO user_groups (name, owner) VALUES ({}, {})",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(name.into()), Value::Text(owner.into())]).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("group {name}")),
            e => e,
        })
    }

    pub(super) async fn remove_group(&mut self, name: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let p = self.p(1, ValueType::Text);
        self.exec(&format!("DELETE FROM group_members WHERE grp = {p}"), &[Value::Text(name.into())]).await?;
        self.exec(&format!("DELETE FROM acls WHERE principal = {p} AND is_group"), &[Value::Text(name.into())]).await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, true)).await?;
        Ok(self.exec(&format!("DELETE FROM user_groups WHERE name = {p}"), &[Value::Text(name.into())]).await? > 0)
    }

    pub(super) async fn add_member(&mut self, group: &str, user: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "INSERT INTO group_members (grp, user_name) VALUES ({}, {}) ON CONFLICT DO NOTHING",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        self.exec(&sql, &[Value::Text(group.into()), Value::Text(user.into())]).await.map(|_| ())
    }

    pub(super) async fn remove_member(&mut self, group: &str, user: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let sql = format!(
            "DELETE FROM group_members WHERE grp = {} AND user_name = {}",
            self.p(1, ValueType::Text),
            self.p(2, ValueType::Text)
        );
        Ok(self.exec(&sql, &[Value::Text(group.into()), Value::Text(user.into())]).await? > 0)
    }

    pub(super) async fn group_exists(&mut self, name: &str) -> Result<bool> {
        let sql = format!("SELECT name FROM user_groups WHERE name = {}", self.p(1, ValueType::Text));
        Ok(!self.rows(&sql, &[Value::Text(name.into())], &[ValueType::Text]).await?.is_empty())
    }

    pub(super) async fn user_names(&mut self) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_user_names()).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn group_names(&mut self) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_group_names()).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn group_members(&mut self, group: &str) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&statements::select_group_members(self.dialect, group)).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }
}
