//! SOAP interop with five independent toolkits against the real server, on SQLite and
//! PostgreSQL: Python zeep (`tests/interop/zeep_scenario.py`, SOAP 1.1 and 1.2), Python suds
//! (`tests/interop/suds_scenario.py`, SOAP 1.1: suds speaks no 1.2), JavaScript node-soap
//! (`tests/interop/node_scenario.js`, SOAP 1.1 and 1.2), Java JAX-WS with stubs generated at test
//! time from the live WSDL (`tests/interop/jaxws/`, both ports) and a gSOAP C client generated
//! likewise (`tests/interop/gsoap/build.sh`, SOAP 1.1 and 1.2 builds).
//!
//! zeep and suds: `ARDACAT_PYTHON` names a python with zeep and suds (package `suds-community`);
//! without it a venv is made at `target/interop-venv` (`python3 -m venv` + `pip install`). gSOAP:
//! `wsdl2h`, `soapcpp2` and libgsoap; if missing, `apt-get install -y gsoap libgsoap-dev` is
//! tried; JAX-WS likewise (`jaxws libjaxws-java default-jdk-headless`). node-soap: Node.js and
//! npm, then `npm install soap@1` into `target/interop-node`.
//! If any cannot be provided the test fails: it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn show(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

async fn run(mut cmd: Command) -> Output {
    let what = format!("{cmd:?}");
    tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// The scenario `cmd` ran green: exit 0 and its last line `N passed, 0 failed` (N > 0).
async fn expect_passed(what: String, cmd: Command) {
    let out = run(cmd).await;
    assert!(out.status.success() && passed_line(&out), "{}", show(&what, &out));
    eprintln!("{what}: {}", String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default());
}

fn on_path(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// Makes `present()` true by installing Debian `packages` (after an `apt-get update` if the first
/// try fails), or fails the test naming `what`.
fn ensure_debian(what: &str, packages: &[&str], present: fn() -> bool) {
    // One apt-get at a time: this binary's tests run in parallel, and a second apt-get fails
    // on dpkg's lock while the first holds it (seen on a fresh machine run without run-all.sh).
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _apt = APT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if present() {
        return;
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
    };
    let ok = install().is_ok_and(|o| o.status.success())
        || (Command::new("apt-get").args(["update", "-q"]).output().is_ok_and(|o| o.status.success())
            && install().is_ok_and(|o| o.status.success()));
    assert!(ok && present(), "{what} is required and could not be installed (Debian: {})", packages.join(" "));
}

fn can_import(python: &Path, module: &str) -> bool {
    Command::new(python).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
}

/// A python that can `import MODULE` (pip package `package`).
fn interop_python(module: &str, package: &str) -> PathBuf {
    if let Some(p) = std::env::var_os("ARDACAT_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(can_import(&p, module), "ARDACAT_PYTHON={} cannot import {module}", p.display());
        return p;
    }
    // The two Python scenarios run at once: one makes or extends the venv at a time.
    static VENV: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = VENV.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let venv = workspace().join("target/interop-venv");
    let python = venv.join("bin/python");
    if can_import(&python, module) {
        return python;
    }
    if !python.exists() {
        let out = Command::new("python3").args(["-m", "venv"]).arg(&venv).output().expect("run python3 -m venv");
        assert!(out.status.success(), "{}", show("python3 -m venv", &out));
    }
    let out = Command::new(venv.join("bin/pip")).args(["install", "-q", package]).output().expect("run pip");
    assert!(out.status.success(), "{}", show(&format!("pip install {package}"), &out));
    assert!(can_import(&python, module), "{module} still not importable from {}", python.display());
    python
}

fn passed_line(out: &Output) -> bool {
    String::from_utf8_lossy(&out.stdout).lines().any(|l| l.ends_with(" passed, 0 failed") && !l.starts_with("0 passed"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zeep_scenario() {
    python_scenario("zeep", "zeep", "zeep_scenario.py").await;
}

/// suds (suds-community): a third toolkit, strict about document/literal, SOAP 1.1 only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suds_scenario() {
    python_scenario("suds", "suds-community", "suds_scenario.py").await;
}

/// Runs `tests/interop/SCRIPT` with a python that has `module`, against a fresh server on
/// each backend; it must print `N passed, 0 failed`.
async fn python_scenario(module: &'static str, package: &'static str, script: &str) {
    let python = tokio::task::spawn_blocking(move || interop_python(module, package)).await.expect("join");
    for b in BACKENDS {
        let srv = TestServer::start(b).await;
        let mut cmd = Command::new(&python);
        cmd.arg(workspace().join("tests/interop").join(script)).args([
            "--url",
            &format!("http://{}", srv.http),
            "--user",
            "root",
            "--password",
            ROOT_PASSWORD,
        ]);
        expect_passed(format!("{module} on {b:?}"), cmd).await;
    }
}

fn has_node_soap(modules: &Path) -> bool {
    Command::new("node")
        .args(["-e", "require('soap')"])
        .env("NODE_PATH", modules)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `node_modules` of `target/interop-node` with node-soap (`npm install soap@1` there once).
fn ensure_node_soap() -> PathBuf {
    let prefix = workspace().join("target/interop-node");
    let modules = prefix.join("node_modules");
    if has_node_soap(&modules) {
        return modules;
    }
    ensure_debian("Node.js and npm", &["nodejs", "npm"], || on_path("node") && on_path("npm"));
    std::fs::create_dir_all(&prefix).expect("create target/interop-node");
    let out = Command::new("npm")
        .args(["install", "--prefix"])
        .arg(&prefix)
        .args(["--no-save", "--no-audit", "--no-fund", "--loglevel", "error", "soap@1"])
        .output()
        .expect("run npm");
    assert!(out.status.success(), "{}", show("npm install soap@1", &out));
    assert!(has_node_soap(&modules), "node-soap still not loadable from {}", modules.display());
    modules
}

/// node-soap (JavaScript): the scenario over the SOAP 1.1 port and, with SOAP 1.2 envelopes, the
/// SOAP 1.2 port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_soap_scenario() {
    let modules = tokio::task::spawn_blocking(ensure_node_soap).await.expect("join");
    for b in BACKENDS {
        let srv = TestServer::start(b).await;
        let mut cmd = Command::new("node");
        cmd.arg(workspace().join("tests/interop/node_scenario.js"))
            .args(["--url", &format!("http://{}", srv.http), "--user", "root", "--password", ROOT_PASSWORD])
            .env("NODE_PATH", &modules);
        expect_passed(format!("node-soap on {b:?}"), cmd).await;
    }
}

fn has_jaxws() -> bool {
    ["wsimport", "javac", "java"].iter().all(|t| on_path(t)) && Path::new("/usr/share/java/jaxws-rt.jar").exists()
}

/// JAX-WS (Java, the reference implementation): stubs from `wsimport -extension` of the live
/// WSDL, the scenario over the SOAP 1.1 and the SOAP 1.2 port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jaxws_scenario() {
    tokio::task::spawn_blocking(|| {
        ensure_debian(
            "JAX-WS (wsimport, the RI, a JDK)",
            &["jaxws", "libjaxws-java", "default-jdk-headless"],
            has_jaxws,
        )
    })
    .await
    .expect("join");
    for b in BACKENDS {
        let srv = TestServer::start(b).await;
        let build = workspace().join(format!("target/interop-jaxws/{b:?}").to_lowercase());
        let mut cmd = Command::new("bash");
        cmd.arg(workspace().join("tests/interop/jaxws/build.sh"))
            .arg(format!("http://{}/soap?wsdl", srv.http))
            .arg(&build);
        let out = run(cmd).await;
        assert!(out.status.success(), "{}", show("JAX-WS build", &out));
        let classpath = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
        let mut cmd = Command::new("java");
        cmd.args(["-cp", &classpath, "Scenario", &format!("http://{}", srv.http), "root", ROOT_PASSWORD]);
        expect_passed(format!("JAX-WS on {b:?}"), cmd).await;
    }
}

fn has_gsoap() -> bool {
    on_path("wsdl2h")
        && on_path("soapcpp2")
        && Command::new("pkg-config").args(["--exists", "gsoap"]).status().is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gsoap_scenario() {
    tokio::task::spawn_blocking(|| {
        ensure_debian("gSOAP (wsdl2h, soapcpp2, libgsoap)", &["gsoap", "libgsoap-dev"], has_gsoap)
    })
    .await
    .expect("join");
    let script = workspace().join("tests/interop/gsoap/build.sh");
    for b in BACKENDS {
        let srv = TestServer::start(b).await;
        // Generated from this server's WSDL: the stubs' default endpoint is its soap:address.
        let build = workspace().join(format!("tests/interop/gsoap/build/{b:?}").to_lowercase());
        let mut cmd = Command::new("bash");
        cmd.arg(&script).arg(format!("http://{}/soap?wsdl", srv.http)).arg(&build);
        let out = run(cmd).await;
        assert!(out.status.success(), "{}", show("gSOAP build", &out));
        for (minor, dir) in [(1, "soap11"), (2, "soap12")] {
            let mut cmd = Command::new(build.join(dir).join("ardacat_gsoap_client"));
            cmd.args(["root", ROOT_PASSWORD, &format!("/gsoap{minor}"), &minor.to_string()]);
            expect_passed(format!("gSOAP SOAP 1.{minor} client on {b:?}"), cmd).await;
        }
    }
}
