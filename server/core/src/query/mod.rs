//! The catalogue query language: syntax tree, lexer, parser and canonical printer. No SQL here.

pub mod ast;
pub mod lexer;
pub mod parser;
mod print;

pub use parser::{ParseError, parse_condition, parse_expr};

pub mod resolve;
pub mod sql;
pub use resolve::{Column, Scope, TableSchema, Term, expr_type};
