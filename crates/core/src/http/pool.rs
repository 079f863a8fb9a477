//! The HTTP/2 connection pool: per origin, as many connections as the open streams need, each carrying at most
//! what its server allows at once.
//!
//! hyper's pooled client keeps one HTTP/2 connection per host and queues every request past the server's
//! concurrent-stream limit until a stream ends — for a live session's event stream, never. This pool counts the
//! streams it hands out on each connection ([`StreamSlot`], held until the response body ends or is dropped),
//! reads each connection's limit from the server's first `SETTINGS` ([`Preface`]) and later from hyper, caps it
//! with [`HttpOptions::max_streams_per_connection`](crate::HttpOptions::max_streams_per_connection), and dials a
//! new connection when every connection is full. One dial per origin is in flight at a time, and every request
//! waiting for it shares its outcome: a refused connection fails them all at once with the same cause instead of
//! one after the other.
//!
//! A connection that goes away (`GOAWAY`, reset, TLS error) leaves the pool: requests no longer go to it, the
//! streams it still carries end the way a dropped HTTP/1.1 stream ends (a broken body), and a request the server
//! certainly never processed (refused, or sent past the `GOAWAY`) is sent again on another connection. An idle
//! connection closes after the idle timeout.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::{Future as _, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper::client::conn::http2;
use hyper_util::client::legacy::connect::{Connection as _, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::Notify;
use tower_service::Service as _;

use super::client::RequestBody;
use super::preface::{Preface, PrefaceReader};
use crate::diagnostic::cause_in_words;

/// The connector the pool dials with (TCP, then TLS with the ALPN protocols the client offers).
pub(super) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// How often a request the server never processed is tried on another connection.
const MAX_ATTEMPTS: usize = 3;

/// The pool's settings, from [`HttpOptions`](crate::HttpOptions).
#[derive(Debug, Clone, Copy)]
pub(super) struct PoolSettings {
    /// The limit for a whole dial: TCP, TLS, the HTTP/2 handshake and the server's settings.
    pub connect_timeout: Duration,
    /// The most streams put on one connection, whatever its server allows.
    pub max_streams: usize,
    /// How long a connection without streams stays open.
    pub idle_timeout: Duration,
    /// Speak HTTP/2 whatever ALPN says (h2c on plain `http`); otherwise an `https` origin whose server picks
    /// HTTP/1.1 is handed back to the HTTP/1.1 client.
    pub prior_knowledge: bool,
}

/// An HTTP/2 connection pool. Cloning shares it.
#[derive(Clone)]
pub(super) struct Http2Pool {
    shared: Arc<Shared>,
}

struct Shared {
    connector: Connector,
    settings: PoolSettings,
    origins: Mutex<HashMap<Origin, OriginState>>,
}

/// `scheme://authority`: what a connection can serve.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Origin(String);

impl Origin {
    fn of(uri: &Uri) -> Option<(Self, Uri)> {
        let scheme = uri.scheme_str()?;
        let authority = uri.authority()?.as_str();
        let origin = format!("{scheme}://{authority}");
        let root = origin.parse().ok()?;
        Some((Self(origin), root))
    }
}

#[derive(Default)]
struct OriginState {
    connections: Vec<Arc<PooledConnection>>,
    /// A dial is in flight (only one at a time).
    dialing: bool,
    /// Dials ended so far; the dial in flight is number `dials`.
    dials: u64,
    /// The cause of the last dial's failure, with its number: every request that waited on it fails with it.
    failure: Option<(u64, String)>,
    /// The server picked HTTP/1.1 by ALPN: this origin's requests go to the HTTP/1.1 client.
    http1: bool,
    /// Woken when a dial ends or a stream ends.
    changed: Arc<Notify>,
}

/// One HTTP/2 connection in the pool.
struct PooledConnection {
    sender: http2::SendRequest<RequestBody>,
    /// Streams handed out and not yet ended.
    streams: AtomicUsize,
    /// Of those, the event streams (which may stay open for as long as their session lives).
    event_streams: AtomicUsize,
    /// The origin's [`OriginState::changed`]: a request waiting for room is woken when a stream ends.
    changed: Arc<Notify>,
    /// The server's current limit (its preface, then hyper's count, whichever is lower).
    limit: AtomicUsize,
    /// Gone away or retired: no new streams.
    closed: AtomicBool,
    opened: Instant,
    /// When the last stream ended, in nanoseconds since `opened`.
    released_at: AtomicU64,
    /// Notified when the last stream ends.
    released: Notify,
}

impl PooledConnection {
    fn has_room(&self, cap: usize) -> bool {
        !self.closed.load(Ordering::Acquire)
            && !self.sender.is_closed()
            && self.streams.load(Ordering::Acquire) < self.limit.load(Ordering::Acquire).min(cap)
    }

    /// Whether some of its streams (at least one of the `limit` it may carry) are requests that end soon.
    fn has_short_streams(&self, cap: usize) -> bool {
        self.usable() && self.event_streams.load(Ordering::Acquire) < self.limit.load(Ordering::Acquire).min(cap)
    }

    fn usable(&self) -> bool {
        !self.closed.load(Ordering::Acquire) && !self.sender.is_closed()
    }

    /// How long the connection has had no stream; `None` while it has one.
    fn idle_for(&self) -> Option<Duration> {
        if self.streams.load(Ordering::Acquire) > 0 {
            return None;
        }
        let released = Duration::from_nanos(self.released_at.load(Ordering::Acquire));
        Some(self.opened.elapsed().saturating_sub(released))
    }
}

/// One stream's claim on its connection, released when dropped (the response body ended or was dropped, or the
/// request failed).
pub(super) struct StreamSlot {
    connection: Arc<PooledConnection>,
    event_stream: bool,
}

impl StreamSlot {
    /// Takes a stream on `connection`; the caller holds the origins' lock, so no retirement races it.
    fn take(connection: &Arc<PooledConnection>) -> Self {
        connection.streams.fetch_add(1, Ordering::AcqRel);
        Self { connection: Arc::clone(connection), event_stream: false }
    }

    /// Counts the stream as an event stream (its response is `text/event-stream`): one that may not end, so a
    /// connection full of them makes the pool dial another instead of waiting.
    pub(super) fn event_stream(&mut self) {
        if !self.event_stream {
            self.event_stream = true;
            self.connection.event_streams.fetch_add(1, Ordering::AcqRel);
            // A request waiting for this stream to end now dials instead.
            self.connection.changed.notify_waiters();
        }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let connection = &self.connection;
        if self.event_stream {
            connection.event_streams.fetch_sub(1, Ordering::AcqRel);
        }
        if connection.streams.fetch_sub(1, Ordering::AcqRel) == 1 {
            let since_open = u64::try_from(connection.opened.elapsed().as_nanos()).unwrap_or(u64::MAX);
            connection.released_at.store(since_open, Ordering::Release);
            connection.released.notify_one();
        }
        connection.changed.notify_waiters();
    }
}

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlot").finish_non_exhaustive()
    }
}

/// What [`Http2Pool::send`] did with a request.
pub(super) enum Sent {
    /// The response head, and the stream's slot to keep with its body.
    Response(Response<Incoming>, StreamSlot),
    /// The origin's server speaks HTTP/1.1 (ALPN): the request, untouched, for the HTTP/1.1 client.
    Http1(Request<RequestBody>),
}

/// Why [`Http2Pool::send`] failed.
#[derive(Debug)]
pub(super) enum PoolError {
    /// No connection could be made: the cause in words.
    Connect(String),
    /// The request failed on its connection.
    Request(hyper::Error),
}

enum Checkout {
    Stream(StreamSlot, http2::SendRequest<RequestBody>),
    Http1,
}

enum Dialed {
    Http2(Arc<PooledConnection>),
    Http1,
}

impl Http2Pool {
    pub(super) fn new(connector: Connector, settings: PoolSettings) -> Self {
        Self { shared: Arc::new(Shared { connector, settings, origins: Mutex::new(HashMap::new()) }) }
    }

    /// Open connections per origin, for tests and measurements.
    #[cfg(test)]
    pub(super) fn connections(&self) -> usize {
        self.shared.lock().values().map(|state| state.connections.iter().filter(|c| c.usable()).count()).sum()
    }

    /// Sends `request` on a stream of a connection to its origin.
    pub(super) async fn send(&self, mut request: Request<RequestBody>) -> Result<Sent, PoolError> {
        let Some((origin, root)) = Origin::of(request.uri()) else {
            return Err(PoolError::Connect("the URL has no scheme or host".to_string()));
        };
        for attempt in 1..=MAX_ATTEMPTS {
            let (slot, mut sender) = match self.shared.checkout(&origin, &root).await? {
                Checkout::Http1 => return Ok(Sent::Http1(request)),
                Checkout::Stream(slot, sender) => (slot, sender),
            };
            let again = (attempt < MAX_ATTEMPTS).then(|| copy(&request));
            match sender.send_request(request).await {
                Ok(response) => return Ok(Sent::Response(response, slot)),
                Err(error) => match (never_processed(&error), again) {
                    (Some(retire), Some(copy)) => {
                        if retire {
                            slot.connection.closed.store(true, Ordering::Release);
                        }
                        tracing::debug!(attempt, cause = %cause_in_words(&error), "HTTP/2 request refused; sent again");
                        request = copy;
                    }
                    _ => return Err(PoolError::Request(error)),
                },
            }
        }
        unreachable!("the last attempt returns")
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<Origin, OriginState>> {
        self.origins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A stream on a connection with room. When every connection is full, the request waits for a stream to
    /// end if some connection carries requests that end soon (not only event streams), as an HTTP/2 client
    /// queues past a server's limit; when every connection is full of event streams, which may never end, it
    /// dials another (or waits for the dial in flight).
    async fn checkout(self: &Arc<Self>, origin: &Origin, root: &Uri) -> Result<Checkout, PoolError> {
        let mut waited_for = None;
        loop {
            let changed = {
                let mut origins = self.lock();
                let state = origins.entry(origin.clone()).or_default();
                // Registered before anything is looked at: a stream that ends from here on wakes this request.
                let changed = Arc::clone(&state.changed).notified_owned();
                if state.http1 {
                    return Ok(Checkout::Http1);
                }
                state.connections.retain(|connection| connection.usable());
                let cap = self.settings.max_streams;
                if let Some(connection) = state.connections.iter().find(|connection| connection.has_room(cap)) {
                    return Ok(Checkout::Stream(StreamSlot::take(connection), connection.sender.clone()));
                }
                if let (Some(waited), Some((dial, cause))) = (waited_for, &state.failure)
                    && waited == *dial
                {
                    return Err(PoolError::Connect(cause.clone()));
                }
                let ends_soon = state.connections.iter().any(|connection| connection.has_short_streams(cap));
                if !state.dialing && !ends_soon {
                    state.dialing = true;
                    tokio::spawn(dial_task(Arc::clone(self), origin.clone(), root.clone(), state.dials));
                }
                waited_for = state.dialing.then_some(state.dials);
                changed
            };
            changed.await;
        }
    }

    /// Takes `connection` out of the pool if it still has no stream; true when it is out (or was already).
    fn retire_if_idle(&self, origin: &Origin, connection: &Arc<PooledConnection>) -> bool {
        let mut origins = self.lock();
        if connection.streams.load(Ordering::Acquire) > 0 {
            return false;
        }
        connection.closed.store(true, Ordering::Release);
        if let Some(state) = origins.get_mut(origin) {
            state.connections.retain(|other| !Arc::ptr_eq(other, connection));
        }
        true
    }
}

/// Dials `origin` and announces the outcome to every request waiting for it.
async fn dial_task(shared: Arc<Shared>, origin: Origin, root: Uri, number: u64) {
    let timeout = shared.settings.connect_timeout;
    let outcome = match tokio::time::timeout(timeout, dial(&shared, &origin, root)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("connecting took longer than {timeout:?}")),
    };
    let mut origins = shared.lock();
    let state = origins.entry(origin).or_default();
    state.dialing = false;
    state.dials += 1;
    match outcome {
        Ok(Dialed::Http2(connection)) => {
            state.failure = None;
            state.connections.push(connection);
        }
        Ok(Dialed::Http1) => state.http1 = true,
        Err(cause) => state.failure = Some((number, cause)),
    }
    state.changed.notify_waiters();
}

/// One connection to `origin`: HTTP/2 once the server's settings arrived, or word that the server speaks HTTP/1.1.
async fn dial(shared: &Arc<Shared>, origin: &Origin, root: Uri) -> Result<Dialed, String> {
    let mut connector = shared.connector.clone();
    let stream = connector.call(root).await.map_err(|error| cause_in_words(&*error))?;
    if !shared.settings.prior_knowledge && !stream.connected().is_negotiated_h2() {
        return Ok(Dialed::Http1);
    }
    let preface = Arc::new(Preface::default());
    let io = TokioIo::new(PrefaceReader::new(TokioIo::new(stream), Arc::clone(&preface)));
    let (sender, connection) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .handshake(io)
        .await
        .map_err(|error| cause_in_words(&error))?;
    let changed = shared.lock().entry(origin.clone()).or_default().changed.clone();
    let pooled = Arc::new(PooledConnection {
        sender,
        streams: AtomicUsize::new(0),
        event_streams: AtomicUsize::new(0),
        changed,
        limit: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        opened: Instant::now(),
        released_at: AtomicU64::new(0),
        released: Notify::new(),
    });
    tokio::spawn(drive(connection, Arc::clone(&pooled), Arc::clone(&preface), Arc::downgrade(shared), origin.clone()));
    // The connection's I/O runs in a task of hyper's own: the preface reader there announces the settings.
    loop {
        let settled = preface.settled();
        if let Some(limit) = preface.max_streams() {
            pooled.limit.store(limit, Ordering::Release);
            return Ok(Dialed::Http2(pooled));
        }
        if pooled.closed.load(Ordering::Acquire) {
            return Err("the server closed the connection before sending its HTTP/2 settings".to_string());
        }
        settled.await;
    }
}

/// The I/O under a pooled connection: TCP, TLS when the origin is `https`, the preface reader.
type Io = TokioIo<PrefaceReader<TokioIo<hyper_rustls::MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>>>>;

/// Runs one connection's dispatch until it ends or stays idle for the idle timeout, keeping its stream limit
/// current (it is polled whenever a request is sent on it).
async fn drive(
    mut connection: http2::Connection<Io, RequestBody, TokioExecutor>,
    pooled: Arc<PooledConnection>,
    preface: Arc<Preface>,
    pool: Weak<Shared>,
    origin: Origin,
) {
    let ended = poll_fn(|cx| {
        let polled = Pin::new(&mut connection).poll(cx);
        if let Some(announced) = preface.max_streams() {
            pooled.limit.store(announced.min(connection.current_max_send_streams()), Ordering::Release);
        }
        polled
    });
    let idle_timeout = pool.upgrade().map_or(Duration::ZERO, |shared| shared.settings.idle_timeout);
    tokio::select! {
        ended = ended => {
            if let Err(error) = ended {
                tracing::debug!(cause = %cause_in_words(&error), "an HTTP/2 connection ended");
            }
        }
        () = idle_out(&pooled, &pool, &origin, idle_timeout) => {}
    }
    pooled.closed.store(true, Ordering::Release);
    preface.abandon();
}

/// Returns once `pooled` has had no stream for `idle_timeout` (at once when it is closed for new streams and has
/// none left) and is out of the pool.
async fn idle_out(pooled: &Arc<PooledConnection>, pool: &Weak<Shared>, origin: &Origin, idle_timeout: Duration) {
    if idle_timeout.is_zero() {
        // Closed as soon as it has no stream: not before its first one.
        pooled.released.notified().await;
    }
    loop {
        if let Some(idle_for) = pooled.idle_for() {
            let limit = if pooled.closed.load(Ordering::Acquire) { Duration::ZERO } else { idle_timeout };
            if idle_for >= limit {
                match pool.upgrade() {
                    Some(shared) if !shared.retire_if_idle(origin, pooled) => continue,
                    _ => return,
                }
            }
            let mut released = pin!(pooled.released.notified());
            tokio::select! {
                () = tokio::time::sleep(limit - idle_for) => {}
                () = &mut released => {}
            }
            continue;
        }
        pooled.released.notified().await;
    }
}

/// Whether a failed request certainly never reached the server's application, so it may go again on another
/// connection whatever it is: `Some(true)` when its connection is going away (or already gone) and must take no
/// more streams, `Some(false)` when only the stream was refused, `None` when it may have been processed.
fn never_processed(error: &hyper::Error) -> Option<bool> {
    // Canceled: the request never left this process (its connection closed first).
    if error.is_canceled() {
        return Some(true);
    }
    let mut cause: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(current) = cause {
        if let Some(h2) = current.downcast_ref::<h2::Error>() {
            // RFC 9113 §8.7: REFUSED_STREAM, and streams past a GOAWAY's last stream id, were not processed.
            if h2.reason() == Some(h2::Reason::REFUSED_STREAM) && !h2.is_go_away() {
                return Some(false);
            }
            return (h2.is_go_away() && h2.is_remote()).then_some(true);
        }
        cause = current.source();
    }
    None
}

/// A copy of `request` to send again (its body is in memory; extensions are not copied: the client sets none).
fn copy(request: &Request<RequestBody>) -> Request<RequestBody> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}
