//! The web interface in a real browser: headless Chromium (Debian's `chromium`) driven through
//! WebDriver (`chromedriver`, Debian's `chromium-driver`) with a small WebDriver client over
//! HTTP. Covers login (bad and good password), browsing, paging across pages, sorting, a query
//! with a syntax error and one with results, export, editing a value, permission denied, hostile
//! names and values shown as text (no alert opens), logout, and browse and query with
//! JavaScript off. With `ARDACAT_UI_SCREENSHOTS=<dir>` it saves screenshots of the main pages
//! there (docs/ui/ holds the committed ones).

#[macro_use]
mod common;
#[path = "common/web.rs"]
mod web;

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use common::*;
use serde_json::{Value, json};

const XSS: &str = "<img src=x onerror=alert(1)>";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running chromedriver, killed on drop.
struct Driver {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    async fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian package chromium-driver) must be installed; tests/run-all.sh installs it");
        // Owned at once: a failure below kills and reaps it (Drop).
        let driver = Driver { child, addr: ([127, 0, 0, 1], port).into() };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(driver.addr).await.is_ok() {
                let r = web::request(driver.addr, "GET", "/status", &[], "").await;
                if r.status == 200 && r.body.contains("\"ready\":true") {
                    return driver;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("chromedriver did not become ready");
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        let headers: &[(&str, &str)] = if method == "POST" { &[("Content-Type", "application/json")] } else { &[] };
        let r = web::request(self.addr, method, path, headers, &text).await;
        let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("WebDriver reply {}: {e}", r.body));
        v["value"].clone()
    }

    /// A browser session (1280×800); `javascript: false` turns scripts off.
    async fn session(&self, javascript: bool) -> Browser<'_> {
        let mut args = vec![
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1280,800",
        ];
        if !javascript {
            args.push("--blink-settings=scriptEnabled=false");
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}});
        let v = self.call("POST", "/session", Some(caps)).await;
        let id = v["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {v}")).to_string();
        Browser { driver: self, id }
    }
}

struct Browser<'a> {
    driver: &'a Driver,
    id: String,
}

impl Browser<'_> {
    async fn cmd(&self, method: &str, rest: &str, body: Option<Value>) -> Value {
        self.driver.call(method, &format!("/session/{}{rest}", self.id), body).await
    }

    async fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({"url": url}))).await;
    }

    async fn url(&self) -> String {
        self.cmd("GET", "/url", None).await.as_str().unwrap_or_default().to_string()
    }

    async fn source(&self) -> String {
        self.cmd("GET", "/source", None).await.as_str().unwrap_or_default().to_string()
    }

    async fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css}))).await;
        v.as_array()
            .map(|a| a.iter().filter_map(|e| e[ELEMENT].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    async fn find(&self, css: &str) -> String {
        let v = self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css}))).await;
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {v}")).to_string()
    }

    async fn text(&self, css: &str) -> String {
        let e = self.find(css).await;
        self.cmd("GET", &format!("/element/{e}/text"), None).await.as_str().unwrap_or_default().to_string()
    }

    async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.find_all(css).await {
            out.push(
                self.cmd("GET", &format!("/element/{e}/text"), None).await.as_str().unwrap_or_default().to_string(),
            );
        }
        out
    }

    async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.cmd("POST", &format!("/element/{e}/clear"), Some(json!({}))).await;
        self.cmd("POST", &format!("/element/{e}/value"), Some(json!({"text": text}))).await;
    }

    /// Clicks what `css` finds and waits for the page it leads to (the old page's root
    /// element goes stale).
    async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.click_element(&e).await;
    }

    async fn click_element(&self, e: &str) {
        let old = self.find("html").await;
        self.cmd("POST", &format!("/element/{e}/click"), Some(json!({}))).await;
        self.wait_stale(&old).await;
    }

    async fn wait_stale(&self, old: &str) {
        // Generous: the machine may be busy with builds.
        for _ in 0..2400 {
            let v = self.cmd("GET", &format!("/element/{old}/name"), None).await;
            if v.get("error").is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the page did not change");
    }

    /// The first cell of every row of the entries table.
    async fn names(&self) -> Vec<String> {
        self.texts("#entries tbody tr td:first-child").await
    }

    /// Is an alert open (a script ran)?
    async fn alert_open(&self) -> bool {
        let v = self.cmd("GET", "/alert/text", None).await;
        v.get("error").is_none()
    }

    async fn screenshot(&self, name: &str) {
        let Ok(dir) = std::env::var("ARDACAT_UI_SCREENSHOTS") else { return };
        let v = self.cmd("GET", "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
        std::fs::write(format!("{dir}/{name}.png"), png).unwrap();
    }

    async fn resize(&self, width: u32, height: u32) {
        self.cmd("POST", "/window/rect", Some(json!({"width": width, "height": height}))).await;
    }

    async fn end(self) {
        self.driver.call("DELETE", &format!("/session/{}", self.id), None).await;
    }
}

/// The scenario's future is large in a debug build (many WebDriver calls, each with its JSON),
/// so it runs on a thread with a large stack and a runtime of its own.
async fn in_a_browser(b: Backend) {
    let run = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_stack_size(64 << 20)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(Box::pin(scenario(b)))
        })
        .unwrap();
    tokio::task::spawn_blocking(move || run.join()).await.unwrap().unwrap_or_else(|p| std::panic::resume_unwind(p));
}

async fn scenario(b: Backend) {
    let server = TestServer::start(b).await;
    let mut root = server.raw().await;
    ok(&mut root, "createdir /runs").await;
    ok(&mut root, "addattr /runs size int").await;
    ok(&mut root, "addattr /runs note varchar(64)").await;
    for i in 0..30 {
        ok(&mut root, &format!("addentry /runs/r{i:02} size {} note n{i}", (i * 7) % 30)).await;
    }
    ok(&mut root, &format!("addentry '/runs/{XSS}' size 99 note '<script>alert(2)</script>'")).await;
    ok(&mut root, "createdir /runs/calib").await;
    ok(&mut root, "user_create bob bpw").await;
    let base = format!("http://{}", server.http);
    let driver = Driver::start().await;
    let br = driver.session(true).await;

    // Login: a wrong password stays on the form with a message; the right one gets in.
    br.go(&format!("{base}/ui/browse/runs")).await;
    assert!(br.url().await.contains("/ui/login"), "not logged in: sent to the login form");
    br.screenshot("login").await;
    br.type_into("input[name=user]", "root").await;
    br.type_into("input[name=password]", "wrong").await;
    br.click("form.login button").await;
    assert!(br.text(".error").await.contains("Wrong user name or password"));
    br.type_into("input[name=user]", "root").await;
    br.type_into("input[name=password]", ROOT_PASSWORD).await;
    br.click("form.login button").await;
    assert!(br.url().await.ends_with("/ui/browse/runs"), "back where the user wanted to go: {}", br.url().await);
    let cookies = br.cmd("GET", "/cookie", None).await;
    let session = cookies.as_array().unwrap().iter().find(|c| c["name"] == "ardacat_session").expect("session cookie");
    assert_eq!(session["httpOnly"], true);
    assert_eq!(session["sameSite"], "Strict");

    // Browse: sub-collection, schema, the hostile entry shown as text, and no script ran.
    assert!(br.texts("table.collections td a").await.contains(&"calib".to_string()));
    assert!(br.texts("table.schema td").await.contains(&"size".to_string()));
    assert!(!br.alert_open().await, "a hostile name or value ran a script");
    br.type_into("#q", "size = 99").await;
    br.click("form.query button").await;
    assert_eq!(br.names().await, [XSS]);
    assert!(br.texts("#entries td").await.contains(&"<script>alert(2)</script>".to_string()));
    assert!(!br.alert_open().await);

    // Paging across pages with the page size, following rel="next".
    br.go(&format!("{base}/ui/browse/runs?size=10")).await;
    br.screenshot("browse").await;
    let mut seen = br.names().await;
    assert_eq!(seen.len(), 10);
    while !br.find_all("a[rel=next]").await.is_empty() {
        br.click("a[rel=next]").await;
        seen.extend(br.names().await);
    }
    assert_eq!(seen.len(), 31);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 31, "no row twice");

    // Sorting: a click on the column header sorts ascending, a second click descending.
    br.click("th a.sort[href*='sort=size']").await;
    let sizes = br.texts("#entries tbody tr td:nth-child(2)").await;
    assert_eq!(&sizes[..3], ["0", "1", "2"]);
    br.click("th a.sort[href*='sort=size']").await;
    let sizes = br.texts("#entries tbody tr td:nth-child(2)").await;
    assert_eq!(&sizes[..2], ["99", "29"]);

    // Query: a syntax error is shown with its position marked; then results.
    br.type_into("#q", "size > and").await;
    br.click("form.query button").await;
    assert!(br.text(".error p").await.contains("at position"));
    assert_eq!(br.text("mark.pos").await, "a");
    br.screenshot("query-error").await;
    br.type_into("#q", "SELECT FILE, size FROM /runs WHERE size < 3 ORDER BY size").await;
    // Enter submits the form (keyboard use).
    let q = br.find("#q").await;
    let old = br.find("html").await;
    br.cmd("POST", &format!("/element/{q}/value"), Some(json!({"text": "\u{E007}"}))).await;
    br.wait_stale(&old).await;
    assert_eq!(br.names().await, ["r00", "r13", "r26"]);

    // Export of the shown query, fetched by the page's own session.
    br.type_into("#q", "size < 2").await;
    br.click("form.query button").await;
    let href = br
        .cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": "return document.getElementById('export-csv').href", "args": []})),
        )
        .await;
    let csv = br
        .cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": "const done = arguments[arguments.length - 1]; fetch(arguments[0]).then(r => r.text()).then(done)", "args": [href]})),
        )
        .await;
    // The sort chosen above (size, descending) stays with the query and its export.
    assert_eq!(csv.as_str().unwrap(), "FILE,size,note\r\nr13,1,n13\r\nr00,0,n0\r\n");

    // Edit: set a value on the entry page.
    br.go(&format!("{base}/ui/browse/runs/r01")).await;
    br.type_into("#v-note", "changed by the browser").await;
    br.click("#v-note + button").await;
    assert!(br.texts("#values td.value").await.contains(&"changed by the browser".to_string()));
    br.screenshot("entry").await;
    assert_eq!(ok(&mut root, "getattr /runs/r01 note").await, ["r01", "changed by the browser"]);
    // Removal asks for confirmation.
    br.go(&format!("{base}/ui/browse/runs/r02")).await;
    let forms = br.find_all("form.action").await;
    let last = forms.last().unwrap();
    let button = br
        .cmd("POST", &format!("/element/{last}/element"), Some(json!({"using": "css selector", "value": "button"})))
        .await;
    let button = button[ELEMENT].as_str().unwrap().to_string();
    br.click_element(&button).await;
    assert!(br.source().await.contains("Confirm removal"));
    br.click("#confirm").await;
    assert!(br.url().await.ends_with("/ui/browse/runs"));
    assert!(!ok(&mut root, "ls /runs").await.contains(&"/runs/r02".to_string()));

    br.go(&format!("{base}/ui/admin")).await;
    br.screenshot("admin").await;
    br.go(&format!("{base}/ui/status")).await;
    assert!(br.text("#version").await.contains("ardacat"));
    br.screenshot("status").await;
    br.go(&format!("{base}/ui/browse/runs?size=10")).await;
    br.resize(390, 844).await;
    br.screenshot("phone").await;
    br.resize(1280, 800).await;

    // Logout: back to the login form, and pages need a login again.
    br.click("#logout").await;
    assert!(br.url().await.contains("/ui/login"));
    br.go(&format!("{base}/ui/browse/")).await;
    assert!(br.url().await.contains("/ui/login"));

    // Permission denied: bob may read but not change root's collection.
    br.type_into("input[name=user]", "bob").await;
    br.type_into("input[name=password]", "bpw").await;
    br.click("form.login button").await;
    br.go(&format!("{base}/ui/browse/runs/r03")).await;
    br.type_into("#v-note", "bob was here").await;
    br.click("#v-note + button").await;
    assert!(br.source().await.contains("permission denied"));
    assert_eq!(ok(&mut root, "getattr /runs/r03 note").await, ["r03", "n3"]);
    br.end().await;

    // With JavaScript off, browsing and querying work the same.
    let plain = driver.session(false).await;
    plain.go(&format!("{base}/ui/login")).await;
    plain.type_into("input[name=user]", "root").await;
    plain.type_into("input[name=password]", ROOT_PASSWORD).await;
    plain.click("form.login button").await;
    plain.go(&format!("{base}/ui/browse/runs?size=5")).await;
    assert_eq!(plain.names().await.len(), 5);
    plain.click("a[rel=next]").await;
    assert_eq!(plain.names().await.len(), 5);
    plain.type_into("#q", "size = 29").await;
    plain.click("form.query button").await;
    assert_eq!(plain.names().await, ["r17"]);
    plain.end().await;
}

on_both_backends!(in_a_browser);
