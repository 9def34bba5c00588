//! The watchdog of one HTTP connection: its phase clock (header, body at a minimum rate, idle,
//! unread response), the I/O wrapper that feeds it, and the hyper service and bodies that report
//! request and response progress. Must not route, authenticate or know SOAP.

use super::*;

/// Where a connection is in its request cycle, and since when.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for (the rest of) a request header.
    Header { since: Instant },
    /// Reading a request body: `bytes` of it so far.
    Body { since: Instant, bytes: u64 },
    /// The request is being handled and answered; `blocked` is set while a write waits for the
    /// client to read.
    Busy { blocked: Option<Instant> },
    /// Between requests on a kept-alive connection; `blocked` as in `Busy` (the end of the last
    /// response may still wait for the client to read).
    Idle { since: Instant, blocked: Option<Instant> },
}

/// The watchdog's view of one connection, updated by the I/O wrapper, the service and the body
/// wrapper; every change wakes the watchdog ([`Clock::expired`]).
pub(super) struct Clock {
    limits: Limits,
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Clock {
    pub(super) fn new(limits: Limits) -> Clock {
        Clock { limits, phase: Mutex::new(Phase::Header { since: Instant::now() }), changed: Notify::new() }
    }

    fn update(&self, f: impl FnOnce(&mut Phase) -> bool) {
        let changed = f(&mut self.phase.lock().unwrap_or_else(|e| e.into_inner()));
        if changed {
            self.changed.notify_one();
        }
    }

    /// When the current phase runs out, and what it is.
    fn deadline(&self) -> Option<(Instant, HttpTimeout)> {
        let l = &self.limits;
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Header { since } => Some((since + l.header, HttpTimeout::Header)),
            Phase::Body { since, bytes } => {
                // Rate 0: the whole body within `body`.
                let earned = match l.body_rate {
                    0 => Duration::ZERO,
                    rate => Duration::from_secs_f64(bytes as f64 / rate as f64),
                };
                since.checked_add(l.body.saturating_add(earned)).map(|d| (d, HttpTimeout::Body))
            }
            Phase::Busy { blocked: Some(since) } => Some((since + l.idle, HttpTimeout::Write)),
            Phase::Busy { blocked: None } => None,
            Phase::Idle { since, blocked: None } => Some((since + l.idle, HttpTimeout::Idle)),
            // A client that does not read the last response is stalling, not idle.
            Phase::Idle { since, blocked: Some(b) } => Some((since.min(b) + l.idle, HttpTimeout::Write)),
        }
    }

    /// Resolves when the connection overstays its current phase.
    pub(super) async fn expired(&self) -> HttpTimeout {
        loop {
            match self.deadline() {
                None => self.changed.notified().await,
                Some((at, what)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {
                            // The phase may have moved on (or its deadline later) meanwhile.
                            if let Some((now_at, now_what)) = self.deadline()
                                && now_what == what
                                && now_at <= Instant::now()
                            {
                                return what;
                            }
                        }
                        _ = self.changed.notified() => {}
                    }
                }
            }
        }
    }

    /// Bytes arrived: an idle connection starts reading a request header.
    fn read(&self) {
        self.update(|p| match p {
            Phase::Idle { .. } => {
                *p = Phase::Header { since: Instant::now() };
                true
            }
            _ => false,
        });
    }

    fn request(&self) {
        self.update(|p| {
            *p = Phase::Busy { blocked: None };
            true
        });
    }

    /// The handler asks for the request body: from now on the server waits for the client. (Time
    /// the handler spends before, authenticating for instance, is not the client's.)
    fn body_wanted(&self) {
        self.update(|p| match p {
            Phase::Busy { .. } => {
                *p = Phase::Body { since: Instant::now(), bytes: 0 };
                true
            }
            _ => false,
        });
    }

    fn body_bytes(&self, n: u64) {
        self.update(|p| {
            if let Phase::Body { bytes, .. } = p {
                *bytes += n;
            }
            false
        });
    }

    fn body_done(&self) {
        self.update(|p| match p {
            Phase::Body { .. } => {
                *p = Phase::Busy { blocked: None };
                true
            }
            _ => false,
        });
    }

    fn response_done(&self) {
        self.update(|p| {
            let blocked = match p {
                Phase::Busy { blocked } => *blocked,
                _ => None,
            };
            *p = Phase::Idle { since: Instant::now(), blocked };
            true
        });
    }

    /// A write could not go on (`true`) or went on (`false`).
    fn write_blocked(&self, blocked_now: bool) {
        self.update(|p| match p {
            Phase::Busy { blocked } | Phase::Idle { blocked, .. } if blocked_now && blocked.is_none() => {
                *blocked = Some(Instant::now());
                true
            }
            Phase::Busy { blocked } | Phase::Idle { blocked, .. } if !blocked_now && blocked.is_some() => {
                *blocked = None;
                true
            }
            _ => false,
        });
    }
}

/// The connection's stream, telling the clock about reads and blocked writes.
pub(super) struct Watched<I> {
    pub(super) inner: I,
    pub(super) clock: Arc<Clock>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.read();
        }
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.clock.write_blocked(r.is_pending());
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// hyper's service for one connection: the router, with the peer as axum `ConnectInfo` and the
/// bodies watched.
#[derive(Clone)]
pub(super) struct ConnService {
    pub(super) router: Router,
    pub(super) peer: ConnectInfo<Peer>,
    pub(super) clock: Arc<Clock>,
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<hyper::body::Incoming>) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        self.clock.request();
        parts.extensions.insert(self.peer.clone());
        let started = body.is_end_stream();
        let body = Body::new(RequestBody { inner: Body::new(body), clock: self.clock.clone(), started });
        let req = Request::from_parts(parts, body);
        let (router, clock) = (self.router.clone(), self.clock.clone());
        Box::pin(async move {
            let response = match router.oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok(response.map(|b| Body::new(ResponseBody { inner: b, clock: Some(clock) })))
        })
    }
}

/// A request body that reports its start, progress and end to the clock.
struct RequestBody {
    inner: Body,
    clock: Arc<Clock>,
    /// The clock knows the body is being read (or there is none).
    started: bool,
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if !self.started {
            self.started = true;
            self.clock.body_wanted();
        }
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    self.clock.body_bytes(data.len() as u64);
                }
                if self.inner.is_end_stream() {
                    self.clock.body_done();
                }
            }
            Poll::Ready(None) => self.clock.body_done(),
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that tells the clock when it has been sent (hyper drops it then).
struct ResponseBody {
    inner: Body,
    clock: Option<Arc<Clock>>,
}

impl HttpBody for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(clock) = self.clock.take() {
            clock.response_done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header: Duration::from_secs(10),
            body: Duration::from_secs(20),
            body_rate: 500,
            idle: Duration::from_secs(60),
            handshake: Duration::from_secs(30),
        }
    }

    #[tokio::test]
    async fn phases_and_their_deadlines() {
        let clock = Clock::new(limits());
        let start = match clock.deadline() {
            Some((at, HttpTimeout::Header)) => at - Duration::from_secs(10),
            other => panic!("a new connection waits for a header: {other:?}"),
        };
        clock.request();
        assert_eq!(clock.deadline(), None);
        clock.body_wanted();
        let body_start = match *clock.phase.lock().unwrap() {
            Phase::Body { since, .. } => since,
            other => panic!("{other:?}"),
        };
        // 1000 bytes at 500 B/s earn two more seconds.
        clock.body_bytes(1000);
        assert_eq!(clock.deadline(), Some((body_start + Duration::from_secs(22), HttpTimeout::Body)));
        clock.body_done();
        assert_eq!(clock.deadline(), None);
        clock.write_blocked(true);
        assert!(matches!(clock.deadline(), Some((_, HttpTimeout::Write))));
        clock.write_blocked(false);
        assert_eq!(clock.deadline(), None);
        clock.response_done();
        assert!(matches!(clock.deadline(), Some((at, HttpTimeout::Idle)) if at >= start + Duration::from_secs(60)));
        // The end of the last response left unread is a stall, not idleness.
        clock.write_blocked(true);
        assert!(matches!(clock.deadline(), Some((_, HttpTimeout::Write))));
        clock.write_blocked(false);
        // The first byte of the next request starts its header time.
        clock.read();
        assert!(matches!(clock.deadline(), Some((_, HttpTimeout::Header))));
        let quick = Clock::new(Limits { header: Duration::from_millis(10), ..limits() });
        assert_eq!(quick.expired().await, HttpTimeout::Header);
    }
}
