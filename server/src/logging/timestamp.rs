//! Log timestamps: tracing-subscriber's `SystemTime` text (RFC 3339 in UTC to the microsecond,
//! `2026-12-03T12:05:57.506002Z`) with the date and time of day worked out once a second per
//! thread instead of for every line (that crate formats eight numbers through `write!` for each
//! one). Outside the years 1970–9999 it hands the line to `SystemTime` itself. It owns the
//! timestamp only; where it goes in a line is the formatter's business.

use std::cell::Cell;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// Seconds from 1970 to 10000-01-01T00:00:00Z: past it, four digits of year do not do.
const YEAR_10000: u64 = 253_402_300_800;

/// `SystemTime`'s timestamps, cheaper (see the module).
#[derive(Debug, Default, Clone, Copy)]
pub struct UtcMicros;

thread_local! {
    /// The last second this thread formatted and its `YYYY-MM-DDTHH:MM:SS.`.
    static SECOND: Cell<(u64, [u8; 20])> = const { Cell::new((u64::MAX, [0; 20])) };
}

impl FormatTime for UtcMicros {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) if since.as_secs() < YEAR_10000 => write_at(w, since.as_secs(), since.subsec_micros()),
            _ => tracing_subscriber::fmt::time::SystemTime.format_time(w),
        }
    }
}

/// Write `secs` seconds and `micros` microseconds after 1970 (before year 10000).
fn write_at(w: &mut Writer<'_>, secs: u64, micros: u32) -> fmt::Result {
    let (last, mut text) = SECOND.get();
    if last != secs {
        text = second_text(secs);
        SECOND.set((secs, text));
    }
    let mut fraction = *b"000000Z";
    let mut rest = micros;
    for digit in fraction[..6].iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // Both are ASCII digits and punctuation by construction.
    w.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)?;
    w.write_str(std::str::from_utf8(&fraction).map_err(|_| fmt::Error)?)
}

/// `YYYY-MM-DDTHH:MM:SS.` of the second `secs` after 1970.
fn second_text(secs: u64) -> [u8; 20] {
    let (year, month, day) = civil_date(secs / 86_400);
    let of_day = secs % 86_400;
    let mut text = *b"0000-00-00T00:00:00.";
    put_digits(&mut text[0..4], year);
    put_digits(&mut text[5..7], month);
    put_digits(&mut text[8..10], day);
    put_digits(&mut text[11..13], of_day / 3600);
    put_digits(&mut text[14..16], of_day % 3600 / 60);
    put_digits(&mut text[17..19], of_day % 60);
    text
}

/// Write `n` into `out` as zero-padded decimal digits.
fn put_digits(out: &mut [u8], mut n: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// The proleptic Gregorian (year, month, day) of day `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153; // March = 0
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, micros: u32) -> String {
        let mut s = String::new();
        write_at(&mut Writer::new(&mut s), secs, micros).unwrap();
        s
    }

    #[test]
    fn known_instants() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(at(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(at(4_107_542_400, 999_999), "2100-03-01T00:00:00.999999Z");
        assert_eq!(at(1_780_225_557, 506_002), "2026-05-31T11:05:57.506002Z");
        assert_eq!(at(YEAR_10000 - 1, 123_456), "9999-12-31T23:59:59.123456Z");
        // The cached second is per thread and replaced when the second changes.
        assert_eq!(at(86_399, 1), "1970-01-01T23:59:59.000001Z");
        assert_eq!(at(86_400, 2), "1970-01-02T00:00:00.000002Z");
        assert_eq!(at(86_399, 3), "1970-01-01T23:59:59.000003Z");
    }

    /// Every day from 1970 to 2500 against a calendar counted forward one day at a time.
    #[test]
    fn every_day_matches_a_counted_calendar() {
        let (mut year, mut month, mut day) = (1970, 1, 1);
        for days in 0..(530 * 366) {
            assert_eq!(civil_date(days), (year, month, day), "day {days}");
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
            let length = match month {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            day += 1;
            if day > length {
                (day, month) = (1, month + 1);
                if month > 12 {
                    (month, year) = (1, year + 1);
                }
            }
        }
    }

    /// The same text as tracing-subscriber's `SystemTime` now (retried when a second boundary
    /// falls between the two readings).
    #[test]
    fn matches_system_time_now() {
        for _ in 0..100 {
            let (mut theirs, mut ours, mut again) = (String::new(), String::new(), String::new());
            tracing_subscriber::fmt::time::SystemTime.format_time(&mut Writer::new(&mut theirs)).unwrap();
            UtcMicros.format_time(&mut Writer::new(&mut ours)).unwrap();
            tracing_subscriber::fmt::time::SystemTime.format_time(&mut Writer::new(&mut again)).unwrap();
            if theirs[..19] == again[..19] {
                assert_eq!(ours.len(), theirs.len(), "{ours} against {theirs}");
                assert_eq!(ours[..20], theirs[..20]);
                assert!(ours.ends_with('Z') && ours[20..26].bytes().all(|b| b.is_ascii_digit()), "{ours}");
                assert!((theirs.as_str()..=again.as_str()).contains(&ours.as_str()), "{theirs} {ours} {again}");
                return;
            }
        }
        panic!("the second changed between every pair of readings");
    }
}
