//! Crash safety with real processes: `kill -9` during an upload, an open transaction, a bulk
//! insert and a SOAP `createEntry` loses all of them; `kill -9` right after a commit was acknowledged loses nothing.
//! The database must open cleanly after every kill. Repeated in a loop on both backends.

mod common;

use common::{Backend, RawConn, TestDb, TestServer, ok};
use tokio::io::AsyncWriteExt;

/// A SOAP `createEntry` of 3000 entries (one transaction on the server).
fn create_entry_request(round: usize) -> String {
    use base64::Engine;
    let entries: String = (0..3000)
        .map(|i| {
            format!(
                "<m:entry><m:name>soap{round}_{i}</m:name><m:attribute><m:name>n</m:name><m:value>{i}</m:value></m:attribute></m:entry>"
            )
        })
        .collect();
    let body = format!(
        "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>\
         <m:createEntry xmlns:m=\"urn:ardacat:metadata:1\"><m:schemaName>/c</m:schemaName>{entries}</m:createEntry>\
         </s:Body></s:Envelope>"
    );
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("root:{}", common::ROOT_PASSWORD));
    format!(
        "POST /soap HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nAuthorization: Basic {auth}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// `flags`: the server's extra flags, at every start.
async fn crash_loop(backend: Backend, rounds: usize, flags: &[&str]) {
    let mut db = TestDb::new(backend).await;
    {
        let server = TestServer::start_with(db, flags).await;
        let mut c = server.raw().await;
        ok(&mut c, "createdir /c").await;
        ok(&mut c, "addattr /c n int").await;
        db = server.kill();
    }
    for round in 0..rounds {
        let server = TestServer::start_with(db, flags).await;
        // Committed writes: once their replies arrive they must survive. (On SQLite a writer waits
        // for an open transaction, so they come first.)
        let mut w = server.raw().await;
        ok(&mut w, &format!("addentry /c/ack{round} n {round}")).await;
        ok(&mut w, "transaction").await;
        ok(&mut w, &format!("addentry /c/acktx{round} n {round}")).await;
        ok(&mut w, "commit").await;
        // An open transaction with writes in it.
        let mut tx = server.raw().await;
        ok(&mut tx, "transaction").await;
        ok(&mut tx, &format!("addentry /c/tx{round} n 1")).await;
        // An upload in progress (no reply is expected to upload/put).
        let mut up = server.raw().await;
        up.send(b"upload /c n\n").await;
        let mut puts = String::new();
        for i in 0..5000 {
            puts.push_str(&format!("put up{round}_{i} {i}\n"));
        }
        up.send(puts.as_bytes()).await;
        // A bulk insert in flight on a third connection.
        let mut bulk = RawConn::login(server.tcp, "root", Some(common::ROOT_PASSWORD)).await;
        let names: Vec<String> = (0..2000).map(|i| format!("/c/bulk{round}_{i}")).collect();
        bulk.send(format!("addentries {}\n", names.join(" ")).as_bytes()).await;
        // A bulk SOAP createEntry in flight (its reply is never awaited).
        let mut soap = tokio::net::TcpStream::connect(server.http).await.unwrap();
        soap.write_all(create_entry_request(round).as_bytes()).await.unwrap();
        // Let the server get into the middle of it: the upload writes its first chunks.
        tokio::time::sleep(std::time::Duration::from_millis(300 + 100 * round as u64)).await;
        db = server.kill();

        let server = TestServer::start_with(db, flags).await;
        let mut r = server.raw().await;
        let found = ok(&mut r, &format!("find /c 'FILE = \"ack{round}\" or FILE = \"acktx{round}\"'")).await;
        assert_eq!(found.len(), 2, "round {round}: acknowledged writes lost: {found:?}");
        let lost = ok(&mut r, &format!("find /c 'like(FILE, \"tx{round}\") or like(FILE, \"up{round}_%\")'")).await;
        assert!(lost.is_empty(), "round {round}: uncommitted writes survived: {} rows", lost.len());
        // The bulk insert is all or nothing.
        let bulk_rows = ok(&mut r, &format!("find /c 'like(FILE, \"bulk{round}_%\")'")).await;
        assert!(
            bulk_rows.is_empty() || bulk_rows.len() == 2000,
            "round {round}: partial bulk insert: {}",
            bulk_rows.len()
        );
        db = server.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_sqlite() {
    crash_loop(Backend::Sqlite, 5, &[]).await;
}

/// With the file kept to the server alone the WAL index lives in its memory and dies with it:
/// the next start rebuilds it from the WAL file, acknowledged commits included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_sqlite_exclusive() {
    crash_loop(Backend::Sqlite, 5, &["--sqlite-exclusive", "true"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_postgres() {
    crash_loop(Backend::Postgres, 5, &[]).await;
}
