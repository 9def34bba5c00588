//! A session's last `getattr` plan, kept for the next `getattr` of the same shape: a job system
//! reads entry after entry of one collection with one attribute list, and resolving sixty
//! attribute names, building the plan and having the store compare it with its statement
//! templates was a tenth of such a read's work. Owns the rule for when a kept plan may serve
//! (same collection, same schema, same caller, same names); it runs nothing. Sessions made for
//! one request (a SOAP call, a web page) have no next command: their plans are lent from the
//! catalogue's [`SharedPlans`] instead, by the same rule.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{col, pseudo_or_attr};
use crate::error::Result;
use crate::perm::{Principal, READ};
use crate::query::Column;
use crate::query::ast::OrderItem;
use crate::service::Names;
use crate::store::{Attributes, EntryAccess, SelectPlan, ShapeId};
use crate::types::ValueType;

/// A `getattr` plan without its entry name, and what it was made from.
pub(crate) struct GetPlan {
    collection: i64,
    /// The schema the names were resolved against: a schema change (or a re-read of it) gives
    /// the store's cache a new `Arc`, so holding this one keeps its address from being reused.
    schema: Attributes,
    principal: Principal,
    /// The attribute names asked for (two allocations however many names).
    names: Names,
    /// Given to the store with every use: all uses differ only in the name patterns.
    shape: ShapeId,
    plan: SelectPlan,
}

impl GetPlan {
    /// The plan of `getattr` of `names` in collection `collection` (`path`, for messages) with
    /// schema `schema`, for `who`; its name patterns are set by [`GetPlan::with_names`].
    pub(crate) fn new(
        collection: i64,
        path: &str,
        schema: Attributes,
        who: &Principal,
        names: &Names,
    ) -> Result<GetPlan> {
        let plan = plan(collection, path, &schema, who, names, std::iter::empty())?;
        Ok(GetPlan { collection, schema, principal: who.clone(), names: names.clone(), shape: ShapeId::fresh(), plan })
    }

    /// Whether this plan is the one [`GetPlan::new`] would make for these arguments.
    pub(crate) fn serves(&self, collection: i64, schema: &Attributes, who: &Principal, names: &Names) -> bool {
        self.collection == collection
            && Arc::ptr_eq(&self.schema, schema)
            && self.principal == *who
            && self.names == *names
    }

    /// The plan reading the entries matching `patterns`, and its shape id.
    pub(crate) fn with_names(&mut self, patterns: impl Iterator<Item = (usize, String)>) -> (&SelectPlan, ShapeId) {
        self.plan.name_patterns.clear();
        self.plan.name_patterns.extend(patterns);
        (&self.plan, self.shape)
    }
}

/// Plans kept at most by [`SharedPlans`]; past it the least recently returned one goes. One per
/// shape per request running at the same time (a plan is lent to one request at a time).
pub(crate) const MAX_SHARED_PLANS: usize = 64;

/// `getattr` plans of the catalogue's one-request sessions: a SOAP client reading entry after
/// entry sends one request per entry, each on a new session, and building a sixty-attribute
/// plan (and having the store compare it with its statement templates, as a plan without a
/// kept [`ShapeId`] must) was about a tenth of such a request's instructions. A plan is taken
/// out while a request uses it, so requests running at once each get their own (or build one).
#[derive(Default)]
pub(crate) struct SharedPlans {
    /// Most recently returned first.
    plans: Mutex<VecDeque<GetPlan>>,
    /// Plans `getattr` used, by [`PlanSource`] (index `as usize`): whether the kept plans serve
    /// is otherwise visible only in instruction counts.
    used: [AtomicU64; 3],
}

/// Where the plan of one `getattr` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanSource {
    /// The session's own last plan (a TCP session reading entry after entry).
    Session,
    /// Lent from the catalogue's shelf to a one-request session (SOAP, web).
    Shared,
    /// Made anew: the first of its shape, or the shape changed.
    Built,
}

impl PlanSource {
    pub const ALL: [PlanSource; 3] = [PlanSource::Session, PlanSource::Shared, PlanSource::Built];
}

impl SharedPlans {
    /// Counts one `getattr` plan taken from `source`.
    pub(crate) fn count(&self, source: PlanSource) {
        self.used[source as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The plans counted so far from `source`.
    pub(crate) fn used(&self, source: PlanSource) -> u64 {
        self.used[source as usize].load(Ordering::Relaxed)
    }

    /// A kept plan that [`GetPlan::serves`] these arguments, taken out of the shelf.
    pub(crate) fn take(&self, collection: i64, schema: &Attributes, who: &Principal, names: &Names) -> Option<GetPlan> {
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        let i = plans.iter().position(|p| p.serves(collection, schema, who, names))?;
        plans.remove(i)
    }

    /// Puts back a plan taken (or built) for a request that is done with it.
    pub(crate) fn give_back(&self, plan: GetPlan) {
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if plans.len() >= MAX_SHARED_PLANS {
            plans.pop_back();
        }
        plans.push_front(plan);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.plans.lock().unwrap().len()
    }
}

/// The plan of `getattr` of `names` in collection `collection` (`path`, for messages) with
/// schema `schema`, for `who`, reading the entries matching `patterns`.
pub(crate) fn plan(
    collection: i64,
    path: &str,
    schema: &Attributes,
    who: &Principal,
    names: &Names,
    patterns: impl Iterator<Item = (usize, String)>,
) -> Result<SelectPlan> {
    let mut columns = Vec::with_capacity(names.len() + 1);
    columns.push(col(0, Column::File, ValueType::Text));
    let mut types = Vec::with_capacity(names.len() + 1);
    types.push(ValueType::Text);
    let mut hint = 0;
    for n in names.iter() {
        let (c, vt) = pseudo_or_attr(schema, &mut hint, path, n)?;
        columns.push(col(0, c, vt));
        types.push(vt);
    }
    let mut plan = SelectPlan::of_collection(collection, columns, types, EntryAccess::new(who, vec![READ]));
    plan.order_by = vec![OrderItem { expr: col(0, Column::File, ValueType::Text), descending: false }];
    plan.name_patterns.extend(patterns);
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::AttrDef;
    use crate::types::AttrType;

    fn a_schema() -> Attributes {
        ["a", "ab", "b"]
            .iter()
            .zip(1..)
            .map(|(n, id)| AttrDef { id, name: (*n).into(), attr_type: AttrType::Int, indexed: false })
            .collect::<Vec<_>>()
            .into()
    }

    fn names(v: &[&str]) -> Names {
        v.into()
    }

    #[test]
    fn serves_only_what_it_was_made_for() {
        let schema = a_schema();
        let alice = Principal { user: "alice".into(), groups: vec!["atlas".into()], may_sudo: false };
        let get = GetPlan::new(7, "/c", schema.clone(), &alice, &names(&["a", "b"])).unwrap();
        assert!(get.serves(7, &schema, &alice, &names(&["a", "b"])));
        // Names that join to the same text are still other names.
        assert!(!get.serves(7, &schema, &alice, &names(&["ab"])));
        assert!(!get.serves(7, &schema, &alice, &names(&["a", "b", ""])));
        assert!(!get.serves(7, &schema, &alice, &names(&["b", "a"])));
        assert!(!get.serves(7, &schema, &alice, &names(&["a"])));
        // The same schema's text in another `Arc`: re-read, so not trusted.
        assert!(!get.serves(7, &a_schema(), &alice, &names(&["a", "b"])));
        assert!(!get.serves(8, &schema, &alice, &names(&["a", "b"])));
        let mut other = alice.clone();
        other.groups.push("cms".into());
        assert!(!get.serves(7, &schema, &other, &names(&["a", "b"])));
    }

    /// A kept plan with its names set is the plan a one-request session builds each time.
    #[test]
    fn a_kept_plan_is_the_plan_built_once() {
        let schema = a_schema();
        let bob = Principal { user: "bob".into(), groups: vec![], may_sudo: false };
        let asked = names(&["b", "FILE", "A", "permissions"]);
        let mut get = GetPlan::new(7, "/c", schema.clone(), &bob, &asked).unwrap();
        for pattern in ["e1", "e%", "x"] {
            let once = plan(7, "/c", &schema, &bob, &asked, std::iter::once((0, pattern.to_string()))).unwrap();
            let (kept, _) = get.with_names(std::iter::once((0, pattern.to_string())));
            assert_eq!(format!("{kept:?}"), format!("{once:?}"));
        }
        let unknown = GetPlan::new(7, "/c", schema, &bob, &names(&["a", "nosuch"]));
        assert!(matches!(unknown, Err(crate::error::Error::NoSuchAttribute(m)) if m == "/c:nosuch"));
    }

    /// The shelf lends a plan to one request at a time, only for what it was made for, and
    /// keeps the most recently returned plans up to its bound.
    #[test]
    fn the_shelf_lends_each_plan_once_and_forgets_the_oldest() {
        let schema = a_schema();
        let bob = Principal { user: "bob".into(), groups: vec![], may_sudo: false };
        let ab = names(&["a", "b"]);
        let shelf = SharedPlans::default();
        assert!(shelf.take(7, &schema, &bob, &ab).is_none());
        shelf.give_back(GetPlan::new(7, "/c", schema.clone(), &bob, &ab).unwrap());
        assert!(shelf.take(7, &schema, &bob, &names(&["a"])).is_none());
        assert!(shelf.take(7, &a_schema(), &bob, &ab).is_none());
        let lent = shelf.take(7, &schema, &bob, &ab).expect("the plan given back");
        // Lent out: a request running at the same time builds its own.
        assert!(shelf.take(7, &schema, &bob, &ab).is_none());
        shelf.give_back(lent);
        for collection in 100..100 + MAX_SHARED_PLANS as i64 {
            shelf.give_back(GetPlan::new(collection, "/d", schema.clone(), &bob, &ab).unwrap());
        }
        assert_eq!(shelf.len(), MAX_SHARED_PLANS);
        assert!(shelf.take(7, &schema, &bob, &ab).is_none(), "the oldest plan is forgotten");
        assert!(shelf.take(100, &schema, &bob, &ab).is_some());
        assert!(shelf.take(99 + MAX_SHARED_PLANS as i64, &schema, &bob, &ab).is_some());
    }
}
