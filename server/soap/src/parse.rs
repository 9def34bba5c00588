//! The authoritative request parser: envelope → [`ParsedRequest`].
//!
//! [`parse_request`] is the one entry point. A faster parser (e.g. differential
//! deserialization) may sit beside it, but must either decline or return exactly what
//! `parse_request` returns for the same bytes.
//!
//! Rules (beyond XML well-formedness, see [`crate::xml`]):
//! * the root is `Envelope` in the envelope namespace of the version the request was
//!   dispatched as (else `VersionMismatch`); its children are an optional `Header` and a
//!   mandatory `Body`, nothing else (WS-I BP R1011);
//! * header blocks: a block with `mustUnderstand` true that is addressed to us (SOAP 1.1: no
//!   `actor` or the `next` actor; SOAP 1.2: no `role`, `next` or `ultimateReceiver`) fails with
//!   `MustUnderstand`, since we understand no header blocks; the others are skipped and
//!   reported in [`ParsedRequest::headers`];
//! * the Body holds exactly one element, the operation wrapper, in `urn:ardacat:metadata:1`;
//! * wrapper children follow the WSDL's `xs:sequence` strictly: order, cardinality,
//!   qualification (elementFormDefault="qualified"); unknown elements are errors;
//! * simple values are returned exactly as decoded (entities, character references, CDATA
//!   sections and comments resolved; line ends normalized as XML requires); `xs:boolean` and
//!   `xs:unsignedInt` are whitespace-collapsed first;
//! * `xsi:nil="true"|"1"` is allowed on nillable elements only and requires empty content;
//!   `xsi:type`, when present, must name the element's declared type (or a compatible XSD
//!   built-in).

use std::borrow::Cow;

use crate::error::SoapError;
use crate::model::{Attribute, Entry, HeaderBlock, Operation, ParsedRequest, Request};
use crate::version::SoapVersion;
use crate::xml::{Elem, Lexer, Ns, Tok, check_chars, is_xml_whitespace, parse_xsd_bool};

/// Resource limits for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum element nesting depth; the Envelope is at depth 1.
    pub max_depth: usize,
    /// Maximum number of elements in the whole message.
    pub max_elements: usize,
    /// Maximum body size in bytes (checked before anything else).
    pub max_body_bytes: usize,
    /// Maximum attributes (namespace declarations included) on one element.
    pub max_attributes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 64, max_elements: 1_000_000, max_body_bytes: 64 * 1024 * 1024, max_attributes: 64 }
    }
}

/// Parses a SOAP request body into a typed request.
///
/// `version` is what [`crate::detect_version`] decided; the envelope namespace must match it.
/// Accepts UTF-8 (with or without BOM) and UTF-16 with a BOM.
pub fn parse_request(body: &[u8], version: SoapVersion, limits: &Limits) -> Result<ParsedRequest, SoapError> {
    if body.len() > limits.max_body_bytes {
        return Err(SoapError::BodyTooLarge { size: body.len(), limit: limits.max_body_bytes });
    }
    let (text, from_utf16) = decode(body)?;
    check_chars(&text)?;
    let mut lx = Lexer::new(&text, limits, from_utf16);
    let parsed = parse_envelope(&mut lx, version)?;
    lx.finish()?;
    Ok(parsed)
}

/// Bytes → text: UTF-8 (BOM stripped) or UTF-16 LE/BE with BOM (transcoded).
fn decode(body: &[u8]) -> Result<(Cow<'_, str>, bool), SoapError> {
    if let Some(rest) = body.strip_prefix(b"\xEF\xBB\xBF") {
        return utf8(rest).map(|s| (Cow::Borrowed(s), false));
    }
    let utf16 = match body {
        [0xFF, 0xFE, rest @ ..] => Some((rest, false)),
        [0xFE, 0xFF, rest @ ..] => Some((rest, true)),
        _ => None,
    };
    if let Some((rest, big_endian)) = utf16 {
        if rest.len() % 2 != 0 {
            return Err(SoapError::Encoding("UTF-16: odd number of bytes".into()));
        }
        let units = rest
            .chunks_exact(2)
            .map(|p| if big_endian { u16::from_be_bytes([p[0], p[1]]) } else { u16::from_le_bytes([p[0], p[1]]) });
        let s: String = char::decode_utf16(units)
            .collect::<Result<_, _>>()
            .map_err(|e| SoapError::Encoding(format!("UTF-16: {e}")))?;
        return Ok((Cow::Owned(s), true));
    }
    utf8(body).map(|s| (Cow::Borrowed(s), false))
}

fn utf8(b: &[u8]) -> Result<&str, SoapError> {
    std::str::from_utf8(b)
        .map_err(|e| SoapError::Encoding(format!("UTF-8: invalid byte sequence at byte {}", e.valid_up_to())))
}

fn env_ns(version: SoapVersion) -> Ns {
    match version {
        SoapVersion::V11 => Ns::Env11,
        SoapVersion::V12 => Ns::Env12,
    }
}

fn parse_envelope(lx: &mut Lexer<'_>, version: SoapVersion) -> Result<ParsedRequest, SoapError> {
    // Prolog: XML declaration (checked by the lexer), comments, whitespace.
    let root = loop {
        match lx.next()? {
            Tok::Start(e) => break e,
            Tok::Text(t) if is_xml_whitespace(&t) => {}
            Tok::Text(_) => {
                return Err(SoapError::NotWellFormed("character data before the root element".into()));
            }
            Tok::Eof => {
                return Err(SoapError::NotWellFormed("empty message: no root element".into()));
            }
            Tok::End => return Err(SoapError::NotWellFormed("unmatched end tag".into())),
        }
    };
    let env = env_ns(version);
    if root.local != "Envelope" {
        return Err(SoapError::InvalidEnvelope(format!(
            "root element is {}, expected a SOAP Envelope",
            root.display_name()
        )));
    }
    if root.ns != env {
        let found_version = root.ns.uri().and_then(SoapVersion::from_envelope_namespace);
        let found = match (found_version, root.ns.uri()) {
            (Some(v), _) => format!("a SOAP {v} envelope"),
            (None, Some(uri)) => format!("an Envelope in namespace {uri}"),
            (None, None) => "an Envelope in no namespace".to_string(),
        };
        return Err(SoapError::VersionMismatch { expected: version, found, found_version });
    }

    let mut headers = Vec::new();
    let mut child = lx.next_child("Envelope")?;
    let saw_header = child.as_ref().is_some_and(|h| h.is(&env, "Header"));
    if saw_header {
        parse_header(lx, version, &mut headers)?;
        child = lx.next_child("Envelope")?;
    }
    match child {
        Some(b) if b.is(&env, "Body") => {}
        Some(other) => {
            return Err(SoapError::InvalidEnvelope(format!(
                "unexpected element {} in Envelope (expected {}Body)",
                other.display_name(),
                if saw_header { "" } else { "Header or " }
            )));
        }
        None => return Err(SoapError::InvalidEnvelope("Envelope has no Body".into())),
    }

    let op_elem = lx.next_child("Body")?.ok_or(SoapError::EmptyBody)?;
    let request = parse_operation(lx, op_elem)?;
    if let Some(extra) = lx.next_child("Body")? {
        return Err(SoapError::MultipleBodyElements(extra.display_name()));
    }
    if let Some(after) = lx.next_child("Envelope")? {
        return Err(SoapError::InvalidEnvelope(format!(
            "element {} after Body (nothing may follow the Body)",
            after.display_name()
        )));
    }
    Ok(ParsedRequest { request, headers })
}

const ACTOR_NEXT_11: &str = "http://schemas.xmlsoap.org/soap/actor/next";
const ROLE_NEXT_12: &str = "http://www.w3.org/2003/05/soap-envelope/role/next";
const ROLE_NONE_12: &str = "http://www.w3.org/2003/05/soap-envelope/role/none";
const ROLE_ULTIMATE_12: &str = "http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver";

fn parse_header(lx: &mut Lexer<'_>, version: SoapVersion, out: &mut Vec<HeaderBlock>) -> Result<(), SoapError> {
    let env = env_ns(version);
    while let Some(block) = lx.next_child("Header")? {
        let mut must_understand = false;
        let mut targeted = true;
        for (ns, local, value) in &block.env_attrs {
            if *ns != env {
                continue;
            }
            match (version, local.as_str()) {
                // SOAP 1.1 defines "0"/"1", SOAP 1.2 xs:boolean. The xs:boolean forms are
                // accepted for 1.1 too: a client that wrote "true" means it.
                (_, "mustUnderstand") => {
                    must_understand = parse_xsd_bool(value).ok_or_else(|| SoapError::InvalidValue {
                        element: format!("{}/@mustUnderstand", block.local),
                        reason: format!("{value:?} is not a boolean"),
                    })?;
                }
                (SoapVersion::V11, "actor") => {
                    let v = value.trim();
                    targeted = v.is_empty() || v == ACTOR_NEXT_11;
                }
                (SoapVersion::V12, "role") => {
                    let v = value.trim();
                    targeted = v.is_empty() || v == ROLE_NEXT_12 || v == ROLE_ULTIMATE_12;
                    if v == ROLE_NONE_12 {
                        targeted = false;
                    }
                }
                _ => {}
            }
        }
        if must_understand && targeted {
            return Err(SoapError::MustUnderstand {
                namespace: block.ns.uri().unwrap_or("").to_string(),
                local_name: block.local.to_string(),
            });
        }
        out.push(HeaderBlock {
            namespace: block.ns.uri().map(str::to_string),
            local_name: block.local.to_string(),
            must_understand,
        });
        lx.skip_element()?;
    }
    Ok(())
}

fn parse_operation(lx: &mut Lexer<'_>, el: Elem) -> Result<Request, SoapError> {
    let op = match (&el.ns, Operation::from_name(&el.local)) {
        (Ns::Tns, Some(op)) => op,
        (Ns::None, Some(_)) => {
            return Err(SoapError::UnknownOperation(format!(
                "{} (operation elements must be in namespace {})",
                el.display_name(),
                crate::model::NAMESPACE
            )));
        }
        _ => return Err(SoapError::UnknownOperation(el.display_name())),
    };
    check_complex_elem(&el, None)?;
    let mut f = Fields::new(lx, op.name())?;
    let req = match op {
        Operation::Ping => Request::Ping,
        Operation::GetVersion => Request::GetVersion,
        Operation::CreateSchema => Request::CreateSchema {
            schema_name: f.string("schemaName")?,
            attributes: f.many("attribute", parse_attribute)?,
            plain: f.opt_bool("plain")?.unwrap_or(false),
        },
        Operation::DropSchema => Request::DropSchema { schema_name: f.string("schemaName")? },
        Operation::AddSchemaAttributes => Request::AddSchemaAttributes {
            schema_name: f.string("schemaName")?,
            attributes: f.many("attribute", parse_attribute)?,
        },
        Operation::RemoveSchemaAttributes => Request::RemoveSchemaAttributes {
            schema_name: f.string("schemaName")?,
            attribute_names: f.strings("attributeName")?,
        },
        Operation::ListSchemas => Request::ListSchemas { path: f.opt_string("path")? },
        Operation::DescribeSchema => Request::DescribeSchema { schema_name: f.string("schemaName")? },
        Operation::CreateEntry => {
            Request::CreateEntry { schema_name: f.string("schemaName")?, entries: f.many("entry", parse_entry)? }
        }
        Operation::RemoveEntry => {
            Request::RemoveEntry { pattern: f.string("pattern")?, condition: f.opt_string("condition")? }
        }
        Operation::SetAttributes => Request::SetAttributes {
            pattern: f.string("pattern")?,
            condition: f.opt_string("condition")?,
            attributes: f.many("attribute", parse_attribute)?,
        },
        Operation::GetAttributes => Request::GetAttributes {
            entry_names: f.strings("entryName")?,
            attribute_names: f.strings("attributeName")?,
        },
        Operation::ClearAttributes => {
            Request::ClearAttributes { pattern: f.string("pattern")?, attribute_names: f.strings("attributeName")? }
        }
        Operation::ListAttributes => Request::ListAttributes { entry_name: f.string("entryName")? },
        Operation::Query => Request::Query {
            select: f.strings("select")?,
            condition: f.opt_string("condition")?,
            order_by: f.opt_string("orderBy")?,
            page_size: f.opt_u32("pageSize")?,
        },
        Operation::NextQuery => Request::NextQuery { token: f.string("token")?, page_size: f.opt_u32("pageSize")? },
        Operation::EndQuery => Request::EndQuery { token: f.string("token")? },
        Operation::IndexCreate => Request::IndexCreate {
            schema_name: f.string("schemaName")?,
            index_name: f.string("indexName")?,
            attribute_names: f.strings("attributeName")?,
        },
        Operation::IndexRemove => {
            Request::IndexRemove { schema_name: f.string("schemaName")?, index_name: f.string("indexName")? }
        }
        Operation::IndexList => Request::IndexList { schema_name: f.string("schemaName")? },
    };
    f.finish()?;
    Ok(req)
}

fn parse_attribute(lx: &mut Lexer<'_>, el: Elem) -> Result<Attribute, SoapError> {
    check_complex_elem(&el, Some("Attribute"))?;
    let mut f = Fields::new(lx, "attribute")?;
    let a =
        Attribute { name: f.string("name")?, attr_type: f.opt_string("type")?, value: f.opt_nillable_string("value")? };
    f.finish()?;
    Ok(a)
}

fn parse_entry(lx: &mut Lexer<'_>, el: Elem) -> Result<Entry, SoapError> {
    check_complex_elem(&el, Some("Entry"))?;
    let mut f = Fields::new(lx, "entry")?;
    let e = Entry { name: f.string("name")?, attributes: f.many("attribute", parse_attribute)? };
    f.finish()?;
    Ok(e)
}

/// Attribute checks for a complex-typed element (wrapper, Attribute, Entry): no stray
/// attributes, no `xsi:nil="true"` (not nillable), `xsi:type` naming the declared type.
fn check_complex_elem(el: &Elem, type_name: Option<&str>) -> Result<(), SoapError> {
    check_stray(el)?;
    if el.nil == Some(true) {
        return Err(SoapError::InvalidValue {
            element: el.local.to_string(),
            reason: "element is not nillable".into(),
        });
    }
    if let Some((ns, local)) = &el.xsi_type {
        let ok = match type_name {
            Some(t) => *ns == Ns::Tns && local == t,
            None => *ns == Ns::Xsd && local == "anyType",
        };
        if !ok {
            return Err(SoapError::InvalidValue {
                element: el.local.to_string(),
                reason: format!(
                    "xsi:type {{{}}}{local} does not match the declared type{}",
                    ns.uri().unwrap_or(""),
                    type_name.map(|t| format!(" tns:{t}")).unwrap_or_default()
                ),
            });
        }
    }
    Ok(())
}

fn check_stray(el: &Elem) -> Result<(), SoapError> {
    if let Some(a) = &el.stray_attr {
        return Err(SoapError::InvalidValue {
            element: el.local.to_string(),
            reason: format!("attribute '{a}' is not allowed"),
        });
    }
    if let Some((_, local, _)) = el.env_attrs.first() {
        return Err(SoapError::InvalidValue {
            element: el.local.to_string(),
            reason: format!("SOAP attribute '{local}' is not allowed on payload elements"),
        });
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Simple {
    String,
    Boolean,
    UnsignedInt,
}

/// `xsi:type` on a simple-typed element must name its type or a type it derives from
/// (string also accepts the string-derived XSD types a toolkit might pick).
fn check_simple_type(el: &Elem, kind: Simple) -> Result<(), SoapError> {
    if let Some((ns, local)) = &el.xsi_type {
        let ok = *ns == Ns::Xsd
            && match kind {
                Simple::String => matches!(local.as_str(), "string" | "anySimpleType" | "anyType"),
                Simple::Boolean => {
                    matches!(local.as_str(), "boolean" | "anySimpleType" | "anyType")
                }
                Simple::UnsignedInt => {
                    matches!(local.as_str(), "unsignedInt" | "anySimpleType" | "anyType")
                }
            };
        if !ok {
            return Err(SoapError::InvalidValue {
                element: el.local.to_string(),
                reason: format!(
                    "xsi:type {{{}}}{local} does not match the declared type xsd:{}",
                    ns.uri().unwrap_or(""),
                    match kind {
                        Simple::String => "string",
                        Simple::Boolean => "boolean",
                        Simple::UnsignedInt => "unsignedInt",
                    }
                ),
            });
        }
    }
    Ok(())
}

/// A cursor over the children of one complex element, consumed in `xs:sequence` order.
struct Fields<'l, 'i> {
    lx: &'l mut Lexer<'i>,
    parent: &'static str,
    next: Option<Elem>,
}

impl<'l, 'i> Fields<'l, 'i> {
    fn new(lx: &'l mut Lexer<'i>, parent: &'static str) -> Result<Self, SoapError> {
        let next = lx.next_child(parent)?;
        Ok(Fields { lx, parent, next })
    }

    /// Whether the next child is `name` in our namespace. A child with the right local name but
    /// the wrong (or no) namespace is reported as such, since that is the usual interop slip.
    fn at(&self, name: &str) -> Result<bool, SoapError> {
        match &self.next {
            Some(e) if e.local == name => {
                if e.ns == Ns::Tns {
                    Ok(true)
                } else {
                    Err(SoapError::UnexpectedElement {
                        parent: self.parent.to_string(),
                        found: e.display_name(),
                        expected: format!(
                            "'{name}' in namespace {} (elementFormDefault is qualified)",
                            crate::model::NAMESPACE
                        ),
                    })
                }
            }
            _ => Ok(false),
        }
    }

    fn take(&mut self) -> Result<Elem, SoapError> {
        let e = self.next.take().expect("take() after at() returned true");
        Ok(e)
    }

    fn advance(&mut self) -> Result<(), SoapError> {
        self.next = self.lx.next_child(self.parent)?;
        Ok(())
    }

    fn missing(&self, name: &str) -> SoapError {
        match &self.next {
            None => SoapError::MissingElement { parent: self.parent.to_string(), element: name.to_string() },
            Some(e) => SoapError::UnexpectedElement {
                parent: self.parent.to_string(),
                found: e.display_name(),
                expected: format!("'{name}'"),
            },
        }
    }

    /// Reads a simple value of the current (taken) element; `Ok(None)` for `xsi:nil`.
    fn simple(&mut self, el: &Elem, kind: Simple, nillable: bool) -> Result<Option<String>, SoapError> {
        check_stray(el)?;
        check_simple_type(el, kind)?;
        let text = self.lx.read_text(el)?;
        if el.nil == Some(true) {
            if !nillable {
                return Err(SoapError::InvalidValue {
                    element: el.local.to_string(),
                    reason: "element is not nillable".into(),
                });
            }
            if !text.is_empty() {
                return Err(SoapError::InvalidValue {
                    element: el.local.to_string(),
                    reason: "element with xsi:nil=\"true\" must be empty".into(),
                });
            }
            return Ok(None);
        }
        Ok(Some(text))
    }

    fn opt_simple(&mut self, name: &str, kind: Simple, nillable: bool) -> Result<Option<Option<String>>, SoapError> {
        if !self.at(name)? {
            return Ok(None);
        }
        let el = self.take()?;
        let v = self.simple(&el, kind, nillable)?;
        self.advance()?;
        Ok(Some(v))
    }

    fn string(&mut self, name: &str) -> Result<String, SoapError> {
        match self.opt_simple(name, Simple::String, false)? {
            Some(v) => Ok(v.expect("non-nillable")),
            None => Err(self.missing(name)),
        }
    }

    fn opt_string(&mut self, name: &str) -> Result<Option<String>, SoapError> {
        Ok(self.opt_simple(name, Simple::String, false)?.map(|v| v.expect("non-nillable")))
    }

    fn opt_nillable_string(&mut self, name: &str) -> Result<Option<String>, SoapError> {
        Ok(self.opt_simple(name, Simple::String, true)?.flatten())
    }

    fn strings(&mut self, name: &str) -> Result<Vec<String>, SoapError> {
        let mut out = Vec::new();
        while let Some(v) = self.opt_simple(name, Simple::String, false)? {
            out.push(v.expect("non-nillable"));
        }
        Ok(out)
    }

    fn opt_bool(&mut self, name: &str) -> Result<Option<bool>, SoapError> {
        match self.opt_simple(name, Simple::Boolean, false)? {
            None => Ok(None),
            Some(v) => {
                let v = v.expect("non-nillable");
                parse_xsd_bool(&v).map(Some).ok_or_else(|| SoapError::InvalidValue {
                    element: name.to_string(),
                    reason: format!("{v:?} is not an xs:boolean (true, false, 1, 0)"),
                })
            }
        }
    }

    fn opt_u32(&mut self, name: &str) -> Result<Option<u32>, SoapError> {
        match self.opt_simple(name, Simple::UnsignedInt, false)? {
            None => Ok(None),
            Some(v) => {
                let v = v.expect("non-nillable");
                parse_xsd_unsigned_int(&v).map(Some).ok_or_else(|| SoapError::InvalidValue {
                    element: name.to_string(),
                    reason: format!("{v:?} is not an xs:unsignedInt"),
                })
            }
        }
    }

    fn many<T>(
        &mut self,
        name: &str,
        mut parse: impl FnMut(&mut Lexer<'i>, Elem) -> Result<T, SoapError>,
    ) -> Result<Vec<T>, SoapError> {
        let mut out = Vec::new();
        while self.at(name)? {
            let el = self.take()?;
            out.push(parse(self.lx, el)?);
            self.advance()?;
        }
        Ok(out)
    }

    fn finish(self) -> Result<(), SoapError> {
        match self.next {
            None => Ok(()),
            Some(e) => Err(SoapError::UnexpectedElement {
                parent: self.parent.to_string(),
                found: e.display_name(),
                expected: format!("end of '{}'", self.parent),
            }),
        }
    }
}

/// `xs:unsignedInt` lexical space after whitespace collapse: optional `+`, digits.
pub(crate) fn parse_xsd_unsigned_int(s: &str) -> Option<u32> {
    let t = s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let digits = t.strip_prefix('+').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Leading zeros are legal; strip them so u32 parsing does not overflow on "000...1".
    let d = digits.trim_start_matches('0');
    if d.is_empty() {
        return Some(0);
    }
    d.parse().ok()
}
