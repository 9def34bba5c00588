//! Mutation fuzzing of every parser that reads bytes from the network, driven by proptest (no
//! nightly toolchain needed): seeds from `tests/fuzz/corpus/<target>/` are mutated (bit flips,
//! inserted and deleted bytes, duplicated and spliced slices, grammar tokens) and fed to
//!
//! - `command`: the TCP line framer (`ServerCodec`), `tokenize`/`tokenize_escaped` and the
//!   server's `Command::parse`;
//! - `handshake`: the option block and login block parsers;
//! - `condition`: the query language (`parse_condition`, `parse_expr`);
//! - `soap`: `detect_version` and `parse_request`, with default and with tiny limits.
//!
//! Nothing may panic, and the round trips that should hold do hold (framing does not depend on
//! how bytes are split; quoting, option blocks and the query printer read back to the same
//! value). A short run is part of the normal suite; `ARDACAT_FUZZ_CASES=<n>` runs longer.
//! Every failure found becomes a test in the `regressions` section below.

use std::path::PathBuf;

use ardacat_core::query::{parse_condition, parse_expr};
use ardacat_proto::{
    ClientFrame, ClientOptions, LoginParser, OptionsParser, ServerCodec, join_args, join_escaped_args, tokenize,
    tokenize_escaped,
};
use ardacat_server::tcp::command::Command;
use ardacat_soap::{Limits, SoapVersion, detect_version, parse_request};
use bytes::BytesMut;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tokio_util::codec::Decoder;

// ------------------------------------------------------------------------------------------
// The mutation engine

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one byte with a non-zero mask.
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    /// Copy `len` bytes from `from` to `to`.
    Duplicate(usize, usize, usize),
    /// Insert a slice of another seed.
    Splice(usize, usize, usize, usize),
    /// Insert one of the target's grammar tokens.
    Token(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), 1u8..=255).prop_map(|(p, m)| Mutation::Flip(p, m)),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Insert(p, b)),
        2 => (any::<usize>(), 1usize..16).prop_map(|(p, n)| Mutation::Delete(p, n)),
        1 => (any::<usize>(), any::<usize>(), 1usize..64).prop_map(|(f, t, n)| Mutation::Duplicate(f, t, n)),
        1 => (any::<usize>(), any::<usize>(), any::<usize>(), 1usize..64)
            .prop_map(|(s, f, t, n)| Mutation::Splice(s, f, t, n)),
        4 => (any::<usize>(), any::<usize>()).prop_map(|(p, t)| Mutation::Token(p, t)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(seed: &[u8], seeds: &[Vec<u8>], tokens: &[&[u8]], muts: &[Mutation]) -> Vec<u8> {
    let mut v = seed.to_vec();
    let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
    for m in muts {
        match *m {
            Mutation::Flip(p, mask) => {
                if !v.is_empty() {
                    let i = p % v.len();
                    v[i] ^= mask;
                }
            }
            Mutation::Insert(p, b) => {
                let i = at(p, v.len());
                v.insert(i, b);
            }
            Mutation::Delete(p, n) => {
                if !v.is_empty() {
                    let i = p % v.len();
                    let end = (i + n).min(v.len());
                    v.drain(i..end);
                }
            }
            Mutation::Duplicate(f, t, n) => {
                if !v.is_empty() {
                    let from = f % v.len();
                    let slice = v[from..(from + n).min(v.len())].to_vec();
                    let to = at(t, v.len());
                    v.splice(to..to, slice);
                }
            }
            Mutation::Splice(s, f, t, n) => {
                let other = &seeds[s % seeds.len()];
                if !other.is_empty() {
                    let from = f % other.len();
                    let slice = &other[from..(from + n).min(other.len())];
                    let to = at(t, v.len());
                    v.splice(to..to, slice.iter().copied());
                }
            }
            Mutation::Token(p, t) => {
                let tok = tokens[t % tokens.len()];
                let i = at(p, v.len());
                v.splice(i..i, tok.iter().copied());
            }
            Mutation::Truncate(p) => {
                let i = at(p, v.len());
                v.truncate(i);
            }
        }
    }
    v
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    let seeds: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).expect("read seed")).collect();
    assert!(!seeds.is_empty(), "empty corpus {}", dir.display());
    seeds
}

fn cases() -> u32 {
    std::env::var("ARDACAT_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2500)
}

/// Run `check` on mutated seeds of `target` (and, one case in eight, on plain random bytes).
fn fuzz(target: &str, tokens: &[&[u8]], check: impl Fn(&[u8]) -> Result<(), TestCaseError>) {
    let seeds = corpus(target);
    let config = Config { cases: cases(), failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let n = seeds.len();
    let strategy = prop_oneof![
        7 => (0..n, proptest::collection::vec(mutation(), 0..12)),
        1 => (0..n, Just(Vec::new())),
    ];
    let random = proptest::collection::vec(any::<u8>(), 0..512);
    let result = runner.run(&(strategy, random, any::<bool>()), |((seed, muts), noise, use_noise)| {
        let input = if use_noise && muts.is_empty() { noise } else { apply(&seeds[seed], &seeds, tokens, &muts) };
        check(&input)
    });
    if let Err(e) = result {
        panic!("fuzz target {target}: {e}");
    }
}

// ------------------------------------------------------------------------------------------
// Targets

fn frames(codec_max: usize, chunks: &[&[u8]]) -> (Vec<ClientFrame>, Option<String>) {
    let mut codec = ServerCodec::new(codec_max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(f)) => out.push(f),
                Ok(None) => break,
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }
    (out, None)
}

fn check_command(input: &[u8]) -> Result<(), TestCaseError> {
    let mut bytes = input.to_vec();
    bytes.push(b'\n');
    let (whole, err) = frames(4096, &[&bytes]);
    let cut = bytes.len() / 3;
    let (split, err2) = frames(4096, &[&bytes[..cut], &bytes[cut..]]);
    prop_assert_eq!(&whole, &split, "framing depends on how the bytes arrive");
    prop_assert_eq!(err, err2);
    for f in whole {
        let ClientFrame::Line(line) = f else { continue };
        if let Ok(args) = tokenize(&line) {
            let _ = Command::parse(&args);
            prop_assert_eq!(tokenize(&join_args(&args)), Ok(args.clone()), "quoting round trip of {:?}", line);
        }
        if let Ok(args) = tokenize_escaped(&line) {
            let plain: Vec<&str> = args.iter().map(|a| a.as_deref().unwrap_or_default()).collect();
            let _ = Command::parse(&plain);
            let refs: Vec<Option<&str>> = args.iter().map(|a| a.as_deref()).collect();
            let joined = join_escaped_args(&refs);
            prop_assert_eq!(tokenize_escaped(&joined), Ok(args.clone()));
        }
    }
    Ok(())
}

fn check_handshake(input: &[u8]) -> Result<(), TestCaseError> {
    let (lines, _) = frames(4096, &[input]);
    let mut options = OptionsParser::new();
    let mut login = LoginParser::new();
    let mut in_login = false;
    for f in lines {
        let ClientFrame::Line(line) = f else { continue };
        if in_login {
            if login.push_line(&line).is_err() {
                break;
            }
            continue;
        }
        match options.push_line(&line) {
            Ok(Some(opts)) => {
                if let Ok(text) = opts.encode() {
                    let mut again = OptionsParser::new();
                    let mut parsed: Option<ClientOptions> = None;
                    for l in text.split('\n') {
                        if let Ok(Some(o)) = again.push_line(l) {
                            parsed = Some(o);
                            break;
                        }
                    }
                    prop_assert_eq!(parsed.as_ref(), Some(&opts), "option block round trip");
                }
                in_login = true;
            }
            Ok(None) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

fn check_condition(input: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(input);
    if let Ok(c) = parse_condition(&text) {
        let printed = c.to_string();
        let again = parse_condition(&printed);
        prop_assert_eq!(again.as_ref(), Ok(&c), "printed as {:?}", printed);
    }
    if let Ok(e) = parse_expr(&text) {
        let printed = e.to_string();
        let again = parse_expr(&printed);
        prop_assert_eq!(again.as_ref(), Ok(&e), "printed as {:?}", printed);
    }
    Ok(())
}

fn check_soap(input: &[u8]) -> Result<(), TestCaseError> {
    let tiny = Limits { max_depth: 6, max_elements: 24, max_body_bytes: 2048, max_attributes: 3 };
    for ct in [Some("text/xml; charset=utf-8"), Some("application/soap+xml"), None] {
        let _ = detect_version(ct, input);
    }
    for v in [SoapVersion::V11, SoapVersion::V12] {
        let full = parse_request(input, v, &Limits::default());
        let small = parse_request(input, v, &tiny);
        // Tighter limits never turn a refusal into an acceptance.
        if full.is_err() {
            prop_assert!(small.is_err());
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------

#[test]
fn fuzz_command_lines() {
    let tokens: &[&[u8]] = &[
        b"'",
        b"\\'",
        b"\\\\",
        b"\\",
        b"\x18",
        b"\r",
        b"\n",
        b"\0",
        b"\\N",
        b" ",
        b"\t",
        b"\xff",
        b"\xc3\xa9",
        b"\"",
        b"/*",
        b":",
        b"''",
        b"\\x0a",
        b"\\u{10ffff}",
        b"selectattr ",
        b"put ",
        b"updateattr ",
    ];
    fuzz("command", tokens, check_command);
}

#[test]
fn fuzz_handshake_blocks() {
    let tokens: &[&[u8]] =
        &[b"plain\n", b"ssl\n", b"resume", b"resumeSSL", b"escape\n", b"\n", b"0 ", b"5 ", b"99999999999 ", b"\r\n"];
    fuzz("handshake", tokens, check_handshake);
}

#[test]
fn fuzz_query_conditions() {
    let tokens: &[&[u8]] = &[
        b" and ",
        b" or ",
        b"not ",
        b" like ",
        b" between 1 and ",
        b" in (",
        b")",
        b"(",
        b" is null",
        b" is not null",
        b" order by ",
        b" desc",
        b" limit ",
        b" distinct",
        b"\"",
        b"\\\"",
        b"-",
        b"9223372036854775808",
        b"9223372036854775807",
        b"1e999",
        b"0.5",
        b"/x:y",
        b"abs(",
        b",",
        b"*",
        b"/",
        b"%",
        b"=",
        b"<>",
        b"<=",
    ];
    fuzz("condition", tokens, check_condition);
}

#[test]
fn fuzz_soap_envelopes() {
    let tokens: &[&[u8]] = &[
        b"<",
        b">",
        b"</",
        b"/>",
        b"&amp;",
        b"&#0;",
        b"&#x110000;",
        b"&bogus;",
        b"<!DOCTYPE x [<!ENTITY a \"b\">]>",
        b"<![CDATA[",
        b"]]>",
        b"<?pi x?>",
        b"<!-- c -->",
        b" xmlns:m=\"urn:ardacat:metadata:1\"",
        b" xsi:nil=\"true\"",
        b"\xef\xbb\xbf",
        b"\xff\xfe",
        b"<m:entry>",
        b"<m:attribute><m:name>a</m:name>",
        b"mustUnderstand=\"1\"",
    ];
    fuzz("soap", tokens, check_soap);
}

// ------------------------------------------------------------------------------------------
// Regressions: inputs the fuzzers once failed on (none so far); each runs the target's check.

fn regression(check: impl Fn(&[u8]) -> Result<(), TestCaseError>, input: &[u8]) {
    if let Err(e) = check(input) {
        panic!("regression {:?}: {e}", String::from_utf8_lossy(input));
    }
}

#[test]
fn regressions() {
    regression(check_command, b"a '\\");
    regression(check_condition, b"");
}
