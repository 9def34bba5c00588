//! The offline copy of a whole catalogue from one store to another (`ardacat-server copy`):
//! a root dump of `/` streamed straight into a restore on the target — the same records, the
//! same rules and the same single transaction as `dump` and `restore` — with the settings (the
//! token signing key among them) copied row for row inside that transaction. A target that holds
//! anything (a collection, an attribute or entry of `/`, a user, a group, a site, a replica) is refused
//! before anything is written. It must not know URLs, files or SQL.

use tokio::sync::mpsc;

use super::DumpSummary;
use crate::error::{Error, Result};
use crate::perm::Principal;
use crate::service::{Catalogue, RowSink, ServiceConfig, Session};
use crate::store::{Store, StoreConn};

/// Lines in flight between the source's dump and the target's restore.
const LINES: usize = 1024;

struct Lines(mpsc::Sender<String>);

impl RowSink for Lines {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        let line = row.into_iter().next().flatten().unwrap_or_default();
        self.0.send(line).await.map_err(|_| Error::Cancelled)
    }
}

/// What is in the target already, if anything (the reason to refuse it).
async fn not_empty<C: StoreConn>(c: &mut C) -> Result<Option<String>> {
    let root = c.collection("/").await?.ok_or_else(|| Error::Internal("the target has no /".into()))?;
    if !c.children(root.id).await?.is_empty() {
        return Ok(Some("it has collections".into()));
    }
    if !c.attributes(root.id).await?.is_empty() || c.has_entries(root.id).await? {
        return Ok(Some("/ has attributes or entries".into()));
    }
    if !c.user_names().await?.is_empty() {
        return Ok(Some("it has users".into()));
    }
    if !c.group_names().await?.is_empty() {
        return Ok(Some("it has groups".into()));
    }
    if !c.sites().await?.is_empty() || !c.all_replica_files().await?.is_empty() {
        return Ok(Some("it has sites or replicas".into()));
    }
    Ok(None)
}

/// Copies everything of `from` into the empty `to` (both migrated), all or nothing: on any
/// failure the target is as a fresh start leaves it (its own new token key).
pub async fn copy_catalogue<S: Store, T: Store>(from: S, to: T, config: ServiceConfig) -> Result<DumpSummary> {
    let mut target = to.acquire().await?;
    if let Some(why) = not_empty(&mut target).await? {
        return Err(Error::IllegalCommand(format!("the target database is not empty ({why})")));
    }
    drop(target);
    let src = Catalogue::new(from, config.clone()).await?;
    let dst = Catalogue::new(to, config).await?;
    let root = || Principal { user: "root".into(), groups: Vec::new(), may_sudo: false };
    let (mut s_src, mut s_dst) = (Session::<S>::new(root()), Session::<T>::new(root()));
    let (tx, mut rx) = mpsc::channel::<String>(LINES);
    let producer = async {
        let mut sink = Lines(tx);
        src.dump(&mut s_src, "/", &mut sink).await
    };
    let consumer = async {
        let mut restore = dst.restore_start(&mut s_dst, None).await;
        // The settings in the restore's transaction: replaced all together with the rest, or not.
        let settings = async { src.store().acquire().await?.settings().await };
        let put = match settings.await {
            Ok(all) => {
                dst.write(&mut s_dst, async |c| {
                    for (k, v) in &all {
                        c.put_setting(k, v).await?;
                    }
                    Ok(())
                })
                .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = put {
            restore.fail(e);
        }
        while let Some(line) = rx.recv().await {
            dst.restore_put(&mut s_dst, &mut restore, &line).await;
        }
        restore
    };
    let (dumped, restore) = tokio::join!(producer, consumer);
    match dumped {
        Ok(_) => dst.restore_finish(&mut s_dst, restore).await,
        Err(e) => {
            dst.restore_abort(&mut s_dst, restore).await?;
            Err(e)
        }
    }
}
