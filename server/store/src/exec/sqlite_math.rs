//! Checked arithmetic for SQLite, so that the query language's `+ - * /` and unary `-` mean the
//! same on both backends. It owns the SQL functions `ardacat_add/sub/mul/div/neg` registered on
//! every SQLite connection; it must not know the catalogue (the compiler in `sql::compile`
//! decides when to call them).
//!
//! SQLite's own operators turn an integer overflow into a float and a float overflow into
//! infinity; PostgreSQL raises `numeric_value_out_of_range` (22003) for both, and also for a
//! float product or quotient that underflows to zero from non-zero operands. These functions
//! follow PostgreSQL's `int8` and `float8` operators exactly and report such a result with the
//! extended result code [`NUMERIC_OVERFLOW`], which `StoreError` classifies by its code (no
//! message text is involved). NULL in gives NULL out; division by zero is NULL (the compiler
//! wraps divisors in `NULLIF(…, 0)` on both backends).

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, ffi};

/// The extended result code of an arithmetic result out of range: `SQLITE_ERROR` with an
/// extended part SQLite itself never uses (its own go up to 16 for `SQLITE_ERROR`).
pub(crate) const NUMERIC_OVERFLOW: i32 = ffi::SQLITE_ERROR | (0xA1 << 8);

/// The SQL function that computes `op` on SQLite (`None`: not an arithmetic operator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn out_of_range() -> rusqlite::Error {
    // No message: `sqlite3_result_error` would reset the code to plain SQLITE_ERROR.
    rusqlite::Error::SqliteFailure(ffi::Error::new(NUMERIC_OVERFLOW), None)
}

fn arg(ctx: &Context<'_>, i: usize) -> rusqlite::Result<Option<Num>> {
    match ctx.get_raw(i) {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(v) => Ok(Some(Num::Int(v))),
        ValueRef::Real(v) => Ok(Some(Num::Float(v))),
        // The resolver type-checks arithmetic: text or blob here is a bug, not user input.
        _ => Err(rusqlite::Error::UserFunctionError("arithmetic on a non-numeric value".into())),
    }
}

fn float(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    }
}

/// One binary operation with PostgreSQL's range rules (`int8pl`, `float8mul`, …).
fn binary(op: Op, a: Num, b: Num) -> rusqlite::Result<SqlValue> {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let r = match op {
            Op::Add => x.checked_add(y),
            Op::Sub => x.checked_sub(y),
            Op::Mul => x.checked_mul(y),
            Op::Div if y == 0 => return Ok(SqlValue::Null),
            // Truncates toward zero like int8div; only MIN / -1 overflows.
            Op::Div => x.checked_div(y),
        };
        return r.map(SqlValue::Integer).ok_or_else(out_of_range);
    }
    let (x, y) = (float(a), float(b));
    let r = match op {
        Op::Add => x + y,
        Op::Sub => x - y,
        Op::Mul => x * y,
        Op::Div if y == 0.0 => return Ok(SqlValue::Null),
        Op::Div => x / y,
    };
    // float8 operators: infinity from finite operands is an overflow; a product or quotient
    // of zero from non-zero operands an underflow. Both are 22003 on PostgreSQL.
    let overflow = r.is_infinite() && x.is_finite() && y.is_finite();
    let underflow = r == 0.0
        && match op {
            Op::Mul => x != 0.0 && y != 0.0,
            Op::Div => x != 0.0 && y.is_finite(),
            Op::Add | Op::Sub => false,
        };
    if overflow || underflow || r.is_nan() {
        return Err(out_of_range());
    }
    Ok(SqlValue::Real(r))
}

/// Registers the functions on one connection.
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    for (name, op) in
        [("ardacat_add", Op::Add), ("ardacat_sub", Op::Sub), ("ardacat_mul", Op::Mul), ("ardacat_div", Op::Div)]
    {
        conn.create_scalar_function(name, 2, flags, move |ctx| match (arg(ctx, 0)?, arg(ctx, 1)?) {
            (Some(a), Some(b)) => binary(op, a, b),
            _ => Ok(SqlValue::Null),
        })?;
    }
    conn.create_scalar_function("ardacat_neg", 1, flags, |ctx| match arg(ctx, 0)? {
        None => Ok(SqlValue::Null),
        Some(Num::Int(i)) => i.checked_neg().map(SqlValue::Integer).ok_or_else(out_of_range),
        Some(Num::Float(f)) => Ok(SqlValue::Real(-f)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(sql: &str) -> Result<SqlValue, i32> {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.query_row(sql, [], |r| r.get::<_, SqlValue>(0)).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(err, _) => err.extended_code,
            other => panic!("{other}"),
        })
    }

    #[test]
    fn in_range_like_the_native_operators() {
        assert_eq!(eval("SELECT ardacat_add(2, 3)"), Ok(SqlValue::Integer(5)));
        assert_eq!(eval("SELECT ardacat_sub(2, 3.5)"), Ok(SqlValue::Real(-1.5)));
        assert_eq!(eval("SELECT ardacat_mul(-4, 3)"), Ok(SqlValue::Integer(-12)));
        assert_eq!(eval("SELECT ardacat_div(-7, 2)"), Ok(SqlValue::Integer(-3)));
        assert_eq!(eval("SELECT ardacat_div(7.0, 2)"), Ok(SqlValue::Real(3.5)));
        assert_eq!(eval("SELECT ardacat_div(7, 0)"), Ok(SqlValue::Null));
        assert_eq!(eval("SELECT ardacat_add(NULL, 1)"), Ok(SqlValue::Null));
        assert_eq!(eval("SELECT ardacat_neg(5)"), Ok(SqlValue::Integer(-5)));
        assert_eq!(eval("SELECT ardacat_mul(1e-200, 0)"), Ok(SqlValue::Real(0.0)));
    }

    #[test]
    fn out_of_range_is_one_code() {
        for sql in [
            "SELECT ardacat_add(9223372036854775807, 1)",
            "SELECT ardacat_sub(-9223372036854775808, 1)",
            "SELECT ardacat_mul(4611686018427387904, 2)",
            "SELECT ardacat_div(-9223372036854775808, -1)",
            "SELECT ardacat_neg(-9223372036854775808)",
            "SELECT ardacat_mul(1e308, 10)",
            "SELECT ardacat_add(1.7e308, 1.7e308)",
            "SELECT ardacat_div(1e308, 1e-10)",
            "SELECT ardacat_mul(1e-200, 1e-200)",
            "SELECT ardacat_div(1e-300, 1e300)",
        ] {
            assert_eq!(eval(sql), Err(NUMERIC_OVERFLOW), "{sql}");
        }
    }
}
