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

mod layout;
pub(crate) use layout::*;

mod record;
use record::*;

mod dest;
pub(crate) use dest::*;

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
    /// `statement` (sqlQuery).
    Statement,
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
    const ALL: [Field; 22] = [
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
        Field::Statement,
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
