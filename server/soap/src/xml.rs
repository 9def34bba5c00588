//! A strict, limit-enforcing XML token layer over quick-xml's `NsReader`.
//!
//! It turns quick-xml events into three tokens (element start, element end, decoded character
//! data) and rejects everything a SOAP message must not contain: DTDs, processing
//! instructions, undeclared entities, characters outside XML 1.0's `Char` production, unbound
//! prefixes, malformed or duplicate attributes, misplaced XML declarations. Comments are
//! skipped. Depth, element and attribute counts are bounded by [`Limits`].

use std::borrow::Cow;

use quick_xml::XmlVersion;
use quick_xml::escape::EscapeError;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

use crate::error::{LimitKind, SoapError};
use crate::model::NAMESPACE;
use crate::parse::Limits;
use crate::version::{SOAP11_ENV_NS, SOAP12_ENV_NS};

pub(crate) const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";
pub(crate) const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema";

/// A resolved namespace, with the ones we care about pre-classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ns {
    /// No namespace (unprefixed name, no default namespace in scope).
    None,
    /// `urn:ardacat:metadata:1`.
    Tns,
    Env11,
    Env12,
    Xsd,
    Xsi,
    Other(String),
}

impl Ns {
    fn classify(ns: &str) -> Ns {
        match ns {
            NAMESPACE => Ns::Tns,
            SOAP11_ENV_NS => Ns::Env11,
            SOAP12_ENV_NS => Ns::Env12,
            XSD_NS => Ns::Xsd,
            XSI_NS => Ns::Xsi,
            other => Ns::Other(other.to_string()),
        }
    }

    fn from_resolved(r: ResolveResult<'_>) -> Result<Ns, SoapError> {
        match r {
            ResolveResult::Unbound => Ok(Ns::None),
            ResolveResult::Bound(ns) => Ok(Ns::classify(ns.0)),
            ResolveResult::Unknown(prefix) => {
                Err(SoapError::NotWellFormed(format!("namespace prefix '{prefix}' is not declared")))
            }
        }
    }

    /// The namespace name, `None` for no namespace.
    pub(crate) fn uri(&self) -> Option<&str> {
        match self {
            Ns::None => None,
            Ns::Tns => Some(NAMESPACE),
            Ns::Env11 => Some(SOAP11_ENV_NS),
            Ns::Env12 => Some(SOAP12_ENV_NS),
            Ns::Xsd => Some(XSD_NS),
            Ns::Xsi => Some(XSI_NS),
            Ns::Other(s) => Some(s),
        }
    }
}

/// Element names we know are handed out as `&'static str` without allocating.
const KNOWN_NAMES: &[&str] = &[
    "Envelope",
    "Header",
    "Body",
    "Fault",
    // operations
    "ping",
    "getVersion",
    "createSchema",
    "dropSchema",
    "addSchemaAttributes",
    "removeSchemaAttributes",
    "listSchemas",
    "describeSchema",
    "createEntry",
    "removeEntry",
    "setAttributes",
    "getAttributes",
    "clearAttributes",
    "listAttributes",
    "query",
    "nextQuery",
    "endQuery",
    // fields
    "schemaName",
    "attribute",
    "plain",
    "attributeName",
    "path",
    "entry",
    "pattern",
    "condition",
    "entryName",
    "select",
    "orderBy",
    "pageSize",
    "token",
    "name",
    "type",
    "value",
];

fn intern(name: &str) -> Cow<'static, str> {
    match KNOWN_NAMES.iter().find(|k| **k == name) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(name.to_string()),
    }
}

/// An element start tag, with the attributes the SOAP layer interprets already decoded.
#[derive(Debug, Clone)]
pub(crate) struct Elem {
    pub ns: Ns,
    pub local: Cow<'static, str>,
    /// `xsi:nil` value (`None` = absent).
    pub nil: Option<bool>,
    /// `xsi:type`, resolved (namespace, local name).
    pub xsi_type: Option<(Ns, String)>,
    /// Attributes in a SOAP envelope namespace: (namespace, local name, normalized value).
    pub env_attrs: Vec<(Ns, String, String)>,
    /// First attribute that is unqualified or in our namespace (the XSD allows none).
    pub stray_attr: Option<String>,
}

impl Elem {
    /// `{namespace}local` or `local`, for messages.
    pub(crate) fn display_name(&self) -> String {
        match self.ns.uri() {
            Some(uri) => format!("{{{uri}}}{}", self.local),
            None => format!("{}", self.local),
        }
    }

    pub(crate) fn is(&self, ns: &Ns, local: &str) -> bool {
        self.ns == *ns && self.local == local
    }
}

pub(crate) enum Tok<'i> {
    Start(Elem),
    End,
    /// A piece of character data: text (EOL-normalized), CDATA content, or a resolved
    /// reference. Consecutive pieces belong to the same text node.
    Text(Cow<'i, str>),
    Eof,
}

pub(crate) struct Lexer<'i> {
    reader: NsReader<&'i [u8]>,
    limits: Limits,
    depth: usize,
    elements: usize,
    events: usize,
    /// The input was transcoded from UTF-16, so `encoding="UTF-16"` is truthful.
    from_utf16: bool,
}

/// `true` for characters outside XML 1.0's `Char` production.
#[inline]
pub(crate) fn is_forbidden_char(c: char) -> bool {
    let c = c as u32;
    (c < 0x20 && c != 0x9 && c != 0xA && c != 0xD) || c == 0xFFFE || c == 0xFFFF
}

/// Fails on the first character outside XML 1.0's `Char` production. Works on bytes: every
/// forbidden character is either a C0 control byte or the UTF-8 sequence `EF BF BE`/`EF BF BF`.
pub(crate) fn check_chars(s: &str) -> Result<(), SoapError> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c < 0x20 {
            if c != b'\t' && c != b'\n' && c != b'\r' {
                return Err(SoapError::NotWellFormed(format!(
                    "character U+{c:04X} at byte {i} is not allowed in XML 1.0"
                )));
            }
        } else if c == 0xEF && b.get(i + 1) == Some(&0xBF) && matches!(b.get(i + 2), Some(0xBE | 0xBF)) {
            return Err(SoapError::NotWellFormed(format!(
                "character U+FF{:02X} at byte {i} is not allowed in XML 1.0",
                0xFE + (b[i + 2] - 0xBE)
            )));
        }
        i += 1;
    }
    Ok(())
}

fn predefined_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "lt" => "<",
        "gt" => ">",
        "amp" => "&",
        "apos" => "'",
        "quot" => "\"",
        _ => return None,
    })
}

fn xml_error(e: quick_xml::Error) -> SoapError {
    match e {
        quick_xml::Error::Escape(EscapeError::UnrecognizedEntity(_, name)) => SoapError::UndeclaredEntity(name),
        quick_xml::Error::Namespace(e) => SoapError::NotWellFormed(format!("namespace error: {e}")),
        other => SoapError::NotWellFormed(other.to_string()),
    }
}

/// Parses an `xs:boolean` (whitespace-collapsed).
pub(crate) fn parse_xsd_bool(s: &str) -> Option<bool> {
    match s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r')) {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

impl<'i> Lexer<'i> {
    pub(crate) fn new(input: &'i str, limits: &Limits, from_utf16: bool) -> Self {
        let mut reader = NsReader::from_str(input);
        {
            let cfg = reader.config_mut();
            cfg.expand_empty_elements = true;
            cfg.check_end_names = true;
            cfg.check_comments = true;
            cfg.allow_dangling_amp = false;
            cfg.allow_unmatched_ends = false;
            cfg.trim_text_start = false;
            cfg.trim_text_end = false;
        }
        Lexer { reader, limits: *limits, depth: 0, elements: 0, events: 0, from_utf16 }
    }

    pub(crate) fn next(&mut self) -> Result<Tok<'i>, SoapError> {
        loop {
            let event = self.reader.read_event().map_err(xml_error)?;
            self.events += 1;
            match event {
                Event::Start(e) | Event::Empty(e) => {
                    self.depth += 1;
                    if self.depth > self.limits.max_depth {
                        return Err(SoapError::LimitExceeded { kind: LimitKind::Depth, limit: self.limits.max_depth });
                    }
                    self.elements += 1;
                    if self.elements > self.limits.max_elements {
                        return Err(SoapError::LimitExceeded {
                            kind: LimitKind::Elements,
                            limit: self.limits.max_elements,
                        });
                    }
                    return self.elem(&e).map(Tok::Start);
                }
                Event::End(_) => {
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(Tok::End);
                }
                Event::Text(t) => return Ok(Tok::Text(t.xml10_content())),
                Event::CData(c) => return Ok(Tok::Text(c.xml10_content())),
                Event::GeneralRef(r) => {
                    if r.is_char_ref() {
                        let c = r
                            .resolve_char_ref()
                            .map_err(|e| SoapError::NotWellFormed(format!("character reference &{}; : {e}", &*r)))?
                            .ok_or_else(|| SoapError::NotWellFormed("bad character reference".into()))?;
                        if is_forbidden_char(c) {
                            return Err(SoapError::NotWellFormed(format!(
                                "character reference &{}; denotes U+{:04X}, which is not allowed in XML 1.0",
                                &*r, c as u32
                            )));
                        }
                        return Ok(Tok::Text(Cow::Owned(c.to_string())));
                    }
                    return match predefined_entity(&r) {
                        Some(s) => Ok(Tok::Text(Cow::Borrowed(s))),
                        None => Err(SoapError::UndeclaredEntity(r.to_string())),
                    };
                }
                Event::Comment(_) => continue,
                Event::Decl(d) => {
                    if self.events != 1 {
                        return Err(SoapError::NotWellFormed(
                            "the XML declaration must be at the very start of the message".into(),
                        ));
                    }
                    let version = d.version().map_err(xml_error)?;
                    if &*version != "1.0" {
                        return Err(SoapError::InvalidEnvelope(format!(
                            "XML version {version} is not supported (SOAP uses XML 1.0)"
                        )));
                    }
                    if let Some(enc) = d.encoding() {
                        let enc = enc.map_err(|e| SoapError::NotWellFormed(e.to_string()))?;
                        let ok = enc.eq_ignore_ascii_case("utf-8")
                            || (self.from_utf16 && enc.eq_ignore_ascii_case("utf-16"));
                        if !ok {
                            return Err(SoapError::Encoding(format!(
                                "input: declared encoding {enc:?} is not supported (use UTF-8)"
                            )));
                        }
                    }
                    continue;
                }
                Event::PI(p) => {
                    return Err(SoapError::ProcessingInstructionNotAllowed(p.target().to_string()));
                }
                Event::DocType(_) => return Err(SoapError::DoctypeNotAllowed),
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(SoapError::NotWellFormed(format!(
                            "unexpected end of message with {} unclosed element(s) (truncated?)",
                            self.depth
                        )));
                    }
                    return Ok(Tok::Eof);
                }
            }
        }
    }

    fn elem(&self, e: &BytesStart<'_>) -> Result<Elem, SoapError> {
        let resolver = self.reader.resolver();
        let (ns, local) = resolver.resolve_element(e.name());
        let ns = Ns::from_resolved(ns)?;
        let local = intern(local.as_ref());

        let mut count = 0usize;
        for _ in e.attributes().with_checks(false) {
            count += 1;
            if count > self.limits.max_attributes {
                return Err(SoapError::LimitExceeded {
                    kind: LimitKind::Attributes,
                    limit: self.limits.max_attributes,
                });
            }
        }

        let mut elem = Elem { ns, local, nil: None, xsi_type: None, env_attrs: Vec::new(), stray_attr: None };
        for attr in e.attributes().with_checks(true) {
            let attr = attr
                .map_err(|err| SoapError::NotWellFormed(format!("bad attribute in <{}>: {err}", e.name().as_ref())))?;
            let raw: &str = &attr.value;
            if raw.contains('<') {
                return Err(SoapError::NotWellFormed(format!("'<' in the value of attribute '{}'", attr.key.as_ref())));
            }
            if attr.key.as_namespace_binding().is_some() {
                if raw.contains('&') {
                    return Err(SoapError::NotWellFormed(format!(
                        "references in namespace declaration '{}' are not supported",
                        attr.key.as_ref()
                    )));
                }
                continue;
            }
            let value = attr.normalized_value(XmlVersion::Implicit1_0).map_err(xml_error)?;
            if let Some(c) = value.chars().find(|c| is_forbidden_char(*c)) {
                return Err(SoapError::NotWellFormed(format!(
                    "attribute '{}' contains U+{:04X}, which is not allowed in XML 1.0",
                    attr.key.as_ref(),
                    c as u32
                )));
            }
            let (ans, alocal) = resolver.resolve_attribute(attr.key);
            match Ns::from_resolved(ans)? {
                Ns::Xsi => match alocal.as_ref() {
                    "nil" => {
                        elem.nil = Some(parse_xsd_bool(&value).ok_or_else(|| SoapError::InvalidValue {
                            element: format!("{}/@xsi:nil", elem.local),
                            reason: format!("{value:?} is not an xs:boolean"),
                        })?);
                    }
                    "type" => {
                        let qname = value.trim();
                        let (tns, tlocal) = resolver.resolve_element(quick_xml::name::QName(qname));
                        let tns = Ns::from_resolved(tns).map_err(|_| SoapError::InvalidValue {
                            element: format!("{}/@xsi:type", elem.local),
                            reason: format!("prefix of {qname:?} is not declared"),
                        })?;
                        elem.xsi_type = Some((tns, tlocal.as_ref().to_string()));
                    }
                    // schemaLocation, noNamespaceSchemaLocation: hints, ignored.
                    _ => {}
                },
                ns @ (Ns::Env11 | Ns::Env12) => {
                    elem.env_attrs.push((ns, alocal.as_ref().to_string(), value.into_owned()));
                }
                Ns::None | Ns::Tns if elem.stray_attr.is_none() => {
                    elem.stray_attr = Some(attr.key.as_ref().to_string());
                }
                // Attributes from foreign namespaces (xml:lang, vendor annotations) are ignored.
                _ => {}
            }
        }
        Ok(elem)
    }

    /// Skips whitespace and comments, returns the next child element of the current element,
    /// or `None` after consuming the current element's end tag. Non-whitespace character data
    /// is an error (`parent` names the element for the message).
    pub(crate) fn next_child(&mut self, parent: &str) -> Result<Option<Elem>, SoapError> {
        loop {
            match self.next()? {
                Tok::Start(e) => return Ok(Some(e)),
                Tok::End => return Ok(None),
                Tok::Text(t) => {
                    if !is_xml_whitespace(&t) {
                        return Err(SoapError::UnexpectedText(parent.to_string()));
                    }
                }
                Tok::Eof => {
                    return Err(SoapError::NotWellFormed("unexpected end of message".into()));
                }
            }
        }
    }

    /// Reads the character content of a simple-typed element up to and including its end tag.
    pub(crate) fn read_text(&mut self, elem: &Elem) -> Result<String, SoapError> {
        let mut out: Option<Cow<'i, str>> = None;
        loop {
            match self.next()? {
                Tok::Text(t) => match &mut out {
                    None => out = Some(t),
                    Some(acc) => acc.to_mut().push_str(&t),
                },
                Tok::End => return Ok(out.map(Cow::into_owned).unwrap_or_default()),
                Tok::Start(child) => {
                    return Err(SoapError::InvalidValue {
                        element: elem.local.to_string(),
                        reason: format!(
                            "simple-typed element must not contain child elements (found {})",
                            child.display_name()
                        ),
                    });
                }
                Tok::Eof => {
                    return Err(SoapError::NotWellFormed("unexpected end of message".into()));
                }
            }
        }
    }

    /// Skips the rest of the current element (after its start tag), including its end tag.
    /// Everything inside is still checked (well-formedness, limits, DTD/PI/entities).
    pub(crate) fn skip_element(&mut self) -> Result<(), SoapError> {
        let mut level = 1usize;
        loop {
            match self.next()? {
                Tok::Start(_) => level += 1,
                Tok::End => {
                    level -= 1;
                    if level == 0 {
                        return Ok(());
                    }
                }
                Tok::Text(_) => {}
                Tok::Eof => {
                    return Err(SoapError::NotWellFormed("unexpected end of message".into()));
                }
            }
        }
    }

    /// Consumes the epilog after the root element: only whitespace and comments may follow.
    pub(crate) fn finish(&mut self) -> Result<(), SoapError> {
        loop {
            match self.next()? {
                Tok::Eof => return Ok(()),
                Tok::Text(t) if is_xml_whitespace(&t) => {}
                Tok::Text(_) => {
                    return Err(SoapError::NotWellFormed("character data after the Envelope element".into()));
                }
                Tok::Start(e) => {
                    return Err(SoapError::NotWellFormed(format!(
                        "element {} after the Envelope element (only one root element is allowed)",
                        e.display_name()
                    )));
                }
                Tok::End => {
                    return Err(SoapError::NotWellFormed("unmatched end tag".into()));
                }
            }
        }
    }
}

pub(crate) fn is_xml_whitespace(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}
