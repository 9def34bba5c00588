//! Writes one reply onto the socket: the status line, data lines (escaped for clients that
//! negotiated `escape`), then the end marker; or an inline CAN when a stream fails midway.
//! It is the `RowSink` the catalogue streams into, so rows go to the socket as they are read.

use ardacat_core::service::{WireRow, WireScratch, WireText};
use ardacat_core::{Error, RowSink};
use ardacat_proto::{Field, FieldWriter, ProtoError, ReplyPiece, ServerCodec, WriteRow, encode_value};
use futures::SinkExt;
use tokio::io::AsyncWrite;
use tokio_util::codec::FramedWrite;

pub type Writer<W> = FramedWrite<W, ServerCodec>;

pub struct Reply<'a, W> {
    out: &'a mut Writer<W>,
    escape: bool,
    status_sent: bool,
    /// Set when the socket failed: the connection is over.
    pub broken: bool,
    /// Data lines sent (the request log's `rows`).
    rows: u64,
    /// Where a row's numbers are formatted on their way into the write buffer: the
    /// connection's, so that its room is made once, not once per reply.
    scratch: &'a mut WireScratch,
}

fn unsendable() -> Error {
    Error::InvalidValue(
        "a value contains a newline or control byte; reconnect with the 'escape' option to receive it".into(),
    )
}

fn io_err(e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("write failed: {e}"))
}

impl<'a, W: AsyncWrite + Unpin + Send> Reply<'a, W> {
    pub fn new(out: &'a mut Writer<W>, escape: bool, scratch: &'a mut WireScratch) -> Self {
        Reply { out, escape, status_sent: false, broken: false, rows: 0, scratch }
    }

    async fn feed(&mut self, piece: ReplyPiece<'_>) -> Result<(), Error> {
        let r = self.out.feed(piece).await.map_err(io_err);
        if r.is_err() {
            self.broken = true;
        }
        r
    }

    pub async fn ok(&mut self) -> Result<(), Error> {
        if !self.status_sent {
            self.status_sent = true;
            self.feed(ReplyPiece::Status(0)).await?;
        }
        Ok(())
    }

    /// Data lines sent so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// One data line holding one value.
    pub async fn value(&mut self, v: Option<&str>) -> Result<(), Error> {
        self.ok().await?;
        self.rows += 1;
        let text = encode_value(v, self.escape).map_err(|_| unsendable())?;
        self.feed(ReplyPiece::Data(text)).await
    }

    /// End a successful reply (sending `0` first if no row came).
    pub async fn finish(mut self, session: Option<u64>) -> Result<(), Error> {
        self.ok().await?;
        self.feed(ReplyPiece::End { session }).await?;
        // The writer takes pieces and rows (`WriteRow`); either flushes the one buffer.
        SinkExt::<ReplyPiece<'_>>::flush(self.out).await.map_err(io_err)
    }

    /// End a failed reply: an error status if nothing was sent yet, else an inline CAN.
    pub async fn fail(mut self, e: &Error, session: Option<u64>) -> Result<(), Error> {
        let code = i32::from(e.code());
        let msg = e.public_message();
        if self.status_sent {
            self.feed(ReplyPiece::cancelled(code, msg)).await?;
        } else {
            self.status_sent = true;
            self.feed(ReplyPiece::error(code, msg)).await?;
        }
        self.feed(ReplyPiece::End { session }).await?;
        SinkExt::<ReplyPiece<'_>>::flush(self.out).await.map_err(io_err)
    }
}

impl<W: AsyncWrite + Unpin + Send> Reply<'_, W> {
    fn fed(&mut self, r: Result<(), ProtoError>) -> Result<(), Error> {
        match r {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            // Nothing of the row was written; the reply can still end with CAN.
            Err(ProtoError::UnframeableLine { .. }) => Err(unsendable()),
            Err(e) => {
                self.broken = true;
                Err(io_err(e))
            }
        }
    }
}

impl<W: AsyncWrite + Unpin + Send> RowSink for Reply<'_, W> {
    async fn row(&mut self, row: Vec<Option<String>>) -> Result<(), Error> {
        self.ok().await?;
        let r = self.out.feed(ReplyPiece::Values { values: &row, escape: self.escape }).await;
        self.fed(r)
    }

    /// Query rows go into the write buffer from the row's own text and one reused scratch
    /// buffer: no `String` per value.
    async fn wire_row(&mut self, row: WireRow<'_>) -> Result<(), Error> {
        self.ok().await?;
        // Each value goes from the row (or the scratch buffer, once formatted) straight into
        // the write buffer: no list of the row's fields is made first.
        let scratch = &mut *self.scratch;
        let write = |w: &mut FieldWriter<'_>| {
            row.for_each_text(scratch, |t| {
                w.field(match t {
                    WireText::Null => Field::Null,
                    WireText::Text(s) => Field::Text(s),
                    WireText::Formatted(s) => Field::Plain(s),
                })
            })
        };
        let r = self.out.feed(WriteRow { escape: self.escape, write }).await;
        self.fed(r)
    }
}
