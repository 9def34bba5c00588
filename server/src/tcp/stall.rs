//! The write-stall guard: an `AsyncWrite` wrapper that fails a write (or flush) which has made
//! no progress for a set time, so a client that stops reading its reply is disconnected and its
//! connection slot, database connection and buffers are freed. It only measures progress; it
//! must not buffer, reorder or retry bytes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio::time::Sleep;

pub struct StallGuard<W> {
    inner: W,
    limit: Duration,
    /// Started by the first `Pending` since the last progress.
    timer: Option<Pin<Box<Sleep>>>,
    /// The limit passed once: every later write fails at once.
    stalled: bool,
}

impl<W> StallGuard<W> {
    pub fn new(inner: W, limit: Duration) -> Self {
        StallGuard { inner, limit, timer: None, stalled: false }
    }

    fn stalled_error(&self) -> io::Error {
        io::Error::new(io::ErrorKind::TimedOut, format!("the peer read nothing for {} s", self.limit.as_secs()))
    }

    fn watch<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Ready(v) => {
                self.timer = None;
                Poll::Ready(v)
            }
            Poll::Pending => {
                let limit = self.limit;
                let timer = self.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if timer.as_mut().poll(cx).is_ready() {
                    self.stalled = true;
                    self.timer = None;
                    Poll::Ready(Err(self.stalled_error()))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for StallGuard<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.stalled {
            return Poll::Ready(Err(this.stalled_error()));
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.stalled {
            return Poll::Ready(Err(this.stalled_error()));
        }
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stalled {
            return Poll::Ready(Err(this.stalled_error()));
        }
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stalled {
            return Poll::Ready(Err(this.stalled_error()));
        }
        let r = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_peer_that_stops_reading_fails_the_write() {
        let (a, _b) = tokio::io::duplex(64);
        let mut w = StallGuard::new(a, Duration::from_millis(100));
        let started = std::time::Instant::now();
        let err = w.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert!(w.write_all(b"x").await.is_err(), "stays failed");
    }

    #[tokio::test]
    async fn a_slow_reader_is_not_a_stall() {
        let (a, mut b) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            let mut total = 0;
            while total < 1024 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                total += tokio::io::AsyncReadExt::read(&mut b, &mut buf).await.unwrap();
            }
        });
        let mut w = StallGuard::new(a, Duration::from_millis(100));
        w.write_all(&[0u8; 1024]).await.unwrap();
        reader.await.unwrap();
    }
}
