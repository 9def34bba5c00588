//! Dump of a subtree in the versioned line format of [`format`](mod@format) (docs/dump-format.md), and its
//! restore ([`restore`]). The rules are here, once, for every way in (the TCP `dump` command,
//! the CLI through it, the offline `copy`): what a caller may read (collections it can read,
//! and in them the entries it can read; users, password hashes, subjects, groups and sites only
//! and replicas only for root dumping `/`), and a stable order everywhere (collections depth first by name,
//! entries by name, every list by name in byte order), so two dumps of the same catalogue are
//! byte-identical. It must not know sockets, files or SQL.

pub mod copy;
pub mod format;
pub mod restore;

use tokio::sync::mpsc;

use super::{Catalogue, RowSink, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{AclEntry, Mode, Principal, READ};
use crate::query::ast::{Aggregate, Expr, Func, OrderItem};
use crate::query::{Column, Term};
use crate::store::{AttrDef, CollectionInfo, ConstraintRule, EntryAccess, IndexColumn, SelectPlan, Store, StoreConn};
use crate::types::{Value, ValueType};

use format::{Tally, header, record};

/// What a dump wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DumpSummary {
    /// Record lines between header and trailer.
    pub records: u64,
    pub entries: u64,
}

/// Hands each line to the sink as a row of one value and keeps the tally.
struct Writer<'k, K> {
    sink: &'k mut K,
    tally: Tally,
}

impl<K: RowSink> Writer<'_, K> {
    async fn line(&mut self, line: String) -> Result<()> {
        self.tally.add(&line);
        self.sink.row(vec![Some(line)]).await
    }

    async fn rec(&mut self, fields: &[&str]) -> Result<()> {
        self.line(record(fields.iter().map(|f| Some(*f)))).await
    }
}

fn mode_text(perms: u16) -> String {
    format!("{:o}", perms & 0o7777)
}

fn acl_kind(a: &AclEntry) -> &'static str {
    if a.is_group { "g" } else { "u" }
}

fn attr_name(attrs: &[AttrDef], id: i64) -> String {
    attrs.iter().find(|a| a.id == id).map_or_else(|| format!("#{id}"), |a| a.name.clone())
}

fn col(column: Column, vtype: ValueType) -> Expr<Term> {
    Expr::Ref(Term::Column { table: 0, column, vtype })
}

impl<S: Store> Catalogue<S> {
    /// `dump [<dir>]`: the subtree at `dir` (default `/`) as dump lines, header first and
    /// trailer last, each line one row of one value. Needs read on `dir`; sub-collections the
    /// caller cannot read are left out with everything below them, and so are entries it cannot
    /// read. One state of the catalogue from header to trailer (a read snapshot; inside a
    /// `transaction` that transaction's state, see `Catalogue::read_snapshot`; docs/dump-format.md).
    pub async fn dump<K: RowSink>(&self, s: &mut Session<S>, dir: &str, sink: &mut K) -> Result<DumpSummary> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read_snapshot(s, async |conn| {
            let root = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &root, READ).await?;
            let mut w = Writer { sink, tally: Tally::default() };
            w.line(header(&abs)).await?;
            if who.is_root() && abs == "/" {
                dump_principals(conn, &mut w).await?;
            }
            let done = Self::readable_subtree(conn, &who, root).await?;
            for c in &done {
                self.dump_collection(conn, &who, c, &mut w).await?;
            }
            // Constraints last: a reference needs the entries it refers to and the unique
            // constraint it relies on, so references come after every other kind.
            for references in [false, true] {
                for c in &done {
                    dump_constraints(conn, c, references, &mut w).await?;
                }
            }
            let trailer = w.tally.trailer();
            let summary = DumpSummary { records: w.tally.records, entries: w.tally.entries };
            w.sink.row(vec![Some(trailer)]).await?;
            Ok(summary)
        })
        .await
    }

    /// `dump_count [<dir>]`: how many entries a `dump` of `dir` by this caller would hold now,
    /// counted with the dump's own rules (the same collections, the same entry permissions), for
    /// a progress display's ETA. A count, not a promise: writes in between change it.
    pub async fn dump_count(&self, s: &mut Session<S>, dir: &str) -> Result<u64> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let root = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &root, READ).await?;
            let mut total = 0u64;
            for c in Self::readable_subtree(conn, &who, root).await? {
                let count = Expr::Call(Func::Aggregate(Aggregate::Count, false), Vec::new());
                let access = EntryAccess::new(&who, vec![READ]);
                let plan = SelectPlan::of_collection(c.id, vec![count], vec![ValueType::Int], access);
                match conn.select_few(&plan, None).await?.first().and_then(|r| r.first()) {
                    Some(Value::Int(n)) => total += u64::try_from(*n).unwrap_or(0),
                    // No entry table yet (it is made with the first entry): nothing to count.
                    None => {}
                    other => return Err(Error::Internal(format!("an entry count answered {other:?}"))),
                }
            }
            Ok(total)
        })
        .await
    }

    /// `root` and the collections below it the caller may read, in dump order (depth first,
    /// children by path in byte order); an unreadable collection hides everything below it.
    async fn readable_subtree(
        conn: &mut S::Conn,
        who: &Principal,
        root: CollectionInfo,
    ) -> Result<Vec<CollectionInfo>> {
        let mut stack = vec![root];
        let mut done = Vec::new();
        while let Some(c) = stack.pop() {
            let mut kids = Vec::new();
            for k in conn.children(c.id).await? {
                match Self::check(conn, who, &k, READ).await {
                    Ok(()) => kids.push(k),
                    Err(Error::PermissionDenied(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            kids.sort_by(|a, b| b.path.as_bytes().cmp(a.path.as_bytes()));
            stack.extend(kids);
            done.push(c);
        }
        Ok(done)
    }

    /// One collection: `C`, then its `A`, `X`, `L`, `S`, `E` and `EL` records.
    async fn dump_collection<K: RowSink>(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        c: &CollectionInfo,
        w: &mut Writer<'_, K>,
    ) -> Result<()> {
        let p = c.path.as_str();
        w.rec(&["C", p, &c.owner, &c.group, &mode_text(c.perms)]).await?;
        let attrs = conn.attributes(c.id).await?;
        for a in attrs.iter() {
            w.rec(&["A", p, &a.name, &a.attr_type.to_string(), if a.indexed { "1" } else { "0" }]).await?;
        }
        let mut indexes = conn.indexes(c.id).await?;
        indexes.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        for x in &indexes {
            let mut f = vec!["X".to_string(), p.to_string(), x.name.clone()];
            f.extend(x.columns.iter().map(|k| match k {
                IndexColumn::File => "FILE".to_string(),
                IndexColumn::Attr(id) => attr_name(&attrs, *id),
            }));
            w.line(record(f.iter().map(|s| Some(s.as_str())))).await?;
        }
        let mut acl = conn.acl(c.id).await?;
        acl.sort_by(|a, b| (a.is_group, a.principal.as_bytes()).cmp(&(b.is_group, b.principal.as_bytes())));
        for a in &acl {
            w.rec(&["L", p, acl_kind(a), &a.principal, &Mode::rights_string(a.rights)]).await?;
        }
        for q in conn.sequences(c.id).await? {
            w.rec(&["S", p, &q.name, &q.increment.to_string(), &q.next.to_string()]).await?;
        }
        self.dump_entries(conn, who, c, &attrs, w).await?;
        for (entry, a) in conn.entry_acls(c.id).await? {
            if !who.is_root() {
                let access = EntryAccess::new(who, vec![READ]);
                if !super::namespace::entry_visible(conn, c.id, &entry, access).await? {
                    continue;
                }
            }
            w.rec(&["EL", p, &entry, acl_kind(&a), &a.principal, &Mode::rights_string(a.rights)]).await?;
        }
        Ok(())
    }

    /// The `E` records of a collection, by name: the entries the caller may read.
    async fn dump_entries<K: RowSink>(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        c: &CollectionInfo,
        attrs: &[AttrDef],
        w: &mut Writer<'_, K>,
    ) -> Result<()> {
        let mut columns = vec![
            col(Column::File, ValueType::Text),
            col(Column::Owner, ValueType::Text),
            col(Column::Group, ValueType::Text),
            col(Column::Perms, ValueType::Int),
        ];
        let mut column_types = vec![ValueType::Text, ValueType::Text, ValueType::Text, ValueType::Int];
        for a in attrs {
            columns.push(col(Column::Attr(a.id), a.attr_type.value_type()));
            column_types.push(a.attr_type.value_type());
        }
        let width = columns.len();
        let mut plan = SelectPlan::of_collection(c.id, columns, column_types, EntryAccess::new(who, vec![READ]));
        plan.order_by = vec![OrderItem { expr: col(Column::File, ValueType::Text), descending: false }];
        let (tx, mut rx) = mpsc::channel(super::entries::ROW_CHANNEL);
        let producer = conn.select(&plan, tx);
        // `move`: the receiver ends with the consumer, so a consumer that fails (the client
        // went away) stops the producer instead of leaving it waiting on a full channel.
        let consumer = async move {
            while let Some(batch) = rx.recv().await {
                for row in batch? {
                    let mut line = String::from("E\t");
                    format::push_field(&mut line, Some(&c.path));
                    for (i, v) in row.into_iter().take(width).enumerate() {
                        line.push('\t');
                        match (i, v) {
                            (3, Value::Int(m)) => line.push_str(&mode_text(m as u16)),
                            (_, v) => format::push_field(&mut line, v.into_wire().as_deref()),
                        }
                    }
                    w.line(line).await?;
                }
            }
            Ok::<(), Error>(())
        };
        let (produced, consumed) = tokio::join!(producer, consumer);
        consumed?;
        produced?;
        Ok(())
    }
}

/// Users (with password hashes and subjects), groups (with owners and members), sites and the
/// replica catalogue.
async fn dump_principals<C: StoreConn, K: RowSink>(conn: &mut C, w: &mut Writer<'_, K>) -> Result<()> {
    let mut users = conn.user_names().await?;
    users.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for u in &users {
        let Some(rec) = conn.user(u).await? else { continue };
        w.line(record([Some("U"), Some(u.as_str()), rec.password_hash.as_deref()])).await?;
        let mut subjects = conn.subjects(u).await?;
        subjects.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for sub in &subjects {
            w.rec(&["US", u, sub]).await?;
        }
        if rec.may_sudo {
            w.rec(&["SUDO", u]).await?;
        }
    }
    for (g, owner) in conn.groups_with_owners().await? {
        w.rec(&["G", &g, &owner]).await?;
        let mut members = conn.group_members(&g).await?;
        members.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for m in &members {
            w.rec(&["GM", &g, m]).await?;
        }
    }
    let mut sites = conn.sites().await?;
    sites.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    for site in &sites {
        w.rec(&["SITE", &site.name, &site.server]).await?;
    }
    for (guid, owner) in conn.all_replica_files().await? {
        w.rec(&["RF", &guid, &owner]).await?;
    }
    for (guid, site) in conn.all_replicas().await? {
        w.rec(&["R", &guid, &site]).await?;
    }
    Ok(())
}

/// The `K` records of a collection, by name: its references, or its other constraints.
async fn dump_constraints<C: StoreConn, K: RowSink>(
    conn: &mut C,
    c: &CollectionInfo,
    references: bool,
    w: &mut Writer<'_, K>,
) -> Result<()> {
    let mut ks = conn.constraints(c.id).await?;
    ks.retain(|k| matches!(k.rule, ConstraintRule::Reference { .. }) == references);
    if ks.is_empty() {
        return Ok(());
    }
    ks.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let attrs = conn.attributes(c.id).await?;
    let p = c.path.as_str();
    for k in &ks {
        let kind = k.rule.kind();
        match &k.rule {
            ConstraintRule::NotNull { attr } | ConstraintRule::Unique { attr } => {
                w.rec(&["K", p, &k.name, kind, &attr_name(&attrs, *attr)]).await?
            }
            ConstraintRule::Reference { attr, collection, column } => {
                let r = conn
                    .collection_by_id(*collection)
                    .await?
                    .ok_or_else(|| Error::Internal(format!("constraint {} refers to a missing collection", k.name)))?;
                let rcol = match column {
                    IndexColumn::File => "FILE".to_string(),
                    IndexColumn::Attr(id) => attr_name(&conn.attributes(r.id).await?, *id),
                };
                w.rec(&["K", p, &k.name, kind, &attr_name(&attrs, *attr), &r.path, &rcol]).await?
            }
            ConstraintRule::Check { condition } => w.rec(&["K", p, &k.name, kind, condition]).await?,
        }
    }
    Ok(())
}
