//! Expressions of the native SQL subset: column references, literals, operators, LIKE, IN,
//! functions and aggregates, from `sqlparser`'s tree to the query language's [`Expr`]. Must not
//! know schemas; refuses what the subset lacks with its position.

use super::*;

impl Cx<'_> {
    // ---- expressions ----

    pub(super) fn located(&self, e: q::Expr) -> R<Located<Expr<SqlRef>>> {
        let position = self.offset(self.leftmost(&e));
        Ok(Located { value: self.expr(e, 0)?, position })
    }

    pub(super) fn column_ref(&self, e: &q::Expr) -> R<Option<SqlRef>> {
        match e {
            q::Expr::Identifier(id) => {
                let position = self.offset(id.span.start);
                match self.scanned.path_at(id.span.start.line, id.span.start.column) {
                    Some(p) if id.quote_style.is_none() => match &p.kind {
                        PathKind::Column { dir, attr } => Ok(Some(SqlRef {
                            qualifier: Some(Qualifier::Path(dir.clone())),
                            name: attr.clone(),
                            position,
                        })),
                        // `/dir.attr`: AMGA's other spelling of `/dir:attr`.
                        PathKind::Path(path) => match path.rsplit_once('.') {
                            Some((dir, attr)) if !dir.is_empty() && !attr.is_empty() && !attr.contains('/') => {
                                Ok(Some(SqlRef {
                                    qualifier: Some(Qualifier::Path(dir.to_string())),
                                    name: attr.to_string(),
                                    position,
                                }))
                            }
                            _ => Err(SqlError::new(
                                position,
                                format!("'{path}' is a collection; name a column as {path}:attr"),
                            )),
                        },
                    },
                    _ => Ok(Some(SqlRef { qualifier: None, name: id.value.clone(), position })),
                }
            }
            q::Expr::CompoundIdentifier(ids) => match ids.as_slice() {
                [t, c] => Ok(Some(SqlRef {
                    qualifier: Some(Qualifier::Name(t.value.clone())),
                    name: c.value.clone(),
                    position: self.offset(t.span.start),
                })),
                _ => Err(self.err(ids[0].span.start, "a column is attr, /dir:attr or alias.attr")),
            },
            _ => Ok(None),
        }
    }

    pub(super) fn literal(&self, v: &q::ValueWithSpan, negate: bool) -> R<Literal> {
        let loc = v.span.start;
        let lit = match &v.value {
            q::Value::Number(n, false) => {
                let text = if negate { format!("-{n}") } else { n.clone() };
                if let Ok(i) = text.parse::<i64>() {
                    Literal::Int(i)
                } else {
                    match text.parse::<f64>() {
                        Ok(f) if f.is_finite() => Literal::Float(f),
                        _ => return Err(self.err(loc, format!("'{n}' is not a number"))),
                    }
                }
            }
            q::Value::SingleQuotedString(s) if !negate => Literal::Str(s.clone()),
            q::Value::Boolean(b) if !negate => Literal::Bool(*b),
            q::Value::Null if !negate => Literal::Null,
            _ => return Err(self.unsupported(loc, "this literal")),
        };
        Ok(lit)
    }

    pub(super) fn expr(&self, e: q::Expr, depth: usize) -> R<Expr<SqlRef>> {
        if depth > MAX_DEPTH {
            return Err(self.err(self.leftmost(&e), format!("expression nested too deeply (limit {MAX_DEPTH})")));
        }
        let d = depth + 1;
        if let Some(r) = self.column_ref(&e)? {
            return Ok(Expr::Ref(r));
        }
        // Binary chains are where `leftmost` would walk far; their errors locate themselves.
        let loc = if matches!(e, q::Expr::BinaryOp { .. }) { self.start } else { self.leftmost(&e) };
        let loc_kind = if matches!(e, q::Expr::ILike { .. }) { LikeKind::ILike } else { LikeKind::Like };
        Ok(match e {
            q::Expr::Value(v) => Expr::Lit(self.literal(&v, false)?),
            q::Expr::Nested(inner) => self.expr(*inner, d)?,
            q::Expr::UnaryOp { op, expr } => match (op, *expr) {
                (q::UnaryOperator::Minus, q::Expr::Value(v)) => Expr::Lit(self.literal(&v, true)?),
                (q::UnaryOperator::Minus, inner) => Expr::Unary(UnOp::Neg, Box::new(self.expr(inner, d)?)),
                (q::UnaryOperator::Plus, inner) => self.expr(inner, d)?,
                (q::UnaryOperator::Not, inner) => Expr::Unary(UnOp::Not, Box::new(self.expr(inner, d)?)),
                (op, _) => return Err(self.unsupported(loc, &format!("the operator {op}"))),
            },
            q::Expr::BinaryOp { left, op, right } => {
                let op = match op {
                    q::BinaryOperator::Plus => BinOp::Add,
                    q::BinaryOperator::Minus => BinOp::Sub,
                    q::BinaryOperator::Multiply => BinOp::Mul,
                    q::BinaryOperator::Divide => BinOp::Div,
                    q::BinaryOperator::Eq => BinOp::Eq,
                    q::BinaryOperator::NotEq => BinOp::Ne,
                    q::BinaryOperator::Lt => BinOp::Lt,
                    q::BinaryOperator::LtEq => BinOp::Le,
                    q::BinaryOperator::Gt => BinOp::Gt,
                    q::BinaryOperator::GtEq => BinOp::Ge,
                    q::BinaryOperator::And => BinOp::And,
                    q::BinaryOperator::Or => BinOp::Or,
                    other => {
                        let at = self.leftmost(&right);
                        return Err(self.unsupported(at, &format!("the operator {other}")));
                    }
                };
                Expr::Binary(op, Box::new(self.expr(*left, d)?), Box::new(self.expr(*right, d)?))
            }
            q::Expr::IsNull(inner) => Expr::IsNull { expr: Box::new(self.expr(*inner, d)?), negated: false },
            q::Expr::IsNotNull(inner) => Expr::IsNull { expr: Box::new(self.expr(*inner, d)?), negated: true },
            q::Expr::In { expr, target: q::InTarget::List(list), negated, global: false } => Expr::InList {
                expr: Box::new(self.expr(*expr, d)?),
                list: list.into_iter().map(|x| self.expr(x, d)).collect::<R<_>>()?,
                negated,
            },
            q::Expr::In { target: q::InTarget::Subquery(sub), .. } => {
                let at = match &*sub.body {
                    q::SetExpr::Select(s) => s.select_token.0.span.start,
                    _ => loc,
                };
                return Err(self.unsupported(at, "a subquery"));
            }
            q::Expr::Between { expr, negated, low, high } => Expr::Between {
                expr: Box::new(self.expr(*expr, d)?),
                low: Box::new(self.expr(*low, d)?),
                high: Box::new(self.expr(*high, d)?),
                negated,
            },
            q::Expr::Like { negated, any, expr, pattern, escape_char }
            | q::Expr::ILike { negated, any, expr, pattern, escape_char } => {
                let case_insensitive = matches!(loc_kind, LikeKind::ILike);
                self.refuse(any, loc, "LIKE ANY")?;
                if let Some(esc) = escape_char {
                    // Patterns escape with a backslash (as in the query language); that one
                    // may be named.
                    let ok = matches!(&*esc, q::Expr::Value(v) if v.value == q::Value::SingleQuotedString("\\".into()));
                    self.refuse(!ok, self.leftmost(&esc), "an ESCAPE character other than '\\'")?;
                }
                Expr::Like {
                    expr: Box::new(self.expr(*expr, d)?),
                    pattern: Box::new(self.expr(*pattern, d)?),
                    case_insensitive,
                    negated,
                }
            }
            q::Expr::Function(f) => self.function(f, d)?,
            _ => {
                let snippet: String = self.src[self.offset(loc)..].chars().take(30).collect();
                return Err(self.err(loc, format!("'{}' is not part of native SQL", snippet.trim_end())));
            }
        })
    }

    fn function(&self, f: q::Function, d: usize) -> R<Expr<SqlRef>> {
        let loc = f.name.span().start;
        let name = match f.name.0.as_slice() {
            [q::ObjectNamePart::Identifier(id)] if id.quote_style.is_none() => id.value.to_ascii_lowercase(),
            _ => return Err(self.unsupported(loc, "this function")),
        };
        let func = match name.as_str() {
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "count" => Func::Aggregate(Aggregate::Count, false),
            "sum" => Func::Aggregate(Aggregate::Sum, false),
            "avg" => Func::Aggregate(Aggregate::Avg, false),
            "min" => Func::Aggregate(Aggregate::Min, false),
            "max" => Func::Aggregate(Aggregate::Max, false),
            _ => {
                return Err(self.err(
                    loc,
                    format!("unknown function '{name}' (native SQL has count, sum, avg, min, max, lower, upper)"),
                ));
            }
        };
        self.refuse(
            f.uses_odbc_syntax
                || !matches!(f.parameters, q::FunctionArguments::None)
                || !f.within_group.is_empty()
                || f.filter.is_some()
                || f.null_treatment.is_some()
                || f.over.is_some(),
            loc,
            "this function clause",
        )?;
        let q::FunctionArguments::List(list) = f.args else {
            return Err(self.err(loc, format!("{name} needs an argument list")));
        };
        self.refuse(!list.clauses.is_empty(), loc, "a clause inside a function call")?;
        let distinct = matches!(list.duplicate_treatment, Some(q::DuplicateTreatment::Distinct));
        let func = match func {
            Func::Aggregate(a, _) => Func::Aggregate(a, distinct),
            other => {
                self.refuse(list.duplicate_treatment.is_some(), loc, "DISTINCT outside an aggregate")?;
                other
            }
        };
        let mut args = Vec::new();
        for a in list.args {
            match a {
                q::FunctionArg::Unnamed(q::FunctionArgExpr::Expr(e)) => {
                    let at = self.leftmost(&e);
                    let e = self.expr(e, d)?;
                    if matches!(func, Func::Aggregate(..)) && e.has_aggregate() {
                        return Err(self.err(at, "aggregates do not nest"));
                    }
                    args.push(e);
                }
                q::FunctionArg::Unnamed(q::FunctionArgExpr::Wildcard)
                    if func == Func::Aggregate(Aggregate::Count, false) && args.is_empty() => {}
                _ => return Err(self.err(loc, format!("bad argument to {name}"))),
            }
        }
        Ok(Expr::Call(func, args))
    }
}
