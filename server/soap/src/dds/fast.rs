//! The DDS fast path: compares a new message against a [`Template`] and returns either
//! exactly the [`ParsedRequest`] the full parser would return, or a [`DeclineReason`].
//!
//! It owns the two-stage matcher (sparse common-prefix scan, dense per-slot walk, switched by
//! the observed change density), re-alignment at slot ends, the loop matcher for item counts
//! that differ, and assembling the result. It must never produce an error of its own and
//! never accept bytes outside the template's static runs or the slot language (see
//! [`super::scan::admit_slot`]).

use super::scan::{SlotRefusal, admit_slot, common_prefix, find_lt};
use super::template::{DestMut, Kind, ListField, Part, Seg, Slot, Template, dest_mut};
use super::{DeclineReason, FastHit};
use crate::model::{Attribute, Entry, ParsedRequest, Request};
use crate::parse::{Limits, parse_xsd_unsigned_int};
use crate::version::SoapVersion;
use crate::xml::parse_xsd_bool;

/// Unit index for slots outside loops.
const NO_UNIT: u32 = u32::MAX;

/// A converted value; strings borrow the new message (copied once, into the result).
enum NewValue<'m> {
    Str(&'m str),
    Bool(bool),
    U32(u32),
}

struct Change<'m> {
    slot: u32,
    unit: u32,
    value: NewValue<'m>,
}

/// Walk state shared by all segments of one message.
struct Walk<'a> {
    t: &'a [u8],
    slots: &'a [Slot],
    m: &'a [u8],
    changes: Vec<Change<'a>>,
    changed: usize,
    changed_bytes: usize,
}

impl From<SlotRefusal> for DeclineReason {
    fn from(r: SlotRefusal) -> Self {
        match r {
            SlotRefusal::Markup => DeclineReason::SlotMarkup,
            SlotRefusal::InvalidChar => DeclineReason::InvalidChars,
        }
    }
}

/// Switch to the dense walk once more than 1/4 of the slots seen changed (after 16), back to
/// the sparse scan when a 64-slot window had under 1/16 changes.
const DENSE_MIN_SLOTS: usize = 16;

impl<'a> Walk<'a> {
    /// A changed slot at `[ns, …)` of the new message (its end is the next `<`). Returns the
    /// new slot's end.
    #[inline]
    fn changed_slot(&mut self, si: usize, ns: usize, unit: u32) -> Result<usize, DeclineReason> {
        let s = self.slots[si];
        let m: &'a [u8] = self.m;
        let Some(rest) = m.get(ns..) else { return Err(DeclineReason::Truncated) };
        let Some(len) = find_lt(rest) else { return Err(DeclineReason::Truncated) };
        if s.fragile {
            return Err(DeclineReason::Fragile);
        }
        let text = admit_slot(&rest[..len])?;
        let value = match s.field.kind() {
            Kind::Str => NewValue::Str(text),
            Kind::Bool => NewValue::Bool(parse_xsd_bool(text).ok_or(DeclineReason::Conversion)?),
            Kind::U32 => NewValue::U32(parse_xsd_unsigned_int(text).ok_or(DeclineReason::Conversion)?),
            Kind::Ignore => {
                self.changed += 1;
                self.changed_bytes += len;
                return Ok(ns + len);
            }
        };
        self.changes.push(Change { slot: si as u32, unit, value });
        self.changed += 1;
        self.changed_bytes += len;
        Ok(ns + len)
    }

    /// Matches the template segment `seg` at `pos` of the new message. Returns the position
    /// after it.
    fn seg(&mut self, seg: Seg, pos: usize, unit: u32) -> Result<usize, DeclineReason> {
        let (t, slots, m) = (self.t, self.slots, self.m);
        let mut old = seg.start as usize;
        let mut new = pos;
        let mut si = seg.slot_lo as usize;
        let hi = seg.slot_hi as usize;
        let seg_end = seg.end as usize;
        let mut dense = false;
        let (mut seen, mut changed_here) = (0usize, 0usize);
        let (mut win_seen, mut win_changed) = (0usize, 0usize);
        while si < hi {
            if !dense {
                let want = seg_end - old;
                let lo = new.min(m.len());
                let avail = m.len() - lo;
                let l = common_prefix(&t[old..seg_end], &m[lo..lo + want.min(avail)]);
                if l == want {
                    return Ok(new + l);
                }
                let d = old + l;
                let first = si;
                while si < hi && (slots[si].end as usize) < d {
                    si += 1;
                }
                seen += si - first;
                if si == hi || slots[si].start as usize > d {
                    return Err(if l == avail { DeclineReason::Truncated } else { DeclineReason::Structure });
                }
                let s = slots[si];
                new += s.start as usize - old;
                new = self.changed_slot(si, new, unit)?;
                old = s.end as usize;
                si += 1;
                seen += 1;
                changed_here += 1;
                if seen >= DENSE_MIN_SLOTS && changed_here * 4 > seen {
                    dense = true;
                    (win_seen, win_changed) = (0, 0);
                }
            } else {
                let s = slots[si];
                let run = &t[old..s.start as usize];
                match m.get(new..new + run.len()) {
                    Some(r) if r == run => new += run.len(),
                    Some(_) => return Err(DeclineReason::Structure),
                    None => return Err(DeclineReason::Truncated),
                }
                let ov = &t[s.start as usize..s.end as usize];
                let after = new + ov.len();
                if m.get(new..after) == Some(ov) && m.get(after) == Some(&b'<') {
                    new = after;
                } else {
                    new = self.changed_slot(si, new, unit)?;
                    win_changed += 1;
                }
                old = s.end as usize;
                si += 1;
                win_seen += 1;
                if win_seen == 64 {
                    if win_changed * 16 < win_seen {
                        dense = false;
                        (seen, changed_here) = (0, 0);
                    }
                    (win_seen, win_changed) = (0, 0);
                }
            }
        }
        let run = &t[old..seg_end];
        match m.get(new..new + run.len()) {
            Some(r) if r == run => Ok(new + run.len()),
            Some(_) => Err(DeclineReason::Structure),
            None => {
                let avail = &m[new.min(m.len())..];
                if run.starts_with(avail) { Err(DeclineReason::Truncated) } else { Err(DeclineReason::Structure) }
            }
        }
    }
}

impl Template {
    /// The fast path: exactly what [`crate::parse_request`] returns for `body`, or a reason to
    /// decline. Never an error.
    pub fn fast_parse(
        &self,
        body: &[u8],
        version: SoapVersion,
        limits: &Limits,
    ) -> Result<(ParsedRequest, FastHit), DeclineReason> {
        if version != self.version {
            return Err(DeclineReason::Version);
        }
        if !self.within(body.len(), limits) {
            return Err(DeclineReason::Limits);
        }
        let mut w =
            Walk { t: &self.bytes, slots: &self.slots, m: body, changes: Vec::new(), changed: 0, changed_bytes: 0 };
        let whole = Seg { start: 0, end: self.bytes.len() as u32, slot_lo: 0, slot_hi: self.slots.len() as u32 };
        let flat = match w.seg(whole, 0, NO_UNIT) {
            Ok(end) if end == body.len() => Ok(()),
            Ok(_) => Err(DeclineReason::TrailingBytes),
            Err(e) => Err(e),
        };
        match flat {
            Ok(()) => {
                if self.usage.elements > limits.max_elements {
                    return Err(DeclineReason::Limits);
                }
                let mut req = self.parsed.request.clone();
                self.apply(&mut req, &w.changes)?;
                let hit = FastHit {
                    changed_slots: w.changed,
                    slots: self.slots.len(),
                    bytes_skipped: body.len() - w.changed_bytes,
                    loop_path: false,
                };
                Ok((ParsedRequest { request: req, headers: self.parsed.headers.clone() }, hit))
            }
            Err(e @ (DeclineReason::Structure | DeclineReason::Truncated | DeclineReason::TrailingBytes))
                if self.program.is_some() =>
            {
                self.loop_path(body, limits).map_err(|l| match l {
                    DeclineReason::Structure | DeclineReason::Truncated | DeclineReason::TrailingBytes => e,
                    other => other,
                })
            }
            Err(e) => Err(e),
        }
    }

    fn loop_path(&self, body: &[u8], limits: &Limits) -> Result<(ParsedRequest, FastHit), DeclineReason> {
        let Some(program) = &self.program else { return Err(DeclineReason::Structure) };
        let mut w =
            Walk { t: &self.bytes, slots: &self.slots, m: body, changes: Vec::new(), changed: 0, changed_bytes: 0 };
        let mut pos = 0usize;
        let mut elements = program.base_elements;
        let mut picks: Vec<(ListField, Vec<u32>)> = Vec::new();
        for part in &program.parts {
            match part {
                Part::Seg(seg) => pos = w.seg(*seg, pos, NO_UNIT)?,
                Part::Loop(l) => {
                    let mut pick = Vec::new();
                    loop {
                        let k = pick.len() as u32;
                        let mark = (w.changes.len(), w.changed, w.changed_bytes);
                        // The old unit at the same index first, then each shape.
                        let aligned = l.units.get(k as usize).map(|_| k);
                        let mut matched = None;
                        for cand in aligned.into_iter().chain(l.shapes.iter().copied()) {
                            let u = l.units[cand as usize];
                            match w.seg(u.seg, pos, k) {
                                Ok(p) => {
                                    matched = Some((cand, p, u.elements));
                                    break;
                                }
                                Err(_) => {
                                    w.changes.truncate(mark.0);
                                    (w.changed, w.changed_bytes) = (mark.1, mark.2);
                                }
                            }
                        }
                        let Some((cand, p, n)) = matched else { break };
                        pick.push(cand);
                        pos = p;
                        elements += n as usize;
                    }
                    picks.push((l.list, pick));
                }
            }
        }
        if pos != body.len() {
            return Err(DeclineReason::TrailingBytes);
        }
        if elements > limits.max_elements {
            return Err(DeclineReason::Limits);
        }
        let mut req = rebuild(&self.parsed.request, &picks).ok_or(DeclineReason::Internal)?;
        self.apply(&mut req, &w.changes)?;
        let hit = FastHit {
            changed_slots: w.changed,
            slots: self.slots.len(),
            bytes_skipped: body.len() - w.changed_bytes,
            loop_path: true,
        };
        Ok((ParsedRequest { request: req, headers: self.parsed.headers.clone() }, hit))
    }

    fn apply(&self, req: &mut Request, changes: &[Change<'_>]) -> Result<(), DeclineReason> {
        for c in changes {
            let s = self.slots[c.slot as usize];
            let i = if c.unit == NO_UNIT { s.i } else { c.unit };
            let d = dest_mut(req, s.field, i, s.j).ok_or(DeclineReason::Internal)?;
            match (d, &c.value) {
                // Reuse the cloned string's allocation.
                (DestMut::Str(d) | DestMut::OptStr(Some(d)), NewValue::Str(v)) => {
                    d.clear();
                    d.push_str(v);
                }
                (DestMut::OptStr(d), NewValue::Str(v)) => *d = Some((*v).to_owned()),
                (DestMut::Bool(d), NewValue::Bool(v)) => *d = *v,
                (DestMut::OptU32(d), NewValue::U32(v)) => *d = Some(*v),
                _ => return Err(DeclineReason::Internal),
            }
        }
        Ok(())
    }
}

fn pick<T: Clone>(old: &[T], list: ListField, picks: &[(ListField, Vec<u32>)]) -> Option<Vec<T>> {
    match picks.iter().find(|(l, _)| *l == list) {
        Some((_, p)) => p.iter().map(|&k| old.get(k as usize).cloned()).collect(),
        None => Some(old.to_vec()),
    }
}

/// The old request with its looped lists rebuilt from the picked exemplar items.
fn rebuild(old: &Request, picks: &[(ListField, Vec<u32>)]) -> Option<Request> {
    let attrs = |a: &[Attribute]| pick(a, ListField::Attributes, picks);
    let entries = |e: &[Entry]| pick(e, ListField::Entries, picks);
    Some(match old {
        Request::CreateSchema { schema_name, attributes, plain } => {
            Request::CreateSchema { schema_name: schema_name.clone(), attributes: attrs(attributes)?, plain: *plain }
        }
        Request::AddSchemaAttributes { schema_name, attributes } => {
            Request::AddSchemaAttributes { schema_name: schema_name.clone(), attributes: attrs(attributes)? }
        }
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => Request::RemoveSchemaAttributes {
            schema_name: schema_name.clone(),
            attribute_names: pick(attribute_names, ListField::AttributeNames, picks)?,
        },
        Request::CreateEntry { schema_name, entries: e } => {
            Request::CreateEntry { schema_name: schema_name.clone(), entries: entries(e)? }
        }
        Request::SetAttributes { pattern, condition, attributes } => Request::SetAttributes {
            pattern: pattern.clone(),
            condition: condition.clone(),
            attributes: attrs(attributes)?,
        },
        Request::GetAttributes { entry_names, attribute_names } => Request::GetAttributes {
            entry_names: pick(entry_names, ListField::EntryNames, picks)?,
            attribute_names: pick(attribute_names, ListField::AttributeNames, picks)?,
        },
        Request::ClearAttributes { pattern, attribute_names } => Request::ClearAttributes {
            pattern: pattern.clone(),
            attribute_names: pick(attribute_names, ListField::AttributeNames, picks)?,
        },
        Request::Query { select, condition, order_by, page_size } => Request::Query {
            select: pick(select, ListField::Select, picks)?,
            condition: condition.clone(),
            order_by: order_by.clone(),
            page_size: *page_size,
        },
        other => other.clone(),
    })
}
