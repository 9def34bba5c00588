//! Differential property tests of DDS: random message sequences (fixtures and generated
//! envelopes in every toolkit byte style, with values changed, lengths changed, items added
//! or removed, whitespace, comments, CDATA, entities, prefix rebinding, truncation, trailing
//! garbage, style switches) go through a [`DdsCache`] and straight through
//! [`parse_request`]: results and errors must be equal, and every fast-path `Ok(v)` against
//! the previous accepted message must equal the full parse.

#[path = "common/dds_gen.rs"]
mod dds_gen;

use ardacat_soap::dds::{DdsCache, DdsConfig, Template, TemplateKey};
use ardacat_soap::{Attribute, Entry, Limits, Request, SoapVersion, parse_request, write_request};
use dds_gen::*;
use proptest::prelude::*;

fn version() -> impl Strategy<Value = SoapVersion> {
    prop_oneof![Just(SoapVersion::V11), Just(SoapVersion::V12)]
}

/// Value text: mostly plain (so slots can change in place), sometimes characters that need
/// escaping, line ends, non-ASCII or XML-forbidden characters (filtered out).
fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        8 => prop::sample::select(vec!['a', 'b', 'z', '0', '7', '.', '/', ':', '-', '_']),
        2 => prop::sample::select(vec![' ', '\t', '\n', 'é', '\u{10000}', '\u{FEFF}']),
        1 => prop::sample::select(vec!['&', '<', '>', '"', '\'', '\r', ']']),
        1 => any::<char>(),
    ];
    prop::collection::vec(ch, 0..10).prop_map(|cs| {
        cs.into_iter()
            .filter(|c| {
                let c = *c as u32;
                !((c < 0x20 && c != 9 && c != 10 && c != 13) || c == 0xFFFE || c == 0xFFFF)
            })
            .collect()
    })
}

fn attribute() -> impl Strategy<Value = Attribute> {
    (text(), prop::option::of(text()), prop::option::of(text())).prop_map(|(name, attr_type, value)| Attribute {
        name,
        attr_type,
        value,
    })
}

fn attributes() -> impl Strategy<Value = Vec<Attribute>> {
    prop::collection::vec(attribute(), 0..4)
}

fn request() -> impl Strategy<Value = Request> {
    let strings = || prop::collection::vec(text(), 0..4);
    prop_oneof![
        Just(Request::Ping),
        (text(), attributes(), any::<bool>()).prop_map(|(schema_name, attributes, plain)| Request::CreateSchema {
            schema_name,
            attributes,
            plain
        }),
        (text(), strings()).prop_map(|(schema_name, attribute_names)| Request::RemoveSchemaAttributes {
            schema_name,
            attribute_names
        }),
        prop::option::of(text()).prop_map(|path| Request::ListSchemas { path }),
        (text(), prop::collection::vec((text(), attributes()), 0..4)).prop_map(|(schema_name, es)| {
            Request::CreateEntry {
                schema_name,
                entries: es.into_iter().map(|(name, attributes)| Entry { name, attributes }).collect(),
            }
        }),
        (text(), prop::option::of(text()), attributes())
            .prop_map(|(pattern, condition, attributes)| Request::SetAttributes { pattern, condition, attributes }),
        (strings(), strings())
            .prop_map(|(entry_names, attribute_names)| Request::GetAttributes { entry_names, attribute_names }),
        (strings(), prop::option::of(text()), prop::option::of(text()), prop::option::of(any::<u32>())).prop_map(
            |(select, condition, order_by, page_size)| Request::Query { select, condition, order_by, page_size }
        ),
        (text(), prop::option::of(any::<u32>())).prop_map(|(token, page_size)| Request::NextQuery { token, page_size }),
        text().prop_map(|entry_name| Request::ListAttributes { entry_name }),
    ]
}

/// Document-order mutable references to every string (no raw pointers).
fn visit(r: &mut Request) -> Vec<&mut String> {
    fn attrs(a: &mut [Attribute]) -> Vec<&mut String> {
        let mut v = Vec::new();
        for a in a {
            v.push(&mut a.name);
            if let Some(t) = &mut a.attr_type {
                v.push(t);
            }
            if let Some(x) = &mut a.value {
                v.push(x);
            }
        }
        v
    }
    match r {
        Request::CreateSchema { schema_name, attributes, .. } => {
            let mut v = vec![schema_name];
            v.extend(attrs(attributes));
            v
        }
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => {
            let mut v = vec![schema_name];
            v.extend(attribute_names.iter_mut());
            v
        }
        Request::ListSchemas { path } => path.iter_mut().collect(),
        Request::CreateEntry { schema_name, entries } => {
            let mut v = vec![schema_name];
            for e in entries {
                v.push(&mut e.name);
                v.extend(attrs(&mut e.attributes));
            }
            v
        }
        Request::SetAttributes { pattern, condition, attributes } => {
            let mut v = vec![pattern];
            v.extend(condition.iter_mut());
            v.extend(attrs(attributes));
            v
        }
        Request::GetAttributes { entry_names, attribute_names } => {
            entry_names.iter_mut().chain(attribute_names.iter_mut()).collect()
        }
        Request::Query { select, condition, order_by, .. } => {
            select.iter_mut().chain(condition.iter_mut()).chain(order_by.iter_mut()).collect()
        }
        Request::NextQuery { token, .. } => vec![token],
        Request::ListAttributes { entry_name } => vec![entry_name],
        _ => Vec::new(),
    }
}

/// One step of a client's message sequence.
#[derive(Debug, Clone)]
enum Step {
    /// Same request again.
    Same,
    /// Replace some values (index, new text).
    Values(Vec<(usize, String)>),
    /// Change `pageSize`/`plain`.
    Scalar(u32),
    /// Add an item to the first list (a copy of the first item with a new value), or remove one.
    Grow,
    Shrink,
    /// Render in another style or with CDATA/character references.
    Restyle(usize, bool),
    /// Byte edits on the rendered message.
    Bytes(Vec<Edit>),
}

#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    /// Insert before the k-th `</` (the end of a value or of a complex element).
    BeforeEndTag(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    Append(Vec<u8>),
    RebindPrefix,
}

fn snippet() -> impl Strategy<Value = Vec<u8>> {
    prop::sample::select(vec![
        b"x".to_vec(),
        b" ".to_vec(),
        b"\n\t".to_vec(),
        b"&amp;".to_vec(),
        b"&lt;".to_vec(),
        b"&#65;".to_vec(),
        b"&#0;".to_vec(),
        b"&bogus;".to_vec(),
        b"&".to_vec(),
        b"<".to_vec(),
        b">".to_vec(),
        b"]]>".to_vec(),
        b"<![CDATA[c<d]]>".to_vec(),
        b"<!--c-->".to_vec(),
        b"<?pi?>".to_vec(),
        b"<!DOCTYPE x>".to_vec(),
        b"<x/>".to_vec(),
        b"</x>".to_vec(),
        b"\r\n".to_vec(),
        b"\r".to_vec(),
        b"\x01".to_vec(),
        b"\xff".to_vec(),
        b"\xc3".to_vec(),
        "\u{FFFE}".as_bytes().to_vec(),
        "é\u{10000}".as_bytes().to_vec(),
        b" xmlns:ns0=\"urn:x\"".to_vec(),
        b" xmlns=\"\"".to_vec(),
        b" xsi:nil=\"true\"".to_vec(),
        b"\"".to_vec(),
    ])
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        1 => (any::<usize>(), snippet()).prop_map(|(i, s)| Edit::Insert(i, s)),
        3 => (any::<usize>(), snippet()).prop_map(|(i, s)| Edit::BeforeEndTag(i, s)),
        1 => (any::<usize>(), 1usize..8).prop_map(|(i, n)| Edit::Delete(i, n)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => snippet().prop_map(Edit::Append),
        1 => Just(Edit::RebindPrefix),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => Just(Step::Same),
        6 => prop::collection::vec((any::<usize>(), text()), 1..4).prop_map(Step::Values),
        1 => any::<u32>().prop_map(Step::Scalar),
        2 => Just(Step::Grow),
        1 => Just(Step::Shrink),
        1 => (0usize..4, any::<bool>()).prop_map(|(s, f)| Step::Restyle(s, f)),
        3 => prop::collection::vec(edit(), 1..3).prop_map(Step::Bytes),
    ]
}

fn apply_edit(b: &mut Vec<u8>, e: &Edit) {
    let n = b.len().max(1);
    match e {
        Edit::Set(i, x) => {
            let i = i % n;
            if i < b.len() {
                b[i] = *x;
            }
        }
        Edit::Insert(i, s) => {
            let i = i % (b.len() + 1);
            b.splice(i..i, s.iter().copied());
        }
        Edit::BeforeEndTag(k, s) => {
            let ends: Vec<usize> = b.windows(2).enumerate().filter(|(_, w)| w == b"</").map(|(i, _)| i).collect();
            if !ends.is_empty() {
                let i = ends[k % ends.len()];
                b.splice(i..i, s.iter().copied());
            }
        }
        Edit::Delete(i, k) => {
            let i = i % n;
            let end = (i + k).min(b.len());
            if i < end {
                b.drain(i..end);
            }
        }
        Edit::Truncate(i) => b.truncate(i % n),
        Edit::Append(s) => b.extend_from_slice(s),
        Edit::RebindPrefix => {
            let s = String::from_utf8_lossy(b).into_owned();
            let s = if s.contains("xmlns:ns0=\"urn:ardacat:metadata:1\"") {
                s.replacen("xmlns:ns0=\"urn:ardacat:metadata:1\"", "xmlns:ns0=\"urn:ardacat:metadata:2\"", 1)
            } else if s.contains("<ns1:name>") {
                s.replacen("<ns1:name>", "<ns1:name xmlns:ns1=\"urn:other\">", 1)
            } else {
                s.replacen("xmlns=\"urn:ardacat:metadata:1\"", "xmlns=\"urn:ardacat:metadata:1\" xmlns:S=\"urn:s\"", 1)
            };
            *b = s.into_bytes();
        }
    }
}

fn grow(r: &mut Request, extra: String) {
    match r {
        Request::CreateSchema { attributes: a, .. } | Request::SetAttributes { attributes: a, .. } => {
            a.push(Attribute { name: extra, attr_type: None, value: Some("v".into()) })
        }
        Request::RemoveSchemaAttributes { attribute_names: v, .. } | Request::Query { select: v, .. } => v.push(extra),
        Request::GetAttributes { entry_names, .. } => entry_names.push(extra),
        Request::CreateEntry { entries, .. } => {
            let mut e = entries.first().cloned().unwrap_or_default();
            e.name = extra;
            entries.push(e);
        }
        _ => {}
    }
}

fn shrink(r: &mut Request) {
    match r {
        Request::CreateSchema { attributes: a, .. } | Request::SetAttributes { attributes: a, .. } => {
            a.pop();
        }
        Request::RemoveSchemaAttributes { attribute_names: v, .. } | Request::Query { select: v, .. } => {
            v.pop();
        }
        Request::GetAttributes { entry_names, attribute_names } => {
            let emptied = attribute_names.pop().is_none();
            if emptied {
                entry_names.pop();
            }
        }
        Request::CreateEntry { entries, .. } => {
            entries.pop();
        }
        _ => {}
    }
}

/// Renders in style 0..3 (zeep, gSOAP, JAX-WS, this crate's writer).
fn render_req(style: usize, fancy: bool, v: SoapVersion, r: &Request) -> Vec<u8> {
    let enc = if fancy { Enc::Fancy } else { Enc::Plain };
    match style {
        0 => render(Style::Zeep, v, &tree(r), enc),
        1 => render(Style::Gsoap, v, &tree(r), enc),
        2 => render(Style::Jaxws, v, &tree(r), enc),
        _ => {
            let mut out = Vec::new();
            write_request(v, r, &mut out).expect("representable");
            out
        }
    }
}

/// Checks one message against the cache and the previous accepted message's template.
fn check(
    cache: &DdsCache,
    key: &TemplateKey,
    prev: &mut Option<Vec<u8>>,
    msg: &[u8],
    v: SoapVersion,
    limits: &Limits,
) -> Result<(), TestCaseError> {
    let want = parse_request(msg, v, limits);
    if let Some(p) = prev.as_deref()
        && let Ok(pp) = parse_request(p, v, limits)
        && let Some(t) = Template::record(p, v, &pp)
        && let Ok((got, _)) = t.fast_parse(msg, v, limits)
    {
        prop_assert_eq!(Ok(&got), want.as_ref(), "fast path disagrees\n{}", String::from_utf8_lossy(msg));
    }
    let got = cache.parse(key, msg, v, limits).map(|(p, _)| p);
    prop_assert_eq!(&got, &want, "cache disagrees\n{}", String::from_utf8_lossy(msg));
    if want.is_ok() {
        *prev = Some(msg.to_vec());
    }
    Ok(())
}

fn small_limits() -> Limits {
    Limits { max_depth: 8, max_elements: 40, max_body_bytes: 4096, max_attributes: 8 }
}

const FIXTURES: &[(&str, SoapVersion)] = &[
    (include_str!("fixtures/gsoap-2.8-soap11-createEntry.xml"), SoapVersion::V11),
    (include_str!("fixtures/gsoap-2.8-soap11-getAttributes.xml"), SoapVersion::V11),
    (include_str!("fixtures/gsoap-2.8-soap11-query.xml"), SoapVersion::V11),
    (include_str!("fixtures/gsoap-2.8-soap12-createEntry.xml"), SoapVersion::V12),
    (include_str!("fixtures/gsoap-2.8-soap12-query.xml"), SoapVersion::V12),
    (include_str!("fixtures/jaxws-2.3-soap11-createEntry.xml"), SoapVersion::V11),
    (include_str!("fixtures/jaxws-2.3-soap11-getAttributes.xml"), SoapVersion::V11),
    (include_str!("fixtures/jaxws-2.3-soap11-ping.xml"), SoapVersion::V11),
    (include_str!("fixtures/jaxws-2.3-soap11-query.xml"), SoapVersion::V11),
];

fn prop_cases() -> u32 {
    std::env::var("DDS_PROP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400)
}

fn cache() -> DdsCache {
    DdsCache::new(DdsConfig { shards: 1, backoff_after: 0, ..DdsConfig::default() })
}

proptest! {
    // DDS_PROP_CASES=N for a deeper run.
    #![proptest_config(ProptestConfig { cases: prop_cases(), .. ProptestConfig::default() })]

    /// Generated requests, rendered in a style, then a sequence of steps.
    #[test]
    fn generated_sequences_agree(
        base in request(),
        v in version(),
        style in 0usize..4,
        steps in prop::collection::vec(step(), 1..10),
        tight in prop::bool::weighted(0.15),
    ) {
        let limits = if tight { small_limits() } else { Limits::default() };
        let cache = cache();
        let key = TemplateKey::new("c", v.content_type());
        let mut req = base;
        let (mut style, mut fancy) = (style, false);
        let mut prev = None;
        let first = render_req(style, fancy, v, &req);
        check(&cache, &key, &mut prev, &first, v, &limits)?;
        for (n, s) in steps.iter().enumerate() {
            let mut edits: &[Edit] = &[];
            match s {
                Step::Same => {}
                Step::Values(changes) => {
                    let mut strs = visit(&mut req);
                    if !strs.is_empty() {
                        let len = strs.len();
                        for (i, t) in changes {
                            *strs[i % len] = t.clone();
                        }
                    }
                }
                Step::Scalar(x) => match &mut req {
                    Request::Query { page_size, .. } | Request::NextQuery { page_size, .. } => *page_size = Some(*x),
                    Request::CreateSchema { plain, .. } => *plain = x % 2 == 0,
                    _ => {}
                },
                Step::Grow => grow(&mut req, format!("item{n}")),
                Step::Shrink => shrink(&mut req),
                Step::Restyle(s, f) => (style, fancy) = (*s, *f),
                Step::Bytes(e) => edits = e,
            }
            let mut msg = render_req(style, fancy, v, &req);
            for e in edits {
                apply_edit(&mut msg, e);
            }
            check(&cache, &key, &mut prev, &msg, v, &limits)?;
        }
    }

    /// Recorded toolkit messages, primed into the cache, then byte-edited.
    #[test]
    fn fixture_edits_agree(
        which in 0usize..FIXTURES.len(),
        rounds in prop::collection::vec(prop::collection::vec(edit(), 1..4), 1..6),
    ) {
        let (body, v) = FIXTURES[which];
        let cache = cache();
        let key = TemplateKey::new("fixture", v.content_type());
        let limits = Limits::default();
        let mut prev = None;
        check(&cache, &key, &mut prev, body.as_bytes(), v, &limits)?;
        for edits in rounds {
            let mut msg = body.as_bytes().to_vec();
            for e in &edits {
                apply_edit(&mut msg, e);
            }
            check(&cache, &key, &mut prev, &msg, v, &limits)?;
        }
    }

    /// Arbitrary bytes through a primed cache never panic and error like the full parser.
    #[test]
    fn hostile_bytes_through_the_cache(
        which in 0usize..FIXTURES.len(),
        junk in prop::collection::vec(any::<u8>(), 0..600),
        keep in any::<usize>(),
    ) {
        let (body, v) = FIXTURES[which];
        let cache = cache();
        let key = TemplateKey::new("h", v.content_type());
        let limits = Limits::default();
        let mut prev = None;
        check(&cache, &key, &mut prev, body.as_bytes(), v, &limits)?;
        // The fixture's prefix (so the template is selected) followed by junk.
        let cut = keep % (body.len() + 1);
        let msg = [&body.as_bytes()[..cut], &junk[..]].concat();
        check(&cache, &key, &mut prev, &msg, v, &limits)?;
        check(&cache, &key, &mut prev, &junk, v, &limits)?;
    }
}

/// The generated sequences are not vacuous: value-only steps mostly take the fast path.
#[test]
fn value_sequences_mostly_hit() {
    let cache = DdsCache::new(DdsConfig { shadow: true, ..DdsConfig::default() });
    let mut hits = 0;
    let mut total = 0;
    for style in 0..4 {
        for v in [SoapVersion::V11, SoapVersion::V12] {
            let key = TemplateKey::new(format!("s{style}"), v.content_type());
            for pct in [0, 1, 10, 50, 100] {
                for req in [set_attributes(60, pct), create_entry(20, pct), create_entry(23, pct)] {
                    let msg = render_req(style, false, v, &req);
                    let (p, outcome) = cache.parse(&key, &msg, v, &Limits::default()).unwrap();
                    assert_eq!(p.request, req);
                    total += 1;
                    hits += usize::from(outcome.is_hit());
                }
            }
        }
    }
    let stats = cache.stats();
    assert_eq!(stats.shadow_mismatches, 0);
    assert_eq!(stats.shadow_checks as usize, hits);
    // Per (style, version): 2 misses (setAttributes, createEntry), everything else hits.
    assert_eq!(hits, total - 16, "{stats:?}");
    assert!(stats.loop_hits > 0);
}
