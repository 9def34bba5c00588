//! A deliberately tiny SOAP 1.1 client for the load generator: one HTTP/1.1 keep-alive connection
//! (or, with keep-alive off, a new connection per request) over a raw tokio `TcpStream`, Basic
//! auth, `Content-Length` or chunked responses. It sends only the requests the scenarios send:
//! `ping`, `getAttributes` (one entry for `get`, a whole collection for `bulkget`),
//! `setAttributes` and `createEntry`. The envelopes come from the SOAP crate's request writer
//! ([`ardacat_soap::write_request`]) and the Basic credentials from the `base64` crate; this
//! module must not grow its own XML or base64, nor into a general HTTP library. Responses are
//! not parsed: it counts elements and reads the one number or fault text it needs.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

pub use ardacat_soap::NAMESPACE;
use ardacat_soap::{Attribute, Entry, Request, SoapVersion, write_request};

use crate::error::{ClientError, Result};

/// The SOAP version the load generator speaks (`text/xml`, `SOAPAction` header).
const VERSION: SoapVersion = SoapVersion::V11;
/// Largest response body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// Longest status or header line accepted.
const MAX_HEADER_LINE: usize = 16 * 1024;

/// A SOAP connection to `http://host:port<path>`: kept alive between requests, or (with
/// [`SoapClient::set_keep_alive`]`(false)`) opened anew for every request and closed after it.
pub struct SoapClient {
    host: String,
    port: u16,
    path: String,
    authorization: Option<String>,
    keep_alive: bool,
    conn: Option<BufReader<TcpStream>>,
    /// The last request's envelope and the whole HTTP request, kept to reuse their allocations.
    envelope: Vec<u8>,
    request: Vec<u8>,
}

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// The server asked to close the connection after this response.
    pub close: bool,
}

impl SoapClient {
    pub fn new(host: &str, port: u16, path: &str, login: &str, password: Option<&str>) -> SoapClient {
        let authorization = (!login.is_empty())
            .then(|| format!("Basic {}", BASE64.encode(format!("{login}:{}", password.unwrap_or("")))));
        SoapClient {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
            authorization,
            keep_alive: true,
            conn: None,
            envelope: Vec::new(),
            request: Vec::new(),
        }
    }

    /// With `false`, every request goes on a new connection with `Connection: close`.
    pub fn set_keep_alive(&mut self, on: bool) {
        self.keep_alive = on;
        if !on {
            self.conn = None;
        }
    }

    /// Opens the connection now (otherwise the first call does).
    pub async fn connect(&mut self) -> Result<()> {
        if self.conn.is_none() {
            let stream = TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| ClientError::Connect(format!("{}:{}: {e}", self.host, self.port)))?;
            stream.set_nodelay(true)?;
            self.conn = Some(BufReader::new(stream));
        }
        Ok(())
    }

    /// `ping`: an empty request and response.
    pub async fn ping(&mut self) -> Result<()> {
        self.call(&Request::Ping).await.map(drop)
    }

    /// `getAttributes` of one entry; returns the response body size in bytes.
    pub async fn get_attributes<S: AsRef<str>>(&mut self, entry: &str, attrs: &[S]) -> Result<usize> {
        self.call(&get_attributes(entry, attrs)).await.map(|b| b.len())
    }

    /// `setAttributes` of `pattern` (no condition): one `(name, value)` per attribute.
    pub async fn set_attributes<A: AsRef<str>, V: AsRef<str>>(
        &mut self,
        pattern: &str,
        pairs: &[(A, V)],
    ) -> Result<()> {
        let attributes = pairs.iter().map(|(a, v)| Attribute::with_value(a.as_ref(), Some(v.as_ref()))).collect();
        self.call(&Request::SetAttributes { pattern: pattern.to_owned(), condition: None, attributes }).await.map(drop)
    }

    /// `createEntry` of entries `(name, values)` in `schema`, value `k` of each for attribute
    /// `attrs[k]`; returns how many the server says it created.
    pub async fn create_entries<A: AsRef<str>>(
        &mut self,
        schema: &str,
        attrs: &[A],
        entries: &[(String, Vec<String>)],
    ) -> Result<u64> {
        let body = self.call(&create_entry(schema, attrs, entries)).await?;
        let text = String::from_utf8_lossy(&body);
        element_text(&text, "created")
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| ClientError::Protocol("createEntry response without <created>".into()))
    }

    /// `getAttributes` of every entry a collection path (or pattern) designates; returns the
    /// number of `<entry>` elements in the response.
    pub async fn get_entries<S: AsRef<str>>(&mut self, pattern: &str, attrs: &[S]) -> Result<u64> {
        self.call(&get_attributes(pattern, attrs)).await.map(|b| count_closing(&b, "entry"))
    }

    /// Posts one request; a SOAP fault or a non-2xx status is an error. A reused connection that
    /// the server closed meanwhile is reopened once. A value XML cannot carry is refused before
    /// anything is sent.
    pub async fn call(&mut self, request: &Request) -> Result<Vec<u8>> {
        self.envelope.clear();
        write_request(VERSION, request, &mut self.envelope)
            .map_err(|e| ClientError::InvalidArgument(format!("{}: {e}", request.operation())))?;
        let mut bytes = std::mem::take(&mut self.request);
        self.http_request(request.operation().soap_action(), &mut bytes);
        if !self.keep_alive {
            self.conn = None;
        }
        let reused = self.conn.is_some();
        let response = match self.exchange(&bytes).await {
            Err(e) if reused && e.is_connection_lost() => {
                self.conn = None;
                self.exchange(&bytes).await
            }
            other => other,
        };
        self.request = bytes;
        let response = response?;
        if response.close || !self.keep_alive {
            self.conn = None;
        }
        if (200..300).contains(&response.status) {
            return Ok(response.body);
        }
        let text = String::from_utf8_lossy(&response.body);
        let message = fault_string(&text).unwrap_or_else(|| format!("HTTP status {}", response.status));
        Err(ClientError::Server { code: i32::from(response.status), message })
    }

    /// The HTTP request around the envelope last written, into `out` (cleared first).
    fn http_request(&self, action: &str, out: &mut Vec<u8>) {
        use std::io::Write;
        out.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(
            out,
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: {}\r\nSOAPAction: \"{action}\"\r\n\
             Content-Length: {}\r\nConnection: {}\r\n",
            self.path,
            self.host,
            self.port,
            VERSION.request_content_type(action),
            self.envelope.len(),
            if self.keep_alive { "keep-alive" } else { "close" }
        );
        if let Some(auth) = &self.authorization {
            let _ = write!(out, "Authorization: {auth}\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.envelope);
    }

    async fn exchange(&mut self, request: &[u8]) -> Result<Response> {
        self.connect().await?;
        let Some(conn) = self.conn.as_mut() else { return Err(ClientError::Closed) };
        let result = async {
            conn.get_mut().write_all(request).await?;
            read_response(conn).await
        }
        .await;
        if result.is_err() {
            self.conn = None;
        }
        result
    }
}

/// Reads one line ending in `\n`, without the line end; EOF before any byte is `Closed`.
async fn read_line(r: &mut BufReader<TcpStream>) -> Result<String> {
    let mut buf = Vec::new();
    let n = (&mut *r).take(MAX_HEADER_LINE as u64 + 2).read_until(b'\n', &mut buf).await?;
    if n == 0 {
        return Err(ClientError::Closed);
    }
    if buf.last() != Some(&b'\n') {
        return Err(ClientError::Protocol("HTTP header line too long or cut short".into()));
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf).map_err(|_| ClientError::Protocol("HTTP header is not UTF-8".into()))
}

/// Parses a status line, headers and body (`Content-Length`, chunked, or until close).
pub async fn read_response(r: &mut BufReader<TcpStream>) -> Result<Response> {
    let status_line = read_line(r).await?;
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| ClientError::Protocol(format!("bad HTTP status line {status_line:?}")))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut close = status_line.starts_with("HTTP/1.0");
    loop {
        let line = read_line(r).await?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                length = Some(value.parse().map_err(|_| ClientError::Protocol("bad Content-Length".into()))?);
            }
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let size_line = read_line(r).await?;
            let size_text = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ClientError::Protocol(format!("bad chunk size {size_text:?}")))?;
            if size == 0 {
                while !read_line(r).await?.is_empty() {}
                break;
            }
            if body.len() + size > MAX_BODY {
                return Err(ClientError::Protocol("HTTP response body too large".into()));
            }
            // Appended without zero-filling first (a bulk response is megabytes).
            body.reserve(size);
            let got = (&mut *r).take(size as u64).read_to_end(&mut body).await?;
            if got != size {
                return Err(ClientError::Protocol("HTTP chunk cut short".into()));
            }
            read_line(r).await?;
        }
    } else if let Some(n) = length {
        if n > MAX_BODY {
            return Err(ClientError::Protocol("HTTP response body too large".into()));
        }
        body.resize(n, 0);
        r.read_exact(&mut body).await?;
    } else {
        (&mut *r).take(MAX_BODY as u64).read_to_end(&mut body).await?;
        close = true;
    }
    Ok(Response { status, body, close })
}

/// A `getAttributes` request for one entry name or pattern.
fn get_attributes<S: AsRef<str>>(entry: &str, attrs: &[S]) -> Request {
    Request::GetAttributes {
        entry_names: vec![entry.to_owned()],
        attribute_names: attrs.iter().map(|a| a.as_ref().to_owned()).collect(),
    }
}

/// A `createEntry` request: value `k` of each entry for attribute `attrs[k]`.
fn create_entry<A: AsRef<str>>(schema: &str, attrs: &[A], entries: &[(String, Vec<String>)]) -> Request {
    let entries = entries
        .iter()
        .map(|(name, values)| Entry {
            name: name.clone(),
            attributes: attrs.iter().zip(values).map(|(a, v)| Attribute::with_value(a.as_ref(), Some(v))).collect(),
        })
        .collect();
    Request::CreateEntry { schema_name: schema.to_owned(), entries }
}

/// The text of the first element named `local` (any prefix, no attributes), if any.
fn element_text<'a>(xml: &'a str, local: &str) -> Option<&'a str> {
    let mut rest = xml;
    loop {
        let at = rest.find('<')?;
        let tag = &rest[at + 1..];
        let end = tag.find('>')?;
        let name = &tag[..end];
        let bare = name.rsplit(':').next().unwrap_or(name);
        if bare == local {
            let content = &tag[end + 1..];
            return content.find("</").map(|close| &content[..close]);
        }
        rest = &tag[end..];
    }
}

/// How many elements named `local` (with or without a namespace prefix) close in `xml`.
///
/// It searches for `local>` and looks back for `</` or `</prefix:`, so it visits the few places
/// where the name occurs instead of every closing tag: a 1,000-entry response is ~4 MB with
/// 240,000 closing tags, and the load generator's CPU is taken from the server it measures.
pub fn count_closing(xml: &[u8], local: &str) -> u64 {
    let mut needle = local.as_bytes().to_vec();
    needle.push(b'>');
    let mut count = 0;
    for at in memchr::memmem::find_iter(xml, &needle) {
        let before = &xml[..at];
        let closes = match before.split_last() {
            Some((b'/', head)) => head.last() == Some(&b'<'),
            Some((b':', head)) => {
                let prefix_start = head.iter().rposition(|&b| !is_name_byte(b)).map_or(0, |i| i + 1);
                prefix_start >= 2 && prefix_start < head.len() && &head[prefix_start - 2..prefix_start] == b"</"
            }
            _ => false,
        };
        count += u64::from(closes);
    }
    count
}

/// Bytes of an XML name (ASCII subset; prefixes here are ASCII).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// The text of `<faultstring>` in a SOAP fault, if there is one.
pub fn fault_string(body: &str) -> Option<String> {
    let start = body.find("<faultstring")?;
    let open_end = start + body[start..].find('>')? + 1;
    let close = open_end + body[open_end..].find("</faultstring>")?;
    Some(body[open_end..close].trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// The Body's content of the envelope the client sends for `request`.
    fn body(request: &Request) -> String {
        let mut out = Vec::new();
        write_request(VERSION, request, &mut out).expect("writable request");
        let text = String::from_utf8(out).expect("UTF-8");
        let start = text.find("<soap:Body>").expect("Body") + "<soap:Body>".len();
        let end = text.rfind("</soap:Body>").expect("end of Body");
        assert!(text.starts_with("<?xml"), "{text}");
        assert!(text.contains("xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\""), "SOAP 1.1: {text}");
        text[start..end].to_owned()
    }

    #[test]
    fn request_bodies_and_created_count() {
        assert_eq!(
            body(&get_attributes("/bench/e1", &["a0", "a1"])),
            "<getAttributes xmlns=\"urn:ardacat:metadata:1\"><entryName>/bench/e1</entryName>\
             <attributeName>a0</attributeName><attributeName>a1</attributeName></getAttributes>"
        );
        let set = Request::SetAttributes {
            pattern: "/bench/e1".into(),
            condition: None,
            attributes: vec![Attribute::with_value("a0", Some("7")), Attribute::with_value("a40", Some("R&D"))],
        };
        assert_eq!(
            body(&set),
            "<setAttributes xmlns=\"urn:ardacat:metadata:1\"><pattern>/bench/e1</pattern>\
             <attribute><name>a0</name><value>7</value></attribute>\
             <attribute><name>a40</name><value>R&amp;D</value></attribute></setAttributes>"
        );
        let entries = vec![("x1".to_string(), vec!["1".to_string(), "2.5".to_string()]), ("x2".into(), vec![])];
        assert_eq!(
            body(&create_entry("/bench_add", &["a0", "a20"], &entries)),
            "<createEntry xmlns=\"urn:ardacat:metadata:1\"><schemaName>/bench_add</schemaName>\
             <entry><name>x1</name><attribute><name>a0</name><value>1</value></attribute>\
             <attribute><name>a20</name><value>2.5</value></attribute></entry>\
             <entry><name>x2</name></entry></createEntry>"
        );
        let resp =
            "<soap:Body><ns:createEntryResponse xmlns:ns=\"u\"><ns:created>100</ns:created></ns:createEntryResponse>";
        assert_eq!(element_text(resp, "created"), Some("100"));
        assert_eq!(element_text(resp, "missing"), None);
    }

    #[test]
    fn faults_and_escaping() {
        let body_text = "<soap:Fault><faultcode>soap:Client</faultcode><faultstring xml:lang=\"en\"> no such entry </faultstring></soap:Fault>";
        assert_eq!(fault_string(body_text).as_deref(), Some("no such entry"));
        assert_eq!(fault_string("<ok/>"), None);
        assert!(body(&get_attributes("/a<b>&c", &["x"])).contains("<entryName>/a&lt;b&gt;&amp;c</entryName>"));
    }

    #[tokio::test]
    async fn a_value_xml_cannot_carry_is_refused_before_sending() {
        // Port 1 on loopback: nothing listens, so any attempt to send would fail differently.
        let mut client = SoapClient::new("127.0.0.1", 1, "/soap", "root", None);
        match client.get_attributes("/bench/e\u{1}", &["a0"]).await {
            Err(ClientError::InvalidArgument(message)) => assert!(message.contains("getAttributes"), "{message}"),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn closing_tags_are_counted_with_any_prefix() {
        let xml = b"<r><entry><name>a</name></entry><ns:entry><name>b</name></ns:entry><entryName/></r>";
        assert_eq!(count_closing(xml, "entry"), 2);
        assert_eq!(count_closing(xml, "name"), 2);
        assert_eq!(count_closing(b"", "entry"), 0);
        // Not a closing tag (cut short), and names that only end in the one asked for.
        assert_eq!(count_closing(b"</entry", "entry"), 0);
        assert_eq!(count_closing(b"<r></subentry></x:subentry></entry></a:b:entry></r>", "entry"), 1);
    }

    #[tokio::test]
    async fn keep_alive_exchange_with_chunked_and_fault() -> Result<()> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await?;
            let mut r = BufReader::new(stream);
            let mut requests = Vec::new();
            for reply in [
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n<ok/>".to_owned(),
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n<a>\r\n4\r\n</a>\r\n0\r\n\r\n".to_owned(),
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 44\r\n\r\n<faultstring>entry not found</faultstring>  "
                    .to_owned(),
            ] {
                let mut head = String::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    r.read_line(&mut line).await?;
                    if line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                r.read_exact(&mut body).await?;
                requests.push((head, String::from_utf8_lossy(&body).into_owned()));
                r.get_mut().write_all(reply.as_bytes()).await?;
            }
            Ok::<_, std::io::Error>(requests)
        });
        let mut client = SoapClient::new("127.0.0.1", port, "/soap", "root", Some("secret"));
        client.ping().await?;
        assert_eq!(client.get_attributes("/bench/e1", &["a0", "a1"]).await?, 7);
        match client.get_attributes("/nope", &["a0"]).await {
            Err(ClientError::Server { code: 500, message }) => assert_eq!(message, "entry not found"),
            other => panic!("expected a fault, got {other:?}"),
        }
        let requests = server.await.map_err(|e| ClientError::Protocol(e.to_string()))??;
        assert_eq!(requests.len(), 3, "all three calls used one connection");
        let (head, body) = &requests[1];
        assert!(head.starts_with("POST /soap HTTP/1.1\r\n"));
        assert!(head.contains("Authorization: Basic cm9vdDpzZWNyZXQ=\r\n"));
        assert!(head.contains("SOAPAction: \"urn:ardacat:metadata:1#getAttributes\""));
        assert!(head.contains("Content-Type: text/xml; charset=utf-8\r\n"));
        assert!(body.contains(
            "<getAttributes xmlns=\"urn:ardacat:metadata:1\"><entryName>/bench/e1</entryName>\
             <attributeName>a0</attributeName><attributeName>a1</attributeName></getAttributes>"
        ));
        assert!(requests[0].1.contains("<soap:Body><ping xmlns=\"urn:ardacat:metadata:1\"></ping></soap:Body>"));
        Ok(())
    }
}
