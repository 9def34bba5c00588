//! The web interface under `/ui/`: server-rendered HTML pages (login, browse and query, export,
//! edit, admin, status) over the same `Catalogue` calls as the other frontends, so the same
//! permissions, limits and audit apply. It translates only: it must not hold catalogue rules
//! (ardacat-core decides every permission and validates every value), SQL, or login policy
//! (`crate::auth::authenticate`, with its rate limit, is the only way in).
//!
//! Security: every response carries a `Content-Security-Policy` that allows only this server's
//! own script and stylesheet (no inline script); every state change is a POST carrying the
//! session's CSRF token; the session cookie is `HttpOnly`, `SameSite=Strict`, `Secure` over
//! HTTPS and expires; every catalogue name and value is escaped (`html::esc`).
//!
//! Modules: `session` (web sessions, cookies), `login` (login and logout pages), `html` (escaping, page frame), `browse`
//! (collections, entries, queries), `export` (CSV and JSON, streamed), `actions` (every POST that changes the catalogue,
//! with removal confirmation), `admin` (users and groups), `assets` (CSS and JS in the binary).

mod actions;
mod admin;
mod browse;
mod export;
pub mod html;
mod login;
pub mod session;

use std::net::IpAddr;
use std::sync::Arc;

use ardacat_core::{Error, Session};
use axum::Router;
use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::{Extensions, HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::collections::HashMap;

use crate::Store;
use crate::auth::{self, AuthError, Credentials, Peer, Via};
use crate::state::{SERVER_VERSION, Shared};
use html::{csrf_field, esc, page};
use session::{LOGIN_CSRF_COOKIE, SESSION_COOKIE, SESSION_TTL, WebSession, WebSessions, cookie, random_token};

/// State of the UI routes.
pub struct UiState {
    pub shared: Arc<Shared>,
    pub sessions: WebSessions,
}

/// The policy every UI response carries: only this server's own files, no inline script or
/// style, no framing, forms only to this server.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; \
                       base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The UI routes, merged into the HTTP router by `crate::http::router` (run with the
/// [`Peer`] connect info: login throttling per address, login by client certificate).
pub fn router(shared: Arc<Shared>) -> Router {
    let state = Arc::new(UiState { shared, sessions: WebSessions::default() });
    Router::new()
        .route("/ui", get(login::home))
        .route("/ui/", get(login::home))
        .route("/ui/login", get(login::login_page).post(login::login_submit))
        .route("/ui/logout", post(login::logout))
        .route("/ui/status", get(status))
        .route("/ui/assets/ui.css", get(css))
        .route("/ui/assets/ui.js", get(js))
        .route("/ui/browse", get(browse::browse))
        .route("/ui/browse/", get(browse::browse))
        .route("/ui/browse/{*path}", get(browse::browse))
        .route("/ui/export", get(export::export))
        .route("/ui/export/", get(export::export))
        .route("/ui/export/{*path}", get(export::export))
        .route("/ui/do", post(actions::submit))
        .route("/ui/admin", get(admin::page))
        .layer(axum::middleware::from_fn_with_state(state.clone(), log_request))
        .with_state(state)
        .layer(axum::middleware::map_response(security_headers))
}

/// The outcome code of a page that shows a catalogue error, for the request log line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OutcomeCode(pub(crate) i64);

/// One request log line per page (`crate::logging`, frontend `web`; the stylesheet and script
/// are not logged), inside a `request` span so the catalogue's events carry the request id.
/// `command` is the page (`browse`, `export`, `do`, …); an export's duration ends with its
/// headers (its rows stream on).
async fn log_request(
    State(st): State<Arc<UiState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path();
    if path.starts_with("/ui/assets/") {
        return next.run(req).await;
    }
    let started = std::time::Instant::now();
    let mut line = crate::logging::RequestLine {
        request_id: crate::logging::next_id(),
        frontend: "web",
        peer: peer_of(req.extensions()).0.map(|ip| ip.to_string().into()).unwrap_or_default(),
        command: path
            .trim_start_matches("/ui")
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or("")
            .to_string()
            .into(),
        user: cookie(req.headers(), SESSION_COOKIE)
            .and_then(|id| st.sessions.get(id))
            .map(|s| s.principal.user)
            .unwrap_or_default(),
        ..Default::default()
    };
    let span = tracing::info_span!("request", request_id = %line.request_id, frontend = "web", peer = %line.peer, user = %line.user);
    let r = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    line.code = r.extensions().get::<OutcomeCode>().map_or(0, |c| c.0);
    line.duration = started.elapsed();
    line.emit(&span);
    r
}

async fn security_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(HeaderName::from_static("content-security-policy"), HeaderValue::from_static(CSP));
    h.insert(HeaderName::from_static("x-content-type-options"), HeaderValue::from_static("nosniff"));
    h.insert(HeaderName::from_static("x-frame-options"), HeaderValue::from_static("DENY"));
    h.insert(HeaderName::from_static("referrer-policy"), HeaderValue::from_static("same-origin"));
    if !h.contains_key(CACHE_CONTROL) {
        h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

// ------------------------------------------------------------------------------------------
// Responses

/// An HTML page with a status.
pub(crate) fn html_response(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))], body).into_response()
}

/// `303 See Other` to a UI address.
pub(crate) fn redirect(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

/// A local UI address to return to: under `/ui/` (so never another site), without `..` or
/// backslashes or line breaks.
pub(crate) fn safe_back(to: Option<&str>) -> String {
    match to {
        Some(t) if t.starts_with("/ui/") && !t.contains("/..") && !t.contains('\\') && !t.contains(['\r', '\n']) => {
            t.to_string()
        }
        _ => "/ui/browse/".to_string(),
    }
}

/// The HTTP status a catalogue error is shown with.
pub(crate) fn status_of(e: &Error) -> StatusCode {
    match e.code() {
        4 => StatusCode::FORBIDDEN,
        1 | 10 | 17 => StatusCode::NOT_FOUND,
        15 | 16 | 11 => StatusCode::CONFLICT,
        99 => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_REQUEST,
    }
}

/// A page showing a catalogue error (code and message) and a way back.
pub(crate) fn error_page(ctx: &Ctx, e: &Error, back: &str) -> Response {
    if let Error::Internal(cause) = e {
        tracing::error!(error = %cause, "web request failed");
    }
    let body = format!(
        "<h1>Error {}</h1>{}<p><a href=\"{}\">Back</a></p>",
        e.code(),
        html::error_box(&e.public_message(), None),
        esc(back)
    );
    let mut r = html_response(status_of(e), ctx.page("Error", &body));
    r.extensions_mut().insert(OutcomeCode(i64::from(e.code())));
    r
}

// ------------------------------------------------------------------------------------------
// The logged-in caller of a request

/// A request's logged-in caller: the web session and a catalogue session for them (cwd `/`).
pub(crate) struct Ctx {
    pub id: String,
    pub web: WebSession,
    pub s: Session<Store>,
}

impl Ctx {
    /// A page in the frame with this user's navigation.
    pub fn page(&self, title: &str, body: &str) -> String {
        page(title, Some((&self.web.principal.user, &self.web.csrf)), body)
    }
}

/// The caller, or a redirect to the login page (then back to `uri`). The principal's groups are
/// re-read on every request, so membership changes and removed users take effect at once.
pub(crate) async fn ctx(st: &UiState, headers: &HeaderMap, uri: &Uri) -> Result<Ctx, Response> {
    let to_login = || {
        let back = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/ui/browse/");
        redirect(&format!("/ui/login?next={}", html::url(back)))
    };
    let Some(id) = cookie(headers, SESSION_COOKIE) else { return Err(to_login()) };
    let Some(web) = st.sessions.get(id) else { return Err(to_login()) };
    let mut s = Session::new(web.principal.clone()).for_one_request();
    match st.shared.catalogue.refresh(&mut s).await {
        Ok(()) => Ok(Ctx { id: id.to_string(), web, s }),
        Err(Error::PermissionDenied(_)) => {
            st.sessions.close(id);
            Err(to_login())
        }
        Err(e) => {
            tracing::error!(error = %e, "web session check failed");
            Err(html_response(
                StatusCode::SERVICE_UNAVAILABLE,
                page("Unavailable", None, "<p>The catalogue cannot be reached.</p>"),
            ))
        }
    }
}

/// The refusal of a POST whose `csrf` field is not the session's token (`None`: it is).
pub(crate) fn csrf_refusal(ctx: &Ctx, form: &HashMap<String, String>) -> Option<Response> {
    match form.get("csrf") {
        Some(t) if session::same_token(t, &ctx.web.csrf) => None,
        _ => Some(html_response(
            StatusCode::FORBIDDEN,
            ctx.page(
                "Refused",
                "<h1>Refused</h1><p>The form's CSRF token is missing or wrong; reload the page and try again.</p>",
            ),
        )),
    }
}

/// The peer's address and verified certificate subject (the HTTP router's connect info).
fn peer_of(ext: &Extensions) -> (Option<IpAddr>, Option<String>) {
    match ext.get::<ConnectInfo<Peer>>() {
        Some(ConnectInfo(p)) => (Some(p.addr.ip()), p.subject.clone()),
        None => (None, None),
    }
}

// ------------------------------------------------------------------------------------------
// Status

async fn status(State(st): State<Arc<UiState>>, headers: HeaderMap, uri: Uri) -> Response {
    let ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let mut body = format!(
        "<h1>Status</h1><p>Version <code id=\"version\">{}</code></p>\
         <p>The same counters as <code>/metrics</code> (names without the <code>ardacat_</code> prefix).</p>\
         <div class=\"scroll\"><table class=\"counters\"><thead><tr><th scope=\"col\">Counter</th><th scope=\"col\">Value</th>\
         <th scope=\"col\">Meaning</th></tr></thead><tbody>",
        esc(SERVER_VERSION)
    );
    for c in st.shared.counters() {
        body.push_str(&format!(
            "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&c.key()),
            c.value,
            esc(c.help)
        ));
    }
    body.push_str("</tbody></table></div>");
    body.push_str(&format!(
        "<section aria-labelledby=\"h-account\"><h2 id=\"h-account\">Your account</h2>\
         <form method=\"post\" action=\"/ui/do\" class=\"action\" id=\"form-passwd\">{}\
         <input type=\"hidden\" name=\"op\" value=\"user_passwd\"><input type=\"hidden\" name=\"user\" value=\"{}\">\
         <input type=\"hidden\" name=\"back\" value=\"/ui/status\"><label>New password <input name=\"password\" type=\"password\" \
         autocomplete=\"new-password\" required></label><button type=\"submit\">Change my password</button></form></section>",
        csrf_field(&ctx.web.csrf),
        esc(&ctx.web.principal.user)
    ));
    html_response(StatusCode::OK, ctx.page("Status", &body))
}

// ------------------------------------------------------------------------------------------
// Assets (compiled into the binary)

async fn css() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/ui.css"))
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("assets/ui.js"))
}

fn asset(content_type: &'static str, text: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("max-age=3600")),
        ],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_addresses_stay_in_the_ui() {
        assert_eq!(safe_back(Some("/ui/browse/a?q=1")), "/ui/browse/a?q=1");
        for bad in
            ["//evil.example/ui/", "https://evil.example/", "/ui/../soap", "/ui/\\evil", "/ui/a\r\nX: y", "/soap"]
        {
            assert_eq!(safe_back(Some(bad)), "/ui/browse/", "{bad:?}");
        }
        assert_eq!(safe_back(None), "/ui/browse/");
    }
}
