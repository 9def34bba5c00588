//! ardacat-core: the catalogue's model, query language and service layer.
//! It must not know about sockets, SQL text, XML or any wire syntax.
//!
//! Layout: `types` (attribute types and values), `path` (paths and patterns), `perm`
//! (principals, modes, ACL decisions), `query` (syntax tree, parser, resolution), `store` (the
//! storage port backends implement), `service` (the `Catalogue` both frontends call).

pub mod error;
pub mod path;
pub mod perm;
pub mod query;
pub mod store;
pub mod types;

pub use error::{Error, ErrorKind, Result};
pub mod service;

pub use service::{Catalogue, RowSink, ServiceConfig, Session};
