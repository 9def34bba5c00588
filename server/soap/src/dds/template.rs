//! DDS templates: the recording pass over a message the full parser has just accepted, and
//! the resulting byte template (message bytes, static runs, one slot per simple-typed
//! value, loop program for repeated items). Owns slot destinations and how a value is
//! written back into a [`Request`]. Must not accept a message by itself: it only ever
//! describes bytes that [`crate::parse_request`] already accepted, and gives up (no template)
//! whenever the bytes and the parsed request do not line up exactly.

use quick_xml::events::Event;
use quick_xml::reader::Reader;

use crate::model::{Operation, ParsedRequest, Request};
use crate::parse::{Limits, parse_xsd_unsigned_int};
use crate::version::SoapVersion;
use crate::xml::parse_xsd_bool;

/// Where a slot's value goes in the [`Request`]. `i`/`j` of the [`Slot`] index lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    SchemaName,
    Pattern,
    Condition,
    OrderBy,
    Path,
    /// `listAttributes/entryName` (scalar).
    EntryName,
    Token,
    Plain,
    PageSize,
    /// `attributes[i].name|type|value` (createSchema, addSchemaAttributes, setAttributes).
    AttrName,
    AttrType,
    AttrValue,
    /// `entries[i].name`, `entries[i].attributes[j].*` (createEntry).
    EntryItemName,
    EntryAttrName,
    EntryAttrType,
    EntryAttrValue,
    /// `select[i]` (query).
    Select,
    /// `attribute_names[i]`.
    AttributeNameAt,
    /// `entry_names[i]` (getAttributes).
    EntryNameAt,
    /// Text inside an ignored header block: validated, never stored.
    HeaderText,
}

/// XSD kind of a slot, i.e. the conversion the full parser applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Bool,
    U32,
    Ignore,
}

impl Field {
    pub(crate) fn kind(self) -> Kind {
        match self {
            Field::Plain => Kind::Bool,
            Field::PageSize => Kind::U32,
            Field::HeaderText => Kind::Ignore,
            _ => Kind::Str,
        }
    }
}

/// Which list of a request a loop fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListField {
    Attributes,
    Entries,
    Select,
    EntryNames,
    AttributeNames,
}

/// One simple-typed value: the text between a start tag's `>` and the `<` of its end tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub start: u32,
    pub end: u32,
    pub i: u32,
    pub j: u32,
    pub field: Field,
    /// The old bytes hold a reference, CDATA, a comment or `\r`: the value is not the raw
    /// bytes, so the slot may only be reused byte-identically.
    pub fragile: bool,
}

/// A byte range of the template with the slots inside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seg {
    pub start: u32,
    pub end: u32,
    pub slot_lo: u32,
    pub slot_hi: u32,
}

/// A unit of a loop: one repeated item plus the bytes up to the next sibling.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    pub seg: Seg,
    pub elements: u32,
}

/// Repeated items (Deltarser's loop): the old units in order, and the distinct shapes
/// (indices into `units`, most frequent first).
#[derive(Debug, Clone)]
pub(crate) struct LoopDef {
    pub list: ListField,
    pub units: Vec<Unit>,
    pub shapes: Vec<u32>,
}

#[derive(Debug, Clone)]
pub(crate) enum Part {
    Seg(Seg),
    Loop(LoopDef),
}

/// `prefix, loop, middle, loop, suffix`: how a message with other item counts decomposes.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub parts: Vec<Part>,
    /// Elements outside all loop units.
    pub base_elements: usize,
}

/// What the template's message used of [`Limits`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub depth: usize,
    pub elements: usize,
    pub attributes: usize,
}

/// Most distinct item shapes a loop keeps; beyond that the template has no loop program.
const MAX_SHAPES: usize = 8;

/// A cached byte template of one accepted message.
#[derive(Debug)]
pub struct Template {
    pub(crate) version: SoapVersion,
    pub(crate) bytes: Vec<u8>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) parsed: ParsedRequest,
    pub(crate) op: Operation,
    /// End of the operation wrapper's start tag: the bytes before it select the template.
    pub(crate) select_len: usize,
    pub(crate) usage: Usage,
    pub(crate) program: Option<Program>,
    pub(crate) mem: usize,
}

impl Template {
    /// Records a template for `body`, which `parse_request(body, version, _)` turned into
    /// `parsed`. Returns `None` when the message is not templatable (UTF-16, over 4 GiB) or
    /// when the recording pass does not line up with `parsed` (never expected; it is the
    /// safety net that keeps a recording bug from turning into a wrong fast result).
    pub fn record(body: &[u8], version: SoapVersion, parsed: &ParsedRequest) -> Option<Template> {
        if body.len() >= u32::MAX as usize || body.starts_with(b"\xFF\xFE") || body.starts_with(b"\xFE\xFF") {
            return None;
        }
        let bom = if body.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        let text = std::str::from_utf8(&body[bom..]).ok()?;
        let mut rec = Recorder::new(parsed.request.clone(), bom);
        rec.run(text)?;
        // `req` is the recorder's copy of the parsed request (slots were checked against it,
        // read-only): it becomes the template's cached result.
        let Recorder { req, slots, usage, children, wrapper_open, wrapper_close, select_len, .. } = rec;
        let select_len = select_len?;
        let program = match (wrapper_open, wrapper_close) {
            (Some(open), Some(_)) => build_program(body, &slots, &children, open, usage.elements),
            _ => None,
        };
        let mut t = Template {
            version,
            bytes: body.to_vec(),
            slots,
            op: req.operation(),
            parsed: ParsedRequest { request: req, headers: parsed.headers.clone() },
            select_len,
            usage,
            program,
            mem: 0,
        };
        t.mem = t.memory();
        Some(t)
    }

    /// The operation this template parses.
    pub fn operation(&self) -> Operation {
        self.op
    }

    /// Number of value slots.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Whether the template can take messages with other item counts.
    pub fn has_loops(&self) -> bool {
        self.program.is_some()
    }

    /// Approximate heap bytes held by the template.
    pub fn memory_bytes(&self) -> usize {
        self.mem
    }

    /// Whether `body` starts like the message this template was recorded from, up to the end
    /// of the operation wrapper's start tag (template selection, not acceptance).
    pub(crate) fn selects(&self, body: &[u8]) -> bool {
        body.len() >= self.select_len && body[..self.select_len] == self.bytes[..self.select_len]
    }

    /// Whether both templates are selected by the same bytes.
    pub(crate) fn same_selector(&self, other: &Template) -> bool {
        self.bytes[..self.select_len] == other.bytes[..other.select_len]
    }

    fn memory(&self) -> usize {
        let mut n = std::mem::size_of::<Template>() + self.bytes.capacity();
        n += self.slots.capacity() * std::mem::size_of::<Slot>();
        if let Some(p) = &self.program {
            n += p.parts.capacity() * std::mem::size_of::<Part>();
            for part in &p.parts {
                if let Part::Loop(l) = part {
                    n += l.units.capacity() * std::mem::size_of::<Unit>() + l.shapes.capacity() * 4;
                }
            }
        }
        n + parsed_memory(&self.parsed)
    }

    /// Checks `limits` against what any message matching this template uses (the loop path
    /// checks the element count itself).
    pub(crate) fn within(&self, body_len: usize, limits: &Limits) -> bool {
        body_len <= limits.max_body_bytes
            && self.usage.depth <= limits.max_depth
            && self.usage.attributes <= limits.max_attributes
    }
}

fn parsed_memory(p: &ParsedRequest) -> usize {
    fn s(x: &str) -> usize {
        x.len() + std::mem::size_of::<String>()
    }
    fn os(x: &Option<String>) -> usize {
        x.as_deref().map_or(std::mem::size_of::<Option<String>>(), s)
    }
    fn attrs(a: &[crate::model::Attribute]) -> usize {
        a.iter().map(|a| s(&a.name) + os(&a.attr_type) + os(&a.value)).sum()
    }
    fn strs(v: &[String]) -> usize {
        v.iter().map(|x| s(x)).sum()
    }
    let r = match &p.request {
        Request::Ping | Request::GetVersion => 0,
        Request::CreateSchema { schema_name, attributes, .. }
        | Request::AddSchemaAttributes { schema_name, attributes } => s(schema_name) + attrs(attributes),
        Request::DropSchema { schema_name } | Request::DescribeSchema { schema_name } => s(schema_name),
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => s(schema_name) + strs(attribute_names),
        Request::ListSchemas { path } => os(path),
        Request::CreateEntry { schema_name, entries } => {
            s(schema_name) + entries.iter().map(|e| s(&e.name) + attrs(&e.attributes) + 24).sum::<usize>()
        }
        Request::RemoveEntry { pattern, condition } => s(pattern) + os(condition),
        Request::SetAttributes { pattern, condition, attributes } => s(pattern) + os(condition) + attrs(attributes),
        Request::GetAttributes { entry_names, attribute_names } => strs(entry_names) + strs(attribute_names),
        Request::ClearAttributes { pattern, attribute_names } => s(pattern) + strs(attribute_names),
        Request::ListAttributes { entry_name } => s(entry_name),
        Request::Query { select, condition, order_by, .. } => strs(select) + os(condition) + os(order_by),
        Request::NextQuery { token, .. } | Request::EndQuery { token } => s(token),
    };
    r + p.headers.iter().map(|h| 64 + h.local_name.len() + h.namespace.as_ref().map_or(0, String::len)).sum::<usize>()
}

/// A mutable view of one destination in a request.
pub(crate) enum DestMut<'a> {
    Str(&'a mut String),
    OptStr(&'a mut Option<String>),
    Bool(&'a mut bool),
    OptU32(&'a mut Option<u32>),
}

/// The destination `(field, i, j)` in `req`, if the request has it.
pub(crate) fn dest_mut(req: &mut Request, field: Field, i: u32, j: u32) -> Option<DestMut<'_>> {
    let (i, j) = (i as usize, j as usize);
    Some(match (field, req) {
        (
            Field::SchemaName,
            Request::CreateSchema { schema_name, .. }
            | Request::DropSchema { schema_name }
            | Request::AddSchemaAttributes { schema_name, .. }
            | Request::RemoveSchemaAttributes { schema_name, .. }
            | Request::DescribeSchema { schema_name }
            | Request::CreateEntry { schema_name, .. },
        ) => DestMut::Str(schema_name),
        (
            Field::Pattern,
            Request::RemoveEntry { pattern, .. }
            | Request::SetAttributes { pattern, .. }
            | Request::ClearAttributes { pattern, .. },
        ) => DestMut::Str(pattern),
        (
            Field::Condition,
            Request::RemoveEntry { condition, .. }
            | Request::SetAttributes { condition, .. }
            | Request::Query { condition, .. },
        ) => DestMut::OptStr(condition),
        (Field::OrderBy, Request::Query { order_by, .. }) => DestMut::OptStr(order_by),
        (Field::Path, Request::ListSchemas { path }) => DestMut::OptStr(path),
        (Field::EntryName, Request::ListAttributes { entry_name }) => DestMut::Str(entry_name),
        (Field::Token, Request::NextQuery { token, .. } | Request::EndQuery { token }) => DestMut::Str(token),
        (Field::Plain, Request::CreateSchema { plain, .. }) => DestMut::Bool(plain),
        (Field::PageSize, Request::Query { page_size, .. } | Request::NextQuery { page_size, .. }) => {
            DestMut::OptU32(page_size)
        }
        (
            Field::AttrName | Field::AttrType | Field::AttrValue,
            Request::CreateSchema { attributes, .. }
            | Request::AddSchemaAttributes { attributes, .. }
            | Request::SetAttributes { attributes, .. },
        ) => {
            let a = attributes.get_mut(i)?;
            match field {
                Field::AttrName => DestMut::Str(&mut a.name),
                Field::AttrType => DestMut::OptStr(&mut a.attr_type),
                _ => DestMut::OptStr(&mut a.value),
            }
        }
        (Field::EntryItemName, Request::CreateEntry { entries, .. }) => DestMut::Str(&mut entries.get_mut(i)?.name),
        (Field::EntryAttrName | Field::EntryAttrType | Field::EntryAttrValue, Request::CreateEntry { entries, .. }) => {
            let a = entries.get_mut(i)?.attributes.get_mut(j)?;
            match field {
                Field::EntryAttrName => DestMut::Str(&mut a.name),
                Field::EntryAttrType => DestMut::OptStr(&mut a.attr_type),
                _ => DestMut::OptStr(&mut a.value),
            }
        }
        (Field::Select, Request::Query { select, .. }) => DestMut::Str(select.get_mut(i)?),
        (
            Field::AttributeNameAt,
            Request::RemoveSchemaAttributes { attribute_names, .. }
            | Request::GetAttributes { attribute_names, .. }
            | Request::ClearAttributes { attribute_names, .. },
        ) => DestMut::Str(attribute_names.get_mut(i)?),
        (Field::EntryNameAt, Request::GetAttributes { entry_names, .. }) => DestMut::Str(entry_names.get_mut(i)?),
        _ => return None,
    })
}

/// Does the old value at a destination equal what the raw slot text decodes to, and is it
/// present at all (absent/nil values get no slot)? `Some(true)`: slot; `Some(false)`: no
/// slot (nil); `None`: mismatch (recording bug, so no template). Reads only (`dest_mut` is
/// shared with the fast path's writer).
fn check_dest(req: &mut Request, slot: &Slot, raw: &str) -> Option<bool> {
    if slot.field == Field::HeaderText {
        return Some(true);
    }
    let d = dest_mut(req, slot.field, slot.i, slot.j)?;
    if slot.fragile {
        // The value is a decoding of the raw bytes; only its presence can be checked.
        return Some(match d {
            DestMut::OptStr(o) => o.is_some(),
            DestMut::OptU32(o) => o.is_some(),
            DestMut::Str(_) | DestMut::Bool(_) => true,
        });
    }
    match d {
        DestMut::Str(s) => (s == raw).then_some(true),
        DestMut::OptStr(None) => Some(false),
        DestMut::OptStr(Some(s)) => (s == raw).then_some(true),
        DestMut::Bool(b) => (parse_xsd_bool(raw)? == *b).then_some(true),
        DestMut::OptU32(None) => None,
        DestMut::OptU32(Some(v)) => (parse_xsd_unsigned_int(raw)? == *v).then_some(true),
    }
}

/// What an open element is, for the recording pass.
#[derive(Debug, Clone, Copy)]
enum Frame {
    Envelope,
    Header,
    /// Anything inside a header block (the block included).
    HeaderInner,
    Body,
    Wrapper,
    /// `attribute` item of the wrapper (index i).
    AttrItem(u32),
    /// `entry` item (index i) and its attribute counter.
    EntryItem(u32),
    EntryAttr(u32, u32),
    /// A simple-typed field; `content` is where its text starts.
    Simple {
        field: Field,
        i: u32,
        j: u32,
        content: u32,
    },
    /// A header leaf candidate: no child seen yet.
    HeaderLeaf {
        content: u32,
    },
}

/// A child of the operation wrapper: its byte range and the counters before and after it.
#[derive(Debug, Clone, Copy)]
struct Child {
    list: Option<ListField>,
    end: u32,
    elements_before: usize,
    elements_after: usize,
    slots_before: usize,
    slots_after: usize,
}

struct Recorder {
    req: Request,
    off: u32,
    slots: Vec<Slot>,
    stack: Vec<Frame>,
    usage: Usage,
    children: Vec<Child>,
    /// Where the wrapper's content starts and where its end tag starts (`None` for `<op/>`).
    wrapper_open: Option<u32>,
    wrapper_close: Option<u32>,
    select_len: Option<usize>,
    // item counters of the wrapper
    n_attr: u32,
    n_entry: u32,
    n_select: u32,
    n_attr_name: u32,
    n_entry_name: u32,
    n_entry_attr: u32,
}

impl Recorder {
    fn new(req: Request, off: usize) -> Self {
        Recorder {
            req,
            off: off as u32,
            slots: Vec::new(),
            stack: Vec::with_capacity(16),
            usage: Usage::default(),
            children: Vec::new(),
            wrapper_open: None,
            wrapper_close: None,
            select_len: None,
            n_attr: 0,
            n_entry: 0,
            n_select: 0,
            n_attr_name: 0,
            n_entry_name: 0,
            n_entry_attr: 0,
        }
    }

    fn run(&mut self, text: &str) -> Option<()> {
        let mut r = Reader::from_str(text);
        {
            let c = r.config_mut();
            c.expand_empty_elements = false;
            c.check_end_names = false;
            c.check_comments = false;
            c.trim_text_start = false;
            c.trim_text_end = false;
        }
        let op = self.req.operation();
        loop {
            let before = self.off + u32::try_from(r.buffer_position()).ok()?;
            let ev = r.read_event().ok()?;
            let after = self.off + u32::try_from(r.buffer_position()).ok()?;
            match ev {
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let empty = matches!(ev, Event::Empty(_));
                    self.usage.elements += 1;
                    let attrs = e.attributes().with_checks(false).count();
                    self.usage.attributes = self.usage.attributes.max(attrs);
                    let local = e.local_name();
                    let local: &str = local.as_ref();
                    let frame = self.classify(op, local)?;
                    if matches!(frame, Frame::Wrapper) {
                        self.select_len = Some(after as usize);
                        if !empty {
                            self.wrapper_open = Some(after);
                        }
                    }
                    if let Some(Frame::HeaderLeaf { .. }) = self.stack.last() {
                        // The parent has a child: it is not a leaf.
                        if let Some(top) = self.stack.last_mut() {
                            *top = Frame::HeaderInner;
                        }
                    }
                    if !empty {
                        let frame = match frame {
                            Frame::Simple { field, i, j, .. } => Frame::Simple { field, i, j, content: after },
                            Frame::HeaderLeaf { .. } => Frame::HeaderLeaf { content: after },
                            f => f,
                        };
                        self.stack.push(frame);
                        self.usage.depth = self.usage.depth.max(self.stack.len());
                    } else {
                        self.usage.depth = self.usage.depth.max(self.stack.len() + 1);
                        if matches!(self.stack.last(), Some(Frame::Wrapper)) {
                            self.close_child(after);
                        }
                    }
                }
                Event::End(_) => {
                    let frame = self.stack.pop()?;
                    match frame {
                        Frame::Simple { field, i, j, content } => self.slot(text, field, i, j, content, before)?,
                        Frame::HeaderLeaf { content } => self.slot(text, Field::HeaderText, 0, 0, content, before)?,
                        Frame::Wrapper => self.wrapper_close = Some(before),
                        _ => {}
                    }
                    if matches!(self.stack.last(), Some(Frame::Wrapper)) {
                        self.close_child(after);
                    }
                }
                Event::Eof => break,
                Event::DocType(_) | Event::PI(_) => return None,
                _ => {}
            }
        }
        if !self.stack.is_empty() {
            return None;
        }
        Some(())
    }

    /// Decides what a starting element is, from its parent frame and local name (the full
    /// parser already checked namespaces and order).
    fn classify(&mut self, op: Operation, local: &str) -> Option<Frame> {
        let parent = self.stack.last().copied();
        let depth = self.stack.len();
        Some(match parent {
            None if depth == 0 => Frame::Envelope,
            Some(Frame::Envelope) => match local {
                "Header" => Frame::Header,
                "Body" => Frame::Body,
                _ => return None,
            },
            Some(Frame::Header | Frame::HeaderInner | Frame::HeaderLeaf { .. }) => Frame::HeaderLeaf { content: 0 },
            Some(Frame::Body) => Frame::Wrapper,
            Some(Frame::Wrapper) => {
                let simple = |field: Field, i: u32| Frame::Simple { field, i, j: 0, content: 0 };
                let (frame, list) = match (op, local) {
                    (_, "schemaName") => (simple(Field::SchemaName, 0), None),
                    (_, "pattern") => (simple(Field::Pattern, 0), None),
                    (_, "condition") => (simple(Field::Condition, 0), None),
                    (_, "orderBy") => (simple(Field::OrderBy, 0), None),
                    (_, "path") => (simple(Field::Path, 0), None),
                    (_, "token") => (simple(Field::Token, 0), None),
                    (_, "plain") => (simple(Field::Plain, 0), None),
                    (_, "pageSize") => (simple(Field::PageSize, 0), None),
                    (Operation::ListAttributes, "entryName") => (simple(Field::EntryName, 0), None),
                    (Operation::GetAttributes, "entryName") => {
                        self.n_entry_name += 1;
                        (simple(Field::EntryNameAt, self.n_entry_name - 1), Some(ListField::EntryNames))
                    }
                    (_, "attributeName") => {
                        self.n_attr_name += 1;
                        (simple(Field::AttributeNameAt, self.n_attr_name - 1), Some(ListField::AttributeNames))
                    }
                    (_, "select") => {
                        self.n_select += 1;
                        (simple(Field::Select, self.n_select - 1), Some(ListField::Select))
                    }
                    (_, "attribute") => {
                        self.n_attr += 1;
                        (Frame::AttrItem(self.n_attr - 1), Some(ListField::Attributes))
                    }
                    (Operation::CreateEntry, "entry") => {
                        self.n_entry += 1;
                        self.n_entry_attr = 0;
                        (Frame::EntryItem(self.n_entry - 1), Some(ListField::Entries))
                    }
                    _ => return None,
                };
                self.children.push(Child {
                    list,
                    end: 0,
                    elements_before: self.usage.elements - 1,
                    elements_after: 0,
                    slots_before: self.slots.len(),
                    slots_after: 0,
                });
                frame
            }
            Some(Frame::AttrItem(i)) => {
                let field = match local {
                    "name" => Field::AttrName,
                    "type" => Field::AttrType,
                    "value" => Field::AttrValue,
                    _ => return None,
                };
                Frame::Simple { field, i, j: 0, content: 0 }
            }
            Some(Frame::EntryItem(i)) => match local {
                "name" => Frame::Simple { field: Field::EntryItemName, i, j: 0, content: 0 },
                "attribute" => {
                    self.n_entry_attr += 1;
                    Frame::EntryAttr(i, self.n_entry_attr - 1)
                }
                _ => return None,
            },
            Some(Frame::EntryAttr(i, j)) => {
                let field = match local {
                    "name" => Field::EntryAttrName,
                    "type" => Field::EntryAttrType,
                    "value" => Field::EntryAttrValue,
                    _ => return None,
                };
                Frame::Simple { field, i, j, content: 0 }
            }
            _ => return None,
        })
    }

    /// A wrapper child (depth 4) just ended at `end`.
    fn close_child(&mut self, end: u32) {
        if let Some(c) = self.children.last_mut() {
            c.end = end;
            c.elements_after = self.usage.elements;
            c.slots_after = self.slots.len();
        }
    }

    fn slot(&mut self, text: &str, field: Field, i: u32, j: u32, content: u32, end: u32) -> Option<()> {
        let raw = text.get((content - self.off) as usize..(end - self.off) as usize)?;
        let fragile = raw.bytes().any(|b| matches!(b, b'<' | b'&' | b'\r'));
        let slot = Slot { start: content, end, i, j, field, fragile };
        if check_dest(&mut self.req, &slot, raw)? {
            self.slots.push(slot);
        }
        Some(())
    }
}

/// Builds the loop program from the wrapper's children. A unit is the bytes between the end
/// of the previous sibling (or the wrapper's start tag) and the end of the item: leading
/// whitespace and comments, then the item element. So every piece starts right after a `>`,
/// pretty-printed items share one shape, and zero items leave `prefix + suffix`, which is
/// what a pretty-printer writes for an empty list. `None` without repeated items or with too
/// many distinct item shapes.
fn build_program(
    bytes: &[u8],
    slots: &[Slot],
    children: &[Child],
    wrapper_open: u32,
    total_elements: usize,
) -> Option<Program> {
    let mut parts = Vec::new();
    let mut cursor = (0u32, 0usize); // (byte, slot index) where the next Seg starts
    let mut base_elements = total_elements;
    let mut k = 0usize;
    while k < children.len() {
        let Some(list) = children[k].list else {
            k += 1;
            continue;
        };
        let mut end = k;
        while end < children.len() && children[end].list == Some(list) {
            end += 1;
        }
        let lead = if k == 0 {
            (wrapper_open, children[0].slots_before)
        } else {
            (children[k - 1].end, children[k - 1].slots_after)
        };
        parts.push(Part::Seg(Seg { start: cursor.0, end: lead.0, slot_lo: cursor.1 as u32, slot_hi: lead.1 as u32 }));
        let mut units = Vec::with_capacity(end - k);
        let mut from = lead;
        for c in &children[k..end] {
            let elements = c.elements_after - c.elements_before;
            base_elements -= elements;
            units.push(Unit {
                seg: Seg { start: from.0, end: c.end, slot_lo: from.1 as u32, slot_hi: c.slots_after as u32 },
                elements: elements as u32,
            });
            from = (c.end, c.slots_after);
        }
        let shapes = shapes_of(bytes, slots, &units)?;
        parts.push(Part::Loop(LoopDef { list, units, shapes }));
        cursor = from;
        k = end;
    }
    if parts.is_empty() {
        return None;
    }
    parts.push(Part::Seg(Seg {
        start: cursor.0,
        end: bytes.len() as u32,
        slot_lo: cursor.1 as u32,
        slot_hi: slots.len() as u32,
    }));
    Some(Program { parts, base_elements })
}

/// Distinct unit shapes (static bytes and slot layout), most frequent first.
fn shapes_of(bytes: &[u8], slots: &[Slot], units: &[Unit]) -> Option<Vec<u32>> {
    let mut shapes: Vec<(u32, usize)> = Vec::new(); // (unit index, count)
    'units: for (n, u) in units.iter().enumerate() {
        for (rep, count) in shapes.iter_mut() {
            if same_shape(bytes, slots, &units[*rep as usize], u) {
                *count += 1;
                continue 'units;
            }
        }
        if shapes.len() == MAX_SHAPES {
            return None;
        }
        shapes.push((n as u32, 1));
    }
    shapes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(shapes.into_iter().map(|(u, _)| u).collect())
}

fn same_shape(bytes: &[u8], slots: &[Slot], a: &Unit, b: &Unit) -> bool {
    let (sa, sb) = (
        &slots[a.seg.slot_lo as usize..a.seg.slot_hi as usize],
        &slots[b.seg.slot_lo as usize..b.seg.slot_hi as usize],
    );
    if sa.len() != sb.len() || a.elements != b.elements {
        return false;
    }
    let (mut pa, mut pb) = (a.seg.start as usize, b.seg.start as usize);
    for (x, y) in sa.iter().zip(sb) {
        if x.field != y.field || x.j != y.j || x.fragile != y.fragile {
            return false;
        }
        if bytes[pa..x.start as usize] != bytes[pb..y.start as usize] {
            return false;
        }
        pa = x.end as usize;
        pb = y.end as usize;
    }
    bytes[pa..a.seg.end as usize] == bytes[pb..b.seg.end as usize]
}
