//! CSV and JSON export of a collection's entries or a query (condition or SQL `SELECT`),
//! streamed from the catalogue's cursor in bounded chunks: memory stays flat for any row count
//! and a client that goes away stops the query. It translates only: the rows are what the
//! catalogue lets the user read, and it must not build SQL.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::sync::Arc;

use ardacat_core::{Error, Result, RowSink, path};
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::response::Response;
use bytes::Bytes;
use futures::SinkExt;

use super::browse::{View, column_names, entries_spec, is_sql, queryable};
use super::html::{browse_href, error_box, esc};
use super::{UiState, ctx, error_page, html_response};

/// Export chunks: rows are gathered up to this many bytes before they are sent; at most
/// [`EXPORT_CHUNKS`] chunks wait for the client, so memory stays flat for any row count.
const EXPORT_CHUNK_BYTES: usize = 32 * 1024;
const EXPORT_CHUNKS: usize = 8;

/// `/ui/export/` and `/ui/export/<path>` (no path: the root).
pub(super) async fn export(
    State(st): State<Arc<UiState>>,
    headers: HeaderMap,
    uri: Uri,
    target: Option<Path<String>>,
    Query(p): Query<HashMap<String, String>>,
) -> Response {
    export_of(st, headers, uri, target.map(|Path(t)| t).unwrap_or_default(), p).await
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Json,
}

type ChunkTx = futures::channel::mpsc::Sender<std::result::Result<Bytes, io::Error>>;

/// Formats rows into chunks and sends them to the response body; a full channel stalls the
/// query (backpressure), a departed client stops it.
struct ExportSink {
    format: Format,
    columns: Vec<String>,
    /// The first row is the column header (native SQL).
    header_row: bool,
    buf: String,
    rows: u64,
    tx: ChunkTx,
    /// Told once: the first chunk is ready, or the query ended (error or not) before it.
    started: Option<tokio::sync::oneshot::Sender<Result<()>>>,
}

fn csv_field(out: &mut String, v: &str) {
    if v.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(v);
    }
}

fn json_string(out: &mut String, v: &str) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // `<` too, so that the JSON cannot close a script element if pasted into a page.
            c if (c as u32) < 0x20 || c == '<' || c == '>' || c == '&' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl ExportSink {
    fn header(&mut self) {
        if self.format == Format::Csv {
            for (i, c) in self.columns.clone().iter().enumerate() {
                if i > 0 {
                    self.buf.push(',');
                }
                csv_field(&mut self.buf, c);
            }
            self.buf.push_str("\r\n");
        } else {
            self.buf.push('[');
        }
    }

    async fn flush(&mut self) -> Result<()> {
        if let Some(tx) = self.started.take() {
            let _ = tx.send(Ok(()));
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx.send(Ok(chunk)).await.map_err(|_| Error::Cancelled)
    }

    /// The query ended: close the JSON array and send the rest, or break the body off (an
    /// error after the first chunk cannot become an error page any more).
    async fn finish(mut self, r: Result<u64>) {
        match r {
            Ok(_) => {
                if self.rows == 0 && self.buf.is_empty() {
                    self.header();
                }
                if self.format == Format::Json {
                    self.buf.push_str(if self.rows == 0 { "]\n" } else { "\n]\n" });
                }
                let _ = self.flush().await;
            }
            Err(e) => match self.started.take() {
                Some(tx) => {
                    let _ = tx.send(Err(e));
                }
                None => {
                    tracing::info!(error = %e, "export ended early");
                    let _ = self.tx.send(Err(io::Error::other(e.public_message()))).await;
                }
            },
        }
    }
}

impl RowSink for ExportSink {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        if self.header_row {
            self.header_row = false;
            self.columns = row.into_iter().map(Option::unwrap_or_default).collect();
            self.header();
            return Ok(());
        }
        if self.rows == 0 && self.buf.is_empty() {
            self.header();
        }
        match self.format {
            Format::Csv => {
                for (i, v) in row.iter().enumerate() {
                    if i > 0 {
                        self.buf.push(',');
                    }
                    if let Some(v) = v {
                        csv_field(&mut self.buf, v);
                    }
                }
                self.buf.push_str("\r\n");
            }
            Format::Json => {
                self.buf.push_str(if self.rows == 0 { "\n{" } else { ",\n{" });
                for (i, (c, v)) in self.columns.iter().zip(row.iter()).enumerate() {
                    if i > 0 {
                        self.buf.push(',');
                    }
                    json_string(&mut self.buf, c);
                    self.buf.push(':');
                    match v {
                        Some(v) => json_string(&mut self.buf, v),
                        None => self.buf.push_str("null"),
                    }
                }
                self.buf.push('}');
            }
        }
        self.rows += 1;
        if self.buf.len() >= EXPORT_CHUNK_BYTES {
            self.flush().await?;
        }
        Ok(())
    }
}

async fn export_of(
    st: Arc<UiState>,
    headers: HeaderMap,
    uri: Uri,
    target: String,
    p: HashMap<String, String>,
) -> Response {
    let mut ctx = match ctx(&st, &headers, &uri).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let abs = match path::absolute("/", &format!("/{target}")) {
        Ok(a) => a,
        Err(e) => return error_page(&ctx, &e, "/ui/browse/"),
    };
    let back = browse_href(&abs);
    let format = match p.get("format").map(String::as_str) {
        Some("json") => Format::Json,
        Some("csv") | None => Format::Csv,
        Some(other) => {
            return error_page(
                &ctx,
                &Error::IllegalCommand(format!("unknown export format '{other}' (csv or json)")),
                &back,
            );
        }
    };
    let view = View::from(&p);
    let cat = st.shared.catalogue.clone();
    let sql = is_sql(&view.q);
    let spec = if sql {
        if !view.q.split_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("select")) {
            return error_page(&ctx, &Error::IllegalCommand("only a SELECT can be exported".into()), &back);
        }
        None
    } else if queryable(&abs) {
        let attrs = match cat.listattr(&mut ctx.s, &abs).await {
            Ok(a) => a,
            Err(e) => return error_page(&ctx, &e, &back),
        };
        Some(entries_spec(&abs, &attrs, &view))
    } else {
        return error_page(
            &ctx,
            &Error::IllegalQuery(
                "this collection's path cannot be named in the query language; use a SQL SELECT".into(),
            ),
            &back,
        );
    };
    let (tx, rx) = futures::channel::mpsc::channel(EXPORT_CHUNKS);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let columns = spec.as_ref().map(column_names).unwrap_or_default();
    let mut sink =
        ExportSink { format, columns, header_row: sql, buf: String::new(), rows: 0, tx, started: Some(started_tx) };
    let mut s = std::mem::replace(&mut ctx.s, ardacat_core::Session::new(ctx.web.principal.clone()));
    s.cwd = abs.clone();
    let q = view.q.clone();
    tokio::spawn(async move {
        let r = match &spec {
            Some(spec) => cat.selectattr(&mut s, spec, &mut sink).await,
            None => cat.sql(&mut s, &q, &mut sink).await,
        };
        sink.finish(r).await;
    });
    match started_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let mut r = error_page(&ctx, &e, &back);
            if matches!(e, Error::IllegalQuery(_)) {
                // Show the statement with the position marked, as on the collection page.
                let body = format!(
                    "<h1>Error {}</h1>{}<p><a href=\"{}\">Back</a></p>",
                    e.code(),
                    error_box(&e.public_message(), Some(&view.q)),
                    esc(&back)
                );
                r = html_response(super::status_of(&e), ctx.page("Error", &body));
                r.extensions_mut().insert(super::OutcomeCode(i64::from(e.code())));
            }
            return r;
        }
        Err(_) => return error_page(&ctx, &Error::Internal("export task ended".into()), &back),
    }
    let (ctype, ext) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
        Format::Json => ("application/json", "json"),
    };
    let name = path::split(&abs).map(|(_, n)| n).filter(|n| !n.is_empty()).unwrap_or("root");
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let mut r = Response::new(Body::from_stream(rx));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}.{ext}\"")) {
        r.headers_mut().insert(CONTENT_DISPOSITION, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_json_quoting() {
        let mut s = String::new();
        csv_field(&mut s, "a,\"b\"");
        assert_eq!(s, "\"a,\"\"b\"\"\"");
        let mut j = String::new();
        json_string(&mut j, "<a\"\n");
        assert_eq!(j, "\"\\u003ca\\\"\\n\"");
    }
}
