//! DDS templates: the recording pass over a message the full parser has just accepted, and
//! the resulting byte template (message text, static runs, one slot per simple-typed value,
//! loop program for repeated items, and the request's layout without its values). Owns slot
//! destinations and how a value is written back into a [`Request`]. Must not accept a message
//! by itself: it only ever describes bytes that [`crate::parse_request`] already accepted, and
//! gives up (no template) whenever the bytes and the parsed request do not line up exactly.
//!
//! # Memory
//!
//! A template keeps one copy of the message and no copy of its values: every value is a
//! byte range of that copy, and a hit builds the owned request from the ranges (the new
//! message's text for changed slots). What the ranges cannot say lives in a hollow
//! `Layout` (the request with every string empty, one flag byte per list item saying which
//! optional elements are present) and, only when the message has them, in an `Extra`
//! block (ignored header blocks, decoded values of slots holding references or CDATA). A slot
//! is 16 bytes (offsets as `u32`, field, fragility and inner index packed into one word), a
//! loop unit 12. So a template is the message plus about 16 bytes per value, in a handful of
//! allocations, whatever the number of values.

use quick_xml::events::Event;
use quick_xml::reader::Reader;

use crate::model::{Attribute, Entry, HeaderBlock, Operation, ParsedRequest, Request};
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
    /// `indexName` (indexCreate, indexRemove).
    IndexName,
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
    /// Every field, in declaration order (`Field::ALL[f as usize] == f`).
    const ALL: [Field; 21] = [
        Field::SchemaName,
        Field::Pattern,
        Field::Condition,
        Field::OrderBy,
        Field::Path,
        Field::EntryName,
        Field::Token,
        Field::Plain,
        Field::PageSize,
        Field::AttrName,
        Field::AttrType,
        Field::AttrValue,
        Field::EntryItemName,
        Field::EntryAttrName,
        Field::EntryAttrType,
        Field::EntryAttrValue,
        Field::Select,
        Field::AttributeNameAt,
        Field::EntryNameAt,
        Field::HeaderText,
        Field::IndexName,
    ];

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

/// Bits of [`Slot::meta`]: the field (5 bits), the fragile flag, then `j`.
const FIELD_MASK: u32 = 0x1F;
const FRAGILE: u32 = 0x20;
const J_SHIFT: u32 = 6;

/// One simple-typed value: the text between a start tag's `>` and the `<` of its end tag.
/// 16 bytes: `meta` packs the field, the fragile flag and `j`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    pub start: u32,
    pub end: u32,
    /// Item of the list the value belongs to (entry or attribute item; 0 for scalars).
    pub i: u32,
    meta: u32,
}

impl Slot {
    /// `None` when `j` does not fit in 26 bits.
    fn new(start: u32, end: u32, field: Field, i: u32, j: u32, fragile: bool) -> Option<Slot> {
        (j < 1 << (32 - J_SHIFT)).then_some(Slot {
            start,
            end,
            i,
            meta: (j << J_SHIFT) | if fragile { FRAGILE } else { 0 } | field as u32,
        })
    }

    #[inline]
    pub(crate) fn field(self) -> Field {
        Field::ALL[(self.meta & FIELD_MASK) as usize]
    }

    /// The old bytes hold a reference, CDATA, a comment or `\r`: the value is not the raw
    /// bytes, so the slot may only be reused byte-identically.
    #[inline]
    pub(crate) fn fragile(self) -> bool {
        self.meta & FRAGILE != 0
    }

    /// Attribute index inside an entry (`entries[i].attributes[j]`), else 0.
    #[inline]
    pub(crate) fn j(self) -> u32 {
        self.meta >> J_SHIFT
    }

    /// Same field, `j` and fragility (loop-unit shapes).
    fn same_kind(self, other: Slot) -> bool {
        self.meta == other.meta
    }
}

/// A byte range of the template with the slots inside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seg {
    pub start: u32,
    pub end: u32,
    pub slot_lo: u32,
    pub slot_hi: u32,
}

/// A unit of a loop: one repeated item plus the bytes up to the next sibling. It starts where
/// the previous unit ends (the first one at [`LoopDef::start`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    end: u32,
    slot_hi: u32,
    elements: u32,
}

/// Repeated items (Deltarser's loop): the old units in order, and the distinct shapes
/// (indices into `units`, most frequent first).
#[derive(Debug)]
pub(crate) struct LoopDef {
    pub list: ListField,
    /// Where the first unit starts, in bytes and slots.
    start: u32,
    slot_lo: u32,
    units: Box<[Unit]>,
    pub shapes: Box<[u32]>,
}

impl LoopDef {
    /// Number of old units (= items of the list).
    pub(crate) fn len(&self) -> usize {
        self.units.len()
    }

    /// Old unit `k`: its byte range and slots, and its element count.
    pub(crate) fn unit(&self, k: usize) -> (Seg, u32) {
        let (start, slot_lo) = match k {
            0 => (self.start, self.slot_lo),
            _ => (self.units[k - 1].end, self.units[k - 1].slot_hi),
        };
        let u = self.units[k];
        (Seg { start, end: u.end, slot_lo, slot_hi: u.slot_hi }, u.elements)
    }

    /// Where the loop begins and ends, in bytes and slots.
    pub(crate) fn span(&self) -> Seg {
        let last = self.units.last().map_or((self.start, self.slot_lo), |u| (u.end, u.slot_hi));
        Seg { start: self.start, end: last.0, slot_lo: self.slot_lo, slot_hi: last.1 }
    }
}

/// `prefix, loop, middle, loop, suffix`: how a message with other item counts decomposes.
/// The static segments are what lies between the loops.
#[derive(Debug)]
pub(crate) struct Program {
    pub loops: Box<[LoopDef]>,
    /// Elements outside all loop units.
    pub base_elements: u32,
}

impl Program {
    /// The static segment before loop `k` (`k == loops.len()`: the suffix), given the
    /// template's size in bytes and slots.
    pub(crate) fn gap(&self, k: usize, bytes: u32, slots: u32) -> Seg {
        let (start, slot_lo) = match k {
            0 => (0, 0),
            _ => {
                let s = self.loops[k - 1].span();
                (s.end, s.slot_hi)
            }
        };
        let (end, slot_hi) = match self.loops.get(k) {
            Some(l) => (l.start, l.slot_lo),
            None => (bytes, slots),
        };
        Seg { start, end, slot_lo, slot_hi }
    }

    fn heap(&self) -> usize {
        self.loops.len() * size_of::<LoopDef>()
            + self.loops.iter().map(|l| l.units.len() * size_of::<Unit>() + l.shapes.len() * 4).sum::<usize>()
    }
}

/// What the template's message used of [`Limits`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub depth: u32,
    pub elements: u32,
    pub attributes: u32,
}

/// Most distinct item shapes a loop keeps; beyond that the template has no loop program.
const MAX_SHAPES: usize = 8;

/// [`Layout::attr_flags`]: the item has a `type` / a `value` (possibly empty; nil is absent).
const TYPE_SOME: u8 = 1;
const VALUE_SOME: u8 = 2;

/// The parsed request without its values: every string empty (so without heap), lists empty,
/// flags and integers as parsed; plus, per list, its length and one flag byte per attribute
/// item. [`Layout::instantiate`] turns it back into a request of the same shape (or of the
/// loop path's shape) with empty values, which the slots then fill.
#[derive(Debug)]
pub(crate) struct Layout {
    shell: Request,
    /// [`TYPE_SOME`]/[`VALUE_SOME`] per attribute item, in document order (for createEntry:
    /// every entry's attributes, entry after entry).
    attr_flags: Box<[u8]>,
    /// createEntry: entry `k`'s attributes are `attr_flags[entry_starts[k]..entry_starts[k + 1]]`.
    entry_starts: Box<[u32]>,
    n_select: u32,
    n_entry_names: u32,
    n_attribute_names: u32,
}

/// Old item indices of one list: all of them in order, or the loop path's picks.
pub(crate) type Picks = [(ListField, Vec<u32>)];

fn flags_of(a: &Attribute) -> u8 {
    (if a.attr_type.is_some() { TYPE_SOME } else { 0 }) | if a.value.is_some() { VALUE_SOME } else { 0 }
}

fn hollow_attribute(f: u8) -> Attribute {
    Attribute {
        name: String::new(),
        attr_type: (f & TYPE_SOME != 0).then(String::new),
        value: (f & VALUE_SOME != 0).then(String::new),
    }
}

impl Layout {
    fn of(req: &Request) -> Option<Layout> {
        let mut attr_flags: Vec<u8> = Vec::new();
        let mut entry_starts: Vec<u32> = Vec::new();
        let (mut n_select, mut n_entry_names, mut n_attribute_names) = (0, 0, 0);
        let len = |n: usize| u32::try_from(n).ok();
        let e = String::new;
        let oe = |o: &Option<String>| o.as_ref().map(|_| String::new());
        let shell = match req {
            Request::Ping => Request::Ping,
            Request::GetVersion => Request::GetVersion,
            Request::CreateSchema { attributes, plain, .. } => {
                attr_flags.extend(attributes.iter().map(flags_of));
                Request::CreateSchema { schema_name: e(), attributes: Vec::new(), plain: *plain }
            }
            Request::DropSchema { .. } => Request::DropSchema { schema_name: e() },
            Request::AddSchemaAttributes { attributes, .. } => {
                attr_flags.extend(attributes.iter().map(flags_of));
                Request::AddSchemaAttributes { schema_name: e(), attributes: Vec::new() }
            }
            Request::RemoveSchemaAttributes { attribute_names, .. } => {
                n_attribute_names = len(attribute_names.len())?;
                Request::RemoveSchemaAttributes { schema_name: e(), attribute_names: Vec::new() }
            }
            Request::ListSchemas { path } => Request::ListSchemas { path: oe(path) },
            Request::DescribeSchema { .. } => Request::DescribeSchema { schema_name: e() },
            Request::CreateEntry { entries, .. } => {
                entry_starts.reserve_exact(entries.len() + 1);
                for en in entries {
                    entry_starts.push(len(attr_flags.len())?);
                    attr_flags.extend(en.attributes.iter().map(flags_of));
                }
                entry_starts.push(len(attr_flags.len())?);
                Request::CreateEntry { schema_name: e(), entries: Vec::new() }
            }
            Request::RemoveEntry { condition, .. } => Request::RemoveEntry { pattern: e(), condition: oe(condition) },
            Request::SetAttributes { condition, attributes, .. } => {
                attr_flags.extend(attributes.iter().map(flags_of));
                Request::SetAttributes { pattern: e(), condition: oe(condition), attributes: Vec::new() }
            }
            Request::GetAttributes { entry_names, attribute_names } => {
                n_entry_names = len(entry_names.len())?;
                n_attribute_names = len(attribute_names.len())?;
                Request::GetAttributes { entry_names: Vec::new(), attribute_names: Vec::new() }
            }
            Request::ClearAttributes { attribute_names, .. } => {
                n_attribute_names = len(attribute_names.len())?;
                Request::ClearAttributes { pattern: e(), attribute_names: Vec::new() }
            }
            Request::ListAttributes { .. } => Request::ListAttributes { entry_name: e() },
            Request::Query { select, condition, order_by, page_size } => {
                n_select = len(select.len())?;
                Request::Query {
                    select: Vec::new(),
                    condition: oe(condition),
                    order_by: oe(order_by),
                    page_size: *page_size,
                }
            }
            Request::NextQuery { page_size, .. } => Request::NextQuery { token: e(), page_size: *page_size },
            Request::EndQuery { .. } => Request::EndQuery { token: e() },
            Request::IndexCreate { attribute_names, .. } => {
                n_attribute_names = len(attribute_names.len())?;
                Request::IndexCreate { schema_name: e(), index_name: e(), attribute_names: Vec::new() }
            }
            Request::IndexRemove { .. } => Request::IndexRemove { schema_name: e(), index_name: e() },
            Request::IndexList { .. } => Request::IndexList { schema_name: e() },
        };
        Some(Layout {
            shell,
            attr_flags: attr_flags.into_boxed_slice(),
            entry_starts: entry_starts.into_boxed_slice(),
            n_select,
            n_entry_names,
            n_attribute_names,
        })
    }

    /// The request with every value empty: for each list, the old items named by `picks`
    /// (a list without picks keeps all its items, in order). `None` if a pick names no item.
    pub(crate) fn instantiate(&self, picks: &Picks) -> Option<Request> {
        /// The picked item indices of `list` (of `n` items), all checked `< n`.
        fn items(picks: &Picks, list: ListField, n: usize) -> Option<Items<'_>> {
            match picks.iter().find(|(l, _)| *l == list) {
                Some((_, p)) => p.iter().all(|&k| (k as usize) < n).then(|| Items::Picked(p.iter())),
                None => Some(Items::All(0..n as u32)),
            }
        }
        let attrs = |flags: &[u8]| -> Option<Vec<Attribute>> {
            Some(
                items(picks, ListField::Attributes, flags.len())?
                    .map(|k| hollow_attribute(flags[k as usize]))
                    .collect(),
            )
        };
        let strings = |list, n: u32| -> Option<Vec<String>> {
            Some(items(picks, list, n as usize)?.map(|_| String::new()).collect())
        };
        let mut req = self.shell.clone();
        match &mut req {
            Request::CreateSchema { attributes, .. }
            | Request::AddSchemaAttributes { attributes, .. }
            | Request::SetAttributes { attributes, .. } => *attributes = attrs(&self.attr_flags)?,
            Request::CreateEntry { entries, .. } => {
                let starts = &self.entry_starts;
                let n = starts.len().saturating_sub(1);
                *entries = items(picks, ListField::Entries, n)?
                    .map(|k| {
                        let k = k as usize;
                        let flags = &self.attr_flags[starts[k] as usize..starts[k + 1] as usize];
                        Entry { name: String::new(), attributes: flags.iter().map(|&f| hollow_attribute(f)).collect() }
                    })
                    .collect();
            }
            Request::RemoveSchemaAttributes { attribute_names, .. }
            | Request::ClearAttributes { attribute_names, .. }
            | Request::IndexCreate { attribute_names, .. } => {
                *attribute_names = strings(ListField::AttributeNames, self.n_attribute_names)?
            }
            Request::GetAttributes { entry_names, attribute_names } => {
                *entry_names = strings(ListField::EntryNames, self.n_entry_names)?;
                *attribute_names = strings(ListField::AttributeNames, self.n_attribute_names)?;
            }
            Request::Query { select, .. } => *select = strings(ListField::Select, self.n_select)?,
            _ => {}
        }
        Some(req)
    }

    fn heap(&self) -> usize {
        request_heap(&self.shell) + self.attr_flags.len() + self.entry_starts.len() * 4
    }
}

/// Item indices of one list (an exact-size iterator, so lists are allocated exactly).
enum Items<'a> {
    All(std::ops::Range<u32>),
    Picked(std::slice::Iter<'a, u32>),
}

impl Iterator for Items<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            Items::All(r) => r.next(),
            Items::Picked(p) => p.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Items::All(r) => r.size_hint(),
            Items::Picked(p) => p.size_hint(),
        }
    }
}

impl ExactSizeIterator for Items<'_> {}

/// What only some messages need: ignored header blocks, and the decoded values of fragile
/// slots (references, CDATA, comments, `\r`), whose text is not their value.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    pub headers: Vec<HeaderBlock>,
    /// `(slot, start, end)`: the decoded value of a fragile string slot is
    /// `fixed_text[start..end]`; sorted by slot.
    fixed: Box<[(u32, u32, u32)]>,
    fixed_text: Box<str>,
}

impl Extra {
    fn heap(&self) -> usize {
        self.headers.capacity() * size_of::<HeaderBlock>()
            + self
                .headers
                .iter()
                .map(|h| h.local_name.capacity() + h.namespace.as_ref().map_or(0, String::capacity))
                .sum::<usize>()
            + self.fixed.len() * size_of::<(u32, u32, u32)>()
            + self.fixed_text.len()
    }
}

/// Heap bytes of a request (capacities, not lengths).
fn request_heap(r: &Request) -> usize {
    fn s(x: &String) -> usize {
        x.capacity()
    }
    fn os(x: &Option<String>) -> usize {
        x.as_ref().map_or(0, String::capacity)
    }
    fn attrs(a: &Vec<Attribute>) -> usize {
        a.capacity() * size_of::<Attribute>()
            + a.iter().map(|a| s(&a.name) + os(&a.attr_type) + os(&a.value)).sum::<usize>()
    }
    fn strs(v: &Vec<String>) -> usize {
        v.capacity() * size_of::<String>() + v.iter().map(s).sum::<usize>()
    }
    match r {
        Request::Ping | Request::GetVersion => 0,
        Request::CreateSchema { schema_name, attributes, .. }
        | Request::AddSchemaAttributes { schema_name, attributes } => s(schema_name) + attrs(attributes),
        Request::DropSchema { schema_name } | Request::DescribeSchema { schema_name } => s(schema_name),
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => s(schema_name) + strs(attribute_names),
        Request::ListSchemas { path } => os(path),
        Request::CreateEntry { schema_name, entries } => {
            s(schema_name)
                + entries.capacity() * size_of::<Entry>()
                + entries.iter().map(|e| s(&e.name) + attrs(&e.attributes)).sum::<usize>()
        }
        Request::RemoveEntry { pattern, condition } => s(pattern) + os(condition),
        Request::SetAttributes { pattern, condition, attributes } => s(pattern) + os(condition) + attrs(attributes),
        Request::GetAttributes { entry_names, attribute_names } => strs(entry_names) + strs(attribute_names),
        Request::ClearAttributes { pattern, attribute_names } => s(pattern) + strs(attribute_names),
        Request::ListAttributes { entry_name } => s(entry_name),
        Request::Query { select, condition, order_by, .. } => strs(select) + os(condition) + os(order_by),
        Request::NextQuery { token, .. } | Request::EndQuery { token } => s(token),
        Request::IndexCreate { schema_name, index_name, attribute_names } => {
            s(schema_name) + s(index_name) + strs(attribute_names)
        }
        Request::IndexRemove { schema_name, index_name } => s(schema_name) + s(index_name),
        Request::IndexList { schema_name } => s(schema_name),
    }
}

/// The reference counts of the `Arc` the cache keeps a template in.
const ARC_HEADER: usize = 2 * size_of::<usize>();

/// A cached byte template of one accepted message.
#[derive(Debug)]
pub struct Template {
    pub(crate) version: SoapVersion,
    pub(crate) op: Operation,
    /// The message (UTF-8, BOM included): static runs and the old slot values.
    pub(crate) text: Box<str>,
    pub(crate) slots: Box<[Slot]>,
    pub(crate) layout: Layout,
    pub(crate) extra: Option<Box<Extra>>,
    /// End of the operation wrapper's start tag: the bytes before it select the template.
    pub(crate) select_len: u32,
    pub(crate) usage: Usage,
    pub(crate) program: Option<Box<Program>>,
    pub(crate) mem: usize,
}

impl Template {
    /// Records a template for `body`, which `parse_request(body, version, _)` turned into
    /// `parsed`. Returns `None` when the message is not templatable (UTF-16, over 4 GiB) or
    /// when the recording pass does not line up with `parsed` (never expected; it is the
    /// safety net that keeps a recording bug from turning into a wrong fast result): the
    /// template must rebuild exactly `parsed` from the message it was recorded from.
    pub fn record(body: &[u8], version: SoapVersion, parsed: &ParsedRequest) -> Option<Template> {
        if body.len() >= u32::MAX as usize || body.starts_with(b"\xFF\xFE") || body.starts_with(b"\xFE\xFF") {
            return None;
        }
        let bom = if body.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
        let text = std::str::from_utf8(body).ok()?;
        let layout = Layout::of(&parsed.request)?;
        let mut rec = Recorder::new(layout.instantiate(&[])?, bom);
        rec.run(&text[bom..])?;
        let Recorder { slots, usage, children, wrapper_open, wrapper_close, select_len, .. } = rec;
        let select_len = u32::try_from(select_len?).ok()?;
        let program = match (wrapper_open, wrapper_close) {
            (Some(open), Some(_)) => build_program(body, &slots, &children, open, usage.elements),
            _ => None,
        };
        let extra = extra_of(parsed, &slots)?;
        let mut t = Template {
            version,
            op: parsed.request.operation(),
            text: text.into(),
            slots: slots.into_boxed_slice(),
            layout,
            extra,
            select_len,
            usage,
            program: program.map(Box::new),
            mem: 0,
        };
        if t.build(None, &[]).ok()? != parsed.request {
            return None;
        }
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

    /// Bytes held by the template: the `Arc` it is cached in, the struct itself and every
    /// heap block it owns, by capacity (what [`super::DdsConfig::max_bytes`] is checked
    /// against).
    pub fn memory_bytes(&self) -> usize {
        self.mem
    }

    /// Whether `body` starts like the message this template was recorded from, up to the end
    /// of the operation wrapper's start tag (template selection, not acceptance).
    pub(crate) fn selects(&self, body: &[u8]) -> bool {
        let n = self.select_len as usize;
        body.len() >= n && body[..n] == self.text.as_bytes()[..n]
    }

    /// Whether both templates are selected by the same bytes.
    pub(crate) fn same_selector(&self, other: &Template) -> bool {
        self.text.as_bytes()[..self.select_len as usize] == other.text.as_bytes()[..other.select_len as usize]
    }

    /// The decoded value of fragile slot `si` (recorded from the full parse).
    pub(crate) fn fixed_value(&self, si: usize) -> Option<&str> {
        let e = self.extra.as_deref()?;
        let k = e.fixed.binary_search_by_key(&(si as u32), |f| f.0).ok()?;
        let (_, a, b) = e.fixed[k];
        e.fixed_text.get(a as usize..b as usize)
    }

    /// The ignored header blocks of the recorded message.
    pub(crate) fn headers(&self) -> Vec<HeaderBlock> {
        self.extra.as_deref().map_or_else(Vec::new, |e| e.headers.clone())
    }

    fn memory(&self) -> usize {
        ARC_HEADER
            + size_of::<Template>()
            + self.text.len()
            + self.slots.len() * size_of::<Slot>()
            + self.layout.heap()
            + self.extra.as_deref().map_or(0, |e| size_of::<Extra>() + e.heap())
            + self.program.as_deref().map_or(0, |p| size_of::<Program>() + p.heap())
    }

    /// Checks `limits` against what any message matching this template uses (the loop path
    /// checks the element count itself).
    pub(crate) fn within(&self, body_len: usize, limits: &Limits) -> bool {
        body_len <= limits.max_body_bytes
            && self.usage.depth as usize <= limits.max_depth
            && self.usage.attributes as usize <= limits.max_attributes
    }
}

/// Header blocks and the decoded values of fragile string slots, if the message has any;
/// `None` if a fragile slot has no value.
fn extra_of(parsed: &ParsedRequest, slots: &[Slot]) -> Option<Option<Box<Extra>>> {
    let fragile = |s: &&Slot| s.fragile() && s.field().kind() == Kind::Str;
    if parsed.headers.is_empty() && !slots.iter().any(|s| fragile(&s)) {
        return Some(None);
    }
    let mut fixed = Vec::new();
    let mut fixed_text = String::new();
    if slots.iter().any(|s| fragile(&s)) {
        // A scratch copy to read the decoded values from (`dest_mut` wants `&mut`).
        let mut scratch = parsed.request.clone();
        for (si, s) in slots.iter().enumerate().filter(|(_, s)| fragile(s)) {
            let v: &str = match dest_mut(&mut scratch, s.field(), s.i, s.j())? {
                DestMut::Str(v) | DestMut::OptStr(Some(v)) => v,
                _ => return None,
            };
            let a = u32::try_from(fixed_text.len()).ok()?;
            fixed_text.push_str(v);
            fixed.push((u32::try_from(si).ok()?, a, u32::try_from(fixed_text.len()).ok()?));
        }
    }
    let mut headers = parsed.headers.clone();
    headers.shrink_to_fit();
    Some(Some(Box::new(Extra { headers, fixed: fixed.into_boxed_slice(), fixed_text: fixed_text.into() })))
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
            | Request::CreateEntry { schema_name, .. }
            | Request::IndexCreate { schema_name, .. }
            | Request::IndexRemove { schema_name, .. }
            | Request::IndexList { schema_name },
        ) => DestMut::Str(schema_name),
        (Field::IndexName, Request::IndexCreate { index_name, .. } | Request::IndexRemove { index_name, .. }) => {
            DestMut::Str(index_name)
        }
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
            | Request::ClearAttributes { attribute_names, .. }
            | Request::IndexCreate { attribute_names, .. },
        ) => DestMut::Str(attribute_names.get_mut(i)?),
        (Field::EntryNameAt, Request::GetAttributes { entry_names, .. }) => DestMut::Str(entry_names.get_mut(i)?),
        _ => return None,
    })
}

/// Is there a value at the slot's destination in the recorder's hollow request, and is it
/// present at all (absent/nil values get no slot)? `Some(true)`: slot; `Some(false)`: no slot
/// (nil); `None`: mismatch (recording bug, so no template). Flags and integers are compared
/// here; strings are compared when the finished template rebuilds the request.
fn check_dest(req: &mut Request, slot: &Slot, raw: &str) -> Option<bool> {
    if slot.field() == Field::HeaderText {
        return Some(true);
    }
    let d = dest_mut(req, slot.field(), slot.i, slot.j())?;
    if slot.fragile() {
        // The value is a decoding of the raw bytes; only its presence can be checked.
        return Some(match d {
            DestMut::OptStr(o) => o.is_some(),
            DestMut::OptU32(o) => o.is_some(),
            DestMut::Str(_) | DestMut::Bool(_) => true,
        });
    }
    match d {
        DestMut::Str(_) | DestMut::OptStr(Some(_)) => Some(true),
        DestMut::OptStr(None) => Some(false),
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
    elements_before: u32,
    elements_after: u32,
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
                    self.usage.attributes = self.usage.attributes.max(u32::try_from(attrs).ok()?);
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
                        self.usage.depth = self.usage.depth.max(self.stack.len() as u32);
                    } else {
                        self.usage.depth = self.usage.depth.max(self.stack.len() as u32 + 1);
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
                    (_, "indexName") => (simple(Field::IndexName, 0), None),
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
        let slot = Slot::new(content, end, field, i, j, fragile)?;
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
/// what a pretty-printer writes for an empty list. `None` without repeated items, with too
/// many distinct item shapes, or with two separate runs of one list.
fn build_program(
    bytes: &[u8],
    slots: &[Slot],
    children: &[Child],
    wrapper_open: u32,
    total_elements: u32,
) -> Option<Program> {
    let mut loops: Vec<LoopDef> = Vec::new();
    let mut base_elements = total_elements;
    let mut k = 0usize;
    while k < children.len() {
        let Some(list) = children[k].list else {
            k += 1;
            continue;
        };
        if loops.iter().any(|l| l.list == list) {
            return None;
        }
        let mut end = k;
        while end < children.len() && children[end].list == Some(list) {
            end += 1;
        }
        let lead = if k == 0 {
            (wrapper_open, children[0].slots_before)
        } else {
            (children[k - 1].end, children[k - 1].slots_after)
        };
        let mut units = Vec::with_capacity(end - k);
        for c in &children[k..end] {
            let elements = c.elements_after - c.elements_before;
            base_elements -= elements;
            units.push(Unit { end: c.end, slot_hi: u32::try_from(c.slots_after).ok()?, elements });
        }
        let mut l = LoopDef {
            list,
            start: lead.0,
            slot_lo: u32::try_from(lead.1).ok()?,
            units: units.into_boxed_slice(),
            shapes: Box::default(),
        };
        l.shapes = shapes_of(bytes, slots, &l)?;
        loops.push(l);
        k = end;
    }
    if loops.is_empty() {
        return None;
    }
    Some(Program { loops: loops.into_boxed_slice(), base_elements })
}

/// Distinct unit shapes (static bytes and slot layout), most frequent first.
fn shapes_of(bytes: &[u8], slots: &[Slot], l: &LoopDef) -> Option<Box<[u32]>> {
    let mut shapes: Vec<(u32, usize)> = Vec::new(); // (unit index, count)
    'units: for n in 0..l.len() {
        let u = l.unit(n);
        for (rep, count) in shapes.iter_mut() {
            if same_shape(bytes, slots, l.unit(*rep as usize), u) {
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

fn same_shape(bytes: &[u8], slots: &[Slot], (a, ea): (Seg, u32), (b, eb): (Seg, u32)) -> bool {
    let (sa, sb) = (&slots[a.slot_lo as usize..a.slot_hi as usize], &slots[b.slot_lo as usize..b.slot_hi as usize]);
    if sa.len() != sb.len() || ea != eb {
        return false;
    }
    let (mut pa, mut pb) = (a.start as usize, b.start as usize);
    for (x, y) in sa.iter().zip(sb) {
        if !x.same_kind(*y) {
            return false;
        }
        if bytes[pa..x.start as usize] != bytes[pb..y.start as usize] {
            return false;
        }
        pa = x.end as usize;
        pb = y.end as usize;
    }
    bytes[pa..a.end as usize] == bytes[pb..b.end as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_packing_round_trips() {
        for (n, f) in Field::ALL.iter().enumerate() {
            assert_eq!(*f as usize, n);
            for (j, fragile) in [(0, false), (1, true), (12_345, false), ((1 << 26) - 1, true)] {
                let s = Slot::new(7, 9, *f, 3, j, fragile).unwrap();
                assert_eq!((s.field(), s.j(), s.fragile(), s.i, s.start, s.end), (*f, j, fragile, 3, 7, 9));
            }
        }
        assert!(Slot::new(0, 0, Field::AttrName, 0, 1 << 26, false).is_none());
        assert_eq!(size_of::<Slot>(), 16);
        assert_eq!(size_of::<Unit>(), 12);
    }
}
