//! The SOAP frontend over HTTP: routes (`POST /soap`, `GET /soap?wsdl`, `GET /soap.wsdl`), the
//! request pipeline (authenticate → media type → bounded body → SOAP version → parse →
//! dispatch) and the mapping of every failure to a fault and an HTTP status. It translates
//! only: it must not hold catalogue rules (ardacat-core) or XML syntax (ardacat-soap), and it
//! must not parse requests anywhere but in [`decode_request`].
//!
//! Dispatch is on Content-Type and envelope namespace, never on the path or `SOAPAction`
//! (which may be missing): `text/xml` is SOAP 1.1, `application/soap+xml` SOAP 1.2, both on
//! the same address. Each request runs in a fresh catalogue session (cwd `/`) for the
//! principal HTTP Basic authentication found ([`auth`]).
//!
//! Status codes: success 200; catalogue faults 500 (SOAP 1.1) or 400 `Sender` / 500
//! `Receiver` (SOAP 1.2), with a `MetadataFault{code, kind, message}` detail; malformed
//! requests a `Client`/`Sender` fault with code 3; a body over `soap_max_body_bytes` 413
//! (refused from `Content-Length` or after reading at most the limit); a media type that is
//! not SOAP 415; missing or wrong credentials 401 with `WWW-Authenticate: Basic`. Responses
//! are gzip-compressed when the client sends `Accept-Encoding: gzip`.

pub mod auth;
pub mod dispatch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use crate::metrics::{Frontend, Stage};

use ardacat_core::{Error, ErrorKind};
use ardacat_soap::{
    Fault, FaultCode, Limits, ParsedRequest, SoapError, SoapVersion, TemplateKey, detect_version, parse_request,
    write_error_fault, write_fault, wsdl_for,
};
use axum::Router;
use axum::body::{Body, HttpBody as _};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use tower_http::compression::CompressionLayer;
use tracing::Instrument;

use crate::logging::RequestLine;

use crate::state::Shared;
use auth::{AuthCache, AuthFailure};
use dispatch::{Failure, Output};

/// State of the SOAP routes.
pub struct SoapState {
    pub shared: Arc<Shared>,
    pub auth: AuthCache,
    pub limits: Limits,
    /// Recent `getAttributes` attribute lists, made ready once ([`dispatch::AttributeLists`]).
    pub lists: dispatch::AttributeLists,
    /// The HTTP listener's address, for the WSDL when a request has no usable `Host`.
    pub bound: SocketAddr,
}

/// The SOAP routes, merged into the HTTP router by `crate::http::router` (which runs them with
/// the [`crate::auth::Peer`] connect info: per-address login throttling, login by certificate).
pub fn router(shared: Arc<Shared>, bound: SocketAddr) -> Router {
    let cfg = &shared.config;
    let limits = Limits {
        max_depth: cfg.soap_max_depth,
        max_elements: cfg.soap_max_elements,
        max_body_bytes: cfg.soap_max_body_bytes,
        ..Limits::default()
    };
    let state = Arc::new(SoapState { shared, auth: AuthCache::default(), limits, lists: Default::default(), bound });
    Router::new()
        .route("/soap", get(get_soap).post(post_soap))
        .route("/soap.wsdl", get(get_wsdl))
        .with_state(state)
        // gzip responses for clients that ask (Accept-Encoding); streamed bodies stay streamed.
        .layer(CompressionLayer::new().gzip(true))
}

/// THE request deserializer of the server: every SOAP request body goes through here, and only
/// here. It settles the SOAP version ([`detect_version`]: the Content-Type's, checked against the
/// envelope's) and parses. With `soap_dds` on, the differential deserializer answers from the
/// template of this client's previous message of the same shape, or declines and the full
/// parser runs (which refreshes the template); either way the result is exactly what
/// `parse_request` returns. Templates are keyed by the authenticated user and the Content-Type
/// as sent, because different toolkits emit different bytes. Under a Content-Type that names
/// the version, the envelope is sniffed only before a full parse: a template's hit repeats the
/// bytes of a message that passed the sniff, up to its first value
/// ([`ardacat_soap::dds::DdsCache::parse_checked`]). Returns the version the request is
/// dispatched as; an error comes with the version to answer it in.
pub fn decode_request(
    state: &SoapState,
    client: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(SoapVersion, ParsedRequest), (SoapVersion, SoapError)> {
    let declared = content_type.and_then(SoapVersion::from_content_type);
    let key = || TemplateKey::new(client, content_type.unwrap_or(""));
    let limits = &state.limits;
    match (&state.shared.dds, declared) {
        (Some(dds), Some(v)) => dds
            .parse_checked(&key(), body, v, limits, || detect_version(content_type, body).map(drop))
            .map(|(p, _)| (v, p))
            .map_err(|e| (v, e)),
        (dds, _) => {
            let v = detect_version(content_type, body).map_err(|e| (declared.unwrap_or(SoapVersion::V11), e))?;
            let parsed = match dds {
                Some(dds) => dds.parse(&key(), body, v, limits).map(|(p, _)| p),
                None => parse_request(body, v, limits),
            };
            parsed.map(|p| (v, p)).map_err(|e| (v, e))
        }
    }
}

// ------------------------------------------------------------------------------------------
// WSDL

async fn get_soap(State(st): State<Arc<SoapState>>, uri: Uri, headers: HeaderMap) -> Response {
    let wants_wsdl = uri
        .query()
        .unwrap_or("")
        .split('&')
        .any(|p| p.split('=').next().is_some_and(|k| k.eq_ignore_ascii_case("wsdl")));
    if wants_wsdl {
        wsdl_response(&st, &headers)
    } else {
        (
            StatusCode::BAD_REQUEST,
            "POST SOAP 1.1 (text/xml) or SOAP 1.2 (application/soap+xml) requests here; GET ?wsdl for the contract\n",
        )
            .into_response()
    }
}

async fn get_wsdl(State(st): State<Arc<SoapState>>, headers: HeaderMap) -> Response {
    wsdl_response(&st, &headers)
}

/// `host[:port]` from the `Host` header if it is plainly a host name or address.
fn request_host(headers: &HeaderMap) -> Option<&str> {
    let h = headers.get(HOST)?.to_str().ok()?.trim();
    let ok = !h.is_empty()
        && h.len() <= 255
        && h.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']'));
    ok.then_some(h)
}

fn endpoint_url(st: &SoapState, headers: &HeaderMap) -> String {
    let scheme = if st.shared.tls.is_some() { "https" } else { "http" };
    match request_host(headers) {
        Some(h) => format!("{scheme}://{h}/soap"),
        None if st.bound.ip().is_unspecified() => format!("{scheme}://localhost:{}/soap", st.bound.port()),
        None => format!("{scheme}://{}/soap", st.bound),
    }
}

fn wsdl_response(st: &SoapState, headers: &HeaderMap) -> Response {
    let wsdl = wsdl_for(&endpoint_url(st, headers));
    ([(CONTENT_TYPE, HeaderValue::from_static("text/xml; charset=utf-8"))], wsdl).into_response()
}

// ------------------------------------------------------------------------------------------
// Requests

fn xml_response(version: SoapVersion, status: u16, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(version.content_type()));
    r
}

fn kind_name(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Authorization => "AuthorizationException",
        ErrorKind::Exists => "ExistsException",
        ErrorKind::NotExists => "NotExistsException",
        ErrorKind::InvalidArgument => "InvalidArgumentException",
        ErrorKind::Internal => "InternalException",
    }
}

/// A catalogue error as a fault with a `MetadataFault` detail.
fn catalogue_fault(version: SoapVersion, e: &Error) -> Response {
    if let Error::Internal(cause) = e {
        tracing::error!(error = %cause, "SOAP request failed");
    }
    let fault = Fault::new(e.code(), kind_name(e.kind()), e.public_message(), e.kind() != ErrorKind::Internal);
    let mut out = Vec::with_capacity(512);
    write_fault(version, &fault, &mut out);
    with_code(xml_response(version, fault.http_status(version), out), i64::from(e.code()))
}

/// The outcome code of a fault response, for the request log line (absent: success, 0).
#[derive(Debug, Clone, Copy)]
struct OutcomeCode(i64);

fn with_code(mut r: Response, code: i64) -> Response {
    r.extensions_mut().insert(OutcomeCode(code));
    r
}

/// A SOAP-layer error. Malformed requests are `Client` faults with a code-3
/// `MetadataFault` detail; `MustUnderstand` and `VersionMismatch` are the SOAP faults of those
/// names; an unserializable response is a `Server` fault (code 99).
fn soap_fault(version: SoapVersion, e: &SoapError) -> Response {
    let mut out = Vec::with_capacity(512);
    match e.fault_code() {
        FaultCode::Client => {
            let fault = Fault::new(3, kind_name(ErrorKind::InvalidArgument), e.message(), true);
            write_fault(version, &fault, &mut out);
            let status = match e {
                SoapError::BodyTooLarge { .. } => 413,
                other => other.http_status(version),
            };
            with_code(xml_response(version, status, out), 3)
        }
        FaultCode::Server => {
            tracing::error!(error = %e, "SOAP response could not be serialized");
            let fault = Fault::new(99, kind_name(ErrorKind::Internal), e.message(), false);
            write_fault(version, &fault, &mut out);
            with_code(xml_response(version, fault.http_status(version), out), 99)
        }
        FaultCode::MustUnderstand | FaultCode::VersionMismatch => {
            let v = e.fault_version(version);
            write_error_fault(v, e, &mut out);
            with_code(xml_response(v, e.http_status(v), out), 3)
        }
    }
}

fn auth_failure(version: SoapVersion, f: AuthFailure) -> Response {
    let (status, message) = match f {
        AuthFailure::Missing => (401, "authentication required (HTTP Basic)"),
        AuthFailure::Denied => (401, "wrong user name or password"),
        AuthFailure::Throttled => (429, "too many failed logins; try again later"),
        AuthFailure::Internal(e) => return catalogue_fault(version, &e),
    };
    let fault = Fault::new(4, kind_name(ErrorKind::Authorization), message, true);
    let mut out = Vec::with_capacity(512);
    write_fault(version, &fault, &mut out);
    let mut r = with_code(xml_response(version, status, out), 4);
    if status == 401 {
        r.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"ardacat\""));
    } else {
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("60"));
    }
    r
}

/// Longest wait for the next piece of a request body (a slow-sender guard; the total time is
/// not bounded, a large body over a slow link is fine while it keeps moving).
const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads the body, refusing it as soon as it passes `limit` bytes (never buffering more).
async fn read_body(body: Body, limit: usize) -> Result<Vec<u8>, SoapError> {
    let mut out = Vec::new();
    let mut stream = body.into_data_stream();
    loop {
        let next = tokio::time::timeout(BODY_IDLE_TIMEOUT, stream.next())
            .await
            .map_err(|_| SoapError::NotWellFormed("request body stalled: no data for 60 s".into()))?;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| SoapError::NotWellFormed(format!("request body could not be read: {e}")))?;
        if out.len() + chunk.len() > limit {
            return Err(SoapError::BodyTooLarge { size: out.len() + chunk.len(), limit });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// One SOAP request inside its `request` span, then its log line (`crate::logging`); for a
/// streamed response the line is written when the body has been sent (or dropped), so `rows`
/// and the duration cover the whole response.
async fn post_soap(State(st): State<Arc<SoapState>>, req: Request) -> Response {
    let started = Instant::now();
    let peer = req.extensions().get::<ConnectInfo<crate::auth::Peer>>().map(|c| Arc::<str>::from(c.0.addr.to_string()));
    let mut line = RequestLine {
        request_id: crate::logging::next_id(),
        frontend: "soap",
        peer: peer.unwrap_or_default(),
        ..RequestLine::default()
    };
    let span = tracing::info_span!(
        "request",
        request_id = %line.request_id,
        frontend = "soap",
        peer = %line.peer,
        user = tracing::field::Empty,
        operation = tracing::field::Empty,
    );
    let rows = Arc::new(AtomicU64::new(0));
    // Boxed: the request's future (about 1 KB, see `a_request_future_stays_small`) would otherwise
    // be copied whole each time the layers above (tower's boxing of the handler among them) move
    // this one.
    let response = crate::logging::with_rows(rows.clone(), Box::pin(handle_soap(st, req, &mut line)))
        .instrument(span.clone())
        .await;
    line.code = response.extensions().get::<OutcomeCode>().map_or(0, |c| c.0);
    let done = LogOnDrop { line, rows, started, span };
    if response.body().size_hint().exact().is_some() {
        // A complete body: the request is over.
        drop(done);
        return response;
    }
    let (parts, body) = response.into_parts();
    // The guard travels with the body: dropped when the last chunk went out or the client left.
    let body = Body::from_stream(body.into_data_stream().map(move |chunk| {
        let _ = &done;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// Writes a request's log line when dropped.
struct LogOnDrop {
    line: RequestLine,
    rows: Arc<AtomicU64>,
    started: Instant,
    span: tracing::Span,
}

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        self.line.rows = self.rows.load(std::sync::atomic::Ordering::Relaxed);
        self.line.duration = self.started.elapsed();
        self.line.emit(&self.span);
    }
}

async fn handle_soap(st: Arc<SoapState>, req: Request, line: &mut RequestLine) -> Response {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let conn = parts.extensions.get::<ConnectInfo<crate::auth::Peer>>().map(|c| &c.0);
    let peer = conn.map(|p| p.addr.ip());
    let subject = conn.and_then(|p| p.subject.as_deref());
    let content_type = headers.get(CONTENT_TYPE).map(|v| v.to_str().unwrap_or("\u{fffd}").to_string());
    // The version to answer early failures in, before the envelope has been seen.
    let hint = content_type.as_deref().and_then(SoapVersion::from_content_type).unwrap_or(SoapVersion::V11);

    let started = Instant::now();
    let session = match auth::session_for(&st.shared, &st.auth, headers, peer, subject).await {
        // Boxed: a session is 800 bytes, which would otherwise be part of this request's future
        // and of each one it is handed on to.
        Ok(s) => Box::new(s.for_one_request()),
        Err(f) => return auth_failure(hint, f),
    };
    // A service account (`user_may_sudo`) has no business on SOAP: it cannot sudo here.
    if let Err(e) = st.shared.catalogue.admit(&session, "soap") {
        return catalogue_fault(hint, &e);
    }
    let authed = Instant::now();
    st.shared.metrics.stage(Frontend::Soap, Stage::Auth, authed - started);
    line.user = session.principal.user.clone();
    tracing::Span::current().record("user", line.user.as_str());
    if let Some(ct) = content_type.as_deref()
        && SoapVersion::from_content_type(ct).is_none()
    {
        let media = ct.split(';').next().unwrap_or("").trim().to_string();
        return soap_fault(hint, &SoapError::UnsupportedMediaType(media));
    }
    let limit = st.limits.max_body_bytes;
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(n) = declared
        && n > limit as u64
    {
        let size = usize::try_from(n).unwrap_or(usize::MAX);
        return soap_fault(hint, &SoapError::BodyTooLarge { size, limit });
    }
    let bytes = match read_body(body, limit).await {
        Ok(b) => b,
        Err(e) => return soap_fault(hint, &e),
    };
    let (version, parsed) = match decode_request(&st, &session.principal.user, content_type.as_deref(), &bytes) {
        Ok(decoded) => decoded,
        Err((version, e)) => return soap_fault(version, &e),
    };
    drop(bytes);
    let parsed_at = Instant::now();
    st.shared.metrics.stage(Frontend::Soap, Stage::Parse, parsed_at - authed);
    let op = parsed.request.operation();
    line.command = op.name().into();
    tracing::Span::current().record("operation", op.name());
    tracing::debug!(user = %session.principal.user, %op, "SOAP request");
    let catalogue = tracing::debug_span!("catalogue", op = op.name());
    let result =
        dispatch::dispatch(st.shared.catalogue.clone(), &st.shared.config, &st.lists, session, version, parsed.request)
            .instrument(catalogue)
            .await;
    st.shared.metrics.stage(Frontend::Soap, Stage::Execute, parsed_at.elapsed());
    st.shared.metrics.request(Frontend::Soap, op.name(), started.elapsed(), result.is_ok());
    match result {
        Ok(Output::Complete(out)) => xml_response(version, 200, out),
        Ok(Output::Streaming(body)) => xml_response(version, 200, body),
        Err(Failure::Cat(e)) => catalogue_fault(version, &e),
        Err(Failure::Soap(e)) => soap_fault(version, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `make` would return, without making it.
    fn future_size<Fut>(_make: impl FnOnce() -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// Every SOAP request's future is boxed and moved by the HTTP layers, each time copied whole:
    /// it was 8 KB while it held every operation's future and the session inline (round 23 of
    /// docs/benchmarks.md). Growing past the bound means something large is held across an
    /// await again.
    #[test]
    #[allow(unreachable_code)]
    fn a_request_future_stays_small() {
        let size = future_size(|| handle_soap(unreachable!(), unreachable!(), unreachable!()));
        assert!(size <= 2048, "a SOAP request's future is {size} bytes");
        let size = future_size(|| {
            dispatch::dispatch(
                unreachable!(),
                unreachable!(),
                unreachable!(),
                unreachable!(),
                unreachable!(),
                unreachable!(),
            )
        });
        assert!(size <= 512, "dispatch's future is {size} bytes");
    }

    #[test]
    fn host_header_is_checked() {
        let mut h = HeaderMap::new();
        assert_eq!(request_host(&h), None);
        h.insert(HOST, HeaderValue::from_static("127.0.0.1:8823"));
        assert_eq!(request_host(&h), Some("127.0.0.1:8823"));
        h.insert(HOST, HeaderValue::from_static("[::1]:80"));
        assert_eq!(request_host(&h), Some("[::1]:80"));
        h.insert(HOST, HeaderValue::from_static("evil\"/><x"));
        assert_eq!(request_host(&h), None);
    }
}
