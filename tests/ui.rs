//! The web interface over HTTP, against the real server on both backends: login (good and bad
//! password, cookie flags, login CSRF, logout), CSRF refusal of changes, escaping of hostile
//! names and values, collections and entries the user may not read (not shown, not exported),
//! keyset paging, sorting, queries (condition, SQL, syntax error with its position), export,
//! edits with confirmation and permission denial, administration and the status page.

#[macro_use]
mod common;
#[path = "common/web.rs"]
mod web;

use common::*;
use web::{Web, request, unescape};

const XSS: &str = "<img src=x onerror=alert(1)>";
const XSS_DIR: &str = "<svg onload=alert(3)>";

/// Rows of the entries table (`<tr>` inside its `<tbody>`), each the texts of its cells.
fn entry_rows(html: &str) -> Vec<Vec<String>> {
    let Some(start) = html.find("id=\"entries\"") else { return Vec::new() };
    let table = &html[start..];
    let body = &table[table.find("<tbody>").expect("tbody") + 7..table.find("</tbody>").expect("/tbody")];
    body.split("<tr>")
        .filter(|r| !r.is_empty())
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let inner = &c[c.find('>').unwrap() + 1..c.find("</td>").unwrap()];
                    // The text of a link cell is inside <a …>…</a>.
                    let text = match inner.find("\">") {
                        Some(i) if inner.starts_with("<a ") => &inner[i + 2..inner.rfind("</a>").unwrap()],
                        _ => inner,
                    };
                    unescape(text)
                })
                .collect()
        })
        .collect()
}

/// The `href` of the `rel="next"` link, unescaped.
fn next_link(html: &str) -> Option<String> {
    let at = html.find("rel=\"next\"")?;
    let before = &html[..at];
    let href = before.rfind("href=\"")?;
    let rest = &html[href + 6..];
    Some(unescape(&rest[..rest.find('"')?]))
}

async fn logged_in(server: &TestServer, user: &str, password: &str) -> Web {
    let mut w = Web::new(server.http);
    let r = w.login(user, password).await;
    assert_eq!(r.status, 303, "login as {user}: {}", r.body);
    w
}

async fn login_and_session(b: Backend) {
    let server = TestServer::start(b).await;
    let mut w = Web::new(server.http);

    // Not logged in: every page sends the browser to the login form, which remembers where to.
    let r = w.get("/ui/browse/").await;
    assert_eq!(r.status, 303);
    assert!(r.header("location").unwrap().starts_with("/ui/login?next="), "{:?}", r.headers);

    let page = w.get("/ui/login").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"user\"") && page.body.contains("name=\"password\""), "{}", page.body);
    let csp = page.header("content-security-policy").expect("CSP header");
    assert!(csp.contains("default-src 'self'") && csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
    assert!(!page.body.contains("<script>"), "no inline script");

    // A wrong password: 401, no session.
    let csrf = page.hidden("csrf").unwrap();
    let bad = w.post("/ui/login", &[("user", "root"), ("password", "wrong"), ("csrf", &csrf)]).await;
    assert_eq!(bad.status, 401);
    assert!(bad.body.contains("Wrong user name or password"));
    assert!(!w.cookies.contains_key("ardacat_session"));

    // A login form without its CSRF cookie is refused, even with the right password.
    let forged = request(
        server.http,
        "POST",
        "/ui/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &web::form(&[("user", "root"), ("password", ROOT_PASSWORD), ("csrf", "00")]),
    )
    .await;
    assert_eq!(forged.status, 403);
    assert!(forged.set_cookies().iter().all(|c| !c.starts_with("ardacat_session=")));

    // The right password: a session cookie with the required flags.
    let good = w.login("root", ROOT_PASSWORD).await;
    assert_eq!(good.status, 303, "{}", good.body);
    let cookie = good.set_cookies().into_iter().find(|c| c.starts_with("ardacat_session=")).expect("session cookie");
    for flag in ["HttpOnly", "SameSite=Strict", "Max-Age=", "Path=/ui"] {
        assert!(cookie.contains(flag), "{flag} missing: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP: no Secure flag ({cookie})");
    let home = w.get("/ui/browse/").await;
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("<span class=\"who\">root</span>"));

    // Logout needs the CSRF token too; then the session is gone.
    let refused = w.post("/ui/logout", &[]).await;
    assert_eq!(refused.status, 403);
    assert_eq!(w.get("/ui/browse/").await.status, 200, "a refused logout keeps the session");
    let csrf = w.csrf().await;
    let out = w.post("/ui/logout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(w.get("/ui/browse/").await.status, 303);
}

async fn csrf_and_edit(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    ok(&mut root, "createdir /d").await;
    ok(&mut root, "addattr /d size int").await;
    ok(&mut root, "addentry /d/e1 size 1").await;
    ok(&mut root, "user_create bob bpw").await;
    let mut w = logged_in(&server, "root", ROOT_PASSWORD).await;

    // Without (or with a wrong) CSRF token nothing changes.
    for token in [None, Some("bad")] {
        let mut fields = vec![("op", "addentry"), ("path", "/d"), ("name", "e2"), ("back", "/ui/browse/d")];
        if let Some(t) = token {
            fields.push(("csrf", t));
        }
        let r = w.post("/ui/do", &fields).await;
        assert_eq!(r.status, 403, "{}", r.body);
    }
    assert_eq!(ok(&mut root, "ls /d").await, ["/d/e1"]);

    // With the token: add an entry, set and clear a value.
    let csrf = w.csrf().await;
    let r = w
        .post(
            "/ui/do",
            &[("csrf", &csrf), ("op", "addentry"), ("path", "/d"), ("name", "e2"), ("back", "/ui/browse/d")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some("/ui/browse/d"));
    let set = [("csrf", csrf.as_str()), ("op", "setattr"), ("path", "/d/e2"), ("attr", "size"), ("value", "42")];
    assert_eq!(w.post("/ui/do", &set).await.status, 303);
    assert_eq!(ok(&mut root, "getattr /d/e2 size").await, ["e2", "42"]);
    let page = w.get("/ui/browse/d/e2").await;
    assert!(page.body.contains("<td class=\"value\">42</td>"), "{}", page.body);
    let bad_value = [("csrf", csrf.as_str()), ("op", "setattr"), ("path", "/d/e2"), ("attr", "size"), ("value", "x")];
    let r = w.post("/ui/do", &bad_value).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("Error 18"), "{}", r.body);
    assert_eq!(ok(&mut root, "getattr /d/e2 size").await, ["e2", "42"]);
    let clear = [("csrf", csrf.as_str()), ("op", "clearattr"), ("path", "/d/e2"), ("attr", "size")];
    assert_eq!(w.post("/ui/do", &clear).await.status, 303);
    let page = w.get("/ui/browse/d/e2").await;
    assert!(page.body.contains("<td class=\"value\"><span class=\"null\">NULL</span></td>"), "{}", page.body);

    // Removal asks first; only the confirmed form removes.
    let rm = [("csrf", csrf.as_str()), ("op", "rm"), ("path", "/d/e2"), ("back", "/ui/browse/d")];
    let ask = w.post("/ui/do", &rm).await;
    assert_eq!(ask.status, 200);
    assert!(ask.body.contains("Confirm removal") && ask.body.contains("name=\"confirmed\" value=\"yes\""));
    assert_eq!(ok(&mut root, "ls /d").await, ["/d/e1", "/d/e2"]);
    let mut confirmed = rm.to_vec();
    confirmed.push(("confirmed", "yes"));
    assert_eq!(w.post("/ui/do", &confirmed).await.status, 303);
    assert_eq!(ok(&mut root, "ls /d").await, ["/d/e1"]);

    // Collections and attributes.
    let mk = [("csrf", csrf.as_str()), ("op", "createdir"), ("path", "/d"), ("name", "sub")];
    assert_eq!(w.post("/ui/do", &mk).await.status, 303);
    let add =
        [("csrf", csrf.as_str()), ("op", "addattr"), ("path", "/d/sub"), ("name", "tag"), ("type", "varchar(20)")];
    assert_eq!(w.post("/ui/do", &add).await.status, 303);
    assert!(ok(&mut root, "listattr /d/sub").await.contains(&"tag".to_string()));
    let chmod = [("csrf", csrf.as_str()), ("op", "chmod"), ("path", "/d/sub"), ("mode", "rwxr-x---")];
    assert_eq!(w.post("/ui/do", &chmod).await.status, 303);
    let acl = [("csrf", csrf.as_str()), ("op", "acl_add"), ("path", "/d/sub"), ("principal", "bob"), ("rights", "rw-")];
    assert_eq!(w.post("/ui/do", &acl).await.status, 303);
    let page = w.get("/ui/browse/d/sub").await;
    assert!(page.body.contains("<code>rwxr-x---</code>") && page.body.contains("<td>bob</td>"), "{}", page.body);

    // Permission denied: bob may not add to root's /d (mode 755); nothing changes.
    let mut bob = logged_in(&server, "bob", "bpw").await;
    let bcsrf = bob.csrf().await;
    let r = bob.post("/ui/do", &[("csrf", &bcsrf), ("op", "addentry"), ("path", "/d"), ("name", "evil")]).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("permission denied"));
    assert!(!ok(&mut root, "ls /d").await.contains(&"/d/evil".to_string()));
    // A session's token is its own: bob's token does not work in root's session.
    let r = w.post("/ui/do", &[("csrf", &bcsrf), ("op", "rmdir"), ("path", "/d/sub"), ("confirmed", "yes")]).await;
    assert_eq!(r.status, 403);
}

async fn escaping_and_hidden(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    ok(&mut root, "createdir /pub").await;
    ok(&mut root, "addattr /pub note text").await;
    ok(&mut root, &format!("addentry '/pub/{XSS}' note '<script>alert(2)</script>'")).await;
    ok(&mut root, "addentry /pub/visible note fine").await;
    ok(&mut root, "addentry /pub/secret note hidden-value").await;
    ok(&mut root, "chmod /pub/secret rw-------").await;
    ok(&mut root, &format!("createdir '/pub/{XSS_DIR}'")).await;
    ok(&mut root, "createdir /pub/private").await;
    ok(&mut root, "chmod /pub/private rwx------").await;
    ok(&mut root, "user_create bob bpw").await;

    let mut w = logged_in(&server, "bob", "bpw").await;
    let page = w.get("/ui/browse/pub").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains(XSS), "a raw hostile name reached the page");
    assert!(!page.body.contains("<script>alert"), "a raw hostile value reached the page");
    assert!(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(page.body.contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
    // The hidden entry and the unreadable collection are not shown, the others are.
    assert!(!page.body.contains("secret") && !page.body.contains("hidden-value"));
    assert!(!page.body.contains("private"), "unreadable collection listed");
    let names: Vec<String> = entry_rows(&page.body).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, [XSS, "visible"]);
    // Not reachable directly either, nor exported.
    assert_eq!(w.get("/ui/browse/pub/private").await.status, 403);
    assert_eq!(w.get("/ui/browse/pub/secret").await.status, 403);
    let csv = w.get("/ui/export/pub?format=csv").await;
    assert_eq!(csv.status, 200);
    assert!(!csv.body.contains("secret") && csv.body.contains("visible"), "{}", csv.body);
    let json = w.get("/ui/export/pub?format=json&q=SELECT%20FILE%2C%20note%20FROM%20%2Fpub").await;
    assert_eq!(json.status, 200, "{}", json.body);
    let rows: serde_json::Value = serde_json::from_str(&json.body).expect("JSON export");
    assert_eq!(rows.as_array().unwrap().len(), 2, "{}", json.body);
    assert!(!json.body.contains("secret"));
    let hidden = w.get("/ui/export/pub/private?format=csv").await;
    assert_eq!(hidden.status, 403);
    // The entry page of the hostile name escapes it too.
    let e = w.get(&format!("/ui/browse/pub/{}", web::enc(XSS))).await;
    assert_eq!(e.status, 200, "{}", e.body);
    assert!(!e.body.contains(XSS) && !e.body.contains("<script>alert"));
    // The hostile collection: listed escaped, and its own page.
    assert!(page.body.contains("&lt;svg onload=alert(3)&gt;") && !page.body.contains(XSS_DIR));
    let c = w.get(&format!("/ui/browse/pub/{}", web::enc(XSS_DIR))).await;
    assert_eq!(c.status, 200, "{}", c.body);
    assert!(!c.body.contains(XSS_DIR) && c.body.contains("&lt;svg onload=alert(3)&gt;"));
}

async fn paging_sorting_query_export(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    ok(&mut root, "createdir /runs").await;
    ok(&mut root, "addattr /runs size int").await;
    ok(&mut root, "constraint_add_check /runs 'size >= 0' size_ok").await;
    for i in 0..25 {
        ok(&mut root, &format!("addentry /runs/r{i:02} size {}", (i * 7) % 25)).await;
    }
    let mut w = logged_in(&server, "root", ROOT_PASSWORD).await;

    // Keyset paging: 10 + 10 + 5 rows, each entry once, following rel="next".
    let mut seen = Vec::new();
    let mut url = "/ui/browse/runs?size=10".to_string();
    let mut pages = 0;
    loop {
        let r = w.get(&url).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let rows = entry_rows(&r.body);
        pages += 1;
        assert_eq!(rows.len(), if pages < 3 { 10 } else { 5 });
        seen.extend(rows.into_iter().map(|r| r[0].clone()));
        match next_link(&r.body) {
            Some(n) => url = format!("/ui/browse/runs{n}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..25).map(|i| format!("r{i:02}")).collect();
    assert_eq!(seen, expected);

    // Sorting by a column, descending, across a page boundary.
    let r = w.get("/ui/browse/runs?size=5&sort=size&dir=desc").await;
    let sizes: Vec<i64> = entry_rows(&r.body).iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(sizes, [24, 23, 22, 21, 20]);
    assert!(r.body.contains("aria-sort=\"descending\""));
    let n = next_link(&r.body).unwrap();
    let r2 = w.get(&format!("/ui/browse/runs{n}")).await;
    let sizes: Vec<i64> = entry_rows(&r2.body).iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(sizes, [19, 18, 17, 16, 15]);

    // A condition; a SQL SELECT; a syntax error shown with its position.
    let r = w.get("/ui/browse/runs?q=size+%3E%3D+22").await;
    let mut got: Vec<String> = entry_rows(&r.body).into_iter().map(|r| r[1].clone()).collect();
    got.sort();
    assert_eq!(got, ["22", "23", "24"]);
    let sql = web::enc("SELECT FILE, size FROM /runs WHERE size < 2 ORDER BY size");
    let r = w.get(&format!("/ui/browse/runs?q={sql}")).await;
    assert_eq!(entry_rows(&r.body), [["r00", "0"], ["r18", "1"]]);
    let r = w.get("/ui/browse/runs?q=size+%3E+and").await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("illegal query: at position"), "{}", r.body);
    assert!(r.body.contains("<mark class=\"pos\""), "{}", r.body);
    let r = w.get(&format!("/ui/browse/runs?q={}", web::enc("SELECT FILE FROM /runs WHERE size % 2 = 1"))).await;
    assert!(
        r.body.contains("at position 36")
            && r.body.contains("size % <mark class=\"pos\" title=\"position 36\">2</mark> = 1"),
        "{}",
        r.body
    );

    // Export of a query: CSV with a header, JSON objects.
    let csv = w.get("/ui/export/runs?format=csv&q=size+%3C+3&sort=size").await;
    assert_eq!(csv.status, 200);
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    assert!(csv.header("content-disposition").unwrap().contains("runs.csv"));
    assert_eq!(csv.body, "FILE,size\r\nr00,0\r\nr18,1\r\nr11,2\r\n");
    let json = w.get("/ui/export/runs?format=json").await;
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 25);
    assert_eq!(v[0]["FILE"], "r00");
    assert_eq!(v[0]["size"], "0");
    let bad = w.get("/ui/export/runs?format=csv&q=size+%3E").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("<mark class=\"pos\""));

    // The schema shows the constraint.
    let page = w.get("/ui/browse/runs").await;
    assert!(page.body.contains("<td>size_ok</td><td>check</td><td><code>size &gt;= 0</code></td>"), "{}", page.body);

    // Collections list with entry counts.
    let top = w.get("/ui/browse/").await;
    assert!(top.body.contains("<td class=\"num\">25</td>"), "{}", top.body);
}

async fn admin_and_status(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    let mut w = logged_in(&server, "root", ROOT_PASSWORD).await;
    let csrf = w.csrf().await;
    assert_eq!(w.get("/ui/admin").await.status, 200);
    let mk =
        [("csrf", csrf.as_str()), ("op", "user_create"), ("user", "carol"), ("password", "cpw"), ("back", "/ui/admin")];
    assert_eq!(w.post("/ui/do", &mk).await.status, 303);
    for f in [
        vec![("op", "grp_create"), ("group", "physics")],
        vec![("op", "grp_adduser"), ("group", "physics"), ("user", "carol")],
        vec![("op", "user_subject_add"), ("user", "carol"), ("subject", "/CN=Carol")],
    ] {
        let mut f = f;
        f.push(("csrf", &csrf));
        let r = w.post("/ui/do", &f).await;
        assert_eq!(r.status, 303, "{f:?}: {}", r.body);
    }
    let admin = w.get("/ui/admin").await;
    assert!(admin.body.contains("<a href=\"/ui/admin?user=carol\">carol</a>"), "{}", admin.body);
    assert!(admin.body.contains("<tr><td>physics</td><td>carol</td></tr>"), "{}", admin.body);
    let look = w.get("/ui/admin?user=carol").await;
    assert!(look.body.contains("physics") && look.body.contains("/CN=Carol"), "{}", look.body);
    assert_eq!(ok(&mut root, "grp_member carol").await, ["physics"]);
    // carol logs in with the password root gave; she is not root.
    let mut carol = logged_in(&server, "carol", "cpw").await;
    assert_eq!(carol.get("/ui/admin").await.status, 403);
    let ccsrf = carol.csrf().await;
    let r = carol.post("/ui/do", &[("csrf", &ccsrf), ("op", "user_create"), ("user", "eve"), ("password", "x")]).await;
    assert_eq!(r.status, 403);
    // carol changes her own password from the status page; her other sessions end, this one stays.
    let mut carol2 = logged_in(&server, "carol", "cpw").await;
    let r =
        carol.post("/ui/do", &[("csrf", &ccsrf), ("op", "user_passwd"), ("user", "carol"), ("password", "new")]).await;
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(carol.get("/ui/browse/").await.status, 200);
    assert_eq!(carol2.get("/ui/browse/").await.status, 303, "the other session ended");
    assert_eq!(Web::new(server.http).login("carol", "cpw").await.status, 401);
    // Removing a user asks first.
    let rm = [("csrf", csrf.as_str()), ("op", "user_remove"), ("user", "carol"), ("back", "/ui/admin")];
    assert!(w.post("/ui/do", &rm).await.body.contains("Confirm removal"));
    let mut confirmed = rm.to_vec();
    confirmed.push(("confirmed", "yes"));
    assert_eq!(w.post("/ui/do", &confirmed).await.status, 303);
    // Her session ends with her account.
    assert_eq!(carol.get("/ui/browse/").await.status, 303);

    let status = w.get("/ui/status").await;
    assert_eq!(status.status, 200);
    assert!(status.body.contains("(ardacat ") && status.body.contains("tcp_connections_total"), "{}", status.body);
}

async fn login_rate_limit(b: Backend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("ardacat.toml");
    std::fs::write(&cfg, "max_failed_logins_per_minute = 2\n").expect("config");
    let server = TestServer::start_with(TestDb::new(b).await, &["--config", cfg.to_str().unwrap()]).await;
    let mut w = Web::new(server.http);
    assert_eq!(w.login("root", "bad").await.status, 401);
    assert_eq!(w.login("root", "bad").await.status, 401);
    let r = w.login("root", ROOT_PASSWORD).await;
    assert_eq!(r.status, 429, "the limit applies to the web login too: {}", r.body);
}

on_both_backends!(
    login_and_session,
    csrf_and_edit,
    escaping_and_hidden,
    paging_sorting_query_export,
    admin_and_status,
    login_rate_limit
);
