//! Parser from query text to `ast::Condition<AttrRef>` / `ast::Expr<AttrRef>`. It owns the
//! grammar, precedence and syntax errors; it must not resolve names, check types or know any
//! collection's schema (that is `resolve`'s job).
//!
//! Expressions are parsed by precedence climbing over an explicit stack of pending
//! constructs rather than by native recursion: unoptimised builds spend kilobytes of stack
//! per recursive level, and the parser runs on async worker threads fed by untrusted input.

use thiserror::Error;

use super::ast::{AttrRef, BinOp, Condition, Expr, Func, Literal, OrderItem, UnOp};
use super::lexer::{Keyword, Token, TokenKind, tokenize};

/// A syntax error, located by byte offset into the query text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("at position {position}: {message}")]
pub struct ParseError {
    /// Byte offset into the input where the problem was found.
    pub position: usize,
    pub message: String,
}

/// The deepest expression tree we accept. Every later stage (resolution, SQL generation,
/// printing, even `Drop`) walks the tree recursively, so depth must be bounded here or a
/// hostile query could exhaust a worker thread's stack.
pub const MAX_DEPTH: usize = 256;

/// How many constructs may be open at once (parentheses, call arguments, operands awaiting
/// their operator). The canonical printer opens at most two per tree node (an operand and a
/// parenthesis), so this allowance lets every tree within `MAX_DEPTH` read back.
const MAX_NESTING: usize = 2 * MAX_DEPTH;

/// Binding powers, loosest first. An operator is taken only while its power is at least the
/// minimum of the construct being parsed; right operands of left-associative operators are
/// parsed at `power + 1`.
const BP_OR: u8 = 1;
const BP_AND: u8 = 2;
/// Operand of prefix `not`: comparisons and tighter, so `not a = 1` negates the comparison.
const BP_NOT: u8 = 3;
/// Comparisons, `like`, `in`, `between`, `is null`. Non-associative.
const BP_CMP: u8 = 4;
const BP_ADD: u8 = 5;
const BP_MUL: u8 = 6;
/// Operand of unary minus: a primary or another unary minus.
const BP_NEG: u8 = 7;

/// Parse a whole condition: an optional boolean expression followed by `order by`, `limit`
/// and `distinct` in any order. Empty or blank input is the empty condition.
pub fn parse_condition(s: &str) -> Result<Condition<AttrRef>, ParseError> {
    let mut p = Parser::new(s)?;
    let mut cond = Condition::default();
    if !p.at_modifier_or_end() {
        cond.filter = Some(p.expr()?.expr);
    }
    let mut seen_order = false;
    let mut seen_limit = false;
    loop {
        let at = p.peek().position;
        match p.peek().kind {
            TokenKind::Eof => return Ok(cond),
            TokenKind::Keyword(Keyword::Order) => {
                if seen_order {
                    return Err(error_at(at, "'order by' given twice"));
                }
                seen_order = true;
                p.bump();
                p.expect_keyword(Keyword::By)?;
                cond.order_by = p.order_items()?;
            }
            TokenKind::Keyword(Keyword::Limit) => {
                if seen_limit {
                    return Err(error_at(at, "'limit' given twice"));
                }
                seen_limit = true;
                p.bump();
                match p.peek().kind {
                    TokenKind::Int(v) => {
                        p.bump();
                        cond.limit = Some(v);
                    }
                    _ => return Err(p.expected("a non-negative integer after 'limit'")),
                }
            }
            // Repeating `distinct` is harmless, and gLibrary appends it to conditions that
            // may already carry it, so it is accepted rather than rejected.
            TokenKind::Keyword(Keyword::Distinct) => {
                p.bump();
                cond.distinct = true;
            }
            _ if cond.filter.is_some() || !cond.order_by.is_empty() => {
                return Err(p.expected("an operator, 'order by', 'limit', 'distinct' or end of input"));
            }
            _ => return Err(p.expected("'order by', 'limit', 'distinct' or end of input")),
        }
    }
}

/// Parse one expression that must span the whole input (a `selectattr` column or an
/// `updateattr` value).
pub fn parse_expr(s: &str) -> Result<Expr<AttrRef>, ParseError> {
    let mut p = Parser::new(s)?;
    let e = p.expr()?;
    if p.peek().kind != TokenKind::Eof {
        return Err(p.expected("an operator or end of input"));
    }
    Ok(e.expr)
}

fn error_at(position: usize, message: impl Into<String>) -> ParseError {
    ParseError { position, message: message.into() }
}

#[cold]
fn too_deep(position: usize) -> ParseError {
    error_at(position, format!("expression nested too deeply (limit {MAX_DEPTH})"))
}

/// An expression together with its tree height, carried so the depth bound can be checked
/// as nodes are built instead of by a second (recursive) walk.
struct Node {
    expr: Expr<AttrRef>,
    height: usize,
}

impl Node {
    fn leaf(expr: Expr<AttrRef>) -> Node {
        Node { expr, height: 1 }
    }

    /// A node over children of the given heights; `at` locates the operator for the error.
    fn new(at: usize, expr: Expr<AttrRef>, children: &[usize]) -> Result<Node, ParseError> {
        let height = 1 + children.iter().copied().max().unwrap_or(0);
        if height > MAX_DEPTH {
            return Err(too_deep(at));
        }
        Ok(Node { expr, height })
    }

    fn binary(at: usize, op: BinOp, l: Node, r: Node) -> Result<Node, ParseError> {
        let hs = [l.height, r.height];
        Node::new(at, Expr::Binary(op, Box::new(l.expr), Box::new(r.expr)), &hs)
    }

    fn unary(at: usize, op: UnOp, e: Node) -> Result<Node, ParseError> {
        let h = e.height;
        Node::new(at, Expr::Unary(op, Box::new(e.expr)), &[h])
    }

    fn like(at: usize, e: Node, pattern: Node, ci: bool, negated: bool) -> Result<Node, ParseError> {
        let hs = [e.height, pattern.height];
        let expr =
            Expr::Like { expr: Box::new(e.expr), pattern: Box::new(pattern.expr), case_insensitive: ci, negated };
        Node::new(at, expr, &hs)
    }
}

/// What the token after an operand does to it.
#[derive(Clone, Copy)]
enum Infix {
    Binary(BinOp),
    /// `is`, `like`, `ilike`, `in`, `between`, or `not` before one of the last four.
    Predicate,
}

/// What a parenthesised, comma-separated list is for.
enum ListKind {
    In { lhs: Node, negated: bool },
    Call(Func, String),
    LikeCall { ci: bool },
}

/// A construct whose next operand is being parsed, kept on the explicit stack.
enum Frame {
    /// The whole expression; closed by whatever cannot continue it.
    Top,
    Prefix {
        at: usize,
        op: UnOp,
    },
    Binary {
        at: usize,
        op: BinOp,
        lhs: Node,
    },
    Group,
    Like {
        at: usize,
        lhs: Node,
        ci: bool,
        negated: bool,
    },
    BetweenLow {
        at: usize,
        lhs: Node,
        negated: bool,
    },
    BetweenHigh {
        at: usize,
        lhs: Node,
        low: Node,
        negated: bool,
    },
    List {
        at: usize,
        kind: ListKind,
        items: Vec<Node>,
    },
}

impl Frame {
    /// The loosest operator that may extend this frame's pending operand.
    fn min_bp(&self) -> u8 {
        match self {
            Frame::Top | Frame::Group | Frame::List { .. } => 0,
            Frame::Prefix { op: UnOp::Not, .. } => BP_NOT,
            Frame::Prefix { op: UnOp::Neg, .. } => BP_NEG,
            Frame::Binary { op, .. } => binding_power(*op) + 1,
            Frame::Like { .. } | Frame::BetweenLow { .. } | Frame::BetweenHigh { .. } => BP_ADD,
        }
    }
}

fn binding_power(op: BinOp) -> u8 {
    match op {
        BinOp::Or => BP_OR,
        BinOp::And => BP_AND,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => BP_CMP,
        BinOp::Add | BinOp::Sub => BP_ADD,
        BinOp::Mul | BinOp::Div => BP_MUL,
    }
}

/// Where `expr` is in its loop: expecting an operand, or holding one and looking at what
/// follows it.
enum Step {
    Operand,
    After(Node),
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Returned by `peek` should the cursor ever pass the final `Eof`; keeps lookups total.
    eof: Token,
}

impl Parser {
    fn new(s: &str) -> Result<Parser, ParseError> {
        let tokens = tokenize(s)?;
        let eof = Token { kind: TokenKind::Eof, position: s.len() };
        Ok(Parser { tokens, pos: 0, eof })
    }

    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&self.eof)
    }

    fn peek_nth(&self, n: usize) -> &TokenKind {
        &self.tokens.get(self.pos + n).unwrap_or(&self.eof).kind
    }

    fn bump(&mut self) {
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
    }

    /// Consume the current token and hand over its contents without cloning them.
    fn take(&mut self) -> TokenKind {
        let kind = match self.tokens.get_mut(self.pos) {
            Some(t) => std::mem::replace(&mut t.kind, TokenKind::Eof),
            None => TokenKind::Eof,
        };
        self.bump();
        kind
    }

    fn eat(&mut self, kind: &TokenKind) -> bool {
        if &self.peek().kind == kind {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_keyword(&mut self, k: Keyword) -> bool {
        self.eat(&TokenKind::Keyword(k))
    }

    #[cold]
    fn expected(&self, what: &str) -> ParseError {
        let tok = self.peek();
        error_at(tok.position, format!("expected {what} but found {}", tok.kind))
    }

    fn expect(&mut self, kind: &TokenKind) -> Result<(), ParseError> {
        if self.eat(kind) { Ok(()) } else { Err(self.expected(&kind.to_string())) }
    }

    fn expect_keyword(&mut self, k: Keyword) -> Result<(), ParseError> {
        if self.eat_keyword(k) { Ok(()) } else { Err(self.expected(&format!("'{}'", k.as_str()))) }
    }

    fn at_modifier_or_end(&self) -> bool {
        matches!(
            self.peek().kind,
            TokenKind::Eof | TokenKind::Keyword(Keyword::Order | Keyword::Limit | Keyword::Distinct)
        )
    }

    /// `<expr> [asc|desc] {, <expr> [asc|desc]}` after `order by`.
    fn order_items(&mut self) -> Result<Vec<OrderItem<AttrRef>>, ParseError> {
        let mut items = Vec::new();
        loop {
            let expr = self.expr()?.expr;
            let descending = self.eat_keyword(Keyword::Desc);
            if !descending {
                self.eat_keyword(Keyword::Asc);
            }
            items.push(OrderItem { expr, descending });
            if !self.eat(&TokenKind::Comma) {
                return Ok(items);
            }
        }
    }

    /// The operator at the cursor, if the cursor is in operator position, with its power.
    fn infix(&self) -> Option<(u8, Infix)> {
        let bin = |op| Some((binding_power(op), Infix::Binary(op)));
        match self.peek().kind {
            TokenKind::Keyword(Keyword::Or) => bin(BinOp::Or),
            TokenKind::Keyword(Keyword::And) => bin(BinOp::And),
            TokenKind::Eq => bin(BinOp::Eq),
            TokenKind::Ne => bin(BinOp::Ne),
            TokenKind::Lt => bin(BinOp::Lt),
            TokenKind::Le => bin(BinOp::Le),
            TokenKind::Gt => bin(BinOp::Gt),
            TokenKind::Ge => bin(BinOp::Ge),
            TokenKind::Plus => bin(BinOp::Add),
            TokenKind::Minus => bin(BinOp::Sub),
            TokenKind::Star => bin(BinOp::Mul),
            TokenKind::Slash => bin(BinOp::Div),
            // `not` here can only begin `not like|ilike|in|between`; `operator` reports
            // anything else (as in `a not = b`).
            TokenKind::Keyword(
                Keyword::Is | Keyword::Like | Keyword::Ilike | Keyword::In | Keyword::Between | Keyword::Not,
            ) => Some((BP_CMP, Infix::Predicate)),
            _ => None,
        }
    }

    fn push(&self, stack: &mut Vec<Frame>, frame: Frame) -> Result<(), ParseError> {
        if stack.len() >= MAX_NESTING {
            return Err(error_at(
                self.peek().position,
                format!("expression nested too deeply (over {MAX_NESTING} open parentheses and operators)"),
            ));
        }
        stack.push(frame);
        Ok(())
    }

    /// One expression. Each iteration either opens a construct (pushing a frame and asking
    /// for its operand) or closes the innermost one with the operand just parsed.
    fn expr(&mut self) -> Result<Node, ParseError> {
        let mut stack = vec![Frame::Top];
        let mut step = Step::Operand;
        loop {
            let min = stack.last().map_or(0, Frame::min_bp);
            step = match step {
                Step::Operand => self.operand(&mut stack, min)?,
                Step::After(lhs) => match self.infix() {
                    Some((bp, infix)) if bp >= min => self.operator(&mut stack, lhs, infix)?,
                    _ => {
                        let Some(frame) = stack.pop() else {
                            return Ok(lhs);
                        };
                        if let Frame::Top = frame {
                            return Ok(lhs);
                        }
                        self.close(&mut stack, frame, lhs)?
                    }
                },
            };
        }
    }

    /// In operand position: open a prefix construct, or read an atom.
    fn operand(&mut self, stack: &mut Vec<Frame>, min: u8) -> Result<Step, ParseError> {
        let at = self.peek().position;
        let frame = match self.peek().kind {
            // `not` binds looser than comparisons, so it cannot start an operand of one
            // (`a = not b` needs parentheses), as the precedence table says.
            TokenKind::Keyword(Keyword::Not) if min <= BP_NOT => Frame::Prefix { at, op: UnOp::Not },
            TokenKind::Minus => Frame::Prefix { at, op: UnOp::Neg },
            TokenKind::LParen => Frame::Group,
            TokenKind::Keyword(k @ (Keyword::Like | Keyword::Ilike)) if self.peek_nth(1) == &TokenKind::LParen => {
                self.bump();
                let ci = k == Keyword::Ilike;
                Frame::List { at, kind: ListKind::LikeCall { ci }, items: Vec::new() }
            }
            TokenKind::Ident(_) if self.peek_nth(1) == &TokenKind::LParen => {
                let TokenKind::Ident(name) = self.take() else {
                    return Err(self.expected("a function name"));
                };
                let func = if name.eq_ignore_ascii_case("lower") {
                    Func::Lower
                } else if name.eq_ignore_ascii_case("upper") {
                    Func::Upper
                } else {
                    return Err(error_at(at, format!("unknown function '{name}'")));
                };
                Frame::List { at, kind: ListKind::Call(func, name), items: Vec::new() }
            }
            _ => return Ok(Step::After(self.atom()?)),
        };
        self.push(stack, frame)?;
        // Every opening construct ends on a token that has not been consumed yet: the
        // prefix operator, `(`, or the `(` after a function name.
        self.bump();
        Ok(Step::Operand)
    }

    /// In operator position with an operator that binds tightly enough: open its construct.
    fn operator(&mut self, stack: &mut Vec<Frame>, lhs: Node, infix: Infix) -> Result<Step, ParseError> {
        let at = self.peek().position;
        if let Infix::Binary(op) = infix {
            self.bump();
            self.push(stack, Frame::Binary { at, op, lhs })?;
            return Ok(Step::Operand);
        }
        let negated = self.eat_keyword(Keyword::Not);
        let frame = match self.peek().kind {
            TokenKind::Keyword(Keyword::Is) if !negated => {
                self.bump();
                let negated = self.eat_keyword(Keyword::Not);
                self.expect_keyword(Keyword::Null)?;
                let h = lhs.height;
                let node = Node::new(at, Expr::IsNull { expr: Box::new(lhs.expr), negated }, &[h])?;
                return self.after_comparison(node);
            }
            TokenKind::Keyword(k @ (Keyword::Like | Keyword::Ilike)) => {
                Frame::Like { at, lhs, ci: k == Keyword::Ilike, negated }
            }
            TokenKind::Keyword(Keyword::In) => {
                self.bump();
                if self.peek().kind != TokenKind::LParen {
                    return Err(self.expected("'('"));
                }
                Frame::List { at, kind: ListKind::In { lhs, negated }, items: Vec::new() }
            }
            TokenKind::Keyword(Keyword::Between) => Frame::BetweenLow { at, lhs, negated },
            _ => return Err(self.expected("'like', 'ilike', 'in' or 'between' after 'not'")),
        };
        self.push(stack, frame)?;
        // The keyword, or the `(` after `in`.
        self.bump();
        Ok(Step::Operand)
    }

    /// No operator can extend `lhs` within `frame`, so `lhs` completes `frame`.
    fn close(&mut self, stack: &mut Vec<Frame>, frame: Frame, lhs: Node) -> Result<Step, ParseError> {
        match frame {
            Frame::Top => Ok(Step::After(lhs)),
            Frame::Prefix { at, op } => Ok(Step::After(Node::unary(at, op, lhs)?)),
            Frame::Binary { at, op, lhs: left } => {
                let node = Node::binary(at, op, left, lhs)?;
                if op.is_comparison() { self.after_comparison(node) } else { Ok(Step::After(node)) }
            }
            Frame::Group => {
                self.expect(&TokenKind::RParen)?;
                Ok(Step::After(lhs))
            }
            Frame::Like { at, lhs: left, ci, negated } => {
                self.after_comparison(Node::like(at, left, lhs, ci, negated)?)
            }
            Frame::BetweenLow { at, lhs: left, negated } => {
                self.expect_keyword(Keyword::And)?;
                self.push(stack, Frame::BetweenHigh { at, lhs: left, low: lhs, negated })?;
                Ok(Step::Operand)
            }
            Frame::BetweenHigh { at, lhs: left, low, negated } => {
                let hs = [left.height, low.height, lhs.height];
                let e = Expr::Between {
                    expr: Box::new(left.expr),
                    low: Box::new(low.expr),
                    high: Box::new(lhs.expr),
                    negated,
                };
                self.after_comparison(Node::new(at, e, &hs)?)
            }
            Frame::List { at, kind, mut items } => {
                items.push(lhs);
                if self.eat(&TokenKind::Comma) {
                    self.push(stack, Frame::List { at, kind, items })?;
                    return Ok(Step::Operand);
                }
                if !self.eat(&TokenKind::RParen) {
                    return Err(self.expected("',' or ')'"));
                }
                self.finish_list(at, kind, items)
            }
        }
    }

    fn finish_list(&mut self, at: usize, kind: ListKind, items: Vec<Node>) -> Result<Step, ParseError> {
        let arity_error = |name: &str, arity: usize, given: usize| {
            let plural = if arity == 1 { "argument" } else { "arguments" };
            error_at(at, format!("{name}() takes {arity} {plural} but was given {given}"))
        };
        match kind {
            ListKind::In { lhs, negated } => {
                let h = items.iter().map(|n| n.height).fold(lhs.height, usize::max);
                let list = items.into_iter().map(|n| n.expr).collect();
                let node = Node::new(at, Expr::InList { expr: Box::new(lhs.expr), list, negated }, &[h])?;
                self.after_comparison(node)
            }
            ListKind::Call(func, name) => {
                if items.len() != 1 {
                    return Err(arity_error(&name, 1, items.len()));
                }
                let h = items.iter().map(|n| n.height).max().unwrap_or(0);
                let args = items.into_iter().map(|n| n.expr).collect();
                Ok(Step::After(Node::new(at, Expr::Call(func, args), &[h])?))
            }
            ListKind::LikeCall { ci } => {
                let name = if ci { "ilike" } else { "like" };
                let given = items.len();
                let mut it = items.into_iter();
                match (it.next(), it.next(), it.next()) {
                    (Some(e), Some(pattern), None) => Ok(Step::After(Node::like(at, e, pattern, ci, false)?)),
                    _ => Err(arity_error(name, 2, given)),
                }
            }
        }
    }

    /// Comparisons do not associate: `a = b = c` is rejected rather than silently meaning
    /// `(a = b) = c`.
    fn after_comparison(&self, node: Node) -> Result<Step, ParseError> {
        match self.infix() {
            Some((BP_CMP, _)) => {
                let tok = self.peek();
                Err(error_at(tok.position, format!("comparisons do not chain; add parentheses before {}", tok.kind)))
            }
            _ => Ok(Step::After(node)),
        }
    }

    /// A literal or a reference: the operands that open no construct.
    fn atom(&mut self) -> Result<Node, ParseError> {
        let at = self.peek().position;
        let lit = |l| Ok(Node::leaf(Expr::Lit(l)));
        match self.peek().kind {
            TokenKind::Int(_)
            | TokenKind::Float(_)
            | TokenKind::Str(_)
            | TokenKind::Ident(_)
            | TokenKind::PathRef { .. }
            | TokenKind::Keyword(Keyword::True | Keyword::False | Keyword::Null) => {}
            _ => return Err(self.expected("an expression")),
        }
        match self.take() {
            TokenKind::Int(n) => match i64::try_from(n) {
                Ok(v) => lit(Literal::Int(v)),
                Err(_) => Err(error_at(at, format!("integer {n} is out of range"))),
            },
            TokenKind::Float(x) => lit(Literal::Float(x)),
            TokenKind::Str(s) => lit(Literal::Str(s)),
            TokenKind::Keyword(Keyword::True) => lit(Literal::Bool(true)),
            TokenKind::Keyword(Keyword::False) => lit(Literal::Bool(false)),
            TokenKind::Ident(attr) => Ok(Node::leaf(Expr::Ref(AttrRef { collection: None, attr }))),
            TokenKind::PathRef { collection, attr } => {
                Ok(Node::leaf(Expr::Ref(AttrRef { collection: Some(collection), attr })))
            }
            _ => lit(Literal::Null),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(collection: Option<&str>, attr: &str) -> Expr<AttrRef> {
        Expr::Ref(AttrRef { collection: collection.map(str::to_owned), attr: attr.to_owned() })
    }

    fn bare(attr: &str) -> Expr<AttrRef> {
        r(None, attr)
    }

    fn int(n: i64) -> Expr<AttrRef> {
        Expr::Lit(Literal::Int(n))
    }

    fn s(v: &str) -> Expr<AttrRef> {
        Expr::Lit(Literal::Str(v.to_owned()))
    }

    fn bin(op: BinOp, a: Expr<AttrRef>, b: Expr<AttrRef>) -> Expr<AttrRef> {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    fn cond(src: &str) -> Condition<AttrRef> {
        match parse_condition(src) {
            Ok(c) => c,
            Err(e) => panic!("{src:?} should parse: {e}"),
        }
    }

    fn filter(src: &str) -> Expr<AttrRef> {
        match cond(src).filter {
            Some(f) => f,
            None => panic!("{src:?} should have a filter"),
        }
    }

    fn expr(src: &str) -> Expr<AttrRef> {
        match parse_expr(src) {
            Ok(e) => e,
            Err(e) => panic!("{src:?} should parse: {e}"),
        }
    }

    fn cond_err(src: &str) -> ParseError {
        match parse_condition(src) {
            Ok(c) => panic!("{src:?} should fail but gave {c:?}"),
            Err(e) => e,
        }
    }

    #[track_caller]
    fn assert_err(src: &str, position: usize, needle: &str) {
        let e = cond_err(src);
        assert_eq!(e.position, position, "{src:?}: {e}");
        assert!(e.message.contains(needle), "{src:?}: {e} should mention {needle:?}");
    }

    #[test]
    fn amga_join_example() {
        let want = bin(
            BinOp::And,
            bin(BinOp::Gt, r(Some("/jobdir"), "events"), int(1000)),
            bin(BinOp::Eq, r(Some("/configdir"), "key"), r(Some("/jobdir"), "key")),
        );
        assert_eq!(filter("/jobdir:events>1000 and /configdir:key=/jobdir:key"), want);
    }

    #[test]
    fn amga_like_function() {
        let want = Expr::Like {
            expr: Box::new(r(Some("/jobdir"), "FILE")),
            pattern: Box::new(s("t%")),
            case_insensitive: false,
            negated: false,
        };
        assert_eq!(filter(r#"like(/jobdir:FILE, "t%")"#), want);
        assert_eq!(filter(r#"LIKE(/jobdir:FILE,"t%")"#), want);
        let infix = filter(r#"/jobdir:FILE like "t%""#);
        assert_eq!(infix, want);
        let Expr::Like { case_insensitive, negated, .. } = filter(r#"ilike(a, "x")"#) else {
            panic!("ilike() is a Like");
        };
        assert!(case_insensitive && !negated);
    }

    #[test]
    fn amga_simple_conditions() {
        assert_eq!(filter(r#"FILE="t1""#), bin(BinOp::Eq, bare("FILE"), s("t1")));
        assert_eq!(filter(r#"/pytest:FILE="t1""#), bin(BinOp::Eq, r(Some("/pytest"), "FILE"), s("t1")));
        assert_eq!(
            filter("/pytest:events = /pylock:id"),
            bin(BinOp::Eq, r(Some("/pytest"), "events"), r(Some("/pylock"), "id"))
        );
        assert_eq!(expr("sssin + 1"), bin(BinOp::Add, bare("sssin"), int(1)));
        assert_eq!(expr("/d:a"), r(Some("/d"), "a"));
        assert_eq!(expr("\"done\""), s("done"));
        assert_eq!(expr("rel/dir:x"), r(Some("rel/dir"), "x"));
    }

    #[test]
    fn glibrary_distinct_suffix() {
        let c = cond(r#"FILE="x" distinct "#);
        assert!(c.distinct);
        assert_eq!(c.filter, Some(bin(BinOp::Eq, bare("FILE"), s("x"))));
        assert!(cond(r#"FILE="x" DISTINCT distinct"#).distinct);
    }

    #[test]
    fn full_condition_with_modifiers() {
        let c = cond("a in (1,2,3) and b between 1 and 5 and c is not null order by a desc, b limit 10");
        let want = bin(
            BinOp::And,
            bin(
                BinOp::And,
                Expr::InList { expr: Box::new(bare("a")), list: vec![int(1), int(2), int(3)], negated: false },
                Expr::Between {
                    expr: Box::new(bare("b")),
                    low: Box::new(int(1)),
                    high: Box::new(int(5)),
                    negated: false,
                },
            ),
            Expr::IsNull { expr: Box::new(bare("c")), negated: true },
        );
        assert_eq!(c.filter, Some(want));
        assert_eq!(
            c.order_by,
            vec![OrderItem { expr: bare("a"), descending: true }, OrderItem { expr: bare("b"), descending: false }]
        );
        assert_eq!(c.limit, Some(10));
        assert!(!c.distinct);
    }

    #[test]
    fn modifiers_in_any_order_and_without_filter() {
        let c = cond("distinct limit 3 order by x asc");
        assert_eq!(c.filter, None);
        assert!(c.distinct);
        assert_eq!(c.limit, Some(3));
        assert_eq!(c.order_by, vec![OrderItem { expr: bare("x"), descending: false }]);
        assert_eq!(cond("ORDER BY /d:x DESC").order_by.len(), 1);
        assert_eq!(cond("limit 18446744073709551615").limit, Some(u64::MAX));
    }

    #[test]
    fn empty_input_is_the_empty_condition() {
        assert_eq!(cond(""), Condition::default());
        assert_eq!(cond(" \t\n "), Condition::default());
    }

    #[test]
    fn arithmetic_is_left_associative_with_precedence() {
        assert_eq!(expr("1 - 2 - 3"), bin(BinOp::Sub, bin(BinOp::Sub, int(1), int(2)), int(3)));
        assert_eq!(expr("8 / 4 / 2"), bin(BinOp::Div, bin(BinOp::Div, int(8), int(4)), int(2)));
        assert_eq!(expr("1 + 2 * 3"), bin(BinOp::Add, int(1), bin(BinOp::Mul, int(2), int(3))));
        assert_eq!(expr("(1 + 2) * 3"), bin(BinOp::Mul, bin(BinOp::Add, int(1), int(2)), int(3)));
        let neg = |e| Expr::Unary(UnOp::Neg, Box::new(e));
        assert_eq!(expr("-a * b"), bin(BinOp::Mul, neg(bare("a")), bare("b")));
        assert_eq!(expr("- -1"), neg(neg(int(1))));
        assert_eq!(expr("a-1"), bin(BinOp::Sub, bare("a"), int(1)));
        assert_eq!(expr("a/b"), bin(BinOp::Div, bare("a"), bare("b")));
        assert_eq!(expr("/d:a/2"), bin(BinOp::Div, r(Some("/d"), "a"), int(2)));
    }

    #[test]
    fn boolean_precedence() {
        assert_eq!(filter("a or b and c"), bin(BinOp::Or, bare("a"), bin(BinOp::And, bare("b"), bare("c"))));
        assert_eq!(filter("a and b or c"), bin(BinOp::Or, bin(BinOp::And, bare("a"), bare("b")), bare("c")));
        let not = |e| Expr::Unary(UnOp::Not, Box::new(e));
        assert_eq!(filter("not a = 1"), not(bin(BinOp::Eq, bare("a"), int(1))));
        assert_eq!(filter("not a and b"), bin(BinOp::And, not(bare("a")), bare("b")));
        assert_eq!(filter("NOT not x"), not(not(bare("x"))));
        assert_eq!(
            filter("a + 1 > b * 2"),
            bin(BinOp::Gt, bin(BinOp::Add, bare("a"), int(1)), bin(BinOp::Mul, bare("b"), int(2)))
        );
    }

    #[test]
    fn negated_predicates() {
        assert_eq!(
            filter(r#"x not ilike "A%""#),
            Expr::Like { expr: Box::new(bare("x")), pattern: Box::new(s("A%")), case_insensitive: true, negated: true }
        );
        assert!(matches!(filter("x not in (1)"), Expr::InList { negated: true, .. }));
        assert!(matches!(filter("x not between 1 and 2"), Expr::Between { negated: true, .. }));
        assert!(matches!(filter("x is null"), Expr::IsNull { negated: false, .. }));
    }

    #[test]
    fn literals_and_calls() {
        assert_eq!(expr("1.5"), Expr::Lit(Literal::Float(1.5)));
        assert_eq!(expr("1e3"), Expr::Lit(Literal::Float(1000.0)));
        assert_eq!(expr(".5"), Expr::Lit(Literal::Float(0.5)));
        assert_eq!(expr("TRUE"), Expr::Lit(Literal::Bool(true)));
        assert_eq!(expr("false"), Expr::Lit(Literal::Bool(false)));
        assert_eq!(expr("Null"), Expr::Lit(Literal::Null));
        assert_eq!(expr(r#""a\"b\\c""#), s("a\"b\\c"));
        assert_eq!(expr("9223372036854775807"), int(i64::MAX));
        assert_eq!(expr("LOWER(x)"), Expr::Call(Func::Lower, vec![bare("x")]));
        assert_eq!(expr("upper (/d:x)"), Expr::Call(Func::Upper, vec![r(Some("/d"), "x")]));
        // Without a following `(` these are ordinary attribute names.
        assert_eq!(expr("lower"), bare("lower"));
    }

    #[test]
    fn syntax_errors_point_at_the_problem() {
        assert_err(r#"FILE = "abc"#, 7, "unterminated string");
        assert_err("a = ", 4, "expected an expression but found end of input");
        assert_err("(a", 2, "expected ')' but found end of input");
        assert_err("a ==", 3, "expected an expression but found '='");
        assert_err("1 2", 2, "found number 2");
        assert_err("order by", 8, "expected an expression but found end of input");
        assert_err("order x", 6, "expected 'by'");
        assert_err("limit -1", 6, "expected a non-negative integer after 'limit' but found '-'");
        assert_err("limit x", 6, "found identifier 'x'");
        assert_err("limit", 5, "found end of input");
        assert_err("limit 1 limit 2", 8, "twice");
        assert_err("order by a order by b", 11, "twice");
        assert_err("a = b = c", 6, "do not chain");
        assert_err("a < b is null", 6, "do not chain");
        assert_err("a like b not like c", 9, "do not chain");
        assert_err("a not = b", 6, "expected 'like', 'ilike', 'in' or 'between'");
        assert_err("a is b", 5, "expected 'null'");
        assert_err("a in 1", 5, "expected '('");
        assert_err("a in ()", 6, "expected an expression");
        assert_err("a in (1 2)", 8, "expected ',' or ')'");
        assert_err("a between 1", 11, "expected 'and'");
        assert_err("foo(1)", 0, "unknown function 'foo'");
        assert_err("lower(1, 2)", 0, "takes 1 argument");
        assert_err("like(a)", 0, "takes 2 arguments");
        assert_err("9223372036854775808", 0, "out of range");
        assert_err("and", 0, "found keyword 'and'");
        assert_err("a = 1 b", 6, "expected an operator");
        assert_err("x.y = 1", 1, "unexpected character '.'");
        assert_err("/d: x = 1", 3, "attribute name");
        assert_err("a = 1;", 5, "unexpected character ';'");
        assert_err("a = 1\0", 5, "control character");
        let e = parse_expr("a b").expect_err("trailing input");
        assert_eq!(e.position, 2);
        let e = parse_expr("").expect_err("empty expression");
        assert_eq!((e.position, e.message.as_str()), (0, "expected an expression but found end of input"));
    }

    #[test]
    fn error_display_names_position() {
        let e = cond_err("(a");
        assert_eq!(e.to_string(), "at position 2: expected ')' but found end of input");
    }

    #[test]
    fn injection_looking_input_is_a_clean_error() {
        assert_err("'; drop table x; --", 0, "double quotes");
        assert_err("FILE = \"x\"; drop table x; --", 10, "';'");
        // `--` is not a comment: it is two minus signs, so nothing can be hidden after it.
        assert_eq!(
            filter("FILE = 1 -- b"),
            bin(BinOp::Eq, bare("FILE"), bin(BinOp::Sub, int(1), Expr::Unary(UnOp::Neg, Box::new(bare("b")))))
        );
        assert_err("FILE = 1 -- drop table x", 17, "found identifier 'table'");
        // Inside a string it is just data.
        assert_eq!(filter(r#"FILE = "'; drop table x; --""#), bin(BinOp::Eq, bare("FILE"), s("'; drop table x; --")));
    }

    #[test]
    fn keywords_are_never_references() {
        assert_err("limit = 1", 6, "expected a non-negative integer");
        assert_err("a = or", 4, "found keyword 'or'");
        // After a `:` a keyword is just an attribute name.
        assert_eq!(expr("/d:order"), r(Some("/d"), "order"));
    }

    /// Run `f` on a thread with a deliberately small stack (an eighth of a tokio worker's),
    /// so the test fails loudly if parsing ever starts to recurse per nesting level again.
    fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let handle = std::thread::Builder::new().stack_size(256 * 1024).spawn(f).expect("spawn test thread");
        match handle.join() {
            Ok(v) => v,
            Err(_) => panic!("parser thread panicked"),
        }
    }

    #[test]
    fn depth_limit_is_an_error_not_a_crash() {
        on_small_stack(|| {
            let n = MAX_NESTING - 1;
            let ok = format!("{}a{}", "(".repeat(n), ")".repeat(n));
            assert!(parse_condition(&ok).is_ok(), "{n} parentheses are within the limit");
            let over = format!("{}a{}", "(".repeat(n + 1), ")".repeat(n + 1));
            assert!(parse_condition(&over).is_err(), "{} parentheses are too many", n + 1);
            let chain = vec!["a"; MAX_DEPTH].join(" + ");
            assert!(parse_expr(&chain).is_ok(), "a chain of height {MAX_DEPTH} is accepted");
            let chain = vec!["a"; MAX_DEPTH + 1].join(" + ");
            assert!(parse_expr(&chain).is_err(), "one more operand is too deep");
            for deep in [
                format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000)),
                "not ".repeat(100_000) + "a",
                "-".repeat(100_000) + "a",
                format!("{}a", "lower(".repeat(50_000)),
                vec!["a"; 100_000].join(" + "),
                vec!["a"; 100_000].join(" or "),
                vec!["a = 1"; 100_000].join(" and "),
            ] {
                let e = parse_condition(&deep).expect_err("too deep");
                assert!(e.message.contains("nested too deeply"), "{e}");
            }
            // Wide is fine: a long `in` list is not deep.
            let wide = format!("a in ({})", vec!["1"; 10_000].join(","));
            assert!(parse_condition(&wide).is_ok());
        });
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(src in "\\PC{0,200}") {
            let _ = parse_condition(&src);
            let _ = parse_expr(&src);
        }

        #[test]
        fn query_shaped_text_never_panics(
            src in "([a-z]{1,3}|/[a-z/]{0,4}:[a-z]{1,2}|[0-9.e]{1,3}|\"[a-z\\\\\"]{0,3}\"?|[-+*/=<>!(),]| |and|or|not|like|in|between|is|null|order by|limit|distinct|asc|desc){0,24}"
        ) {
            let c = parse_condition(&src);
            if let Err(e) = &c {
                proptest::prop_assert!(e.position <= src.len());
                proptest::prop_assert!(src.is_char_boundary(e.position));
            }
            let _ = parse_expr(&src);
        }
    }
}
