//! Entries and queries: add/set/get/clear/rm, find/selectattr/updateattr, bulk load, and
//! keyset-paged queries for iterator frontends. Everything that reads streams through a `RowSink`.
//!
//! Entry permissions: every plan carries an [`EntryAccess`] (read on every joined table; write on
//! the entries an update or delete changes), which the store enforces inside the statement, so
//! rows the caller may not use are never returned, counted, ordered by or changed. Patterns and
//! conditions skip such entries silently; an entry named exactly (no wildcard) that exists but
//! is denied is error 4 (see [`named_entry_error`]).

use tokio::sync::mpsc;

use super::namespace::{any_entry, entry_visible, find_attr, named_entry_error};
use super::wire::WireRows;
use super::{Catalogue, Names, RowSink, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{Principal, READ, WRITE};
use crate::query::ast::{AttrRef, Condition, Expr};
use crate::query::{self, Column, Scope, TableSchema, Term, expr_type};
use crate::store::{
    AttrDef, CollectionInfo, DeletePlan, EntryAccess, NewEntry, SelectPlan, ShapeId, Store, StoreConn, UpdatePlan,
};
use crate::types::{Value, ValueType};

mod get_plan;
mod queries;
pub use get_plan::PlanSource;
pub(super) use get_plan::{GetPlan, SharedPlans};
pub use queries::{QueryPage, SelectSpec};

/// Bound on row batches in flight between the database cursor and the frontend:
/// backpressure (the store sends up to 64 rows a batch, so ~256 rows).
pub(crate) const ROW_CHANNEL: usize = 4;

/// An entry name with its values as text (`None`: NULL), as the bulk loader takes them.
pub type NamedValues = (String, Vec<Option<String>>);

/// A new entry's name: one path component, no wildcard.
pub(crate) fn check_entry_name(name: &str) -> Result<()> {
    if !path::valid_component(name) || path::has_wildcard(name) {
        return Err(Error::IllegalCommand(format!("invalid entry name '{name}'")));
    }
    Ok(())
}

/// The store's insert of entries whose names passed [`check_entry_name`] and whose values are
/// typed, after the check every insert path shares: no entry takes a sub-collection's name.
pub(crate) async fn insert_checked<C: StoreConn>(
    conn: &mut C,
    coll: &CollectionInfo,
    attrs: &[AttrDef],
    entries: Vec<NewEntry>,
) -> Result<u64> {
    // One query for the sub-collections, not one per entry: bulk loads are 1M rows.
    let subdirs: std::collections::HashSet<String> =
        conn.children(coll.id).await?.into_iter().map(|c| c.path).collect();
    if let Some(e) = entries.iter().find(|e| subdirs.contains(&path::join(&coll.path, &e.name))) {
        return Err(Error::Exists(path::join(&coll.path, &e.name)));
    }
    conn.insert_entries(coll.id, attrs, entries).await
}

/// The entries an argument like `/dir`, `/dir/name` or `/dir/t*` designates.
pub(crate) struct Target {
    pub(crate) coll: CollectionInfo,
    /// The argument as an absolute path (for messages).
    abs: String,
    /// LIKE pattern on the entry name; `None` = every entry of the collection.
    pub(crate) pattern: Option<String>,
    /// Set when the argument named one entry exactly (no wildcard).
    exact: Option<String>,
}

pub(crate) async fn target<C: StoreConn>(conn: &mut C, cwd: &str, arg: &str) -> Result<Target> {
    let abs = path::absolute(cwd, arg)?;
    if let Some(coll) = conn.collection(&abs).await? {
        return Ok(Target { coll, abs, pattern: None, exact: None });
    }
    let (parent, last) = path::split(&abs).ok_or_else(|| Error::NotFound(abs.clone()))?;
    let coll = conn.collection(parent).await?.ok_or_else(|| Error::NotFound(abs.clone()))?;
    let exact = (!path::has_wildcard(last)).then(|| last.to_string());
    let pattern = Some(path::glob_to_like(last));
    Ok(Target { coll, abs, pattern, exact })
}

/// How a command uses the entries its path argument designates (see [`Target::matched`]).
#[derive(Clone, Copy)]
pub(crate) enum Matched<'a> {
    /// It reads them (`getattr`, `find`).
    Reads,
    /// It changes them (`setattr`, `clearattr`, `rm`, `updateattr`, `chmod`, `chown`): `who`
    /// needs these rights on an entry (0: none beyond the collection's); `conditional` when a
    /// condition selects among the entries the path matched (`rm` with one, `updateattr`).
    Changes(&'a Principal, u16, bool),
}

impl Target {
    /// Name patterns for a plan: table 0, when the argument is not a whole collection.
    fn like(&self) -> impl Iterator<Item = (usize, String)> + '_ {
        self.pattern.iter().map(|p| (0, p.clone()))
    }

    /// **The rule for "nothing matched"** (code 1 vs 4), one for every command that takes an
    /// entry path; `n` is how many entries the command read or changed, and the rule is only
    /// consulted when it is 0 (a command that matched pays no extra statement):
    /// 1. an entry named exactly (no wildcard) must exist and be usable by the caller: else 4
    ///    if it exists (the caller lacks the rights), 1 if it does not — every command, with or
    ///    without a condition (a usable entry that the condition excludes is 0 entries);
    /// 2. a whole collection (`/dir`) is never an error: 0 entries;
    /// 3. a wildcard pattern that matches no entry the caller may use is 1 for a command that
    ///    acts on the matched entries themselves (`setattr`, `clearattr`, `rm` without a
    ///    condition, `chmod`, `chown`; AMGA: `rm dir/*` on no entries is 1), and 0 entries for a
    ///    query (`getattr`, `find`, and a command with a condition: `rm` with one, `updateattr`):
    ///    a query that selects nothing is an empty result, not an error.
    pub(crate) async fn matched<C: StoreConn>(&self, conn: &mut C, n: u64, how: Matched<'_>) -> Result<u64> {
        if n > 0 {
            return Ok(n);
        }
        let Some(like) = &self.pattern else { return Ok(0) };
        let Some(name) = &self.exact else {
            return match how {
                Matched::Changes(_, _, false) => Err(Error::NotFound(self.abs.clone())),
                _ => Ok(0),
            };
        };
        if let Matched::Changes(who, need, true) = how
            && any_entry(conn, self.coll.id, like, EntryAccess::new(who, vec![need])).await?
        {
            return Ok(0);
        }
        Err(named_entry_error(conn, self.coll.id, &self.abs, name).await)
    }
}

/// Refuses an attribute named twice in one command (code 3, the same text for every command
/// and frontend): two values for one column have no meaning, and PostgreSQL would refuse the
/// statement while SQLite kept the last.
pub(crate) fn given_once<'a>(attrs: impl IntoIterator<Item = &'a AttrDef>) -> Result<()> {
    let mut seen: Vec<i64> = Vec::new();
    for a in attrs {
        if seen.contains(&a.id) {
            return Err(Error::IllegalCommand(format!("attribute {} given twice", a.name)));
        }
        seen.push(a.id);
    }
    Ok(())
}

fn col(table: usize, column: Column, vtype: ValueType) -> Expr<Term> {
    Expr::Ref(Term::Column { table, column, vtype })
}

impl<S: Store> Catalogue<S> {
    /// Stream a plan's rows into `sink`, formatted as wire text. The keys the store appends
    /// after the columns are dropped here.
    pub(crate) async fn run_select<K: RowSink>(
        &self,
        conn: &mut S::Conn,
        plan: &SelectPlan,
        sink: &mut K,
    ) -> Result<u64> {
        let wire = WireRows::of(plan);
        let (tx, mut rx) = mpsc::channel(ROW_CHANNEL);
        let producer = conn.select(plan, tx);
        let consumer = async move {
            let mut n = 0u64;
            while let Some(batch) = rx.recv().await {
                let batch = batch?;
                for row in &batch {
                    sink.wire_row(wire.row_ref(row)).await?;
                    n += 1;
                }
                crate::store::spent_rows::give(batch);
            }
            Ok::<u64, Error>(n)
        };
        let (produced, consumed) = tokio::join!(producer, consumer);
        let n = consumed?;
        produced?;
        Ok(n)
    }

    /// `run_select` for a plan that names one entry exactly (its name is unique in the
    /// collection): one round trip to the database and no row channel.
    pub(crate) async fn run_select_one<K: RowSink>(
        &self,
        conn: &mut S::Conn,
        plan: &SelectPlan,
        shape: Option<ShapeId>,
        sink: &mut K,
    ) -> Result<u64> {
        let wire = WireRows::of(plan);
        let rows = conn.select_few(plan, shape).await?;
        for row in &rows {
            sink.wire_row(wire.row_ref(row)).await?;
        }
        let n = rows.len() as u64;
        // Written out: the next point read on this thread decodes into these rows.
        crate::store::spent_rows::give_point(rows);
        Ok(n)
    }

    async fn load_table(conn: &mut S::Conn, who: &Principal, c: CollectionInfo, need: u16) -> Result<TableSchema> {
        Self::check(conn, who, &c, need).await?;
        let attrs = conn.attributes(c.id).await?;
        Ok(TableSchema { info: c, attrs })
    }

    /// Builds the scope of a statement: `first` (if any) is table 0, then every collection the
    /// expressions name, in order of appearance; each checked for `need` (first) / READ (others).
    async fn scope(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        cwd: &str,
        first: Option<(CollectionInfo, u16)>,
        paths: Vec<String>,
    ) -> Result<Scope> {
        let mut tables = Vec::new();
        let bare_default = first.is_some();
        if let Some((c, need)) = first {
            tables.push(Self::load_table(conn, who, c, need).await?);
        }
        for p in paths {
            if tables.iter().any(|t: &TableSchema| t.info.path == p) {
                continue;
            }
            let c = Self::must_collection(conn, &p).await?;
            tables.push(Self::load_table(conn, who, c, READ).await?);
        }
        if tables.len() > self.inner.config.max_join_tables {
            return Err(Error::LimitExceeded(format!(
                "a query may join at most {} collections",
                self.inner.config.max_join_tables
            )));
        }
        Ok(Scope { tables, bare_default, cwd: cwd.to_string() })
    }

    /// `addentry <path> [attr value]…`
    /// `addentry <path> [attr value]…`; a `None` value is NULL (the `escape` extension's `\N`).
    pub async fn addentry(&self, s: &mut Session<S>, entry: &str, pairs: &[(String, Option<String>)]) -> Result<()> {
        let abs = path::absolute(&s.cwd, entry)?;
        let (parent, name) = path::split(&abs).ok_or_else(|| Error::Exists("/".into()))?;
        let names: Vec<String> = pairs.iter().map(|(a, _)| a.clone()).collect();
        let values = pairs.iter().map(|(_, v)| v.clone()).collect();
        self.insert(s, parent, &names, vec![(name.to_string(), values)])
            .await
            .map(|_| ())
            // The store only knows "an entry" collided; name it.
            .map_err(|e| if let Error::Exists(_) = e { Error::Exists(abs.clone()) } else { e })
    }

    /// `addentries <path>…`: entries without values, atomically (they may span collections).
    pub async fn addentries(&self, s: &mut Session<S>, entries: &[String]) -> Result<u64> {
        let mut groups: Vec<(String, Vec<NamedValues>)> = Vec::new();
        for e in entries {
            let abs = path::absolute(&s.cwd, e)?;
            let (parent, name) = path::split(&abs).ok_or_else(|| Error::Exists("/".into()))?;
            match groups.last_mut() {
                Some((p, rows)) if p == parent => rows.push((name.to_string(), Vec::new())),
                _ => groups.push((parent.to_string(), vec![(name.to_string(), Vec::new())])),
            }
        }
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let mut total = 0;
            for (dir, rows) in groups {
                total += self.insert_in(conn, &who, &dir, &[], rows).await?.0;
            }
            Ok(total)
        })
        .await
    }

    /// The bulk loader: many entries × the same attributes into one collection, in one unit of
    /// work (its own transaction, or a savepoint inside the caller's). Nothing is written if any
    /// entry is invalid or exists.
    pub async fn insert(
        &self,
        s: &mut Session<S>,
        dir: &str,
        attr_names: &[String],
        rows: Vec<NamedValues>,
    ) -> Result<u64> {
        self.insert_into(s, dir, attr_names, rows).await.map(|(n, _)| n)
    }

    /// [`Catalogue::insert`], also answering the collection's id (a bulk load gathers its
    /// statistics after the commit).
    pub(crate) async fn insert_into(
        &self,
        s: &mut Session<S>,
        dir: &str,
        attr_names: &[String],
        rows: Vec<NamedValues>,
    ) -> Result<(u64, i64)> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.write(s, async |conn| self.insert_in(conn, &who, &abs, attr_names, rows).await).await
    }

    /// [`Catalogue::insert_into`] inside the caller's unit; `abs` is an absolute collection path.
    async fn insert_in(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        abs: &str,
        attr_names: &[String],
        rows: Vec<NamedValues>,
    ) -> Result<(u64, i64)> {
        if rows.len() > self.inner.config.max_bulk_entries {
            return Err(Error::LimitExceeded(format!(
                "at most {} entries per bulk insert",
                self.inner.config.max_bulk_entries
            )));
        }
        let mode = self.inner.config.entry_mode;
        let coll = Self::must_collection(conn, abs).await?;
        Self::check(conn, who, &coll, WRITE).await?;
        let all = conn.attributes(coll.id).await?;
        let attrs = attr_names.iter().map(|n| find_attr(&all, abs, n)).collect::<Result<Vec<AttrDef>>>()?;
        given_once(&attrs)?;
        let group = who.groups.first().cloned().unwrap_or_else(|| who.user.clone());
        let mut entries = Vec::with_capacity(rows.len());
        for (name, values) in rows {
            check_entry_name(&name)?;
            if values.len() != attrs.len() {
                return Err(Error::IllegalCommand(format!(
                    "entry {name}: {} values for {} attributes",
                    values.len(),
                    attrs.len()
                )));
            }
            let values = attrs
                .iter()
                .zip(&values)
                .map(|(a, v)| v.as_deref().map_or(Ok(Value::Null), |v| a.attr_type.parse_value(v)))
                .collect::<Result<Vec<Value>>>()?;
            entries.push(NewEntry { name, owner: who.user.clone(), group: group.clone(), perms: mode, values });
        }
        Ok((insert_checked(conn, &coll, &attrs, entries).await?, coll.id))
    }

    /// `setattr <pattern> [attr value]…`: constant assignment to every matching entry.
    pub async fn setattr(&self, s: &mut Session<S>, pattern: &str, pairs: &[(String, String)]) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let t = target(conn, &cwd, pattern).await?;
            Self::check(conn, &who, &t.coll, WRITE).await?;
            let all = conn.attributes(t.coll.id).await?;
            let mut assignments = Vec::new();
            for (name, value) in pairs {
                let a = find_attr(&all, &t.coll.path, name)?;
                let v = a.attr_type.parse_value(value)?;
                let vt = a.attr_type.value_type();
                assignments.push((a, Expr::Ref(Term::Const(v, vt))));
            }
            given_once(assignments.iter().map(|(a, _)| a))?;
            let plan = UpdatePlan {
                tables: vec![t.coll.id],
                assignments,
                filter: None,
                name_patterns: t.like().collect(),
                access: EntryAccess::new(&who, vec![WRITE]),
            };
            let n = conn.update_entries(&plan).await?;
            t.matched(conn, n, Matched::Changes(&who, WRITE, false)).await
        })
        .await
    }

    /// `clearattr <pattern> <attr>…`: set attributes to NULL.
    pub async fn clearattr(&self, s: &mut Session<S>, pattern: &str, attrs: &[String]) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let t = target(conn, &cwd, pattern).await?;
            Self::check(conn, &who, &t.coll, WRITE).await?;
            let all = conn.attributes(t.coll.id).await?;
            let assignments = attrs
                .iter()
                .map(|n| Ok((find_attr(&all, &t.coll.path, n)?, Expr::Lit(query::ast::Literal::Null))))
                .collect::<Result<Vec<_>>>()?;
            given_once(assignments.iter().map(|(a, _)| a))?;
            let plan = UpdatePlan {
                tables: vec![t.coll.id],
                assignments,
                filter: None,
                name_patterns: t.like().collect(),
                access: EntryAccess::new(&who, vec![WRITE]),
            };
            let n = conn.update_entries(&plan).await?;
            t.matched(conn, n, Matched::Changes(&who, WRITE, false)).await
        })
        .await
    }

    /// `rm <pattern> [condition]`: remove matching entries (see `Target::matched` for an
    /// empty match).
    pub async fn rm(&self, s: &mut Session<S>, pattern: &str, condition: Option<&str>) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        let cond = match condition {
            Some(c) => query::parse_condition(c).map_err(|e| Error::IllegalQuery(e.to_string()))?,
            None => Condition::default(),
        };
        self.write(s, async |conn| {
            let t = target(conn, &cwd, pattern).await?;
            let mut paths = Vec::new();
            query::resolve::condition_collections(&cond, &cwd, &mut paths)?;
            let scope = self.scope(conn, &who, &cwd, Some((t.coll.clone(), WRITE)), paths).await?;
            let cond = scope.resolve_condition(cond)?;
            if let Some(f) = &cond.filter {
                query::resolve::check_coerced(f)?;
            }
            // Removing needs write on the collection, and write on the entry unless the caller
            // owns the collection (like a directory with the sticky bit).
            let own = if Self::is_owner(&who, &t.coll) { 0 } else { WRITE };
            let mut needs = vec![own];
            needs.resize(scope.tables.len(), READ);
            let plan = DeletePlan {
                tables: scope.tables.iter().map(|t| t.info.id).collect(),
                filter: cond.filter,
                name_patterns: t.like().collect(),
                access: EntryAccess::new(&who, needs),
            };
            let n = conn.delete_entries(&plan).await?;
            t.matched(conn, n, Matched::Changes(&who, own, condition.is_some())).await
        })
        .await
        .map_err(|e| overflow_in(e, &condition.map(Text::Condition).into_iter().collect::<Vec<_>>()))
    }

    /// `getattr <pattern> <attr>…`: per entry, its name then the values (bulk get).
    pub async fn getattr<K: RowSink>(
        &self,
        s: &mut Session<S>,
        pattern: &str,
        attrs: &Names,
        sink: &mut K,
    ) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        // The session's last plan serves again when nothing it was made from changed; a session
        // made for one request borrows one from the catalogue's shelf by the same rule.
        let keep = s.keeps_plans;
        let mut kept = if keep { s.get_plan.take() } else { None };
        let shelf = &self.inner.shared_plans;
        let result = self
            .read(s, async |conn| {
                let t = target(conn, &cwd, pattern).await?;
                Self::check(conn, &who, &t.coll, READ).await?;
                let schema = conn.attributes(t.coll.id).await?;
                let get = match &mut kept {
                    Some(get) if get.serves(t.coll.id, &schema, &who, attrs) => {
                        shelf.count(PlanSource::Session);
                        get
                    }
                    _ => {
                        let lent = if keep { None } else { shelf.take(t.coll.id, &schema, &who, attrs) };
                        kept.insert(match lent {
                            Some(lent) => {
                                shelf.count(PlanSource::Shared);
                                lent
                            }
                            None => {
                                let built = GetPlan::new(t.coll.id, &t.coll.path, schema, &who, attrs)?;
                                shelf.count(PlanSource::Built);
                                built
                            }
                        })
                    }
                };
                let (plan, shape) = get.with_names(t.like());
                sink.collection(&t.coll.path);
                let n = match t.exact {
                    Some(_) => self.run_select_one(conn, plan, Some(shape), sink).await?,
                    None => self.run_select(conn, plan, sink).await?,
                };
                // Nothing was written to the sink, so the caller can still answer with an error.
                t.matched(conn, n, Matched::Reads).await
            })
            .await;
        match kept {
            Some(get) if !keep => shelf.give_back(get),
            kept => s.get_plan = kept,
        }
        result
    }

    /// `updateattr <pattern> (attr expr)… <condition>`: update by query with implicit joins.
    pub async fn updateattr(
        &self,
        s: &mut Session<S>,
        pattern: &str,
        assignments: &[(String, String)],
        condition: &str,
    ) -> Result<u64> {
        let cond = query::parse_condition(condition).map_err(|e| Error::IllegalQuery(e.to_string()))?;
        let exprs = assignments
            .iter()
            .map(|(a, e)| {
                Ok((a.clone(), query::parse_expr(e).map_err(|err| Error::IllegalQuery(format!("'{e}' {err}")))?))
            })
            .collect::<Result<Vec<_>>>()?;
        self.update_where(s, pattern, exprs, cond).await.map_err(|e| {
            let mut texts: Vec<Text<'_>> = assignments.iter().map(|(_, e)| Text::Expr(e)).collect();
            texts.push(Text::Condition(condition));
            overflow_in(e, &texts)
        })
    }

    /// `updateattr` with the new values and the condition already parsed: the composite
    /// operations (`composite.rs`) hand typed values in as literals, never as query text.
    pub(crate) async fn update_where(
        &self,
        s: &mut Session<S>,
        pattern: &str,
        exprs: Vec<(String, Expr<AttrRef>)>,
        cond: Condition<AttrRef>,
    ) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let t = target(conn, &cwd, pattern).await?;
            let mut paths = Vec::new();
            query::resolve::condition_collections(&cond, &cwd, &mut paths)?;
            for (_, e) in &exprs {
                query::resolve::referenced_collections(e, &cwd, &mut paths)?;
            }
            let scope = self.scope(conn, &who, &cwd, Some((t.coll.clone(), WRITE)), paths).await?;
            let mut planned = Vec::new();
            for (name, e) in exprs {
                let attr = find_attr(&scope.tables[0].attrs, &t.coll.path, &name)?;
                let e = scope.resolve(e)?;
                let mut foreign = false;
                e.for_each_ref(&mut |r| foreign |= matches!(r, Term::Column { table, .. } if *table != 0));
                if foreign {
                    return Err(Error::IllegalQuery(format!(
                        "the new value of {name} may only use attributes of {}",
                        t.coll.path
                    )));
                }
                planned.push((attr.clone(), query::resolve::check_assignment(&attr, e)?));
            }
            given_once(planned.iter().map(|(a, _)| a))?;
            let cond = scope.resolve_condition(cond)?;
            if let Some(f) = &cond.filter {
                query::resolve::check_coerced(f)?;
            }
            let mut needs = vec![WRITE];
            needs.resize(scope.tables.len(), READ);
            let plan = UpdatePlan {
                tables: scope.tables.iter().map(|t| t.info.id).collect(),
                assignments: planned,
                filter: cond.filter,
                name_patterns: t.like().collect(),
                access: EntryAccess::new(&who, needs),
            };
            let n = conn.update_entries(&plan).await?;
            // Update by query: its condition makes it a query (rule 3 of `Target::matched`).
            t.matched(conn, n, Matched::Changes(&who, WRITE, true)).await
        })
        .await
    }
}

/// Column of a getattr name: a pseudo-attribute or one of `all`. `hint` is where the previous
/// name matched: clients usually list attributes in schema order, so the scan from there finds
/// the next one at once instead of comparing 60 names per name (this runs on every `get`).
fn pseudo_or_attr(all: &[AttrDef], hint: &mut usize, dir: &str, name: &str) -> Result<(Column, ValueType)> {
    const PSEUDO: [(&str, Column, ValueType); 4] = [
        ("FILE", Column::File, ValueType::Text),
        ("OWNER", Column::Owner, ValueType::Text),
        ("GROUP_RIGHT", Column::Group, ValueType::Text),
        ("PERMISSIONS", Column::Perms, ValueType::Int),
    ];
    if let Some((_, c, t)) = PSEUDO.iter().find(|(p, _, _)| p.eq_ignore_ascii_case(name)) {
        return Ok((*c, *t));
    }
    let n = all.len();
    for k in 0..n {
        let i = (*hint + k) % n;
        if all[i].name.eq_ignore_ascii_case(name) {
            *hint = i + 1;
            return Ok((Column::Attr(all[i].id), all[i].attr_type.value_type()));
        }
    }
    Err(Error::NoSuchAttribute(format!("{dir}:{name}")))
}

fn plan_from(
    scope: &Scope,
    columns: Vec<Expr<Term>>,
    cond: Condition<Term>,
    name_patterns: Vec<(usize, String)>,
    _bare: bool,
) -> Result<SelectPlan> {
    if let Some(f) = &cond.filter {
        query::resolve::check_coerced(f)?;
    }
    let column_types = columns.iter().map(expr_type).collect();
    Ok(SelectPlan {
        tables: scope.tables.iter().map(|t| t.info.id).collect(),
        columns,
        column_types,
        filter: cond.filter,
        name_patterns,
        order_by: cond.order_by,
        distinct: cond.distinct,
        limit: cond.limit,
        after: None,
        access: None,
        group_by: Vec::new(),
        having: None,
        offset: None,
    })
}

/// A piece of query-language text of a command, for [`overflow_in`].
enum Text<'a> {
    Expr(&'a str),
    Condition(&'a str),
}

/// Names the command's expressions in an arithmetic overflow (code 18): the store only knows a
/// statement overflowed, the service knows the texts it came from. Only the texts that compute
/// something are named (all of them if none seems to). Other errors pass unchanged.
fn overflow_in(e: Error, texts: &[Text<'_>]) -> Error {
    let Error::Overflow(_) = e else { return e };
    let computes = |t: &Text<'_>| match t {
        Text::Expr(s) => query::parse_expr(s).is_ok_and(|e| e.has_arithmetic()),
        Text::Condition(s) => query::parse_condition(s).is_ok_and(|c| {
            c.filter.as_ref().is_some_and(Expr::has_arithmetic) || c.order_by.iter().any(|o| o.expr.has_arithmetic())
        }),
    };
    let text = |t: &Text<'_>| match t {
        Text::Expr(s) | Text::Condition(s) => format!("'{}'", s.trim()),
    };
    let mut named: Vec<String> = texts.iter().filter(|t| computes(t)).map(text).collect();
    if named.is_empty() {
        named = texts.iter().map(text).collect();
    }
    Error::Overflow(named.join(", "))
}

/// Runs `plan` for one page of at most `page_size` rows (its `limit` is replaced, its `after`
/// kept): the rows, and the key of the last one when more rows follow. One row more than the
/// page tells whether another page exists.
pub(super) async fn collect_page<C: StoreConn>(
    conn: &mut C,
    mut plan: SelectPlan,
    page_size: usize,
) -> Result<(Vec<Vec<Option<String>>>, Option<Vec<Value>>)> {
    plan.limit = Some(page_size as u64 + 1);
    let ncols = plan.columns.len();
    let key_types = plan.key_types();
    let wire = WireRows::of(&plan);
    let (tx, mut rx) = mpsc::channel(ROW_CHANNEL);
    let producer = conn.select(&plan, tx);
    let consumer = async move {
        let mut rows = Vec::new();
        let mut last_key = None;
        let mut more = false;
        'batches: while let Some(batch) = rx.recv().await {
            for row in batch? {
                if rows.len() == page_size {
                    more = true;
                    break 'batches;
                }
                last_key = Some(row[ncols..].to_vec());
                rows.push(wire.row(row).into_texts());
            }
        }
        Ok::<_, Error>((rows, last_key, more))
    };
    let (produced, consumed) = tokio::join!(producer, consumer);
    let (rows, last_key, more) = consumed?;
    produced?;
    debug_assert!(last_key.as_ref().is_none_or(|k: &Vec<Value>| k.len() == key_types.len()));
    Ok((rows, if more { last_key } else { None }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AttrType;

    fn attr(id: i64, name: &str) -> AttrDef {
        AttrDef { id, name: name.into(), attr_type: AttrType::Int, indexed: false }
    }

    #[test]
    fn pseudo_attributes_in_any_case_and_attributes_that_look_like_them() {
        let all = [attr(1, "a0"), attr(2, "Fxyz"), attr(3, "ownerx"), attr(4, "pid")];
        let mut hint = 0;
        let mut get = |name: &str| pseudo_or_attr(&all, &mut hint, "/d", name).map(|(c, _)| c);
        assert_eq!(get("FILE").unwrap(), Column::File);
        assert_eq!(get("file").unwrap(), Column::File);
        assert_eq!(get("Owner").unwrap(), Column::Owner);
        assert_eq!(get("group_right").unwrap(), Column::Group);
        assert_eq!(get("permissions").unwrap(), Column::Perms);
        // Names near a pseudo-attribute's (same length and first letter, or one more letter) are attributes.
        assert_eq!(get("Fxyz").unwrap(), Column::Attr(2));
        assert_eq!(get("OWNERX").unwrap(), Column::Attr(3));
        assert_eq!(get("pid").unwrap(), Column::Attr(4));
        assert_eq!(get("a0").unwrap(), Column::Attr(1));
        assert!(matches!(get(""), Err(Error::NoSuchAttribute(_))));
        assert!(matches!(get("FIL"), Err(Error::NoSuchAttribute(_))));
    }
}
