//! Response, fault and request serialization.
//!
//! Output is UTF-8 XML 1.0 with an XML declaration. The envelope uses the prefix `soap` for the
//! envelope namespace of the chosen version and declares `xsi`; the response wrapper declares
//! `urn:ardacat:metadata:1` as the default namespace, so every payload element is qualified
//! as the WSDL requires (elementFormDefault="qualified").
//!
//! # Escaping and unrepresentable characters
//!
//! Text is escaped as `&amp; &lt; &gt; &quot; &apos;`, and CR as `&#13;` (a raw CR would be
//! turned into LF by the receiver's XML parser). Characters that XML 1.0 cannot carry at all
//! (U+0000–U+001F except tab, LF and CR; U+FFFE; U+FFFF) are **refused**: the write fails with
//! [`SoapError::Unserializable`] naming the field, and the caller answers with a `Server`
//! fault instead. Nothing is stripped or replaced in data.
//!
//! Fault texts are the one exception: a fault must always be writable, so in `faultstring` /
//! `Reason/Text` and `MetadataFault/message` such characters are written as the visible
//! escape `\u{XXXX}` (documented, not silent).
//!
//! # Streaming
//!
//! [`ResponseWriter`] writes the envelope head, then one item (schema name, attribute, entry,
//! result row) at a time, then the tail, so a server can flush `out` between items. Each item
//! is written atomically: when it fails, `out` is left as it was before that item. A server
//! that has already sent part of a streamed response cannot turn it into a fault any more; it
//! must then abort the response (e.g. reset the connection or end a chunked body early).

use bytes::Bytes;

use crate::error::{FaultCode, SoapError};
use crate::model::{Attribute, Entry, MDResult, NAMESPACE, Operation, Request, Response, Row};
use crate::version::SoapVersion;
use crate::xml::XSI_NS;

mod fault;
mod request;

pub use fault::*;
pub use request::*;

// ----------------------------------------------------------------------------------------------
// Escaping

/// Where a value sits in the message, named only in the error when the value is refused:
/// `prefix` + `name`, e.g. `"entry/"` + `"attribute/value"`. It stays two borrowed pieces so
/// that nothing is formatted for values that are fine: formatting the path of every value
/// was a quarter of the server's CPU on a 1,000-entry getAttributes.
#[derive(Clone, Copy)]
struct Field<'a>(&'a str, &'a str);

impl<'a> From<&'a str> for Field<'a> {
    fn from(name: &'a str) -> Self {
        Field("", name)
    }
}

/// Bytes [`text`] must stop at: the five markup characters, CR, the C0 controls other than
/// tab and LF (refused) and 0xEF (the lead byte of U+FFFE and U+FFFF). One table look-up per
/// byte; runs of other bytes are copied whole.
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'\t' as usize] = false;
    t[b'\n' as usize] = false;
    t[b'&' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'"' as usize] = true;
    t[b'\'' as usize] = true;
    t[0xEF] = true;
    t
};

/// Appends `s` escaped for element content; refuses characters XML 1.0 cannot carry.
fn text(out: &mut Vec<u8>, s: &str, field: Field<'_>) -> Result<(), SoapError> {
    let b = s.as_bytes();
    let mut last = 0;
    let mut i = plain_prefix(b);
    while i < b.len() {
        let c = b[i];
        let rep: &[u8] = match c {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&apos;",
            b'\r' => b"&#13;",
            0..=0x1F => return Err(unrepresentable(field, u32::from(c))),
            0xEF if b.get(i + 1) == Some(&0xBF) && matches!(b.get(i + 2), Some(0xBE | 0xBF)) => {
                return Err(unrepresentable(field, 0xFFFE + u32::from(b[i + 2] - 0xBE)));
            }
            _ => {
                // 0xEF leading any other character: written as it is.
                i += 1 + plain_prefix(&b[i + 1..]);
                continue;
            }
        };
        out.extend_from_slice(&b[last..i]);
        out.extend_from_slice(rep);
        last = i + 1;
        i = last + plain_prefix(&b[last..]);
    }
    out.extend_from_slice(&b[last..]);
    Ok(())
}

/// How many bytes `b` starts with that [`text`] copies as they are (none in [`SPECIAL`]).
/// Eight bytes at a time: a chunk's eight look-ups are OR-ed and branched on once, which
/// halves the scan of the 20-byte strings that fill catalogue rows (one branch per byte was
/// most of the escaping's cost on a 1,000-entry getAttributes).
#[inline]
fn plain_prefix(b: &[u8]) -> usize {
    let special = |c: u8| SPECIAL[usize::from(c)];
    let mut i = 0;
    for c in b.chunks_exact(8) {
        let any = special(c[0])
            | special(c[1])
            | special(c[2])
            | special(c[3])
            | special(c[4])
            | special(c[5])
            | special(c[6])
            | special(c[7]);
        if any {
            break;
        }
        i += 8;
    }
    while i < b.len() && !special(b[i]) {
        i += 1;
    }
    i
}

fn unrepresentable(field: Field<'_>, cp: u32) -> SoapError {
    let Field(prefix, name) = field;
    SoapError::Unserializable(format!("value of '{prefix}{name}' contains U+{cp:04X}, which XML 1.0 cannot represent"))
}

/// Escapes for element content, writing forbidden characters as the visible text `\u{XXXX}`.
/// Used for fault texts only.
fn lossy_text(out: &mut Vec<u8>, s: &str) {
    for ch in s.chars() {
        if crate::xml::is_forbidden_char(ch) {
            out.extend_from_slice(format!("\\u{{{:04X}}}", ch as u32).as_bytes());
        } else {
            let mut buf = [0u8; 4];
            // A single char never contains a forbidden character, so this cannot fail.
            let _ = text(out, ch.encode_utf8(&mut buf), Field::from(""));
        }
    }
}

/// Escapes for a double-quoted attribute value (also tab/LF/CR, which attribute-value
/// normalization would otherwise turn into spaces).
pub(crate) fn attr_value(out: &mut Vec<u8>, s: &str) {
    for ch in s.chars() {
        match ch {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\'' => out.extend_from_slice(b"&apos;"),
            '\t' => out.extend_from_slice(b"&#9;"),
            '\n' => out.extend_from_slice(b"&#10;"),
            '\r' => out.extend_from_slice(b"&#13;"),
            c if crate::xml::is_forbidden_char(c) => {
                out.extend_from_slice(format!("\\u{{{:04X}}}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Building blocks

fn envelope_head(version: SoapVersion, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"");
    out.extend_from_slice(version.envelope_namespace().as_bytes());
    out.extend_from_slice(b"\" xmlns:xsi=\"");
    out.extend_from_slice(XSI_NS.as_bytes());
    out.extend_from_slice(b"\">");
}

const ENVELOPE_TAIL: &[u8] = b"</soap:Body></soap:Envelope>";

fn open(out: &mut Vec<u8>, name: &str) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

fn close(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b"</");
    out.extend_from_slice(name.as_bytes());
    out.push(b'>');
}

fn wrapper_open(out: &mut Vec<u8>, name: &str) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" xmlns=\"");
    out.extend_from_slice(NAMESPACE.as_bytes());
    out.extend_from_slice(b"\">");
}

fn simple<'f>(out: &mut Vec<u8>, name: &str, value: &str, field: impl Into<Field<'f>>) -> Result<(), SoapError> {
    open(out, name);
    text(out, value, field.into())?;
    close(out, name);
    Ok(())
}

fn nil(out: &mut Vec<u8>, name: &str) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" xsi:nil=\"true\"/>");
}

fn int(out: &mut Vec<u8>, name: &str, v: u32) -> Result<(), SoapError> {
    if v > i32::MAX as u32 {
        return Err(SoapError::Unserializable(format!("'{name}' = {v} does not fit xs:int")));
    }
    open(out, name);
    out.extend_from_slice(v.to_string().as_bytes());
    close(out, name);
    Ok(())
}

/// How `Attribute::value == None` is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NoneValue {
    /// Omit `<value>` (schema definitions: describeSchema, listAttributes, createSchema, ...).
    Omit,
    /// `<value xsi:nil="true"/>` (values: entries, setAttributes).
    Nil,
}

fn attribute(out: &mut Vec<u8>, a: &Attribute, none: NoneValue, path: &str) -> Result<(), SoapError> {
    open(out, "attribute");
    simple(out, "name", &a.name, Field(path, "attribute/name"))?;
    if let Some(t) = &a.attr_type {
        simple(out, "type", t, Field(path, "attribute/type"))?;
    }
    match (&a.value, none) {
        (Some(v), _) => simple(out, "value", v, Field(path, "attribute/value"))?,
        (None, NoneValue::Nil) => nil(out, "value"),
        (None, NoneValue::Omit) => {}
    }
    close(out, "attribute");
    Ok(())
}

fn entry(out: &mut Vec<u8>, e: &Entry) -> Result<(), SoapError> {
    open(out, "entry");
    simple(out, "name", &e.name, "entry/name")?;
    for a in &e.attributes {
        attribute(out, a, NoneValue::Nil, "entry/")?;
    }
    close(out, "entry");
    Ok(())
}

/// The attribute names of a getAttributes response, written once per response instead of once
/// per entry: every entry of a collection carries the same attributes, so the
/// `<attribute><name>…</name>` start of each is escaped up front and then copied as it is.
/// [`ResponseWriter::entry_row`] writes exactly the bytes [`ResponseWriter::entry`] would.
#[derive(Debug, Clone)]
pub struct EntryColumns {
    /// Every attribute's `<attribute><name>…</name><value>` (what a value follows), one after
    /// the other, up to the first one whose name XML cannot carry: one allocation per response
    /// whatever the number of attributes (a single-entry getAttributes builds this too).
    starts: Vec<u8>,
    /// Where each attribute's start ends in `starts` (it begins where the previous one ends).
    ends: Vec<usize>,
    /// How many attributes there are in all.
    len: usize,
    /// The first attribute whose name XML cannot carry: its index and the code point (reported
    /// by the first entry that reaches it, as [`ResponseWriter::entry`] would; a response
    /// without entries never writes the name, so it does not fail).
    unwritable: Option<(usize, u32)>,
}

const VALUE_OPEN: &[u8] = b"<value>";

impl EntryColumns {
    pub fn new<S: AsRef<str>>(names: &[S]) -> EntryColumns {
        let mut starts = Vec::with_capacity(names.iter().map(|n| n.as_ref().len() + 31).sum());
        let mut ends = Vec::with_capacity(names.len());
        let mut unwritable = None;
        for (i, n) in names.iter().enumerate() {
            let mark = starts.len();
            starts.extend_from_slice(b"<attribute><name>");
            if text(&mut starts, n.as_ref(), Field::from("")).is_err() {
                starts.truncate(mark);
                unwritable = Some((i, first_forbidden(n.as_ref())));
                break;
            }
            starts.extend_from_slice(b"</name>");
            starts.extend_from_slice(VALUE_OPEN);
            ends.push(starts.len());
        }
        EntryColumns { starts, ends, len: names.len(), unwritable }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each writable attribute's start, in column order.
    fn starts(&self) -> impl Iterator<Item = &[u8]> {
        let mut from = 0;
        self.ends.iter().map(move |&end| {
            let start = &self.starts[from..end];
            from = end;
            start
        })
    }
}

/// The first character of `s` that XML 1.0 cannot carry (0 if there is none; only called
/// after [`text`] refused `s`).
fn first_forbidden(s: &str) -> u32 {
    s.chars().find(|&c| crate::xml::is_forbidden_char(c)).map_or(0, u32::from)
}

/// A value of [`ResponseWriter::entry_row`]: its text (`None` → `xsi:nil`), and whether it is
/// known to hold nothing XML must escape or refuse.
pub trait EntryValue {
    fn text(&self) -> Option<&str>;

    fn is_plain(&self) -> bool {
        false
    }
}

impl<S: AsRef<str>> EntryValue for Option<S> {
    fn text(&self) -> Option<&str> {
        self.as_ref().map(AsRef::as_ref)
    }
}

/// A value of a row whose producer knows which values it formatted itself.
#[derive(Debug, Clone, Copy)]
pub enum RowValue<'a> {
    /// Stored text (`None` → `xsi:nil`): escaped or refused as XML requires.
    Text(Option<&'a str>),
    /// Text its producer formatted (a number, boolean, date or mode: ASCII letters, digits,
    /// `-`, `+`, `.`, `:` and spaces), copied into the response without the escaping scan.
    Formatted(&'a str),
}

impl EntryValue for RowValue<'_> {
    fn text(&self) -> Option<&str> {
        match self {
            RowValue::Text(t) => *t,
            RowValue::Formatted(f) => Some(f),
        }
    }

    fn is_plain(&self) -> bool {
        matches!(self, RowValue::Formatted(_))
    }
}

/// One `<entry>` from a name and values in column order (`None` → `xsi:nil`); values beyond
/// the columns are ignored, missing ones leave their attributes out.
fn entry_row<I, V>(out: &mut Vec<u8>, columns: &EntryColumns, name: &str, values: I) -> Result<(), SoapError>
where
    I: IntoIterator<Item = V>,
    V: EntryValue,
{
    out.extend_from_slice(b"<entry><name>");
    text(out, name, Field::from("entry/name"))?;
    out.extend_from_slice(b"</name>");
    let mut values = values.into_iter();
    let mut written = 0;
    for (start, v) in columns.starts().zip(&mut values) {
        match v.text() {
            Some(t) => {
                out.extend_from_slice(start);
                if v.is_plain() {
                    debug_assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b"-+.: ".contains(&b)), "{t:?}");
                    out.extend_from_slice(t.as_bytes());
                } else {
                    text(out, t, Field("entry/", "attribute/value"))?;
                }
                out.extend_from_slice(b"</value></attribute>");
            }
            None => {
                out.extend_from_slice(&start[..start.len() - VALUE_OPEN.len()]);
                out.extend_from_slice(b"<value xsi:nil=\"true\"/></attribute>");
            }
        }
        written += 1;
    }
    // The starts end at an unwritable name: a row with a value for it fails there.
    if let Some((at, cp)) = columns.unwritable
        && written == at
        && values.next().is_some()
    {
        return Err(unrepresentable(Field("entry/", "attribute/name"), cp));
    }
    out.extend_from_slice(b"</entry>");
    Ok(())
}

fn row<I, S>(out: &mut Vec<u8>, values: I) -> Result<(), SoapError>
where
    I: IntoIterator<Item = Option<S>>,
    S: AsRef<str>,
{
    open(out, "row");
    for v in values {
        match v {
            Some(v) => simple(out, "value", v.as_ref(), "row/value")?,
            None => nil(out, "value"),
        }
    }
    close(out, "row");
    Ok(())
}

/// Runs `f`; on error restores `out` to its length before the call.
fn atomic(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> Result<(), SoapError>) -> Result<(), SoapError> {
    let mark = out.len();
    let r = f(out);
    if r.is_err() {
        out.truncate(mark);
    }
    r
}

// ----------------------------------------------------------------------------------------------
// Streaming response writer

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Inside the wrapper, items may follow.
    Items,
    /// query/nextQuery: `<result>` opened, head (token, columns) not yet written.
    ResultHead,
    /// query/nextQuery: head written, rows may follow.
    Rows,
}

/// Writes one response incrementally: [`begin`](Self::begin), items, then
/// [`finish`](Self::finish) or [`finish_result`](Self::finish_result).
///
/// Which item methods are valid depends on the operation:
///
/// | operation | items | end |
/// |---|---|---|
/// | listSchemas | [`schema_name`](Self::schema_name) | `finish` |
/// | describeSchema, listAttributes | [`attribute`](Self::attribute) | `finish` |
/// | getAttributes | [`entry`](Self::entry) | `finish` |
/// | query, nextQuery | [`result_head`](Self::result_head) once, then [`row`](Self::row) | `finish_result(more)` |
/// | all others | — (use [`write_response`]) | `finish` (empty wrapper only) |
///
/// Using an item method that does not belong to the operation returns
/// [`SoapError::Unserializable`] and writes nothing.
#[derive(Debug)]
pub struct ResponseWriter {
    op: Operation,
    stage: Stage,
}

impl ResponseWriter {
    /// Writes the XML declaration, `Envelope`, `Body` and the response wrapper's start tag
    /// (for query/nextQuery also `<result>`).
    pub fn begin(version: SoapVersion, op: Operation, out: &mut Vec<u8>) -> ResponseWriter {
        envelope_head(version, out);
        out.extend_from_slice(b"<soap:Body>");
        wrapper_open(out, op.response_name());
        let stage = if matches!(op, Operation::Query | Operation::NextQuery | Operation::SqlQuery) {
            open(out, "result");
            Stage::ResultHead
        } else {
            Stage::Items
        };
        ResponseWriter { op, stage }
    }

    pub fn operation(&self) -> Operation {
        self.op
    }

    fn expect(&self, ok: bool, what: &str) -> Result<(), SoapError> {
        if ok {
            Ok(())
        } else {
            Err(SoapError::Unserializable(format!("{what} is not valid in {} at this point", self.op.response_name())))
        }
    }

    /// listSchemas: one `<schemaName>`.
    pub fn schema_name(&mut self, name: &str, out: &mut Vec<u8>) -> Result<(), SoapError> {
        self.expect(self.op == Operation::ListSchemas && self.stage == Stage::Items, "schemaName")?;
        atomic(out, |out| simple(out, "schemaName", name, "schemaName"))
    }

    /// describeSchema / listAttributes: one `<attribute>`; `value: None` is omitted.
    pub fn attribute(&mut self, a: &Attribute, out: &mut Vec<u8>) -> Result<(), SoapError> {
        self.expect(
            matches!(self.op, Operation::DescribeSchema | Operation::ListAttributes) && self.stage == Stage::Items,
            "attribute",
        )?;
        atomic(out, |out| attribute(out, a, NoneValue::Omit, ""))
    }

    /// getAttributes: one `<entry>`; attribute `value: None` is written as `xsi:nil`.
    pub fn entry(&mut self, e: &Entry, out: &mut Vec<u8>) -> Result<(), SoapError> {
        self.expect(self.op == Operation::GetAttributes && self.stage == Stage::Items, "entry")?;
        atomic(out, |out| entry(out, e))
    }

    /// getAttributes: one `<entry>` named `name` with `values` in the order of `columns`;
    /// the same bytes as [`entry`](Self::entry) with the corresponding [`Entry`], without
    /// building one per row.
    pub fn entry_row<I, V>(
        &mut self,
        columns: &EntryColumns,
        name: &str,
        values: I,
        out: &mut Vec<u8>,
    ) -> Result<(), SoapError>
    where
        I: IntoIterator<Item = V>,
        V: EntryValue,
    {
        self.expect(self.op == Operation::GetAttributes && self.stage == Stage::Items, "entry")?;
        atomic(out, |out| entry_row(out, columns, name, values))
    }

    /// query / nextQuery: `<token>` (if any) and the `<column>`s. Must come before any row.
    pub fn result_head<S: AsRef<str>>(
        &mut self,
        token: Option<&str>,
        columns: &[S],
        out: &mut Vec<u8>,
    ) -> Result<(), SoapError> {
        self.expect(self.stage == Stage::ResultHead, "result head")?;
        atomic(out, |out| {
            if let Some(t) = token {
                simple(out, "token", t, "result/token")?;
            }
            for c in columns {
                simple(out, "column", c.as_ref(), "result/column")?;
            }
            Ok(())
        })?;
        self.stage = Stage::Rows;
        Ok(())
    }

    /// query / nextQuery: one `<row>`; `None` values are written as `xsi:nil`.
    pub fn row<I, S>(&mut self, values: I, out: &mut Vec<u8>) -> Result<(), SoapError>
    where
        I: IntoIterator<Item = Option<S>>,
        S: AsRef<str>,
    {
        self.expect(self.stage == Stage::Rows, "row (before result_head?)")?;
        atomic(out, |out| row(out, values))
    }

    /// Closes the wrapper, Body and Envelope (all operations except query/nextQuery).
    pub fn finish(self, out: &mut Vec<u8>) -> Result<(), SoapError> {
        self.expect(self.stage == Stage::Items, "finish (query results end with finish_result)")?;
        close(out, self.op.response_name());
        out.extend_from_slice(ENVELOPE_TAIL);
        Ok(())
    }

    /// query / nextQuery: writes `<more>`, closes `<result>`, the wrapper, Body and Envelope.
    /// Writes the (empty) head first if [`result_head`](Self::result_head) was not called.
    pub fn finish_result(mut self, more: bool, out: &mut Vec<u8>) -> Result<(), SoapError> {
        if self.stage == Stage::ResultHead {
            self.result_head::<&str>(None, &[], out)?;
        }
        self.expect(self.stage == Stage::Rows, "finish_result")?;
        open(out, "more");
        out.extend_from_slice(if more { b"true" } else { b"false" });
        close(out, "more");
        close(out, "result");
        close(out, self.op.response_name());
        out.extend_from_slice(ENVELOPE_TAIL);
        Ok(())
    }
}

// ----------------------------------------------------------------------------------------------
// Whole responses

/// Writes a complete response envelope. On error `out` is left as it was.
pub fn write_response(version: SoapVersion, response: &Response, out: &mut Vec<u8>) -> Result<(), SoapError> {
    atomic(out, |out| write_response_inner(version, response, out))
}

fn write_response_inner(version: SoapVersion, response: &Response, out: &mut Vec<u8>) -> Result<(), SoapError> {
    let op = response.operation();
    // Fixed-shape responses are written directly inside the wrapper.
    let mut w = ResponseWriter::begin(version, op, out);
    match response {
        Response::Ping
        | Response::CreateSchema
        | Response::DropSchema
        | Response::AddSchemaAttributes
        | Response::RemoveSchemaAttributes
        | Response::EndQuery
        | Response::IndexCreate
        | Response::IndexRemove => {}
        Response::IndexList { indexes } => {
            for ix in indexes {
                open(out, "index");
                simple(out, "name", &ix.name, "index/name")?;
                for a in &ix.attribute_names {
                    simple(out, "attributeName", a, "index/attributeName")?;
                }
                close(out, "index");
            }
        }
        Response::GetVersion { version } => simple(out, "version", version, "version")?,
        Response::ListSchemas { schema_names } => {
            for n in schema_names {
                w.schema_name(n, out)?;
            }
        }
        Response::DescribeSchema { attributes } | Response::ListAttributes { attributes } => {
            for a in attributes {
                w.attribute(a, out)?;
            }
        }
        Response::CreateEntry { created } => int(out, "created", *created)?,
        Response::RemoveEntry { removed } => int(out, "removed", *removed)?,
        Response::SetAttributes { updated } => int(out, "updated", *updated)?,
        Response::ClearAttributes { cleared } => int(out, "cleared", *cleared)?,
        Response::GetAttributes { entries } => {
            for e in entries {
                w.entry(e, out)?;
            }
        }
        Response::Query(r) | Response::NextQuery(r) | Response::SqlQuery(r) => {
            return write_result(w, r, out);
        }
    }
    w.finish(out)
}

fn write_result(mut w: ResponseWriter, r: &MDResult, out: &mut Vec<u8>) -> Result<(), SoapError> {
    w.result_head(r.token.as_deref(), &r.columns, out)?;
    for Row { values } in &r.rows {
        w.row(values.iter().map(Option::as_deref), out)?;
    }
    w.finish_result(r.more, out)
}

/// [`write_response`] into a fresh buffer.
pub fn response_bytes(version: SoapVersion, response: &Response) -> Result<Bytes, SoapError> {
    let mut out = Vec::with_capacity(512);
    write_response(version, response, &mut out)?;
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`text`] must write, one character at a time.
    fn escaped_by_char(s: &str) -> Result<String, u32> {
        let mut out = String::new();
        for ch in s.chars() {
            match ch {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&apos;"),
                '\r' => out.push_str("&#13;"),
                c if crate::xml::is_forbidden_char(c) => return Err(u32::from(c)),
                c => out.push(c),
            }
        }
        Ok(out)
    }

    /// Characters around every case of the scan: markup, CR, tab, LF, controls, U+FFFE/U+FFFF
    /// and other characters whose UTF-8 starts with 0xEF, multi-byte text and plain ASCII.
    fn tricky() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            6 => prop::char::range('a', 'z'),
            1 => prop::sample::select(vec![
                '&', '<', '>', '"', '\'', '\r', '\t', '\n', '\u{0}', '\u{1}', '\u{1F}', ' ', '\u{7F}',
                '\u{FFFE}', '\u{FFFF}', '\u{FFFD}', '\u{F000}', '\u{FEFF}', 'é', '\u{1F600}',
            ]),
        ];
        prop::collection::vec(ch, 0..40).prop_map(|v| v.into_iter().collect())
    }

    fn written(s: &str) -> Result<String, SoapError> {
        let mut out = b"x".to_vec();
        text(&mut out, s, Field::from("f")).map(|()| String::from_utf8(out[1..].to_vec()).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, .. ProptestConfig::default() })]

        /// The chunked scan writes exactly what a character-by-character escaper writes, and
        /// refuses exactly the strings it refuses, naming the first forbidden character.
        #[test]
        fn text_escapes_as_character_by_character(s in tricky()) {
            match (written(&s), escaped_by_char(&s)) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(SoapError::Unserializable(m)), Err(cp)) => {
                    let expected = format!("U+{cp:04X}");
                    prop_assert!(m.contains(&expected), "{} does not name {}", m, expected);
                }
                (a, b) => prop_assert!(false, "text gave {:?}, expected {:?}", a, b),
            }
        }
    }

    #[test]
    fn plain_prefix_stops_at_the_first_special_byte_in_and_after_chunks() {
        for len in 0..20 {
            let plain = "a".repeat(len);
            assert_eq!(plain_prefix(plain.as_bytes()), len);
            for at in 0..len {
                for special in [b'&', b'\r', 0x01, 0xEF, b'\''] {
                    let mut b = plain.clone().into_bytes();
                    b[at] = special;
                    assert_eq!(plain_prefix(&b), at, "len {len}, {special:#x} at {at}");
                }
            }
        }
    }
}
