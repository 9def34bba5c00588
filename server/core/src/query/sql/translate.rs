//! From `sqlparser`'s tree to [`super::Statement`]: accepts exactly the native SQL subset and
//! refuses everything else with the position of the construct. It must not know schemas.

use sqlparser::ast as q;
use sqlparser::ast::Spanned;
use sqlparser::dialect::Dialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use super::scan::{PathKind, Scanned, scan};
use super::{
    Delete, Insert, Located, OrderItem, OrderKey, Qualifier, Select, SelectItem, SqlError, SqlRef, Statement, TableRef,
    Update,
};
use crate::query::ast::{Aggregate, BinOp, Expr, Func, Literal, UnOp};
use crate::query::parser::MAX_DEPTH;

/// SQL as AMGA users write it: identifiers `[A-Za-z_][A-Za-z0-9_]*` (attribute names), `"…"`
/// for quoted names, `'…'` strings; no vendor extensions (the trait's defaults).
#[derive(Debug)]
struct AmgaDialect;

impl Dialect for AmgaDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_ascii_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_ascii_alphanumeric() || ch == '_'
    }
}

/// `Spanned::span` recurses through the whole subtree, so it is only used on names and
/// identifiers here; larger nodes are located by their first token ([`leftmost`],
/// [`factor_loc`], the statement's first token).
struct Cx<'a> {
    src: &'a str,
    scanned: Scanned,
    /// The statement's first token.
    start: Location,
}

type R<T> = Result<T, SqlError>;

pub(super) fn statement(src: &str) -> R<Statement> {
    let mut cx = Cx { src, scanned: scan(src), start: Location { line: 1, column: 1 } };
    let dialect = AmgaDialect;
    let tokens = Tokenizer::new(&dialect, &cx.scanned.text)
        .tokenize_with_location()
        .map_err(|e| cx.err(e.location, e.message.clone()))?;
    let mut significant = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF));
    if let Some(t) = significant.next() {
        cx.start = t.span.start;
        if !["SELECT", "INSERT", "UPDATE", "DELETE"].iter().any(|k| is_keyword(&t.token, k)) {
            return Err(cx.err(t.span.start, "only SELECT, INSERT, UPDATE and DELETE statements are native SQL"));
        }
    }
    // Where a second statement would start: after a `;` that is not the last token.
    let second = significant.skip_while(|t| t.token != Token::SemiColon).nth(1).map(|t| t.span.start);
    let headers = select_item_texts(&cx, &tokens);
    let mut statements =
        Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statements().map_err(|e| cx.parser_error(e))?;
    if statements.len() > 1 {
        return Err(cx.err(second.unwrap_or(cx.start), "one statement at a time"));
    }
    let Some(st) = statements.pop() else {
        return Err(SqlError::new(0, "empty statement"));
    };
    cx.statement(st, headers)
}

/// The text of each top-level select item as the user wrote it: between `SELECT [DISTINCT|ALL]`
/// and `FROM`, split at commas outside parentheses. Empty unless the statement is a SELECT.
fn select_item_texts(cx: &Cx<'_>, tokens: &[TokenWithSpan]) -> Vec<String> {
    let mut it = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_))).peekable();
    match it.next() {
        Some(t) if is_keyword(&t.token, "SELECT") => {}
        _ => return Vec::new(),
    }
    if it.peek().is_some_and(|t| is_keyword(&t.token, "DISTINCT") || is_keyword(&t.token, "ALL")) {
        it.next();
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start: Option<Location> = None;
    let mut last_end: Option<Location> = None;
    let mut close = |start: &mut Option<Location>, end: Option<Location>| {
        if let (Some(s), Some(e)) = (start.take(), end) {
            let (a, b) = (cx.offset(s), cx.offset(e));
            items.push(cx.src.get(a..b.max(a)).unwrap_or("").trim().to_string());
        }
    };
    for t in it {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => {
                close(&mut start, last_end);
                continue;
            }
            Token::EOF => break,
            tok if depth == 0 && is_keyword(tok, "FROM") => break,
            _ => {}
        }
        start.get_or_insert(t.span.start);
        last_end = Some(t.span.end);
    }
    close(&mut start, last_end);
    items
}

fn is_keyword(t: &Token, k: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k))
}

fn literal_int(e: &q::Expr) -> Option<u64> {
    match e {
        q::Expr::Value(v) => match &v.value {
            q::Value::Number(n, false) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

impl Cx<'_> {
    fn offset(&self, loc: Location) -> usize {
        if loc.line == 0 {
            return self.src.len();
        }
        self.scanned.offset(self.src, loc.line, loc.column)
    }

    /// Where an expression starts, including prefix operators before its leftmost leaf.
    fn leftmost(&self, e: &q::Expr) -> Location {
        let (loc, unary) = leftmost_leaf(e);
        if unary == 0 || loc.line == 0 {
            return loc;
        }
        Location { line: loc.line, column: self.scanned.before_prefixes(self.src, loc.line, loc.column, unary) }
    }

    fn err(&self, loc: Location, message: impl Into<String>) -> SqlError {
        SqlError::new(self.offset(loc), message)
    }

    /// `sqlparser` reports "<message> at Line: L, Column: C"; placeholders it names are shown
    /// as the paths the user wrote.
    fn parser_error(&self, e: ParserError) -> SqlError {
        let text = match e {
            ParserError::TokenizerError(s) | ParserError::ParserError(s) => s,
            ParserError::RecursionLimitExceeded => {
                return SqlError::new(0, "statement nested too deeply");
            }
        };
        let (mut message, loc) = match text.rfind(" at Line: ") {
            Some(i) => {
                let mut nums = text[i + 10..].split(", Column: ").map(|n| n.trim().parse::<u64>().ok());
                match (nums.next().flatten(), nums.next().flatten()) {
                    (Some(line), Some(column)) => (text[..i].to_string(), Location { line, column }),
                    _ => (text.clone(), Location { line: 0, column: 0 }),
                }
            }
            None => (text.clone(), Location { line: 0, column: 0 }),
        };
        if let Some(p) = self.scanned.path_at(loc.line, loc.column) {
            message = message.replace(&p.placeholder, &p.original);
        }
        self.err(loc, message)
    }

    fn unsupported(&self, loc: Location, what: &str) -> SqlError {
        self.err(loc, format!("{what} is not part of native SQL"))
    }

    /// Refuse `what` when a clause of the subset's grammar that must be absent is present.
    fn refuse(&self, present: bool, loc: Location, what: &str) -> R<()> {
        if present { Err(self.unsupported(loc, what)) } else { Ok(()) }
    }

    fn statement(&self, st: q::Statement, headers: Vec<String>) -> R<Statement> {
        let loc = self.start;
        match st {
            q::Statement::Query(query) => self.select(*query, headers).map(Statement::Select),
            q::Statement::Insert(ins) => self.insert(ins).map(Statement::Insert),
            q::Statement::Update(up) => self.update(up).map(Statement::Update),
            q::Statement::Delete(del) => self.delete(del).map(Statement::Delete),
            _ => Err(self.err(loc, "only SELECT, INSERT, UPDATE and DELETE statements are native SQL")),
        }
    }

    // ---- tables ----

    /// A table name: a path (placeholder) or a plain name (relative to the current directory).
    fn table_name(&self, name: &q::ObjectName) -> R<(String, usize)> {
        let loc = name.span().start;
        let [q::ObjectNamePart::Identifier(id)] = name.0.as_slice() else {
            return Err(self.err(loc, "a table is a collection path such as /jobs"));
        };
        match self.scanned.path_at(id.span.start.line, id.span.start.column) {
            Some(p) if id.quote_style.is_none() => match &p.kind {
                PathKind::Path(path) => Ok((path.clone(), p.offset)),
                PathKind::Column { .. } => Err(self.err(loc, format!("'{}' is a column, not a table", p.original))),
            },
            _ => Ok((id.value.clone(), self.offset(loc))),
        }
    }

    fn table_factor(&self, f: q::TableFactor) -> R<TableRef> {
        let loc = factor_loc(&f).unwrap_or(self.start);
        let q::TableFactor::Table {
            name,
            alias,
            args,
            with_hints,
            version,
            with_ordinality,
            partitions,
            json_path,
            sample,
            index_directives,
            inheritance,
        } = f
        else {
            return Err(self.err(loc, "a table is a collection path such as /jobs (no subqueries or functions)"));
        };
        self.refuse(
            args.is_some()
                || !with_hints.is_empty()
                || version.is_some()
                || with_ordinality
                || !partitions.is_empty()
                || json_path.is_some()
                || sample.is_some()
                || !index_directives.is_empty()
                || inheritance.is_some(),
            loc,
            "this table clause",
        )?;
        let (path, position) = self.table_name(&name)?;
        let alias = match alias {
            Some(a) => {
                self.refuse(!a.columns.is_empty() || a.at.is_some(), a.name.span.start, "a column alias list")?;
                Some(a.name.value)
            }
            None => None,
        };
        Ok(TableRef { path, alias, position })
    }

    fn single_table(&self, t: q::TableWithJoins, what: &str) -> R<TableRef> {
        if let Some(j) = t.joins.first() {
            return Err(self.err(factor_loc(&j.relation).unwrap_or(self.start), format!("{what} names one collection")));
        }
        self.table_factor(t.relation)
    }

    // ---- expressions ----

    fn located(&self, e: q::Expr) -> R<Located<Expr<SqlRef>>> {
        let position = self.offset(self.leftmost(&e));
        Ok(Located { value: self.expr(e, 0)?, position })
    }

    fn column_ref(&self, e: &q::Expr) -> R<Option<SqlRef>> {
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

    fn literal(&self, v: &q::ValueWithSpan, negate: bool) -> R<Literal> {
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

    fn expr(&self, e: q::Expr, depth: usize) -> R<Expr<SqlRef>> {
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

    // ---- statements ----

    fn select(&self, query: q::Query, headers: Vec<String>) -> R<Select> {
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

    fn insert(&self, ins: q::Insert) -> R<Insert> {
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

    fn update(&self, up: q::Update) -> R<Update> {
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

    fn delete(&self, del: q::Delete) -> R<Delete> {
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

enum LikeKind {
    Like,
    ILike,
}

/// Where an expression starts, found without recursion (a long `a AND b AND …` chain is a
/// left-deep tree; `Spanned::span` would walk all of it).
fn leftmost_leaf(e: &q::Expr) -> (Location, usize) {
    let mut e = e;
    let mut unary = 0;
    loop {
        e = match e {
            q::Expr::BinaryOp { left, .. } => left,
            q::Expr::IsNull(x) | q::Expr::IsNotNull(x) => x,
            q::Expr::In { expr, .. } | q::Expr::Between { expr, .. } => expr,
            q::Expr::Like { expr, .. } | q::Expr::ILike { expr, .. } => expr,
            q::Expr::Identifier(id) => return (id.span.start, unary),
            q::Expr::CompoundIdentifier(ids) => {
                return (ids.first().map_or(Location { line: 0, column: 0 }, |i| i.span.start), unary);
            }
            q::Expr::Value(v) => return (v.span.start, unary),
            q::Expr::UnaryOp { expr, .. } => {
                unary += 1;
                expr
            }
            q::Expr::Nested(expr) => expr,
            q::Expr::IsTrue(x) | q::Expr::IsNotTrue(x) | q::Expr::IsFalse(x) | q::Expr::IsNotFalse(x) => x,
            q::Expr::IsUnknown(x) | q::Expr::IsNotUnknown(x) => x,
            q::Expr::IsDistinctFrom(x, _) | q::Expr::IsNotDistinctFrom(x, _) => x,
            q::Expr::SimilarTo { expr, .. } | q::Expr::RLike { expr, .. } => expr,
            q::Expr::Cast { expr, .. } | q::Expr::Collate { expr, .. } => expr,
            q::Expr::AtTimeZone { timestamp, .. } => timestamp,
            q::Expr::AnyOp { left, .. } | q::Expr::AllOp { left, .. } => left,
            q::Expr::CompoundFieldAccess { root, .. } => root,
            q::Expr::Function(f) => return (f.name.span().start, unary),
            q::Expr::Case { case_token, .. } => return (case_token.0.span.start, unary),
            q::Expr::Subquery(query) | q::Expr::Exists { subquery: query, .. } => match &*query.body {
                q::SetExpr::Select(s) => return (s.select_token.0.span.start, unary),
                _ => return (Location { line: 0, column: 0 }, unary),
            },
            // Other nodes do not nest without bound (sqlparser limits recursion to 50 levels).
            other => return (other.span().start, unary),
        };
    }
}

/// Where a table factor starts, when it is a plain name.
fn factor_loc(f: &q::TableFactor) -> Option<Location> {
    match f {
        q::TableFactor::Table { name, .. } => Some(name.span().start),
        q::TableFactor::Derived { subquery, .. } => match &*subquery.body {
            q::SetExpr::Select(s) => Some(s.select_token.0.span.start),
            _ => None,
        },
        _ => None,
    }
}
