//! The WSDL is well-formed, WS-I shaped, and agrees with the parser and the writers: every
//! request the schema allows parses, and every response written validates against the schema.

mod common;

use std::collections::HashMap;

use ardacat_soap::{
    Attribute, Entry, Fault, Limits, MDResult, Operation, Response, Row, SoapVersion, WSDL_PLACEHOLDER_ADDRESS,
    WSDL_TEMPLATE, fault_bytes, parse_request, response_bytes, wsdl_for,
};
use common::*;

const WSDL_NS: &str = "http://schemas.xmlsoap.org/wsdl/";
const XSD_NS: &str = "http://www.w3.org/2001/XMLSchema";

fn wsdl() -> Node {
    dom(WSDL_TEMPLATE.as_bytes())
}

fn names(nodes: &[&Node]) -> Vec<String> {
    nodes.iter().map(|n| n.attr(None, "name").unwrap().to_string()).collect()
}

#[test]
fn wsdl_is_well_formed_and_lists_exactly_our_operations() {
    let d = wsdl();
    assert_eq!((d.ns.as_deref(), d.name.as_str()), (Some(WSDL_NS), "definitions"));
    assert_eq!(d.attr(None, "targetNamespace"), Some(NS));
    let expected: Vec<String> = Operation::ALL.iter().map(|o| o.name().to_string()).collect();

    let port_type = d.child("portType");
    assert_eq!(names(&port_type.all("operation")), expected);

    let bindings = d.all("binding");
    assert_eq!(bindings.len(), 2);
    for (b, soap_ns) in
        bindings.iter().zip(["http://schemas.xmlsoap.org/wsdl/soap/", "http://schemas.xmlsoap.org/wsdl/soap12/"])
    {
        assert_eq!(b.child("binding").ns.as_deref(), Some(soap_ns));
        assert_eq!(b.child("binding").attr(None, "style"), Some("document"));
        assert_eq!(names(&b.all("operation")), expected);
        for (op, node) in Operation::ALL.iter().zip(b.all("operation")) {
            let so = node.child("operation");
            assert_eq!(so.ns.as_deref(), Some(soap_ns));
            assert_eq!(so.attr(None, "soapAction"), Some(op.soap_action()));
            for io in ["input", "output"] {
                assert_eq!(node.child(io).child("body").attr(None, "use"), Some("literal"));
            }
            let f = node.child("fault");
            assert_eq!(f.attr(None, "name"), Some("MetadataFault"));
            assert_eq!(f.child("fault").attr(None, "use"), Some("literal"));
        }
    }

    // One part per message, named "parameters" for inputs and outputs, referencing an element.
    let messages: HashMap<String, &Node> =
        d.all("message").into_iter().map(|m| (m.attr(None, "name").unwrap().to_string(), m)).collect();
    for op_node in port_type.all("operation") {
        let op = Operation::from_name(op_node.attr(None, "name").unwrap()).unwrap();
        for (io, element) in [("input", op.name()), ("output", op.response_name())] {
            let msg = op_node.child(io).attr(None, "message").unwrap().strip_prefix("tns:").unwrap();
            let parts = messages[msg].all("part");
            assert_eq!(parts.len(), 1);
            assert_eq!(parts[0].attr(None, "name"), Some("parameters"));
            assert_eq!(parts[0].attr(None, "element"), Some(format!("tns:{element}").as_str()));
            assert_eq!(parts[0].attr(None, "type"), None);
        }
        assert_eq!(op_node.child("fault").attr(None, "message"), Some("tns:MetadataFault"));
    }

    let schema = d.child("types").child("schema");
    assert_eq!(schema.ns.as_deref(), Some(XSD_NS));
    assert_eq!(schema.attr(None, "elementFormDefault"), Some("qualified"));
    assert_eq!(schema.attr(None, "targetNamespace"), Some(NS));

    let service = d.child("service");
    assert_eq!(service.attr(None, "name"), Some("MetadataCatalog"));
    let ports = service.all("port");
    assert_eq!(names(&ports), ["MetadataCatalogPort", "MetadataCatalogPort12"]);
    for p in ports {
        assert_eq!(p.child("address").attr(None, "location"), Some(WSDL_PLACEHOLDER_ADDRESS));
    }
}

#[test]
fn wsdl_for_sets_both_addresses() {
    let w = wsdl_for("https://md.example.org:8443/soap?x=1&y=\"2\"");
    assert!(!w.contains(WSDL_PLACEHOLDER_ADDRESS));
    let d = dom(w.as_bytes());
    for p in d.child("service").all("port") {
        assert_eq!(p.child("address").attr(None, "location"), Some("https://md.example.org:8443/soap?x=1&y=\"2\""));
    }
}

// ---- a miniature XSD model of the WSDL's schema, enough for our constructs ----

#[derive(Debug, Clone)]
struct Particle {
    name: String,
    ty: Option<String>,
    min: usize,
    max: Option<usize>,
    nillable: bool,
}

struct Schema {
    elements: HashMap<String, Vec<Particle>>,
    types: HashMap<String, Vec<Particle>>,
}

fn sequence_of(complex_type: &Node) -> Vec<Particle> {
    complex_type
        .child("sequence")
        .all("element")
        .into_iter()
        .map(|e| Particle {
            name: e.attr(None, "name").unwrap().to_string(),
            ty: e.attr(None, "type").map(str::to_string),
            min: e.attr(None, "minOccurs").map_or(1, |v| v.parse().unwrap()),
            max: match e.attr(None, "maxOccurs") {
                Some("unbounded") => None,
                Some(v) => Some(v.parse().unwrap()),
                None => Some(1),
            },
            nillable: e.attr(None, "nillable") == Some("true"),
        })
        .collect()
}

fn schema() -> Schema {
    let d = wsdl();
    let s = d.child("types").child("schema");
    let elements = s
        .all("element")
        .into_iter()
        .map(|e| (e.attr(None, "name").unwrap().to_string(), sequence_of(e.child("complexType"))))
        .collect();
    let types =
        s.all("complexType").into_iter().map(|t| (t.attr(None, "name").unwrap().to_string(), sequence_of(t))).collect();
    Schema { elements, types }
}

impl Schema {
    fn validate(&self, node: &Node, seq: &[Particle], path: &str) {
        let mut i = 0;
        for p in seq {
            let mut count = 0;
            while i < node.children.len() && node.children[i].name == p.name {
                let c = &node.children[i];
                assert_eq!(c.ns.as_deref(), Some(NS), "{path}/{}: must be qualified", p.name);
                self.validate_value(c, p, &format!("{path}/{}", p.name));
                count += 1;
                i += 1;
            }
            assert!(count >= p.min, "{path}: {} occurs {count} < {}", p.name, p.min);
            if let Some(max) = p.max {
                assert!(count <= max, "{path}: {} occurs {count} > {max}", p.name);
            }
        }
        assert_eq!(i, node.children.len(), "{path}: unexpected child {:?}", node.children.get(i).map(|c| &c.name));
    }

    fn validate_value(&self, node: &Node, p: &Particle, path: &str) {
        if node.is_nil() {
            assert!(p.nillable, "{path}: xsi:nil on a non-nillable element");
            assert!(node.children.is_empty() && node.text.is_empty());
            return;
        }
        let ty = p.ty.as_deref().unwrap();
        if let Some(t) = ty.strip_prefix("tns:") {
            self.validate(node, &self.types[t], path);
            return;
        }
        assert!(node.children.is_empty(), "{path}: simple type with children");
        match ty {
            "xsd:string" => {}
            "xsd:boolean" => assert!(["true", "false", "1", "0"].contains(&node.text.as_str()), "{path}"),
            "xsd:int" => assert!(node.text.parse::<i32>().is_ok(), "{path}: {:?}", node.text),
            "xsd:unsignedInt" => assert!(node.text.parse::<u32>().is_ok(), "{path}"),
            other => panic!("{path}: type {other} not handled by the test"),
        }
    }

    /// An instance of `seq` with every particle at `reps(min, max)` occurrences.
    fn instance(&self, seq: &[Particle], reps: &dyn Fn(&Particle) -> usize, out: &mut String) {
        for p in seq {
            for _ in 0..reps(p) {
                out.push_str(&format!("<{}>", p.name));
                match p.ty.as_deref().unwrap() {
                    t if t.starts_with("tns:") => self.instance(&self.types[&t[4..]], reps, out),
                    "xsd:boolean" => out.push_str("true"),
                    "xsd:unsignedInt" | "xsd:int" => out.push('7'),
                    _ => out.push('v'),
                }
                out.push_str(&format!("</{}>", p.name));
            }
        }
    }
}

#[test]
fn every_request_the_schema_allows_parses() {
    let sc = schema();
    let minimal = |p: &Particle| p.min;
    let maximal = |p: &Particle| p.max.unwrap_or(3).max(p.min);
    for op in Operation::ALL {
        let seq = &sc.elements[op.name()];
        for reps in [&minimal as &dyn Fn(&Particle) -> usize, &maximal] {
            let mut payload = String::new();
            sc.instance(seq, reps, &mut payload);
            for v in [SoapVersion::V11, SoapVersion::V12] {
                let body = format!(
                    "<e:Envelope xmlns:e=\"{}\"><e:Body><{op} xmlns=\"{NS}\">{payload}</{op}></e:Body></e:Envelope>",
                    env_ns(v)
                );
                let parsed = parse_request(body.as_bytes(), v, &Limits::default())
                    .unwrap_or_else(|e| panic!("{op}: {e}\n{body}"));
                assert_eq!(parsed.request.operation(), *op);
            }
        }
    }
}

fn sample_responses() -> Vec<Response> {
    let attrs = vec![Attribute::typed("a", "int"), Attribute::named("b"), Attribute::with_value("c", Some("v"))];
    let entries = vec![
        Entry {
            name: "e".into(),
            attributes: vec![Attribute::with_value("a", Some("1")), Attribute::with_value("b", None::<String>)],
        },
        Entry::default(),
    ];
    let result = MDResult {
        token: Some("t".into()),
        columns: vec!["c1".into(), "c2".into()],
        rows: vec![Row { values: vec![Some("x".into()), None] }, Row::default()],
        more: false,
    };
    vec![
        Response::Ping,
        Response::GetVersion { version: "1".into() },
        Response::CreateSchema,
        Response::DropSchema,
        Response::AddSchemaAttributes,
        Response::RemoveSchemaAttributes,
        Response::ListSchemas { schema_names: vec!["/a".into(), "/b".into()] },
        Response::ListSchemas { schema_names: vec![] },
        Response::DescribeSchema { attributes: attrs.clone() },
        Response::CreateEntry { created: 2 },
        Response::RemoveEntry { removed: 1 },
        Response::SetAttributes { updated: 0 },
        Response::GetAttributes { entries },
        Response::ClearAttributes { cleared: 5 },
        Response::ListAttributes { attributes: attrs },
        Response::Query(result.clone()),
        Response::Query(MDResult::default()),
        Response::NextQuery(result),
        Response::EndQuery,
        Response::IndexCreate,
        Response::IndexRemove,
        Response::IndexList {
            indexes: vec![
                ardacat_soap::Index { name: "by_run".into(), attribute_names: vec!["run".into(), "FILE".into()] },
                ardacat_soap::Index::default(),
            ],
        },
        Response::IndexList { indexes: vec![] },
    ]
}

#[test]
fn every_response_written_validates_against_the_schema() {
    let sc = schema();
    let mut seen = std::collections::HashSet::new();
    for r in sample_responses() {
        seen.insert(r.operation());
        for v in [SoapVersion::V11, SoapVersion::V12] {
            let node = body_child(&response_bytes(v, &r).unwrap(), v);
            assert_eq!(node.ns.as_deref(), Some(NS));
            assert_eq!(node.name, r.operation().response_name());
            sc.validate(&node, &sc.elements[&node.name], &node.name);
        }
    }
    assert_eq!(seen.len(), Operation::ALL.len());
}

#[test]
fn fault_detail_validates_against_the_schema() {
    let sc = schema();
    for v in [SoapVersion::V11, SoapVersion::V12] {
        let f = body_child(&fault_bytes(v, &Fault::new(1, "NotExistsException", "/x: no such file", true)), v);
        let detail = f.child(if v == SoapVersion::V11 { "detail" } else { "Detail" });
        let md = detail.child("MetadataFault");
        assert_eq!(md.ns.as_deref(), Some(NS));
        sc.validate(md, &sc.elements["MetadataFault"], "MetadataFault");
    }
}
