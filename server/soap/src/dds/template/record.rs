//! The recording pass: walks the bytes of a message the full parser accepted, alongside its
//! parsed request, and yields the slots and the loop program. Must not accept anything by itself:
//! any mismatch between the bytes and the request means no template.

use super::*;

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
pub(super) struct Child {
    list: Option<ListField>,
    end: u32,
    elements_before: u32,
    elements_after: u32,
    slots_before: usize,
    slots_after: usize,
}

pub(super) struct Recorder {
    req: Request,
    off: u32,
    pub(super) slots: Vec<Slot>,
    stack: Vec<Frame>,
    pub(super) usage: Usage,
    pub(super) children: Vec<Child>,
    /// Where the wrapper's content starts and where its end tag starts (`None` for `<op/>`).
    pub(super) wrapper_open: Option<u32>,
    pub(super) wrapper_close: Option<u32>,
    pub(super) select_len: Option<usize>,
    // item counters of the wrapper
    n_attr: u32,
    n_entry: u32,
    n_select: u32,
    n_attr_name: u32,
    n_entry_name: u32,
    n_entry_attr: u32,
}

impl Recorder {
    pub(super) fn new(req: Request, off: usize) -> Self {
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

    pub(super) fn run(&mut self, text: &str) -> Option<()> {
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
                    (_, "statement") => (simple(Field::Statement, 0), None),
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
pub(super) fn build_program(
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
