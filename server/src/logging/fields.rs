//! The text format's field writer: the same bytes as tracing-subscriber's `DefaultFields`
//! (`name=value`, space-separated, `{:?}` values, the message unnamed) without its generic path
//! for the common fields. Every request formats fourteen fields (its span's and its line's), and
//! `DefaultFields` writes each through `write!` with three arguments and two ANSI style
//! wrappers, even with colours off; this writes a plain string, an integer or a flag directly.
//! What it has no shortcut for — the message, errors, `r#` names, any field while colours are on —
//! it hands to `DefaultFields`' own visitor, so the text stays that crate's. It owns no other
//! part of a line (time, level, spans, target: tracing-subscriber's `Format`).
//!
//! Without colours the fields are written into a buffer kept by the thread and handed on in one
//! piece: a span's fields go into a new `String` of the span's, which grew from nothing by
//! doubling, four or five reallocations for every request's span.

use std::cell::Cell;
use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};

/// `DefaultFields`' text, written directly where it can be (see the module).
#[derive(Debug, Default, Clone, Copy)]
pub struct PlainFields;

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        // A `Writer` over the buffer is one without colours that sanitizes escapes: the same
        // text only when the real one is such a writer too.
        if writer.has_ansi_escapes() || !writer.sanitizes_ansi_escapes() {
            return write_fields(writer, fields);
        }
        let mut buf = FIELDS_BUFFER.try_with(Cell::take).unwrap_or_default();
        buf.clear();
        let written = write_fields(Writer::new(&mut buf), fields);
        let result = written.and_then(|()| writer.write_str(&buf));
        if buf.capacity() <= KEEP_FIELDS_BUFFER {
            // Fails only while the thread is exiting; the buffer is then simply freed.
            let _ = FIELDS_BUFFER.try_with(|b| b.set(buf));
        }
        result
    }
}

thread_local! {
    /// The thread's buffer for the fields it is writing, kept between events and spans; fields
    /// written while others are (a value whose `Debug` logs) get a new one.
    static FIELDS_BUFFER: Cell<String> = const { Cell::new(String::new()) };
}

/// Fields longer than this do not keep their buffer for the thread's next ones.
const KEEP_FIELDS_BUFFER: usize = 4096;

fn write_fields<R: RecordFields>(writer: Writer<'_>, fields: R) -> fmt::Result {
    let mut visitor = PlainVisitor { writer, is_empty: true, result: Ok(()) };
    fields.record(&mut visitor);
    visitor.result
}

struct PlainVisitor<'w> {
    writer: Writer<'w>,
    /// Nothing written yet: no space before the next field (as `DefaultVisitor`).
    is_empty: bool,
    result: fmt::Result,
}

impl PlainVisitor<'_> {
    /// The field's name if this writer writes the field itself: an ordinary name with colours
    /// off. `None` hands the field to `DefaultVisitor`.
    fn plain_name(&self, field: &Field) -> Option<&'static str> {
        let name = field.name();
        let special = name == "message" || name.starts_with("r#") || name.starts_with("log.");
        (!special && !self.writer.has_ansi_escapes()).then_some(name)
    }

    /// Write ` name=` (the space unless first) and then the value by `value`.
    fn field(&mut self, name: &str, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) {
        if self.result.is_ok() {
            self.result = self.write_field(name, value);
        }
    }

    fn write_field(&mut self, name: &str, value: impl FnOnce(&mut Writer<'_>) -> fmt::Result) -> fmt::Result {
        if !std::mem::take(&mut self.is_empty) {
            self.writer.write_char(' ')?;
        }
        self.writer.write_str(name)?;
        self.writer.write_char('=')?;
        value(&mut self.writer)
    }

    /// Let `DefaultVisitor` record the field, continuing this line.
    fn delegate(&mut self, field: &Field, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        if self.result.is_err() {
            return;
        }
        let mut default = DefaultVisitor::new(self.writer.by_ref(), self.is_empty);
        record(&mut default);
        self.result = tracing_subscriber::field::VisitOutput::finish(default);
        // `DefaultVisitor` writes every field but tracing-log's `log.*` metadata, which it skips.
        if !field.name().starts_with("log.") {
            self.is_empty = false;
        }
    }

    fn integer(&mut self, field: &Field, value: impl itoa::Integer + Copy + fmt::Debug) {
        match self.plain_name(field) {
            Some(name) => self.field(name, |w| w.write_str(itoa::Buffer::new().format(value))),
            None => self.delegate(field, |d| d.record_debug(field, &value)),
        }
    }
}

impl Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        match self.plain_name(field) {
            Some(name) => self.field(name, |w| write_quoted(w, value)),
            None => self.delegate(field, |d| d.record_str(field, value)),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.integer(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.integer(field, value);
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match self.plain_name(field) {
            Some(name) => self.field(name, |w| write_f64(w, value)),
            None => self.delegate(field, |d| d.record_f64(field, value)),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        match self.plain_name(field) {
            Some(name) => self.field(name, |w| w.write_str(if value { "true" } else { "false" })),
            None => self.delegate(field, |d| d.record_bool(field, value)),
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.delegate(field, |d| d.record_error(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match self.plain_name(field) {
            Some(name) => self.field(name, |w| write!(w, "{value:?}")),
            None => self.delegate(field, |d| d.record_debug(field, value)),
        }
    }
}

/// Thousandths up to this many are written from their digits by [`write_f64`]: below it a
/// float's spacing is far finer than a thousandth (2^-13 at 10^12), see there.
const MAX_THOUSANDTHS: f64 = 1e15;

/// `{:?}` of a float. A whole number of thousandths (every request's `duration_ms`: microseconds
/// over 1000) is written from its integer digits, `core`'s shortest-digits algorithm took a
/// thousand instructions; anything else goes through `Debug`.
///
/// Why that is the same text: `value` is `m / 1000` correctly rounded (checked below, with `m`
/// exact in a float), so the decimal `m / 1000` reads back as `value`; a decimal with fewer
/// significant digits is at least a thousandth away from it, more than a float's spacing below
/// [`MAX_THOUSANDTHS`], so it reads back as another float; and `Debug` writes a float of at
/// least 1e-4 and below 1e16 without an exponent, ending in `.0` when it is whole.
pub(super) fn write_f64(w: &mut Writer<'_>, value: f64) -> fmt::Result {
    let thousandths = (value * 1e3).round();
    if !(value.is_sign_positive() && thousandths <= MAX_THOUSANDTHS && thousandths / 1e3 == value) {
        return write!(w, "{value:?}");
    }
    // Exact: a whole number of at most 10^15 (below 2^53).
    let m = thousandths as u64;
    w.write_str(itoa::Buffer::new().format(m / 1000))?;
    let fraction = m % 1000;
    if fraction == 0 {
        return w.write_str(".0");
    }
    let digits = [b'.', b'0' + (fraction / 100) as u8, b'0' + (fraction / 10 % 10) as u8, b'0' + (fraction % 10) as u8];
    let used = 4 - digits[1..].iter().rev().take_while(|&&d| d == b'0').count();
    w.write_str(std::str::from_utf8(&digits[..used]).expect("ASCII digits"))
}

/// `{:?}` of a string: quoted, escaped as Rust's `Debug` escapes. Printable ASCII other than `"`
/// and `\` is written as it is (what `Debug` does with it); anything else goes through `Debug`.
pub(super) fn write_quoted(w: &mut Writer<'_>, value: &str) -> fmt::Result {
    if value.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\') {
        w.write_char('"')?;
        w.write_str(value)?;
        w.write_char('"')
    } else {
        write!(w, "{value:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;
    use tracing_subscriber::fmt::format::DefaultFields;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buf {
        type Writer = Buf;
        fn make_writer(&'a self) -> Buf {
            self.clone()
        }
    }

    #[derive(Debug)]
    struct Failure {
        source: std::io::Error,
    }
    impl fmt::Display for Failure {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("cannot \"write\"")
        }
    }
    impl std::error::Error for Failure {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    /// Events and spans with every kind of field the server logs and some it does not.
    fn log_everything(text: &str) {
        let error = Failure { source: std::io::Error::other("disk full") };
        let span = tracing::info_span!("request", request_id = %"3fa2c1d0-17", frontend = "tcp", user = %text, peer = %"127.0.0.1:4000", command = text);
        let _in = span.enter();
        tracing::info!(
            target: "ardacat::request",
            request_id = %"3fa2c1d0-17", frontend = "tcp", user = %text, command = text,
            code = -7i64, rows = 18_446_744_073_709_551_615u64, duration_ms = 0.036f64, whole = 1.0f64,
            flag = true, other = false, debug = ?Some(text), "request"
        );
        tracing::warn!(r#type = "raw", "log.target" = "sqlx::query", "log.line" = 3u64, "with {text} inside");
        tracing::error!(error = &error as &(dyn std::error::Error + 'static), "failed");
        tracing::info!(message = text, after = 1u64);
        // tracing-log's metadata first: skipped, so the next field has no space before it.
        tracing::info!("log.target" = "sqlx::query", after = text);
        tracing::info!(only = text);
        let inner = tracing::debug_span!("catalogue", op = "getattr", n = 3u64);
        inner.record("n", 4u64);
        let _inner = inner.enter();
        tracing::debug!(first = "a", "second {}", 2);
    }

    fn format_with<N>(fields: N, ansi: bool, text: &str) -> String
    where
        N: for<'w> FormatFields<'w> + Send + Sync + 'static,
    {
        let buf = Buf::default();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .without_time()
            .with_ansi(ansi)
            .fmt_fields(fields)
            .with_writer(buf.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || log_everything(text));
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    /// Byte for byte what `DefaultFields` writes, for plain and awkward values, with colours off
    /// (the writer's own text) and on (all handed to `DefaultVisitor`).
    #[test]
    fn writes_what_default_fields_writes() {
        let texts = [
            "",
            "root",
            "CN=Alice Smith, O=Grid",
            "say \"hi\"",
            "back\\slash",
            "tab\there",
            "new\nline",
            "esc\x1b[31mred",
            "del\x7f",
            "é ü ß",
            "\u{301}combining first",
            "c1\u{85}control",
            "'single'",
            "~!@#$%^&*()_+{}|:<>?`-=[];,./",
        ];
        for text in texts {
            for ansi in [false, true] {
                let ours = format_with(PlainFields, ansi, text);
                let theirs = format_with(DefaultFields::new(), ansi, text);
                assert_eq!(ours, theirs, "text {text:?}, ansi {ansi}");
                assert!(
                    ansi || ours.contains("code=-7 rows=18446744073709551615 duration_ms=0.036 whole=1.0"),
                    "{ours}"
                );
            }
        }
    }

    fn debug_of(value: f64) -> String {
        let mut out = String::new();
        write_f64(&mut Writer::new(&mut out), value).unwrap();
        out
    }

    #[test]
    fn floats_are_written_as_debug_writes_them() {
        let edges = [
            0.0,
            -0.0,
            0.001,
            0.036,
            0.1,
            1.0,
            1.5,
            12.345,
            999.999,
            1e12,
            1e12 + 0.001,
            1e15,
            1e16,
            1e-4,
            1e-5,
            0.0005,
            0.1 + 0.2,
            1.0 / 3.0,
            -1.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        for value in edges {
            assert_eq!(debug_of(value), format!("{value:?}"), "{value:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn durations_are_written_as_debug_writes_them(micros in 0u64..=4_000_000_000_000_000) {
            // As `duration_ms` makes them, over the whole range the shortcut takes and past it.
            let value = micros as f64 / 1e3;
            proptest::prop_assert_eq!(debug_of(value), format!("{value:?}"));
        }

        #[test]
        fn any_float_is_written_as_debug_writes_it(bits in proptest::num::u64::ANY, small in 0u32..1_000_000) {
            for value in [f64::from_bits(bits), f64::from(small) / 1e3 + 1e-9, f64::from(small) / 100.0] {
                proptest::prop_assert_eq!(debug_of(value), format!("{value:?}"));
            }
        }

        #[test]
        fn any_text_is_written_as_default_fields_writes_it(text in "\\PC*|[ -~\"\\\\]*") {
            proptest::prop_assert_eq!(format_with(PlainFields, false, &text), format_with(DefaultFields::new(), false, &text));
        }
    }
}
