//! Composite indexes over several attributes of a collection (ardacat extension of AMGA's
//! `index_create`/`index_remove`, plus `index_list`): validation, permission checks and name
//! resolution. The storage side keeps the definitions and builds the SQL index.

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{READ, WRITE};
use crate::store::{AttrDef, IndexColumn, IndexDef, Store, StoreConn};

/// Most columns one composite index may have (PostgreSQL allows 32).
pub const MAX_INDEX_COLUMNS: usize = 16;

/// One composite index as the frontends show it: its name and its columns in index order
/// (attribute names as declared, `FILE` for the entry name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    pub name: String,
    pub columns: Vec<String>,
}

impl<S: Store> Catalogue<S> {
    /// `index_create <dir> <name> <attr>…`: an index `name` over those attributes in that order
    /// (`FILE` is the entry name). Needs write on the collection, like `addattr`. Built at once if
    /// the collection has entries, else together with its entry table.
    pub async fn index_create(&self, s: &mut Session<S>, dir: &str, name: &str, attrs: &[String]) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        if !path::valid_attr_name(name) {
            return Err(Error::IllegalCommand(format!("invalid index name '{name}'")));
        }
        if attrs.is_empty() || attrs.len() > MAX_INDEX_COLUMNS {
            return Err(Error::IllegalCommand(format!("an index has 1 to {MAX_INDEX_COLUMNS} attributes")));
        }
        for (i, a) in attrs.iter().enumerate() {
            if attrs[..i].iter().any(|b| b.eq_ignore_ascii_case(a)) {
                return Err(Error::IllegalCommand(format!("attribute '{a}' appears twice in the index")));
            }
            if path::is_pseudo_attr(a) && !a.eq_ignore_ascii_case("FILE") {
                return Err(Error::IllegalCommand(format!("'{a}' cannot be indexed (only FILE and attributes)")));
            }
        }
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            let defs = conn.attributes(c.id).await?;
            let columns = attrs.iter().map(|a| column_of(&defs, &abs, a)).collect::<Result<Vec<_>>>()?;
            if conn.indexes(c.id).await?.iter().any(|ix| ix.name.eq_ignore_ascii_case(name)) {
                return Err(Error::Exists(format!("{abs}: index {name}")));
            }
            conn.add_index(c.id, name, &columns).await.map(|_| ())
        })
        .await
    }

    /// `index_remove <dir> <name>`: drops the index (error 1 if there is none of that name).
    pub async fn index_remove(&self, s: &mut Session<S>, dir: &str, name: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            let ix = find_index(conn.indexes(c.id).await?, &abs, name)?;
            conn.remove_index(c.id, &ix).await
        })
        .await
    }

    /// `index_list <dir>`: the composite indexes of a collection, by name. Needs read.
    pub async fn index_list(&self, s: &mut Session<S>, dir: &str) -> Result<Vec<IndexInfo>> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, READ).await?;
            let defs = conn.attributes(c.id).await?;
            let indexes = conn.indexes(c.id).await?;
            Ok(indexes
                .into_iter()
                .map(|ix| IndexInfo {
                    name: ix.name,
                    columns: ix
                        .columns
                        .iter()
                        .map(|col| match col {
                            IndexColumn::File => "FILE".to_string(),
                            IndexColumn::Attr(id) => {
                                defs.iter().find(|a| a.id == *id).map_or_else(|| format!("#{id}"), |a| a.name.clone())
                            }
                        })
                        .collect(),
                })
                .collect())
        })
        .await
    }
}

fn column_of(defs: &[AttrDef], dir: &str, name: &str) -> Result<IndexColumn> {
    if name.eq_ignore_ascii_case("FILE") {
        return Ok(IndexColumn::File);
    }
    super::namespace::find_attr(defs, dir, name).map(|a| IndexColumn::Attr(a.id))
}

fn find_index(indexes: Vec<IndexDef>, dir: &str, name: &str) -> Result<IndexDef> {
    indexes
        .into_iter()
        .find(|ix| ix.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| Error::NotFound(format!("{dir}: index {name}")))
}
