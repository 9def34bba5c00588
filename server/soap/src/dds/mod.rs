//! Differential deserialization (DDS) of SOAP requests: a byte-template cache in front of
//! [`crate::parse_request`], which stays the one authority.
//!
//! This module owns templates, the fast path and the template cache. It must never return a
//! result that differs from the full parser's for the same bytes, and never raise an error of
//! its own: the fast path either returns exactly the [`ParsedRequest`](crate::ParsedRequest) that
//! [`crate::parse_request`] would return, or declines, and then the full parser runs.
//!
//! # How it works
//!
//! * After the full parser accepts a message, a recording pass over the same bytes builds a
//!   [`Template`]: the message bytes, and one *slot* per simple-typed value (byte range, XSD
//!   kind, destination field in the [`crate::Request`]). Everything else (XML declaration,
//!   element names, namespace declarations, attributes, whitespace, comments between elements)
//!   is a *static run*. Text inside ignored header blocks becomes validate-only slots. The
//!   template keeps no copy of the values, only the request's hollow layout: a hit builds the
//!   owned request from the slots (see `template.rs`, "Memory").
//! * The fast path compares a new message with the template: a galloping common-prefix scan
//!   finds the next difference; unchanged slots before it are reused; a difference inside a
//!   static run declines; a difference inside a slot ends at the next `<`, is admitted only if
//!   it holds no `<`, `&`, `>`, `\r` or non-XML characters, and is converted with the full
//!   parser's own conversion functions; scanning re-aligns at the slot end, so values may
//!   change length. When changes get dense it switches to a per-slot walk.
//! * Repeated items (`attribute`, `entry`, `select`, `entryName`, `attributeName`) also get a
//!   loop program (Deltarser's loop automaton): prefix, one static-run sequence per item shape,
//!   suffix. A message with a different item count that fails the flat comparison is matched
//!   unit by unit against the old unit at the same index, then against each item shape.
//!
//! # Why a hit equals a full parse
//!
//! Every slot starts right after the `>` of a start tag and ends at the `<` of its end tag;
//! every loop unit starts right after a `>`. Static runs are byte-identical to a message the
//! full parser accepted, so they tokenize identically (a token never spans a piece boundary).
//! A changed slot holds no `<`, so it ends exactly where the template's next static run
//! begins; with no `&`, `>` or `\r` and only XML `Char`s it is one text token that decodes to
//! itself (no references, no `]]>`, no line-end normalization). So the new message's token
//! stream is the old one's with slot texts substituted, namespace bindings and attributes
//! unchanged, and the full parser's result is the old result with the substituted values,
//! converted by the same functions ([`crate::parse_request`]'s `xs:boolean` and
//! `xs:unsignedInt` parsers); a conversion failure declines. Old slots that held references,
//! CDATA, comments or `\r` are only reused byte-identically; nil elements are static. The
//! message must end exactly at the template's end, and [`crate::Limits`] are re-checked
//! against what the template used (element counts are summed over loop units).
//!
//! ```
//! use ardacat_soap::dds::{DdsCache, DdsConfig, DdsOutcome, TemplateKey};
//! use ardacat_soap::{Limits, Request, SoapVersion};
//!
//! let cache = DdsCache::new(DdsConfig::default());
//! let key = TemplateKey::new("client-1", "text/xml; charset=utf-8");
//! let msg = |name: &str| format!(
//!     "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap-env:Body><ns0:listAttributes xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:entryName>{name}</ns0:entryName></ns0:listAttributes></soap-env:Body></soap-env:Envelope>");
//! let limits = Limits::default();
//! let (_, first) = cache.parse(&key, msg("/grid/f1").as_bytes(), SoapVersion::V11, &limits).unwrap();
//! assert_eq!(first, DdsOutcome::Miss);
//! let (p, second) = cache.parse(&key, msg("/grid/longer-name").as_bytes(), SoapVersion::V11, &limits).unwrap();
//! assert!(matches!(second, DdsOutcome::Hit { changed_slots: 1, .. }));
//! assert_eq!(p.request, Request::ListAttributes { entry_name: "/grid/longer-name".into() });
//! ```

mod cache;
mod fast;
mod scan;
mod template;

pub use cache::{DdsCache, DdsConfig, DdsStats, ShadowPolicy, TemplateKey};
pub use template::Template;

use std::fmt;

/// Why the fast path declined (the full parser then decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeclineReason {
    /// The template was recorded for the other SOAP version.
    Version,
    /// The message would exceed (or come close to) the caller's [`crate::Limits`].
    Limits,
    /// A static run differs: elements added or removed, names, namespace declarations,
    /// attributes, whitespace or comments between elements changed.
    Structure,
    /// The message ends inside the template.
    Truncated,
    /// The message goes on after the template's end.
    TrailingBytes,
    /// A changed value contains `<`-markup, `&`, `>` or `\r`.
    SlotMarkup,
    /// A changed value is not UTF-8 or holds characters XML 1.0 forbids.
    InvalidChars,
    /// The old value held a reference, CDATA, a comment or `\r`, and it changed.
    Fragile,
    /// A changed `xs:boolean`/`xs:unsignedInt` value is not in its lexical space.
    Conversion,
    /// The template and the message did not line up internally (never expected).
    Internal,
}

impl DeclineReason {
    /// Every reason, in a stable order (the order of [`DdsStats::declines`]).
    pub const ALL: [DeclineReason; 10] = [
        DeclineReason::Version,
        DeclineReason::Limits,
        DeclineReason::Structure,
        DeclineReason::Truncated,
        DeclineReason::TrailingBytes,
        DeclineReason::SlotMarkup,
        DeclineReason::InvalidChars,
        DeclineReason::Fragile,
        DeclineReason::Conversion,
        DeclineReason::Internal,
    ];

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// A short stable name, for metrics labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeclineReason::Version => "version",
            DeclineReason::Limits => "limits",
            DeclineReason::Structure => "structure",
            DeclineReason::Truncated => "truncated",
            DeclineReason::TrailingBytes => "trailing_bytes",
            DeclineReason::SlotMarkup => "slot_markup",
            DeclineReason::InvalidChars => "invalid_chars",
            DeclineReason::Fragile => "fragile",
            DeclineReason::Conversion => "conversion",
            DeclineReason::Internal => "internal",
        }
    }
}

impl fmt::Display for DeclineReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Details of a fast-path hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastHit {
    /// Slots whose bytes differed from the template (and were converted).
    pub changed_slots: usize,
    /// Slots in the template.
    pub slots: usize,
    /// Bytes of the message that were only compared, never tokenized.
    pub bytes_skipped: usize,
    /// The item counts differed and the loop program matched.
    pub loop_path: bool,
}

/// What [`DdsCache::parse`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DdsOutcome {
    /// The fast path produced the result.
    Hit {
        changed_slots: usize,
        /// Item counts differed from the template (loop program).
        loop_path: bool,
    },
    /// The fast path declined; the full parser produced the result and the template was
    /// refreshed from this message (repeated declines start a back-off, see
    /// [`DdsConfig::backoff_after`]).
    Declined(DeclineReason),
    /// No template for this client, operation and Content-Type; the full parser ran and a
    /// template was recorded.
    Miss,
    /// The full parser ran without a template attempt (fast path disabled, backing off after
    /// repeated declines, or a message that cannot be templated, e.g. UTF-16).
    Bypassed,
}

impl DdsOutcome {
    /// Whether the fast path produced the result.
    pub fn is_hit(&self) -> bool {
        matches!(self, DdsOutcome::Hit { .. })
    }
}
