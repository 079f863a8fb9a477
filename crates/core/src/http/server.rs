//! A small HTTP/1.1 and HTTP/2 server on loopback, plain or TLS, for emulators (feature `http-server`).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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
use tokio::sync::{mpsc, watch};
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
        let bytes = bytes.into();
        // An empty body ends with the response head (HTTP/2: `END_STREAM` on its `HEADERS`).
        Self(BodyKind::Full((!bytes.is_empty()).then_some(bytes)), None)
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

/// Whether and how a [`LoopbackServer`] speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerTls {
    /// TLS, offering `h2` and `http/1.1` by ALPN (the client's pick).
    Http2AndHttp1,
    /// TLS, offering `http/1.1` only (a server that does not speak HTTP/2).
    Http1Only,
}

/// How a [`LoopbackServer`] serves: plain HTTP/1.1 and h2c by default. Build with `ServerOptions::default()`
/// and the setters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// TLS with a self-signed certificate for `127.0.0.1` and `localhost`, made when the server starts
    /// ([`LoopbackServer::certificate_der`] is what a client must trust); `None` serves plain HTTP.
    pub tls: Option<ServerTls>,
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` each HTTP/2 connection announces; `None` announces no limit.
    pub max_concurrent_streams: Option<u32>,
}

impl ServerOptions {
    /// Sets [`ServerOptions::tls`].
    #[must_use]
    pub fn tls(mut self, tls: Option<ServerTls>) -> Self {
        self.tls = tls;
        self
    }

    /// Sets [`ServerOptions::max_concurrent_streams`].
    #[must_use]
    pub fn max_concurrent_streams(mut self, max: Option<u32>) -> Self {
        self.max_concurrent_streams = max;
        self
    }
}

/// An HTTP/1.1 and HTTP/2 server on `127.0.0.1` (port chosen by the OS): plain (HTTP/2 by prior knowledge, no
/// upgrade) or TLS ([`ServerOptions`]). Dropping it stops the server and its connections.
pub struct LoopbackServer {
    address: SocketAddr,
    certificate: Option<Vec<u8>>,
    connections: Arc<AtomicUsize>,
    away: watch::Sender<Duration>,
    /// The connections accepted since the last `go_away`: each holds a clone of the sender, and the receiver
    /// hears that they have all ended.
    generation: Arc<Mutex<Generation>>,
    _tasks: JoinSet<()>,
}

type Generation = (mpsc::Sender<()>, mpsc::Receiver<()>);

impl std::fmt::Debug for LoopbackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackServer")
            .field("address", &self.address)
            .field("tls", &self.certificate.is_some())
            .finish_non_exhaustive()
    }
}

impl LoopbackServer {
    /// Starts serving every request with `handler`, over plain HTTP.
    pub async fn start<F, Fut>(handler: F) -> io::Result<Self>
    where
        F: Fn(ReceivedRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<ResponseBody>> + Send + 'static,
    {
        Self::start_with(ServerOptions::default(), handler).await
    }

    /// Starts serving every request with `handler`, as `options` say.
    pub async fn start_with<F, Fut>(options: ServerOptions, handler: F) -> io::Result<Self>
    where
        F: Fn(ReceivedRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<ResponseBody>> + Send + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let (certificate, acceptor) = match options.tls {
            Some(tls) => {
                let (certificate, acceptor) = tls_acceptor(tls)?;
                (Some(certificate), Some(acceptor))
            }
            None => (None, None),
        };
        let handler: Arc<Handler> = Arc::new(move |request| Box::pin(handler(request)));
        let connections = Arc::new(AtomicUsize::new(0));
        let (away, _) = watch::channel(Duration::ZERO);
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().timer(TokioTimer::new());
        builder.http2().timer(TokioTimer::new()).max_concurrent_streams(options.max_concurrent_streams);
        let generation = Arc::new(Mutex::new(mpsc::channel(1)));
        let accept = Accept {
            builder: Arc::new(builder),
            handler,
            acceptor,
            away: away.clone(),
            generation: Arc::clone(&generation),
        };
        let mut tasks = JoinSet::new();
        tasks.spawn(accept.run(listener, Arc::clone(&connections)));
        Ok(Self { address, certificate, connections, away, generation, _tasks: tasks })
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port>`, or `https://…` when it speaks TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.certificate.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.address)
    }

    /// The server's self-signed certificate (DER) when it speaks TLS: the one root a client must trust.
    pub fn certificate_der(&self) -> Option<&[u8]> {
        self.certificate.as_deref()
    }

    /// How many connections the server has accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }

    /// Tells every open connection to go away, as a server does before it restarts: HTTP/2 connections get a
    /// `GOAWAY` (HTTP/1.1 ones close after their current response), and each connection still open `grace` later
    /// is closed, cutting the streams it carries. New connections are accepted as before.
    ///
    /// That happens whether or not the returned future is awaited; it completes once every connection open at
    /// the call has closed.
    pub fn go_away(&self, grace: Duration) -> impl Future<Output = ()> + Send + 'static {
        // Connections accepted from now on belong to the next generation; the old one's senders go with them.
        let (sender, mut ended) =
            std::mem::replace(&mut *self.generation.lock().unwrap_or_else(PoisonError::into_inner), mpsc::channel(1));
        drop(sender);
        self.away.send_replace(grace);
        async move { while ended.recv().await.is_some() {} }
    }
}

/// What the accept loop shares with every connection it serves.
struct Accept {
    builder: Arc<auto::Builder<TokioExecutor>>,
    handler: Arc<Handler>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    away: watch::Sender<Duration>,
    generation: Arc<Mutex<Generation>>,
}

impl Accept {
    async fn run(self, listener: TcpListener, accepted: Arc<AtomicUsize>) {
        let mut connections = JoinSet::new();
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: the connections already open go on, and so does this loop
                    // once the pressure is off.
                    let pause = accept_backoff(&error);
                    tracing::warn!(%error, ?pause, "the loopback server could not accept a connection");
                    tokio::time::sleep(pause).await;
                    continue;
                }
            };
            accepted.fetch_add(1, Ordering::AcqRel);
            // Streamed bodies are many small writes: without this, Nagle's algorithm and delayed ACKs add ~40 ms
            // per response.
            let _ = stream.set_nodelay(true);
            let (builder, handler, acceptor) =
                (Arc::clone(&self.builder), Arc::clone(&self.handler), self.acceptor.clone());
            // Subscribed at accept: only a `go_away` from now on concerns this connection.
            let away = self.away.subscribe();
            let generation = self.generation.lock().unwrap_or_else(PoisonError::into_inner).0.clone();
            connections.spawn(async move {
                let _generation = generation;
                match acceptor {
                    // A client that stalls in the handshake is not waited for (nor is its connection by `go_away`).
                    Some(acceptor) => match tokio::time::timeout(TLS_HANDSHAKE, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => serve(&builder, TokioIo::new(stream), handler, away).await,
                        Ok(Err(error)) => tracing::debug!(%error, "a TLS handshake with the loopback server failed"),
                        Err(_) => tracing::debug!("a TLS handshake with the loopback server took too long"),
                    },
                    None => serve(&builder, TokioIo::new(stream), handler, away).await,
                }
            });
            while connections.try_join_next().is_some() {}
        }
    }
}

/// Serves one connection until it ends, or until a `go_away` and its grace period.
async fn serve<I>(
    builder: &auto::Builder<TokioExecutor>,
    io: I,
    handler: Arc<Handler>,
    mut away: watch::Receiver<Duration>,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |request: Request<Incoming>| {
        let handler = Arc::clone(&handler);
        async move {
            let (parts, body) = request.into_parts();
            let body = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => Bytes::new(),
            };
            let received =
                ReceivedRequest { method: parts.method, uri: origin_form(parts.uri), headers: parts.headers, body };
            Ok::<_, Infallible>(handler(received).await)
        }
    });
    let mut connection = pin!(builder.serve_connection(io, service));
    tokio::select! {
        _ = connection.as_mut() => {}
        told = away.changed() => {
            if told.is_err() {
                // The server is gone: its task set ends this one.
                let _ = connection.await;
                return;
            }
            let grace = *away.borrow_and_update();
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, connection).await;
        }
    }
}

/// The path and query of `uri`: an HTTP/2 request's URI carries its scheme and authority too, which
/// [`ReceivedRequest::uri`] leaves out whatever the version.
fn origin_form(uri: http::Uri) -> http::Uri {
    match uri.path_and_query() {
        Some(path) if uri.scheme().is_some() => path.as_str().parse().unwrap_or(uri),
        _ => uri,
    }
}

/// A self-signed certificate for `127.0.0.1` and `localhost` (DER), and an acceptor presenting it with `tls`'s
/// ALPN protocols.
fn tls_acceptor(tls: ServerTls) -> io::Result<(Vec<u8>, tokio_rustls::TlsAcceptor)> {
    let invalid = |error: &dyn std::fmt::Display| io::Error::other(error.to_string());
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(|error| invalid(&error))?;
    let certificate = made.cert.der().to_vec();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(&error))?
        .with_no_client_auth()
        .with_single_cert(vec![certificate.clone().into()], key)
        .map_err(|error| invalid(&error))?;
    config.alpn_protocols = match tls {
        ServerTls::Http2AndHttp1 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        ServerTls::Http1Only => vec![b"http/1.1".to_vec()],
    };
    Ok((certificate, tokio_rustls::TlsAcceptor::from(Arc::new(config))))
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

/// The longest a client may take over its TLS handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

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
