//! The SQL of a point read (`getattr` of one named entry), compiled once per plan shape: plans
//! that differ only in the entry's name share one statement text and differ in one parameter.
//! A pure cache over [`compile_select`]: it never builds SQL itself, and a template is kept only
//! after it has been shown to reproduce `compile_select` exactly. Must not run statements.
//!
//! A template is made from three compilations of the plan: with two sentinel names and with the
//! real one. The three texts must be identical and the parameters must differ exactly where the
//! name went (the slots); every other parameter is then a function of the rest of the plan. A
//! later plan uses the template only if it equals the template's plan in every field but the
//! name (an exhaustive comparison, so a new field of `SelectPlan` must be considered here), and
//! only plans whose other parameters cannot differ while comparing equal are taken: plain
//! column lists and orders, no filter, no keyset, no grouping (no literals, whose floats compare
//! `0.0 == -0.0`).
//!
//! On PostgreSQL a template also carries a [`PointBatch`]: the statements that answer several
//! point reads of the template at once (`t0.file IN (…)`, from [`compile_select_names`]), found
//! and checked the same way (sentinel names, every other parameter equal), for the store's
//! point lane (`catalog::point_lane`) to run when reads of one template queue up.
//!
//! A plan that comes with a [`ShapeId`] finds its template by the id alone once the id has been
//! seen (the service promises equal plans for one id), skipping the comparison of its sixty
//! columns; the first plan of an id is compared as any other.

use foldhash::HashMap;
use std::sync::Arc;

use ardacat_core::query::ast::{Expr, OrderItem};
use ardacat_core::query::{Column, Term};
use ardacat_core::store::{SelectPlan, ShapeId};
use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::{Compiled, compile_select, compile_select_names, literal_of_like};

/// Templates kept at most; past it the cache starts again (a miss costs one compilation).
pub const MAX_TEMPLATES: usize = 256;
/// Shape ids remembered at most (one per session that reads by point); past it the index starts
/// again, and a forgotten id is found by comparison once more.
pub const MAX_SHAPES: usize = 4096;

const SENTINELS: [&str; 2] = ["ardacat point sentinel one", "ardacat point sentinel two"];

/// Names one batch statement reads at most, and the sizes its statements come in: a batch of
/// `n` names runs the statement of the smallest size ≥ `n`, its last name repeated in the slots
/// left over (so a template has five statements, not thirty-two).
pub const BATCH_SIZES: [usize; 5] = [2, 4, 8, 16, 32];
/// The largest of [`BATCH_SIZES`].
pub const MAX_BATCH: usize = BATCH_SIZES[BATCH_SIZES.len() - 1];

/// A compiled point read with the entry name's parameter slots open.
#[derive(Debug)]
struct Template {
    plan: SelectPlan,
    sql: Arc<str>,
    params: Vec<Value>,
    name_slots: Vec<usize>,
    types: Vec<ValueType>,
    batch: Option<Arc<PointBatch>>,
}

/// A point read ready to run.
#[derive(Debug, Clone)]
pub struct PointSql {
    pub sql: Arc<str>,
    pub params: Vec<Value>,
    pub types: Vec<ValueType>,
    /// How this read may be answered together with others of its template (PostgreSQL; not on
    /// the first read of a template, which makes it).
    pub batch: Option<Batchable>,
}

/// A point read's place in a batch: its template's statements and its entry's name.
#[derive(Debug, Clone)]
pub struct Batchable {
    pub family: Arc<PointBatch>,
    pub name: String,
}

/// The statements reading several entries of one template by name (module docs). Rows come
/// back with the template's columns and types; a row's entry name is its value at
/// [`PointBatch::name_column`], and a name has one row at most (names are unique in a table).
#[derive(Debug)]
pub struct PointBatch {
    /// Unique in the process (a new template gets a new id): the lane groups reads by it.
    pub id: u64,
    /// Where a row carries its entry's name (the order key `t0.file`).
    pub name_column: usize,
    pub types: Vec<ValueType>,
    /// One per size of [`BATCH_SIZES`], in that order.
    statements: Vec<BatchStatement>,
}

#[derive(Debug)]
struct BatchStatement {
    sql: Arc<str>,
    params: Vec<Value>,
    /// The parameters that carry the names, in the order of the names.
    slots: Vec<usize>,
}

impl PointBatch {
    /// The statement reading `names` (2 to [`MAX_BATCH`] of them): its text and parameters.
    pub fn statement(&self, names: &[&str]) -> (Arc<str>, Vec<Value>) {
        assert!((2..=MAX_BATCH).contains(&names.len()), "a batch of {} names", names.len());
        let size = BATCH_SIZES.iter().position(|&k| k >= names.len()).unwrap_or(BATCH_SIZES.len() - 1);
        let st = &self.statements[size];
        let mut params = st.params.clone();
        let last = names[names.len() - 1];
        for (j, &slot) in st.slots.iter().enumerate() {
            params[slot] = Value::Text(names.get(j).copied().unwrap_or(last).to_string());
        }
        (st.sql.clone(), params)
    }
}

impl PartialEq for PointSql {
    /// The statement and its values; whether it may be batched is not part of what it reads.
    fn eq(&self, other: &PointSql) -> bool {
        self.sql == other.sql && self.params == other.params && self.types == other.types
    }
}

/// Templates of one store (one dialect).
#[derive(Debug, Default)]
pub struct PointCache {
    templates: Vec<Template>,
    /// The template of each shape id seen (an index into `templates`).
    shapes: HashMap<ShapeId, usize>,
    /// Compilations answered from a template (for tests and curiosity).
    pub hits: u64,
}

impl PointCache {
    /// The statement of `plan`: from a template when one fits, else compiled (and a template
    /// made when the plan's shape allows one). `shape`: see [`ShapeId`] — a template that has
    /// seen the id is taken without comparing the plan.
    pub fn compile(&mut self, d: Dialect, plan: &SelectPlan, shape: Option<ShapeId>) -> PointSql {
        let Some(name) = exact_name(plan) else { return plain(compile_select(d, plan)) };
        let known = shape.and_then(|id| self.shapes.get(&id).copied());
        let found = known.or_else(|| {
            let i = self.templates.iter().position(|t| same_but_name(&t.plan, plan))?;
            self.remember(shape, i);
            Some(i)
        });
        if let Some(t) = found.map(|i| &self.templates[i]) {
            self.hits += 1;
            let mut params = t.params.clone();
            for &i in &t.name_slots {
                params[i] = Value::Text(name.clone());
            }
            let batch = t.batch.as_ref().map(|family| Batchable { family: family.clone(), name });
            return PointSql { sql: t.sql.clone(), params, types: t.types.clone(), batch };
        }
        let real = compile_select(d, plan);
        if let Some(t) = template(d, plan, &name, &real) {
            if self.templates.len() >= MAX_TEMPLATES {
                self.templates.clear();
                self.shapes.clear();
            }
            self.templates.push(t);
            self.remember(shape, self.templates.len() - 1);
        }
        plain(real)
    }

    /// Note that plans of id `shape` (if any) use template `template`.
    fn remember(&mut self, shape: Option<ShapeId>, template: usize) {
        if let Some(id) = shape {
            if self.shapes.len() >= MAX_SHAPES {
                self.shapes.clear();
            }
            self.shapes.insert(id, template);
        }
    }
}

fn plain(c: Compiled) -> PointSql {
    PointSql { sql: c.sql.into(), params: c.params, types: c.types, batch: None }
}

/// The entry name of a plan a template may serve: one exact name (no wildcard) on table 0, and
/// nothing whose parameters could differ between plans that compare equal.
fn exact_name(plan: &SelectPlan) -> Option<String> {
    let column = |e: &Expr<Term>| matches!(e, Expr::Ref(Term::Column { .. }));
    let simple = plan.filter.is_none()
        && plan.having.is_none()
        && plan.group_by.is_empty()
        && plan.after.is_none()
        && plan.columns.iter().all(column)
        && plan.order_by.iter().all(|o: &OrderItem<Term>| column(&o.expr));
    match plan.name_patterns.as_slice() {
        [(0, pattern)] if simple => literal_of_like(pattern),
        _ => None,
    }
}

/// `plan` with its (exact) name pattern replaced.
fn named(plan: &SelectPlan, name: &str) -> SelectPlan {
    let mut p = plan.clone();
    p.name_patterns = vec![(0, name.to_string())];
    p
}

fn template(d: Dialect, plan: &SelectPlan, name: &str, real: &Compiled) -> Option<Template> {
    let [a, b] = SENTINELS.map(|s| compile_select(d, &named(plan, s)));
    if a.sql != b.sql || a.sql != real.sql || a.params.len() != b.params.len() || a.params.len() != real.params.len() {
        return None;
    }
    let mut name_slots = Vec::new();
    for (i, (pa, pb)) in a.params.iter().zip(&b.params).enumerate() {
        match (pa, pb) {
            (Value::Text(x), Value::Text(y)) if x == SENTINELS[0] && y == SENTINELS[1] => name_slots.push(i),
            (x, y) if x == y => {}
            // A parameter that depends on the name in some other way: no template.
            _ => return None,
        }
    }
    // The template filled with the real name must be what compile_select gave for it.
    let mut filled = a.params.clone();
    for &i in &name_slots {
        filled[i] = Value::Text(name.to_string());
    }
    if name_slots.is_empty() || filled != real.params || a.types != real.types {
        return None;
    }
    let batch = batch(d, plan, &a.types).map(Arc::new);
    Some(Template { plan: named(plan, ""), sql: a.sql.into(), params: a.params, name_slots, types: a.types, batch })
}

/// The batch statements of a template's plan, if its reads may be answered together: on
/// PostgreSQL (a round trip saved per read; SQLite has none to save), one table, no limit,
/// offset or `DISTINCT` (which would apply to the batch, not to each name), and the entry name
/// among the order keys (so each row says whose it is). Each size is checked as the template
/// is: identical texts for two lists of sentinel names, which differ exactly in one parameter
/// per name, in order, every other parameter equal, and the template's row types.
fn batch(d: Dialect, plan: &SelectPlan, types: &[ValueType]) -> Option<PointBatch> {
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if d != Dialect::Postgres
        || plan.tables.len() != 1
        || plan.limit.is_some()
        || plan.offset.is_some()
        || plan.distinct
    {
        return None;
    }
    let is_name =
        |o: &OrderItem<Term>| matches!(o.expr, Expr::Ref(Term::Column { table: 0, column: Column::File, .. }));
    let name_column = plan.columns.len() + plan.order_keys().iter().position(is_name)?;
    if types.get(name_column) != Some(&ValueType::Text) {
        return None;
    }
    let mut statements = Vec::with_capacity(BATCH_SIZES.len());
    for k in BATCH_SIZES {
        let lists = SENTINELS.map(|s| (0..k).map(|j| format!("{s} {j}")).collect::<Vec<String>>());
        let a = compile_select_names(d, plan, &lists[0])?;
        let b = compile_select_names(d, plan, &lists[1])?;
        if a.sql != b.sql || a.params.len() != b.params.len() || a.types != types {
            return None;
        }
        let mut slots = Vec::with_capacity(k);
        for (i, (pa, pb)) in a.params.iter().zip(&b.params).enumerate() {
            let j = slots.len();
            match (pa, pb) {
                (Value::Text(x), Value::Text(y)) if j < k && *x == lists[0][j] && *y == lists[1][j] => slots.push(i),
                (x, y) if x == y => {}
                _ => return None,
            }
        }
        if slots.len() != k {
            return None;
        }
        statements.push(BatchStatement { sql: a.sql.into(), params: a.params, slots });
    }
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Some(PointBatch { id, name_column, types: types.to_vec(), statements })
}

/// Every field equal, the name pattern's table included, its text aside.
fn same_but_name(template: &SelectPlan, plan: &SelectPlan) -> bool {
    // Exhaustive on purpose: a new field must be compared here (or the compiler says so).
    let SelectPlan {
        tables,
        columns,
        column_types,
        filter,
        name_patterns,
        order_by,
        distinct,
        limit,
        after,
        access,
        group_by,
        having,
        offset,
    } = template;
    *tables == plan.tables
        && *column_types == plan.column_types
        && *columns == plan.columns
        && *filter == plan.filter
        && name_patterns.len() == plan.name_patterns.len()
        && name_patterns.iter().zip(&plan.name_patterns).all(|(a, b)| a.0 == b.0)
        && *order_by == plan.order_by
        && *distinct == plan.distinct
        && *limit == plan.limit
        && *after == plan.after
        && *access == plan.access
        && *group_by == plan.group_by
        && *having == plan.having
        && *offset == plan.offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use ardacat_core::perm::Principal;
    use ardacat_core::query::Column;
    use ardacat_core::store::EntryAccess;

    fn col(column: Column, vtype: ValueType) -> Expr<Term> {
        Expr::Ref(Term::Column { table: 0, column, vtype })
    }

    /// The plan `getattr /c/<name> a1 a2` builds, for `who`.
    fn get_plan(name: &str, who: &Principal, attr2: i64) -> SelectPlan {
        let columns = vec![
            col(Column::File, ValueType::Text),
            col(Column::Attr(1), ValueType::Int),
            col(Column::Attr(attr2), ValueType::Float),
        ];
        let mut plan = SelectPlan::of_collection(
            7,
            columns,
            vec![ValueType::Text, ValueType::Int, ValueType::Float],
            EntryAccess::new(who, vec![4]),
        );
        plan.name_patterns = vec![(0, ardacat_core::path::glob_to_like(name))];
        plan.order_by = vec![OrderItem { expr: col(Column::File, ValueType::Text), descending: false }];
        plan
    }

    fn user(name: &str, groups: &[&str]) -> Principal {
        Principal { user: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), may_sudo: false }
    }

    #[test]
    fn a_template_gives_what_compile_select_gives() {
        let root = user("root", &[]);
        let alice = user("alice", &["atlas", "cms"]);
        // A user named like an entry: the name slot is found by position, not by value.
        let e1 = user("e1", &["e1"]);
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let mut cache = PointCache::default();
            for who in [&root, &alice, &e1] {
                for name in ["e1", "e_2", "100%", "it's", "e1", "Ω\\x", "ardacat point sentinel one", "e1"] {
                    let plan = get_plan(name, who, 2);
                    assert_eq!(cache.compile(d, &plan, None), plain(compile_select(d, &plan)), "{d:?} {name} {who:?}");
                }
            }
            assert!(cache.hits >= 3 * 7, "{} hits", cache.hits);
            assert_eq!(cache.templates.len(), 3, "one template per caller");
        }
    }

    #[test]
    fn other_shapes_are_compiled_and_not_confused() {
        let alice = user("alice", &["atlas"]);
        let d = Dialect::Postgres;
        let mut cache = PointCache::default();
        let base = get_plan("e1", &alice, 2);
        cache.compile(d, &base, None);
        // Another attribute, another caller, another group list, a pattern, a filter.
        let mut variants = vec![
            get_plan("e1", &alice, 3),
            get_plan("e1", &user("bob", &["atlas"]), 2),
            get_plan("e1", &user("alice", &["atlas", "cms"]), 2),
            get_plan("e*", &alice, 2),
        ];
        let mut filtered = base.clone();
        filtered.filter = Some(Expr::Lit(ardacat_core::query::ast::Literal::Float(-0.0)));
        variants.push(filtered);
        let mut limited = base.clone();
        limited.limit = Some(1);
        variants.push(limited);
        for v in &variants {
            assert_eq!(cache.compile(d, v, None), plain(compile_select(d, v)));
        }
        assert_eq!(cache.hits, 0, "no variant may use another shape's template");
    }

    #[test]
    fn a_known_shape_id_finds_its_template_without_comparing() {
        let alice = user("alice", &["atlas"]);
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let mut cache = PointCache::default();
            let (first, second) = (ShapeId::fresh(), ShapeId::fresh());
            for (name, id) in [("e1", first), ("e2", first), ("e3", second), ("e'4", second), ("e5", first)] {
                let plan = get_plan(name, &alice, 2);
                assert_eq!(cache.compile(d, &plan, Some(id)), plain(compile_select(d, &plan)), "{d:?} {name}");
            }
            assert_eq!(cache.templates.len(), 1, "one shape, one template");
            assert_eq!(
                cache.shapes,
                HashMap::from_iter([(first, 0), (second, 0)]),
                "the second id found by comparison"
            );
            // The id is trusted: a plan of another shape under a known id gets that id's
            // statement (which is why the service gives an id only to plans equal but for the name).
            let other = get_plan("e6", &alice, 3);
            let trusted = cache.compile(d, &other, Some(first));
            assert_eq!(trusted, plain(compile_select(d, &get_plan("e6", &alice, 2))));
            assert_ne!(trusted, plain(compile_select(d, &other)));
            // Without the id, or under a new one, it is compared and compiled as its own shape.
            assert_eq!(cache.compile(d, &other, Some(ShapeId::fresh())), plain(compile_select(d, &other)));
            assert_eq!(cache.templates.len(), 2);
        }
    }

    #[test]
    fn a_bounded_number_of_ids_is_remembered() {
        let alice = user("alice", &["atlas"]);
        let mut cache = PointCache::default();
        let ids: Vec<ShapeId> = (0..MAX_SHAPES + 5).map(|_| ShapeId::fresh()).collect();
        for id in &ids {
            cache.compile(Dialect::Sqlite, &get_plan("e1", &alice, 2), Some(*id));
        }
        assert_eq!(cache.templates.len(), 1);
        let kept: HashMap<ShapeId, usize> = ids[MAX_SHAPES..].iter().map(|id| (*id, 0)).collect();
        assert_eq!(cache.shapes, kept, "the index started again when full");
        // A forgotten id is found by comparison again, and remembered.
        let plan = get_plan("e2", &alice, 2);
        assert_eq!(cache.compile(Dialect::Sqlite, &plan, Some(ids[0])), plain(compile_select(Dialect::Sqlite, &plan)));
        assert_eq!(cache.shapes.get(&ids[0]), Some(&0));
    }

    fn texts(params: &[Value]) -> Vec<String> {
        params.iter().filter_map(|p| if let Value::Text(t) = p { Some(t.clone()) } else { None }).collect()
    }

    #[test]
    fn batch_statements_read_the_names_given_in_order() {
        let alice = user("alice", &["atlas", "cms"]);
        let mut cache = PointCache::default();
        cache.compile(Dialect::Postgres, &get_plan("e1", &alice, 2), None);
        let read = cache.compile(Dialect::Postgres, &get_plan("e2", &alice, 2), None);
        let batch = read.batch.expect("a PostgreSQL point read of one table is batchable");
        assert_eq!(batch.name, "e2");
        assert_eq!(batch.family.name_column, 3, "three columns, then the name as the order key");
        for n in 2..=MAX_BATCH {
            let names: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let (sql, params) = batch.family.statement(&refs);
            let size = BATCH_SIZES.into_iter().find(|&k| k >= n).unwrap();
            // Exactly what the compiler gives for the list padded with the last name.
            let mut padded = names.clone();
            padded.resize(size, names[n - 1].clone());
            let want = compile_select_names(Dialect::Postgres, &get_plan("e1", &alice, 2), &padded).unwrap();
            assert_eq!((&*sql, &params), (want.sql.as_str(), &want.params), "{n} names");
            assert_eq!(&texts(&params)[..size], &padded[..]);
        }
        // SQLite, a pattern, a limit: no batch.
        let mut sqlite = PointCache::default();
        for _ in 0..2 {
            assert!(sqlite.compile(Dialect::Sqlite, &get_plan("e1", &alice, 2), None).batch.is_none());
        }
        let mut limited = get_plan("e1", &alice, 2);
        limited.limit = Some(1);
        for _ in 0..2 {
            assert!(cache.compile(Dialect::Postgres, &limited, None).batch.is_none());
            assert!(cache.compile(Dialect::Postgres, &get_plan("e*", &alice, 2), None).batch.is_none());
        }
    }
}
