//! The DDS fast path on recorded toolkit messages and generated families: hits return what
//! the full parser returns, and every case of dds-soap.md §2.3's negative list declines.

#[path = "common/dds_gen.rs"]
mod dds_gen;

use ardacat_soap::dds::{DeclineReason, Template};
use ardacat_soap::{Limits, ParsedRequest, Request, SoapVersion, parse_request};
use dds_gen::*;

const V11: SoapVersion = SoapVersion::V11;
const V12: SoapVersion = SoapVersion::V12;

fn full(body: &[u8], v: SoapVersion) -> ParsedRequest {
    parse_request(body, v, &Limits::default())
        .unwrap_or_else(|e| panic!("full parse failed: {e}\n{}", String::from_utf8_lossy(body)))
}

fn template(body: &[u8], v: SoapVersion) -> Template {
    Template::record(body, v, &full(body, v)).expect("templatable")
}

/// Fast result of `new` against a template of `old`; asserts agreement on a hit.
fn fast(old: &[u8], new: &[u8], v: SoapVersion) -> Result<ParsedRequest, DeclineReason> {
    let t = template(old, v);
    let r = t.fast_parse(new, v, &Limits::default()).map(|(p, _)| p);
    if let Ok(p) = &r {
        assert_eq!(Ok(p), parse_request(new, v, &Limits::default()).as_ref(), "{}", String::from_utf8_lossy(new));
    }
    r
}

fn replace_once(body: &[u8], from: &str, to: &str) -> Vec<u8> {
    let s = std::str::from_utf8(body).unwrap();
    assert!(s.contains(from), "{from:?} not in message");
    s.replacen(from, to, 1).into_bytes()
}

const FIXTURES: &[(&str, SoapVersion)] = &[
    (include_str!("fixtures/gsoap-2.8-soap11-createEntry.xml"), V11),
    (include_str!("fixtures/gsoap-2.8-soap11-getAttributes.xml"), V11),
    (include_str!("fixtures/gsoap-2.8-soap11-ping.xml"), V11),
    (include_str!("fixtures/gsoap-2.8-soap11-query.xml"), V11),
    (include_str!("fixtures/gsoap-2.8-soap12-createEntry.xml"), V12),
    (include_str!("fixtures/gsoap-2.8-soap12-query.xml"), V12),
    (include_str!("fixtures/jaxws-2.3-soap11-createEntry.xml"), V11),
    (include_str!("fixtures/jaxws-2.3-soap11-getAttributes.xml"), V11),
    (include_str!("fixtures/jaxws-2.3-soap11-ping.xml"), V11),
    (include_str!("fixtures/jaxws-2.3-soap11-query.xml"), V11),
    // zeep 4.3, captured with Client.create_message (also in parse_styles.rs)
    (
        "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap-env:Body><ns0:createSchema xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:schemaName>/s</ns0:schemaName><ns0:attribute><ns0:name>a</ns0:name><ns0:type>int</ns0:type></ns0:attribute><ns0:attribute><ns0:name>b</ns0:name></ns0:attribute><ns0:plain>true</ns0:plain></ns0:createSchema></soap-env:Body></soap-env:Envelope>",
        V11,
    ),
    (
        "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://www.w3.org/2003/05/soap-envelope\"><soap-env:Body><ns0:nextQuery xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:token>t</ns0:token><ns0:pageSize>5</ns0:pageSize></ns0:nextQuery></soap-env:Body></soap-env:Envelope>",
        V12,
    ),
];

#[test]
fn every_fixture_hits_itself() {
    for (body, v) in FIXTURES {
        let t = template(body.as_bytes(), *v);
        let (p, hit) = t.fast_parse(body.as_bytes(), *v, &Limits::default()).expect("identical message hits");
        assert_eq!(p, full(body.as_bytes(), *v));
        assert_eq!(hit.changed_slots, 0);
        assert_eq!(hit.bytes_skipped, body.len());
        assert!(!hit.loop_path);
    }
}

#[test]
fn gsoap_fixture_values_change_in_place_and_in_length() {
    let (body, v) = FIXTURES[0];
    let b = body.as_bytes();
    // An entity-bearing old value is fragile: reused when unchanged, declined when changed.
    let t = template(b, v);
    assert!(t.slot_count() >= 5, "{}", t.slot_count());
    let m = replace_once(b, "<ns1:value>10</ns1:value>", "<ns1:value>1234567890</ns1:value>");
    let p = fast(b, &m, v).expect("longer value hits");
    let Request::CreateEntry { entries, .. } = &p.request else { panic!() };
    assert_eq!(entries[0].attributes[0].value.as_deref(), Some("1234567890"));
    let m = replace_once(b, "<ns1:value>10</ns1:value>", "<ns1:value></ns1:value>");
    assert!(fast(b, &m, v).is_ok(), "emptied value hits");
    let m = replace_once(b, "<ns1:schemaName>/a</ns1:schemaName>", "<ns1:schemaName>/b/c/d</ns1:schemaName>");
    assert!(fast(b, &m, v).is_ok());
    let m = replace_once(b, "/a/f1 &amp; &lt;x&gt;", "/a/f2");
    assert_eq!(fast(b, &m, v), Err(DeclineReason::Fragile));
    let m = replace_once(b, "<ns1:type>varchar</ns1:type>", "<ns1:type>int</ns1:type>");
    assert!(fast(b, &m, v).is_ok());
}

#[test]
fn negative_cases_decline() {
    let (body, v) = FIXTURES[3]; // gSOAP query
    let b = body.as_bytes();
    let cases: Vec<(&str, Vec<u8>, DeclineReason)> = vec![
        (
            "extra element",
            replace_once(b, "<ns1:pageSize>", "<ns1:orderBy>x</ns1:orderBy>\n\t\t\t<ns1:pageSize>"),
            DeclineReason::Structure,
        ),
        ("entity in value", replace_once(b, "/a:x</ns1:select>", "/a&amp;x</ns1:select>"), DeclineReason::SlotMarkup),
        ("> in value", replace_once(b, "/a:x</ns1:select>", "/a>x</ns1:select>"), DeclineReason::SlotMarkup),
        ("CR in value", replace_once(b, "/a:x</ns1:select>", "/a\rx</ns1:select>"), DeclineReason::SlotMarkup),
        (
            "CDATA in value",
            replace_once(b, "/a:x</ns1:select>", "/a<![CDATA[:y]]></ns1:select>"),
            DeclineReason::Structure,
        ),
        (
            "comment in value",
            replace_once(b, "/a:x</ns1:select>", "/a<!-- c -->:x</ns1:select>"),
            DeclineReason::Structure,
        ),
        (
            "prefix rebinding",
            replace_once(b, "xmlns:ns1=\"urn:ardacat:metadata:1\"", "xmlns:ns1=\"urn:other\""),
            DeclineReason::Structure,
        ),
        ("trailing garbage", [b, &b"<x/>"[..]].concat(), DeclineReason::TrailingBytes),
        ("truncation", b[..b.len() - 30].to_vec(), DeclineReason::Truncated),
        ("truncation in a value", b[..b.find_sub(b"/a:y") + 2].to_vec(), DeclineReason::Truncated),
        ("control char", replace_once(b, "/a:x</ns1:select>", "/a\u{1}x</ns1:select>"), DeclineReason::InvalidChars),
        ("U+FFFF", replace_once(b, "/a:x</ns1:select>", "/a\u{FFFF}x</ns1:select>"), DeclineReason::InvalidChars),
        ("bad pageSize", replace_once(b, ">25<", ">2x5<"), DeclineReason::Conversion),
        ("pageSize overflow", replace_once(b, ">25<", ">4294967296<"), DeclineReason::Conversion),
        (
            "whitespace between elements",
            replace_once(b, "\n\t\t\t<ns1:pageSize>", "\n\t\t\t <ns1:pageSize>"),
            DeclineReason::Structure,
        ),
        ("element name", replace_once(b, "<ns1:condition>", "<ns1:Condition>"), DeclineReason::Structure),
    ];
    for (what, m, reason) in cases {
        assert_eq!(fast(b, &m, v).map(|_| ()), Err(reason), "{what}");
    }
    // Invalid UTF-8 in a value.
    let mut m = b.to_vec();
    let at = b.find_sub(b"/a:x") + 1;
    m[at] = 0xff;
    assert_eq!(fast(b, &m, v).map(|_| ()), Err(DeclineReason::InvalidChars));
}

trait FindSub {
    fn find_sub(&self, needle: &[u8]) -> usize;
}
impl FindSub for [u8] {
    fn find_sub(&self, needle: &[u8]) -> usize {
        self.windows(needle.len()).position(|w| w == needle).expect("needle present")
    }
}

#[test]
fn bool_and_unsigned_int_slots_convert_like_the_full_parser() {
    let (body, v) = FIXTURES[10]; // zeep createSchema, plain=true
    let b = body.as_bytes();
    for (new, expect) in [("false", Some(false)), ("1", Some(true)), (" \n0\t", Some(false)), ("yes", None)] {
        let m = replace_once(b, "<ns0:plain>true<", &format!("<ns0:plain>{new}<"));
        let r = fast(b, &m, v);
        match expect {
            Some(plain) => assert!(matches!(r.unwrap().request, Request::CreateSchema { plain: p, .. } if p == plain)),
            None => assert_eq!(r.map(|_| ()), Err(DeclineReason::Conversion)),
        }
    }
    let (body, v) = FIXTURES[11]; // zeep nextQuery pageSize=5
    let b = body.as_bytes();
    for (new, expect) in
        [("4294967295", Some(u32::MAX)), ("+0007", Some(7)), (" 12 ", Some(12)), ("-1", None), ("", None)]
    {
        let m = replace_once(b, ">5<", &format!(">{new}<"));
        match (fast(b, &m, v), expect) {
            (Ok(p), Some(n)) => assert!(matches!(p.request, Request::NextQuery { page_size: Some(x), .. } if x == n)),
            (Err(DeclineReason::Conversion), None) => {}
            (other, _) => panic!("{new:?}: {other:?}"),
        }
    }
}

#[test]
fn nil_values_are_static() {
    let (body, v) = FIXTURES[6]; // JAX-WS createEntry with xsi:nil value
    let b = body.as_bytes();
    let m = replace_once(b, "xsi:nil=\"true\"/>", "xsi:nil=\"true\">x</value>");
    assert_eq!(fast(b, &m, v).map(|_| ()), Err(DeclineReason::Structure));
    let m = replace_once(b, "<value>10</value>", "<value>11</value>");
    assert!(fast(b, &m, v).is_ok());
}

#[test]
fn generated_families_hit_at_every_change_rate() {
    for style in [Style::Zeep, Style::Gsoap, Style::Jaxws] {
        for v in [V11, V12] {
            for (base, variants) in [
                (set_attributes(60, 0), [1, 10, 50, 100].map(|p| set_attributes(60, p))),
                (create_entry(50, 0), [1, 10, 50, 100].map(|p| create_entry(50, p))),
            ] {
                let old = message(style, v, &base);
                let t = template(&old, v);
                for req in variants {
                    let new = message(style, v, &req);
                    let (p, hit) = t.fast_parse(&new, v, &Limits::default()).expect("value changes hit");
                    assert_eq!(p.request, req);
                    assert!(!hit.loop_path);
                }
            }
        }
    }
}

#[test]
fn dense_and_sparse_walks_agree() {
    // Alternate long runs of unchanged values and bursts of changes so the matcher switches
    // modes several times.
    let base = set_attributes(400, 0);
    let old = message(Style::Gsoap, V11, &base);
    let t = template(&old, V11);
    let Request::SetAttributes { pattern, condition, mut attributes } = base else { unreachable!() };
    for (k, a) in attributes.iter_mut().enumerate() {
        if (k / 40) % 2 == 1 || k % 97 == 0 {
            a.value = Some(format!("changed-{k}-{}", "x".repeat(k % 7)));
        }
    }
    let req = Request::SetAttributes { pattern, condition, attributes };
    let new = message(Style::Gsoap, V11, &req);
    let (p, hit) = t.fast_parse(&new, V11, &Limits::default()).unwrap();
    assert_eq!(p.request, req);
    assert!(hit.changed_slots > 150);
}

#[test]
fn item_counts_change_through_the_loop_program() {
    for style in [Style::Zeep, Style::Gsoap, Style::Jaxws] {
        let old = message(style, V11, &create_entry(5, 0));
        let t = template(&old, V11);
        assert!(t.has_loops());
        for n in [0usize, 1, 4, 6, 20] {
            for pct in [0, 30] {
                let req = create_entry(n, pct);
                let new = message(style, V11, &req);
                let (p, hit) =
                    t.fast_parse(&new, V11, &Limits::default()).unwrap_or_else(|e| panic!("{style:?} n={n}: {e}"));
                assert_eq!(p.request, req, "{style:?} n={n}");
                assert!(hit.loop_path);
            }
        }
        // setAttributes: 60 → 59 and 61 attributes.
        let old = message(style, V11, &set_attributes(60, 0));
        let t = template(&old, V11);
        for n in [59, 61] {
            let req = set_attributes(n, 10);
            let (p, hit) = t.fast_parse(&message(style, V11, &req), V11, &Limits::default()).unwrap();
            assert_eq!(p.request, req);
            assert!(hit.loop_path);
        }
    }
}

#[test]
fn loop_program_handles_two_lists_and_item_shapes() {
    let req = |e: usize, a: usize| Request::GetAttributes {
        entry_names: (0..e).map(|k| format!("/e{k}")).collect(),
        attribute_names: (0..a).map(|k| format!("attr{k}")).collect(),
    };
    for style in [Style::Zeep, Style::Gsoap] {
        let t = template(&message(style, V11, &req(2, 2)), V11);
        for (e, a) in [(0, 3), (3, 0), (5, 1), (2, 2), (0, 0)] {
            let r = req(e, a);
            let m = message(style, V11, &r);
            match t.fast_parse(&m, V11, &Limits::default()) {
                Ok((p, _)) => assert_eq!(p.request, r),
                // With no children at all our pretty-printer closes the wrapper on the same line.
                Err(DeclineReason::Structure) if style == Style::Gsoap && (e, a) == (0, 0) => {}
                Err(x) => panic!("{style:?} ({e},{a}): {x}\n{}", String::from_utf8_lossy(&m)),
            }
        }
    }
    // Entries of different shapes (attribute counts, typed or nil attributes).
    let mixed = |n: usize| {
        let mut r = create_entry(n, 0);
        if let Request::CreateEntry { entries, .. } = &mut r {
            for (k, e) in entries.iter_mut().enumerate() {
                match k % 3 {
                    1 => e.attributes.truncate(1),
                    2 => {
                        e.attributes[0].attr_type = Some("int".into());
                        e.attributes[1].value = None;
                    }
                    _ => {}
                }
            }
        }
        r
    };
    for style in [Style::Zeep, Style::Gsoap, Style::Jaxws] {
        let t = template(&message(style, V11, &mixed(6)), V11);
        for n in [2, 7, 13] {
            let r = mixed(n);
            let (p, hit) = t.fast_parse(&message(style, V11, &r), V11, &Limits::default()).unwrap();
            assert_eq!(p.request, r);
            assert!(hit.loop_path);
        }
    }
}

#[test]
fn limits_decline_and_the_full_parser_reports() {
    let old = message(Style::Zeep, V11, &create_entry(5, 0));
    let t = template(&old, V11);
    // Envelope, Body, createEntry, schemaName + 11 per entry: 59 for 5 entries, 70 for 6.
    let tight = Limits { max_elements: 60, ..Limits::default() };
    assert!(t.fast_parse(&old, V11, &tight).is_ok());
    let more = message(Style::Zeep, V11, &create_entry(6, 0));
    assert_eq!(t.fast_parse(&more, V11, &tight).map(|_| ()), Err(DeclineReason::Limits));
    assert!(parse_request(&more, V11, &tight).is_err());
    let tiny = Limits { max_body_bytes: 100, ..Limits::default() };
    assert_eq!(t.fast_parse(&old, V11, &tiny).map(|_| ()), Err(DeclineReason::Limits));
    let shallow = Limits { max_depth: 5, ..Limits::default() };
    assert_eq!(t.fast_parse(&old, V11, &shallow).map(|_| ()), Err(DeclineReason::Limits));
    assert_eq!(t.fast_parse(&old, V12, &Limits::default()).map(|_| ()), Err(DeclineReason::Version));
}

#[test]
fn ignored_header_text_is_a_validate_only_slot() {
    let msg = |id: &str| {
        format!(
            "<S:Envelope xmlns:S=\"http://schemas.xmlsoap.org/soap/envelope/\"><S:Header><wsa:MessageID xmlns:wsa=\"http://www.w3.org/2005/08/addressing\">{id}</wsa:MessageID><t:Trace xmlns:t=\"urn:t\"><t:span>a</t:span><t:n/></t:Trace></S:Header><S:Body><endQuery xmlns=\"urn:ardacat:metadata:1\"><token>tok</token></endQuery></S:Body></S:Envelope>"
        )
        .into_bytes()
    };
    let old = msg("urn:uuid:1");
    let p = fast(&old, &msg("urn:uuid:2-longer"), V11).unwrap();
    assert_eq!(p.headers.len(), 2);
    assert_eq!(fast(&old, &msg("a&amp;b"), V11).map(|_| ()), Err(DeclineReason::SlotMarkup));
    assert_eq!(fast(&old, &msg("<x/>"), V11).map(|_| ()), Err(DeclineReason::Structure));
}

#[test]
fn bom_and_utf16() {
    let (body, v) = FIXTURES[9];
    let with_bom = [&b"\xEF\xBB\xBF"[..], body.as_bytes()].concat();
    let t = template(&with_bom, v);
    let m = replace_once(&with_bom, ">25<", ">26<");
    assert!(t.fast_parse(&m, v, &Limits::default()).is_ok());
    assert_eq!(t.fast_parse(body.as_bytes(), v, &Limits::default()).map(|_| ()), Err(DeclineReason::Structure));
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(body.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    assert!(Template::record(&utf16, v, &full(&utf16, v)).is_none());
}

#[test]
fn fragile_old_values_are_reused_verbatim() {
    let payload = |pattern: &str, cond: &str| {
        format!(
            "<S:Envelope xmlns:S=\"http://schemas.xmlsoap.org/soap/envelope/\"><S:Body><removeEntry xmlns=\"urn:ardacat:metadata:1\"><pattern>{pattern}</pattern><condition>{cond}</condition></removeEntry></S:Body></S:Envelope>"
        )
        .into_bytes()
    };
    let old = payload("<![CDATA[/a/<b>&]]>-x&#x41;<!-- c -->\r\n", "c1");
    let p = fast(&old, &payload("<![CDATA[/a/<b>&]]>-x&#x41;<!-- c -->\r\n", "c2-longer"), V11).unwrap();
    assert!(matches!(p.request, Request::RemoveEntry { pattern, .. } if pattern == "/a/<b>&-xA\n"));
    assert_eq!(
        fast(&old, &payload("<![CDATA[/a/<b>&]]>-x&#x42;<!-- c -->\r\n", "c1"), V11).map(|_| ()),
        Err(DeclineReason::Fragile)
    );
}
