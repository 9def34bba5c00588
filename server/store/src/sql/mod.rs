//! All SQL text of ardacat lives here: per-dialect fragments and DDL for entry tables
//! (`dialect`), fixed statements on entry permissions, entry and collection ACLs and user and
//! group listings (`statements`), the replica catalogue's (`replicas`), sequences
//! (`sequences`), settings and revoked tokens (`settings`), the DDL of constraints on entries
//! (`constraints`), and the compiler from resolved query plans to one parameterised statement
//! (`compile`). User values are always bound parameters; identifiers are generated (`e<id>`,
//! `a<id>`), never taken from user text.

pub mod compile;
pub mod constraints;
pub mod dialect;
pub mod replicas;
pub mod sequences;
pub mod settings;
pub mod shared;
pub mod statements;

pub use compile::{Compiled, compile_delete, compile_insert, compile_select, compile_update};
pub use dialect::Dialect;
