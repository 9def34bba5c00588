//! The DDS fast path: compares a new message against a [`Template`] and returns either
//! exactly the [`ParsedRequest`] the full parser would return, or a [`DeclineReason`].
//!
//! It owns the two-stage matcher (sparse common-prefix scan, dense per-slot walk, switched by
//! the observed change density), re-alignment at slot ends, the loop matcher for item counts
//! that differ, and assembling the result: the template's hollow layout filled from the
//! slots, in message order (old text for unchanged slots, new text for changed ones). It must never produce an error of its own and
//! never accept bytes outside the template's static runs or the slot language (see
//! [`super::scan::admit_slot`]).

use super::scan::{SlotRefusal, admit_slot, common_prefix, find_lt};
use super::template::{DestMut, Kind, ListField, Picks, Seg, Slot, Template, dest_mut};
use super::{DeclineReason, FastHit};
use crate::model::{ParsedRequest, Request};
use crate::parse::{Limits, parse_xsd_unsigned_int};
use crate::version::SoapVersion;
use crate::xml::parse_xsd_bool;

/// Unit index for slots outside loops.
const NO_UNIT: u32 = u32::MAX;

/// A converted value; strings borrow the new message (copied once, into the result).
#[derive(Clone, Copy)]
enum NewValue<'m> {
    Str(&'m str),
    Bool(bool),
    U32(u32),
}

pub(crate) struct Change<'m> {
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
        if s.fragile() {
            return Err(DeclineReason::Fragile);
        }
        let text = admit_slot(&rest[..len])?;
        let value = match s.field().kind() {
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
        let t = self.text.as_bytes();
        let mut w = Walk { t, slots: &self.slots, m: body, changes: Vec::new(), changed: 0, changed_bytes: 0 };
        let whole = Seg { start: 0, end: t.len() as u32, slot_lo: 0, slot_hi: self.slots.len() as u32 };
        let flat = match w.seg(whole, 0, NO_UNIT) {
            Ok(end) if end == body.len() => Ok(()),
            Ok(_) => Err(DeclineReason::TrailingBytes),
            Err(e) => Err(e),
        };
        match flat {
            Ok(()) => {
                if self.usage.elements as usize > limits.max_elements {
                    return Err(DeclineReason::Limits);
                }
                let req = self.build(None, &w.changes)?;
                let hit = FastHit {
                    changed_slots: w.changed,
                    slots: self.slots.len(),
                    bytes_skipped: body.len() - w.changed_bytes,
                    loop_path: false,
                };
                Ok((ParsedRequest { request: req, headers: self.headers() }, hit))
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
        let t = self.text.as_bytes();
        let (n_bytes, n_slots) = (t.len() as u32, self.slots.len() as u32);
        let mut w = Walk { t, slots: &self.slots, m: body, changes: Vec::new(), changed: 0, changed_bytes: 0 };
        let mut pos = 0usize;
        let mut elements = program.base_elements as usize;
        let mut picks: Vec<(ListField, Vec<u32>)> = Vec::with_capacity(program.loops.len());
        for (li, l) in program.loops.iter().enumerate() {
            pos = w.seg(program.gap(li, n_bytes, n_slots), pos, NO_UNIT)?;
            let mut pick = Vec::new();
            loop {
                let k = pick.len() as u32;
                let mark = (w.changes.len(), w.changed, w.changed_bytes);
                // The old unit at the same index first, then each shape.
                let aligned = ((k as usize) < l.len()).then_some(k);
                let mut matched = None;
                for cand in aligned.into_iter().chain(l.shapes.iter().copied()) {
                    let (seg, n) = l.unit(cand as usize);
                    match w.seg(seg, pos, k) {
                        Ok(p) => {
                            matched = Some((cand, p, n));
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
        pos = w.seg(program.gap(program.loops.len(), n_bytes, n_slots), pos, NO_UNIT)?;
        if pos != body.len() {
            return Err(DeclineReason::TrailingBytes);
        }
        if elements > limits.max_elements {
            return Err(DeclineReason::Limits);
        }
        let req = self.build(Some(&picks), &w.changes)?;
        let hit = FastHit {
            changed_slots: w.changed,
            slots: self.slots.len(),
            bytes_skipped: body.len() - w.changed_bytes,
            loop_path: true,
        };
        Ok((ParsedRequest { request: req, headers: self.headers() }, hit))
    }

    /// The request of a matched message: the hollow layout (with the loop path's `picks`),
    /// every slot visited in message order and filled with the new value where the walk
    /// recorded a change, else with the old one (the template's text, or the decoded value
    /// of a fragile slot). Flags and integers that did not change stay as the layout holds
    /// them. With no picks and no changes this is the recorded request.
    pub(crate) fn build(&self, picks: Option<&Picks>, changes: &[Change<'_>]) -> Result<Request, DeclineReason> {
        let req = self.layout.instantiate(picks.unwrap_or(&[])).ok_or(DeclineReason::Internal)?;
        let mut b = Builder { t: self, req, changes, next: 0 };
        match (&self.program, picks) {
            (Some(program), Some(picks)) => {
                let (n_bytes, n_slots) = (self.text.len() as u32, self.slots.len() as u32);
                for (li, (l, (_, pick))) in program.loops.iter().zip(picks).enumerate() {
                    b.plain(program.gap(li, n_bytes, n_slots))?;
                    for (k, &cand) in pick.iter().enumerate() {
                        let (seg, _) = l.unit(cand as usize);
                        for si in seg.slot_lo..seg.slot_hi {
                            b.visit(si as usize, k as u32, k as u32)?;
                        }
                    }
                }
                b.plain(program.gap(program.loops.len(), n_bytes, n_slots))?;
            }
            (_, None) => {
                b.plain(Seg { start: 0, end: 0, slot_lo: 0, slot_hi: self.slots.len() as u32 })?;
            }
            (None, Some(_)) => return Err(DeclineReason::Internal),
        }
        if b.next != changes.len() {
            return Err(DeclineReason::Internal);
        }
        Ok(b.req)
    }
}

/// Fills a hollow request slot by slot.
struct Builder<'t, 'c> {
    t: &'t Template,
    req: Request,
    changes: &'c [Change<'c>],
    /// The next change not yet applied (changes come in message order).
    next: usize,
}

impl Builder<'_, '_> {
    /// The slots of a segment outside loop units (their own item indices).
    fn plain(&mut self, seg: Seg) -> Result<(), DeclineReason> {
        for si in seg.slot_lo..seg.slot_hi {
            let i = self.t.slots[si as usize].i;
            self.visit(si as usize, NO_UNIT, i)?;
        }
        Ok(())
    }

    /// Slot `si` as item `i` (in loop unit `unit` of the new message, or outside loops).
    #[inline]
    fn visit(&mut self, si: usize, unit: u32, i: u32) -> Result<(), DeclineReason> {
        let s = self.t.slots[si];
        let value = match self.changes.get(self.next) {
            Some(c) if c.slot as usize == si && c.unit == unit => {
                self.next += 1;
                c.value
            }
            _ => {
                if s.field().kind() != Kind::Str {
                    return Ok(());
                }
                let old = if s.fragile() {
                    self.t.fixed_value(si)
                } else {
                    self.t.text.get(s.start as usize..s.end as usize)
                };
                NewValue::Str(old.ok_or(DeclineReason::Internal)?)
            }
        };
        put(&mut self.req, s, i, value).ok_or(DeclineReason::Internal)
    }
}

/// Writes one value into its (empty) destination.
#[inline]
fn put(req: &mut Request, s: Slot, i: u32, v: NewValue<'_>) -> Option<()> {
    match (dest_mut(req, s.field(), i, s.j())?, v) {
        (DestMut::Str(d), NewValue::Str(v)) => *d = v.to_owned(),
        (DestMut::OptStr(d), NewValue::Str(v)) => *d = Some(v.to_owned()),
        (DestMut::Bool(d), NewValue::Bool(v)) => *d = v,
        (DestMut::OptU32(d), NewValue::U32(v)) => *d = Some(v),
        _ => return None,
    }
    Some(())
}
