//! All SQL text of ardacat lives here: per-dialect fragments and DDL for entry tables
//! (`dialect`), fixed statements on collections (`collections`), entry tables' lifecycle
//! (`tables`), attributes and their columns (`attributes`), indexes (`indexes`), constraint
//! definitions (`constraint_rows`) and their DDL (`constraints`), users, groups and subjects
//! (`principals`), entry permissions, entry and collection ACLs and user and group listings
//! (`statements`), the replica catalogue's (`replicas`), sequences (`sequences`), settings and
//! revoked tokens (`settings`), the WAL position (`wal`), the listings of dump and copy (`dump`), and the compiler from
//! resolved query plans to one parameterised statement (`compile`). User values are always bound
//! parameters; identifiers are generated (`e<id>`, `a<id>`), never taken from user text.

pub mod attributes;
pub mod collections;
pub mod compile;
pub mod constraint_rows;
pub mod constraints;
pub mod dialect;
pub mod dump;
pub mod indexes;
pub mod point;
pub mod principals;
pub mod replicas;
pub mod sequences;
pub mod settings;
pub mod shared;
pub mod statements;
pub mod tables;
pub mod wal;

pub use compile::{Compiled, compile_delete, compile_insert, compile_select, compile_update};
pub use dialect::Dialect;
