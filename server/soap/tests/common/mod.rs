//! Envelope builders in the byte styles of real toolkits (dds-soap.md §3.2).
#![allow(dead_code)]

use ardacat_soap::{Limits, ParsedRequest, Request, SoapError, SoapVersion, parse_request};

pub const NS: &str = "urn:ardacat:metadata:1";
pub const ENV11: &str = "http://schemas.xmlsoap.org/soap/envelope/";
pub const ENV12: &str = "http://www.w3.org/2003/05/soap-envelope";

pub fn env_ns(v: SoapVersion) -> &'static str {
    match v {
        SoapVersion::V11 => ENV11,
        SoapVersion::V12 => ENV12,
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Style {
    /// Python zeep: single-quoted declaration plus newline, `soap-env:` prefix, payload prefix
    /// `ns0` declared on the wrapper.
    Zeep,
    /// gSOAP: `SOAP-ENV`, `SOAP-ENC`, `xsi`, `xsd`, `ns1` all declared on the Envelope, an
    /// empty Header is not sent, pretty-printed with newlines; simple elements may carry
    /// `xsi:type`.
    Gsoap,
    /// JAX-WS / .NET: `S:` prefix, default namespace on the payload wrapper.
    Java,
}

pub const STYLES: [Style; 3] = [Style::Zeep, Style::Gsoap, Style::Java];

/// Renders a payload written with the pseudo-prefix `P:` (e.g. `<P:ping/>`) in a style.
/// In the gSOAP style, `<P:x T="string">` adds `xsi:type="xsd:string"`; other styles drop `T`.
pub fn envelope(style: Style, v: SoapVersion, payload: &str) -> String {
    let env = env_ns(v);
    match style {
        Style::Zeep => {
            let p = payload.replacen('>', &format!(" xmlns:ns0=\"{NS}\">"), 1);
            let p = fix_empty_decl(&p);
            let p = p.replace("<P:", "<ns0:").replace("</P:", "</ns0:");
            let p = strip_t(&p);
            format!(
                "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"{env}\"><soap-env:Body>{p}</soap-env:Body></soap-env:Envelope>"
            )
        }
        Style::Gsoap => {
            let p = payload.replace("<P:", "<ns1:").replace("</P:", "</ns1:");
            let p = p
                .replace(" T=\"string\"", " xsi:type=\"xsd:string\"")
                .replace(" T=\"boolean\"", " xsi:type=\"xsd:boolean\"")
                .replace(" T=\"unsignedInt\"", " xsi:type=\"xsd:unsignedInt\"");
            let enc = match v {
                SoapVersion::V11 => "http://schemas.xmlsoap.org/soap/encoding/",
                SoapVersion::V12 => "http://www.w3.org/2003/05/soap-encoding",
            };
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"{env}\" xmlns:SOAP-ENC=\"{enc}\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\" xmlns:ns1=\"{NS}\">\n <SOAP-ENV:Body>\n  {p}\n </SOAP-ENV:Body>\n</SOAP-ENV:Envelope>\n"
            )
        }
        Style::Java => {
            let p = payload.replacen('>', &format!(" xmlns=\"{NS}\">"), 1);
            let p = fix_empty_decl(&p);
            let p = p.replace("<P:", "<").replace("</P:", "</");
            let p = strip_t(&p);
            format!("<?xml version=\"1.0\" ?><S:Envelope xmlns:S=\"{env}\"><S:Body>{p}</S:Body></S:Envelope>")
        }
    }
}

/// `<P:ping/ xmlns..>` → `<P:ping xmlns.../>` after the naive first-`>` insertion.
fn fix_empty_decl(p: &str) -> String {
    if let Some(idx) = p.find("/ xmlns") {
        let end = p[idx..].find('>').unwrap() + idx;
        let decl = &p[idx + 1..end];
        format!("{}{}/>{}", &p[..idx], decl, &p[end + 1..])
    } else {
        p.to_string()
    }
}

fn strip_t(p: &str) -> String {
    p.replace(" T=\"string\"", "").replace(" T=\"boolean\"", "").replace(" T=\"unsignedInt\"", "")
}

pub fn parse(body: &str, v: SoapVersion) -> Result<ParsedRequest, SoapError> {
    parse_request(body.as_bytes(), v, &Limits::default())
}

pub fn parse_ok(body: &str, v: SoapVersion) -> Request {
    match parse(body, v) {
        Ok(p) => p.request,
        Err(e) => panic!("parse failed: {e}\n--- body ---\n{body}"),
    }
}

pub fn parse_err(body: &str, v: SoapVersion) -> SoapError {
    match parse(body, v) {
        Ok(p) => panic!("expected an error, got {p:?}\n--- body ---\n{body}"),
        Err(e) => e,
    }
}

/// A tiny namespace-aware DOM for checking what the writers produce (test oracle, built on
/// quick-xml directly rather than on the crate's own parser).
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub ns: Option<String>,
    pub name: String,
    /// (namespace, local name, value)
    pub attrs: Vec<(Option<String>, String, String)>,
    pub children: Vec<Node>,
    pub text: String,
}

impl Node {
    pub fn child(&self, name: &str) -> &Node {
        self.children.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no <{name}> in <{}>", self.name))
    }
    pub fn all(&self, name: &str) -> Vec<&Node> {
        self.children.iter().filter(|c| c.name == name).collect()
    }
    pub fn attr(&self, ns: Option<&str>, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, l, _)| n.as_deref() == ns && l == name).map(|(_, _, v)| v.as_str())
    }
    pub fn is_nil(&self) -> bool {
        self.attr(Some("http://www.w3.org/2001/XMLSchema-instance"), "nil") == Some("true")
    }
}

pub fn dom(bytes: &[u8]) -> Node {
    use quick_xml::events::Event;
    use quick_xml::name::ResolveResult;
    use quick_xml::reader::NsReader;
    let text = std::str::from_utf8(bytes).expect("output is UTF-8");
    let mut r = NsReader::from_str(text);
    r.config_mut().expand_empty_elements = true;
    let mut stack: Vec<Node> = vec![Node::default()];
    let ns_of = |x: ResolveResult<'_>| match x {
        ResolveResult::Bound(n) => Some(n.0.to_string()),
        ResolveResult::Unbound => None,
        ResolveResult::Unknown(p) => panic!("unbound prefix {p}"),
    };
    loop {
        match r.read_event().expect("well-formed output") {
            Event::Start(e) => {
                let (ns, local) = r.resolver().resolve_element(e.name());
                let mut n = Node { ns: ns_of(ns), name: local.as_ref().to_string(), ..Default::default() };
                for a in e.attributes() {
                    let a = a.unwrap();
                    if a.key.as_namespace_binding().is_some() {
                        continue;
                    }
                    let (ans, al) = r.resolver().resolve_attribute(a.key);
                    let v = a.normalized_value(quick_xml::XmlVersion::Implicit1_0).unwrap().into_owned();
                    n.attrs.push((ns_of(ans), al.as_ref().to_string(), v));
                }
                stack.push(n);
            }
            Event::End(_) => {
                let n = stack.pop().unwrap();
                stack.last_mut().unwrap().children.push(n);
            }
            Event::Text(t) => stack.last_mut().unwrap().text.push_str(&t.xml10_content()),
            Event::CData(t) => stack.last_mut().unwrap().text.push_str(&t.xml10_content()),
            Event::GeneralRef(g) => {
                let s = match g.resolve_char_ref().unwrap() {
                    Some(c) => c.to_string(),
                    None => match &*g {
                        "lt" => "<".into(),
                        "gt" => ">".into(),
                        "amp" => "&".into(),
                        "apos" => "'".into(),
                        "quot" => "\"".into(),
                        other => panic!("entity {other}"),
                    },
                };
                stack.last_mut().unwrap().text.push_str(&s);
            }
            Event::Eof => break,
            Event::Decl(_) | Event::Comment(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(stack.len(), 1);
    let mut doc = stack.pop().unwrap();
    assert_eq!(doc.children.len(), 1);
    doc.children.pop().unwrap()
}

/// The single child of `Envelope/Body`, checking the envelope namespace.
pub fn body_child(bytes: &[u8], v: SoapVersion) -> Node {
    let env = dom(bytes);
    assert_eq!(env.ns.as_deref(), Some(env_ns(v)));
    assert_eq!(env.name, "Envelope");
    let body = env.child("Body");
    assert_eq!(body.ns.as_deref(), Some(env_ns(v)));
    assert_eq!(body.children.len(), 1);
    body.children[0].clone()
}
