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
mod tests;
