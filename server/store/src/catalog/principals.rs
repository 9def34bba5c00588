//! Users, groups, group members and certificate subjects. Stores them only; must not hash
//! passwords or decide logins (the core's auth does); SQL text comes from `sql::principals`.

use super::*;

impl SqlConn {
    pub(super) async fn user(&mut self, name: &str) -> Result<Option<UserRecord>> {
        let rows = self.rows_compiled(&principal_sql::select_user(self.dialect, name)).await?;
        Ok(rows.into_iter().next().map(|r| UserRecord {
            name: text_of(&r[0]),
            password_hash: r[1].to_wire(),
            may_sudo: matches!(r[2], Value::Bool(true)),
        }))
    }

    pub(super) async fn user_by_subject(&mut self, subject: &str) -> Result<Option<String>> {
        let rows = self.rows_compiled(&principal_sql::select_user_by_subject(self.dialect, subject)).await?;
        Ok(rows.into_iter().next().map(|r| text_of(&r[0])))
    }

    pub(super) async fn create_user(&mut self, name: &str, password_hash: Option<&str>) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let insert = principal_sql::insert_user(self.dialect, name, password_hash, now());
        self.exec_compiled(&insert).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("user {name}")),
            e => e,
        })
    }

    pub(super) async fn remove_user(&mut self, name: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let [members, acls, user] = principal_sql::delete_user(self.dialect, name);
        self.exec_compiled(&members).await?;
        self.exec_compiled(&acls).await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, false)).await?;
        Ok(self.exec_compiled(&user).await? > 0)
    }

    pub(super) async fn set_password(&mut self, name: &str, password_hash: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        Ok(self.exec_compiled(&principal_sql::update_password(self.dialect, name, password_hash)).await? > 0)
    }

    pub(super) async fn set_may_sudo(&mut self, name: &str, may_sudo: bool) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        Ok(self.exec_compiled(&principal_sql::update_may_sudo(self.dialect, name, may_sudo)).await? > 0)
    }

    pub(super) async fn add_subject(&mut self, name: &str, subject: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let insert = principal_sql::insert_subject(self.dialect, name, subject);
        self.exec_compiled(&insert).await.map(|_| ()).map_err(|e| match e {
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
        let rows = self.rows_compiled(&principal_sql::select_subjects(self.dialect, name)).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn groups_of(&mut self, user: &str) -> Result<Vec<String>> {
        let rows = self.rows_compiled(&principal_sql::select_groups_of(self.dialect, user)).await?;
        Ok(rows.iter().map(|r| text_of(&r[0])).collect())
    }

    pub(super) async fn create_group(&mut self, name: &str, owner: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        let insert = principal_sql::insert_group(self.dialect, name, owner);
        self.exec_compiled(&insert).await.map(|_| ()).map_err(|e| match e {
            Error::Exists(_) => Error::Exists(format!("group {name}")),
            e => e,
        })
    }

    pub(super) async fn remove_group(&mut self, name: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        let [members, acls, group] = principal_sql::delete_group(self.dialect, name);
        self.exec_compiled(&members).await?;
        self.exec_compiled(&acls).await?;
        self.exec_compiled(&statements::delete_principal_entry_acls(self.dialect, name, true)).await?;
        Ok(self.exec_compiled(&group).await? > 0)
    }

    pub(super) async fn add_member(&mut self, group: &str, user: &str) -> Result<()> {
        self.announce(true);
        self.writing()?;
        self.exec_compiled(&principal_sql::insert_member(self.dialect, group, user)).await.map(|_| ())
    }

    pub(super) async fn remove_member(&mut self, group: &str, user: &str) -> Result<bool> {
        self.announce(true);
        self.writing()?;
        Ok(self.exec_compiled(&principal_sql::delete_member(self.dialect, group, user)).await? > 0)
    }

    pub(super) async fn group_exists(&mut self, name: &str) -> Result<bool> {
        Ok(!self.rows_compiled(&principal_sql::select_group(self.dialect, name)).await?.is_empty())
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
