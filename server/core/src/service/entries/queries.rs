//! Queries by condition: `find`, `selectattr` and the keyset-paged `query_page` of iterator
//! frontends, with their `SelectSpec` and `QueryPage`. Must not write; plans come from the shared
//! `plan_from` and stream through `run_select` like every read.

use super::*;

/// What to read: `select` expressions (`/dir:attr`, `FILE`, arithmetic) and a condition.
#[derive(Debug, Clone, Default)]
pub struct SelectSpec {
    pub select: Vec<String>,
    pub condition: String,
    /// Appended to the condition's own `order by` (SOAP's `orderBy`).
    pub order_by: Option<String>,
}

/// One page of a keyset-paged query.
#[derive(Debug, Clone)]
pub struct QueryPage {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// The key of the last row, when more rows may follow.
    pub next: Option<Vec<Value>>,
}

impl SelectSpec {
    /// The query-language texts of the spec, for [`overflow_in`].
    fn texts(&self) -> Vec<Text<'_>> {
        let mut t: Vec<Text<'_>> = self.select.iter().map(|s| Text::Expr(s)).collect();
        t.push(Text::Condition(&self.condition));
        t.extend(self.order_by.as_deref().map(Text::Expr));
        t
    }
}

impl<S: Store> Catalogue<S> {
    /// `find <pattern> <condition>`: names of matching entries.
    pub async fn find<K: RowSink>(
        &self,
        s: &mut Session<S>,
        pattern: &str,
        condition: &str,
        sink: &mut K,
    ) -> Result<u64> {
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        let cond = query::parse_condition(condition).map_err(|e| Error::IllegalQuery(e.to_string()))?;
        self.read(s, async |conn| {
            let t = target(conn, &cwd, pattern).await?;
            let mut paths = Vec::new();
            query::resolve::condition_collections(&cond, &cwd, &mut paths)?;
            let scope = self.scope(conn, &who, &cwd, Some((t.coll.clone(), READ)), paths).await?;
            // Like getattr (after the permission check): a name without wildcards must exist, so a
            // mistyped directory is error 1 rather than an empty result.
            let access = EntryAccess::new(&who, vec![READ; scope.tables.len()]);
            if let Some(name) = &t.exact {
                let first = access.as_ref().map(|a| EntryAccess { needs: vec![READ], ..a.clone() });
                if !entry_visible(conn, t.coll.id, name, first).await? {
                    return Err(named_entry_error(conn, t.coll.id, &t.abs, name).await);
                }
            }
            let cond = scope.resolve_condition(cond)?;
            let mut plan =
                plan_from(&scope, vec![col(0, Column::File, ValueType::Text)], cond, t.like().collect(), true)?;
            plan.access = access;
            self.run_select(conn, &plan, sink).await
        })
        .await
        .map_err(|e| overflow_in(e, &[Text::Condition(condition)]))
    }

    /// `selectattr <expr>… <condition>`: rows of the expressions over the implicit join.
    pub async fn selectattr<K: RowSink>(&self, s: &mut Session<S>, spec: &SelectSpec, sink: &mut K) -> Result<u64> {
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.read(s, async |conn| {
            let plan = self.plan_select(conn, &who, &cwd, spec, None).await?;
            self.run_select(conn, &plan, sink).await
        })
        .await
        .map_err(|e| overflow_in(e, &spec.texts()))
    }

    async fn plan_select(
        &self,
        conn: &mut S::Conn,
        who: &Principal,
        cwd: &str,
        spec: &SelectSpec,
        after: Option<Vec<Value>>,
    ) -> Result<SelectPlan> {
        if spec.select.is_empty() {
            return Err(Error::IllegalCommand("nothing to select".into()));
        }
        let parse = |s: &str| query::parse_expr(s).map_err(|e| Error::IllegalQuery(format!("'{s}' {e}")));
        let exprs = spec.select.iter().map(|s| parse(s)).collect::<Result<Vec<_>>>()?;
        let mut cond = query::parse_condition(&spec.condition).map_err(|e| Error::IllegalQuery(e.to_string()))?;
        if let Some(o) = &spec.order_by
            && !o.trim().is_empty()
        {
            let extra =
                query::parse_condition(&format!("order by {o}")).map_err(|e| Error::IllegalQuery(e.to_string()))?;
            cond.order_by.extend(extra.order_by);
        }
        let mut paths = Vec::new();
        for e in &exprs {
            query::resolve::referenced_collections(e, cwd, &mut paths)?;
        }
        query::resolve::condition_collections(&cond, cwd, &mut paths)?;
        if paths.is_empty() {
            return Err(Error::IllegalQuery("name at least one collection (/dir:attr)".into()));
        }
        let scope = self.scope(conn, who, cwd, None, paths).await?;
        let columns = exprs.into_iter().map(|e| scope.resolve(e)).collect::<Result<Vec<_>>>()?;
        let cond = scope.resolve_condition(cond)?;
        let mut plan = plan_from(&scope, columns, cond, Vec::new(), false)?;
        plan.after = after;
        plan.access = EntryAccess::new(who, vec![READ; scope.tables.len()]);
        Ok(plan)
    }

    /// One page of a query, continuing strictly after `after` (a previous page's `next`).
    pub async fn query_page(
        &self,
        s: &mut Session<S>,
        spec: &SelectSpec,
        after: Option<Vec<Value>>,
        page_size: usize,
    ) -> Result<QueryPage> {
        let who = s.principal.clone();
        let cwd = s.cwd.clone();
        self.read(s, async |conn| {
            let mut plan = self.plan_select(conn, &who, &cwd, spec, after).await?;
            // A user `limit` is not honoured across pages; page through without one instead.
            plan.limit = None;
            let (rows, next) = collect_page(conn, plan, page_size).await?;
            Ok(QueryPage { columns: spec.select.clone(), rows, next })
        })
        .await
        .map_err(|e| overflow_in(e, &spec.texts()))
    }
}
