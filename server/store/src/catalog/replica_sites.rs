//! The replica catalogue: sites, replicated files and their replicas. Must not decide who may
//! change them (the core does); SQL text comes from `sql::replicas`.

use super::*;

impl SqlConn {
    pub(super) async fn sites(&mut self) -> Result<Vec<SiteRecord>> {
        Ok(self.rows_compiled(&replicas::select_sites()).await?.iter().map(|r| site_from(r)).collect())
    }

    pub(super) async fn site_by_name(&mut self, name: &str) -> Result<Option<SiteRecord>> {
        let rows = self.rows_compiled(&replicas::select_site_by_name(self.dialect, name)).await?;
        Ok(rows.first().map(|r| site_from(r)))
    }

    pub(super) async fn site_by_id(&mut self, id: i64) -> Result<Option<SiteRecord>> {
        let rows = self.rows_compiled(&replicas::select_site_by_id(self.dialect, id)).await?;
        Ok(rows.first().map(|r| site_from(r)))
    }

    pub(super) async fn add_site(&mut self, name: &str, server: &str) -> Result<i64> {
        self.writing()?;
        let rows =
            self.rows_compiled(&replicas::insert_site(self.dialect, name, server)).await.map_err(|e| match e {
                Error::Exists(_) => Error::Exists(format!("site {name}")),
                e => e,
            })?;
        rows.first().and_then(|r| r.first()).map(int_of).ok_or_else(|| Error::Internal("no site id returned".into()))
    }

    pub(super) async fn remove_site(&mut self, id: i64) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&replicas::delete_site(self.dialect, id)).await? > 0)
    }

    pub(super) async fn site_in_use(&mut self, id: i64) -> Result<bool> {
        Ok(!self.rows_compiled(&replicas::select_site_replica(self.dialect, id)).await?.is_empty())
    }

    pub(super) async fn replica_owner(&mut self, guid: &str, lock: bool) -> Result<Option<String>> {
        let rows = self.rows_compiled(&replicas::select_replica_owner(self.dialect, guid, lock)).await?;
        Ok(rows.first().map(|r| text_of(&r[0])))
    }

    pub(super) async fn add_replica_file(&mut self, guid: &str, owner: &str) -> Result<()> {
        self.writing()?;
        self.exec_compiled(&replicas::insert_replica_file(self.dialect, guid, owner)).await.map(|_| ())
    }

    pub(super) async fn remove_replica_file(&mut self, guid: &str) -> Result<()> {
        self.writing()?;
        for c in replicas::delete_replica_file(self.dialect, guid) {
            self.exec_compiled(&c).await?;
        }
        Ok(())
    }

    pub(super) async fn replica_sites(&mut self, guid: &str) -> Result<Vec<i64>> {
        let rows = self.rows_compiled(&replicas::select_replica_sites(self.dialect, guid)).await?;
        Ok(rows.iter().map(|r| int_of(&r[0])).collect())
    }

    pub(super) async fn add_replica(&mut self, guid: &str, site_id: i64) -> Result<()> {
        self.writing()?;
        self.exec_compiled(&replicas::insert_replica(self.dialect, guid, site_id)).await.map(|_| ())
    }

    pub(super) async fn remove_replica(&mut self, guid: &str, site_id: i64) -> Result<bool> {
        self.writing()?;
        Ok(self.exec_compiled(&replicas::delete_replica(self.dialect, guid, site_id)).await? > 0)
    }
}
