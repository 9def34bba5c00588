//! SOAP 1.1 / 1.2 identification: namespaces, media types, version detection.

use std::fmt;

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use crate::error::SoapError;

/// SOAP 1.1 envelope namespace.
pub const SOAP11_ENV_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// SOAP 1.2 envelope namespace.
pub const SOAP12_ENV_NS: &str = "http://www.w3.org/2003/05/soap-envelope";

/// A SOAP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoapVersion {
    V11,
    V12,
}

impl SoapVersion {
    /// The envelope namespace name.
    pub const fn envelope_namespace(self) -> &'static str {
        match self {
            SoapVersion::V11 => SOAP11_ENV_NS,
            SoapVersion::V12 => SOAP12_ENV_NS,
        }
    }

    /// The media type without parameters: `text/xml` or `application/soap+xml`.
    pub const fn media_type(self) -> &'static str {
        match self {
            SoapVersion::V11 => "text/xml",
            SoapVersion::V12 => "application/soap+xml",
        }
    }

    /// The `Content-Type` for messages we send.
    pub const fn content_type(self) -> &'static str {
        match self {
            SoapVersion::V11 => "text/xml; charset=utf-8",
            SoapVersion::V12 => "application/soap+xml; charset=utf-8",
        }
    }

    /// The `Content-Type` a client sends for a request of `action` (SOAP 1.2 carries the action
    /// as a media-type parameter; SOAP 1.1 uses the separate `SOAPAction` header).
    pub fn request_content_type(self, action: &str) -> String {
        match self {
            SoapVersion::V11 => self.content_type().to_string(),
            SoapVersion::V12 => format!("{}; action=\"{action}\"", self.content_type()),
        }
    }

    /// The version whose envelope namespace is `ns`.
    pub fn from_envelope_namespace(ns: &str) -> Option<SoapVersion> {
        match ns {
            SOAP11_ENV_NS => Some(SoapVersion::V11),
            SOAP12_ENV_NS => Some(SoapVersion::V12),
            _ => None,
        }
    }

    /// The version a media type (parameters allowed, case-insensitive) stands for.
    pub fn from_content_type(content_type: &str) -> Option<SoapVersion> {
        let media = media_type_of(content_type);
        if media.eq_ignore_ascii_case("text/xml") {
            Some(SoapVersion::V11)
        } else if media.eq_ignore_ascii_case("application/soap+xml") {
            Some(SoapVersion::V12)
        } else {
            None
        }
    }
}

impl fmt::Display for SoapVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SoapVersion::V11 => "1.1",
            SoapVersion::V12 => "1.2",
        })
    }
}

fn media_type_of(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

/// The `action` parameter of a SOAP 1.2 Content-Type (`application/soap+xml; action="..."`),
/// unquoted. `None` when absent.
pub fn content_type_action(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("action") {
            return None;
        }
        let v = value.trim();
        Some(v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v))
    })
}

/// Decides which SOAP version a request uses.
///
/// The Content-Type decides (`text/xml` → 1.1, `application/soap+xml` → 1.2, anything else →
/// [`SoapError::UnsupportedMediaType`]); then the root element is sniffed and, if it is an
/// `Envelope` in a different namespace, the result is [`SoapError::VersionMismatch`]. Without a
/// Content-Type the envelope namespace alone decides. When the body cannot be sniffed (not
/// XML, DTD, ...), the declared version (or 1.1 by default) is returned and
/// [`crate::parse_request`] will produce the precise error.
///
/// This is a cheap pre-check: it stops at the first element. `parse_request` checks the
/// envelope namespace again.
pub fn detect_version(content_type: Option<&str>, body: &[u8]) -> Result<SoapVersion, SoapError> {
    let declared = match content_type {
        Some(ct) => Some(
            SoapVersion::from_content_type(ct)
                .ok_or_else(|| SoapError::UnsupportedMediaType(media_type_of(ct).to_string()))?,
        ),
        None => None,
    };
    match (declared, sniff_root(body)) {
        (Some(v), Sniffed::Envelope(Some(found))) if found != v => Err(SoapError::VersionMismatch {
            expected: v,
            found: format!("a SOAP {found} envelope"),
            found_version: Some(found),
        }),
        (Some(v), _) => Ok(v),
        (None, Sniffed::Envelope(Some(found))) => Ok(found),
        (None, Sniffed::Envelope(None)) => Err(SoapError::VersionMismatch {
            expected: SoapVersion::V11,
            found: "an Envelope element in an unknown namespace".to_string(),
            found_version: None,
        }),
        (None, Sniffed::Unknown) => Ok(SoapVersion::V11),
    }
}

enum Sniffed {
    /// Root element is `Envelope`; the version if its namespace is a SOAP one.
    Envelope(Option<SoapVersion>),
    Unknown,
}

/// Looks at the first element only; never fails (errors mean `Unknown`).
fn sniff_root(body: &[u8]) -> Sniffed {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    // The root start tag is near the beginning; bound the work on hostile input.
    let window = &body[..body.len().min(64 * 1024)];
    let text = match std::str::from_utf8(window) {
        Ok(t) => t,
        // A cut inside a multi-byte character at the window's end is fine.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&window[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return Sniffed::Unknown,
    };
    let mut reader = NsReader::from_str(text);
    for _ in 0..64 {
        match reader.read_resolved_event() {
            Ok((ns, Event::Start(e) | Event::Empty(e))) => {
                if e.local_name().as_ref() != "Envelope" {
                    return Sniffed::Unknown;
                }
                return match ns {
                    ResolveResult::Bound(ns) => Sniffed::Envelope(SoapVersion::from_envelope_namespace(ns.0)),
                    _ => Sniffed::Envelope(None),
                };
            }
            Ok((_, Event::Eof)) | Err(_) => return Sniffed::Unknown,
            Ok((_, Event::DocType(_))) => return Sniffed::Unknown,
            Ok(_) => {}
        }
    }
    Sniffed::Unknown
}
