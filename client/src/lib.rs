//! Client side of ardacat: an async client for the AMGA-compatible TCP streaming protocol, a
//! blocking wrapper, and the pieces the `ardacat` CLI is built from (config file, CSV, reply shapes,
//! output formats, tab completion, load generator). Framing, quoting and escaping come from `ardacat-proto`, SOAP
//! envelopes from `ardacat-soap` (the two wire-format crates client and server share); this crate
//! must not re-implement them, and it must not depend on the server, core or store crates.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ardacat_client::ClientError> {
//! use ardacat_client::{Client, ClientConfig};
//! let mut client = Client::connect(ClientConfig { login: "root".into(), ..ClientConfig::default() }).await?;
//! let here = client.pwd().await?;
//! for (entry, values) in client.getattr("/data", &["size", "owner"]).await? {
//!     println!("{here} {entry} {values:?}");
//! }
//! # Ok(()) }
//! ```

pub mod bench;
pub mod blocking;
pub mod client;
pub mod complete;
pub mod csv;
pub mod error;
pub mod format;
pub mod mdconfig;
pub mod shape;

pub use blocking::BlockingClient;
pub use client::{Client, ClientConfig, DEFAULT_PORT, LineRun, RowStream, TlsClientConfig};
pub use complete::Completer;
pub use error::{ClientError, Result};
pub use format::{Format, Printer};
pub use mdconfig::{MdConfig, UseSsl};
pub use shape::Shape;
