//! Native SQL (AMGA ≥ 1.9): runs a parsed [`sql::Statement`] as the same plans the query
//! language compiles to — `SelectPlan`, `UpdatePlan`, `DeletePlan` and the store's entry insert —
//! with the same permission checks (read on every queried collection, write on the changed
//! one, entry access predicates inside the statement), the same join limit, and the same row
//! streaming. User SQL never reaches a database. It owns name resolution of SQL columns
//! (aliases, self-joins, bare names over several tables) and the GROUP BY rules; it must not
//! know wire syntax or SQL text.
//!
//! Reply shape: a SELECT streams one row of headers (one per output column: the item as
//! written, its alias, or `/dir:attr` for `*`), then its rows; writes stream nothing. The header
//! row goes out with the first row (or at the end), so an error before any row is still a plain
//! error reply.

use super::entries::{check_entry_name, insert_checked};
use super::namespace::find_attr;
use super::{Catalogue, RowSink, Session, WireRow};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{Principal, READ, WRITE};
use crate::query::ast::{Expr, Literal, OrderItem as PlanOrder};
use crate::query::sql::{
    self, Delete, Insert, OrderKey, Qualifier, Select, SelectItem, SqlRef, Statement, TableRef, Update,
};
use crate::query::{Column, TableSchema, Term, expr_type, resolve};
use crate::store::{AttrDef, DeletePlan, EntryAccess, NewEntry, SelectPlan, Store, StoreConn, UpdatePlan};
use crate::types::{Value, ValueType};

/// The entry columns as SQL names them (the query language's pseudo-attributes).
const ENTRY_COLUMNS: [(&str, Column, ValueType); 4] = [
    ("FILE", Column::File, ValueType::Text),
    ("OWNER", Column::Owner, ValueType::Text),
    ("GROUP_RIGHT", Column::Group, ValueType::Text),
    ("PERMISSIONS", Column::Perms, ValueType::Int),
];

fn entry_column(name: &str) -> Option<(Column, ValueType)> {
    ENTRY_COLUMNS.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(name)).map(|(_, c, t)| (*c, *t))
}

fn at(position: usize, message: impl std::fmt::Display) -> Error {
    Error::IllegalQuery(format!("at position {position}: {message}"))
}

/// A type error found while checking an expression that starts at `position` gets the position.
fn locate(position: usize, e: Error) -> Error {
    match e {
        Error::IllegalQuery(m) if !m.starts_with("at position ") => at(position, m),
        other => other,
    }
}

/// One table of a statement: its schema and how the statement may name it.
struct SqlTable {
    schema: TableSchema,
    alias: Option<String>,
    /// The table as written when it is a plain name (`FROM jobs`).
    written: String,
}

/// The tables of one statement, in FROM order (table 0 is the target of a write).
struct SqlScope {
    tables: Vec<SqlTable>,
    cwd: String,
    /// UPDATE/DELETE: bare names mean the target table (like updateattr); `/dir:attr` of a
    /// collection not named yet joins it implicitly.
    write: bool,
}

impl SqlScope {
    fn path_tables(&self, p: &str, position: usize) -> Result<Vec<usize>> {
        let abs = path::absolute(&self.cwd, p)?;
        let found: Vec<usize> = (0..self.tables.len()).filter(|&i| self.tables[i].schema.info.path == abs).collect();
        if found.is_empty() {
            return Err(at(position, format!("{abs} is not a table of this statement (name it in FROM)")));
        }
        Ok(found)
    }

    fn qualified(&self, q: &Qualifier, position: usize) -> Result<usize> {
        let found = match q {
            Qualifier::Path(p) => self.path_tables(p, position)?,
            Qualifier::Name(n) => {
                let by_alias: Vec<usize> = (0..self.tables.len())
                    .filter(|&i| self.tables[i].alias.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(n)))
                    .collect();
                if by_alias.is_empty() {
                    // A table without an alias goes by its name as written or its last component.
                    (0..self.tables.len())
                        .filter(|&i| {
                            let t = &self.tables[i];
                            t.alias.is_none()
                                && (t.written == *n || path::split(&t.schema.info.path).is_some_and(|(_, l)| l == n))
                        })
                        .collect()
                } else {
                    by_alias
                }
            }
        };
        match found.as_slice() {
            [i] => Ok(*i),
            [] => Err(at(position, format!("no table is called {}", qualifier_text(q)))),
            _ => Err(at(position, format!("{} names several tables; give them aliases", qualifier_text(q)))),
        }
    }

    fn resolve_ref(&self, r: &SqlRef) -> Result<Term> {
        let table = match &r.qualifier {
            Some(q) => self.qualified(q, r.position)?,
            None if self.write || self.tables.len() == 1 => 0,
            None => {
                let having: Vec<usize> = if entry_column(&r.name).is_some() {
                    (0..self.tables.len()).collect()
                } else {
                    (0..self.tables.len()).filter(|&i| self.tables[i].schema.attr(&r.name).is_some()).collect()
                };
                match having.as_slice() {
                    [i] => *i,
                    [] => 0, // reported below as a missing attribute of the first table
                    _ => {
                        return Err(at(
                            r.position,
                            format!("'{}' is ambiguous; qualify it (alias.{})", r.name, r.name),
                        ));
                    }
                }
            }
        };
        let schema = &self.tables[table].schema;
        let (column, vtype) = match entry_column(&r.name) {
            Some(c) => c,
            None => {
                let a = schema
                    .attr(&r.name)
                    .ok_or_else(|| Error::NoSuchAttribute(format!("{}:{}", schema.info.path, r.name)))?;
                (Column::Attr(a.id), a.attr_type.value_type())
            }
        };
        Ok(Term::Column { table, column, vtype })
    }

    /// Resolve and type-check an expression starting at `position`.
    fn resolve(&self, e: Expr<SqlRef>, position: usize) -> Result<Expr<Term>> {
        let e = e.try_map_refs(&mut |r| self.resolve_ref(&r))?;
        resolve::typecheck(e).map_err(|err| locate(position, err))
    }

    /// A condition (WHERE, ON, HAVING, a write's WHERE): boolean, constants convertible.
    fn condition(&self, e: Expr<SqlRef>, position: usize, aggregates: bool) -> Result<Expr<Term>> {
        let e = self.resolve(e, position)?;
        if !aggregates && e.has_aggregate() {
            return Err(at(position, "aggregates are only allowed in the select list, HAVING and ORDER BY"));
        }
        if expr_type(&e) != ValueType::Bool && !matches!(e, Expr::Lit(Literal::Null)) {
            return Err(at(position, "the condition is not a boolean expression"));
        }
        resolve::check_coerced(&e).map_err(|err| locate(position, err))?;
        Ok(e)
    }
}

fn qualifier_text(q: &Qualifier) -> &str {
    match q {
        Qualifier::Path(p) | Qualifier::Name(p) => p,
    }
}

/// Every collection path a statement's expressions name (`/dir:attr`), in order.
fn paths_in(e: &Expr<SqlRef>, out: &mut Vec<(String, usize)>) {
    e.for_each_ref(&mut |r| {
        if let Some(Qualifier::Path(p)) = &r.qualifier {
            out.push((p.clone(), r.position));
        }
    });
}

/// In a grouped query, whether `e` is computed from groups only: a grouping column, a constant,
/// an aggregate, or an operator over those.
fn grouped_ok(e: &Expr<Term>, group_by: &[Expr<Term>]) -> bool {
    if group_by.contains(e) {
        return true;
    }
    match e {
        Expr::Lit(_) | Expr::Ref(Term::Const(..)) => true,
        Expr::Ref(Term::Column { .. }) => false,
        Expr::Call(crate::query::ast::Func::Aggregate(..), _) => true,
        Expr::Unary(_, a) => grouped_ok(a, group_by),
        Expr::Binary(_, a, b) => grouped_ok(a, group_by) && grouped_ok(b, group_by),
        Expr::Call(_, args) => args.iter().all(|a| grouped_ok(a, group_by)),
        Expr::Like { expr, pattern, .. } => grouped_ok(expr, group_by) && grouped_ok(pattern, group_by),
        Expr::InList { expr, list, .. } => grouped_ok(expr, group_by) && list.iter().all(|a| grouped_ok(a, group_by)),
        Expr::Between { expr, low, high, .. } => {
            grouped_ok(expr, group_by) && grouped_ok(low, group_by) && grouped_ok(high, group_by)
        }
        Expr::IsNull { expr, .. } => grouped_ok(expr, group_by),
    }
}

/// Sends the header row before the first row.
struct Headed<'a, K> {
    sink: &'a mut K,
    headers: Option<Vec<Option<String>>>,
}

impl<K: RowSink> Headed<'_, K> {
    async fn flush(&mut self) -> Result<()> {
        match self.headers.take() {
            Some(h) => self.sink.row(h).await,
            None => Ok(()),
        }
    }
}

impl<K: RowSink> RowSink for Headed<'_, K> {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        self.flush().await?;
        self.sink.row(row).await
    }

    async fn wire_row(&mut self, row: WireRow<'_>) -> Result<()> {
        self.flush().await?;
        self.sink.wire_row(row).await
    }
}

impl<S: Store> Catalogue<S> {
    /// A native SQL statement (`SELECT`, `INSERT`, `UPDATE`, `DELETE`, any case). A SELECT
    /// streams one header row (one value per column) and then its rows into `sink`, and returns
    /// the number of rows (headers not counted); a write streams nothing and returns how many
    /// entries it inserted, updated or deleted. Writes are one atomic unit (a savepoint inside
    /// the session's transaction). Anything outside the subset is code 8 with its position.
    pub async fn sql<K: RowSink>(&self, s: &mut Session<S>, statement: &str, sink: &mut K) -> Result<u64> {
        match sql::parse_on_own_stack(statement).await? {
            Statement::Select(sel) => self.sql_select(s, sel, sink).await,
            Statement::Insert(ins) => self.sql_insert(s, ins).await,
            Statement::Update(up) => self.sql_update(s, up).await,
            Statement::Delete(del) => self.sql_delete(s, del).await,
        }
    }

    async fn sql_table(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        cwd: &str,
        t: &TableRef,
        need: u16,
    ) -> Result<SqlTable> {
        let abs = path::absolute(cwd, &t.path)?;
        let info = Self::must_collection(conn, &abs).await?;
        Self::check(conn, who, &info, need).await?;
        let attrs = conn.attributes(info.id).await?;
        Ok(SqlTable { schema: TableSchema { info, attrs }, alias: t.alias.clone(), written: t.path.clone() })
    }

    fn join_limit(&self, n: usize) -> Result<()> {
        let max = self.inner.config.max_join_tables;
        if n > max {
            return Err(Error::LimitExceeded(format!("a query may join at most {max} collections")));
        }
        Ok(())
    }

    async fn sql_select<K: RowSink>(&self, s: &mut Session<S>, sel: Select, sink: &mut K) -> Result<u64> {
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.join_limit(sel.from.len())?;
        self.read(s, async |conn| {
            let (plan, headers) = self.sql_select_plan(conn, &who, &cwd, sel).await?;
            let mut headed = Headed { sink, headers: Some(headers.into_iter().map(Some).collect()) };
            let n = self.run_select(conn, &plan, &mut headed).await?;
            headed.flush().await?;
            Ok(n)
        })
        .await
    }

    /// The plan and header of a SELECT: its collections looked up (read needed), names resolved.
    async fn sql_select_plan(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        cwd: &str,
        sel: Select,
    ) -> Result<(SelectPlan, Vec<String>)> {
        let mut tables = Vec::new();
        for t in &sel.from {
            tables.push(self.sql_table(conn, who, cwd, t, READ).await?);
        }
        let scope = SqlScope { tables, cwd: cwd.to_string(), write: false };
        plan_select(&scope, who, sel)
    }

    /// One page of a native SQL `SELECT` (SOAP `sqlQuery`): the header (one name per column, as
    /// the TCP reply's header lines), at most `page_size` rows continuing strictly after `after`
    /// (a previous page's `next`), and the key of the last row when more follow. The statement's
    /// own `LIMIT` counts over all pages (`served`: rows of earlier pages); its `OFFSET` applies
    /// to the first page only (later pages continue by key). Other statements are code 8.
    pub async fn sql_page(
        &self,
        s: &mut Session<S>,
        statement: &str,
        after: Option<Vec<Value>>,
        served: u64,
        page_size: usize,
    ) -> Result<super::QueryPage> {
        let sel = match sql::parse_on_own_stack(statement).await? {
            Statement::Select(sel) => sel,
            _ => return Err(Error::IllegalQuery("sqlQuery answers SELECT statements only".into())),
        };
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.join_limit(sel.from.len())?;
        self.read(s, async |conn| {
            let (mut plan, headers) = self.sql_select_plan(conn, &who, &cwd, sel).await?;
            let remaining = plan.limit.map(|l| l.saturating_sub(served));
            let take = remaining.map_or(page_size, |r| usize::try_from(r).unwrap_or(usize::MAX).min(page_size));
            if after.is_some() {
                plan.offset = None;
            }
            plan.after = after;
            if take == 0 {
                return Ok(super::QueryPage { columns: headers, rows: Vec::new(), next: None });
            }
            let (rows, next) = super::entries::collect_page(conn, plan, take).await?;
            // The statement's LIMIT is reached with this page: nothing follows.
            let next = next.filter(|_| remaining.is_none_or(|r| r > take as u64));
            Ok(super::QueryPage { columns: headers, rows, next })
        })
        .await
    }

    async fn sql_insert(&self, s: &mut Session<S>, ins: Insert) -> Result<u64> {
        let max = self.inner.config.max_bulk_entries;
        if ins.rows.len() > max {
            return Err(Error::LimitExceeded(format!("at most {max} entries per bulk insert")));
        }
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        let mode = self.inner.config.entry_mode;
        self.write(s, async |conn| {
            let t = self.sql_table(conn, &who, &cwd, &ins.table, WRITE).await?;
            let coll = t.schema.info;
            // Column list: FILE once, then attributes of the collection.
            let names: Vec<(String, usize)> = match ins.columns {
                Some(cols) => cols.into_iter().map(|c| (c.value, c.position)).collect(),
                None => std::iter::once(("FILE".to_string(), ins.table.position))
                    .chain(t.schema.attrs.iter().map(|a| (a.name.clone(), ins.table.position)))
                    .collect(),
            };
            let mut file_at = None;
            let mut attrs: Vec<AttrDef> = Vec::new();
            // Where each attribute's value is in a row (FILE's index is file_at).
            let mut value_index = Vec::new();
            for (i, (name, position)) in names.iter().enumerate() {
                if name.eq_ignore_ascii_case("FILE") {
                    if file_at.replace(i).is_some() {
                        return Err(at(*position, "FILE given twice"));
                    }
                } else if entry_column(name).is_some() {
                    return Err(at(*position, format!("{name} is set by the catalogue, not by INSERT")));
                } else {
                    let a = find_attr(&t.schema.attrs, &coll.path, name)?;
                    if attrs.iter().any(|b| b.id == a.id) {
                        return Err(at(*position, format!("attribute {} given twice", a.name)));
                    }
                    attrs.push(a);
                    value_index.push(i);
                }
            }
            let Some(file_at) = file_at else {
                return Err(at(ins.table.position, "INSERT needs the FILE column (the entry name)"));
            };
            let group = who.groups.first().cloned().unwrap_or_else(|| who.user.clone());
            let mut entries = Vec::with_capacity(ins.rows.len());
            for row in ins.rows {
                if row.len() != names.len() {
                    let position = row.first().map_or(ins.table.position, |v| v.position);
                    return Err(at(position, format!("{} values for {} columns", row.len(), names.len())));
                }
                let name = match &row[file_at].value {
                    Literal::Str(n) => n.clone(),
                    _ => return Err(at(row[file_at].position, "FILE is a string")),
                };
                check_entry_name(&name)?;
                let mut values = Vec::with_capacity(attrs.len());
                for (a, &i) in attrs.iter().zip(&value_index) {
                    let text = match &row[i].value {
                        Literal::Null => {
                            values.push(Value::Null);
                            continue;
                        }
                        Literal::Str(v) => v.clone(),
                        Literal::Int(v) => v.to_string(),
                        Literal::Float(v) => v.to_string(),
                        Literal::Bool(v) => v.to_string(),
                    };
                    values.push(a.attr_type.parse_value(&text)?);
                }
                entries.push(NewEntry { name, owner: who.user.clone(), group: group.clone(), perms: mode, values });
            }
            insert_checked(conn, &coll, &attrs, entries).await
        })
        .await
    }

    /// The tables of a write: the target (`need` on it) and every other collection its
    /// expressions name as `/dir:attr` (read), joined implicitly as in `updateattr`.
    async fn write_scope(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        cwd: &str,
        target: &TableRef,
        need: u16,
        exprs: &[&Expr<SqlRef>],
    ) -> Result<SqlScope> {
        let mut tables = vec![self.sql_table(conn, who, cwd, target, need).await?];
        let mut paths = Vec::new();
        for e in exprs {
            paths_in(e, &mut paths);
        }
        for (p, position) in paths {
            let abs = path::absolute(cwd, &p)?;
            if tables.iter().any(|t| t.schema.info.path == abs) {
                continue;
            }
            self.join_limit(tables.len() + 1)?;
            let t = TableRef { path: abs, alias: None, position };
            tables.push(self.sql_table(conn, who, cwd, &t, READ).await?);
        }
        Ok(SqlScope { tables, cwd: cwd.to_string(), write: true })
    }

    async fn sql_update(&self, s: &mut Session<S>, up: Update) -> Result<u64> {
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.write(s, async |conn| {
            let mut exprs: Vec<&Expr<SqlRef>> = up.assignments.iter().map(|(_, v)| &v.value).collect();
            exprs.extend(up.filter.as_ref().map(|f| &f.value));
            let scope = self.write_scope(conn, &who, &cwd, &up.table, WRITE, &exprs).await?;
            let target = &scope.tables[0].schema;
            let mut assignments: Vec<(AttrDef, Expr<Term>)> = Vec::new();
            for (name, value) in up.assignments {
                if entry_column(&name.value).is_some() {
                    return Err(at(name.position, format!("{} cannot be set", name.value)));
                }
                let attr = find_attr(&target.attrs, &target.info.path, &name.value)?;
                if assignments.iter().any(|(a, _)| a.id == attr.id) {
                    return Err(at(name.position, format!("{} is set twice", attr.name)));
                }
                let e = scope.resolve(value.value, value.position)?;
                let mut foreign = false;
                e.for_each_ref(&mut |r| foreign |= matches!(r, Term::Column { table, .. } if *table != 0));
                if foreign || e.has_aggregate() {
                    return Err(at(
                        value.position,
                        format!("the new value of {} may only use attributes of {}", attr.name, target.info.path),
                    ));
                }
                let e = resolve::check_assignment(&attr, e).map_err(|err| locate(value.position, err))?;
                assignments.push((attr, e));
            }
            let filter = up.filter.map(|f| scope.condition(f.value, f.position, false)).transpose()?;
            let mut needs = vec![WRITE];
            needs.resize(scope.tables.len(), READ);
            let plan = UpdatePlan {
                tables: scope.tables.iter().map(|t| t.schema.info.id).collect(),
                assignments,
                filter,
                name_patterns: Vec::new(),
                access: EntryAccess::new(&who, needs),
            };
            conn.update_entries(&plan).await
        })
        .await
    }

    async fn sql_delete(&self, s: &mut Session<S>, del: Delete) -> Result<u64> {
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.write(s, async |conn| {
            let exprs: Vec<&Expr<SqlRef>> = del.filter.as_ref().map(|f| &f.value).into_iter().collect();
            let scope = self.write_scope(conn, &who, &cwd, &del.table, WRITE, &exprs).await?;
            let filter = del.filter.map(|f| scope.condition(f.value, f.position, false)).transpose()?;
            // As `rm`: write on the collection, and on the entry unless the caller owns the
            // collection (like a directory with the sticky bit).
            let own = if Self::is_owner(&who, &scope.tables[0].schema.info) { 0 } else { WRITE };
            let mut needs = vec![own];
            needs.resize(scope.tables.len(), READ);
            let plan = DeletePlan {
                tables: scope.tables.iter().map(|t| t.schema.info.id).collect(),
                filter,
                name_patterns: Vec::new(),
                access: EntryAccess::new(&who, needs),
            };
            conn.delete_entries(&plan).await
        })
        .await
    }
}

/// The plan and header line of a SELECT over resolved tables.
fn plan_select(scope: &SqlScope, who: &Principal, sel: Select) -> Result<(SelectPlan, Vec<String>)> {
    let mut columns = Vec::new();
    let mut headers = Vec::new();
    let mut aliases: Vec<Option<String>> = Vec::new();
    let mut positions = Vec::new();
    for item in sel.items {
        match item {
            SelectItem::Expr { expr, header, alias, position } => {
                columns.push(scope.resolve(expr, position)?);
                headers.push(header);
                aliases.push(alias);
                positions.push(position);
            }
            SelectItem::Wildcard { qualifier, position } => {
                let which: Vec<usize> = match &qualifier {
                    None => (0..scope.tables.len()).collect(),
                    Some(q) => vec![scope.qualified(q, position)?],
                };
                for t in which {
                    let schema = &scope.tables[t].schema;
                    let dir = &schema.info.path;
                    columns.push(Expr::Ref(Term::Column { table: t, column: Column::File, vtype: ValueType::Text }));
                    headers.push(format!("{dir}:FILE"));
                    for a in schema.attrs.iter() {
                        columns.push(Expr::Ref(Term::Column {
                            table: t,
                            column: Column::Attr(a.id),
                            vtype: a.attr_type.value_type(),
                        }));
                        headers.push(format!("{dir}:{}", a.name));
                    }
                    aliases.resize(columns.len(), None);
                    positions.resize(columns.len(), position);
                }
            }
        }
    }
    let mut filter: Option<Expr<Term>> = None;
    for f in sel.filters {
        let c = scope.condition(f.value, f.position, false)?;
        filter = Some(match filter {
            None => c,
            Some(prev) => Expr::Binary(crate::query::ast::BinOp::And, Box::new(prev), Box::new(c)),
        });
    }
    let group_by: Vec<Expr<Term>> =
        sel.group_by.into_iter().map(|g| scope.resolve_ref(&g.value).map(Expr::Ref)).collect::<Result<_>>()?;
    let having = sel.having.map(|h| scope.condition(h.value, h.position, true).map(|e| (e, h.position))).transpose()?;
    let mut order_by = Vec::new();
    let mut order_positions = Vec::new();
    for o in sel.order_by {
        let expr = match o.key {
            OrderKey::Position(n) => match usize::try_from(n).ok().and_then(|n| n.checked_sub(1)) {
                Some(i) if i < columns.len() => columns[i].clone(),
                _ => return Err(at(o.position, format!("ORDER BY {n}: there are {} output columns", columns.len()))),
            },
            OrderKey::Expr(Expr::Ref(r))
                if r.qualifier.is_none()
                    && aliases.iter().any(|a| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&r.name))) =>
            {
                let i = aliases
                    .iter()
                    .position(|a| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(&r.name)))
                    .unwrap_or(0);
                columns[i].clone()
            }
            OrderKey::Expr(e) => scope.resolve(e, o.position)?,
        };
        order_by.push(PlanOrder { expr, descending: o.descending });
        order_positions.push(o.position);
    }
    let mut plan = SelectPlan {
        tables: scope.tables.iter().map(|t| t.schema.info.id).collect(),
        column_types: columns.iter().map(expr_type).collect(),
        columns,
        filter,
        name_patterns: Vec::new(),
        order_by,
        distinct: sel.distinct,
        limit: sel.limit,
        after: None,
        access: EntryAccess::new(who, vec![READ; scope.tables.len()]),
        group_by,
        having: having.as_ref().map(|(e, _)| e.clone()),
        offset: sel.offset,
    };
    if plan.is_grouped() {
        for (c, (h, p)) in plan.columns.iter().zip(headers.iter().zip(&positions)) {
            if !grouped_ok(c, &plan.group_by) {
                return Err(at(*p, format!("{h} must be in GROUP BY or inside an aggregate")));
            }
        }
        if let Some((h, p)) = &having
            && !grouped_ok(h, &plan.group_by)
        {
            return Err(at(*p, "HAVING may use GROUP BY columns and aggregates only"));
        }
        for (o, p) in plan.order_by.iter().zip(&order_positions) {
            if !grouped_ok(&o.expr, &plan.group_by) {
                return Err(at(*p, "ORDER BY of a grouped query may use GROUP BY columns and aggregates only"));
            }
        }
    }
    // Aggregates are not allowed in GROUP BY (column names only, checked by the parser) nor
    // in WHERE (checked by `condition`).
    plan.column_types = plan.columns.iter().map(expr_type).collect();
    Ok((plan, headers))
}
