//! Errors of the SOAP layer and the fault class each maps to.

use std::fmt;

use crate::version::SoapVersion;

/// Which limit of [`crate::Limits`] was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// `Limits::max_depth` (element nesting, the Envelope is depth 1).
    Depth,
    /// `Limits::max_elements` (elements in the whole message).
    Elements,
    /// `Limits::max_attributes` (attributes, `xmlns` included, on one element).
    Attributes,
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitKind::Depth => "element nesting depth",
            LimitKind::Elements => "element count",
            LimitKind::Attributes => "attributes-per-element",
        })
    }
}

/// The SOAP fault class of an error.
///
/// | variant | SOAP 1.1 `faultcode` | SOAP 1.2 `Code/Value` |
/// |---|---|---|
/// | `Client` | `Client` | `Sender` |
/// | `Server` | `Server` | `Receiver` |
/// | `MustUnderstand` | `MustUnderstand` | `MustUnderstand` |
/// | `VersionMismatch` | `VersionMismatch` | `VersionMismatch` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCode {
    Client,
    Server,
    MustUnderstand,
    VersionMismatch,
}

impl FaultCode {
    /// Local part of the fault code QName in the given SOAP version's envelope namespace.
    pub const fn local_name(self, version: SoapVersion) -> &'static str {
        match (self, version) {
            (FaultCode::Client, SoapVersion::V11) => "Client",
            (FaultCode::Client, SoapVersion::V12) => "Sender",
            (FaultCode::Server, SoapVersion::V11) => "Server",
            (FaultCode::Server, SoapVersion::V12) => "Receiver",
            (FaultCode::MustUnderstand, _) => "MustUnderstand",
            (FaultCode::VersionMismatch, _) => "VersionMismatch",
        }
    }

    /// HTTP status for a fault of this class: SOAP 1.1 (WS-I BP R1126) always 500; SOAP 1.2
    /// (Part 2 §7.5.2) 400 for `Sender`, 500 for everything else.
    pub const fn http_status(self, version: SoapVersion) -> u16 {
        match (self, version) {
            (FaultCode::Client, SoapVersion::V12) => 400,
            _ => 500,
        }
    }
}

/// Everything that can go wrong while reading a request or writing a response.
///
/// Every message is safe to show to the caller: it names elements and limits, never server
/// internals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SoapError {
    /// The Content-Type is neither `text/xml` (SOAP 1.1) nor `application/soap+xml` (SOAP 1.2).
    #[error("unsupported media type {0:?}: expected text/xml (SOAP 1.1) or application/soap+xml (SOAP 1.2)")]
    UnsupportedMediaType(String),
    /// The body is larger than `Limits::max_body_bytes`.
    #[error("request body of {size} bytes exceeds the limit of {limit} bytes")]
    BodyTooLarge { size: usize, limit: usize },
    /// A structural limit of [`crate::Limits`] was exceeded.
    #[error("{kind} limit of {limit} exceeded")]
    LimitExceeded { kind: LimitKind, limit: usize },
    /// The bytes are not a supported character encoding (UTF-8, or UTF-16 with a BOM).
    #[error("request is not valid {0}")]
    Encoding(String),
    /// The message is not well-formed XML 1.0 (includes truncated messages and characters that
    /// XML 1.0 forbids).
    #[error("XML is not well-formed: {0}")]
    NotWellFormed(String),
    /// `<!DOCTYPE ...>` (WS-I BP R1008, and the billion-laughs family of attacks).
    #[error("document type declarations (DTD) are not allowed in SOAP messages")]
    DoctypeNotAllowed,
    /// `<?target ...?>` other than the XML declaration (WS-I BP R1009).
    #[error("processing instructions are not allowed in SOAP messages (found <?{0}?>)")]
    ProcessingInstructionNotAllowed(String),
    /// `&name;` that is not one of `lt gt amp apos quot` (there is no DTD to declare it).
    #[error(
        "undeclared entity reference &{0};: only the five predefined entities and character references are allowed"
    )]
    UndeclaredEntity(String),
    /// The envelope is not in the namespace of the SOAP version the request was sent as.
    #[error("SOAP version mismatch: expected a SOAP {expected} envelope ({}), found {found}", expected.envelope_namespace())]
    VersionMismatch {
        expected: SoapVersion,
        /// What the root element was, for the message.
        found: String,
        /// The SOAP version the envelope actually uses, if it is one we know.
        found_version: Option<SoapVersion>,
    },
    /// A header block addressed to us with `mustUnderstand` that we do not understand.
    #[error("header block {{{namespace}}}{local_name} is marked mustUnderstand but is not understood")]
    MustUnderstand { namespace: String, local_name: String },
    /// Envelope structure problems (root element, Header/Body order, attributes of SOAP
    /// elements, XML declaration).
    #[error("invalid SOAP envelope: {0}")]
    InvalidEnvelope(String),
    #[error("SOAP Body is empty: expected exactly one operation element")]
    EmptyBody,
    #[error("SOAP Body contains more than one element (second one: {0}): expected exactly one operation element")]
    MultipleBodyElements(String),
    /// The Body's child is not one of our operations. Holds `{namespace}local`.
    #[error("unknown operation {0}")]
    UnknownOperation(String),
    #[error("missing required element '{element}' in '{parent}'")]
    MissingElement { parent: String, element: String },
    #[error("unexpected element {found} in '{parent}' (expected {expected})")]
    UnexpectedElement { parent: String, found: String, expected: String },
    #[error("unexpected character data in '{0}' (only elements are allowed there)")]
    UnexpectedText(String),
    /// A value that does not match its XSD type, a misplaced `xsi:nil`, or a wrong `xsi:type`.
    #[error("invalid value for '{element}': {reason}")]
    InvalidValue { element: String, reason: String },
    /// A response could not be written, e.g. a value holds a character that XML 1.0 cannot
    /// carry (U+0000–U+001F except tab/LF/CR, U+FFFE, U+FFFF). This is a server-side error:
    /// the server must answer with a `Server`/`Receiver` fault instead.
    #[error("response cannot be serialized: {0}")]
    Unserializable(String),
}

impl SoapError {
    /// The SOAP fault class of this error.
    pub fn fault_code(&self) -> FaultCode {
        match self {
            SoapError::VersionMismatch { .. } => FaultCode::VersionMismatch,
            SoapError::MustUnderstand { .. } => FaultCode::MustUnderstand,
            SoapError::Unserializable(_) => FaultCode::Server,
            _ => FaultCode::Client,
        }
    }

    /// HTTP status to answer with. Like [`FaultCode::http_status`], except that an unsupported
    /// media type is `415`.
    pub fn http_status(&self, version: SoapVersion) -> u16 {
        match self {
            SoapError::UnsupportedMediaType(_) => 415,
            other => other.fault_code().http_status(version),
        }
    }

    /// The SOAP version the fault for this error should be written in, given the version the
    /// request was dispatched as. A `VersionMismatch` is answered in the envelope version the
    /// client actually used, when that is one we know (SOAP 1.2 Part 1 Appendix A); everything
    /// else in `requested`.
    pub fn fault_version(&self, requested: SoapVersion) -> SoapVersion {
        match self {
            SoapError::VersionMismatch { found_version: Some(v), .. } => *v,
            _ => requested,
        }
    }

    /// The text for `faultstring` / `Reason/Text`.
    pub fn message(&self) -> String {
        self.to_string()
    }
}
