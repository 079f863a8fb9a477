//! A small HTTP/1.1 and h2c (prior knowledge) server on loopback, for emulators (feature `http-server`).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// A response body: complete bytes, or chunks sent from a task as they are produced.
pub struct ResponseBody(BodyKind, Option<io::Error>);

enum BodyKind {
    Full(Option<Bytes>),
    Channel(mpsc::Receiver<Result<Bytes, io::Error>>),
    Unbounded(mpsc::UnboundedReceiver<Result<Bytes, io::Error>>),
}

impl ResponseBody {
    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self(BodyKind::Full(Some(bytes.into())), None)
    }

    /// A streamed body and the sender that feeds it. Sending `Err` aborts the connection mid-body (a dropped
    /// stream); dropping the sender ends the body cleanly.
    pub fn channel() -> (mpsc::Sender<Result<Bytes, io::Error>>, Self) {
        let (sender, receiver) = mpsc::channel(64);
        (sender, Self(BodyKind::Channel(receiver), None))
    }

    /// Like [`ResponseBody::channel`], with an unbounded sender that can be fed without awaiting (e.g. while
    /// holding a lock).
    pub fn unbounded() -> (mpsc::UnboundedSender<Result<Bytes, io::Error>>, Self) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (sender, Self(BodyKind::Unbounded(receiver), None))
    }
}

/// Decides, when a held-back body is about to be written, whether to write it at all (see [`Pacing::claim`]).
pub type Claim = Box<dyn FnOnce() -> bool + Send>;

/// How a [`ResponseBody::paced`] body is written. Build with `Pacing::default()` and the fields.
#[derive(Default)]
#[non_exhaustive]
pub struct Pacing {
    /// Nothing is written for this long first.
    pub stall: Option<Duration>,
    /// Run after the stall: unless the client is still there and it returns `true`, nothing is written (an
    /// emulator claims the turn the body carries here, so a body nobody waits for any more claims nothing).
    pub claim: Option<Claim>,
    /// The last frame waits until this is notified.
    pub gate: Option<Arc<tokio::sync::Notify>>,
}

impl Pacing {
    /// Nothing for `stall` first.
    pub fn stall(mut self, stall: Option<Duration>) -> Self {
        self.stall = stall;
        self
    }

    /// Runs `claim` before writing (see [`Pacing::claim`]).
    pub fn claim(mut self, claim: Option<Claim>) -> Self {
        self.claim = claim;
        self
    }

    /// Holds the last frame until `gate` is notified.
    pub fn gate(mut self, gate: Option<Arc<tokio::sync::Notify>>) -> Self {
        self.gate = gate;
        self
    }
}

impl std::fmt::Debug for Pacing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pacing")
            .field("stall", &self.stall)
            .field("claim", &self.claim.is_some())
            .field("gate", &self.gate.is_some())
            .finish()
    }
}

impl ResponseBody {
    /// A body a task writes: `frames`, then `tail` (a last frame, or an error that breaks the body mid-stream;
    /// `None` ends it cleanly), paced as `pacing` says.
    pub fn paced(frames: Vec<Bytes>, tail: Option<Result<Bytes, io::Error>>, pacing: Pacing) -> Self {
        let (sender, body) = Self::channel();
        tokio::spawn(async move {
            if let Some(stall) = pacing.stall {
                // A client that hangs up during the stall (a timeout, an interrupt) ends the body at once.
                tokio::select! {
                    () = tokio::time::sleep(stall) => {}
                    () = sender.closed() => return,
                }
            }
            if let Some(claim) = pacing.claim
                && (sender.is_closed() || !claim())
            {
                return;
            }
            let last = frames.len().saturating_sub(1);
            for (index, frame) in frames.into_iter().enumerate() {
                if index == last
                    && let Some(gate) = &pacing.gate
                {
                    gate.notified().await;
                }
                if sender.send(Ok(frame)).await.is_err() {
                    return;
                }
            }
            if let Some(tail) = tail {
                let _ = sender.send(tail).await;
            }
        });
        body
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        if let Some(error) = self.1.take() {
            return Poll::Ready(Some(Err(error)));
        }
        let item = match &mut self.0 {
            BodyKind::Full(bytes) => return Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            BodyKind::Channel(receiver) => ready!(receiver.poll_recv(cx)),
            BodyKind::Unbounded(receiver) => ready!(receiver.poll_recv(cx)),
        };
        match item {
            // hyper tears the connection down as soon as a body fails, without flushing what it buffered: the
            // error waits one poll, so the frames sent before it reach the client first (a break *after* them).
            Some(Err(error)) => {
                self.1 = Some(error);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            other => Poll::Ready(other.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.0, BodyKind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            BodyKind::Full(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            BodyKind::Full(None) => SizeHint::with_exact(0),
            BodyKind::Channel(_) | BodyKind::Unbounded(_) => SizeHint::default(),
        }
    }
}

/// A JSON response with `status`.
pub fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// A request with its body read.
#[derive(Debug, Clone)]
pub struct ReceivedRequest {
    /// The method.
    pub method: http::Method,
    /// The path and query.
    pub uri: http::Uri,
    /// The headers.
    pub headers: http::HeaderMap,
    /// The body.
    pub body: Bytes,
}

type Handler = dyn Fn(ReceivedRequest) -> Pin<Box<dyn Future<Output = Response<ResponseBody>> + Send>> + Send + Sync;

/// An HTTP/1.1 and h2c server on `127.0.0.1` (port chosen by the OS); an HTTP/2 client must use prior knowledge
/// (no upgrade), and may open any number of concurrent streams. Dropping it stops the server and its connections.
pub struct LoopbackServer {
    address: SocketAddr,
    _tasks: JoinSet<()>,
}

impl std::fmt::Debug for LoopbackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackServer").field("address", &self.address).finish()
    }
}

impl LoopbackServer {
    /// Starts serving every request with `handler`.
    pub async fn start<F, Fut>(handler: F) -> io::Result<Self>
    where
        F: Fn(ReceivedRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<ResponseBody>> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let handler: Arc<Handler> = Arc::new(move |request| Box::pin(handler(request)));
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new());
            // Every emulated session may hold an event stream open on one shared HTTP/2 connection.
            builder.http2().timer(TokioTimer::new()).max_concurrent_streams(None);
            let builder = Arc::new(builder);
            let mut connections = JoinSet::new();
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        // Out of file descriptors, say: the connections already open go on, and so does this
                        // loop once the pressure is off.
                        let pause = accept_backoff(&error);
                        tracing::warn!(%error, ?pause, "the loopback server could not accept a connection");
                        tokio::time::sleep(pause).await;
                        continue;
                    }
                };
                // Streamed bodies are many small writes: without this, Nagle's algorithm and delayed ACKs add
                // ~40 ms per response.
                let _ = stream.set_nodelay(true);
                let handler = Arc::clone(&handler);
                let builder = Arc::clone(&builder);
                connections.spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let handler = Arc::clone(&handler);
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = match body.collect().await {
                                Ok(collected) => collected.to_bytes(),
                                Err(_) => Bytes::new(),
                            };
                            let received =
                                ReceivedRequest { method: parts.method, uri: parts.uri, headers: parts.headers, body };
                            Ok::<_, Infallible>(handler(received).await)
                        }
                    });
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { address, _tasks: tasks })
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// How long the accept loop pauses after `error` before accepting again: not at all when only that one
/// connection failed (aborted or reset before it was accepted, or an interrupted call), briefly otherwise (out of
/// file descriptors or memory), so a full table does not spin the loop. The loop never ends on an error.
fn accept_backoff(error: &io::Error) -> Duration {
    match error.kind() {
        io::ErrorKind::ConnectionAborted
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::Interrupted
        | io::ErrorKind::WouldBlock => Duration::ZERO,
        _ => ACCEPT_BACKOFF,
    }
}

/// The pause after an accept error that is not about one connection.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A complete empty response with `status`.
pub fn empty_response(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(Bytes::new()));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_pause_only_when_the_process_is_short_of_resources() {
        for kind in [io::ErrorKind::ConnectionAborted, io::ErrorKind::ConnectionReset, io::ErrorKind::Interrupted] {
            assert_eq!(accept_backoff(&io::Error::from(kind)), Duration::ZERO, "{kind:?}");
        }
        // EMFILE and ENFILE (too many open files, per process and system-wide) and ENOMEM.
        for code in [24, 23, 12] {
            assert_eq!(accept_backoff(&io::Error::from_raw_os_error(code)), ACCEPT_BACKOFF, "errno {code}");
        }
        assert!(ACCEPT_BACKOFF > Duration::ZERO && ACCEPT_BACKOFF <= Duration::from_secs(1));
    }
}
