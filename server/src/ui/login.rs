//! Login and logout pages of the web interface: the form (password, or the client
//! certificate over HTTPS), the session cookie, logout. Must not decide a login: every attempt goes
//! through `crate::auth::authenticate` (rate limit, audit).

use super::*;

pub(super) async fn home() -> Response {
    redirect("/ui/browse/")
}

fn login_form(st: &UiState, next: &str, token: &str, subject: Option<&str>, message: Option<&str>) -> String {
    let mut body = String::from("<h1>Log in</h1>");
    if let Some(m) = message {
        body.push_str(&html::error_box(m, None));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/ui/login\" class=\"login\">{}<input type=\"hidden\" name=\"next\" value=\"{}\">\
         <label>User <input name=\"user\" autocomplete=\"username\" required autofocus></label>\
         <label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\"></label>\
         <button type=\"submit\">Log in</button></form>",
        csrf_field(token),
        esc(next)
    ));
    if st.shared.tls.is_some()
        && let Some(dn) = subject
    {
        body.push_str(&format!(
            "<form method=\"post\" action=\"/ui/login\" class=\"login\">{}<input type=\"hidden\" name=\"next\" value=\"{}\">\
             <input type=\"hidden\" name=\"certificate\" value=\"1\"><p>Client certificate: <code>{}</code></p>\
             <button type=\"submit\">Log in with this certificate</button></form>",
            csrf_field(token),
            esc(next),
            esc(dn)
        ));
    }
    page("Log in", None, &body)
}

/// The login CSRF cookie (double submit: the form repeats it).
fn login_cookie(st: &UiState, token: &str) -> HeaderValue {
    let secure = if st.shared.tls.is_some() { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{LOGIN_CSRF_COOKIE}={token}; Path=/ui/login; HttpOnly; SameSite=Strict; Max-Age=3600{secure}"
    ))
    .expect("token is hex")
}

pub(super) async fn login_page(
    State(st): State<Arc<UiState>>,
    ext: Extensions,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(id) = cookie(&headers, SESSION_COOKIE)
        && st.sessions.get(id).is_some()
    {
        return redirect(&safe_back(q.get("next").map(String::as_str)));
    }
    let token =
        cookie(&headers, LOGIN_CSRF_COOKIE).filter(|t| t.len() == 64).map(str::to_string).unwrap_or_else(random_token);
    let next = safe_back(q.get("next").map(String::as_str));
    let (_, subject) = peer_of(&ext);
    let mut r = html_response(StatusCode::OK, login_form(&st, &next, &token, subject.as_deref(), None));
    r.headers_mut().insert(SET_COOKIE, login_cookie(&st, &token));
    r
}

pub(super) async fn login_submit(
    State(st): State<Arc<UiState>>,
    ext: Extensions,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let (ip, subject) = peer_of(&ext);
    let next = safe_back(form.get("next").map(String::as_str));
    let sent = form.get("csrf").map(String::as_str).unwrap_or("");
    let expected = cookie(&headers, LOGIN_CSRF_COOKIE).unwrap_or("");
    let fresh = random_token();
    let refuse = |status: StatusCode, message: &str| {
        let mut r = html_response(status, login_form(&st, &next, &fresh, subject.as_deref(), Some(message)));
        r.headers_mut().insert(SET_COOKIE, login_cookie(&st, &fresh));
        r
    };
    if expected.is_empty() || !session::same_token(sent, expected) {
        return refuse(StatusCode::FORBIDDEN, "The login form expired (CSRF check failed); please try again.");
    }
    let user = form.get("user").map(String::as_str).unwrap_or("");
    let credentials = if form.get("certificate").is_some_and(|v| v == "1") {
        Credentials::Certificate { subject: subject.as_deref(), claimed: "" }
    } else {
        Credentials::Password { user, password: form.get("password").map(String::as_str) }
    };
    match auth::authenticate(&st.shared, Via::Web, ip, credentials).await {
        // A service account (`user_may_sudo`) may do nothing as itself here.
        Ok(login) if st.shared.catalogue.admit(&ardacat_core::Session::new(login.principal.clone()), "ui").is_err() => {
            refuse(StatusCode::FORBIDDEN, "A service account cannot use the web interface.")
        }
        Ok(login) => {
            tracing::info!(target: "audit", via = ?Via::Web, user = %login.principal.user, peer = ?ip, "web login");
            let id = st.sessions.open(login.principal);
            let secure = if st.shared.tls.is_some() { "; Secure" } else { "" };
            let mut r = redirect(&next);
            let cookie = format!(
                "{SESSION_COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
                SESSION_TTL.as_secs()
            );
            r.headers_mut().append(SET_COOKIE, HeaderValue::from_str(&cookie).expect("id is hex"));
            r.headers_mut().append(
                SET_COOKIE,
                HeaderValue::from_static("ardacat_login_csrf=; Path=/ui/login; HttpOnly; SameSite=Strict; Max-Age=0"),
            );
            r
        }
        Err(AuthError::Throttled) => refuse(StatusCode::TOO_MANY_REQUESTS, auth::THROTTLED),
        Err(AuthError::Denied(_)) => refuse(StatusCode::UNAUTHORIZED, "Wrong user name or password."),
        Err(AuthError::Internal(e)) => {
            tracing::error!(error = %e, "web login failed");
            refuse(StatusCode::SERVICE_UNAVAILABLE, "The catalogue cannot be reached; try again later.")
        }
    }
}

pub(super) async fn logout(
    State(st): State<Arc<UiState>>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    if let Some(r) = csrf_refusal(&ctx, &form) {
        return r;
    }
    st.sessions.close(&ctx.id);
    let secure = if st.shared.tls.is_some() { "; Secure" } else { "" };
    let mut r = redirect("/ui/login");
    r.headers_mut().insert(
        SET_COOKIE,
        HeaderValue::from_str(&format!("{SESSION_COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0{secure}"))
            .expect("static text"),
    );
    r
}
