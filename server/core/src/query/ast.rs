//! The query-language syntax tree. It owns the shape of a parsed condition and nothing else:
//! no name resolution, no SQL, no knowledge of any collection's schema.
//!
//! `Expr<R>` is generic over its column reference so that the same tree serves both stages:
//! `Expr<AttrRef>` straight from the parser, and `Expr<crate::query::ColumnRef>` after
//! `crate::query::resolve` has bound every reference to a collection's column and type.

use std::fmt;

/// A reference as written by the user: `/dir:attr`, `attr`, `FILE`, `/dir:FILE`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttrRef {
    /// Absolute or relative collection path before the `:`; `None` for a bare attribute.
    pub collection: Option<String>,
    /// Attribute name, or one of the pseudo-attributes `FILE`, `OWNER`, `PERMISSIONS`, `GROUP_RIGHT`.
    pub attr: String,
}

impl fmt::Display for AttrRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.collection {
            Some(c) => write!(f, "{c}:{}", self.attr),
            None => write!(f, "{}", self.attr),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Int(i64),
    Float(f64),
    /// A double-quoted string, already unescaped.
    Str(String),
    Bool(bool),
    Null,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div)
    }
    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Neg,
}

/// Scalar functions of the language. `like`/`ilike` are functions in AMGA's syntax
/// (`like(/d:FILE, "t%")`) and also infix operators in ours (`x like "t%"`); both parse to `Like`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lower,
    Upper,
    /// An aggregate over the rows of a group, `distinct` when written `f(DISTINCT x)`. Only
    /// native SQL produces these (the condition language has no grouping); `COUNT(*)` is a
    /// `Count` call without arguments.
    Aggregate(Aggregate, bool),
}

/// The SQL-92 set functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Count,
    Sum,
    Avg,
    Min,
    Max,
}

impl Aggregate {
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Count => "count",
            Aggregate::Sum => "sum",
            Aggregate::Avg => "avg",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr<R> {
    Lit(Literal),
    Ref(R),
    Unary(UnOp, Box<Expr<R>>),
    Binary(BinOp, Box<Expr<R>>, Box<Expr<R>>),
    Call(Func, Vec<Expr<R>>),
    Like { expr: Box<Expr<R>>, pattern: Box<Expr<R>>, case_insensitive: bool, negated: bool },
    InList { expr: Box<Expr<R>>, list: Vec<Expr<R>>, negated: bool },
    Between { expr: Box<Expr<R>>, low: Box<Expr<R>>, high: Box<Expr<R>>, negated: bool },
    IsNull { expr: Box<Expr<R>>, negated: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem<R> {
    pub expr: Expr<R>,
    pub descending: bool,
}

/// A whole condition string: `<expr> [order by …] [limit n] [distinct]`.
/// Modifiers may come in any order after the expression (gLibrary appends ` distinct `),
/// and the expression itself may be absent (`order by x` alone, or an empty condition).
#[derive(Debug, Clone, PartialEq)]
pub struct Condition<R> {
    pub filter: Option<Expr<R>>,
    pub order_by: Vec<OrderItem<R>>,
    pub limit: Option<u64>,
    pub distinct: bool,
}

impl<R> Default for Condition<R> {
    fn default() -> Self {
        Condition { filter: None, order_by: Vec::new(), limit: None, distinct: false }
    }
}

impl<R> Expr<R> {
    /// Whether the tree computes `+ - * /` or a negation (what can overflow).
    pub fn has_arithmetic(&self) -> bool {
        match self {
            Expr::Lit(_) | Expr::Ref(_) => false,
            Expr::Unary(op, a) => *op == UnOp::Neg || a.has_arithmetic(),
            Expr::Binary(op, a, b) => op.is_arithmetic() || a.has_arithmetic() || b.has_arithmetic(),
            Expr::Call(_, args) => args.iter().any(Expr::has_arithmetic),
            Expr::Like { expr, pattern, .. } => expr.has_arithmetic() || pattern.has_arithmetic(),
            Expr::InList { expr, list, .. } => expr.has_arithmetic() || list.iter().any(Expr::has_arithmetic),
            Expr::Between { expr, low, high, .. } => {
                expr.has_arithmetic() || low.has_arithmetic() || high.has_arithmetic()
            }
            Expr::IsNull { expr, .. } => expr.has_arithmetic(),
        }
    }

    /// Visit every reference in the tree, left to right.
    pub fn for_each_ref<'a>(&'a self, f: &mut impl FnMut(&'a R)) {
        match self {
            Expr::Lit(_) => {}
            Expr::Ref(r) => f(r),
            Expr::Unary(_, e) => e.for_each_ref(f),
            Expr::Binary(_, a, b) => {
                a.for_each_ref(f);
                b.for_each_ref(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.for_each_ref(f)),
            Expr::Like { expr, pattern, .. } => {
                expr.for_each_ref(f);
                pattern.for_each_ref(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.for_each_ref(f);
                list.iter().for_each(|a| a.for_each_ref(f));
            }
            Expr::Between { expr, low, high, .. } => {
                expr.for_each_ref(f);
                low.for_each_ref(f);
                high.for_each_ref(f);
            }
            Expr::IsNull { expr, .. } => expr.for_each_ref(f),
        }
    }

    /// Whether an aggregate call occurs anywhere in the tree.
    pub fn has_aggregate(&self) -> bool {
        match self {
            Expr::Lit(_) | Expr::Ref(_) => false,
            Expr::Call(Func::Aggregate(..), _) => true,
            Expr::Unary(_, e) => e.has_aggregate(),
            Expr::Binary(_, a, b) => a.has_aggregate() || b.has_aggregate(),
            Expr::Call(_, args) => args.iter().any(Expr::has_aggregate),
            Expr::Like { expr, pattern, .. } => expr.has_aggregate() || pattern.has_aggregate(),
            Expr::InList { expr, list, .. } => expr.has_aggregate() || list.iter().any(Expr::has_aggregate),
            Expr::Between { expr, low, high, .. } => {
                expr.has_aggregate() || low.has_aggregate() || high.has_aggregate()
            }
            Expr::IsNull { expr, .. } => expr.has_aggregate(),
        }
    }

    /// Rebuild the tree with every reference mapped (used by name resolution).
    pub fn try_map_refs<S, E>(self, f: &mut impl FnMut(R) -> Result<S, E>) -> Result<Expr<S>, E> {
        Ok(match self {
            Expr::Lit(l) => Expr::Lit(l),
            Expr::Ref(r) => Expr::Ref(f(r)?),
            Expr::Unary(op, e) => Expr::Unary(op, Box::new(e.try_map_refs(f)?)),
            Expr::Binary(op, a, b) => Expr::Binary(op, Box::new(a.try_map_refs(f)?), Box::new(b.try_map_refs(f)?)),
            Expr::Call(func, args) => {
                Expr::Call(func, args.into_iter().map(|a| a.try_map_refs(f)).collect::<Result<_, _>>()?)
            }
            Expr::Like { expr, pattern, case_insensitive, negated } => Expr::Like {
                expr: Box::new(expr.try_map_refs(f)?),
                pattern: Box::new(pattern.try_map_refs(f)?),
                case_insensitive,
                negated,
            },
            Expr::InList { expr, list, negated } => Expr::InList {
                expr: Box::new(expr.try_map_refs(f)?),
                list: list.into_iter().map(|a| a.try_map_refs(f)).collect::<Result<_, _>>()?,
                negated,
            },
            Expr::Between { expr, low, high, negated } => Expr::Between {
                expr: Box::new(expr.try_map_refs(f)?),
                low: Box::new(low.try_map_refs(f)?),
                high: Box::new(high.try_map_refs(f)?),
                negated,
            },
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: Box::new(expr.try_map_refs(f)?), negated },
        })
    }
}
