//! Wire syntax of ardacat's SOAP contract (`wsdl/ardacat.wsdl`): SOAP 1.1 and 1.2,
//! document/literal wrapped, namespace `urn:ardacat:metadata:1`.
//!
//! This crate knows envelopes, XML and the WSDL, nothing else: no database, no catalogue
//! service, no HTTP server, no authentication. A server uses it like this:
//!
//! 1. [`detect_version`] from the `Content-Type` header and the body;
//! 2. [`parse_request`] (the one authoritative parser) → [`ParsedRequest`];
//! 3. run the request, then [`write_response`] (or stream with [`ResponseWriter`]);
//! 4. on a catalogue error [`write_fault`] with a [`Fault`], on a [`SoapError`]
//!    [`write_error_fault`] in [`SoapError::fault_version`]; the HTTP status comes from
//!    [`Fault::http_status`] / [`SoapError::http_status`];
//! 5. serve `GET ?wsdl` with [`wsdl_for`].
//!
//! ```
//! use ardacat_soap::*;
//!
//! let body = br#"<?xml version='1.0' encoding='utf-8'?>
//! <soap-env:Envelope xmlns:soap-env="http://schemas.xmlsoap.org/soap/envelope/"><soap-env:Body>
//! <ns0:listAttributes xmlns:ns0="urn:ardacat:metadata:1"><ns0:entryName>/grid/f1</ns0:entryName></ns0:listAttributes>
//! </soap-env:Body></soap-env:Envelope>"#;
//! let version = detect_version(Some("text/xml; charset=utf-8"), body).unwrap();
//! let parsed = parse_request(body, version, &Limits::default()).unwrap();
//! assert_eq!(parsed.request, Request::ListAttributes { entry_name: "/grid/f1".into() });
//!
//! let mut out = Vec::new();
//! let response = Response::ListAttributes { attributes: vec![Attribute::typed("size", "int")] };
//! write_response(version, &response, &mut out).unwrap();
//! assert!(out.starts_with(b"<?xml"));
//!
//! // A catalogue error becomes a fault; a SOAP 1.1 fault is always HTTP 500.
//! let fault = Fault::new(1, "NotExistsException", "/grid/f1: no such file or directory", true);
//! out.clear();
//! write_fault(version, &fault, &mut out);
//! assert_eq!(fault.http_status(version), 500);
//! ```
//!
//! [`dds::DdsCache`] (differential deserialization) sits beside [`parse_request`]: it
//! returns exactly what `parse_request` returns, faster for repeated requests, or falls back
//! to it. [`write_request`] produces requests for clients and round-trip tests.

pub mod dds;
mod error;
mod model;
mod parse;
mod version;
mod write;
mod wsdl;
mod xml;

pub use dds::{DdsCache, DdsConfig, DdsOutcome, DdsStats, TemplateKey};
pub use error::{FaultCode, LimitKind, SoapError};
pub use model::{
    Attribute, Entry, HeaderBlock, Index, MDResult, NAMESPACE, Operation, ParsedRequest, Request, Response, Row,
};
pub use parse::{Limits, parse_request};
pub use version::{SOAP11_ENV_NS, SOAP12_ENV_NS, SoapVersion, content_type_action, detect_version};
pub use write::{
    EntryColumns, EntryValue, Fault, ResponseWriter, RowValue, error_fault_bytes, fault_bytes, response_bytes,
    write_error_fault, write_fault, write_request, write_response,
};
pub use wsdl::{WSDL_PLACEHOLDER_ADDRESS, WSDL_TEMPLATE, wsdl_for};
