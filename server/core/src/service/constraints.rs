//! Constraints on the entries of a collection (AMGA's `constraint_add_not_null`, `_unique`,
//! `_reference`, `_check`, `constraint_drop`, `constraint_list`): validation, permission checks,
//! name resolution, compiling a check condition with the query compiler, and naming a violated
//! constraint. The storage side keeps the definitions and makes them database constraints; this
//! module must not contain SQL.

use super::{Catalogue, Session};
use crate::error::{Error, Result};
use crate::path;
use crate::perm::{READ, WRITE};
use crate::query::{self, Column, Scope, TableSchema, Term};
use crate::store::{ConstraintDef, ConstraintRule, IndexColumn, Store, StoreConn};

/// A constraint to add, as the commands give it (names and text, not yet resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewConstraint {
    NotNull {
        attr: String,
    },
    Unique {
        attr: String,
    },
    /// `referred` is `/dir:attr` (or `dir:attr` relative to the current directory; `attr` may be
    /// `FILE`, the entry name).
    Reference {
        attr: String,
        referred: String,
    },
    /// A condition in the query language over the collection's own attributes.
    Check {
        condition: String,
    },
}

/// One constraint as `constraint_list` shows it: `<name> <kind> <definition>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintInfo {
    pub name: String,
    pub kind: &'static str,
    /// `attr` (not_null, unique), `attr /dir:attr` (reference), the condition as given (check).
    pub definition: String,
}

impl ConstraintInfo {
    /// The line of `constraint_list`.
    pub fn line(&self) -> String {
        format!("{} {} {}", self.name, self.kind, self.definition)
    }
}

impl<S: Store> Catalogue<S> {
    /// `constraint_add_* <dir> … <name>`: a new constraint on the entries of `dir`. Needs write on
    /// the collection (like `addattr`); a reference also needs write on the referred collection,
    /// because it restricts what may be removed there. Refused (code 21, nothing added) when
    /// existing entries break it.
    pub async fn constraint_add(&self, s: &mut Session<S>, dir: &str, name: &str, new: &NewConstraint) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        if !path::valid_attr_name(name) {
            return Err(Error::IllegalCommand(format!("invalid constraint name '{name}'")));
        }
        let cwd = s.cwd.clone();
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            if conn.constraints(c.id).await?.iter().any(|k| k.name.eq_ignore_ascii_case(name)) {
                return Err(Error::Exists(format!("{abs}: constraint {name}")));
            }
            let attrs = conn.attributes(c.id).await?;
            let (rule, check, uses) = match new {
                NewConstraint::NotNull { attr } => {
                    let a = own_attr(&attrs, &abs, attr)?;
                    (ConstraintRule::NotNull { attr: a }, None, vec![a])
                }
                NewConstraint::Unique { attr } => {
                    let a = own_attr(&attrs, &abs, attr)?;
                    (ConstraintRule::Unique { attr: a }, None, vec![a])
                }
                NewConstraint::Reference { attr, referred } => {
                    let a = own_attr(&attrs, &abs, attr)?;
                    let (rdir, rattr) = referred
                        .rsplit_once(':')
                        .filter(|(d, a)| !d.is_empty() && !a.is_empty())
                        .ok_or_else(|| Error::IllegalCommand(format!("'{referred}' is not /dir:attr")))?;
                    let rabs = path::absolute(&cwd, rdir)?;
                    let r = Self::must_collection(conn, &rabs).await?;
                    Self::check(conn, &who, &r, WRITE).await?;
                    let rattrs = conn.attributes(r.id).await?;
                    let vtype = attrs.iter().find(|d| d.id == a).map(|d| d.attr_type.value_type());
                    let (column, rtype) = if rattr.eq_ignore_ascii_case("FILE") {
                        (IndexColumn::File, Some(crate::types::ValueType::Text))
                    } else {
                        let d = super::namespace::find_attr(&rattrs, &rabs, rattr)?;
                        // A reference must find exactly one entry: the referred attribute is unique.
                        let unique = conn
                            .constraints(r.id)
                            .await?
                            .iter()
                            .any(|k| matches!(k.rule, ConstraintRule::Unique { attr } if attr == d.id));
                        if !unique {
                            return Err(Error::IllegalCommand(format!(
                                "{rabs}:{} has no unique constraint; add one first (constraint_add_unique)",
                                d.name
                            )));
                        }
                        (IndexColumn::Attr(d.id), Some(d.attr_type.value_type()))
                    };
                    if vtype != rtype {
                        return Err(Error::IllegalCommand(format!(
                            "{abs}:{attr} and {rabs}:{rattr} have different types"
                        )));
                    }
                    let mut uses = vec![a];
                    if let IndexColumn::Attr(ra) = column {
                        uses.push(ra);
                    }
                    (ConstraintRule::Reference { attr: a, collection: r.id, column }, None, uses)
                }
                NewConstraint::Check { condition } => {
                    let (expr, uses) = compile_check(&cwd, &c, attrs, condition)?;
                    (ConstraintRule::Check { condition: condition.trim().to_string() }, Some(expr), uses)
                }
            };
            conn.add_constraint(c.id, name, &rule, check.as_ref(), &uses).await.map(|_| ()).map_err(|e| match e {
                // The new constraint's id is gone with the undone unit: name it here.
                Error::ConstraintViolation { id, .. } => Error::ConstraintViolation {
                    id,
                    text: format!("{name}: existing entries of {abs} do not satisfy it; it was not added"),
                },
                e => e,
            })
        })
        .await
    }

    /// `constraint_drop <dir> <name>`: needs write on the collection; error 1 if there is no such
    /// constraint, 3 for a unique constraint that a reference relies on.
    pub async fn constraint_drop(&self, s: &mut Session<S>, dir: &str, name: &str) -> Result<()> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.write(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, WRITE).await?;
            let k = conn
                .constraints(c.id)
                .await?
                .into_iter()
                .find(|k| k.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| Error::NotFound(format!("{abs}: constraint {name}")))?;
            conn.remove_constraint(&k).await
        })
        .await
    }

    /// `constraint_list <dir>`: the constraints of a collection, by name. Needs read.
    pub async fn constraint_list(&self, s: &mut Session<S>, dir: &str) -> Result<Vec<ConstraintInfo>> {
        let abs = path::absolute(&s.cwd, dir)?;
        let who = s.principal.clone();
        self.read(s, async |conn| {
            let c = Self::must_collection(conn, &abs).await?;
            Self::check(conn, &who, &c, READ).await?;
            let mut out = Vec::new();
            for k in conn.constraints(c.id).await? {
                out.push(describe(conn, &k).await?);
            }
            Ok(out)
        })
        .await
    }
}

/// An attribute of the constrained collection itself (pseudo-attributes cannot be constrained).
fn own_attr(attrs: &[crate::store::AttrDef], dir: &str, name: &str) -> Result<i64> {
    if path::is_pseudo_attr(name) {
        return Err(Error::IllegalCommand(format!("'{name}' cannot be constrained (only attributes)")));
    }
    super::namespace::find_attr(attrs, dir, name).map(|a| a.id)
}

/// A check condition resolved and type-checked over the collection alone, with the attributes it
/// uses. Modifiers and other collections are refused (8): a constraint looks at one entry.
fn compile_check(
    cwd: &str,
    c: &crate::store::CollectionInfo,
    attrs: crate::store::Attributes,
    condition: &str,
) -> Result<(query::ast::Expr<Term>, Vec<i64>)> {
    let cond = query::parse_condition(condition).map_err(|e| Error::IllegalQuery(e.to_string()))?;
    if !cond.order_by.is_empty() || cond.limit.is_some() || cond.distinct {
        return Err(Error::IllegalQuery("a check condition takes no order by, limit or distinct".into()));
    }
    let mut paths = Vec::new();
    query::resolve::condition_collections(&cond, cwd, &mut paths)?;
    if let Some(other) = paths.iter().find(|p| **p != c.path) {
        return Err(Error::IllegalQuery(format!("a check of {} cannot use {other}", c.path)));
    }
    let scope = Scope { tables: vec![TableSchema { info: c.clone(), attrs }], bare_default: true, cwd: cwd.into() };
    let filter =
        scope.resolve_condition(cond)?.filter.ok_or_else(|| Error::IllegalQuery("a check needs a condition".into()))?;
    query::resolve::check_coerced(&filter)?;
    let mut uses = Vec::new();
    filter.for_each_ref(&mut |t| {
        if let Term::Column { column: Column::Attr(id), .. } = t
            && !uses.contains(id)
        {
            uses.push(*id);
        }
    });
    Ok((filter, uses))
}

/// A constraint as `constraint_list` shows it, with attribute and collection names looked up.
pub(crate) async fn describe<C: StoreConn>(conn: &mut C, k: &ConstraintDef) -> Result<ConstraintInfo> {
    let attrs = conn.attributes(k.collection_id).await?;
    let attr_name = |id: i64, defs: &[crate::store::AttrDef]| {
        defs.iter().find(|a| a.id == id).map_or_else(|| format!("#{id}"), |a| a.name.clone())
    };
    let definition = match &k.rule {
        ConstraintRule::NotNull { attr } | ConstraintRule::Unique { attr } => attr_name(*attr, &attrs),
        ConstraintRule::Reference { attr, collection, column } => {
            let rpath = conn.collection_by_id(*collection).await?.map_or_else(|| format!("#{collection}"), |c| c.path);
            let rcol = match column {
                IndexColumn::File => "FILE".to_string(),
                IndexColumn::Attr(id) => attr_name(*id, &conn.attributes(*collection).await?),
            };
            format!("{} {rpath}:{rcol}", attr_name(*attr, &attrs))
        }
        ConstraintRule::Check { condition } => condition.clone(),
    };
    Ok(ConstraintInfo { name: k.name.clone(), kind: k.rule.kind(), definition })
}

/// The text of a violation of constraint `id`: `<name> (<kind> <definition>) on <dir>`.
pub(crate) async fn violation_text<C: StoreConn>(conn: &mut C, id: i64) -> Result<String> {
    let Some(k) = conn.constraint_by_id(id).await? else {
        return Ok(format!("constraint #{id}"));
    };
    let path =
        conn.collection_by_id(k.collection_id).await?.map_or_else(|| format!("#{}", k.collection_id), |c| c.path);
    let info = describe(conn, &k).await?;
    Ok(format!("{} ({} {}) on {path}", info.name, info.kind, info.definition))
}
