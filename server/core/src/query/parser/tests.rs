//! Unit tests of the query-language parser: the AMGA examples, precedence, positions of errors,
//! depth limits.

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
            Expr::Between { expr: Box::new(bare("b")), low: Box::new(int(1)), high: Box::new(int(5)), negated: false },
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
