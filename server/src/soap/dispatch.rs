//! One decoded SOAP request → catalogue calls → one response envelope (or a streamed one).
//! It translates only: every rule (paths, permissions, types, query language) is the
//! catalogue's, every byte of XML is ardacat-soap's. It must not parse XML, speak HTTP or
//! authenticate.
//!
//! Multi-step operations (createSchema, add/removeSchemaAttributes, createEntry, setAttributes)
//! are each one composite catalogue operation (`ardacat_core::service::composite`), atomic in
//! the core: all of it happens or none of it. This file opens no transaction and builds no
//! query-language text.
//!
//! `getAttributes` can return any number of entries, so it streams: the envelope is written
//! into a buffer and, once the buffer passes [`STREAM_THRESHOLD`], sent on as a chunked body
//! with backpressure, so memory stays bounded. A failure before that point is an ordinary
//! fault; a failure after the first chunk (a database error mid-stream) can only abort the
//! body, which the client sees as a truncated response.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::Instrument;

use ardacat_core::path;
use ardacat_core::service::composite::{NewAttribute, NewEntryValues};
use ardacat_core::service::cursor::CursorState;
use ardacat_core::service::{Names, SelectSpec, WireRow, WireScratch, WireText};
use ardacat_core::store::AttrDef;
use ardacat_core::types::Value;
use ardacat_core::{Error, Result, RowSink};
use ardacat_soap::{
    Attribute, EntryColumns, EntryValue, Index, MDResult, Operation, Request, Response, ResponseWriter, Row, RowValue,
    SoapError, SoapVersion, write_response,
};
use axum::body::Body;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use tokio::sync::oneshot;

use crate::config::Config;
use crate::{Cat, Store};

type Sess = ardacat_core::Session<Store>;

/// Response bytes held before `getAttributes` switches to a streamed (chunked) body.
pub const STREAM_THRESHOLD: usize = 256 * 1024;

/// Capacity of the buffer that follows a sent chunk: the threshold plus room for the entry
/// that crosses it (a 60-attribute entry is ~3 KiB), so a streamed response fills each chunk
/// without growing (and copying) the buffer from empty again.
const CHUNK_CAPACITY: usize = STREAM_THRESHOLD + 16 * 1024;

/// What went wrong: a catalogue error (→ `MetadataFault`) or a SOAP-layer error (a response
/// that XML cannot carry → `Server` fault).
#[derive(Debug)]
pub enum Failure {
    Cat(Error),
    Soap(SoapError),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Cat(e)
    }
}

impl From<SoapError> for Failure {
    fn from(e: SoapError) -> Self {
        Failure::Soap(e)
    }
}

/// A successful response body.
pub enum Output {
    Complete(Vec<u8>),
    /// Already streaming (HTTP 200): the body ends early if a later part fails.
    Streaming(Body),
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// `None` for an absent, empty or blank optional string (`<condition/>` means no condition).
fn non_blank(s: Option<String>) -> Option<String> {
    s.filter(|c| !c.trim().is_empty())
}

/// pageSize → rows per page: absent or 0 → the default; clamped silently to `[1, max]`.
pub fn page_size(cfg: &Config, requested: Option<u32>) -> usize {
    let max = cfg.soap_max_page_size.max(1);
    let n = match requested {
        None | Some(0) => cfg.soap_default_page_size,
        Some(n) => n as usize,
    };
    n.clamp(1, max)
}

fn typed(a: AttrDef) -> Attribute {
    Attribute::typed(a.name, a.attr_type.to_string())
}

fn complete(version: SoapVersion, r: &Response) -> Result<Output, Failure> {
    let mut out = Vec::with_capacity(512);
    write_response(version, r, &mut out)?;
    Ok(Output::Complete(out))
}

/// Runs one request for the session's principal.
pub async fn dispatch(
    cat: Cat,
    cfg: &Config,
    lists: &AttributeLists,
    s: Box<Sess>,
    version: SoapVersion,
    req: Request,
) -> Result<Output, Failure> {
    match req {
        Request::GetAttributes { entry_names, attribute_names } => {
            let asked = (!attribute_names.is_empty()).then(|| lists.get(&attribute_names));
            get_attributes(cat, s, version, entry_names, asked).await
        }
        // Boxed: the other operations' futures together are kilobytes, which would otherwise be
        // part of every request's future (getAttributes' too) and copied with it when the HTTP
        // layers box and move it (docs/benchmarks.md, round 23).
        other => Box::pin(operation(cat, cfg, s, version, other)).await,
    }
}

/// Every operation but `getAttributes`, each answered with one complete response.
async fn operation(
    cat: Cat,
    cfg: &Config,
    s: Box<Sess>,
    version: SoapVersion,
    req: Request,
) -> Result<Output, Failure> {
    let mut s = s;
    let s = &mut s;
    let cat = &cat;
    let response = match req {
        Request::Ping => Response::Ping,
        Request::GetVersion => Response::GetVersion { version: crate::state::SERVER_VERSION.to_string() },
        Request::CreateSchema { schema_name, attributes, plain } => {
            cat.create_collection(s, &schema_name, plain, &new_attributes(attributes)).await?;
            Response::CreateSchema
        }
        Request::DropSchema { schema_name } => {
            cat.rmdir(s, &schema_name).await?;
            Response::DropSchema
        }
        Request::AddSchemaAttributes { schema_name, attributes } => {
            cat.add_attributes(s, &schema_name, &new_attributes(attributes)).await?;
            Response::AddSchemaAttributes
        }
        Request::RemoveSchemaAttributes { schema_name, attribute_names } => {
            cat.remove_attributes(s, &schema_name, &attribute_names).await?;
            Response::RemoveSchemaAttributes
        }
        Request::ListSchemas { path } => {
            let dir = non_blank(path).unwrap_or_else(|| "/".to_string());
            let schema_names = cat.list_collections(s, &dir).await?;
            crate::logging::add_rows(schema_names.len() as u64);
            Response::ListSchemas { schema_names }
        }
        Request::DescribeSchema { schema_name } => Response::DescribeSchema {
            attributes: cat.listattr(s, &schema_name).await?.into_iter().map(typed).collect(),
        },
        Request::ListAttributes { entry_name } => Response::ListAttributes {
            attributes: cat.listattr(s, &entry_name).await?.into_iter().map(typed).collect(),
        },
        Request::CreateEntry { schema_name, entries } => {
            let entries =
                entries.into_iter().map(|e| NewEntryValues { name: e.name, values: values(e.attributes) }).collect();
            Response::CreateEntry { created: count(cat.create_entries(s, &schema_name, entries).await?) }
        }
        Request::RemoveEntry { pattern, condition } => {
            let n = cat.rm(s, &pattern, non_blank(condition).as_deref()).await?;
            Response::RemoveEntry { removed: count(n) }
        }
        Request::SetAttributes { pattern, condition, attributes } => {
            if attributes.is_empty() {
                return Err(Error::IllegalCommand("setAttributes: name at least one attribute".into()).into());
            }
            let condition = non_blank(condition);
            let n = cat.set_attributes(s, &pattern, condition.as_deref(), values(attributes)).await?;
            Response::SetAttributes { updated: count(n) }
        }
        Request::ClearAttributes { pattern, attribute_names } => {
            if attribute_names.is_empty() {
                return Err(Error::IllegalCommand("clearAttributes: name at least one attribute".into()).into());
            }
            Response::ClearAttributes { cleared: count(cat.clearattr(s, &pattern, &attribute_names).await?) }
        }
        Request::GetAttributes { .. } => unreachable!("handled above"),
        Request::Query { select, condition, order_by, page_size: ps } => {
            let spec = SelectSpec {
                select,
                condition: non_blank(condition).unwrap_or_default(),
                order_by: non_blank(order_by),
            };
            let t = now();
            let base = cat.new_cursor(s, &spec, t);
            Response::Query(page(cat, s, &base, None, page_size(cfg, ps), t).await?)
        }
        Request::NextQuery { token, page_size: ps } => {
            let t = now();
            let state = cat.open_live_token(s, &token, t, cfg.soap_token_ttl_secs).await?;
            s.cwd = state.cwd.clone();
            let after = state.position();
            Response::NextQuery(page(cat, s, &state, after, page_size(cfg, ps), t).await?)
        }
        Request::EndQuery { token } => {
            cat.end_token(s, &token, now(), cfg.soap_token_ttl_secs).await?;
            Response::EndQuery
        }
        Request::IndexCreate { schema_name, index_name, attribute_names } => {
            cat.index_create(s, &schema_name, &index_name, &attribute_names).await?;
            Response::IndexCreate
        }
        Request::IndexRemove { schema_name, index_name } => {
            cat.index_remove(s, &schema_name, &index_name).await?;
            Response::IndexRemove
        }
        Request::SqlQuery { statement, page_size: ps } => {
            let t = now();
            let base = cat.new_sql_cursor(s, &statement, t);
            Response::SqlQuery(page(cat, s, &base, None, page_size(cfg, ps), t).await?)
        }
        Request::IndexList { schema_name } => Response::IndexList {
            indexes: cat
                .index_list(s, &schema_name)
                .await?
                .into_iter()
                .map(|ix| Index { name: ix.name, attribute_names: ix.columns })
                .collect(),
        },
    };
    complete(version, &response)
}

fn count(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// SOAP attributes as the catalogue's attribute definitions (a missing type is the catalogue's
/// error to give, in its turn).
fn new_attributes(attributes: Vec<Attribute>) -> Vec<NewAttribute> {
    attributes.into_iter().map(|a| NewAttribute { name: a.name, type_name: a.attr_type }).collect()
}

/// SOAP attributes as typed values (`xsi:nil`: `None`, NULL).
fn values(attributes: Vec<Attribute>) -> Vec<(String, Option<String>)> {
    attributes.into_iter().map(|a| (a.name, a.value)).collect()
}

/// One page of a query; a token for the next page when more rows exist.
async fn page(
    cat: &Cat,
    s: &mut Sess,
    state: &CursorState,
    after: Option<Vec<Value>>,
    size: usize,
    now: i64,
) -> Result<MDResult> {
    let p = match &state.sql {
        Some(statement) => cat.sql_page(s, statement, after, state.served, size).await?,
        None => cat.query_page(s, &state.spec(), after, size).await?,
    };
    crate::logging::add_rows(p.rows.len() as u64);
    let token = p.next.as_ref().map(|k| {
        let mut next = cat.continue_state(state, k, now);
        next.served = state.served + p.rows.len() as u64;
        cat.issue_token(&next)
    });
    Ok(MDResult {
        more: token.is_some(),
        token,
        columns: p.columns,
        rows: p.rows.into_iter().map(|values| Row { values }).collect(),
    })
}

// ------------------------------------------------------------------------------------------
// getAttributes: streamed

/// Attribute lists kept at most by [`AttributeLists`].
pub const MAX_ATTRIBUTE_LISTS: usize = 16;
/// Longest attribute list [`AttributeLists`] keeps, in bytes of names: a longer one is made
/// for its request only, so the shelf stays small whatever clients send.
pub const MAX_KEPT_LIST_BYTES: usize = 16 * 1024;

/// The attribute names of a `getAttributes` request, made ready for `getattr` and for the
/// response: as `getattr` takes them and as the escaped start of each `<attribute>`.
pub struct AttributeList {
    names: Names,
    columns: EntryColumns,
}

impl AttributeList {
    fn new(asked: &[String]) -> AttributeList {
        AttributeList { names: Names::from(asked), columns: EntryColumns::new(asked) }
    }

    fn is(&self, asked: &[String]) -> bool {
        self.names.len() == asked.len() && self.names.iter().eq(asked.iter().map(String::as_str))
    }
}

/// The attribute lists of recent `getAttributes` requests, most recently asked first: a client
/// reading entry after entry asks for the same list each time, and making it ready from sixty
/// names (their XML escaped, the names copied for `getattr`) was about 7 % of such a request's
/// instructions; finding it among the kept ones costs about a quarter of that. The lists hold
/// names only, so every caller may share them.
#[derive(Default)]
pub struct AttributeLists {
    lists: Mutex<VecDeque<Arc<AttributeList>>>,
}

impl AttributeLists {
    /// The list of these names: a kept one, or made now (and kept unless too long).
    pub fn get(&self, asked: &[String]) -> Arc<AttributeList> {
        let lock = || self.lists.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut lists = lock();
            if let Some(i) = lists.iter().position(|l| l.is(asked)) {
                let list = lists[i].clone();
                if i > 0 {
                    lists.remove(i);
                    lists.push_front(list.clone());
                }
                return list;
            }
        }
        let list = Arc::new(AttributeList::new(asked));
        if asked.iter().map(String::len).sum::<usize>() <= MAX_KEPT_LIST_BYTES {
            let mut lists = lock();
            if lists.len() >= MAX_ATTRIBUTE_LISTS {
                lists.pop_back();
            }
            lists.push_front(list.clone());
        }
        list
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lists.lock().unwrap().len()
    }
}

type ChunkTx = futures::channel::mpsc::Sender<Result<Bytes, io::Error>>;

enum Start {
    Done(Result<Vec<u8>, Failure>),
    Streaming(Body),
}

/// The response bytes of a streamed operation: buffered until the threshold, then chunks.
struct Out {
    buf: Vec<u8>,
    start: Option<oneshot::Sender<Start>>,
    tx: Option<ChunkTx>,
}

impl Out {
    async fn flush_if_full(&mut self) -> Result<()> {
        if self.buf.len() < STREAM_THRESHOLD {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_CAPACITY)));
        if let Some(start) = self.start.take() {
            let (tx, rx) = futures::channel::mpsc::channel(4);
            let body = Body::from_stream(futures::stream::once(async move { Ok::<_, io::Error>(chunk) }).chain(rx));
            start.send(Start::Streaming(body)).map_err(|_| Error::Cancelled)?;
            self.tx = Some(tx);
            return Ok(());
        }
        match self.tx.as_mut() {
            // The client went away: stop reading rows.
            Some(tx) => tx.send(Ok(chunk)).await.map_err(|_| Error::Cancelled),
            None => Err(Error::Cancelled),
        }
    }

    async fn finish(mut self, result: Result<(), Failure>) {
        match (self.start.take(), result) {
            (Some(start), r) => {
                let _ = start.send(Start::Done(r.map(|_| std::mem::take(&mut self.buf))));
            }
            (None, Ok(())) => {
                if let Some(tx) = self.tx.as_mut()
                    && !self.buf.is_empty()
                {
                    let _ = tx.send(Ok(Bytes::from(std::mem::take(&mut self.buf)))).await;
                }
            }
            (None, Err(Failure::Cat(Error::Cancelled))) => {
                tracing::debug!("SOAP getAttributes: the client went away mid-stream");
            }
            (None, Err(e)) => {
                tracing::warn!(error = ?e, "SOAP getAttributes failed mid-stream; aborting the response");
                if let Some(tx) = self.tx.as_mut() {
                    let _ = tx.send(Err(io::Error::other("response aborted"))).await;
                }
            }
        }
    }
}

/// Receives `getattr` rows (name, values…) and writes `<entry>` elements straight from them:
/// no `Entry` per row, the attribute names escaped once per collection ([`EntryColumns`]).
struct EntrySink<'a> {
    out: &'a mut Out,
    writer: &'a mut ResponseWriter,
    dir: String,
    columns: &'a EntryColumns,
    /// A value XML cannot carry; reported as a Server fault (the query is stopped).
    soap_error: Option<SoapError>,
    /// Where a row's numbers are formatted on their way into the response.
    scratch: WireScratch,
}

impl RowSink for EntrySink<'_> {
    fn collection(&mut self, path: &str) {
        if self.dir.is_empty() {
            self.dir = path.to_string();
        }
    }

    async fn row(&mut self, row: Vec<Option<String>>) -> Result<()> {
        let mut it = row.into_iter();
        let name = path::join(&self.dir, it.next().flatten().as_deref().unwrap_or_default());
        if let Err(e) = self.writer.entry_row(self.columns, &name, it, &mut self.out.buf) {
            self.soap_error = Some(e);
            return Err(Error::Cancelled);
        }
        crate::logging::add_rows(1);
        self.out.flush_if_full().await
    }

    /// `row` over borrowed text: no `String` per value.
    async fn wire_row(&mut self, row: WireRow<'_>) -> Result<()> {
        let mut it = row.texts(&mut self.scratch).map(|t| match t {
            WireText::Null => RowValue::Text(None),
            WireText::Text(s) => RowValue::Text(Some(s)),
            WireText::Formatted(s) => RowValue::Formatted(s),
        });
        let first = it.next();
        let name = path::join(&self.dir, first.as_ref().and_then(EntryValue::text).unwrap_or_default());
        if let Err(e) = self.writer.entry_row(self.columns, &name, it, &mut self.out.buf) {
            self.soap_error = Some(e);
            return Err(Error::Cancelled);
        }
        crate::logging::add_rows(1);
        self.out.flush_if_full().await
    }
}

async fn get_attributes(
    cat: Cat,
    s: Box<Sess>,
    version: SoapVersion,
    entry_names: Vec<String>,
    asked: Option<Arc<AttributeList>>,
) -> Result<Output, Failure> {
    match spawn_stream(cat, s, version, entry_names, asked).await {
        Ok(Start::Done(Ok(bytes))) => Ok(Output::Complete(bytes)),
        Ok(Start::Done(Err(e))) => Err(e),
        Ok(Start::Streaming(body)) => Ok(Output::Streaming(body)),
        Err(_) => Err(Error::Internal("getAttributes task ended without an answer".into()).into()),
    }
}

/// Starts the task that writes the response; it says how the response starts. A plain function,
/// so that the task's future is built and handed to the runtime here and takes no room in the
/// request's future (an `async fn` keeps a slot for it across its await).
fn spawn_stream(
    cat: Cat,
    s: Box<Sess>,
    version: SoapVersion,
    entry_names: Vec<String>,
    asked: Option<Arc<AttributeList>>,
) -> oneshot::Receiver<Start> {
    let (start_tx, start_rx) = oneshot::channel();
    // The streaming task counts rows for the request's log line and logs in its span.
    let rows = crate::logging::rows_handle().unwrap_or_default();
    let task = async move {
        let mut s = s;
        let mut out = Out { buf: Vec::with_capacity(8192), start: Some(start_tx), tx: None };
        let r = stream_entries(&cat, &mut s, version, &entry_names, asked.as_deref(), &mut out).await;
        out.finish(r).await;
    };
    tokio::spawn(crate::logging::with_rows(rows, task).instrument(tracing::Span::current()));
    start_rx
}

async fn stream_entries(
    cat: &Cat,
    s: &mut Sess,
    version: SoapVersion,
    entry_names: &[String],
    asked: Option<&AttributeList>,
    out: &mut Out,
) -> Result<(), Failure> {
    let mut writer = ResponseWriter::begin(version, Operation::GetAttributes, &mut out.buf);
    for pattern in entry_names {
        let abs = path::absolute(&s.cwd, pattern)?;
        // Without attribute names the collection must be known first (its attributes are the
        // list); with them, `getattr` names it to the sink (`RowSink::collection`).
        let listed;
        let (dir, list) = match asked {
            Some(list) => (String::new(), list),
            None => {
                let dir = entries_dir(cat, s, &abs).await?;
                let attrs: Vec<String> = cat.listattr(s, &dir).await?.into_iter().map(|a| a.name).collect();
                listed = AttributeList::new(&attrs);
                (dir, &listed)
            }
        };
        let known = !dir.is_empty();
        let mut sink = EntrySink {
            out: &mut *out,
            writer: &mut writer,
            dir,
            columns: &list.columns,
            soap_error: None,
            scratch: WireScratch::default(),
        };
        let r = cat.getattr(s, &abs, &list.names, &mut sink).await;
        if let Some(e) = sink.soap_error.take() {
            return Err(e.into());
        }
        if let Err(e) = r {
            // The answer is the error finding the collection gives, if it gives one (it came
            // first when the collection was found before `getattr`): the same fault as before.
            if !known {
                entries_dir(cat, s, &abs).await?;
            }
            return Err(e.into());
        }
    }
    writer.finish(&mut out.buf)?;
    Ok(())
}

/// The collection whose entries `abs` designates: `abs` itself if it is a collection, else
/// its parent (an entry name or a wildcard pattern). Errors are the ones `getattr` gives.
async fn entries_dir(cat: &Cat, s: &mut Sess, abs: &str) -> Result<String> {
    let Some((parent, last)) = path::split(abs) else {
        return Ok("/".to_string());
    };
    if path::has_wildcard(last) {
        return Ok(parent.to_string());
    }
    let rows = cat.stat(s, abs).await?;
    let is_collection = rows.first().and_then(|r| r.get(1)).and_then(|k| k.as_deref()) == Some("collection");
    Ok(if is_collection { abs.to_string() } else { parent.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_clamp() {
        let cfg = Config { soap_default_page_size: 100, soap_max_page_size: 1000, ..Config::default() };
        assert_eq!(page_size(&cfg, None), 100);
        assert_eq!(page_size(&cfg, Some(0)), 100);
        assert_eq!(page_size(&cfg, Some(5)), 5);
        assert_eq!(page_size(&cfg, Some(5000)), 1000);
    }

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    /// A kept list serves only the very names it was made of, in their order, and is what a list
    /// made for one request would be; the shelf keeps the most recently asked lists up to its
    /// bound and never a list longer than its byte limit.
    #[test]
    fn attribute_lists_serve_only_their_own_names() {
        let lists = AttributeLists::default();
        let ab = lists.get(&list(&["a", "b"]));
        assert!(Arc::ptr_eq(&ab, &lists.get(&list(&["a", "b"]))));
        for other in [&["ab"][..], &["a", "b", ""], &["b", "a"], &["a"], &["A", "b"], &[]] {
            let got = lists.get(&list(other));
            assert!(!Arc::ptr_eq(&ab, &got), "{other:?}");
            assert_eq!(got.names.iter().collect::<Vec<_>>(), other);
            assert_eq!(format!("{:?}", got.columns), format!("{:?}", EntryColumns::new(other)));
        }
        assert_eq!(lists.len(), 7);
        let firsts: Vec<_> = (0..MAX_ATTRIBUTE_LISTS).map(|i| lists.get(&list(&[&format!("n{i}")]))).collect();
        assert_eq!(lists.len(), MAX_ATTRIBUTE_LISTS);
        assert!(!Arc::ptr_eq(&ab, &lists.get(&list(&["a", "b"]))), "the oldest list is forgotten");
        // Asked again, the oldest list becomes the most recent: the next new list forgets another.
        assert!(Arc::ptr_eq(&firsts[1], &lists.get(&list(&["n1"]))));
        lists.get(&list(&["new"]));
        assert!(Arc::ptr_eq(&firsts[1], &lists.get(&list(&["n1"]))));
        assert!(!Arc::ptr_eq(&firsts[2], &lists.get(&list(&["n2"]))));
        let long = vec!["x".repeat(MAX_KEPT_LIST_BYTES / 2 + 1); 2];
        assert!(!Arc::ptr_eq(&lists.get(&long), &lists.get(&long)), "too long to keep");
    }
}
