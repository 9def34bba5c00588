//! Property tests: no input panics the parser; write → parse round-trips.

mod common;

use ardacat_soap::{
    Attribute, Entry, Limits, MDResult, Request, Response, Row, SoapVersion, detect_version, parse_request,
    response_bytes, write_request,
};
use common::*;
use proptest::prelude::*;

fn version() -> impl Strategy<Value = SoapVersion> {
    prop_oneof![Just(SoapVersion::V11), Just(SoapVersion::V12)]
}

/// Strings of XML-representable characters, biased towards the ones that need care.
fn xml_string() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => any::<char>(),
        1 => prop::sample::select(vec!['&', '<', '>', '"', '\'', '\r', '\n', '\t', ']', ' ', 'é', '\u{FFFD}', '\u{10000}']),
    ];
    prop::collection::vec(ch, 0..12).prop_map(|cs| {
        cs.into_iter()
            .filter(|c| {
                let c = *c as u32;
                !((c < 0x20 && c != 9 && c != 10 && c != 13) || c == 0xFFFE || c == 0xFFFF)
            })
            .collect()
    })
}

fn opt_string() -> impl Strategy<Value = Option<String>> {
    prop::option::of(xml_string())
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(xml_string(), 0..4)
}

fn attribute() -> impl Strategy<Value = Attribute> {
    (xml_string(), opt_string(), opt_string()).prop_map(|(name, attr_type, value)| Attribute { name, attr_type, value })
}

fn attributes() -> impl Strategy<Value = Vec<Attribute>> {
    prop::collection::vec(attribute(), 0..4)
}

fn entry() -> impl Strategy<Value = Entry> {
    (xml_string(), attributes()).prop_map(|(name, attributes)| Entry { name, attributes })
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        Just(Request::Ping),
        Just(Request::GetVersion),
        (xml_string(), attributes(), any::<bool>())
            .prop_map(|(schema_name, attributes, plain)| { Request::CreateSchema { schema_name, attributes, plain } }),
        xml_string().prop_map(|schema_name| Request::DropSchema { schema_name }),
        (xml_string(), attributes())
            .prop_map(|(schema_name, attributes)| { Request::AddSchemaAttributes { schema_name, attributes } }),
        (xml_string(), strings()).prop_map(|(schema_name, attribute_names)| {
            Request::RemoveSchemaAttributes { schema_name, attribute_names }
        }),
        opt_string().prop_map(|path| Request::ListSchemas { path }),
        xml_string().prop_map(|schema_name| Request::DescribeSchema { schema_name }),
        (xml_string(), prop::collection::vec(entry(), 0..3))
            .prop_map(|(schema_name, entries)| { Request::CreateEntry { schema_name, entries } }),
        (xml_string(), opt_string()).prop_map(|(pattern, condition)| Request::RemoveEntry { pattern, condition }),
        (xml_string(), opt_string(), attributes())
            .prop_map(|(pattern, condition, attributes)| { Request::SetAttributes { pattern, condition, attributes } }),
        (strings(), strings())
            .prop_map(|(entry_names, attribute_names)| Request::GetAttributes { entry_names, attribute_names }),
        (xml_string(), strings())
            .prop_map(|(pattern, attribute_names)| Request::ClearAttributes { pattern, attribute_names }),
        xml_string().prop_map(|entry_name| Request::ListAttributes { entry_name }),
        (strings(), opt_string(), opt_string(), prop::option::of(any::<u32>())).prop_map(
            |(select, condition, order_by, page_size)| Request::Query { select, condition, order_by, page_size }
        ),
        (xml_string(), prop::option::of(any::<u32>()))
            .prop_map(|(token, page_size)| Request::NextQuery { token, page_size }),
        xml_string().prop_map(|token| Request::EndQuery { token }),
        (xml_string(), xml_string(), strings()).prop_map(|(schema_name, index_name, attribute_names)| {
            Request::IndexCreate { schema_name, index_name, attribute_names }
        }),
        (xml_string(), xml_string())
            .prop_map(|(schema_name, index_name)| Request::IndexRemove { schema_name, index_name }),
        xml_string().prop_map(|schema_name| Request::IndexList { schema_name }),
    ]
}

/// A valid envelope to mutate, in one of the client styles.
fn seed_envelope() -> impl Strategy<Value = (Vec<u8>, SoapVersion)> {
    (0usize..3, version()).prop_map(|(style, v)| {
        let payload = "<P:createEntry><P:schemaName T=\"string\">/a&amp;b</P:schemaName><P:entry><P:name>e<![CDATA[<x>]]></P:name>\
             <P:attribute><P:name>a</P:name><P:type>int</P:type><P:value xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:nil=\"true\"/></P:attribute>\
             </P:entry><!-- c --></P:createEntry>";
        (envelope(STYLES[style], v, payload).into_bytes(), v)
    })
}

#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let snippet = prop::sample::select(vec![
        b"<".to_vec(),
        b">".to_vec(),
        b"&".to_vec(),
        b"&lt;".to_vec(),
        b"&#0;".to_vec(),
        b"]]>".to_vec(),
        b"<![CDATA[".to_vec(),
        b"<!--".to_vec(),
        b"-->".to_vec(),
        b"<?pi?>".to_vec(),
        b"<!DOCTYPE x>".to_vec(),
        b"xmlns=\"\"".to_vec(),
        b"xmlns:ns0=\"urn:x\"".to_vec(),
        b" xsi:nil=\"1\"".to_vec(),
        b"\"".to_vec(),
        b"</x>".to_vec(),
        b"<x/>".to_vec(),
        b"\xff".to_vec(),
        b"\xc3".to_vec(),
        b"\r".to_vec(),
        b"\x01".to_vec(),
    ]);
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), snippet).prop_map(|(i, s)| Edit::Insert(i, s)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Edit::Delete(i, n)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    let n = bytes.len().max(1);
    match e {
        Edit::Set(i, b) => {
            let i = i % n;
            if i < bytes.len() {
                bytes[i] = *b;
            }
        }
        Edit::Insert(i, s) => {
            let i = i % (bytes.len() + 1);
            bytes.splice(i..i, s.iter().copied());
        }
        Edit::Delete(i, k) => {
            let i = i % n;
            let end = (i + k).min(bytes.len());
            if i < end {
                bytes.drain(i..end);
            }
        }
        Edit::Truncate(i) => bytes.truncate(i % n),
    }
}

fn small_limits() -> Limits {
    Limits { max_depth: 16, max_elements: 200, max_body_bytes: 1 << 16, max_attributes: 16 }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), v in version()) {
        let _ = detect_version(None, &bytes);
        let _ = detect_version(Some("text/xml"), &bytes);
        let _ = parse_request(&bytes, v, &Limits::default());
        let _ = parse_request(&bytes, v, &small_limits());
    }

    #[test]
    fn mutated_envelopes_never_panic_and_stay_consistent(
        (seed, v) in seed_envelope(),
        edits in prop::collection::vec(edit(), 1..6),
    ) {
        let mut bytes = seed;
        for e in &edits {
            apply(&mut bytes, e);
        }
        let _ = detect_version(Some(v.media_type()), &bytes);
        if let Ok(parsed) = parse_request(&bytes, v, &Limits::default()) {
            // Whatever was accepted re-serializes to a request that parses to the same value.
            let mut out = Vec::new();
            if write_request(v, &parsed.request, &mut out).is_ok() {
                let again = parse_request(&out, v, &Limits::default()).unwrap();
                prop_assert_eq!(again.request, parsed.request);
            }
        }
    }

    #[test]
    fn request_round_trip(req in request(), v in version()) {
        let mut out = Vec::new();
        write_request(v, &req, &mut out).unwrap();
        let parsed = parse_request(&out, v, &Limits::default());
        prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed, String::from_utf8_lossy(&out));
        prop_assert_eq!(parsed.unwrap().request, req);
    }

    #[test]
    fn get_attributes_response_round_trip(entries in prop::collection::vec(entry(), 0..4), v in version()) {
        let bytes = response_bytes(v, &Response::GetAttributes { entries: entries.clone() }).unwrap();
        let node = body_child(&bytes, v);
        let back: Vec<Entry> = node.all("entry").into_iter().map(|e| Entry {
            name: e.child("name").text.clone(),
            attributes: e.all("attribute").into_iter().map(|a| Attribute {
                name: a.child("name").text.clone(),
                attr_type: a.all("type").first().map(|t| t.text.clone()),
                value: { let val = a.child("value"); if val.is_nil() { None } else { Some(val.text.clone()) } },
            }).collect(),
        }).collect();
        prop_assert_eq!(back, entries);
    }

    #[test]
    fn query_response_round_trip(
        token in opt_string(),
        columns in strings(),
        rows in prop::collection::vec(prop::collection::vec(opt_string(), 0..4), 0..4),
        more in any::<bool>(),
        v in version(),
    ) {
        let r = MDResult { token, columns, rows: rows.into_iter().map(|values| Row { values }).collect(), more };
        let bytes = response_bytes(v, &Response::Query(r.clone())).unwrap();
        let res = body_child(&bytes, v).child("result").clone();
        let back = MDResult {
            token: res.all("token").first().map(|t| t.text.clone()),
            columns: res.all("column").into_iter().map(|c| c.text.clone()).collect(),
            rows: res.all("row").into_iter().map(|row| Row {
                values: row.all("value").into_iter().map(|x| if x.is_nil() { None } else { Some(x.text.clone()) }).collect(),
            }).collect(),
            more: res.child("more").text == "true",
        };
        prop_assert_eq!(back, r);
    }
}
