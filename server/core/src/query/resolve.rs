//! Name resolution and type checking: binds every `/dir:attr` of a parsed expression to a column
//! of one table of the join, infers types and coerces literals to the type they are compared
//! with. It needs the schemas handed in (a `Scope`); it never fetches them and never writes SQL.

use crate::error::{Error, Result};
use crate::path;
use crate::query::ast::{Aggregate, AttrRef, Condition, Expr, Func, Literal, OrderItem, UnOp};
use crate::store::{AttrDef, Attributes, CollectionInfo};
use crate::types::{AttrType, Value, ValueType};

/// A column of an entry table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The row id: unique, increasing; the last key of every total order.
    Id,
    File,
    Owner,
    Group,
    Perms,
    Created,
    Modified,
    Attr(i64),
}

/// A leaf of a resolved expression: a column of join table `table`, or a typed constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Column { table: usize, column: Column, vtype: ValueType },
    Const(Value, ValueType),
}

/// One collection taking part in a statement, with its attributes.
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub info: CollectionInfo,
    pub attrs: Attributes,
}

impl TableSchema {
    pub fn attr(&self, name: &str) -> Option<&AttrDef> {
        self.attrs.iter().find(|a| a.name.eq_ignore_ascii_case(name))
    }
}

/// The tables a statement may reference. Table 0 is the default for bare attribute names
/// when `bare_default` is set (the target of updateattr/find/getattr).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub tables: Vec<TableSchema>,
    pub bare_default: bool,
    pub cwd: String,
}

impl Scope {
    fn table_index(&self, abs: &str) -> Option<usize> {
        self.tables.iter().position(|t| t.info.path == abs)
    }

    fn resolve_ref(&self, r: AttrRef) -> Result<Term> {
        let table = match &r.collection {
            Some(c) => {
                let abs = path::absolute(&self.cwd, c)?;
                self.table_index(&abs).ok_or(Error::NotFound(abs))?
            }
            None if self.bare_default || self.tables.len() == 1 => 0,
            None => {
                return Err(Error::IllegalQuery(format!(
                    "attribute '{}' must name its collection (/dir:{})",
                    r.attr, r.attr
                )));
            }
        };
        let schema = self.tables.get(table).ok_or_else(|| Error::IllegalQuery(format!("no collection for '{r}'")))?;
        let (column, vtype) = match r.attr.to_ascii_uppercase().as_str() {
            "FILE" => (Column::File, ValueType::Text),
            "OWNER" => (Column::Owner, ValueType::Text),
            "GROUP_RIGHT" => (Column::Group, ValueType::Text),
            "PERMISSIONS" => (Column::Perms, ValueType::Int),
            _ => {
                let a = schema
                    .attr(&r.attr)
                    .ok_or_else(|| Error::NoSuchAttribute(format!("{}:{}", schema.info.path, r.attr)))?;
                (Column::Attr(a.id), a.attr_type.value_type())
            }
        };
        Ok(Term::Column { table, column, vtype })
    }

    /// Resolve and type-check one expression.
    pub fn resolve(&self, e: Expr<AttrRef>) -> Result<Expr<Term>> {
        typecheck(e.try_map_refs(&mut |r| self.resolve_ref(r))?)
    }

    /// Resolve a boolean condition with its modifiers.
    pub fn resolve_condition(&self, c: Condition<AttrRef>) -> Result<Condition<Term>> {
        let filter = match c.filter {
            Some(f) => {
                let f = self.resolve(f)?;
                if !matches!(expr_type(&f), ValueType::Bool) && !is_null_lit(&f) {
                    return Err(Error::IllegalQuery("the condition is not a boolean expression".into()));
                }
                Some(f)
            }
            None => None,
        };
        let order_by = c
            .order_by
            .into_iter()
            .map(|o| Ok(OrderItem { expr: self.resolve(o.expr)?, descending: o.descending }))
            .collect::<Result<Vec<_>>>()?;
        Ok(Condition { filter, order_by, limit: c.limit, distinct: c.distinct })
    }
}

/// Type-check an expression whose references are bound already (by [`Scope::resolve`], or by
/// native SQL's own name resolution, which knows aliases and self-joins): literals become typed
/// constants and are converted to the type they meet.
pub fn typecheck(e: Expr<Term>) -> Result<Expr<Term>> {
    let e = lift_literals(e);
    check(&e)?;
    Ok(coerce(e))
}

/// Absolute paths of every collection an expression names explicitly, in order of appearance.
pub fn referenced_collections(e: &Expr<AttrRef>, cwd: &str, out: &mut Vec<String>) -> Result<()> {
    let mut err = None;
    e.for_each_ref(&mut |r| {
        if let Some(c) = &r.collection {
            match path::absolute(cwd, c) {
                Ok(abs) if !out.contains(&abs) => out.push(abs),
                Ok(_) => {}
                Err(e) => err = Some(e),
            }
        }
    });
    err.map_or(Ok(()), Err)
}

pub fn condition_collections(c: &Condition<AttrRef>, cwd: &str, out: &mut Vec<String>) -> Result<()> {
    if let Some(f) = &c.filter {
        referenced_collections(f, cwd, out)?;
    }
    for o in &c.order_by {
        referenced_collections(&o.expr, cwd, out)?;
    }
    Ok(())
}

fn is_null_lit(e: &Expr<Term>) -> bool {
    matches!(e, Expr::Lit(Literal::Null))
}

/// Literals become typed constants so that coercion can retype them.
fn lift_literals(e: Expr<Term>) -> Expr<Term> {
    match e {
        Expr::Lit(Literal::Null) => Expr::Lit(Literal::Null),
        Expr::Lit(l) => {
            let (v, t) = match l {
                Literal::Int(i) => (Value::Int(i), ValueType::Int),
                Literal::Float(f) => (Value::Float(f), ValueType::Float),
                Literal::Str(s) => (Value::Text(s), ValueType::Text),
                Literal::Bool(b) => (Value::Bool(b), ValueType::Bool),
                Literal::Null => unreachable_null(),
            };
            Expr::Ref(Term::Const(v, t))
        }
        Expr::Ref(r) => Expr::Ref(r),
        Expr::Unary(op, a) => Expr::Unary(op, Box::new(lift_literals(*a))),
        Expr::Binary(op, a, b) => Expr::Binary(op, Box::new(lift_literals(*a)), Box::new(lift_literals(*b))),
        Expr::Call(f, args) => Expr::Call(f, args.into_iter().map(lift_literals).collect()),
        Expr::Like { expr, pattern, case_insensitive, negated } => Expr::Like {
            expr: Box::new(lift_literals(*expr)),
            pattern: Box::new(lift_literals(*pattern)),
            case_insensitive,
            negated,
        },
        Expr::InList { expr, list, negated } => Expr::InList {
            expr: Box::new(lift_literals(*expr)),
            list: list.into_iter().map(lift_literals).collect(),
            negated,
        },
        Expr::Between { expr, low, high, negated } => Expr::Between {
            expr: Box::new(lift_literals(*expr)),
            low: Box::new(lift_literals(*low)),
            high: Box::new(lift_literals(*high)),
            negated,
        },
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: Box::new(lift_literals(*expr)), negated },
    }
}

fn unreachable_null() -> (Value, ValueType) {
    (Value::Null, ValueType::Text)
}

/// The type an expression yields.
pub fn expr_type(e: &Expr<Term>) -> ValueType {
    match e {
        Expr::Lit(Literal::Int(_)) => ValueType::Int,
        Expr::Lit(Literal::Float(_)) => ValueType::Float,
        Expr::Lit(Literal::Bool(_)) => ValueType::Bool,
        Expr::Lit(_) => ValueType::Text,
        Expr::Ref(Term::Column { vtype, .. }) => *vtype,
        Expr::Ref(Term::Const(_, t)) => *t,
        Expr::Unary(UnOp::Not, _) => ValueType::Bool,
        Expr::Unary(UnOp::Neg, a) => expr_type(a),
        Expr::Binary(op, a, b) if op.is_arithmetic() => {
            if expr_type(a) == ValueType::Int && expr_type(b) == ValueType::Int {
                ValueType::Int
            } else {
                ValueType::Float
            }
        }
        Expr::Binary(..) => ValueType::Bool,
        Expr::Call(Func::Aggregate(agg, _), args) => match (agg, args.first().map(expr_type)) {
            (Aggregate::Count, _) => ValueType::Int,
            (Aggregate::Avg, _) => ValueType::Float,
            (Aggregate::Sum, Some(ValueType::Int)) => ValueType::Int,
            (Aggregate::Sum, _) => ValueType::Float,
            (Aggregate::Min | Aggregate::Max, Some(t)) => t,
            (Aggregate::Min | Aggregate::Max, None) => ValueType::Text,
        },
        Expr::Call(..) => ValueType::Text,
        Expr::Like { .. } | Expr::InList { .. } | Expr::Between { .. } | Expr::IsNull { .. } => ValueType::Bool,
    }
}

fn is_const(e: &Expr<Term>) -> bool {
    matches!(e, Expr::Ref(Term::Const(..)) | Expr::Lit(Literal::Null))
}

fn mismatch(a: ValueType, b: ValueType) -> Error {
    Error::IllegalQuery(format!("cannot compare {a:?} with {b:?}").to_lowercase())
}

/// Two types may meet in a comparison if equal, both numeric, or one side is a constant
/// that coercion will convert.
fn comparable(a: &Expr<Term>, b: &Expr<Term>) -> Result<()> {
    let (ta, tb) = (expr_type(a), expr_type(b));
    if ta == tb || (ta.is_numeric() && tb.is_numeric()) || is_const(a) || is_const(b) {
        Ok(())
    } else {
        Err(mismatch(ta, tb))
    }
}

fn check(e: &Expr<Term>) -> Result<()> {
    match e {
        Expr::Lit(_) | Expr::Ref(_) => Ok(()),
        Expr::Unary(UnOp::Not, a) => {
            check(a)?;
            want(a, ValueType::Bool, "not")
        }
        Expr::Unary(UnOp::Neg, a) => {
            check(a)?;
            want_numeric(a, "-")
        }
        Expr::Binary(op, a, b) => {
            check(a)?;
            check(b)?;
            if op.is_arithmetic() {
                want_numeric(a, "arithmetic")?;
                want_numeric(b, "arithmetic")
            } else if op.is_logical() {
                want(a, ValueType::Bool, "and/or")?;
                want(b, ValueType::Bool, "and/or")
            } else {
                comparable(a, b)
            }
        }
        Expr::Call(Func::Aggregate(agg, distinct), args) => {
            args.iter().try_for_each(check)?;
            let name = agg.name();
            match (agg, args.as_slice()) {
                (Aggregate::Count, []) if !distinct => Ok(()),
                (Aggregate::Count, [_]) => Ok(()),
                (Aggregate::Sum | Aggregate::Avg, [a]) => want_numeric(a, name),
                (Aggregate::Min | Aggregate::Max, [a]) => {
                    // PostgreSQL has no min/max over booleans; refuse them on both backends.
                    if expr_type(a) == ValueType::Bool && !is_null_lit(a) {
                        Err(Error::IllegalQuery(format!("{name} needs numbers, text or timestamps, got bool")))
                    } else {
                        Ok(())
                    }
                }
                _ => Err(Error::IllegalQuery(format!("{name}() takes one argument"))),
            }
        }
        Expr::Call(_, args) => {
            if args.len() != 1 {
                return Err(Error::IllegalQuery("lower() and upper() take one argument".into()));
            }
            args.iter().try_for_each(check)?;
            want(&args[0], ValueType::Text, "lower/upper")
        }
        Expr::Like { expr, pattern, .. } => {
            check(expr)?;
            check(pattern)?;
            want(expr, ValueType::Text, "like")?;
            want(pattern, ValueType::Text, "like")
        }
        Expr::InList { expr, list, .. } => {
            check(expr)?;
            for item in list {
                check(item)?;
                comparable(expr, item)?;
            }
            Ok(())
        }
        Expr::Between { expr, low, high, .. } => {
            check(expr)?;
            check(low)?;
            check(high)?;
            comparable(expr, low)?;
            comparable(expr, high)
        }
        Expr::IsNull { expr, .. } => check(expr),
    }
}

fn want(e: &Expr<Term>, t: ValueType, what: &str) -> Result<()> {
    if is_null_lit(e) || expr_type(e) == t || (t == ValueType::Text && is_const(e)) {
        Ok(())
    } else {
        Err(Error::IllegalQuery(format!("{what} needs {t:?} operands, got {:?}", expr_type(e)).to_lowercase()))
    }
}

fn want_numeric(e: &Expr<Term>, what: &str) -> Result<()> {
    if is_null_lit(e) || expr_type(e).is_numeric() {
        Ok(())
    } else {
        Err(Error::IllegalQuery(format!("{what} needs numbers, got {:?}", expr_type(e)).to_lowercase()))
    }
}

/// Convert a constant to `target` so both backends compare with the column's own type.
fn coerce_const(e: Expr<Term>, target: ValueType) -> Expr<Term> {
    match e {
        Expr::Ref(Term::Const(v, t)) if t != target => {
            let converted = match (&v, target) {
                (Value::Int(i), ValueType::Float) => Some(Value::Float(*i as f64)),
                (Value::Int(_) | Value::Float(_), ValueType::Int) => None,
                (v, ValueType::Text) => v.to_wire().map(Value::Text),
                (Value::Text(s), t) => t.parse_value(s).ok(),
                (Value::Bool(b), ValueType::Int) => Some(Value::Int(*b as i64)),
                _ => None,
            };
            match converted {
                Some(v) => Expr::Ref(Term::Const(v, target)),
                None => Expr::Ref(Term::Const(v, t)),
            }
        }
        other => other,
    }
}

fn coerce_pair(a: Expr<Term>, b: Expr<Term>) -> (Expr<Term>, Expr<Term>) {
    match (is_const(&a), is_const(&b)) {
        (true, false) => {
            let t = expr_type(&b);
            (coerce_const(a, t), b)
        }
        (false, true) => {
            let t = expr_type(&a);
            (a, coerce_const(b, t))
        }
        _ => (a, b),
    }
}

fn coerce(e: Expr<Term>) -> Expr<Term> {
    match e {
        Expr::Binary(op, a, b) if op.is_comparison() => {
            let (a, b) = coerce_pair(coerce(*a), coerce(*b));
            Expr::Binary(op, Box::new(a), Box::new(b))
        }
        Expr::Binary(op, a, b) => Expr::Binary(op, Box::new(coerce(*a)), Box::new(coerce(*b))),
        Expr::Unary(op, a) => Expr::Unary(op, Box::new(coerce(*a))),
        Expr::Call(f, args) => Expr::Call(f, args.into_iter().map(coerce).collect()),
        Expr::Like { expr, pattern, case_insensitive, negated } => Expr::Like {
            expr: Box::new(coerce(*expr)),
            pattern: Box::new(coerce_const(coerce(*pattern), ValueType::Text)),
            case_insensitive,
            negated,
        },
        Expr::InList { expr, list, negated } => {
            let expr = coerce(*expr);
            let t = expr_type(&expr);
            let list = list.into_iter().map(|i| coerce_const(coerce(i), t)).collect();
            Expr::InList { expr: Box::new(expr), list, negated }
        }
        Expr::Between { expr, low, high, negated } => {
            let expr = coerce(*expr);
            let t = expr_type(&expr);
            Expr::Between {
                expr: Box::new(expr),
                low: Box::new(coerce_const(coerce(*low), t)),
                high: Box::new(coerce_const(coerce(*high), t)),
                negated,
            }
        }
        Expr::IsNull { expr, negated } => Expr::IsNull { expr: Box::new(coerce(*expr)), negated },
        other => other,
    }
}

/// After coercion, a constant compared with a column must have the column's type; otherwise
/// the user's literal could not be converted (e.g. `events = "abc"` with events an int).
pub fn check_coerced(e: &Expr<Term>) -> Result<()> {
    match e {
        Expr::Binary(op, a, b) if op.is_comparison() => {
            check_coerced(a)?;
            check_coerced(b)?;
            let (ta, tb) = (expr_type(a), expr_type(b));
            if ta == tb || (ta.is_numeric() && tb.is_numeric()) || is_null_lit(a) || is_null_lit(b) {
                Ok(())
            } else {
                Err(Error::IllegalQuery(format!("value of type {tb:?} cannot be compared with {ta:?}").to_lowercase()))
            }
        }
        Expr::Binary(_, a, b) => {
            check_coerced(a)?;
            check_coerced(b)
        }
        Expr::Unary(_, a) => check_coerced(a),
        Expr::InList { expr, list, .. } => {
            let t = expr_type(expr);
            for i in list {
                let ti = expr_type(i);
                if !(ti == t || (ti.is_numeric() && t.is_numeric()) || is_null_lit(i)) {
                    return Err(mismatch(t, ti));
                }
            }
            Ok(())
        }
        Expr::Between { expr, low, high, .. } => {
            let t = expr_type(expr);
            for i in [low, high] {
                let ti = expr_type(i);
                if !(ti == t || (ti.is_numeric() && t.is_numeric()) || is_null_lit(i)) {
                    return Err(mismatch(t, ti));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Type-check a value expression assigned to an attribute (updateattr / setAttributes).
pub fn check_assignment(attr: &AttrDef, e: Expr<Term>) -> Result<Expr<Term>> {
    let target = attr.attr_type.value_type();
    let e = coerce_const(e, target);
    if let Expr::Ref(Term::Const(Value::Text(s), _)) = &e {
        // A constant that failed coercion: report the type error the way a setattr would.
        return attr.attr_type.parse_value(s).map(|v| Expr::Ref(Term::Const(v, target)));
    }
    if let (AttrType::Varchar(_), Expr::Ref(Term::Const(Value::Text(s), _))) = (attr.attr_type, &e) {
        attr.attr_type.parse_value(s)?;
    }
    let t = expr_type(&e);
    if t == target || is_null_lit(&e) || (t.is_numeric() && target.is_numeric()) {
        Ok(e)
    } else {
        Err(Error::IllegalQuery(
            format!("cannot assign a {t:?} to {} of type {}", attr.name, attr.attr_type).to_lowercase(),
        ))
    }
}
