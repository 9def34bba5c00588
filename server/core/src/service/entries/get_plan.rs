//! A session's last `getattr` plan, kept for the next `getattr` of the same shape: a job system
//! reads entry after entry of one collection with one attribute list, and resolving sixty
//! attribute names, building the plan and having the store compare it with its statement
//! templates was a tenth of such a read's work. Owns the rule for when a kept plan may serve
//! (same collection, same schema, same caller, same names); it runs nothing.

use std::sync::Arc;

use super::{col, pseudo_or_attr};
use crate::error::Result;
use crate::perm::{Principal, READ};
use crate::query::Column;
use crate::query::ast::OrderItem;
use crate::store::{Attributes, EntryAccess, SelectPlan, ShapeId};
use crate::types::ValueType;

/// A `getattr` plan without its entry name, and what it was made from.
pub(crate) struct GetPlan {
    collection: i64,
    /// The schema the names were resolved against: a schema change (or a re-read of it) gives
    /// the store's cache a new `Arc`, so holding this one keeps its address from being reused.
    schema: Attributes,
    principal: Principal,
    names: Vec<String>,
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
        names: &[String],
    ) -> Result<GetPlan> {
        let mut columns = Vec::with_capacity(names.len() + 1);
        columns.push(col(0, Column::File, ValueType::Text));
        let mut types = Vec::with_capacity(names.len() + 1);
        types.push(ValueType::Text);
        let mut hint = 0;
        for n in names {
            let (c, vt) = pseudo_or_attr(&schema, &mut hint, path, n)?;
            columns.push(col(0, c, vt));
            types.push(vt);
        }
        let mut plan = SelectPlan::of_collection(collection, columns, types, EntryAccess::new(who, vec![READ]));
        plan.order_by = vec![OrderItem { expr: col(0, Column::File, ValueType::Text), descending: false }];
        Ok(GetPlan { collection, schema, principal: who.clone(), names: names.to_vec(), shape: ShapeId::fresh(), plan })
    }

    /// Whether this plan is the one [`GetPlan::new`] would make for these arguments.
    pub(crate) fn serves(&self, collection: i64, schema: &Attributes, who: &Principal, names: &[String]) -> bool {
        self.collection == collection
            && Arc::ptr_eq(&self.schema, schema)
            && self.principal == *who
            && self.names == names
    }

    /// The plan reading the entries matching `patterns`, and its shape id.
    pub(crate) fn with_names(&mut self, patterns: impl Iterator<Item = (usize, String)>) -> (&SelectPlan, ShapeId) {
        self.plan.name_patterns.clear();
        self.plan.name_patterns.extend(patterns);
        (&self.plan, self.shape)
    }
}
