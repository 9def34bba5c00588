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

mod expr;
mod statements;

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
