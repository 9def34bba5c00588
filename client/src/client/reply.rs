//! One command's reply, read lazily: the status line, data lines as the caller pulls them (TCP
//! gives the back-pressure), inline aborts, the end marker (with its session id), cancel and
//! drain. It must not send commands other than the cancel byte, nor decide what a reply means.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use ardacat_proto::{ClientPiece, ReplyFrame, parse_status};
use futures::{SinkExt, Stream, StreamExt};

use super::Client;
use crate::error::{ClientError, Result};

/// What one step of reading a reply produced.
enum Event {
    StatusOk,
    Line(String),
    Lines(LineRun),
    End,
}

/// Data lines of a reply that arrived together ([`RowStream::next_lines`]): one allocation and
/// one decoder step for all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRun {
    /// The lines as sent (escaped under `escape`), each ended by `\n`.
    text: String,
    count: usize,
}

impl LineRun {
    /// The lines as sent, each followed by its `\n` (ready to be written out as they are).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many lines the run holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The lines one by one, without their `\n`.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.text.split_terminator('\n')
    }
}

/// A run that `next_line` is handing out one line at a time.
struct Held {
    run: LineRun,
    at: usize,
}

/// The reply of one command, read from the socket only as the caller asks for lines (TCP gives
/// the back-pressure). Also a `futures::Stream` of data lines. Dropping it early is allowed: the
/// next command on the client cancels and drains the rest first.
pub struct RowStream<'a> {
    client: &'a mut Client,
    status_read: bool,
    finished: bool,
    cancel_sent: bool,
    /// The error to report once the end marker has been read.
    failure: Option<ClientError>,
    lines: u64,
    /// Lines received, not yet returned by `next_line`.
    held: Option<Held>,
}

impl<'a> RowStream<'a> {
    pub(super) fn new(client: &'a mut Client) -> Self {
        Self { client, status_read: false, finished: false, cancel_sent: false, failure: None, lines: 0, held: None }
    }

    /// Data lines returned so far.
    pub fn lines_read(&self) -> u64 {
        self.lines
    }

    /// Whether the end marker has been read.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether values are escaped on this connection (see [`Client::decode`]).
    pub fn escape(&self) -> bool {
        self.client.escape
    }

    /// Decodes a line this stream returned, keeping the raw text for the caller.
    pub fn decode(&self, line: &str) -> Result<Option<String>> {
        self.client.decode(line.to_owned())
    }

    fn abort_error(&self, code: i32, message: String) -> ClientError {
        if self.cancel_sent { ClientError::Cancelled { code, message } } else { ClientError::Server { code, message } }
    }

    fn lost(&mut self, e: ClientError) -> ClientError {
        self.finished = true;
        self.client.in_reply = false;
        self.client.broken = true;
        e
    }

    /// Reads frames until something the caller cares about: the success status, a data line, or
    /// the end of the reply (turned into the recorded error, if any).
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Result<Event>> {
        loop {
            if self.finished {
                return Poll::Ready(match self.failure.take() {
                    Some(e) => Err(e),
                    None => Ok(Event::End),
                });
            }
            // Data lines (never the status line: a run does not tell it from data) come in runs
            // of what arrived together: one decoder step and one allocation per read.
            self.client.framed.codec_mut().gather_lines(self.status_read);
            let frame = match ready!(self.client.framed.poll_next_unpin(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => return Poll::Ready(Err(self.lost(e.into()))),
                None => return Poll::Ready(Err(self.lost(ClientError::Closed))),
            };
            match frame {
                ReplyFrame::End { session } => {
                    self.finished = true;
                    self.client.in_reply = false;
                    self.client.note_session(session);
                    if !self.status_read && self.failure.is_none() {
                        self.failure = Some(ClientError::Protocol("reply ended without a status line".into()));
                    }
                }
                ReplyFrame::Cancel { code, message } => {
                    if self.failure.is_none() {
                        self.failure = Some(self.abort_error(code, message));
                    }
                }
                ReplyFrame::Invalid(fault) => {
                    if self.failure.is_none() {
                        self.failure = Some(ClientError::Protocol(format!("unreadable reply line: {fault}")));
                    }
                }
                ReplyFrame::Line(line) if !self.status_read => {
                    self.status_read = true;
                    match parse_status(&line) {
                        Ok(status) if status.code == 0 => return Poll::Ready(Ok(Event::StatusOk)),
                        Ok(status) => {
                            let e = self.abort_error(status.code, status.message.to_owned());
                            self.failure.get_or_insert(e);
                        }
                        Err(e) => {
                            self.failure.get_or_insert(ClientError::Protocol(format!("bad status line: {e}")));
                        }
                    }
                }
                ReplyFrame::Line(line) => {
                    if self.failure.is_none() && !self.cancel_sent {
                        return Poll::Ready(Ok(Event::Line(line)));
                    }
                }
                ReplyFrame::Lines { .. } if !self.status_read => {
                    // The codec gathers only after the status line was read; a run first means
                    // the reply and this stream are out of step.
                    self.failure.get_or_insert(ClientError::Protocol("data lines before the status line".into()));
                }
                ReplyFrame::Lines { text, count } => {
                    if self.failure.is_none() && !self.cancel_sent {
                        return Poll::Ready(Ok(Event::Lines(LineRun { text, count })));
                    }
                }
            }
        }
    }

    /// Polls for the next data line; `Ok(None)` at the end of a successful reply.
    pub fn poll_line(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<String>>> {
        loop {
            if let Some(held) = &mut self.held {
                let rest = &held.run.text[held.at..];
                let len = rest.find('\n').unwrap_or(rest.len());
                let line = rest[..len].to_owned();
                held.at += len + 1;
                if held.at >= held.run.text.len() {
                    self.held = None;
                }
                self.lines += 1;
                return Poll::Ready(Ok(Some(line)));
            }
            match ready!(self.poll_event(cx)) {
                Ok(Event::StatusOk) => {}
                Ok(Event::Line(line)) => {
                    self.lines += 1;
                    return Poll::Ready(Ok(Some(line)));
                }
                Ok(Event::Lines(run)) => self.held = Some(Held { run, at: 0 }),
                Ok(Event::End) => return Poll::Ready(Ok(None)),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Polls for the data lines that have arrived, at least one; `Ok(None)` at the end of a
    /// successful reply. For callers that handle many lines at once (the CLI's stream output).
    pub fn poll_lines(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<LineRun>>> {
        let run = match self.held.take() {
            Some(Held { run, at: 0 }) => run,
            Some(Held { run, at }) => {
                let text = run.text[at..].to_owned();
                let count = text.matches('\n').count();
                LineRun { text, count }
            }
            None => loop {
                match ready!(self.poll_event(cx)) {
                    Ok(Event::StatusOk) => {}
                    Ok(Event::Line(line)) => break LineRun { text: line + "\n", count: 1 },
                    Ok(Event::Lines(run)) => break run,
                    Ok(Event::End) => return Poll::Ready(Ok(None)),
                    Err(e) => return Poll::Ready(Err(e)),
                }
            },
        };
        self.lines += run.count as u64;
        Poll::Ready(Ok(Some(run)))
    }

    /// The data lines that have arrived (at least one) as one run; `Ok(None)` once the reply
    /// is complete. The same lines as `next_line` would return, fewer steps.
    pub async fn next_lines(&mut self) -> Result<Option<LineRun>> {
        std::future::poll_fn(|cx| self.poll_lines(cx)).await
    }

    /// Waits for the status line; an error status is returned (after draining the reply).
    pub async fn wait_status(&mut self) -> Result<()> {
        if !self.status_read || self.finished {
            // The first event of a reply is its success status, or the end of a failed reply.
            std::future::poll_fn(|cx| self.poll_event(cx)).await?;
        }
        Ok(())
    }

    /// The next data line as sent (escaped under `escape`); `Ok(None)` once the reply is complete.
    pub async fn next_line(&mut self) -> Result<Option<String>> {
        std::future::poll_fn(|cx| self.poll_line(cx)).await
    }

    /// The next data line decoded into a value (`Some(None)` is NULL under `escape`).
    pub async fn next_value(&mut self) -> Result<Option<Option<String>>> {
        match self.next_line().await? {
            Some(line) => self.client.decode(line).map(Some),
            None => Ok(None),
        }
    }

    /// The next `width` values as one row; an incomplete last row is a protocol error.
    pub async fn next_row(&mut self, width: usize) -> Result<Option<Vec<Option<String>>>> {
        let width = width.max(1);
        let mut row = Vec::with_capacity(width);
        while row.len() < width {
            match self.next_value().await? {
                Some(value) => row.push(value),
                None if row.is_empty() => return Ok(None),
                None => {
                    return Err(ClientError::Protocol(format!(
                        "reply ended inside a row ({} of {width} values)",
                        row.len()
                    )));
                }
            }
        }
        Ok(Some(row))
    }

    /// Reads the rest of the reply, discarding the lines; returns how many there were.
    pub async fn drain(&mut self) -> Result<u64> {
        // The status line is read as text; the data lines after it are only counted, not copied
        // out (the codec's discard mode ends with the reply's end marker).
        self.wait_status().await?;
        self.client.framed.codec_mut().discard_rest_of_reply();
        let mut n = 0;
        while self.next_line().await?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    /// Asks the server to abort this reply (CAN byte), then reads up to its end marker.
    /// Returns [`ClientError::Cancelled`] with the server's abort code, or `Ok(())` if the reply
    /// had already been completed in full before the cancel arrived.
    pub async fn cancel(mut self) -> Result<()> {
        if !self.finished {
            self.cancel_sent = true;
            if let Err(e) = self.client.framed.send(ClientPiece::Cancel).await {
                return Err(self.lost(e.into()));
            }
            // A failure recorded before the cancel (e.g. an inline CAN) now counts as the abort.
            if let Some(ClientError::Server { code, message }) = self.failure.take() {
                self.failure = Some(ClientError::Cancelled { code, message });
            }
        }
        loop {
            match std::future::poll_fn(|cx| self.poll_event(cx)).await? {
                Event::End => return Ok(()),
                Event::StatusOk | Event::Line(_) | Event::Lines(_) => {}
            }
        }
    }
}

impl Stream for RowStream<'_> {
    type Item = Result<String>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished && this.failure.is_none() {
            return Poll::Ready(None);
        }
        this.poll_line(cx).map(Result::transpose)
    }
}
