//! Bulk load: `upload <dir> a1..aN`, one unanswered `put` per row, then `commit`, whose status
//! is the upload's. Lines are queued without a flush each; a bad row aborts the upload. It must
//! not decide the server's transaction (the server does) or shape rows for the CLI.

use std::borrow::Cow;

use ardacat_proto::ClientPiece;
use futures::SinkExt;

use super::Client;
use crate::error::{ClientError, Result};

impl Client {
    /// Bulk load: `upload <dir> a1..aN`, one `put <name> v1..vN` per row — none of which the
    /// server answers — then `commit`, whose status is the upload's. Returns the rows sent.
    /// A row of the wrong width or with an unsendable value aborts the upload.
    pub async fn upload<A, I>(&mut self, dir: &str, attrs: &[A], rows: I) -> Result<u64>
    where
        A: AsRef<str>,
        I: IntoIterator<Item = (String, Vec<Option<String>>)>,
    {
        self.prepare().await?;
        let mut head = vec![Some("upload"), Some(dir)];
        head.extend(attrs.iter().map(|a| Some(a.as_ref())));
        let line = self.command_line_opt(&head)?;
        self.feed(line).await?;
        let mut sent = 0u64;
        for (name, values) in rows {
            let line = if values.len() == attrs.len() {
                let mut args = vec![Some("put"), Some(name.as_str())];
                args.extend(values.iter().map(|v| v.as_deref()));
                self.command_line_opt(&args)
            } else {
                Err(ClientError::InvalidArgument(format!(
                    "row {name:?} has {} values for {} attributes",
                    values.len(),
                    attrs.len()
                )))
            };
            match line {
                Ok(line) => self.feed(line).await?,
                Err(e) => {
                    // Best effort: the upload is void anyway; the caller wants the first error.
                    let _ = self.execute("abort").await;
                    return Err(e);
                }
            }
            sent += 1;
        }
        self.execute("commit").await?;
        Ok(sent)
    }

    /// Sends one command line the server does not answer (`upload`, `put`, and anything else
    /// inside an upload), queued without a flush: the next answered command flushes it.
    pub async fn send_unanswered(&mut self, line: &str) -> Result<()> {
        self.prepare().await?;
        self.feed(line.to_owned()).await
    }

    /// Queues one line without flushing (the codec flushes when its buffer fills).
    pub(super) async fn feed(&mut self, line: String) -> Result<()> {
        match self.framed.feed(ClientPiece::Command(Cow::Owned(line))).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.mark_lost(e.into())),
        }
    }
}
