//! Requests (the client side of the protocol, also used by round-trip tests and the load
//! generator): a typed `Request` to its envelope. Must not write responses or faults.

use super::*;

// ----------------------------------------------------------------------------------------------
// Requests (client side; also used for round-trip tests)

/// Writes a request envelope as a WSDL-conformant client would (default-namespace style).
/// `Attribute::value == None` is written as `xsi:nil` in `setAttributes` and `createEntry`
/// (values) and omitted elsewhere (schema definitions). On error `out` is left as it was.
pub fn write_request(version: SoapVersion, request: &Request, out: &mut Vec<u8>) -> Result<(), SoapError> {
    atomic(out, |out| write_request_inner(version, request, out))
}

fn write_request_inner(version: SoapVersion, request: &Request, out: &mut Vec<u8>) -> Result<(), SoapError> {
    let op = request.operation();
    envelope_head(version, out);
    out.extend_from_slice(b"<soap:Body>");
    wrapper_open(out, op.name());
    let strings = |out: &mut Vec<u8>, name: &str, vs: &[String]| -> Result<(), SoapError> {
        for v in vs {
            simple(out, name, v, name)?;
        }
        Ok(())
    };
    let opt = |out: &mut Vec<u8>, name: &str, v: &Option<String>| -> Result<(), SoapError> {
        if let Some(v) = v {
            simple(out, name, v, name)?;
        }
        Ok(())
    };
    let attrs = |out: &mut Vec<u8>, vs: &[Attribute], none: NoneValue| -> Result<(), SoapError> {
        for a in vs {
            attribute(out, a, none, "")?;
        }
        Ok(())
    };
    let page = |out: &mut Vec<u8>, p: &Option<u32>| {
        if let Some(p) = p {
            open(out, "pageSize");
            out.extend_from_slice(p.to_string().as_bytes());
            close(out, "pageSize");
        }
    };
    match request {
        Request::Ping | Request::GetVersion => {}
        Request::CreateSchema { schema_name, attributes, plain } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            attrs(out, attributes, NoneValue::Omit)?;
            if *plain {
                out.extend_from_slice(b"<plain>true</plain>");
            }
        }
        Request::DropSchema { schema_name } | Request::DescribeSchema { schema_name } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
        }
        Request::AddSchemaAttributes { schema_name, attributes } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            attrs(out, attributes, NoneValue::Omit)?;
        }
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            strings(out, "attributeName", attribute_names)?;
        }
        Request::ListSchemas { path } => opt(out, "path", path)?,
        Request::CreateEntry { schema_name, entries } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            for e in entries {
                entry(out, e)?;
            }
        }
        Request::RemoveEntry { pattern, condition } => {
            simple(out, "pattern", pattern, "pattern")?;
            opt(out, "condition", condition)?;
        }
        Request::SetAttributes { pattern, condition, attributes } => {
            simple(out, "pattern", pattern, "pattern")?;
            opt(out, "condition", condition)?;
            attrs(out, attributes, NoneValue::Nil)?;
        }
        Request::GetAttributes { entry_names, attribute_names } => {
            strings(out, "entryName", entry_names)?;
            strings(out, "attributeName", attribute_names)?;
        }
        Request::ClearAttributes { pattern, attribute_names } => {
            simple(out, "pattern", pattern, "pattern")?;
            strings(out, "attributeName", attribute_names)?;
        }
        Request::ListAttributes { entry_name } => simple(out, "entryName", entry_name, "entryName")?,
        Request::Query { select, condition, order_by, page_size } => {
            strings(out, "select", select)?;
            opt(out, "condition", condition)?;
            opt(out, "orderBy", order_by)?;
            page(out, page_size);
        }
        Request::NextQuery { token, page_size } => {
            simple(out, "token", token, "token")?;
            page(out, page_size);
        }
        Request::EndQuery { token } => simple(out, "token", token, "token")?,
        Request::IndexCreate { schema_name, index_name, attribute_names } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            simple(out, "indexName", index_name, "indexName")?;
            strings(out, "attributeName", attribute_names)?;
        }
        Request::IndexRemove { schema_name, index_name } => {
            simple(out, "schemaName", schema_name, "schemaName")?;
            simple(out, "indexName", index_name, "indexName")?;
        }
        Request::IndexList { schema_name } => simple(out, "schemaName", schema_name, "schemaName")?,
        Request::SqlQuery { statement, page_size } => {
            simple(out, "statement", statement, "statement")?;
            page(out, page_size);
        }
    }
    close(out, op.name());
    out.extend_from_slice(ENVELOPE_TAIL);
    Ok(())
}
