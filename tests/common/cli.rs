//! The real `ardacat` CLI binary for end-to-end tests of its subcommands (dump, restore). It
//! belongs to another package (ardacat-client), for whose binaries cargo sets no
//! `CARGO_BIN_EXE_*` here, so it is built once per test process with the cargo running the
//! tests (a no-op when it is up to date), into the same target directory and profile.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

pub async fn ardacat_cli() -> PathBuf {
    static BIN: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    BIN.get_or_init(|| async {
        let server = PathBuf::from(env!("CARGO_BIN_EXE_ardacat-server"));
        let out = server.parent().expect("binary directory").to_path_buf();
        let dir_name = out.file_name().and_then(|n| n.to_str()).expect("profile directory").to_string();
        let profile = if dir_name == "debug" { "dev".to_string() } else { dir_name };
        let target = out.parent().expect("target directory").to_path_buf();
        let status = tokio::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "ardacat-client", "--bin", "ardacat", "--profile", &profile])
            .arg("--target-dir")
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .await
            .expect("run cargo build for the ardacat CLI");
        assert!(status.success(), "building the ardacat CLI failed");
        let bin = out.join(format!("ardacat{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.is_file(), "no CLI at {}", bin.display());
        bin
    })
    .await
    .clone()
}

/// Runs `ardacat --host … --port … --login … --password … <args>` in `dir` (also its HOME, so
/// no mdclient.config of the machine is read); returns (exit code, stdout, stderr).
pub async fn cli_as(
    dir: &Path,
    addr: std::net::SocketAddr,
    login: &str,
    password: &str,
    args: &[&str],
) -> (i32, Vec<u8>, String) {
    let out = tokio::process::Command::new(ardacat_cli().await)
        .args(["--host", &addr.ip().to_string(), "--port", &addr.port().to_string()])
        .args(["--login", login, "--password", password])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("ARDACAT_PASSWORD")
        .stdin(std::process::Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), out).await.expect("ardacat in time").expect("run ardacat");
    (out.status.code().unwrap_or(-1), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}
