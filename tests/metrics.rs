//! `/metrics` and the TCP `stats` command report per-operation counts and latency histograms and
//! per-stage timings for both frontends.

mod common;

use common::{Backend, TestServer, ok};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn http(server: &TestServer, request: String) -> String {
    let mut s = TcpStream::connect(server.http).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_stats() {
    let server = TestServer::start(Backend::Sqlite).await;
    let mut c = server.raw().await;
    ok(&mut c, "createdir /m").await;
    ok(&mut c, "pwd").await;
    common::fails(&mut c, "getattr /m/none FILE", 1).await;
    let body = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
                <ping xmlns=\"urn:ardacat:metadata:1\"/></soap:Body></soap:Envelope>";
    let auth = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("root:{}", common::ROOT_PASSWORD))
    };
    let resp = http(
        &server,
        format!(
            "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nAuthorization: Basic {auth}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let m = http(&server, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into()).await;
    for needle in [
        "ardacat_requests_total{frontend=\"tcp\",operation=\"createdir\"} 1",
        "ardacat_requests_total{frontend=\"tcp\",operation=\"getattr\"} 1",
        "ardacat_request_errors_total{frontend=\"tcp\",operation=\"getattr\"} 1",
        "ardacat_requests_total{frontend=\"soap\",operation=\"ping\"} 1",
        "ardacat_stage_duration_seconds_count{frontend=\"tcp\",stage=\"parse\"}",
        "ardacat_stage_duration_seconds_count{frontend=\"soap\",stage=\"auth\"} 1",
        "ardacat_request_duration_seconds_bucket{frontend=\"tcp\",operation=\"pwd\",le=\"+Inf\"} 1",
        "ardacat_db_pool_size ",
        "ardacat_db_pool_connections{state=\"in_use\"} ",
        "ardacat_tcp_connections_open 1",
        "# TYPE ardacat_tcp_commands_total counter",
    ] {
        assert!(m.contains(needle), "missing {needle} in\n{m}");
    }
    let stats = ok(&mut c, "stats").await;
    assert!(stats.iter().any(|l| l.starts_with("tcp_pwd count=1 errors=0")), "{stats:?}");
    assert!(stats.iter().any(|l| l.starts_with("tcp_commands_total ")), "{stats:?}");
}
