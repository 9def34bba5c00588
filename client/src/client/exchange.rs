//! The command/reply loop: one command at a time, finishing an abandoned reply (cancel and
//! drain) before the next, sending the line, and handing back its [`RowStream`]; plus the
//! collectors the typed helpers use (all values, one value, names, pairs). It must not parse
//! reply frames itself (that is `reply`) nor know individual commands (that is
//! `commands`).

use std::borrow::Cow;

use ardacat_proto::{ClientPiece, ReplyFrame};
use futures::{SinkExt, StreamExt};

use super::Client;
use super::reply::RowStream;
use crate::error::{ClientError, Result};

impl Client {
    /// Makes the connection ready for a new command: finishes an abandoned reply first.
    pub(super) async fn prepare(&mut self) -> Result<()> {
        if self.broken {
            return Err(ClientError::Closed);
        }
        if self.in_reply {
            // The stream of the previous command was dropped early: ask the server to stop, then
            // read up to its end marker. A CAN that arrives after the reply ended is ignored.
            if let Err(e) = self.framed.send(ClientPiece::Cancel).await {
                return Err(self.mark_lost(e.into()));
            }
            loop {
                match self.framed.next().await {
                    Some(Ok(ReplyFrame::End { session })) => {
                        self.note_session(session);
                        break;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(self.mark_lost(e.into())),
                    None => return Err(self.mark_lost(ClientError::Closed)),
                }
            }
            self.in_reply = false;
        }
        Ok(())
    }

    /// Sends one command line and returns its reply stream without waiting for the status line,
    /// so that even a command that has not produced its status yet can be cancelled.
    pub async fn start(&mut self, line: &str) -> Result<RowStream<'_>> {
        self.prepare().await?;
        if let Err(e) = self.framed.send(ClientPiece::Command(Cow::Borrowed(line))).await {
            return Err(self.mark_lost(e.into()));
        }
        self.in_reply = true;
        Ok(RowStream::new(self))
    }

    /// Sends one command line and waits for its status; a non-zero status is returned as
    /// [`ClientError::Server`]. The data lines are then read from the stream as the caller pulls.
    pub async fn stream(&mut self, line: &str) -> Result<RowStream<'_>> {
        let mut rows = self.start(line).await?;
        rows.wait_status().await?;
        Ok(rows)
    }

    /// Runs one command line and collects its data lines as sent (still escaped under `escape`).
    pub async fn execute(&mut self, line: &str) -> Result<Vec<String>> {
        let mut rows = self.start(line).await?;
        let mut out = Vec::new();
        while let Some(line) = rows.next_line().await? {
            out.push(line);
        }
        Ok(out)
    }

    /// Runs a command built from arguments and collects its data lines.
    pub async fn execute_args<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<String>> {
        let line = self.command_line(args)?;
        self.execute(&line).await
    }

    pub(super) async fn values<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<Option<String>>> {
        let lines = self.execute_args(args).await?;
        lines.into_iter().map(|l| self.decode(l)).collect()
    }

    pub(super) async fn single<S: AsRef<str>>(&mut self, args: &[S]) -> Result<String> {
        let name = args.first().map(|a| a.as_ref().to_owned()).unwrap_or_default();
        match self.values(args).await?.into_iter().next() {
            Some(value) => Ok(value.unwrap_or_default()),
            None => Err(ClientError::Protocol(format!("{name}: expected one data line, got none"))),
        }
    }

    pub(super) async fn names<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<String>> {
        Ok(self.values(args).await?.into_iter().map(Option::unwrap_or_default).collect())
    }

    pub(super) async fn pairs<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Vec<(String, String)>> {
        let values = self.names(args).await?;
        if values.len() % 2 != 0 {
            return Err(ClientError::Protocol(format!("expected pairs of lines, got {} lines", values.len())));
        }
        let mut it = values.into_iter();
        let mut out = Vec::new();
        while let (Some(a), Some(b)) = (it.next(), it.next()) {
            out.push((a, b));
        }
        Ok(out)
    }
}
