//! The WSDL document (`wsdl/ardacat.wsdl` at the workspace root, compiled in).

/// The WSDL text exactly as stored in `wsdl/ardacat.wsdl`, with placeholder addresses.
pub const WSDL_TEMPLATE: &str = include_str!("../../../wsdl/ardacat.wsdl");

/// The placeholder `soap:address`/`soap12:address` location in [`WSDL_TEMPLATE`].
pub const WSDL_PLACEHOLDER_ADDRESS: &str = "http://localhost:8823/soap";

/// The WSDL with both ports' addresses set to `endpoint_url` (XML-escaped), e.g.
/// `wsdl_for("https://md.example.org:8823/soap")`. Both the SOAP 1.1 and the SOAP 1.2 port get
/// the same address: the server dispatches on Content-Type and envelope namespace.
pub fn wsdl_for(endpoint_url: &str) -> String {
    let mut escaped = Vec::with_capacity(endpoint_url.len());
    crate::write::attr_value(&mut escaped, endpoint_url);
    let escaped = String::from_utf8(escaped).expect("escaping keeps UTF-8");
    WSDL_TEMPLATE.replace(&format!("location=\"{WSDL_PLACEHOLDER_ADDRESS}\""), &format!("location=\"{escaped}\""))
}
