//! Message generators for the DDS tests and benchmarks: any [`Request`] rendered in the byte
//! styles of the recorded toolkits (zeep: compact, `ns0` on the wrapper; gSOAP: every
//! namespace on the Envelope, one element per line indented with tabs, as in
//! `fixtures/gsoap-*`; JAX-WS: `S:` prefix, default namespace on the wrapper), plus the
//! benchmark families (`setAttributes` with N attributes, `createEntry` with N entries) with a
//! chosen percentage of values changed. `tests/dds_gen.rs` checks that every rendering parses
//! back to its request.
#![allow(dead_code)]

use ardacat_soap::{Attribute, Entry, Request, SoapVersion};

pub const NS: &str = "urn:ardacat:metadata:1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Zeep,
    Gsoap,
    Jaxws,
}

pub const STYLES: [Style; 3] = [Style::Zeep, Style::Gsoap, Style::Jaxws];

/// How values are written: plainly escaped, or (where a value needs escaping) with CDATA
/// sections and character references as some toolkits do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enc {
    Plain,
    Fancy,
}

/// A payload tree: an element with children, or a simple element with text (`None` =
/// `xsi:nil="true"`).
#[derive(Debug, Clone)]
pub enum N {
    E(&'static str, Vec<N>),
    L(&'static str, Option<String>),
}

fn esc(s: &str, enc: Enc, out: &mut String) {
    if enc == Enc::Fancy && s.contains(['<', '&']) && !s.contains("]]>") && !s.contains('\r') {
        out.push_str("<![CDATA[");
        out.push_str(s);
        out.push_str("]]>");
        return;
    }
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            '"' if enc == Enc::Fancy => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

fn render_node(n: &N, style: Style, enc: Enc, depth: usize, out: &mut String) {
    let (p, indent) = match style {
        Style::Zeep => ("ns0:", false),
        Style::Gsoap => ("ns1:", true),
        Style::Jaxws => ("", false),
    };
    if indent {
        out.push('\n');
        for _ in 0..depth {
            out.push('\t');
        }
    }
    match n {
        N::E(name, kids) => {
            out.push_str(&format!("<{p}{name}>"));
            for k in kids {
                render_node(k, style, enc, depth + 1, out);
            }
            if indent && !kids.is_empty() {
                out.push('\n');
                for _ in 0..depth {
                    out.push('\t');
                }
            }
            out.push_str(&format!("</{p}{name}>"));
        }
        N::L(name, Some(text)) => {
            out.push_str(&format!("<{p}{name}>"));
            esc(text, enc, out);
            out.push_str(&format!("</{p}{name}>"));
        }
        N::L(name, None) => match style {
            Style::Gsoap => out.push_str(&format!("<{p}{name} xsi:nil=\"true\"/>")),
            _ => out.push_str(&format!(
                "<{p}{name} xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:nil=\"true\"/>"
            )),
        },
    }
}

/// Renders the operation element `op` (a [`N::E`]) as a whole envelope.
pub fn render(style: Style, v: SoapVersion, op: &N, enc: Enc) -> Vec<u8> {
    let env = match v {
        SoapVersion::V11 => "http://schemas.xmlsoap.org/soap/envelope/",
        SoapVersion::V12 => "http://www.w3.org/2003/05/soap-envelope",
    };
    let N::E(name, kids) = op else { panic!("operation must be an element") };
    let mut body = String::new();
    match style {
        Style::Zeep => {
            body.push_str(&format!("<ns0:{name} xmlns:ns0=\"{NS}\">"));
            for k in kids {
                render_node(k, style, enc, 0, &mut body);
            }
            body.push_str(&format!("</ns0:{name}>"));
            format!(
                "<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env=\"{env}\"><soap-env:Body>{body}</soap-env:Body></soap-env:Envelope>"
            )
            .into_bytes()
        }
        Style::Gsoap => {
            render_node(op, style, enc, 2, &mut body);
            let senc = match v {
                SoapVersion::V11 => "http://schemas.xmlsoap.org/soap/encoding/",
                SoapVersion::V12 => "http://www.w3.org/2003/05/soap-encoding",
            };
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"{env}\" xmlns:SOAP-ENC=\"{senc}\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\" xmlns:ns1=\"{NS}\">\n\t<SOAP-ENV:Body>{body}\n\t</SOAP-ENV:Body>\n</SOAP-ENV:Envelope>\n"
            )
            .into_bytes()
        }
        Style::Jaxws => {
            body.push_str(&format!("<{name} xmlns=\"{NS}\">"));
            for k in kids {
                render_node(k, style, enc, 0, &mut body);
            }
            body.push_str(&format!("</{name}>"));
            format!(
                "<?xml version='1.0' encoding='UTF-8'?><S:Envelope xmlns:S=\"{env}\"><S:Body>{body}</S:Body></S:Envelope>"
            )
            .into_bytes()
        }
    }
}

fn s(name: &'static str, v: &str) -> N {
    N::L(name, Some(v.to_string()))
}

fn opt(name: &'static str, v: &Option<String>, out: &mut Vec<N>) {
    if let Some(v) = v {
        out.push(s(name, v));
    }
}

fn attr_node(a: &Attribute) -> N {
    let mut k = vec![s("name", &a.name)];
    opt("type", &a.attr_type, &mut k);
    // A value of None is written as xsi:nil (valid for `value`, which is nillable).
    k.push(N::L("value", a.value.clone()));
    N::E("attribute", k)
}

fn entry_node(e: &Entry) -> N {
    let mut k = vec![s("name", &e.name)];
    k.extend(e.attributes.iter().map(attr_node));
    N::E("entry", k)
}

/// The payload tree of a request.
pub fn tree(req: &Request) -> N {
    let op = req.operation().name();
    let mut k = Vec::new();
    match req {
        Request::Ping | Request::GetVersion => {}
        Request::CreateSchema { schema_name, attributes, plain } => {
            k.push(s("schemaName", schema_name));
            k.extend(attributes.iter().map(attr_node));
            k.push(s("plain", if *plain { "true" } else { "false" }));
        }
        Request::DropSchema { schema_name } | Request::DescribeSchema { schema_name } => {
            k.push(s("schemaName", schema_name))
        }
        Request::AddSchemaAttributes { schema_name, attributes } => {
            k.push(s("schemaName", schema_name));
            k.extend(attributes.iter().map(attr_node));
        }
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => {
            k.push(s("schemaName", schema_name));
            k.extend(attribute_names.iter().map(|a| s("attributeName", a)));
        }
        Request::ListSchemas { path } => opt("path", path, &mut k),
        Request::CreateEntry { schema_name, entries } => {
            k.push(s("schemaName", schema_name));
            k.extend(entries.iter().map(entry_node));
        }
        Request::RemoveEntry { pattern, condition } => {
            k.push(s("pattern", pattern));
            opt("condition", condition, &mut k);
        }
        Request::SetAttributes { pattern, condition, attributes } => {
            k.push(s("pattern", pattern));
            opt("condition", condition, &mut k);
            k.extend(attributes.iter().map(attr_node));
        }
        Request::GetAttributes { entry_names, attribute_names } => {
            k.extend(entry_names.iter().map(|a| s("entryName", a)));
            k.extend(attribute_names.iter().map(|a| s("attributeName", a)));
        }
        Request::ClearAttributes { pattern, attribute_names } => {
            k.push(s("pattern", pattern));
            k.extend(attribute_names.iter().map(|a| s("attributeName", a)));
        }
        Request::ListAttributes { entry_name } => k.push(s("entryName", entry_name)),
        Request::Query { select, condition, order_by, page_size } => {
            k.extend(select.iter().map(|a| s("select", a)));
            opt("condition", condition, &mut k);
            opt("orderBy", order_by, &mut k);
            if let Some(p) = page_size {
                k.push(s("pageSize", &p.to_string()));
            }
        }
        Request::NextQuery { token, page_size } => {
            k.push(s("token", token));
            if let Some(p) = page_size {
                k.push(s("pageSize", &p.to_string()));
            }
        }
        Request::EndQuery { token } => k.push(s("token", token)),
        Request::IndexCreate { schema_name, index_name, attribute_names } => {
            k.push(s("schemaName", schema_name));
            k.push(s("indexName", index_name));
            k.extend(attribute_names.iter().map(|a| s("attributeName", a)));
        }
        Request::IndexRemove { schema_name, index_name } => {
            k.push(s("schemaName", schema_name));
            k.push(s("indexName", index_name));
        }
        Request::IndexList { schema_name } => k.push(s("schemaName", schema_name)),
    }
    N::E(op, k)
}

/// Whether value number `k` is changed in a variant with `pct` percent changed (an even,
/// deterministic spread).
pub fn is_changed(k: usize, pct: u32) -> bool {
    match pct {
        0 => false,
        100 => true,
        _ => ((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 100 < pct as u64,
    }
}

/// Value number `k`: ints, doubles and strings in turn; `variant` > 0 gives other values
/// (usually of another length).
pub fn value(k: usize, variant: u64) -> String {
    let x = k as u64 * 7919 + variant * 104_729;
    match k % 3 {
        0 => format!("{}", x % 1_000_000),
        1 => format!("{:.6}", (x as f64) / 977.0),
        _ => format!("owner-{}-{}", x % 9973, "grid"),
    }
}

/// `setAttributes` of `n` attributes `a0..`: ints, doubles and strings; `pct` percent of the
/// values differ from the `pct = 0` message.
pub fn set_attributes(n: usize, pct: u32) -> Request {
    Request::SetAttributes {
        pattern: "/grid/run42/*".into(),
        condition: None,
        attributes: (0..n)
            .map(|k| Attribute {
                name: format!("a{k}"),
                attr_type: None,
                value: Some(value(k, u64::from(is_changed(k, pct)))),
            })
            .collect(),
    }
}

/// `createEntry` of `n` entries with three attributes each (size: int, checksum: string,
/// ratio: double); `pct` percent of the values (entry names and attribute values) differ.
pub fn create_entry(n: usize, pct: u32) -> Request {
    let mut k = 0usize;
    let mut next = |f: &dyn Fn(usize, u64) -> String| {
        let v = f(k, u64::from(is_changed(k, pct)));
        k += 1;
        v
    };
    let entries = (0..n)
        .map(|e| {
            let name = next(&|k, var| format!("/grid/run42/file-{e:06}-{}", (k as u64 + var * 31) % 1000));
            let size = next(&|k, var| format!("{}", (k as u64 * 7919 + var * 104_729) % 10_000_000));
            let sum = next(&|k, var| format!("ad:{:08x}", (k as u64 * 2_654_435_761 + var * 97) as u32));
            let ratio = next(&|k, var| format!("{:.6}", (k as u64 * 31 + var * 7) as f64 / 977.0));
            Entry {
                name,
                attributes: vec![
                    Attribute::with_value("size", Some(size)),
                    Attribute::with_value("checksum", Some(sum)),
                    Attribute::with_value("ratio", Some(ratio)),
                ],
            }
        })
        .collect();
    Request::CreateEntry { schema_name: "/grid/run42".into(), entries }
}

/// Renders a request in a style.
pub fn message(style: Style, v: SoapVersion, req: &Request) -> Vec<u8> {
    render(style, v, &tree(req), Enc::Plain)
}
