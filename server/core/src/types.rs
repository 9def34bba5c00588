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
            Value::Int(i) => Some(i.to_string()),
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

pub fn format_float(f: f64) -> String {
    // Rust's shortest round-trip form; "100" for 100.0, like PostgreSQL's float8 output.
    format!("{f}")
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
}
