//! Byte-level primitives of the DDS fast path: common-prefix length, `<` search, and the
//! admission test for changed slot bytes. Owns nothing else; must not interpret XML
//! structure (that is the template's job) and uses only safe code (`unsafe` is forbidden).

/// Length of the longest common prefix of `a` and `b`.
///
/// Galloping block compare: equal blocks are checked with slice equality (which lowers to
/// the platform's vectorised `bcmp`), doubling from 64 B to 4 KiB; the block that differs is
/// then located with 16-byte XOR words and `trailing_zeros`.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0usize;
    let mut block = 64usize;
    while i + block <= n {
        if a[i..i + block] == b[i..i + block] {
            i += block;
            if block < 4096 {
                block *= 2;
            }
        } else {
            break;
        }
    }
    while i + 16 <= n {
        let x = u128::from_le_bytes(word16(&a[i..i + 16]));
        let y = u128::from_le_bytes(word16(&b[i..i + 16]));
        let d = x ^ y;
        if d != 0 {
            return i + (d.trailing_zeros() / 8) as usize;
        }
        i += 16;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[inline(always)]
fn word16(s: &[u8]) -> [u8; 16] {
    let mut w = [0u8; 16];
    w.copy_from_slice(s);
    w
}

#[inline(always)]
fn word8(s: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(s);
    w
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;
const LT: u64 = 0x3c3c_3c3c_3c3c_3c3c; // b'<' in every byte

/// Index of the first `<` in `hay` (SWAR over 8-byte words).
#[inline]
pub(crate) fn find_lt(hay: &[u8]) -> Option<usize> {
    let mut i = 0usize;
    // Slot values are usually short: a few bytes by hand first.
    let head = hay.len().min(8);
    while i < head {
        if hay[i] == b'<' {
            return Some(i);
        }
        i += 1;
    }
    while i + 8 <= hay.len() {
        let v = u64::from_le_bytes(word8(&hay[i..i + 8])) ^ LT;
        // Exact for the lowest zero byte (higher flags may be false positives).
        let z = v.wrapping_sub(LO) & !v & HI;
        if z != 0 {
            return Some(i + (z.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay[i..].iter().position(|&b| b == b'<').map(|p| p + i)
}

/// Why changed slot bytes were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotRefusal {
    /// `&`, `>` or `\r`: could change decoding (references, `]]>`, line-end normalisation).
    Markup,
    /// Not UTF-8, or a character outside XML 1.0's `Char` production.
    InvalidChar,
}

/// Byte classes for [`admit_slot`]: 0 = plain, 1 = markup, 2 = forbidden control, 3 = 0xEF
/// (possible U+FFFE/U+FFFF), 4 = other non-ASCII (UTF-8 check needed).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = 2;
        i += 1;
    }
    t[b'\t' as usize] = 0;
    t[b'\n' as usize] = 0;
    t[b'\r' as usize] = 1;
    t[b'&' as usize] = 1;
    t[b'>' as usize] = 1;
    t[b'<' as usize] = 1;
    let mut i = 0x80;
    while i < 0x100 {
        t[i] = 4;
        i += 1;
    }
    t[0xEF] = 3;
    t
};

/// Admits the bytes of a changed text slot: text that tokenizes as one plain text node and
/// decodes to itself. Returns the text on success.
#[inline]
pub(crate) fn admit_slot(raw: &[u8]) -> Result<&str, SlotRefusal> {
    let mut i = 0usize;
    while i < raw.len() {
        match CLASS[raw[i] as usize] {
            0 => {}
            1 => return Err(SlotRefusal::Markup),
            2 => return Err(SlotRefusal::InvalidChar),
            3 if raw.get(i + 1) == Some(&0xBF) && matches!(raw.get(i + 2), Some(0xBE | 0xBF)) => {
                return Err(SlotRefusal::InvalidChar);
            }
            _ => {}
        }
        i += 1;
    }
    std::str::from_utf8(raw).map_err(|_| SlotRefusal::InvalidChar)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_prefix(a: &[u8], b: &[u8]) -> usize {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }

    #[test]
    fn common_prefix_matches_naive() {
        let base: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 200, 4096, 9000, 20_000] {
            let a = &base[..len];
            assert_eq!(common_prefix(a, a), len);
            for d in [0usize, 1, 7, 15, 16, 31, 64, 100, 4095, 4096, 8191, 12_345] {
                if d < len {
                    let mut b = a.to_vec();
                    b[d] ^= 0x55;
                    assert_eq!(common_prefix(a, &b), naive_prefix(a, &b), "len {len} d {d}");
                    assert_eq!(common_prefix(&b, a), d);
                }
            }
            assert_eq!(common_prefix(a, &base[..len / 2]), len / 2);
        }
    }

    #[test]
    fn find_lt_matches_naive() {
        for len in 0..40 {
            for at in 0..=len {
                let mut v = vec![b'a'; len];
                if at < len {
                    v[at] = b'<';
                    // A '=' (0x3d) just above: classic SWAR false-positive bait.
                    if at + 1 < len {
                        v[at + 1] = b'=';
                    }
                }
                assert_eq!(find_lt(&v), v.iter().position(|&b| b == b'<'));
            }
        }
        let mut v = vec![0x3du8; 33];
        v[20] = b'<';
        assert_eq!(find_lt(&v), Some(20));
    }

    #[test]
    fn admit_slot_rules() {
        assert_eq!(admit_slot(b"abc 12.5e3\t\n"), Ok("abc 12.5e3\t\n"));
        assert_eq!(admit_slot("é\u{10000}\u{FEFF}".as_bytes()), Ok("é\u{10000}\u{FEFF}"));
        for bad in [&b"a&b"[..], b"a>b", b"a\rb", b"]]>", b"<"] {
            assert_eq!(admit_slot(bad), Err(SlotRefusal::Markup));
        }
        for bad in [&b"\x00"[..], b"\x1f", b"\xff", b"\xc3", "\u{FFFE}".as_bytes(), "\u{FFFF}".as_bytes()] {
            assert_eq!(admit_slot(bad), Err(SlotRefusal::InvalidChar), "{bad:?}");
        }
        assert!(admit_slot("\u{FFFD}".as_bytes()).is_ok());
    }
}
