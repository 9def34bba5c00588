//! Graceful shutdown: SIGTERM stops accepting, lets the command in flight finish, closes idle
//! connections, and the process exits cleanly within a bound.

mod common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer, ok};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_and_exits() {
    let mut server = TestServer::start(Backend::Sqlite).await;
    let mut idle = server.raw().await;
    ok(&mut idle, "createdir /s").await;
    let status = std::process::Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
    assert!(status.success());
    let started = Instant::now();
    let exit = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "server did not exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "exit status {exit:?}");
    assert!(idle.closed().await, "idle connection closed by the shutdown");
    assert!(tokio::net::TcpStream::connect(server.tcp).await.is_err(), "listener closed");
    // The data written before the shutdown is there after a restart.
    let db = server.kill();
    let server = TestServer::start_with(db, &[]).await;
    let mut c = server.raw().await;
    ok(&mut c, "cd /s").await;
}
