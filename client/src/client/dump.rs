//! Dump and restore over the protocol: `dump [<dir>]` is an ordinary streamed reply (one dump
//! line per value); a restore is `restore [<dir>]`, then the records in unanswered
//! `restore_put <record>…` commands of many records each, then `restore_end`, whose status is
//! the restore's (the server keeps it in one transaction). It must not read or write files
//! or decide what a record means.

use super::Client;
use super::reply::RowStream;
use crate::error::{ClientError, Result};

/// Most bytes of records packed into one `restore_put` line (the server's default line limit
/// is 1 MiB; quoting adds a little).
const PUT_BYTES: usize = 256 * 1024;
/// Most records in one `restore_put` line.
const PUT_RECORDS: usize = 2000;

/// What a restore loaded, as `restore_end` answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    pub records: u64,
    pub entries: u64,
}

impl Client {
    /// `dump [<dir>]`: the reply's values are the dump's lines, header first, trailer last.
    pub async fn dump(&mut self, dir: &str) -> Result<RowStream<'_>> {
        let line = self.command_line(&["dump", dir])?;
        self.stream(&line).await
    }

    /// `dump_count [<dir>]` (an ardacat extension): how many entries `dump <dir>` would hold
    /// now, for a progress display.
    pub async fn dump_count(&mut self, dir: &str) -> Result<u64> {
        let n = self.single(&["dump_count", dir]).await?;
        n.trim().parse().map_err(|_| ClientError::Protocol(format!("dump_count answered {n:?}")))
    }

    /// Restores the dump whose lines `lines` yields (without newlines) into `into` (default: the
    /// dump's own root). `seen` is called with each line sent. A line that cannot be read ends
    /// the restore with `restore_abort` and returns that error; nothing is kept then.
    pub async fn restore<I, E>(&mut self, into: Option<&str>, lines: I, mut seen: impl FnMut(&str)) -> Result<Restored>
    where
        I: IntoIterator<Item = std::result::Result<String, E>>,
        E: std::fmt::Display,
    {
        self.prepare().await?;
        let start = match into {
            Some(d) => self.command_line(&["restore", d])?,
            None => "restore".to_string(),
        };
        self.feed(start).await?;
        let mut batch: Vec<String> = vec!["restore_put".into()];
        let mut bytes = 0;
        for line in lines {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    // Best effort: the restore is void anyway; the caller wants the cause.
                    let _ = self.execute("restore_abort").await;
                    return Err(ClientError::InvalidArgument(format!("reading the dump: {e}")));
                }
            };
            seen(&line);
            // A long record (up to the server's line limit) goes in a command of its own.
            if batch.len() > 1 && (bytes + line.len() > PUT_BYTES || batch.len() > PUT_RECORDS) {
                self.put_batch(&mut batch).await?;
                bytes = 0;
            }
            bytes += line.len();
            batch.push(line);
        }
        if batch.len() > 1 {
            self.put_batch(&mut batch).await?;
        }
        let answer = self.execute("restore_end").await?;
        let num = |i: usize| answer.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(Restored { records: num(0), entries: num(1) })
    }

    async fn put_batch(&mut self, batch: &mut Vec<String>) -> Result<()> {
        let line = match self.command_line(batch) {
            Ok(l) => l,
            Err(e) => {
                let _ = self.execute("restore_abort").await;
                return Err(e);
            }
        };
        batch.truncate(1);
        self.feed(line).await
    }
}
