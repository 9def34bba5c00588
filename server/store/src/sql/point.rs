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
//! A plan that comes with a [`ShapeId`] finds its template by the id alone once the id has been
//! seen (the service promises equal plans for one id), skipping the comparison of its sixty
//! columns; the first plan of an id is compared as any other.

use foldhash::HashMap;
use std::sync::Arc;

use ardacat_core::query::Term;
use ardacat_core::query::ast::{Expr, OrderItem};
use ardacat_core::store::{SelectPlan, ShapeId};
use ardacat_core::types::{Value, ValueType};

use super::Dialect;
use super::compile::{Compiled, compile_select, literal_of_like};

/// Templates kept at most; past it the cache starts again (a miss costs one compilation).
pub const MAX_TEMPLATES: usize = 256;
/// Shape ids remembered at most (one per session that reads by point); past it the index starts
/// again, and a forgotten id is found by comparison once more.
pub const MAX_SHAPES: usize = 4096;

const SENTINELS: [&str; 2] = ["ardacat point sentinel one", "ardacat point sentinel two"];

/// A compiled point read with the entry name's parameter slots open.
#[derive(Debug)]
struct Template {
    plan: SelectPlan,
    sql: Arc<str>,
    params: Vec<Value>,
    name_slots: Vec<usize>,
    types: Vec<ValueType>,
}

/// A point read ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSql {
    pub sql: Arc<str>,
    pub params: Vec<Value>,
    pub types: Vec<ValueType>,
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
            return PointSql { sql: t.sql.clone(), params, types: t.types.clone() };
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
    PointSql { sql: c.sql.into(), params: c.params, types: c.types }
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
    Some(Template { plan: named(plan, ""), sql: a.sql.into(), params: a.params, name_slots, types: a.types })
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
}
