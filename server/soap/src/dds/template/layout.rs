//! The hollow request of a template (`Layout`: the request without its values, flags per item)
//! and the `Extra` block of header blocks and decoded fragile values. Must not read message bytes;
//! the slots fill in the values.

use super::*;

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
    pub(super) fn of(req: &Request) -> Option<Layout> {
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
            Request::SqlQuery { page_size, .. } => Request::SqlQuery { statement: e(), page_size: *page_size },
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

    pub(super) fn heap(&self) -> usize {
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
    pub(super) fixed: Box<[(u32, u32, u32)]>,
    pub(super) fixed_text: Box<str>,
}

impl Extra {
    pub(super) fn heap(&self) -> usize {
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
        Request::SqlQuery { statement, .. } => s(statement),
    }
}
