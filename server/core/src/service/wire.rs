//! A result row on its way out: the store's values for a plan's columns turned into wire text
//! (the keys the store appends after the columns dropped, `PERMISSIONS` as `rwxr-x---`). Owns
//! the text of values, not how a frontend frames or escapes it.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::perm::Mode;
use crate::query::ast::Expr;
use crate::query::{Column, Term};
use crate::store::SelectPlan;
use crate::types::Value;

/// What a plan's rows need to become wire text: which columns hold permission bits.
pub(crate) struct WireRows {
    perms: Vec<bool>,
}

impl WireRows {
    pub(crate) fn of(plan: &SelectPlan) -> Self {
        let perms =
            plan.columns.iter().map(|c| matches!(c, Expr::Ref(Term::Column { column: Column::Perms, .. }))).collect();
        WireRows { perms }
    }

    pub(crate) fn row(&self, values: Vec<Value>) -> WireRow<'_> {
        WireRow { values: Cow::Owned(values), perms: &self.perms }
    }

    /// A row whose values stay with the caller (a stream hands its batches back to the store:
    /// [`crate::store::spent_rows`]).
    pub(crate) fn row_ref<'a>(&'a self, values: &'a [Value]) -> WireRow<'a> {
        WireRow { values: Cow::Borrowed(values), perms: &self.perms }
    }
}

/// The permission bits of a `PERMISSIONS` column, shown as `rwxr-x---`.
fn mode(bits: i64) -> Mode {
    Mode((bits as u16) & 0o777)
}

/// One row of a plan as the store returned it (the plan's columns, then its keys).
pub struct WireRow<'a> {
    values: Cow<'a, [Value]>,
    perms: &'a [bool],
}

/// One value's wire text, borrowed from the row or from a [`WireScratch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WireText<'a> {
    Null,
    /// Stored text: may hold any character.
    Text(&'a str),
    /// Text this module formatted (a number, boolean, timestamp or mode): ASCII digits,
    /// letters and punctuation only, never a control byte or a backslash.
    Formatted(&'a str),
}

impl<'a> WireText<'a> {
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            WireText::Null => None,
            WireText::Text(s) | WireText::Formatted(s) => Some(s),
        }
    }
}

/// Reusable buffers for [`WireRow::texts`]: a sink writing many rows keeps one, so formatting a
/// row allocates nothing once the buffers have grown.
#[derive(Debug, Default)]
pub struct WireScratch {
    text: String,
    ends: Vec<usize>,
}

impl WireRow<'_> {
    /// Owned wire text per column (`None`: NULL); stored text of an owned row is moved, not
    /// copied.
    pub fn into_texts(self) -> Vec<Option<String>> {
        let text = |v: &Value, is_perms: bool| match (v, is_perms) {
            (Value::Int(bits), true) => Some(mode(*bits).to_string()),
            (v, _) => v.to_wire(),
        };
        match self.values {
            Cow::Owned(values) => values
                .into_iter()
                .zip(self.perms)
                .map(|(v, &is_perms)| match v {
                    Value::Text(s) => Some(s),
                    v => text(&v, is_perms),
                })
                .collect(),
            Cow::Borrowed(values) => values.iter().zip(self.perms).map(|(v, &is_perms)| text(v, is_perms)).collect(),
        }
    }

    /// Wire text per column, borrowing stored text from the row and formatting everything
    /// else into `scratch` (the same text as [`into_texts`](Self::into_texts)).
    pub fn texts<'s>(&'s self, scratch: &'s mut WireScratch) -> impl Iterator<Item = WireText<'s>> + 's {
        scratch.text.clear();
        scratch.ends.clear();
        // Room for the row at once (a number is rarely longer than 24 bytes), not grown by doubling.
        scratch.text.reserve(self.values.len() * 24);
        scratch.ends.reserve(self.values.len());
        for (v, &is_perms) in self.values.iter().zip(self.perms) {
            match (v, is_perms) {
                (Value::Null | Value::Text(_), _) => continue,
                (Value::Int(bits), true) => {
                    let _ = write!(scratch.text, "{}", mode(*bits));
                }
                (v, _) => v.push_wire(&mut scratch.text),
            }
            scratch.ends.push(scratch.text.len());
        }
        let (text, mut ends) = (&scratch.text, scratch.ends.iter());
        let mut start = 0;
        self.values.iter().zip(self.perms).map(move |(v, _)| match v {
            Value::Null => WireText::Null,
            Value::Text(s) => WireText::Text(s),
            _ => {
                let end = *ends.next().expect("one end per formatted value");
                let s = &text[start..end];
                start = end;
                WireText::Formatted(s)
            }
        })
    }

    /// Gives `f` each column's wire text in order, the texts of [`texts`](Self::texts), and
    /// stops at its first error. A formatted text lives in `scratch` only until `f` returns, so
    /// a writer that copies each text on (the TCP reply) needs no list of the row's texts.
    pub fn for_each_text<E>(
        &self,
        scratch: &mut WireScratch,
        mut f: impl FnMut(WireText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        for (v, &is_perms) in self.values.iter().zip(self.perms) {
            match (v, is_perms) {
                (Value::Null, _) => f(WireText::Null)?,
                (Value::Text(s), _) => f(WireText::Text(s))?,
                (Value::Int(i), false) => f(WireText::Formatted(itoa::Buffer::new().format(*i)))?,
                (Value::Int(bits), true) => {
                    scratch.text.clear();
                    let _ = write!(scratch.text, "{}", mode(*bits));
                    f(WireText::Formatted(&scratch.text))?;
                }
                (v, _) => {
                    scratch.text.clear();
                    v.push_wire(&mut scratch.text);
                    f(WireText::Formatted(&scratch.text))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn borrowed_texts_are_the_owned_texts() {
        let perms = [false, false, true, false, false, false, false, false];
        let t = NaiveDate::from_ymd_opt(2026, 12, 2).unwrap().and_hms_micro_opt(13, 5, 9, 250).unwrap();
        let values = vec![
            Value::Text("e1".into()),
            Value::Null,
            Value::Int(0o754),
            Value::Int(-42),
            Value::Float(1e-5),
            Value::Bool(true),
            Value::Timestamp(t),
            Value::Text("a\nb".into()),
            // A key after the columns: dropped.
            Value::Int(7),
        ];
        let mut scratch = WireScratch::default();
        for _ in 0..2 {
            let row = WireRow { values: Cow::Owned(values.clone()), perms: &perms };
            let borrowed: Vec<Option<String>> =
                row.texts(&mut scratch).map(|t| t.as_str().map(str::to_owned)).collect();
            // A row borrowed from a batch gives the same owned texts as an owned row.
            let of_batch = WireRow { values: Cow::Borrowed(&values), perms: &perms }.into_texts();
            assert_eq!(borrowed, of_batch);
            let mut one_by_one = Vec::new();
            row.for_each_text(&mut scratch, |t| {
                one_by_one.push(t.as_str().map(str::to_owned));
                Ok::<(), ()>(())
            })
            .unwrap();
            assert_eq!(one_by_one, borrowed);
            assert_eq!(borrowed, row.into_texts());
        }
        let row = WireRow { values: Cow::Owned(values), perms: &perms };
        let kinds: Vec<WireText<'_>> = row.texts(&mut scratch).collect();
        assert_eq!(kinds[0], WireText::Text("e1"));
        assert_eq!(kinds[1], WireText::Null);
        assert_eq!(kinds[2], WireText::Formatted("rwxr-xr--"));
        assert_eq!(kinds[6], WireText::Formatted("2026-12-02 13:05:09.000250"));
        assert_eq!(kinds.len(), 8);
        // The kinds are the same one by one, and an error stops the walk where it happened.
        let mut seen = Vec::new();
        let stopped = row.for_each_text(&mut WireScratch::default(), |t| {
            seen.push(format!("{t:?}"));
            if seen.len() == 3 { Err(seen.len()) } else { Ok(()) }
        });
        assert_eq!(stopped, Err(3));
        assert_eq!(seen, kinds[..3].iter().map(|t| format!("{t:?}")).collect::<Vec<_>>());
    }
}
