//! Response, fault and request serialization.

mod common;

use ardacat_soap::{
    Attribute, Entry, EntryColumns, EntryValue, Fault, FaultCode, Limits, MDResult, Operation, Request, Response,
    ResponseWriter, Row, RowValue, SoapError, SoapVersion, error_fault_bytes, fault_bytes, parse_request,
    response_bytes, write_error_fault, write_fault, write_request, write_response,
};
use common::*;

const V11: SoapVersion = SoapVersion::V11;
const V12: SoapVersion = SoapVersion::V12;
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

fn s(v: &str) -> String {
    v.to_string()
}

#[test]
fn soap11_fault_bytes() {
    let f = Fault::new(4, "AuthorizationException", "permission denied: /a <b> & 'c'", true);
    let mut out = Vec::new();
    write_fault(V11, &f, &mut out);
    let expected = concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">",
        "<soap:Body><soap:Fault><faultcode>soap:Client</faultcode>",
        "<faultstring>permission denied: /a &lt;b&gt; &amp; &apos;c&apos;</faultstring>",
        "<detail><MetadataFault xmlns=\"urn:ardacat:metadata:1\"><code>4</code><kind>AuthorizationException</kind>",
        "<message>permission denied: /a &lt;b&gt; &amp; &apos;c&apos;</message></MetadataFault></detail>",
        "</soap:Fault></soap:Body></soap:Envelope>"
    );
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    assert_eq!(f.http_status(V11), 500);
    assert_eq!(f.fault_code(), FaultCode::Client);
}

#[test]
fn soap12_fault_bytes() {
    let f = Fault::new(99, "InternalException", "internal server error", false);
    let out = fault_bytes(V12, &f);
    let expected = concat!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
        "<soap:Envelope xmlns:soap=\"http://www.w3.org/2003/05/soap-envelope\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">",
        "<soap:Body><soap:Fault><soap:Code><soap:Value>soap:Receiver</soap:Value></soap:Code>",
        "<soap:Reason><soap:Text xml:lang=\"en\">internal server error</soap:Text></soap:Reason>",
        "<soap:Detail><MetadataFault xmlns=\"urn:ardacat:metadata:1\"><code>99</code><kind>InternalException</kind>",
        "<message>internal server error</message></MetadataFault></soap:Detail>",
        "</soap:Fault></soap:Body></soap:Envelope>"
    );
    assert_eq!(std::str::from_utf8(&out).unwrap(), expected);
    assert_eq!(f.http_status(V12), 500);
    let sender = Fault::new(15, "ExistsException", "/a: exists", true);
    assert_eq!(sender.http_status(V12), 400);
    let fault = body_child(&fault_bytes(V12, &sender), V12);
    assert_eq!(fault.child("Code").child("Value").text, "soap:Sender");
    let md = fault.child("Detail").child("MetadataFault");
    assert_eq!(md.ns.as_deref(), Some(NS));
    assert_eq!(md.child("code").text, "15");
    assert_eq!(md.child("kind").text, "ExistsException");
    assert_eq!(md.child("message").text, "/a: exists");
}

#[test]
fn fault_texts_never_fail_and_show_forbidden_chars_visibly() {
    let f = Fault::new(18, "InvalidArgumentException", "bad value \u{1}x\r\n", true);
    let fault = body_child(&fault_bytes(V11, &f), V11);
    assert_eq!(fault.child("faultstring").text, "bad value \\u{0001}x\r\n");
    // faultcode etc. are unqualified (WS-I R1001)
    assert_eq!(fault.child("faultcode").ns, None);
    assert_eq!(fault.child("detail").ns, None);
}

#[test]
fn protocol_faults() {
    // Client fault from a parse error, SOAP 1.1: no detail.
    let e = SoapError::MissingElement { parent: "dropSchema".into(), element: "schemaName".into() };
    let fault = body_child(&error_fault_bytes(V11, &e), V11);
    assert_eq!(fault.child("faultcode").text, "soap:Client");
    assert_eq!(fault.child("faultstring").text, "missing required element 'schemaName' in 'dropSchema'");
    assert!(fault.all("detail").is_empty());

    // MustUnderstand, SOAP 1.2: NotUnderstood header block with a resolvable qname.
    let e = SoapError::MustUnderstand { namespace: "urn:wsse".into(), local_name: "Security".into() };
    let mut out = Vec::new();
    write_error_fault(V12, &e, &mut out);
    let env = dom(&out);
    let nu = env.child("Header").child("NotUnderstood");
    assert_eq!(nu.attr(None, "qname"), Some("nu:Security"));
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.contains("xmlns:nu=\"urn:wsse\""), "{text}");
    let fault = env.child("Body").child("Fault");
    assert_eq!(fault.child("Code").child("Value").text, "soap:MustUnderstand");
    assert_eq!(e.http_status(V12), 500);

    // MustUnderstand, SOAP 1.1
    let fault = body_child(&error_fault_bytes(V11, &e), V11);
    assert_eq!(fault.child("faultcode").text, "soap:MustUnderstand");

    // VersionMismatch, SOAP 1.2: Upgrade header lists both envelopes.
    let e = SoapError::VersionMismatch { expected: V12, found: "x".into(), found_version: None };
    let env = dom(&error_fault_bytes(V12, &e));
    let supported = env.child("Header").child("Upgrade").all("SupportedEnvelope");
    assert_eq!(supported.len(), 2);
    assert_eq!(env.child("Body").child("Fault").child("Code").child("Value").text, "soap:VersionMismatch");
    let fault = body_child(&error_fault_bytes(V11, &e), V11);
    assert_eq!(fault.child("faultcode").text, "soap:VersionMismatch");

    // Server-side serialization failure.
    let e = SoapError::Unserializable("x".into());
    assert_eq!(e.fault_code(), FaultCode::Server);
    let fault = body_child(&error_fault_bytes(V12, &e), V12);
    assert_eq!(fault.child("Code").child("Value").text, "soap:Receiver");
    assert_eq!(
        fault.child("Reason").child("Text").attr(Some("http://www.w3.org/XML/1998/namespace"), "lang"),
        Some("en")
    );
}

fn sample_entries() -> Vec<Entry> {
    vec![
        Entry {
            name: s("/a/f1"),
            attributes: vec![
                Attribute { name: s("size"), attr_type: None, value: Some(s("10")) },
                Attribute { name: s("owner"), attr_type: None, value: None },
                Attribute { name: s("note"), attr_type: Some(s("text")), value: Some(s("<&>\"' \r\n\t")) },
            ],
        },
        Entry { name: s("/a/f2"), attributes: vec![] },
    ]
}

fn sample_result() -> MDResult {
    MDResult {
        token: Some(s("q-1")),
        columns: vec![s("/a:size"), s("/a:owner")],
        rows: vec![
            Row { values: vec![Some(s("10")), None] },
            Row { values: vec![Some(s("")), Some(s("bob & alice"))] },
        ],
        more: true,
    }
}

#[test]
fn responses_have_the_wsdl_shape() {
    for v in [V11, V12] {
        let r = body_child(&response_bytes(v, &Response::Ping).unwrap(), v);
        assert_eq!((r.ns.as_deref(), r.name.as_str(), r.children.len()), (Some(NS), "pingResponse", 0));

        let r = body_child(&response_bytes(v, &Response::GetVersion { version: s("ardacat 0.1") }).unwrap(), v);
        assert_eq!(r.child("version").text, "ardacat 0.1");
        assert_eq!(r.child("version").ns.as_deref(), Some(NS));

        for (resp, name, field, n) in [
            (Response::CreateEntry { created: 3 }, "createEntryResponse", "created", "3"),
            (Response::RemoveEntry { removed: 0 }, "removeEntryResponse", "removed", "0"),
            (Response::SetAttributes { updated: 7 }, "setAttributesResponse", "updated", "7"),
            (Response::ClearAttributes { cleared: 2147483647 }, "clearAttributesResponse", "cleared", "2147483647"),
        ] {
            let r = body_child(&response_bytes(v, &resp).unwrap(), v);
            assert_eq!(r.name, name);
            assert_eq!(r.child(field).text, n);
        }

        let r =
            body_child(&response_bytes(v, &Response::ListSchemas { schema_names: vec![s("/a"), s("/b")] }).unwrap(), v);
        assert_eq!(r.all("schemaName").iter().map(|n| n.text.as_str()).collect::<Vec<_>>(), ["/a", "/b"]);

        let attrs = vec![Attribute::typed("size", "int"), Attribute::named("owner")];
        for resp in [
            Response::DescribeSchema { attributes: attrs.clone() },
            Response::ListAttributes { attributes: attrs.clone() },
        ] {
            let r = body_child(&response_bytes(v, &resp).unwrap(), v);
            let a = r.all("attribute");
            assert_eq!(a.len(), 2);
            assert_eq!(a[0].child("name").text, "size");
            assert_eq!(a[0].child("type").text, "int");
            assert!(a[0].all("value").is_empty(), "None values are omitted in schema listings");
            assert!(a[1].all("type").is_empty());
        }

        let r = body_child(&response_bytes(v, &Response::GetAttributes { entries: sample_entries() }).unwrap(), v);
        assert_eq!(r.name, "getAttributesResponse");
        let e = r.all("entry");
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].child("name").text, "/a/f1");
        let a = e[0].all("attribute");
        assert_eq!(a[0].child("value").text, "10");
        assert!(a[1].child("value").is_nil(), "None entry values are xsi:nil");
        assert_eq!(a[2].child("value").text, "<&>\"' \r\n\t", "escaping round-trips, CR included");
        assert!(e[1].all("attribute").is_empty());

        for (resp, name) in [
            (Response::Query(sample_result()), "queryResponse"),
            (Response::NextQuery(sample_result()), "nextQueryResponse"),
        ] {
            let r = body_child(&response_bytes(v, &resp).unwrap(), v);
            assert_eq!(r.name, name);
            let res = r.child("result");
            assert_eq!(res.child("token").text, "q-1");
            assert_eq!(res.all("column").len(), 2);
            let rows = res.all("row");
            assert_eq!(rows.len(), 2);
            let vals = rows[0].all("value");
            assert_eq!(vals[0].text, "10");
            assert!(vals[1].is_nil());
            assert_eq!(vals[1].attr(Some(XSI), "nil"), Some("true"));
            assert_eq!(rows[1].all("value")[1].text, "bob & alice");
            assert_eq!(res.child("more").text, "true");
            // element order inside MDResult: token, column*, row*, more
            let order: Vec<_> = res.children.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(order, ["token", "column", "column", "row", "row", "more"]);
        }
        let empty = Response::Query(MDResult::default());
        let res = body_child(&response_bytes(v, &empty).unwrap(), v);
        let order: Vec<_> = res.child("result").children.iter().map(|c| c.name.clone()).collect();
        assert_eq!(order, ["more"]);

        for resp in [
            Response::CreateSchema,
            Response::DropSchema,
            Response::AddSchemaAttributes,
            Response::RemoveSchemaAttributes,
            Response::EndQuery,
        ] {
            let r = body_child(&response_bytes(v, &resp).unwrap(), v);
            assert_eq!(r.name, resp.operation().response_name());
            assert!(r.children.is_empty());
        }
    }
}

#[test]
fn unrepresentable_characters_are_refused_and_output_untouched() {
    let mut out = b"prefix".to_vec();
    let bad = Response::GetAttributes {
        entries: vec![Entry { name: s("e"), attributes: vec![Attribute::with_value("a", Some("x\u{0}y"))] }],
    };
    let e = write_response(V11, &bad, &mut out).unwrap_err();
    assert!(
        matches!(&e, SoapError::Unserializable(m) if m.contains("U+0000") && m.contains("entry/attribute/value")),
        "{e}"
    );
    assert_eq!(e.fault_code(), FaultCode::Server);
    assert_eq!(out, b"prefix");
    for bad in ["\u{1b}[31m", "\u{FFFE}", "\u{FFFF}", "\u{8}"] {
        let r = Response::GetVersion { version: s(bad) };
        assert!(matches!(response_bytes(V12, &r), Err(SoapError::Unserializable(_))), "{bad:?}");
    }
    // Allowed: tab, LF, CR, all other Unicode including U+FFFD, astral, C1 controls.
    let ok = "\t\n\r\u{FFFD}\u{1F600}\u{85}\u{7F}";
    let r = body_child(&response_bytes(V11, &Response::GetVersion { version: s(ok) }).unwrap(), V11);
    assert_eq!(r.child("version").text, ok);
    // Counts beyond xs:int.
    assert!(matches!(
        response_bytes(V11, &Response::CreateEntry { created: u32::MAX }),
        Err(SoapError::Unserializable(_))
    ));
}

#[test]
fn streaming_writer_matches_write_response() {
    for v in [V11, V12] {
        // getAttributes
        let entries = sample_entries();
        let mut streamed = Vec::new();
        let mut w = ResponseWriter::begin(v, Operation::GetAttributes, &mut streamed);
        for e in &entries {
            w.entry(e, &mut streamed).unwrap();
        }
        w.finish(&mut streamed).unwrap();
        assert_eq!(streamed, response_bytes(v, &Response::GetAttributes { entries }).unwrap());

        // query, rows given as borrowed values
        let res = sample_result();
        let mut streamed = Vec::new();
        let mut w = ResponseWriter::begin(v, Operation::Query, &mut streamed);
        w.result_head(res.token.as_deref(), &res.columns, &mut streamed).unwrap();
        for r in &res.rows {
            w.row(r.values.iter().map(|x| x.as_deref()), &mut streamed).unwrap();
        }
        w.finish_result(res.more, &mut streamed).unwrap();
        assert_eq!(streamed, response_bytes(v, &Response::Query(res)).unwrap());

        // listSchemas / describeSchema
        let mut streamed = Vec::new();
        let mut w = ResponseWriter::begin(v, Operation::ListSchemas, &mut streamed);
        w.schema_name("/x", &mut streamed).unwrap();
        w.finish(&mut streamed).unwrap();
        assert_eq!(streamed, response_bytes(v, &Response::ListSchemas { schema_names: vec![s("/x")] }).unwrap());
    }
}

/// The `Entry` that `entry_row(columns, name, values)` stands for (values zipped with columns).
fn entry_of(columns: &[&str], name: &str, values: &[Option<&str>]) -> Entry {
    Entry {
        name: s(name),
        attributes: columns
            .iter()
            .zip(values)
            .map(|(c, v)| Attribute { name: s(c), attr_type: None, value: v.map(s) })
            .collect(),
    }
}

#[test]
fn entry_rows_write_the_same_bytes_as_entries() {
    let columns = ["size", "owner", "n<o>te&'\""];
    let rows: [(&str, Vec<Option<&str>>); 4] = [
        ("/a/f1", vec![Some("10"), None, Some("<&>\"' \r\n\t\u{FFFD}\u{1F600}")]),
        ("/a/<f&2>", vec![Some("")]),
        ("/a/f3", vec![Some("1"), Some("2"), Some("3"), Some("ignored: no column")]),
        ("/a/f4", vec![]),
    ];
    let prepared = EntryColumns::new(&columns);
    assert_eq!(prepared.len(), 3);
    for v in [V11, V12] {
        let (mut by_row, mut by_entry) = (Vec::new(), Vec::new());
        let mut wr = ResponseWriter::begin(v, Operation::GetAttributes, &mut by_row);
        let mut we = ResponseWriter::begin(v, Operation::GetAttributes, &mut by_entry);
        for (name, values) in &rows {
            wr.entry_row(&prepared, name, values.iter().copied(), &mut by_row).unwrap();
            we.entry(&entry_of(&columns, name, values), &mut by_entry).unwrap();
        }
        wr.finish(&mut by_row).unwrap();
        we.finish(&mut by_entry).unwrap();
        assert_eq!(String::from_utf8(by_row).unwrap(), String::from_utf8(by_entry).unwrap());
    }
}

/// Values a producer formatted itself go in without the escaping scan and come out as the same
/// bytes as the same text passed as ordinary values.
#[test]
fn formatted_values_write_the_same_bytes() {
    let columns = EntryColumns::new(&["i", "f", "t", "m", "s", "n"]);
    let texts = ["-42", "1e-05", "2026-12-02 13:05:09.000250", "rwxr-x---", "a<b", "x"];
    let mixed = [
        RowValue::Formatted(texts[0]),
        RowValue::Formatted(texts[1]),
        RowValue::Formatted(texts[2]),
        RowValue::Formatted(texts[3]),
        RowValue::Text(Some(texts[4])),
        RowValue::Text(None),
    ];
    let plain: Vec<Option<&str>> = mixed.iter().map(|v| v.text()).collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut wa = ResponseWriter::begin(V11, Operation::GetAttributes, &mut a);
    let mut wb = ResponseWriter::begin(V11, Operation::GetAttributes, &mut b);
    wa.entry_row(&columns, "/e", mixed, &mut a).unwrap();
    wb.entry_row(&columns, "/e", plain, &mut b).unwrap();
    assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
}

#[test]
fn entry_rows_refuse_what_entries_refuse_and_leave_no_partial_output() {
    let unserializable = |e: SoapError| match e {
        SoapError::Unserializable(m) => m,
        other => panic!("expected Unserializable, got {other:?}"),
    };
    let columns = EntryColumns::new(&["a", "b"]);
    let mut out = Vec::new();
    let mut w = ResponseWriter::begin(V11, Operation::GetAttributes, &mut out);
    let before = out.len();
    let m = unserializable(w.entry_row(&columns, "/e", [Some("ok"), Some("x\u{1}")], &mut out).unwrap_err());
    assert!(m.contains("'entry/attribute/value'") && m.contains("U+0001"), "{m}");
    let m = unserializable(w.entry_row(&columns, "/e\u{FFFE}", [Some("ok")], &mut out).unwrap_err());
    assert!(m.contains("'entry/name'") && m.contains("U+FFFE"), "{m}");
    assert_eq!(out.len(), before, "a refused entry leaves no partial output");

    // A column name XML cannot carry fails on the first entry, with the message `entry` gives;
    // without entries it is never written, so the response is fine.
    let bad = ["ok", "b\u{7}"];
    let columns = EntryColumns::new(&bad);
    let by_row = unserializable(w.entry_row(&columns, "/e", [Some("1"), Some("2")], &mut out).unwrap_err());
    let by_entry = unserializable(w.entry(&entry_of(&bad, "/e", &[Some("1"), Some("2")]), &mut out).unwrap_err());
    assert_eq!(by_row, by_entry);
    assert!(by_row.contains("'entry/attribute/name'") && by_row.contains("U+0007"), "{by_row}");
    assert_eq!(out.len(), before);
    w.finish(&mut out).unwrap();
    assert!(body_child(&out, V11).all("entry").is_empty());

    // Only getAttributes has entries.
    let mut out = Vec::new();
    let mut w = ResponseWriter::begin(V11, Operation::ListSchemas, &mut out);
    let before = out.len();
    assert!(w.entry_row(&EntryColumns::new(&["a"]), "/e", [Some("1")], &mut out).is_err());
    assert_eq!(out.len(), before);
}

/// Every pattern of values and nils over four columns, and every row length: a value and a nil
/// share their attribute's prepared start (a nil cuts it before `<value>`), which must not show
/// in the bytes.
#[test]
fn entry_rows_of_every_value_and_nil_pattern_write_what_entries_write() {
    let names = ["a", "b&", "c", "d"];
    let columns = EntryColumns::new(&names);
    let (mut by_row, mut by_entry) = (Vec::new(), Vec::new());
    let mut wr = ResponseWriter::begin(V11, Operation::GetAttributes, &mut by_row);
    let mut we = ResponseWriter::begin(V11, Operation::GetAttributes, &mut by_entry);
    for len in 0..=names.len() {
        for pattern in 0..1u32 << len {
            let values: Vec<Option<&str>> =
                (0..len).map(|i| (pattern >> i & 1 == 1).then_some(["1", "<x>", "", "z"][i])).collect();
            wr.entry_row(&columns, "/e", values.iter().copied(), &mut by_row).unwrap();
            we.entry(&entry_of(&names, "/e", &values), &mut by_entry).unwrap();
        }
    }
    wr.finish(&mut by_row).unwrap();
    we.finish(&mut by_entry).unwrap();
    assert_eq!(String::from_utf8(by_row).unwrap(), String::from_utf8(by_entry).unwrap());
}

/// A column name XML cannot carry fails only the rows that reach it: a shorter row is written
/// as `entry` writes it, and the columns before it are unaffected.
#[test]
fn an_unwritable_column_fails_only_rows_that_reach_it() {
    let names = ["a", "b", "c\u{FFFF}", "d"];
    let columns = EntryColumns::new(&names);
    assert_eq!(columns.len(), 4);
    let (mut by_row, mut by_entry) = (Vec::new(), Vec::new());
    let mut wr = ResponseWriter::begin(V12, Operation::GetAttributes, &mut by_row);
    let mut we = ResponseWriter::begin(V12, Operation::GetAttributes, &mut by_entry);
    for values in [vec![], vec![Some("1")], vec![None, Some("2&")]] {
        wr.entry_row(&columns, "/e", values.iter().copied(), &mut by_row).unwrap();
        we.entry(&entry_of(&names, "/e", &values), &mut by_entry).unwrap();
    }
    let before = by_row.len();
    let e = wr.entry_row(&columns, "/e", [Some("1"), Some("2"), None], &mut by_row).unwrap_err();
    assert!(matches!(&e, SoapError::Unserializable(m) if m.contains("U+FFFF")), "{e:?}");
    assert_eq!(by_row.len(), before);
    wr.finish(&mut by_row).unwrap();
    we.finish(&mut by_entry).unwrap();
    assert_eq!(String::from_utf8(by_row).unwrap(), String::from_utf8(by_entry).unwrap());
}

#[test]
fn streaming_writer_items_are_atomic_and_checked() {
    let mut out = Vec::new();
    let mut w = ResponseWriter::begin(V11, Operation::Query, &mut out);
    // rows before the head
    assert!(w.row([Some("a")], &mut out).is_err());
    // wrong item kind
    assert!(w.entry(&Entry::default(), &mut out).is_err());
    w.result_head(None, &["c"], &mut out).unwrap();
    w.row([Some("ok")], &mut out).unwrap();
    let before = out.len();
    let e = w.row([Some("fine"), Some("bad\u{2}")], &mut out).unwrap_err();
    assert!(matches!(e, SoapError::Unserializable(_)));
    assert_eq!(out.len(), before, "a failed row leaves no partial output");
    w.finish_result(false, &mut out).unwrap();
    let r = body_child(&out, V11);
    assert_eq!(r.child("result").all("row").len(), 1);

    let mut out = Vec::new();
    let w = ResponseWriter::begin(V11, Operation::NextQuery, &mut out);
    w.finish_result(false, &mut out).unwrap();
    let r = body_child(&out, V11);
    assert_eq!(r.child("result").child("more").text, "false");

    let mut out = Vec::new();
    let w = ResponseWriter::begin(V11, Operation::Query, &mut out);
    assert!(w.finish(&mut out).is_err(), "query results end with finish_result");
}

#[test]
fn written_requests_parse_back() {
    let reqs = vec![
        Request::Ping,
        Request::CreateSchema {
            schema_name: s("/a"),
            attributes: vec![
                Attribute::typed("x", "int"),
                Attribute { name: s("y"), attr_type: None, value: Some(s("d")) },
            ],
            plain: true,
        },
        Request::CreateEntry { schema_name: s("/a"), entries: sample_entries() },
        Request::SetAttributes { pattern: s("p"), condition: Some(s("a<b")), attributes: vec![Attribute::named("n")] },
        Request::Query { select: vec![s("a")], condition: None, order_by: Some(s("a")), page_size: Some(0) },
        Request::NextQuery { token: s("t"), page_size: None },
    ];
    for v in [V11, V12] {
        for r in &reqs {
            let mut out = Vec::new();
            write_request(v, r, &mut out).unwrap();
            let back = parse_request(&out, v, &Limits::default()).unwrap();
            assert_eq!(&back.request, r);
        }
    }
    let mut out = Vec::new();
    assert!(write_request(V11, &Request::EndQuery { token: s("\u{3}") }, &mut out).is_err());
    assert!(out.is_empty());
}
