//! Every operation, parsed from envelopes in zeep, gSOAP and JAX-WS/.NET byte styles, over
//! SOAP 1.1 and 1.2.

mod common;

use ardacat_soap::{Attribute, Entry, Operation, Request, SoapVersion};
use common::*;

fn s(v: &str) -> String {
    v.to_string()
}

fn attr(name: &str, ty: Option<&str>, value: Option<&str>) -> Attribute {
    Attribute { name: s(name), attr_type: ty.map(s), value: value.map(s) }
}

/// (payload with pseudo-prefix `P:`, expected request). Covers every operation, optional
/// fields present and absent, repeated fields zero/one/many times.
fn cases() -> Vec<(&'static str, Request)> {
    vec![
        ("<P:ping/>", Request::Ping),
        ("<P:ping></P:ping>", Request::Ping),
        ("<P:getVersion/>", Request::GetVersion),
        (
            "<P:createSchema><P:schemaName T=\"string\">/grid/files</P:schemaName>\
             <P:attribute><P:name T=\"string\">size</P:name><P:type T=\"string\">int</P:type></P:attribute>\
             <P:attribute><P:name T=\"string\">owner</P:name><P:type T=\"string\">varchar(32)</P:type></P:attribute>\
             <P:plain T=\"boolean\">true</P:plain></P:createSchema>",
            Request::CreateSchema {
                schema_name: s("/grid/files"),
                attributes: vec![attr("size", Some("int"), None), attr("owner", Some("varchar(32)"), None)],
                plain: true,
            },
        ),
        (
            "<P:createSchema><P:schemaName>/a</P:schemaName></P:createSchema>",
            Request::CreateSchema { schema_name: s("/a"), attributes: vec![], plain: false },
        ),
        (
            "<P:createSchema><P:schemaName>/a</P:schemaName><P:plain>0</P:plain></P:createSchema>",
            Request::CreateSchema { schema_name: s("/a"), attributes: vec![], plain: false },
        ),
        (
            "<P:dropSchema><P:schemaName>/a/b</P:schemaName></P:dropSchema>",
            Request::DropSchema { schema_name: s("/a/b") },
        ),
        (
            "<P:addSchemaAttributes><P:schemaName>/a</P:schemaName>\
             <P:attribute><P:name>x</P:name><P:type>float</P:type></P:attribute></P:addSchemaAttributes>",
            Request::AddSchemaAttributes { schema_name: s("/a"), attributes: vec![attr("x", Some("float"), None)] },
        ),
        (
            "<P:removeSchemaAttributes><P:schemaName>/a</P:schemaName>\
             <P:attributeName>x</P:attributeName><P:attributeName>y</P:attributeName></P:removeSchemaAttributes>",
            Request::RemoveSchemaAttributes { schema_name: s("/a"), attribute_names: vec![s("x"), s("y")] },
        ),
        ("<P:listSchemas/>", Request::ListSchemas { path: None }),
        ("<P:listSchemas><P:path>/grid</P:path></P:listSchemas>", Request::ListSchemas { path: Some(s("/grid")) }),
        (
            "<P:describeSchema><P:schemaName>/a</P:schemaName></P:describeSchema>",
            Request::DescribeSchema { schema_name: s("/a") },
        ),
        (
            "<P:createEntry><P:schemaName>/a</P:schemaName>\
             <P:entry><P:name>f1</P:name>\
               <P:attribute><P:name>size</P:name><P:value>10</P:value></P:attribute>\
               <P:attribute><P:name>owner</P:name><P:value xsi:nil=\"true\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"/></P:attribute>\
             </P:entry>\
             <P:entry><P:name>f2</P:name></P:entry></P:createEntry>",
            Request::CreateEntry {
                schema_name: s("/a"),
                entries: vec![
                    Entry {
                        name: s("f1"),
                        attributes: vec![attr("size", None, Some("10")), attr("owner", None, None)],
                    },
                    Entry { name: s("f2"), attributes: vec![] },
                ],
            },
        ),
        (
            "<P:removeEntry><P:pattern>/a/f*</P:pattern><P:condition>size &gt; 3</P:condition></P:removeEntry>",
            Request::RemoveEntry { pattern: s("/a/f*"), condition: Some(s("size > 3")) },
        ),
        (
            "<P:removeEntry><P:pattern>/a/f1</P:pattern></P:removeEntry>",
            Request::RemoveEntry { pattern: s("/a/f1"), condition: None },
        ),
        (
            "<P:setAttributes><P:pattern>/a/*</P:pattern>\
             <P:attribute><P:name>size</P:name><P:value>11</P:value></P:attribute>\
             <P:attribute><P:name>owner</P:name></P:attribute></P:setAttributes>",
            Request::SetAttributes {
                pattern: s("/a/*"),
                condition: None,
                attributes: vec![attr("size", None, Some("11")), attr("owner", None, None)],
            },
        ),
        (
            "<P:getAttributes><P:entryName>/a/f1</P:entryName><P:entryName>/a/f2</P:entryName>\
             <P:attributeName>size</P:attributeName></P:getAttributes>",
            Request::GetAttributes { entry_names: vec![s("/a/f1"), s("/a/f2")], attribute_names: vec![s("size")] },
        ),
        ("<P:getAttributes/>", Request::GetAttributes { entry_names: vec![], attribute_names: vec![] }),
        (
            "<P:clearAttributes><P:pattern>/a/f1</P:pattern><P:attributeName>size</P:attributeName></P:clearAttributes>",
            Request::ClearAttributes { pattern: s("/a/f1"), attribute_names: vec![s("size")] },
        ),
        (
            "<P:listAttributes><P:entryName>/a/f1</P:entryName></P:listAttributes>",
            Request::ListAttributes { entry_name: s("/a/f1") },
        ),
        (
            "<P:query><P:select>/a:size</P:select><P:select>/a:owner</P:select>\
             <P:condition>/a:size &lt; 10 and /a:owner = 'bob'</P:condition><P:orderBy>/a:size</P:orderBy>\
             <P:pageSize T=\"unsignedInt\">100</P:pageSize></P:query>",
            Request::Query {
                select: vec![s("/a:size"), s("/a:owner")],
                condition: Some(s("/a:size < 10 and /a:owner = 'bob'")),
                order_by: Some(s("/a:size")),
                page_size: Some(100),
            },
        ),
        (
            "<P:query><P:select>/a:size</P:select></P:query>",
            Request::Query { select: vec![s("/a:size")], condition: None, order_by: None, page_size: None },
        ),
        (
            "<P:nextQuery><P:token>q-1</P:token><P:pageSize> 50 </P:pageSize></P:nextQuery>",
            Request::NextQuery { token: s("q-1"), page_size: Some(50) },
        ),
        ("<P:nextQuery><P:token>q-1</P:token></P:nextQuery>", Request::NextQuery { token: s("q-1"), page_size: None }),
        ("<P:endQuery><P:token>q-1</P:token></P:endQuery>", Request::EndQuery { token: s("q-1") }),
        (
            "<P:indexCreate><P:schemaName>/a</P:schemaName><P:indexName>ix</P:indexName>\
             <P:attributeName>size</P:attributeName><P:attributeName>FILE</P:attributeName></P:indexCreate>",
            Request::IndexCreate {
                schema_name: s("/a"),
                index_name: s("ix"),
                attribute_names: vec![s("size"), s("FILE")],
            },
        ),
        (
            "<P:indexRemove><P:schemaName>/a</P:schemaName><P:indexName>ix</P:indexName></P:indexRemove>",
            Request::IndexRemove { schema_name: s("/a"), index_name: s("ix") },
        ),
        ("<P:indexList><P:schemaName>/a</P:schemaName></P:indexList>", Request::IndexList { schema_name: s("/a") }),
    ]
}

#[test]
fn every_operation_is_covered() {
    let covered: std::collections::HashSet<Operation> = cases().iter().map(|(_, r)| r.operation()).collect();
    for op in Operation::ALL {
        assert!(covered.contains(op), "no parse case for {op}");
    }
}

#[test]
fn all_operations_all_styles_both_versions() {
    for (payload, expected) in cases() {
        for style in STYLES {
            for v in [SoapVersion::V11, SoapVersion::V12] {
                let body = envelope(style, v, payload);
                let got = parse_ok(&body, v);
                assert_eq!(got, expected, "style {style:?}, SOAP {v}\n{body}");
            }
        }
    }
}

/// Byte-exact envelopes as zeep 4.3 emits them for this WSDL (captured with
/// `Client.create_message`).
#[test]
fn zeep_captured_envelopes() {
    let create_schema = "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap-env:Body><ns0:createSchema xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:schemaName>/s</ns0:schemaName><ns0:attribute><ns0:name>a</ns0:name><ns0:type>int</ns0:type></ns0:attribute><ns0:attribute><ns0:name>b</ns0:name></ns0:attribute><ns0:plain>true</ns0:plain></ns0:createSchema></soap-env:Body></soap-env:Envelope>";
    assert_eq!(
        parse_ok(create_schema, SoapVersion::V11),
        Request::CreateSchema {
            schema_name: s("/s"),
            attributes: vec![attr("a", Some("int"), None), attr("b", None, None)],
            plain: true
        }
    );
    let create_entry = "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap-env:Body><ns0:createEntry xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:schemaName>/s</ns0:schemaName><ns0:entry><ns0:name>e1</ns0:name><ns0:attribute><ns0:name>a</ns0:name><ns0:value>x &amp; &lt;y&gt;</ns0:value></ns0:attribute></ns0:entry></ns0:createEntry></soap-env:Body></soap-env:Envelope>";
    assert_eq!(
        parse_ok(create_entry, SoapVersion::V11),
        Request::CreateEntry {
            schema_name: s("/s"),
            entries: vec![Entry { name: s("e1"), attributes: vec![attr("a", None, Some("x & <y>"))] }]
        }
    );
    let next_query_12 = "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"http://www.w3.org/2003/05/soap-envelope\"><soap-env:Body><ns0:nextQuery xmlns:ns0=\"urn:ardacat:metadata:1\"><ns0:token>t</ns0:token><ns0:pageSize>5</ns0:pageSize></ns0:nextQuery></soap-env:Body></soap-env:Envelope>";
    assert_eq!(parse_ok(next_query_12, SoapVersion::V12), Request::NextQuery { token: s("t"), page_size: Some(5) });
}

/// suds binds the envelope namespace to two prefixes and sends an empty Header.
#[test]
fn suds_style_two_prefixes_empty_header() {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><SOAP-ENV:Envelope xmlns:ns0=\"{ENV11}\" xmlns:ns1=\"{NS}\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:SOAP-ENV=\"{ENV11}\"><SOAP-ENV:Header/><ns0:Body><ns1:dropSchema><ns1:schemaName>/x</ns1:schemaName></ns1:dropSchema></ns0:Body></SOAP-ENV:Envelope>"
    );
    let p = parse(&body, SoapVersion::V11).unwrap();
    assert_eq!(p.request, Request::DropSchema { schema_name: s("/x") });
    assert!(p.headers.is_empty());
}

/// node-soap: `soap:` prefix, an unused `tns` declaration, double spaces between attributes.
#[test]
fn node_soap_style() {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><soap:Envelope xmlns:soap=\"{ENV11}\"  xmlns:tns=\"{NS}\"><soap:Body><endQuery xmlns=\"{NS}\"><token>abc</token></endQuery></soap:Body></soap:Envelope>"
    );
    assert_eq!(parse_ok(&body, SoapVersion::V11), Request::EndQuery { token: s("abc") });
}

#[test]
fn prefix_rebinding_and_default_namespace_switches() {
    // `a` is the envelope prefix on the Envelope and rebound to our namespace on the wrapper;
    // the default namespace is undeclared for an ignored header block.
    let body = format!(
        "<a:Envelope xmlns:a=\"{ENV11}\" xmlns=\"urn:other\"><a:Header><h xmlns=\"\">x</h></a:Header><a:Body>\
         <a:listAttributes xmlns:a=\"{NS}\"><a:entryName>/e</a:entryName></a:listAttributes></a:Body></a:Envelope>"
    );
    let p = parse(&body, SoapVersion::V11).unwrap();
    assert_eq!(p.request, Request::ListAttributes { entry_name: s("/e") });
    assert_eq!(p.headers.len(), 1);
    assert_eq!(p.headers[0].namespace, None);
    assert_eq!(p.headers[0].local_name, "h");

    // Mixed: prefixed wrapper, children through a default namespace declared on the wrapper.
    let body = format!(
        "<e:Envelope xmlns:e=\"{ENV12}\"><e:Body><t:describeSchema xmlns:t=\"{NS}\" xmlns=\"{NS}\"><schemaName>/s</schemaName></t:describeSchema></e:Body></e:Envelope>"
    );
    assert_eq!(parse_ok(&body, SoapVersion::V12), Request::DescribeSchema { schema_name: s("/s") });
}

#[test]
fn xsi_nil_forms() {
    for (decl, val) in [("true", None), ("1", None), ("false", Some("")), ("0", Some(""))] {
        let payload = format!(
            "<P:setAttributes><P:pattern>/p</P:pattern><P:attribute><P:name>a</P:name><P:value xmlns:i=\"http://www.w3.org/2001/XMLSchema-instance\" i:nil=\"{decl}\"></P:value></P:attribute></P:setAttributes>"
        );
        let body = envelope(Style::Java, SoapVersion::V11, &payload);
        assert_eq!(
            parse_ok(&body, SoapVersion::V11),
            Request::SetAttributes { pattern: s("/p"), condition: None, attributes: vec![attr("a", None, val)] },
            "xsi:nil={decl}"
        );
    }
}

#[test]
fn cdata_entities_char_refs_comments_whitespace() {
    let payload = "<P:removeEntry>\n  <!-- a comment -->\n  <P:pattern><![CDATA[/a/<b>&]]>-x&#x41;&#66;&lt;&gt;&amp;&quot;&apos;<!-- c --> é</P:pattern>\n  <P:condition>  keep  spaces\t</P:condition>\n</P:removeEntry>";
    for style in STYLES {
        let body = envelope(style, SoapVersion::V11, payload);
        assert_eq!(
            parse_ok(&body, SoapVersion::V11),
            Request::RemoveEntry { pattern: s("/a/<b>&-xAB<>&\"' é"), condition: Some(s("  keep  spaces\t")) }
        );
    }
}

#[test]
fn line_ends_are_normalized_but_char_ref_cr_is_kept() {
    let body = envelope(Style::Java, SoapVersion::V11, "<P:endQuery><P:token>a\r\nb\rc&#13;d</P:token></P:endQuery>");
    assert_eq!(parse_ok(&body, SoapVersion::V11), Request::EndQuery { token: s("a\nb\nc\rd") });
}

#[test]
fn empty_string_values() {
    let body = envelope(Style::Zeep, SoapVersion::V11, "<P:dropSchema><P:schemaName/></P:dropSchema>");
    assert_eq!(parse_ok(&body, SoapVersion::V11), Request::DropSchema { schema_name: s("") });
}

#[test]
fn utf8_bom_and_utf16_bodies() {
    let body = envelope(Style::Java, SoapVersion::V11, "<P:dropSchema><P:schemaName>/ü</P:schemaName></P:dropSchema>");
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(body.as_bytes());
    let expected = Request::DropSchema { schema_name: s("/ü") };
    let limits = ardacat_soap::Limits::default();
    assert_eq!(ardacat_soap::parse_request(&bom, SoapVersion::V11, &limits).unwrap().request, expected);

    let utf16 = body.replace("<?xml version=\"1.0\" ?>", "<?xml version=\"1.0\" encoding=\"UTF-16\"?>");
    for be in [false, true] {
        let mut b: Vec<u8> = if be { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        for u in utf16.encode_utf16() {
            b.extend_from_slice(&if be { u.to_be_bytes() } else { u.to_le_bytes() });
        }
        assert_eq!(ardacat_soap::parse_request(&b, SoapVersion::V11, &limits).unwrap().request, expected);
    }
}

#[test]
fn ignored_headers_are_reported() {
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Header>\
           <t:Trace xmlns:t=\"urn:trace\">id-1</t:Trace>\
           <t:Other xmlns:t=\"urn:trace\" S:mustUnderstand=\"1\" S:actor=\"urn:someone-else\"><x/></t:Other>\
           <t:Plain xmlns:t=\"urn:trace\" S:mustUnderstand=\"0\"/>\
         </S:Header><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    let p = parse(&body, SoapVersion::V11).unwrap();
    assert_eq!(p.request, Request::Ping);
    let names: Vec<_> = p.headers.iter().map(|h| (h.local_name.as_str(), h.must_understand)).collect();
    assert_eq!(names, vec![("Trace", false), ("Other", true), ("Plain", false)]);
    assert_eq!(p.headers[0].namespace.as_deref(), Some("urn:trace"));

    // SOAP 1.2: role none and an unknown role are not ours.
    let body = format!(
        "<e:Envelope xmlns:e=\"{ENV12}\"><e:Header>\
           <t:A xmlns:t=\"urn:t\" e:mustUnderstand=\"true\" e:role=\"http://www.w3.org/2003/05/soap-envelope/role/none\"/>\
           <t:B xmlns:t=\"urn:t\" e:mustUnderstand=\"1\" e:role=\"urn:elsewhere\"/>\
         </e:Header><e:Body><ping xmlns=\"{NS}\"/></e:Body></e:Envelope>"
    );
    assert_eq!(parse(&body, SoapVersion::V12).unwrap().headers.len(), 2);
}

#[test]
fn foreign_attributes_are_ignored_xsi_type_of_complex_types_accepted() {
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\" xmlns:x=\"urn:vendor\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:t=\"{NS}\">\
         <S:Body x:trace=\"1\"><t:createEntry xml:lang=\"en\"><t:schemaName x:hint=\"y\">/s</t:schemaName>\
         <t:entry xsi:type=\"t:Entry\"><t:name>e</t:name><t:attribute xsi:type=\"t:Attribute\"><t:name>a</t:name>\
         <t:value xsi:type=\"xsd:string\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">v</t:value></t:attribute></t:entry>\
         </t:createEntry></S:Body></S:Envelope>"
    );
    assert_eq!(
        parse_ok(&body, SoapVersion::V11),
        Request::CreateEntry {
            schema_name: s("/s"),
            entries: vec![Entry { name: s("e"), attributes: vec![attr("a", None, Some("v"))] }]
        }
    );
}

#[test]
fn style_renderings_look_right() {
    let p = "<P:createSchema><P:schemaName T=\"string\">/a</P:schemaName><P:plain T=\"boolean\">1</P:plain></P:createSchema>";
    let g = envelope(Style::Gsoap, SoapVersion::V11, p);
    assert!(g.contains("<ns1:schemaName xsi:type=\"xsd:string\">/a</ns1:schemaName>"), "{g}");
    assert!(g.contains("xmlns:SOAP-ENC="), "{g}");
    let z = envelope(Style::Zeep, SoapVersion::V12, "<P:ping/>");
    assert!(z.contains("<ns0:ping xmlns:ns0=\"urn:ardacat:metadata:1\"/>"), "{z}");
    assert!(z.starts_with("<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope"), "{z}");
    let j = envelope(Style::Java, SoapVersion::V11, p);
    assert!(
        j.contains("<createSchema xmlns=\"urn:ardacat:metadata:1\"><schemaName>/a</schemaName><plain>1</plain>"),
        "{j}"
    );
}

/// Requests as gSOAP 2.8 sends them (recorded from a `wsdl2h`/`soapcpp2` client generated from
/// `wsdl/ardacat.wsdl`: `soapcpp2 -1` for SOAP 1.1, `-2` for SOAP 1.2).
#[test]
fn gsoap_recorded_requests() {
    let create_entry = Request::CreateEntry {
        schema_name: s("/a"),
        entries: vec![Entry {
            name: s("/a/f1 & <x>"),
            attributes: vec![attr("size", None, Some("10")), attr("owner", Some("varchar"), None)],
        }],
    };
    let query = Request::Query {
        select: vec![s("/a:x"), s("/a:y")],
        condition: Some(s("/a:x > 1")),
        order_by: None,
        page_size: Some(25),
    };
    for (file, v, expected) in [
        (include_str!("fixtures/gsoap-2.8-soap11-createEntry.xml"), SoapVersion::V11, create_entry.clone()),
        (include_str!("fixtures/gsoap-2.8-soap11-query.xml"), SoapVersion::V11, query.clone()),
        (
            include_str!("fixtures/gsoap-2.8-soap11-getAttributes.xml"),
            SoapVersion::V11,
            Request::GetAttributes { entry_names: vec![s("/a/e")], attribute_names: vec![] },
        ),
        (include_str!("fixtures/gsoap-2.8-soap11-ping.xml"), SoapVersion::V11, Request::Ping),
        (include_str!("fixtures/gsoap-2.8-soap12-createEntry.xml"), SoapVersion::V12, create_entry),
        (include_str!("fixtures/gsoap-2.8-soap12-query.xml"), SoapVersion::V12, query),
    ] {
        assert_eq!(ardacat_soap::detect_version(Some(v.media_type()), file.as_bytes()), Ok(v));
        assert_eq!(parse_ok(file, v), expected);
    }
}

/// Requests as JAX-WS RI 2.3 sends them (recorded from a `wsimport` client generated from
/// `wsdl/ardacat.wsdl`; the SOAP 1.2 port is ignored by wsimport without `-extension`).
#[test]
fn jaxws_recorded_requests() {
    for (file, expected) in [
        (
            include_str!("fixtures/jaxws-2.3-soap11-createEntry.xml"),
            Request::CreateEntry {
                schema_name: s("/a"),
                entries: vec![Entry {
                    name: s("/a/f1 & <x>"),
                    attributes: vec![attr("size", None, Some("10")), attr("owner", None, None)],
                }],
            },
        ),
        (
            include_str!("fixtures/jaxws-2.3-soap11-query.xml"),
            Request::Query {
                select: vec![s("/a:x"), s("/a:y")],
                condition: Some(s("/a:x > 1")),
                order_by: None,
                page_size: Some(25),
            },
        ),
        (
            include_str!("fixtures/jaxws-2.3-soap11-getAttributes.xml"),
            Request::GetAttributes { entry_names: vec![s("/a/e")], attribute_names: vec![] },
        ),
        (include_str!("fixtures/jaxws-2.3-soap11-ping.xml"), Request::Ping),
    ] {
        assert_eq!(parse_ok(file, SoapVersion::V11), expected);
    }
}
