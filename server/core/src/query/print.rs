//! Canonical text for parsed queries: `Display` for `Expr<AttrRef>`, `Condition<AttrRef>` and
//! `Literal`, written so that the parser reads it back to the same tree. It must not decide
//! anything about meaning; it only has to agree with the parser's grammar.
//!
//! Every compound sub-expression is parenthesised, so the printer never needs to reason
//! about precedence; only the outermost expression goes without parentheses.
//!
//! Trees the parser never builds have no exact spelling: negative numeric literals print as
//! unary minus applied to the magnitude, non-finite floats as the IEEE division that yields
//! them, and a bare reference named like a keyword or an empty `in ()` list print as-is
//! (and will not parse).

use std::fmt::{self, Display, Formatter, Write};

use super::ast::{AttrRef, BinOp, Condition, Expr, Func, Literal, UnOp};

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            // Its magnitude is one more than i64::MAX, so `-9223372036854775808` would be
            // rejected as out of range.
            Literal::Int(i64::MIN) => write!(f, "(-{} - 1)", i64::MAX),
            Literal::Int(n) => write!(f, "{n}"),
            Literal::Float(x) if x.is_nan() => f.write_str("(0.0 / 0.0)"),
            Literal::Float(x) if x.is_infinite() => {
                let sign = if x.is_sign_negative() { "-" } else { "" };
                write!(f, "({sign}1.0 / 0.0)")
            }
            // Debug, unlike Display, always shows a `.` or an exponent, so the text lexes back
            // as a float rather than an integer, and uses exponents for huge magnitudes that
            // would otherwise print hundreds of digits.
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Str(s) => {
                f.write_char('"')?;
                for c in s.chars() {
                    if matches!(c, '"' | '\\') {
                        f.write_char('\\')?;
                    }
                    f.write_char(c)?;
                }
                f.write_char('"')
            }
            Literal::Bool(true) => f.write_str("true"),
            Literal::Bool(false) => f.write_str("false"),
            Literal::Null => f.write_str("null"),
        }
    }
}

impl Display for Expr<AttrRef> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_expr(f, self, false)
    }
}

impl Display for Condition<AttrRef> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(e) = &self.filter {
            write!(f, "{e}")?;
            sep = " ";
        }
        if !self.order_by.is_empty() {
            write!(f, "{sep}order by ")?;
            for (i, item) in self.order_by.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{}", item.expr)?;
                if item.descending {
                    f.write_str(" desc")?;
                }
            }
            sep = " ";
        }
        if let Some(n) = self.limit {
            write!(f, "{sep}limit {n}")?;
            sep = " ";
        }
        if self.distinct {
            write!(f, "{sep}distinct")?;
        }
        Ok(())
    }
}

fn binop_str(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Eq => "=",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::And => "and",
        BinOp::Or => "or",
    }
}

fn not_str(negated: bool) -> &'static str {
    if negated { "not " } else { "" }
}

/// Write `e`; `nested` asks for parentheses around anything that is not a single token
/// or call, which is what makes the output independent of precedence.
fn write_expr(f: &mut Formatter<'_>, e: &Expr<AttrRef>, nested: bool) -> fmt::Result {
    let atomic = matches!(e, Expr::Lit(_) | Expr::Ref(_) | Expr::Call(..));
    let paren = nested && !atomic;
    if paren {
        f.write_char('(')?;
    }
    match e {
        Expr::Lit(l) => write!(f, "{l}")?,
        Expr::Ref(r) => write!(f, "{r}")?,
        Expr::Unary(UnOp::Not, inner) => {
            f.write_str("not ")?;
            write_expr(f, inner, true)?;
        }
        Expr::Unary(UnOp::Neg, inner) => {
            f.write_char('-')?;
            write_expr(f, inner, true)?;
        }
        Expr::Binary(op, a, b) => {
            write_expr(f, a, true)?;
            write!(f, " {} ", binop_str(*op))?;
            write_expr(f, b, true)?;
        }
        Expr::Call(Func::Aggregate(agg, distinct), args) => {
            // Native SQL only; printed in SQL form (the condition language cannot read it back).
            f.write_str(agg.name())?;
            match (args.as_slice(), distinct) {
                ([], _) => f.write_str("(*)")?,
                ([a], true) => {
                    f.write_str("(distinct ")?;
                    write_expr(f, a, false)?;
                    f.write_char(')')?;
                }
                _ => write_list(f, args)?,
            }
        }
        Expr::Call(func, args) => {
            f.write_str(match func {
                Func::Lower => "lower",
                Func::Upper => "upper",
                Func::Aggregate(..) => unreachable!("handled above"),
            })?;
            write_list(f, args)?;
        }
        Expr::Like { expr, pattern, case_insensitive, negated } => {
            write_expr(f, expr, true)?;
            let op = if *case_insensitive { "ilike" } else { "like" };
            write!(f, " {}{op} ", not_str(*negated))?;
            write_expr(f, pattern, true)?;
        }
        Expr::InList { expr, list, negated } => {
            write_expr(f, expr, true)?;
            write!(f, " {}in ", not_str(*negated))?;
            write_list(f, list)?;
        }
        Expr::Between { expr, low, high, negated } => {
            write_expr(f, expr, true)?;
            write!(f, " {}between ", not_str(*negated))?;
            write_expr(f, low, true)?;
            f.write_str(" and ")?;
            write_expr(f, high, true)?;
        }
        Expr::IsNull { expr, negated } => {
            write_expr(f, expr, true)?;
            write!(f, " is {}null", not_str(*negated))?;
        }
    }
    if paren {
        f.write_char(')')?;
    }
    Ok(())
}

/// `(a, b, …)`. Items are delimited by commas and the parentheses, so they need none of
/// their own.
fn write_list(f: &mut Formatter<'_>, items: &[Expr<AttrRef>]) -> fmt::Result {
    f.write_char('(')?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_expr(f, item, false)?;
    }
    f.write_char(')')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::ast::OrderItem;
    use super::super::lexer::is_keyword;
    use super::super::parser::{MAX_DEPTH, parse_condition, parse_expr};
    use super::*;

    fn reprint(src: &str) -> String {
        match parse_condition(src) {
            Ok(c) => c.to_string(),
            Err(e) => panic!("{src:?} should parse: {e}"),
        }
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(
            reprint("/jobdir:events>1000 and /configdir:key=/jobdir:key"),
            "(/jobdir:events > 1000) and (/configdir:key = /jobdir:key)"
        );
        assert_eq!(reprint(r#"like(/jobdir:FILE, "t%")"#), r#"/jobdir:FILE like "t%""#);
        assert_eq!(reprint("1 - 2 - 3"), "(1 - 2) - 3");
        assert_eq!(reprint("1 - (2 - 3)"), "1 - (2 - 3)");
        assert_eq!(reprint("NOT a OR b"), "(not a) or b");
        assert_eq!(reprint("-(-x)"), "-(-x)");
        assert_eq!(
            reprint("a in (1,2,3) and b between 1 and 5 and c is not null order by a desc, b limit 10"),
            "((a in (1, 2, 3)) and (b between 1 and 5)) and (c is not null) order by a desc, b limit 10"
        );
        assert_eq!(reprint(r#"FILE="x" distinct "#), r#"FILE = "x" distinct"#);
        assert_eq!(reprint("distinct LIMIT 2"), "limit 2 distinct");
        assert_eq!(reprint(" "), "");
        assert_eq!(reprint(r#"x not ilike upper("a\"b\\c\d")"#), r#"x not ilike upper("a\"b\\cd")"#);
    }

    #[test]
    fn literal_spelling() {
        assert_eq!(Literal::Int(-5).to_string(), "-5");
        assert_eq!(Literal::Float(1.0).to_string(), "1.0");
        assert_eq!(Literal::Float(1e300).to_string(), "1e300");
        assert_eq!(Literal::Str("a\"\\".to_owned()).to_string(), r#""a\"\\""#);
        assert_eq!(Literal::Bool(true).to_string(), "true");
        assert_eq!(Literal::Null.to_string(), "null");
    }

    /// Literals without an exact spelling still print as something with the same value,
    /// never as text that would silently mean something else (such as a reference `inf`).
    #[test]
    fn unrepresentable_literals_keep_their_value() {
        let min = parse_expr(&Literal::Int(i64::MIN).to_string()).expect("parses");
        assert_eq!(
            min,
            Expr::Binary(
                BinOp::Sub,
                Box::new(Expr::Unary(UnOp::Neg, Box::new(Expr::Lit(Literal::Int(i64::MAX))))),
                Box::new(Expr::Lit(Literal::Int(1)))
            )
        );
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = parse_expr(&Literal::Float(x).to_string()).expect("parses");
            let mut refs = 0;
            e.for_each_ref(&mut |_| refs += 1);
            assert_eq!(refs, 0, "{x} printed as {e:?}");
        }
        let neg = parse_expr(&Literal::Float(-2.5).to_string()).expect("parses");
        assert_eq!(neg, Expr::Unary(UnOp::Neg, Box::new(Expr::Lit(Literal::Float(2.5)))));
    }

    // ---- generators of trees the parser can produce ----

    fn attr_name() -> impl Strategy<Value = String> {
        "[A-Za-z_][A-Za-z0-9_]{0,6}"
    }

    fn attr_ref() -> impl Strategy<Value = AttrRef> {
        let collection = prop_oneof![
            Just(None),
            "/[A-Za-z0-9_.\\-/]{0,8}".prop_map(Some),
            "[A-Za-z_][A-Za-z0-9_.\\-/]{0,8}".prop_map(Some),
        ];
        (collection, attr_name())
            .prop_filter("a bare keyword is not a reference", |(c, a)| c.is_some() || !is_keyword(a))
            .prop_map(|(collection, attr)| AttrRef { collection, attr })
    }

    fn literal() -> impl Strategy<Value = Literal> {
        prop_oneof![
            (0..=i64::MAX).prop_map(Literal::Int),
            (0.0..=f64::MAX).prop_map(Literal::Float),
            prop::num::f64::POSITIVE.prop_map(Literal::Float),
            any::<String>().prop_map(Literal::Str),
            any::<bool>().prop_map(Literal::Bool),
            Just(Literal::Null),
        ]
    }

    fn binop() -> impl Strategy<Value = BinOp> {
        prop::sample::select(vec![
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::And,
            BinOp::Or,
        ])
    }

    fn expr_tree() -> impl Strategy<Value = Expr<AttrRef>> {
        let leaf = prop_oneof![literal().prop_map(Expr::Lit), attr_ref().prop_map(Expr::Ref)];
        leaf.prop_recursive(6, 48, 4, |inner| {
            let b = || inner.clone().prop_map(Box::new);
            prop_oneof![
                (prop_oneof![Just(UnOp::Not), Just(UnOp::Neg)], b()).prop_map(|(op, e)| Expr::Unary(op, e)),
                (binop(), b(), b()).prop_map(|(op, l, r)| Expr::Binary(op, l, r)),
                (prop_oneof![Just(Func::Lower), Just(Func::Upper)], inner.clone())
                    .prop_map(|(f, a)| Expr::Call(f, vec![a])),
                (b(), b(), any::<bool>(), any::<bool>()).prop_map(|(expr, pattern, ci, negated)| {
                    Expr::Like { expr, pattern, case_insensitive: ci, negated }
                }),
                (b(), prop::collection::vec(inner.clone(), 1..4), any::<bool>())
                    .prop_map(|(expr, list, negated)| Expr::InList { expr, list, negated }),
                (b(), b(), b(), any::<bool>())
                    .prop_map(|(expr, low, high, negated)| { Expr::Between { expr, low, high, negated } }),
                (b(), any::<bool>()).prop_map(|(expr, negated)| Expr::IsNull { expr, negated }),
            ]
        })
    }

    fn condition() -> impl Strategy<Value = Condition<AttrRef>> {
        (
            prop::option::of(expr_tree()),
            prop::collection::vec(
                (expr_tree(), any::<bool>()).prop_map(|(expr, descending)| OrderItem { expr, descending }),
                0..3,
            ),
            prop::option::of(any::<u64>()),
            any::<bool>(),
        )
            .prop_map(|(filter, order_by, limit, distinct)| Condition { filter, order_by, limit, distinct })
    }

    proptest! {
        #[test]
        fn expressions_round_trip(e in expr_tree()) {
            let text = e.to_string();
            let back = parse_expr(&text);
            prop_assert_eq!(back.as_ref(), Ok(&e), "printed as {}", text);
        }

        #[test]
        fn conditions_round_trip(c in condition()) {
            let text = c.to_string();
            let back = parse_condition(&text);
            prop_assert_eq!(back.as_ref(), Ok(&c), "printed as {}", text);
        }

        #[test]
        fn printing_is_a_fixed_point(src in "[a-c/:0-9 ()=<+*-]{0,30}") {
            if let Ok(c) = parse_condition(&src) {
                let once = c.to_string();
                let again = parse_condition(&once).map(|c| c.to_string());
                prop_assert_eq!(again, Ok(once));
            }
        }
    }

    fn on_small_stack(f: impl FnOnce() + Send + 'static) {
        let handle = std::thread::Builder::new().stack_size(256 * 1024).spawn(f);
        let joined = handle.expect("spawn test thread").join();
        assert!(joined.is_ok(), "test thread panicked");
    }

    /// The deepest trees the parser accepts, in the shapes that cost the printer the most
    /// parentheses, read back — and fit comfortably on a small stack while doing so.
    #[test]
    fn deepest_accepted_trees_round_trip() {
        on_small_stack(|| {
            let leaf = || Expr::Lit(Literal::Int(1));
            let shapes: [&dyn Fn(Expr<AttrRef>) -> Expr<AttrRef>; 3] =
                [&|e| Expr::Unary(UnOp::Not, Box::new(e)), &|e| Expr::Unary(UnOp::Neg, Box::new(e)), &|e| {
                    Expr::Binary(BinOp::Sub, Box::new(leaf()), Box::new(e))
                }];
            for wrap in shapes {
                let mut e = leaf();
                for _ in 1..MAX_DEPTH {
                    e = wrap(e);
                }
                assert_eq!(parse_expr(&e.to_string()), Ok(e.clone()));
                let too_deep = wrap(e);
                let err = parse_expr(&too_deep.to_string()).expect_err("one level too deep");
                assert!(err.message.contains("nested too deeply"), "{err}");
            }
        });
    }
}
