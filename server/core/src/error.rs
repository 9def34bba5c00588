//! The one error type of the catalogue and its stable AMGA numeric codes. Frontends map it to
//! the wire (TCP status line, SOAP fault) and must not invent codes of their own.

use thiserror::Error;

/// Every failure a caller can see. The numeric `code()` is the AMGA error table (amga.md §2.9)
/// with the "intended" values, and is identical on every storage backend.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    #[error("{0}: no such file or directory")]
    NotFound(String),
    #[error("{0}")]
    IllegalCommand(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("illegal query: {0}")]
    IllegalQuery(String),
    #[error("transaction error: {0}")]
    Transaction(String),
    #[error("no such attribute: {0}")]
    NoSuchAttribute(String),
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    #[error("{0}: exists")]
    Exists(String),
    #[error("{0}: directory exists")]
    DirExists(String),
    #[error("not a sequence: {0}")]
    NotASequence(String),
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// Integer or float arithmetic out of range in a condition, a selected expression or an
    /// update (the same on both backends; nothing is stored). Holds the expression text.
    #[error("invalid value: arithmetic overflow in {0}")]
    Overflow(String),
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// An entry would break a constraint of its collection (`constraint_add_*`), or existing
    /// entries break a constraint being added; nothing changed. The store knows only which
    /// constraint (`id`) and leaves `text` empty; the catalogue names the constraint once the
    /// failed unit is undone (`Catalogue::unit`).
    #[error("constraint violated: {text}")]
    ConstraintViolation { id: i64, text: String },
    #[error("cancelled")]
    Cancelled,
    /// A write reached a server whose database is a read-only standby (code 20, like AMGA's
    /// refusals of a replica). Holds the primary's `host:port` when known.
    #[error("read-only replica{}", .0.as_ref().map(|p| format!("; primary is {p}")).unwrap_or_default())]
    ReadOnlyReplica(Option<String>),
    /// The error a site replica's primary answered to a forwarded command, relayed as it came
    /// (its code and text).
    #[error("{message}")]
    Relayed { code: u16, message: String },
    /// A storage or internal failure. The message is for logs; frontends show a generic text.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The broad class of an error, as the SOAP contract names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Authorization,
    Exists,
    NotExists,
    InvalidArgument,
    Internal,
}

impl Error {
    /// AMGA's numeric error code.
    pub fn code(&self) -> u16 {
        match self {
            Error::NotFound(_) => 1,
            Error::IllegalCommand(_) => 3,
            Error::PermissionDenied(_) => 4,
            Error::IllegalQuery(_) => 8,
            Error::Transaction(_) => 9,
            Error::NoSuchAttribute(_) => 10,
            Error::NotEmpty(_) => 11,
            Error::Exists(_) => 15,
            Error::DirExists(_) => 16,
            Error::NotASequence(_) => 17,
            Error::InvalidValue(_) | Error::Overflow(_) => 18,
            Error::LimitExceeded(_) => 19,
            Error::Cancelled | Error::ReadOnlyReplica(_) => 20,
            Error::ConstraintViolation { .. } => 21,
            Error::Relayed { code, .. } => *code,
            Error::Internal(_) => 99,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::PermissionDenied(_) => ErrorKind::Authorization,
            Error::Exists(_) | Error::DirExists(_) => ErrorKind::Exists,
            Error::NotFound(_) | Error::NoSuchAttribute(_) | Error::NotASequence(_) => ErrorKind::NotExists,
            Error::Internal(_) => ErrorKind::Internal,
            Error::Relayed { code, .. } => match code {
                4 => ErrorKind::Authorization,
                15 | 16 => ErrorKind::Exists,
                1 | 10 | 17 => ErrorKind::NotExists,
                99 => ErrorKind::Internal,
                _ => ErrorKind::InvalidArgument,
            },
            _ => ErrorKind::InvalidArgument,
        }
    }

    /// The text shown to clients: internal causes stay in the server log.
    pub fn public_message(&self) -> String {
        match self {
            Error::Internal(_) => "internal server error".to_string(),
            other => other.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
