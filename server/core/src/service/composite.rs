//! Composite operations: several catalogue operations as ONE atomic unit — a transaction of its
//! own outside a user transaction, a savepoint inside one — so a frontend that needs "all of it
//! or none of it" asks for one operation and never opens, commits or aborts a transaction
//! itself. Each step is the ordinary operation (`createdir`, `addattr`, `insert`, `setattr`,
//! …), so permission checks, validation and error codes are exactly theirs. Values are passed
//! typed (as text of the attribute's type, or absent for NULL), never as query-language text.
//!
//! The bulk load behind the TCP `upload`/`put`/`commit` is here too ([`BulkLoad`]): the
//! frontend only holds it between commands.

use std::collections::HashMap;

use super::entries::NamedValues;
use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::query::ast::{Expr, Literal};
use crate::store::{Store, StoreConn};

/// An attribute to create: its name and type (`None`: the request gave none, which is an error
/// when its turn comes).
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttribute {
    pub name: String,
    pub type_name: Option<String>,
}

/// An entry to create with its own attributes: `(attribute, value)`, `None` leaving it NULL.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntryValues {
    pub name: String,
    pub values: Vec<(String, Option<String>)>,
}

/// Rows a bulk load outside a user transaction buffers before it writes them (inside its own
/// transaction), so a load of a million entries does not sit in memory.
const BULK_CHUNK: usize = 2000;

/// A bulk load in progress: many entries × the same attributes into one collection, atomic from
/// [`Catalogue::bulk_start`] to [`Catalogue::bulk_commit`]. Outside a user transaction it runs
/// in a transaction of its own, written in chunks as rows arrive; inside one it buffers the rows
/// and writes them at commit, as one savepoint. The first problem is kept and reported by
/// `bulk_commit`, which then stores nothing of the load.
pub struct BulkLoad {
    dir: String,
    attrs: Vec<String>,
    rows: Vec<NamedValues>,
    error: Option<Error>,
    /// The load opened the session's transaction itself.
    owns_tx: bool,
    max_entries: usize,
    /// The collection, once rows went in (its statistics are gathered after the commit).
    loaded: Option<i64>,
}

impl BulkLoad {
    /// Spoil the load with `e` (unless it failed already): `bulk_commit` will report it.
    pub fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }
}

impl<S: Store> Catalogue<S> {
    /// Opens a unit spanning several operations on `s`: a group (savepoint) inside the user's
    /// transaction, else a transaction pinned to the session for the unit; each operation in it
    /// runs its own unit as usual. Returns whether the unit owns the transaction.
    async fn unit_start(&self, s: &mut Session<S>) -> Result<bool> {
        self.refuse_on_standby()?;
        if s.in_transaction() {
            self.conn(s).await?.begin_group().await?;
            Ok(false)
        } else {
            self.begin(s).await?;
            Ok(true)
        }
    }

    /// Ends the unit of `unit_start`: keeps it on success, undoes all of it on failure (the
    /// first error is the one reported).
    async fn unit_finish<T>(&self, s: &mut Session<S>, owns_tx: bool, r: Result<T>) -> Result<T> {
        if !owns_tx {
            self.conn(s).await?.end_group(r.is_ok()).await?;
            return r;
        }
        match r {
            Ok(v) => self.commit(s).await.map(|_| v),
            Err(e) => {
                // The connection is dropped whatever the rollback says; the cause is `e`.
                let _ = self.abort(s).await;
                Err(e)
            }
        }
    }

    async fn add_each_attribute(&self, s: &mut Session<S>, dir: &str, attrs: &[NewAttribute]) -> Result<()> {
        for a in attrs {
            let t = a
                .type_name
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| Error::IllegalCommand(format!("attribute {}: a type is required", a.name)))?;
            self.addattr(s, dir, &a.name, t, false).await?;
        }
        Ok(())
    }

    /// A collection with its attributes, atomically.
    pub async fn create_collection(
        &self,
        s: &mut Session<S>,
        dir: &str,
        plain: bool,
        attrs: &[NewAttribute],
    ) -> Result<()> {
        let owns = self.unit_start(s).await?;
        let r = async {
            self.createdir(s, dir, plain).await?;
            self.add_each_attribute(s, dir, attrs).await
        }
        .await;
        self.unit_finish(s, owns, r).await
    }

    /// Several attributes added to a collection, atomically.
    pub async fn add_attributes(&self, s: &mut Session<S>, dir: &str, attrs: &[NewAttribute]) -> Result<()> {
        let owns = self.unit_start(s).await?;
        let r = self.add_each_attribute(s, dir, attrs).await;
        self.unit_finish(s, owns, r).await
    }

    /// Several attributes removed from a collection, atomically.
    pub async fn remove_attributes(&self, s: &mut Session<S>, dir: &str, names: &[String]) -> Result<()> {
        let owns = self.unit_start(s).await?;
        let r = async {
            for n in names {
                self.removeattr(s, dir, n).await?;
            }
            Ok(())
        }
        .await;
        self.unit_finish(s, owns, r).await
    }

    /// Entries created with their own attributes, atomically: names relative to `dir` (absolute
    /// names are taken as they are), absent values left NULL. Entries with the same collection
    /// and the same attributes go to the store as one bulk insert.
    pub async fn create_entries(&self, s: &mut Session<S>, dir: &str, entries: Vec<NewEntryValues>) -> Result<u64> {
        let base = path::absolute(&s.cwd, dir)?;
        type Group = (String, Vec<String>, Vec<NamedValues>);
        let mut groups: Vec<Group> = Vec::new();
        let mut index: HashMap<(String, Vec<String>), usize> = HashMap::new();
        for e in entries {
            if e.name.trim().is_empty() {
                return Err(Error::IllegalCommand("entry name must not be empty".into()));
            }
            let abs = path::absolute(&base, &e.name)?;
            let (parent, leaf) = path::split(&abs).ok_or_else(|| Error::Exists("/".into()))?;
            // Also when one of the two is a NULL.
            names_once(&e.values)?;
            let (names, values): (Vec<String>, Vec<Option<String>>) = e.values.into_iter().unzip();
            let key = (parent.to_string(), names);
            let i = match index.get(&key) {
                Some(i) => *i,
                None => {
                    groups.push((key.0.clone(), key.1.clone(), Vec::new()));
                    index.insert(key, groups.len() - 1);
                    groups.len() - 1
                }
            };
            groups[i].2.push((leaf.to_string(), values));
        }
        drop(index);
        if groups.is_empty() {
            // Still check the collection exists and is writable, as an empty bulk insert does.
            return self.insert(s, &base, &[], Vec::new()).await;
        }
        let owns = self.unit_start(s).await?;
        let r = async {
            let mut total = 0u64;
            for (dir, names, rows) in groups {
                total += self.insert(s, &dir, &names, rows).await?;
            }
            Ok(total)
        }
        .await;
        self.unit_finish(s, owns, r).await
    }

    /// Sets attributes of the entries `pattern` designates — and, with a condition, only of
    /// those that meet it — to typed values (`None`: NULL), atomically. Without a condition it
    /// is `setattr` and `clearattr`; with one, `updateattr` with the values as literals.
    pub async fn set_attributes(
        &self,
        s: &mut Session<S>,
        pattern: &str,
        condition: Option<&str>,
        values: Vec<(String, Option<String>)>,
    ) -> Result<u64> {
        // Also when one of the two is a NULL, which the split below turns into a set and a clear.
        names_once(&values)?;
        if let Some(cond) = condition {
            let cond = crate::query::parse_condition(cond).map_err(|e| Error::IllegalQuery(e.to_string()))?;
            let exprs =
                values.into_iter().map(|(name, v)| (name, Expr::Lit(v.map_or(Literal::Null, Literal::Str)))).collect();
            return self.update_where(s, pattern, exprs, cond).await;
        }
        let mut sets = Vec::new();
        let mut clears = Vec::new();
        for (name, v) in values {
            match v {
                Some(v) => sets.push((name, v)),
                None => clears.push(name),
            }
        }
        if clears.is_empty() {
            return self.setattr(s, pattern, &sets).await;
        }
        if sets.is_empty() {
            return self.clearattr(s, pattern, &clears).await;
        }
        let owns = self.unit_start(s).await?;
        let r = async {
            let n = self.setattr(s, pattern, &sets).await?;
            self.clearattr(s, pattern, &clears).await?;
            Ok(n)
        }
        .await;
        self.unit_finish(s, owns, r).await
    }

    /// Starts a bulk load of `attrs` into `dir`, of at most `max_entries` entries. A failure to
    /// start is kept in the load (reported by `bulk_commit`).
    pub async fn bulk_start(
        &self,
        s: &mut Session<S>,
        dir: String,
        attrs: Vec<String>,
        max_entries: usize,
    ) -> BulkLoad {
        let owns_tx = !s.in_transaction();
        let mut load = BulkLoad { dir, attrs, rows: Vec::new(), error: None, owns_tx, max_entries, loaded: None };
        if owns_tx && let Err(e) = self.begin(s).await {
            load.error = Some(e);
        }
        load
    }

    /// One entry of a bulk load. Problems are kept in the load, not returned: the protocol
    /// answers `put` with nothing and reports at `commit`.
    pub async fn bulk_put(&self, s: &mut Session<S>, load: &mut BulkLoad, name: String, values: Vec<Option<String>>) {
        if load.error.is_some() {
            return;
        }
        if values.len() != load.attrs.len() {
            load.error = Some(Error::IllegalCommand(format!(
                "put {name}: {} values for {} attributes",
                values.len(),
                load.attrs.len()
            )));
        } else if load.rows.len() >= load.max_entries {
            load.error = Some(Error::LimitExceeded(format!("more than {} entries in one upload", load.max_entries)));
        } else {
            load.rows.push((name, values));
            if load.owns_tx && load.rows.len() >= BULK_CHUNK {
                let rows = std::mem::take(&mut load.rows);
                match self.insert_into(s, &load.dir, &load.attrs, rows).await {
                    Ok((_, id)) => load.loaded = Some(id),
                    Err(e) => load.error = Some(e),
                }
            }
        }
    }

    /// Ends a bulk load: the remaining rows go in, then the load's own transaction commits. Any
    /// failure, earlier or now, undoes the whole load.
    pub async fn bulk_commit(&self, s: &mut Session<S>, load: BulkLoad) -> Result<()> {
        let mut loaded = load.loaded;
        let result = match load.error {
            Some(e) => Err(e),
            None if load.rows.is_empty() => Ok(()),
            None => self.insert_into(s, &load.dir, &load.attrs, load.rows).await.map(|(_, id)| loaded = Some(id)),
        };
        match (result, load.owns_tx) {
            (Ok(()), true) => {
                self.commit(s).await?;
                self.settle_statistics(loaded.as_slice()).await;
                Ok(())
            }
            (Ok(()), false) => Ok(()),
            (Err(e), true) => {
                if s.in_transaction() {
                    self.abort(s).await?;
                }
                Err(e)
            }
            (Err(e), false) => Err(e),
        }
    }

    /// Drops a bulk load: nothing of it is stored.
    pub async fn bulk_abort(&self, s: &mut Session<S>, load: BulkLoad) -> Result<()> {
        if load.owns_tx {
            self.abort(s).await?;
        }
        Ok(())
    }
}

/// An attribute named twice in one request is refused as `addentry` and `setattr` refuse it
/// (names are case-insensitive), whatever the two values are.
fn names_once(values: &[(String, Option<String>)]) -> Result<()> {
    for (i, (name, _)) in values.iter().enumerate() {
        if values[..i].iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Err(Error::IllegalCommand(format!("attribute {name} given twice")));
        }
    }
    Ok(())
}
