//! Malformed, hostile and contract-violating requests: each must fail with the right error.

mod common;

use ardacat_soap::{
    FaultCode, LimitKind, Limits, Request, SoapError, SoapVersion, content_type_action, detect_version, parse_request,
};
use common::*;

const V11: SoapVersion = SoapVersion::V11;
const V12: SoapVersion = SoapVersion::V12;

fn java(payload: &str) -> String {
    envelope(Style::Java, V11, payload)
}

fn err_with(body: &[u8], limits: &Limits) -> SoapError {
    parse_request(body, V11, limits).expect_err("expected an error")
}

#[test]
fn billion_laughs_doctype_is_rejected() {
    let body = format!(
        r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<S:Envelope xmlns:S="{ENV11}"><S:Body><dropSchema xmlns="{NS}"><schemaName>&lol9;</schemaName></dropSchema></S:Body></S:Envelope>"#
    );
    let e = parse_err(&body, V11);
    assert_eq!(e, SoapError::DoctypeNotAllowed);
    assert_eq!(e.fault_code(), FaultCode::Client);
}

#[test]
fn external_entity_doctype_is_rejected() {
    let body = format!(
        "<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert_eq!(parse_err(&body, V11), SoapError::DoctypeNotAllowed);
}

#[test]
fn undeclared_entities_are_rejected() {
    let body = java("<P:dropSchema><P:schemaName>&lol9;</P:schemaName></P:dropSchema>");
    assert_eq!(parse_err(&body, V11), SoapError::UndeclaredEntity("lol9".into()));
    let body = java("<P:dropSchema><P:schemaName>&nbsp;</P:schemaName></P:dropSchema>");
    assert_eq!(parse_err(&body, V11), SoapError::UndeclaredEntity("nbsp".into()));
    // ... also inside attribute values
    let body = java("<P:dropSchema><P:schemaName x:a=\"&foo;\" xmlns:x=\"urn:x\">a</P:schemaName></P:dropSchema>");
    assert_eq!(parse_err(&body, V11), SoapError::UndeclaredEntity("foo".into()));
}

#[test]
fn processing_instructions_are_rejected() {
    let body = java("<P:dropSchema><P:schemaName>a<?php echo 1; ?></P:schemaName></P:dropSchema>");
    assert_eq!(parse_err(&body, V11), SoapError::ProcessingInstructionNotAllowed("php".into()));
    let body = format!(
        "<?xml version=\"1.0\"?><?xml-stylesheet href=\"x\"?><S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert_eq!(parse_err(&body, V11), SoapError::ProcessingInstructionNotAllowed("xml-stylesheet".into()));
}

#[test]
fn xml_declaration_must_come_first_and_be_utf8_xml10() {
    let ok = java("<P:ping/>");
    let body = format!(" {ok}");
    assert!(matches!(parse_err(&body, V11), SoapError::NotWellFormed(_)));
    let body = ok.replace("<?xml version=\"1.0\" ?>", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>");
    assert!(matches!(parse_err(&body, V11), SoapError::Encoding(_)));
    let body = ok.replace("<?xml version=\"1.0\" ?>", "<?xml version=\"1.1\"?>");
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidEnvelope(_)));
}

#[test]
fn deep_nesting_over_limit() {
    // In a header block (skipped content is still checked) ...
    let deep = "<a>".repeat(100) + &"</a>".repeat(100);
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Header><h xmlns=\"urn:h\">{deep}</h></S:Header><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert_eq!(parse_err(&body, V11), SoapError::LimitExceeded { kind: LimitKind::Depth, limit: 64 });
    // ... and very deep, unclosed: no recursion, so no stack overflow.
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Header>{}", "<x>".repeat(200_000));
    assert_eq!(parse_err(&body, V11), SoapError::LimitExceeded { kind: LimitKind::Depth, limit: 64 });
    // Just under a small custom limit is fine: Envelope(1) Body(2) wrapper(3) field(4).
    let body = java("<P:dropSchema><P:schemaName>a</P:schemaName></P:dropSchema>");
    let limits = Limits { max_depth: 4, ..Limits::default() };
    assert!(parse_request(body.as_bytes(), V11, &limits).is_ok());
    let limits = Limits { max_depth: 3, ..Limits::default() };
    assert_eq!(err_with(body.as_bytes(), &limits), SoapError::LimitExceeded { kind: LimitKind::Depth, limit: 3 });
}

#[test]
fn hundred_thousand_siblings_over_limit() {
    let names = "<P:entryName>/e</P:entryName>".repeat(100_000);
    let body = java(&format!("<P:getAttributes>{names}</P:getAttributes>"));
    let limits = Limits { max_elements: 50_000, ..Limits::default() };
    assert_eq!(
        err_with(body.as_bytes(), &limits),
        SoapError::LimitExceeded { kind: LimitKind::Elements, limit: 50_000 }
    );
    // Within the default limit the same request parses.
    match parse_ok(&body, V11) {
        Request::GetAttributes { entry_names, .. } => assert_eq!(entry_names.len(), 100_000),
        other => panic!("{other:?}"),
    }
    // Unknown siblings in a header block count too.
    let junk = "<j/>".repeat(100_000);
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Header><h xmlns=\"urn:h\">{junk}</h></S:Header><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert_eq!(
        err_with(body.as_bytes(), &limits),
        SoapError::LimitExceeded { kind: LimitKind::Elements, limit: 50_000 }
    );
}

#[test]
fn too_many_attributes_and_too_large_body() {
    let attrs: String = (0..100).map(|i| format!(" x:a{i}=\"v\"")).collect();
    let body = java(&format!("<P:dropSchema><P:schemaName xmlns:x=\"urn:x\"{attrs}>a</P:schemaName></P:dropSchema>"));
    assert_eq!(parse_err(&body, V11), SoapError::LimitExceeded { kind: LimitKind::Attributes, limit: 64 });

    let body = java("<P:ping/>");
    let limits = Limits { max_body_bytes: 10, ..Limits::default() };
    assert_eq!(err_with(body.as_bytes(), &limits), SoapError::BodyTooLarge { size: body.len(), limit: 10 });
}

#[test]
fn truncated_envelopes_fail_cleanly() {
    let body = envelope(
        Style::Gsoap,
        V11,
        "<P:createEntry><P:schemaName>/a</P:schemaName><P:entry><P:name>e</P:name><P:attribute><P:name>a</P:name><P:value>v&amp;<![CDATA[x]]></P:value></P:attribute></P:entry></P:createEntry>",
    );
    let trimmed = body.trim_end();
    assert!(parse(trimmed, V11).is_ok());
    for cut in 0..trimmed.len() {
        if !trimmed.is_char_boundary(cut) {
            continue;
        }
        let r = parse(&trimmed[..cut], V11);
        assert!(r.is_err(), "prefix of {cut} bytes parsed: {r:?}");
    }
    let cut = &trimmed[..trimmed.len() - "</SOAP-ENV:Envelope>".len()];
    assert!(matches!(parse_err(cut, V11), SoapError::NotWellFormed(m) if m.contains("truncated")));
    assert!(matches!(parse_err("", V11), SoapError::NotWellFormed(_)));
}

#[test]
fn wrong_envelope_namespace_is_version_mismatch() {
    let body12 = envelope(Style::Zeep, V12, "<P:ping/>");
    let e = parse_err(&body12, V11);
    assert_eq!(
        e,
        SoapError::VersionMismatch { expected: V11, found: "a SOAP 1.2 envelope".into(), found_version: Some(V12) }
    );
    assert_eq!(e.fault_code(), FaultCode::VersionMismatch);
    assert_eq!(e.fault_version(V11), V12);
    assert_eq!(e.http_status(V12), 500);

    let body = format!("<e:Envelope xmlns:e=\"urn:not-soap\"><e:Body><ping xmlns=\"{NS}\"/></e:Body></e:Envelope>");
    assert!(matches!(parse_err(&body, V12), SoapError::VersionMismatch { found_version: None, .. }));
    let body = format!("<Envelope><Body><ping xmlns=\"{NS}\"/></Body></Envelope>");
    assert!(matches!(parse_err(&body, V11), SoapError::VersionMismatch { found_version: None, .. }));
    // A root that is not an Envelope at all.
    let body = format!("<ping xmlns=\"{NS}\"/>");
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidEnvelope(_)));
}

#[test]
fn body_must_hold_exactly_one_operation() {
    let body = java("<P:ping/><ping xmlns=\"urn:ardacat:metadata:1\"/>");
    let e = parse_err(&body, V11);
    assert_eq!(e, SoapError::MultipleBodyElements("{urn:ardacat:metadata:1}ping".into()));
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body> <!-- nothing --> </S:Body></S:Envelope>");
    assert_eq!(parse_err(&body, V11), SoapError::EmptyBody);
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"></S:Envelope>");
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidEnvelope(_)));
    let body =
        format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body><S:Header/></S:Envelope>");
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidEnvelope(_)));
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body>text</S:Envelope>");
    assert_eq!(parse_err(&body, V11), SoapError::UnexpectedText("Envelope".into()));
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body>oops<ping xmlns=\"{NS}\"/></S:Body></S:Envelope>");
    assert_eq!(parse_err(&body, V11), SoapError::UnexpectedText("Body".into()));
}

#[test]
fn trailing_content_after_envelope() {
    let ok = java("<P:ping/>");
    assert!(parse(&format!("{ok}\n<!-- trailing comment -->\n"), V11).is_ok());
    assert!(matches!(parse_err(&format!("{ok}<x/>"), V11), SoapError::NotWellFormed(_)));
    assert!(matches!(parse_err(&format!("{ok}junk"), V11), SoapError::NotWellFormed(_)));
}

#[test]
fn non_utf8_and_forbidden_characters() {
    let mut body = java("<P:dropSchema><P:schemaName>X</P:schemaName></P:dropSchema>").into_bytes();
    let at = body.iter().position(|b| *b == b'X').unwrap();
    body[at] = 0xE9; // Latin-1 'é'
    assert!(matches!(err_with(&body, &Limits::default()), SoapError::Encoding(_)));
    body[at] = 0x01;
    assert!(matches!(err_with(&body, &Limits::default()), SoapError::NotWellFormed(_)));
    for r in ["&#1;", "&#0;", "&#xFFFE;", "&#xD800;", "&#X41;", "&#;"] {
        let body = java(&format!("<P:dropSchema><P:schemaName>{r}</P:schemaName></P:dropSchema>"));
        assert!(matches!(parse_err(&body, V11), SoapError::NotWellFormed(_)), "{r}");
    }
    let body = java("<P:dropSchema><P:schemaName>\u{FFFF}</P:schemaName></P:dropSchema>");
    assert!(matches!(parse_err(&body, V11), SoapError::NotWellFormed(_)));
    let body = java("<P:dropSchema><P:schemaName x:a=\"&#2;\" xmlns:x=\"urn:x\">a</P:schemaName></P:dropSchema>");
    assert!(matches!(parse_err(&body, V11), SoapError::NotWellFormed(_)));
    // Odd-length UTF-16.
    assert!(matches!(err_with(&[0xFF, 0xFE, 0x3C], &Limits::default()), SoapError::Encoding(_)));
}

#[test]
fn must_understand_headers() {
    for (v, mu) in [(V11, "1"), (V12, "true"), (V12, "1"), (V11, "true")] {
        let env = env_ns(v);
        let body = format!(
            "<S:Envelope xmlns:S=\"{env}\"><S:Header><w:Security xmlns:w=\"urn:wsse\" S:mustUnderstand=\"{mu}\"><x/></w:Security></S:Header>\
             <S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
        );
        let e = parse_err(&body, v);
        assert_eq!(e, SoapError::MustUnderstand { namespace: "urn:wsse".into(), local_name: "Security".into() });
        assert_eq!(e.fault_code(), FaultCode::MustUnderstand);
        assert_eq!(e.http_status(v), 500);
    }
    // The `next` actor / `ultimateReceiver` role are us.
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV12}\"><S:Header><w:X xmlns:w=\"urn:w\" S:mustUnderstand=\"true\" S:role=\"http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver\"/></S:Header>\
         <S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert!(matches!(parse_err(&body, V12), SoapError::MustUnderstand { .. }));
    // mustUnderstand in a foreign namespace is not SOAP's.
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Header><w:X xmlns:w=\"urn:w\" w:mustUnderstand=\"1\"/></S:Header><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert!(parse(&body, V11).is_ok());
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Header><w:X xmlns:w=\"urn:w\" S:mustUnderstand=\"yes\"/></S:Header><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"
    );
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidValue { .. }));
}

#[test]
fn unknown_operations() {
    let body = java("<P:frobnicate/>");
    let e = parse_err(&body, V11);
    assert_eq!(e, SoapError::UnknownOperation("{urn:ardacat:metadata:1}frobnicate".into()));
    assert!(e.to_string().contains("frobnicate"));
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"urn:other\"/></S:Body></S:Envelope>");
    assert_eq!(parse_err(&body, V11), SoapError::UnknownOperation("{urn:other}ping".into()));
    let body = format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping/></S:Body></S:Envelope>");
    assert!(matches!(parse_err(&body, V11), SoapError::UnknownOperation(m) if m.contains("must be in namespace")));
    // Case matters.
    let body = java("<P:Ping/>");
    assert!(matches!(parse_err(&body, V11), SoapError::UnknownOperation(_)));
}

#[test]
fn strict_children() {
    // missing required
    assert_eq!(
        parse_err(&java("<P:dropSchema/>"), V11),
        SoapError::MissingElement { parent: "dropSchema".into(), element: "schemaName".into() }
    );
    assert_eq!(
        parse_err(&java("<P:createEntry><P:schemaName>/s</P:schemaName><P:entry/></P:createEntry>"), V11),
        SoapError::MissingElement { parent: "entry".into(), element: "name".into() }
    );
    // unknown child
    let e = parse_err(&java("<P:dropSchema><P:schemaName>a</P:schemaName><P:force>1</P:force></P:dropSchema>"), V11);
    assert!(matches!(&e, SoapError::UnexpectedElement { found, .. } if found.ends_with("}force")), "{e}");
    assert_eq!(e.fault_code(), FaultCode::Client);
    assert_eq!(e.http_status(V11), 500);
    assert_eq!(e.http_status(V12), 400);
    // wrong order (xs:sequence)
    let e = parse_err(&java("<P:query><P:condition>c</P:condition><P:select>s</P:select></P:query>"), V11);
    assert!(matches!(&e, SoapError::UnexpectedElement { found, .. } if found.ends_with("}select")), "{e}");
    // a single-valued field twice
    let e = parse_err(
        &java("<P:dropSchema><P:schemaName>a</P:schemaName><P:schemaName>b</P:schemaName></P:dropSchema>"),
        V11,
    );
    assert!(matches!(e, SoapError::UnexpectedElement { .. }));
    // unqualified child (elementFormDefault="qualified")
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><t:dropSchema xmlns:t=\"{NS}\"><schemaName>a</schemaName></t:dropSchema></S:Body></S:Envelope>"
    );
    let e = parse_err(&body, V11);
    assert!(matches!(&e, SoapError::UnexpectedElement { expected, .. } if expected.contains("qualified")), "{e}");
    // child element inside a simple value
    let e = parse_err(&java("<P:dropSchema><P:schemaName>a<P:b/></P:schemaName></P:dropSchema>"), V11);
    assert!(matches!(e, SoapError::InvalidValue { .. }));
    // text in element-only content
    assert_eq!(
        parse_err(&java("<P:dropSchema>x<P:schemaName>a</P:schemaName></P:dropSchema>"), V11),
        SoapError::UnexpectedText("dropSchema".into())
    );
}

#[test]
fn bad_values() {
    for (payload, element) in [
        ("<P:createSchema><P:schemaName>a</P:schemaName><P:plain>yes</P:plain></P:createSchema>", "plain"),
        ("<P:nextQuery><P:token>t</P:token><P:pageSize>-1</P:pageSize></P:nextQuery>", "pageSize"),
        ("<P:nextQuery><P:token>t</P:token><P:pageSize>4294967296</P:pageSize></P:nextQuery>", "pageSize"),
        ("<P:nextQuery><P:token>t</P:token><P:pageSize>1e3</P:pageSize></P:nextQuery>", "pageSize"),
        ("<P:nextQuery><P:token>t</P:token><P:pageSize></P:pageSize></P:nextQuery>", "pageSize"),
    ] {
        let e = parse_err(&java(payload), V11);
        assert!(matches!(&e, SoapError::InvalidValue { element: el, .. } if el == element), "{payload}: {e}");
    }
    // Leading zeros, '+' and surrounding whitespace are valid xs:unsignedInt.
    assert_eq!(
        parse_ok(
            &java("<P:nextQuery><P:token>t</P:token><P:pageSize> +0004294967295 </P:pageSize></P:nextQuery>"),
            V11
        ),
        Request::NextQuery { token: "t".into(), page_size: Some(u32::MAX) }
    );
}

#[test]
fn xsi_nil_and_xsi_type_misuse() {
    let xsi = "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\"";
    // nil on a non-nillable element
    let e = parse_err(&java(&format!("<P:dropSchema><P:schemaName {xsi} xsi:nil=\"true\"/></P:dropSchema>")), V11);
    assert!(matches!(&e, SoapError::InvalidValue { reason, .. } if reason.contains("nillable")), "{e}");
    // nil with content
    let e = parse_err(
        &java(&format!(
            "<P:setAttributes><P:pattern>p</P:pattern><P:attribute><P:name>a</P:name><P:value {xsi} xsi:nil=\"true\">x</P:value></P:attribute></P:setAttributes>"
        )),
        V11,
    );
    assert!(matches!(&e, SoapError::InvalidValue { reason, .. } if reason.contains("empty")), "{e}");
    // bad nil value
    let e = parse_err(
        &java(&format!("<P:dropSchema><P:schemaName {xsi} xsi:nil=\"maybe\">a</P:schemaName></P:dropSchema>")),
        V11,
    );
    assert!(matches!(e, SoapError::InvalidValue { .. }));
    // wrong xsi:type
    let e = parse_err(
        &java(&format!("<P:dropSchema><P:schemaName {xsi} xsi:type=\"xsd:int\">1</P:schemaName></P:dropSchema>")),
        V11,
    );
    assert!(matches!(&e, SoapError::InvalidValue { reason, .. } if reason.contains("xsi:type")), "{e}");
    let e = parse_err(
        &envelope(
            Style::Gsoap,
            V11,
            "<P:createSchema><P:schemaName>a</P:schemaName><P:plain T=\"string\">true</P:plain></P:createSchema>",
        ),
        V11,
    );
    assert!(matches!(e, SoapError::InvalidValue { .. }));
    // xsi:type with an undeclared prefix
    let e = parse_err(
        &java(&format!("<P:dropSchema><P:schemaName {xsi} xsi:type=\"q:string\">1</P:schemaName></P:dropSchema>")),
        V11,
    );
    assert!(matches!(e, SoapError::InvalidValue { .. }));
}

#[test]
fn stray_attributes_on_payload() {
    let e = parse_err(&java("<P:dropSchema><P:schemaName force=\"1\">a</P:schemaName></P:dropSchema>"), V11);
    assert!(matches!(&e, SoapError::InvalidValue { reason, .. } if reason.contains("force")), "{e}");
    let body = format!(
        "<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\" S:mustUnderstand=\"1\"/></S:Body></S:Envelope>"
    );
    assert!(matches!(parse_err(&body, V11), SoapError::InvalidValue { .. }));
}

#[test]
fn not_well_formed() {
    for bad in [
        // unbound prefix
        format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><q:ping/></S:Body></S:Envelope>"),
        // mismatched end tag
        format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"></pong></S:Body></S:Envelope>"),
        // duplicate attribute
        format!("<S:Envelope xmlns:S=\"{ENV11}\" a=\"1\" a=\"2\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"),
        // '<' in an attribute value
        format!("<S:Envelope xmlns:S=\"{ENV11}\" a=\"<\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"),
        // unquoted attribute
        format!("<S:Envelope xmlns:S=\"{ENV11}\" a=1><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"),
        // bare ampersand
        java("<P:dropSchema><P:schemaName>a & b</P:schemaName></P:dropSchema>"),
        // '--' in a comment
        java("<P:dropSchema><P:schemaName>a<!-- x -- y --></P:schemaName></P:dropSchema>"),
        // character data before the root
        format!("x<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope>"),
        // unmatched end
        format!("<S:Envelope xmlns:S=\"{ENV11}\"><S:Body><ping xmlns=\"{NS}\"/></S:Body></S:Envelope></x>"),
    ] {
        let e = parse_err(&bad, V11);
        assert!(matches!(e, SoapError::NotWellFormed(_)), "{bad}\n=> {e:?}");
    }
}

#[test]
fn detect_version_dispatch() {
    let b11 = envelope(Style::Zeep, V11, "<P:ping/>");
    let b12 = envelope(Style::Zeep, V12, "<P:ping/>");
    assert_eq!(detect_version(Some("text/xml; charset=utf-8"), b11.as_bytes()), Ok(V11));
    assert_eq!(detect_version(Some("Text/XML"), b11.as_bytes()), Ok(V11));
    assert_eq!(
        detect_version(
            Some("application/soap+xml; charset=utf-8; action=\"urn:ardacat:metadata:1#ping\""),
            b12.as_bytes()
        ),
        Ok(V12)
    );
    assert_eq!(detect_version(None, b12.as_bytes()), Ok(V12));
    assert_eq!(detect_version(None, b11.as_bytes()), Ok(V11));
    // Content-Type and envelope disagree (the gSOAP / node-soap pitfalls).
    let e = detect_version(Some("text/xml"), b12.as_bytes()).unwrap_err();
    assert!(matches!(e, SoapError::VersionMismatch { expected: V11, found_version: Some(V12), .. }));
    assert_eq!(e.fault_version(V11), V12);
    let e = detect_version(Some("application/soap+xml"), b11.as_bytes()).unwrap_err();
    assert!(matches!(e, SoapError::VersionMismatch { expected: V12, found_version: Some(V11), .. }));
    // Unsupported media type.
    let e = detect_version(Some("application/json"), b11.as_bytes()).unwrap_err();
    assert_eq!(e, SoapError::UnsupportedMediaType("application/json".into()));
    assert_eq!(e.http_status(V11), 415);
    // Undecidable bodies fall back and leave the precise error to parse_request.
    assert_eq!(detect_version(Some("text/xml"), b"\xff\xfe garbage"), Ok(V11));
    assert_eq!(detect_version(None, b"not xml"), Ok(V11));
    assert_eq!(detect_version(None, b"<!DOCTYPE x><x/>"), Ok(V11));
    assert!(matches!(
        detect_version(None, b"<e:Envelope xmlns:e=\"urn:x\"/>"),
        Err(SoapError::VersionMismatch { found_version: None, .. })
    ));
    assert_eq!(content_type_action("application/soap+xml; charset=utf-8; action=\"urn:a#b\""), Some("urn:a#b"));
    assert_eq!(content_type_action("application/soap+xml;action=urn:a#b"), Some("urn:a#b"));
    assert_eq!(content_type_action("text/xml; charset=utf-8"), None);
}

#[test]
fn soap_action_lookup() {
    use ardacat_soap::Operation;
    assert_eq!(Operation::from_soap_action("\"urn:ardacat:metadata:1#getAttributes\""), Some(Operation::GetAttributes));
    assert_eq!(Operation::from_soap_action("urn:ardacat:metadata:1#query"), Some(Operation::Query));
    assert_eq!(Operation::from_soap_action("\"\""), None);
    assert_eq!(Operation::from_soap_action("urn:other#ping"), None);
    for op in Operation::ALL {
        assert_eq!(Operation::from_soap_action(op.soap_action()), Some(*op));
        assert_eq!(Operation::from_name(op.name()), Some(*op));
        assert_eq!(op.response_name(), format!("{}Response", op.name()));
    }
}
