//! Attribute types and typed values: how a string from the wire becomes a value of a column's
//! type, and how a stored value becomes a string again. Both backends format through here so
//! that they give byte-identical answers.

use crate::error::{Error, Result};
use chrono::{NaiveDate, NaiveDateTime, Timelike};
use std::fmt;

/// The type of an attribute (a column of a collection's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttrType {
    /// `int`, `integer`, `smallint`, `bigint`: 64-bit storage.
    Int,
    /// `float`, `double`, `real`: 64-bit IEEE.
    Float,
    /// `varchar(n)`: text of at most n characters.
    Varchar(u32),
    Text,
    Timestamp,
    Bool,
}

/// Longest `varchar(n)` accepted.
pub const MAX_VARCHAR: u32 = 1_000_000;

impl AttrType {
    /// Parse a type name as AMGA clients send it (`int`, `varchar(20)`, `double precision` …).
    pub fn parse(s: &str) -> Result<AttrType> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.as_str();
        Ok(match t {
            "int" | "integer" | "int4" | "int8" | "smallint" | "bigint" | "int2" => AttrType::Int,
            "float" | "double" | "real" | "double precision" | "float4" | "float8" | "numeric" => AttrType::Float,
            "text" | "varchar" | "string" | "char" => AttrType::Text,
            "timestamp" | "datetime" | "date" => AttrType::Timestamp,
            "bool" | "boolean" => AttrType::Bool,
            _ => {
                let n = t
                    .strip_prefix("varchar(")
                    .or_else(|| t.strip_prefix("character varying("))
                    .or_else(|| t.strip_prefix("char("))
                    .and_then(|r| r.strip_suffix(')'))
                    .and_then(|n| n.trim().parse::<u32>().ok())
                    .filter(|n| (1..=MAX_VARCHAR).contains(n))
                    .ok_or_else(|| Error::InvalidValue(format!("unknown attribute type '{s}'")))?;
                AttrType::Varchar(n)
            }
        })
    }

    /// The storage class the value of this type takes.
    pub fn value_type(self) -> ValueType {
        match self {
            AttrType::Int => ValueType::Int,
            AttrType::Float => ValueType::Float,
            AttrType::Varchar(_) | AttrType::Text => ValueType::Text,
            AttrType::Timestamp => ValueType::Timestamp,
            AttrType::Bool => ValueType::Bool,
        }
    }

    /// Validate and convert a wire string into a value of this type.
    pub fn parse_value(self, s: &str) -> Result<Value> {
        match self {
            AttrType::Varchar(n) => {
                if s.chars().count() > n as usize {
                    return Err(Error::InvalidValue(format!("value longer than varchar({n}): '{}'", truncate(s))));
                }
                check_text(s)?;
                Ok(Value::Text(s.to_string()))
            }
            other => other.value_type().parse_value(s),
        }
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrType::Int => write!(f, "int"),
            AttrType::Float => write!(f, "float"),
            AttrType::Varchar(n) => write!(f, "varchar({n})"),
            AttrType::Text => write!(f, "text"),
            AttrType::Timestamp => write!(f, "timestamp"),
            AttrType::Bool => write!(f, "bool"),
        }
    }
}

/// The type of a value or of an expression's result; what a row decoder expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    Int,
    Float,
    Text,
    Timestamp,
    Bool,
}

impl ValueType {
    pub fn is_numeric(self) -> bool {
        matches!(self, ValueType::Int | ValueType::Float)
    }

    pub fn parse_value(self, s: &str) -> Result<Value> {
        let bad = || Error::InvalidValue(format!("'{}' is not a valid {self:?}", truncate(s)).to_lowercase());
        match self {
            ValueType::Int => s.trim().parse::<i64>().map(Value::Int).map_err(|_| bad()),
            ValueType::Float => {
                let v = s.trim().parse::<f64>().map_err(|_| bad())?;
                if v.is_finite() { Ok(Value::Float(v)) } else { Err(bad()) }
            }
            ValueType::Text => {
                check_text(s)?;
                Ok(Value::Text(s.to_string()))
            }
            ValueType::Timestamp => parse_timestamp(s).map(Value::Timestamp).ok_or_else(bad),
            ValueType::Bool => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "1" | "yes" | "y" | "on" => Ok(Value::Bool(true)),
                "false" | "f" | "0" | "no" | "n" | "off" => Ok(Value::Bool(false)),
                _ => Err(bad()),
            },
        }
    }
}

/// NUL cannot be stored in PostgreSQL text; refuse it everywhere so both backends agree.
fn check_text(s: &str) -> Result<()> {
    if s.contains('\0') {
        return Err(Error::InvalidValue("text values may not contain NUL bytes".into()));
    }
    Ok(())
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

/// A typed value, bound as a statement parameter or decoded from a result row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Timestamp(NaiveDateTime),
}

impl Value {
    /// The wire text of a value; `None` for NULL. Identical on both backends by construction.
    pub fn to_wire(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Int(i) => Some(itoa::Buffer::new().format(*i).to_owned()),
            Value::Float(f) => Some(format_float(*f)),
            Value::Text(s) => Some(s.clone()),
            Value::Bool(b) => Some(if *b { "true" } else { "false" }.to_string()),
            Value::Timestamp(t) => Some(format_timestamp(t)),
        }
    }

    /// `to_wire` that moves text instead of copying it (streamed rows own their values).
    pub fn into_wire(self) -> Option<String> {
        match self {
            Value::Text(s) => Some(s),
            v => v.to_wire(),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
}

/// The wire text of a float: exactly `format!("{f}")` (Rust's `Display`: the shortest digits
/// that round-trip, never an exponent, `100` for 100.0, `-0`, `inf`, `NaN`), like PostgreSQL's
/// float8 output for the values it can store.
pub fn format_float(f: f64) -> String {
    let mut out = String::with_capacity(24);
    push_float(&mut out, f);
    out
}

/// Appends [`format_float`]'s text. The shortest digits come from `zmij` (several times faster
/// than `core::fmt`'s Grisu/Dragon); only their layout is redone here.
pub fn push_float(out: &mut String, f: f64) {
    if !f.is_finite() {
        out.push_str(if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "inf"
        } else {
            "-inf"
        });
        return;
    }
    let mut buf = zmij::Buffer::new();
    let text = buf.format_finite(f.abs());
    // Fast path: fixed notation with at most 15 digits is `Display`'s text but for a trailing
    // `.0`; and with at most 15 significant digits no halfway case exists (two 15-digit
    // candidates are farther apart than the round-trip interval is wide).
    if text.len() <= 16 && !text.contains('e') {
        if f.is_sign_negative() {
            out.push('-');
        }
        out.push_str(text.strip_suffix(".0").unwrap_or(text));
        return;
    }
    let text = text.as_bytes();
    // `text` is `digits[.digits][e[-]digits]`: gather the significant digits and the position of
    // the decimal point relative to the first of them (value = 0.DIGITS × 10^point).
    let (mantissa, exp) = match text.iter().position(|&b| b == b'e') {
        Some(at) => (&text[..at], parse_exponent(&text[at + 1..])),
        None => (text, Some(0)),
    };
    let (int_part, frac_part) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &[][..]),
    };
    let mut digits = [0u8; 24];
    let mut n = 0;
    let mut point = exp.map(|e| e + int_part.len() as i32);
    for &d in int_part.iter().chain(frac_part) {
        if n == 0 && d == b'0' {
            point = point.map(|p| p - 1);
        } else if n < digits.len() {
            digits[n] = d;
            n += 1;
        } else if d != b'0' {
            point = None; // not the shortest form we expect: let `core::fmt` do it
        }
    }
    let Some(point) = point else {
        use std::fmt::Write;
        let _ = write!(out, "{f}");
        return;
    };
    while n > 0 && digits[n - 1] == b'0' {
        n -= 1;
    }
    // Two shortest candidates equally near (`f` exactly halfway): `zmij` takes the even digit,
    // `core::fmt` the larger one.
    if n > 0 && digits[n - 1] % 2 == 0 && is_halfway_above(f.abs(), &digits[..n], point - n as i32) {
        digits[n - 1] += 1;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    let digits = &digits[..n];
    if n == 0 {
        out.push('0');
    } else if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(ascii(digits));
    } else if (point as usize) < n {
        out.push_str(ascii(&digits[..point as usize]));
        out.push('.');
        out.push_str(ascii(&digits[point as usize..]));
    } else {
        out.push_str(ascii(digits));
        out.extend(std::iter::repeat_n('0', point as usize - n));
    }
}

/// Whether `f` (finite, positive) is exactly `(D + 1/2) × 10^q`, D being `digits` read as an
/// integer. With `f = m × 2^e` (m odd) that is `e = q - 1` and `m × 5^-q = 2D + 1` (q < 0) or
/// `m = (2D + 1) × 5^q` (q ≥ 0).
fn is_halfway_above(f: f64, digits: &[u8], q: i32) -> bool {
    let bits = f.to_bits();
    let (frac, biased) = (bits & ((1 << 52) - 1), ((bits >> 52) & 0x7ff) as i32);
    let (m, e) = if biased == 0 { (frac, -1074) } else { (frac | (1 << 52), biased - 1075) };
    if m == 0 {
        return false;
    }
    let (m, e) = (u128::from(m >> m.trailing_zeros()), e + m.trailing_zeros() as i32);
    if e != q - 1 || digits.len() > 19 {
        return false;
    }
    let d = digits.iter().fold(0u128, |acc, &b| acc * 10 + u128::from(b - b'0'));
    let odd = 2 * d + 1;
    let Some(pow5) = 5u128.checked_pow(q.unsigned_abs()) else { return false };
    if q < 0 { m.checked_mul(pow5) == Some(odd) } else { odd.checked_mul(pow5) == Some(m) }
}

/// Digits taken from a `str` are ASCII, so always valid.
fn ascii(d: &[u8]) -> &str {
    std::str::from_utf8(d).unwrap_or_default()
}

fn parse_exponent(text: &[u8]) -> Option<i32> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 4 {
        return None;
    }
    let mut e = 0i32;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        e = e * 10 + i32::from(d - b'0');
    }
    Some(if negative { -e } else { e })
}

/// Canonical timestamp text: `YYYY-MM-DD HH:MM:SS`, with `.ffffff` only when sub-second.
pub fn format_timestamp(t: &NaiveDateTime) -> String {
    if t.nanosecond() / 1000 == 0 {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
    }
}

/// Fixed-width sortable form used where a backend stores timestamps as text (SQLite).
pub fn timestamp_sort_key(t: &NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

/// Accepts `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS[.f]]` and the `T` separator; microsecond precision.
pub fn parse_timestamp(s: &str) -> Option<NaiveDateTime> {
    let s = s.trim();
    let t = ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)))?;
    // PostgreSQL keeps microseconds; round the same way everywhere.
    let micros = t.nanosecond() / 1000;
    let t = t.with_nanosecond(micros * 1000)?;
    (1..=9999).contains(&chrono::Datelike::year(&t)).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names() {
        assert_eq!(AttrType::parse("INT").unwrap(), AttrType::Int);
        assert_eq!(AttrType::parse("varchar(20)").unwrap(), AttrType::Varchar(20));
        assert_eq!(AttrType::parse("double precision").unwrap(), AttrType::Float);
        assert!(AttrType::parse("varchar(0)").is_err());
        assert!(AttrType::parse("blob; drop table x").is_err());
    }

    #[test]
    fn values_validate() {
        assert_eq!(AttrType::Int.parse_value(" 42 ").unwrap(), Value::Int(42));
        assert!(AttrType::Int.parse_value("4x").is_err());
        assert!(AttrType::Float.parse_value("NaN").is_err());
        assert!(AttrType::Varchar(3).parse_value("abcd").is_err());
        assert!(AttrType::Text.parse_value("a\0b").is_err());
        assert_eq!(AttrType::Bool.parse_value("T").unwrap(), Value::Bool(true));
    }

    #[test]
    fn timestamps_round_trip() {
        let t = parse_timestamp("2024-02-29T10:11:12.5").unwrap();
        assert_eq!(format_timestamp(&t), "2024-02-29 10:11:12.500000");
        let d = parse_timestamp("2024-02-29").unwrap();
        assert_eq!(format_timestamp(&d), "2024-02-29 00:00:00");
        assert!(parse_timestamp("2024-02-30").is_none());
        assert_eq!(Value::Float(100.0).to_wire().unwrap(), "100");
    }

    #[test]
    fn floats_format_like_display() {
        for f in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.5,
            100.0,
            1e15,
            1e16,
            1e17,
            1e20,
            1e21,
            1e22,
            1e23,
            1.5e300,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            1e-5,
            1e-7,
            123456.789,
            0.000123,
            2.5e-10,
            9007199254740993.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(format_float(f), format!("{f}"), "bits {:#x}", f.to_bits());
        }
        assert_eq!(Value::Int(i64::MIN).to_wire().unwrap(), i64::MIN.to_string());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]

        /// Any bit pattern: every exponent, subnormals, NaN payloads, infinities.
        #[test]
        fn float_bits_format_like_display(bits in proptest::prelude::any::<u64>()) {
            let f = f64::from_bits(bits);
            proptest::prop_assert_eq!(format_float(f), format!("{f}"));
        }

        /// Values people store: short decimals and integers at every magnitude.
        #[test]
        fn decimal_floats_format_like_display(m in -1_000_000_000i64..1_000_000_000, e in -30i32..30) {
            let f = m as f64 * 10f64.powi(e);
            proptest::prop_assert_eq!(format_float(f), format!("{f}"));
            let g = m as f64 / 1000.0;
            proptest::prop_assert_eq!(format_float(g), format!("{g}"));
        }

        /// Full 53-bit mantissas scaled by powers of two: where exact halfway cases (two
        /// shortest candidates equally near) occur.
        #[test]
        fn halfway_floats_format_like_display(m in (1u64 << 52)..(1u64 << 53), s in -80i32..80) {
            let f = m as f64 * 2f64.powi(s);
            proptest::prop_assert_eq!(format_float(f), format!("{f}"));
        }

        #[test]
        fn ints_format_like_display(i in proptest::prelude::any::<i64>()) {
            proptest::prop_assert_eq!(Value::Int(i).to_wire().unwrap(), i.to_string());
        }
    }
}
