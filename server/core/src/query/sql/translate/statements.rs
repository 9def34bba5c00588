//! Statements of the native SQL subset: SELECT (with joins, grouping, ordering, limits), INSERT,
//! UPDATE and DELETE, from `sqlparser`'s tree to [`super::super::Statement`]. Must not know schemas;
//! expressions are translated by `expr`.

use super::*;

impl Cx<'_> {
    // ---- statements ----

    pub(super) fn select(&self, query: q::Query, headers: Vec<String>) -> R<Select> {
        let loc = self.start;
        let q::Query {
            with,
            body,
            order_by,
            limit_clause,
            fetch,
            locks,
            for_clause,
            settings,
            format_clause,
            pipe_operators,
        } = query;
        self.refuse(with.is_some(), loc, "WITH")?;
        self.refuse(fetch.is_some(), loc, "FETCH")?;
        self.refuse(!locks.is_empty() || for_clause.is_some(), loc, "FOR …")?;
        self.refuse(settings.is_some() || format_clause.is_some() || !pipe_operators.is_empty(), loc, "this clause")?;
        let select = match *body {
            q::SetExpr::Select(s) => *s,
            q::SetExpr::SetOperation { right, .. } => {
                let at = match &*right {
                    q::SetExpr::Select(s) => s.select_token.0.span.start,
                    _ => loc,
                };
                return Err(self.unsupported(at, "UNION, INTERSECT and EXCEPT"));
            }
            _ => return Err(self.unsupported(loc, "this query form")),
        };
        let q::Select {
            select_token,
            optimizer_hints,
            distinct,
            select_modifiers,
            top,
            projection,
            exclude,
            into,
            from,
            lateral_views,
            prewhere,
            selection,
            connect_by,
            group_by,
            cluster_by,
            distribute_by,
            sort_by,
            having,
            named_window,
            qualify,
            value_table_mode,
            flavor,
            ..
        } = select;
        let sloc = select_token.0.span.start;
        self.refuse(
            !optimizer_hints.is_empty()
                || select_modifiers.is_some()
                || top.is_some()
                || exclude.is_some()
                || into.is_some()
                || !lateral_views.is_empty()
                || prewhere.is_some()
                || !connect_by.is_empty()
                || !cluster_by.is_empty()
                || !distribute_by.is_empty()
                || !sort_by.is_empty()
                || !named_window.is_empty()
                || qualify.is_some()
                || value_table_mode.is_some()
                || !matches!(flavor, q::SelectFlavor::Standard),
            sloc,
            "this SELECT clause",
        )?;
        let distinct = match distinct {
            None | Some(q::Distinct::All) => false,
            Some(q::Distinct::Distinct) => true,
            Some(q::Distinct::On(_)) => return Err(self.unsupported(sloc, "DISTINCT ON")),
        };
        let mut items = Vec::new();
        for (i, item) in projection.into_iter().enumerate() {
            let iloc = match &item {
                q::SelectItem::UnnamedExpr(e) | q::SelectItem::ExprWithAlias { expr: e, .. } => self.leftmost(e),
                q::SelectItem::Wildcard(o) | q::SelectItem::QualifiedWildcard(_, o) => o.wildcard_token.0.span.start,
                q::SelectItem::ExprWithAliases { expr, .. } => self.leftmost(expr),
            };
            let position = self.offset(iloc);
            let written = headers.get(i).cloned().unwrap_or_default();
            items.push(match item {
                q::SelectItem::UnnamedExpr(e) => match self.wildcard_path(&e) {
                    Some(qualifier) => SelectItem::Wildcard { qualifier: Some(qualifier), position },
                    None => SelectItem::Expr { expr: self.expr(e, 0)?, header: written, alias: None, position },
                },
                q::SelectItem::ExprWithAlias { expr, alias } => SelectItem::Expr {
                    expr: self.expr(expr, 0)?,
                    header: alias.value.clone(),
                    alias: Some(alias.value),
                    position,
                },
                q::SelectItem::Wildcard(opts) => {
                    self.plain_wildcard(&opts, iloc)?;
                    SelectItem::Wildcard { qualifier: None, position }
                }
                q::SelectItem::QualifiedWildcard(kind, opts) => {
                    self.plain_wildcard(&opts, iloc)?;
                    let q::SelectItemQualifiedWildcardKind::ObjectName(name) = kind else {
                        return Err(self.unsupported(iloc, "this wildcard"));
                    };
                    let qualifier = match name.0.as_slice() {
                        [q::ObjectNamePart::Identifier(id)] => {
                            match self.scanned.path_at(id.span.start.line, id.span.start.column) {
                                Some(p) if id.quote_style.is_none() => match &p.kind {
                                    PathKind::Path(path) => Qualifier::Path(path.clone()),
                                    PathKind::Column { .. } => return Err(self.unsupported(iloc, "this wildcard")),
                                },
                                _ => Qualifier::Name(id.value.clone()),
                            }
                        }
                        _ => return Err(self.unsupported(iloc, "this wildcard")),
                    };
                    SelectItem::Wildcard { qualifier: Some(qualifier), position }
                }
                q::SelectItem::ExprWithAliases { .. } => return Err(self.unsupported(iloc, "several aliases")),
            });
        }
        if from.is_empty() {
            return Err(self.err(sloc, "SELECT needs FROM and a collection"));
        }
        let mut tables = Vec::new();
        let mut filters = Vec::new();
        for t in from {
            tables.push(self.table_factor(t.relation)?);
            for j in t.joins {
                let jloc = factor_loc(&j.relation).unwrap_or(self.start);
                self.refuse(j.global, jloc, "GLOBAL JOIN")?;
                match j.join_operator {
                    q::JoinOperator::Join(c) | q::JoinOperator::Inner(c) => match c {
                        q::JoinConstraint::On(e) => filters.push(self.located(e)?),
                        q::JoinConstraint::None => {}
                        _ => return Err(self.unsupported(jloc, "USING and NATURAL joins")),
                    },
                    q::JoinOperator::CrossJoin(q::JoinConstraint::None) => {}
                    _ => return Err(self.err(jloc, "only inner joins are native SQL (outer joins are not)")),
                }
                tables.push(self.table_factor(j.relation)?);
            }
        }
        if let Some(w) = selection {
            filters.push(self.located(w)?);
        }
        let group_by = match group_by {
            q::GroupByExpr::Expressions(exprs, modifiers) => {
                self.refuse(!modifiers.is_empty(), sloc, "GROUP BY modifiers")?;
                exprs
                    .into_iter()
                    .map(|e| {
                        let at = self.leftmost(&e);
                        let position = self.offset(at);
                        match self.column_ref(&e)? {
                            Some(r) => Ok(Located { value: r, position }),
                            None => Err(self.err(at, "GROUP BY takes column names")),
                        }
                    })
                    .collect::<R<Vec<_>>>()?
            }
            q::GroupByExpr::All(_) => return Err(self.unsupported(sloc, "GROUP BY ALL")),
        };
        let having = having.map(|h| self.located(h)).transpose()?;
        let mut order = Vec::new();
        if let Some(ob) = order_by {
            self.refuse(ob.interpolate.is_some(), loc, "INTERPOLATE")?;
            let q::OrderByKind::Expressions(list) = ob.kind else {
                return Err(self.unsupported(loc, "ORDER BY ALL"));
            };
            for o in list {
                let at = self.leftmost(&o.expr);
                self.refuse(o.with_fill.is_some(), at, "WITH FILL")?;
                self.refuse(o.options.nulls_first.is_some(), at, "NULLS FIRST/LAST")?;
                let descending = match o.options.sort {
                    None | Some(q::OrderBySort::Asc) => false,
                    Some(q::OrderBySort::Desc) => true,
                    Some(_) => return Err(self.unsupported(at, "ORDER BY … USING")),
                };
                let key = match literal_int(&o.expr) {
                    Some(n) => OrderKey::Position(n),
                    None => OrderKey::Expr(self.expr(o.expr, 0)?),
                };
                order.push(OrderItem { key, descending, position: self.offset(at) });
            }
        }
        let (mut limit, mut offset) = (None, None);
        match limit_clause {
            None => {}
            Some(q::LimitClause::LimitOffset { limit: l, offset: o, limit_by }) => {
                self.refuse(!limit_by.is_empty(), loc, "LIMIT BY")?;
                if let Some(l) = l {
                    limit = Some(self.count(&l, "LIMIT")?);
                }
                if let Some(o) = o {
                    offset = Some(self.count(&o.value, "OFFSET")?);
                }
            }
            Some(q::LimitClause::OffsetCommaLimit { offset: o, .. }) => {
                return Err(self.unsupported(self.leftmost(&o), "LIMIT <offset>, <count> (write LIMIT n OFFSET m)"));
            }
        }
        Ok(Select { distinct, items, from: tables, filters, group_by, having, order_by: order, limit, offset })
    }

    fn count(&self, e: &q::Expr, what: &str) -> R<u64> {
        literal_int(e).ok_or_else(|| self.err(self.leftmost(e), format!("{what} takes a non-negative integer")))
    }

    fn plain_wildcard(&self, o: &q::WildcardAdditionalOptions, loc: Location) -> R<()> {
        self.refuse(
            o.opt_ilike.is_some()
                || o.opt_exclude.is_some()
                || o.opt_except.is_some()
                || o.opt_replace.is_some()
                || o.opt_rename.is_some()
                || o.opt_alias.is_some(),
            loc,
            "this wildcard option",
        )
    }

    /// `/dir:*` and `/dir.*` in the select list.
    fn wildcard_path(&self, e: &q::Expr) -> Option<Qualifier> {
        let q::Expr::Identifier(id) = e else { return None };
        let p = self.scanned.path_at(id.span.start.line, id.span.start.column)?;
        match &p.kind {
            PathKind::Column { dir, attr } if attr == "*" => Some(Qualifier::Path(dir.clone())),
            PathKind::Path(path) => path.strip_suffix(".*").map(|d| Qualifier::Path(d.to_string())),
            _ => None,
        }
    }

    pub(super) fn insert(&self, ins: q::Insert) -> R<Insert> {
        let loc = ins.insert_token.0.span.start;
        let q::TableObject::TableName(name) = &ins.table else {
            return Err(self.unsupported(loc, "INSERT INTO a function"));
        };
        self.refuse(
            ins.or.is_some()
                || ins.ignore
                || ins.table_alias.is_some()
                || ins.overwrite
                || !ins.assignments.is_empty()
                || ins.partitioned.is_some()
                || !ins.after_columns.is_empty()
                || ins.overriding.is_some()
                || ins.has_table_keyword
                || ins.on.is_some()
                || ins.returning.is_some()
                || ins.output.is_some()
                || ins.replace_into
                || ins.priority.is_some()
                || ins.insert_alias.is_some()
                || ins.settings.is_some()
                || ins.format_clause.is_some()
                || !ins.optimizer_hints.is_empty()
                || ins.by_name,
            loc,
            "this INSERT clause",
        )?;
        let (path, position) = self.table_name(name)?;
        let table = TableRef { path, alias: None, position };
        let columns = if ins.columns.is_empty() {
            None
        } else {
            let mut cols = Vec::new();
            for c in &ins.columns {
                let cloc = c.span().start;
                match c.0.as_slice() {
                    [q::ObjectNamePart::Identifier(id)] => {
                        cols.push(Located { value: id.value.clone(), position: self.offset(cloc) })
                    }
                    _ => return Err(self.err(cloc, "INSERT names attributes of its collection")),
                }
            }
            Some(cols)
        };
        let Some(source) = ins.source else {
            return Err(self.err(loc, "INSERT needs VALUES"));
        };
        let sloc = loc;
        let q::Query { with, body, order_by, limit_clause, fetch, .. } = *source;
        self.refuse(
            with.is_some() || order_by.is_some() || limit_clause.is_some() || fetch.is_some(),
            sloc,
            "this clause",
        )?;
        let q::SetExpr::Values(values) = *body else {
            return Err(self.unsupported(sloc, "INSERT … SELECT"));
        };
        let mut rows = Vec::new();
        for row in values.rows {
            let mut out = Vec::new();
            for v in row.content {
                let at = self.leftmost(&v);
                let lit = match v {
                    q::Expr::Value(v) => self.literal(&v, false)?,
                    q::Expr::UnaryOp { op: q::UnaryOperator::Minus, expr } => match *expr {
                        q::Expr::Value(v) => self.literal(&v, true)?,
                        _ => return Err(self.err(at, "INSERT values are literals")),
                    },
                    _ => return Err(self.err(at, "INSERT values are literals")),
                };
                out.push(Located { value: lit, position: self.offset(at) });
            }
            rows.push(out);
        }
        Ok(Insert { table, columns, rows })
    }

    pub(super) fn update(&self, up: q::Update) -> R<Update> {
        let loc = up.update_token.0.span.start;
        self.refuse(
            up.from.is_some()
                || up.returning.is_some()
                || up.output.is_some()
                || up.or.is_some()
                || !up.order_by.is_empty()
                || up.limit.is_some()
                || up.on_cluster.is_some()
                || up.settings.is_some()
                || !up.optimizer_hints.is_empty(),
            loc,
            "this UPDATE clause",
        )?;
        let table = self.single_table(up.table, "UPDATE")?;
        let mut assignments = Vec::new();
        for a in up.assignments {
            let q::AssignmentTarget::ColumnName(name) = &a.target else {
                return Err(self.unsupported(a.target.span().start, "a tuple assignment"));
            };
            let nloc = name.span().start;
            let attr = match name.0.as_slice() {
                [q::ObjectNamePart::Identifier(id)] => id.value.clone(),
                // `SET alias.attr = …`: the qualifier can only be the updated table.
                [q::ObjectNamePart::Identifier(t), q::ObjectNamePart::Identifier(id)]
                    if table.alias.as_deref().is_some_and(|al| al.eq_ignore_ascii_case(&t.value)) =>
                {
                    id.value.clone()
                }
                _ => return Err(self.err(nloc, "SET names attributes of the updated collection")),
            };
            assignments.push((Located { value: attr, position: self.offset(nloc) }, self.located(a.value)?));
        }
        let filter = up.selection.map(|w| self.located(w)).transpose()?;
        Ok(Update { table, assignments, filter })
    }

    pub(super) fn delete(&self, del: q::Delete) -> R<Delete> {
        let loc = del.delete_token.0.span.start;
        self.refuse(
            !del.tables.is_empty()
                || del.using.is_some()
                || del.returning.is_some()
                || del.output.is_some()
                || !del.order_by.is_empty()
                || del.limit.is_some()
                || del.on_cluster.is_some()
                || del.settings.is_some()
                || !del.optimizer_hints.is_empty(),
            loc,
            "this DELETE clause",
        )?;
        let from = match del.from {
            q::FromTable::WithFromKeyword(f) => f,
            q::FromTable::WithoutKeyword(_) => return Err(self.err(loc, "write DELETE FROM <collection>")),
        };
        let mut from = from.into_iter();
        let (Some(t), None) = (from.next(), from.next()) else {
            return Err(self.err(loc, "DELETE names one collection"));
        };
        let table = self.single_table(t, "DELETE")?;
        let filter = del.selection.map(|w| self.located(w)).transpose()?;
        Ok(Delete { table, filter })
    }
}
