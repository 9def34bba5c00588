//! SOAP faults: the `Fault` of a catalogue error and the fault envelope of each SOAP version
//! (`MetadataFault` detail, HTTP status). Must not decide error codes (the catalogue does).

use super::*;

/// A catalogue error to be sent as a SOAP fault with a `MetadataFault` detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The catalogue's numeric error code (AMGA table).
    pub code: u16,
    /// `AuthorizationException`, `ExistsException`, `NotExistsException`,
    /// `InvalidArgumentException` or `InternalException`.
    pub kind: String,
    /// Human-readable text, also used as `faultstring` / `Reason/Text`.
    pub message: String,
    /// `true` → `Client`/`Sender`, `false` → `Server`/`Receiver`.
    pub client_error: bool,
}

impl Fault {
    pub fn new(code: u16, kind: impl Into<String>, message: impl Into<String>, client_error: bool) -> Self {
        Fault { code, kind: kind.into(), message: message.into(), client_error }
    }

    pub fn fault_code(&self) -> FaultCode {
        if self.client_error { FaultCode::Client } else { FaultCode::Server }
    }

    /// SOAP 1.1: 500 for every fault (WS-I BP R1126). SOAP 1.2: 400 for `Sender`, 500 for
    /// `Receiver`.
    pub fn http_status(&self, version: SoapVersion) -> u16 {
        self.fault_code().http_status(version)
    }
}
// ----------------------------------------------------------------------------------------------
// Faults

fn fault_start(version: SoapVersion, code: FaultCode, reason: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"<soap:Fault>");
    match version {
        SoapVersion::V11 => {
            out.extend_from_slice(b"<faultcode>soap:");
            out.extend_from_slice(code.local_name(version).as_bytes());
            out.extend_from_slice(b"</faultcode><faultstring>");
            lossy_text(out, reason);
            out.extend_from_slice(b"</faultstring>");
        }
        SoapVersion::V12 => {
            out.extend_from_slice(b"<soap:Code><soap:Value>soap:");
            out.extend_from_slice(code.local_name(version).as_bytes());
            out.extend_from_slice(b"</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang=\"en\">");
            lossy_text(out, reason);
            out.extend_from_slice(b"</soap:Text></soap:Reason>");
        }
    }
}

/// Writes a catalogue fault: `Client`/`Server` (1.1) or `Sender`/`Receiver` (1.2) with
/// `faultstring`/`Reason` = message and a `MetadataFault` detail.
pub fn write_fault(version: SoapVersion, fault: &Fault, out: &mut Vec<u8>) {
    envelope_head(version, out);
    out.extend_from_slice(b"<soap:Body>");
    fault_start(version, fault.fault_code(), &fault.message, out);
    out.extend_from_slice(match version {
        SoapVersion::V11 => b"<detail>",
        SoapVersion::V12 => b"<soap:Detail>",
    });
    wrapper_open(out, "MetadataFault");
    open(out, "code");
    out.extend_from_slice(fault.code.to_string().as_bytes());
    close(out, "code");
    open(out, "kind");
    lossy_text(out, &fault.kind);
    close(out, "kind");
    open(out, "message");
    lossy_text(out, &fault.message);
    close(out, "message");
    close(out, "MetadataFault");
    out.extend_from_slice(match version {
        SoapVersion::V11 => b"</detail>",
        SoapVersion::V12 => b"</soap:Detail>",
    });
    out.extend_from_slice(b"</soap:Fault>");
    out.extend_from_slice(ENVELOPE_TAIL);
}

/// Writes a protocol-level fault for a [`SoapError`] (parse errors, `MustUnderstand`,
/// `VersionMismatch`, unserializable responses), without a `MetadataFault` detail.
///
/// SOAP 1.2 extras: a `MustUnderstand` fault carries a `NotUnderstood` header block naming the
/// block, and a `VersionMismatch` fault carries an `Upgrade` header block listing both
/// supported envelopes. Choose `version` with [`SoapError::fault_version`].
pub fn write_error_fault(version: SoapVersion, error: &SoapError, out: &mut Vec<u8>) {
    envelope_head(version, out);
    if version == SoapVersion::V12 {
        match error {
            SoapError::MustUnderstand { namespace, local_name } => {
                out.extend_from_slice(b"<soap:Header><soap:NotUnderstood qname=\"nu:");
                attr_value(out, local_name);
                out.extend_from_slice(b"\" xmlns:nu=\"");
                attr_value(out, namespace);
                out.extend_from_slice(b"\"/></soap:Header>");
            }
            SoapError::VersionMismatch { .. } => {
                out.extend_from_slice(b"<soap:Header><soap:Upgrade>");
                out.extend_from_slice(b"<soap:SupportedEnvelope qname=\"s12:Envelope\" xmlns:s12=\"");
                out.extend_from_slice(SoapVersion::V12.envelope_namespace().as_bytes());
                out.extend_from_slice(b"\"/><soap:SupportedEnvelope qname=\"s11:Envelope\" xmlns:s11=\"");
                out.extend_from_slice(SoapVersion::V11.envelope_namespace().as_bytes());
                out.extend_from_slice(b"\"/></soap:Upgrade></soap:Header>");
            }
            _ => {}
        }
    }
    out.extend_from_slice(b"<soap:Body>");
    fault_start(version, error.fault_code(), &error.message(), out);
    out.extend_from_slice(b"</soap:Fault>");
    out.extend_from_slice(ENVELOPE_TAIL);
}

/// [`write_fault`] into a fresh buffer.
pub fn fault_bytes(version: SoapVersion, fault: &Fault) -> Bytes {
    let mut out = Vec::with_capacity(512);
    write_fault(version, fault, &mut out);
    Bytes::from(out)
}

/// [`write_error_fault`] into a fresh buffer.
pub fn error_fault_bytes(version: SoapVersion, error: &SoapError) -> Bytes {
    let mut out = Vec::with_capacity(512);
    write_error_fault(version, error, &mut out);
    Bytes::from(out)
}
