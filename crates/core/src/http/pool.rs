//! The HTTP/2 connection pool: per origin, as many connections as the open streams need, each carrying at most
//! what its server allows at once.
//!
//! hyper's pooled client keeps one HTTP/2 connection per host and queues every request past the server's
//! concurrent-stream limit until a stream ends — for a live session's event stream, never. This pool counts the
//! streams it hands out on each connection ([`StreamSlot`], held until the response body ends or is dropped),
//! reads each connection's limit from the server's `SETTINGS` as they arrive ([`ServerFrames`]), caps it with [`HttpOptions::max_streams_per_connection`](crate::HttpOptions::max_streams_per_connection), and dials a
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
use std::pin::pin;
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
use super::frames::{FrameReader, ServerFrames};
use crate::diagnostic::cause_in_words;

/// The connector the pool dials with (TCP, then TLS with the ALPN protocols the client offers).
pub(super) type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// How often a request the server certainly never processed is sent, on whichever connection has room.
const MAX_ATTEMPTS: usize = 5;
/// The most a dial's TLS, handshake and wait for the server's settings may take, whatever the connect timeout.
const MAX_DIAL: Duration = Duration::from_secs(120);
/// How long a request that found room but deferred to requests in line waits for its turn before it looks again.
const DEFER: Duration = Duration::from_millis(50);
/// How long an idle connection that requests are waiting for (a stream just freed) stays before it looks again.
const WAITERS_GRACE: Duration = Duration::from_millis(100);
/// How long a connection nobody has used yet stays open when idle connections are not kept.
const FIRST_USE_GRACE: Duration = Duration::from_secs(1);

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
    /// Requests waiting in line for a stream.
    waiting: usize,
    /// Woken when a stream ends (one waiting request: `notify_one`, first in line), and when a dial ends, a
    /// connection ends or its server's settings change (every waiting request: `notify_waiters`).
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
    /// The server's limit and whether it is going away, as its frames said.
    frames: Arc<ServerFrames>,
    /// Ended, retired, or found going away: no new streams.
    closed: AtomicBool,
    opened: Instant,
    /// When the last stream ended, in nanoseconds since `opened`.
    released_at: AtomicU64,
    /// Notified when the last stream ends.
    released: Notify,
}

impl PooledConnection {
    /// The most streams it may carry now.
    fn limit(&self, cap: usize) -> usize {
        self.frames.max_streams().unwrap_or(0).min(cap)
    }

    fn has_room(&self, cap: usize) -> bool {
        self.usable() && self.streams.load(Ordering::Acquire) < self.limit(cap)
    }

    /// Whether some of its streams (at least one of those it may carry) are requests that end soon.
    fn has_short_streams(&self, cap: usize) -> bool {
        self.usable() && self.event_streams.load(Ordering::Acquire) < self.limit(cap)
    }

    fn usable(&self) -> bool {
        !self.closed.load(Ordering::Acquire) && !self.frames.going_away() && !self.sender.is_closed()
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
            self.connection.changed.notify_one();
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
        // One stream's room: for the first request in line.
        connection.changed.notify_one();
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
    /// Every attempt was refused before the server processed it (the last cause).
    Refused(hyper::Error),
    /// The request failed on its connection.
    Request(hyper::Error),
}

/// What [`Shared::retire_if_idle`] did.
enum Retire {
    /// Out of the pool (or it was already).
    Done,
    /// It has a stream again.
    Busy,
    /// Requests wait for a stream: it stays a little longer.
    Awaited,
}

/// What [`Shared::look`] found.
enum Look {
    /// A stream, HTTP/1.1, or a failure: the request is done waiting.
    Found(Result<Checkout, PoolError>),
    /// Nothing yet: start dial `dial` (when given), and wait — briefly if room was free but `deferred` to
    /// requests in line.
    Wait { dial: Option<u64>, deferred: bool },
}

/// A request's place in an origin's line, given up when it leaves — or, if the request is dropped while it
/// waits, when this is dropped.
struct InLine {
    shared: Arc<Shared>,
    origin: Origin,
    waiting: bool,
}

impl InLine {
    /// Leaves the line; the caller holds the lock `state` came from.
    fn leave(&mut self, state: &mut OriginState) {
        if std::mem::take(&mut self.waiting) {
            state.waiting = state.waiting.saturating_sub(1);
        }
    }
}

impl Drop for InLine {
    fn drop(&mut self) {
        if self.waiting {
            let shared = Arc::clone(&self.shared);
            let mut origins = shared.lock();
            if let Some(state) = origins.get_mut(&self.origin) {
                self.leave(state);
                // It may have been woken for a stream it will not take.
                state.changed.notify_one();
            }
        }
    }
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

    /// Waits until no connection is open (tests).
    #[cfg(test)]
    pub(super) async fn all_closed(&self) {
        loop {
            let changed: Vec<_> = {
                let origins = self.shared.lock();
                if origins.values().all(|state| state.connections.iter().all(|c| c.closed.load(Ordering::Acquire))) {
                    return;
                }
                origins.values().map(|state| Arc::clone(&state.changed).notified_owned()).collect()
            };
            futures_util::future::select_all(changed.into_iter().map(Box::pin)).await;
        }
    }

    /// Sends `request` on a stream of a connection to its origin. A request the server certainly never
    /// processed is sent again on another stream — one refused by a remote `GOAWAY` only when `repeatable` (in a
    /// narrow race hyper reports a stream whose headers already left as refused by it).
    pub(super) async fn send(&self, mut request: Request<RequestBody>, repeatable: bool) -> Result<Sent, PoolError> {
        let Some((origin, root)) = Origin::of(request.uri()) else {
            return Err(PoolError::Connect("the URL has no scheme or host".to_string()));
        };
        let mut attempt = 1;
        loop {
            let (slot, mut sender) = match self.shared.checkout(&origin, &root).await? {
                Checkout::Http1 => return Ok(Sent::Http1(request)),
                Checkout::Stream(slot, sender) => (slot, sender),
            };
            let again = copy(&request);
            let error = match sender.send_request(request).await {
                Ok(response) => return Ok(Sent::Response(response, slot)),
                Err(error) => error,
            };
            let Some(retire) = never_processed(&error, repeatable) else { return Err(PoolError::Request(error)) };
            if retire {
                slot.connection.closed.store(true, Ordering::Release);
            }
            if attempt == MAX_ATTEMPTS {
                return Err(PoolError::Refused(error));
            }
            tracing::debug!(attempt, cause = %cause_in_words(&error), "an HTTP/2 request was refused; sending it again");
            (attempt, request) = (attempt + 1, again);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<Origin, OriginState>> {
        self.origins.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A stream on a connection with room. When every connection is full, the request waits for a stream to
    /// end if some connection carries requests that end soon (not only event streams), as an HTTP/2 client
    /// queues past a server's limit; when every connection is full of event streams, which may never end, it
    /// dials another (or waits for the dial in flight). Requests that wait are served first come, first served:
    /// a new request takes no stream while others wait, but joins the line.
    async fn checkout(self: &Arc<Self>, origin: &Origin, root: &Uri) -> Result<Checkout, PoolError> {
        let mut waited_for = None;
        let mut in_line: Option<InLine> = None;
        loop {
            let (changed, dial, deferred) = {
                let mut origins = self.lock();
                let state = origins.entry(origin.clone()).or_default();
                // Enabled before anything is looked at: a stream that ends from here on wakes a request that
                // waits (the first in line; if it returns without waiting, tokio hands the wakeup to the next).
                let mut changed = Box::pin(Arc::clone(&state.changed).notified_owned());
                changed.as_mut().enable();
                match self.look(state, in_line.is_some(), waited_for) {
                    Look::Found(outcome) => {
                        if let Some(mut place) = in_line.take() {
                            place.leave(state);
                            if !matches!(outcome, Ok(Checkout::Stream(..))) {
                                // Whatever woke this request is not used by it: the next in line looks.
                                state.changed.notify_one();
                            }
                        }
                        return outcome;
                    }
                    Look::Wait { dial, deferred } => {
                        if in_line.is_none() {
                            state.waiting += 1;
                            in_line = Some(InLine { shared: Arc::clone(self), origin: origin.clone(), waiting: true });
                        }
                        waited_for = state.dialing.then_some(state.dials);
                        (changed, dial, deferred)
                    }
                }
            };
            if let Some(number) = dial {
                // Spawned without the lock held: a dial that never runs (its runtime shutting down) still
                // announces its end from its guard, which takes the lock.
                let end = DialEnd { shared: Arc::clone(self), origin: origin.clone(), number, outcome: None };
                tokio::spawn(dial_task(end, root.clone()));
            }
            if deferred {
                // Room was free but others were in line, one of whom should take it; if that one never looks
                // (its request is parked unpolled), this one no longer waits behind it.
                let _ = tokio::time::timeout(DEFER, changed).await;
            } else {
                changed.await;
            }
        }
    }

    /// What a request finds in `state`: a stream, word to use HTTP/1.1, or the failure of the dial it waited for
    /// (`waited_for`); otherwise it waits, after starting the dial `Look::Wait` names if one is needed. A request
    /// not `in_line` takes no stream while others wait.
    fn look(&self, state: &mut OriginState, in_line: bool, waited_for: Option<u64>) -> Look {
        if state.http1 {
            return Look::Found(Ok(Checkout::Http1));
        }
        state.connections.retain(|connection| connection.usable());
        let cap = self.settings.max_streams;
        let room = state.connections.iter().find(|connection| connection.has_room(cap));
        if let Some(connection) = room
            && (in_line || state.waiting == 0)
        {
            return Look::Found(Ok(Checkout::Stream(StreamSlot::take(connection), connection.sender.clone())));
        }
        if let (Some(waited), Some((dial, cause))) = (waited_for, &state.failure)
            && waited == *dial
        {
            return Look::Found(Err(PoolError::Connect(cause.clone())));
        }
        let ends_soon = state.connections.iter().any(|connection| connection.has_short_streams(cap));
        let dial = (room.is_none() && !ends_soon && !state.dialing).then(|| {
            state.dialing = true;
            state.dials
        });
        Look::Wait { dial, deferred: room.is_some() }
    }

    /// Takes `connection` out of the pool if it still has no stream and no request waits for one (a usable
    /// connection that just freed a stream is about to be used).
    fn retire_if_idle(&self, origin: &Origin, connection: &Arc<PooledConnection>) -> Retire {
        let mut origins = self.lock();
        if connection.streams.load(Ordering::Acquire) > 0 {
            return Retire::Busy;
        }
        if let Some(state) = origins.get_mut(origin) {
            if state.waiting > 0 && connection.usable() {
                return Retire::Awaited;
            }
            state.connections.retain(|other| !Arc::ptr_eq(other, connection));
        }
        connection.closed.store(true, Ordering::Release);
        Retire::Done
    }
}

/// The last client is gone: every connection takes no more streams and closes once its last stream ends (idle
/// ones at once), as hyper's own pool closes its idle connections when dropped.
impl Drop for Shared {
    fn drop(&mut self) {
        let origins = self.origins.get_mut().unwrap_or_else(PoisonError::into_inner);
        for connection in origins.values().flat_map(|state| &state.connections) {
            connection.closed.store(true, Ordering::Release);
            connection.released.notify_one();
        }
    }
}

/// Dials `origin` and announces the outcome to every request waiting for it.
async fn dial_task(mut end: DialEnd, root: Uri) {
    let shared = Arc::clone(&end.shared);
    let timeout = shared.settings.connect_timeout.min(MAX_DIAL);
    let outcome = match tokio::time::timeout(timeout, dial(&shared, &end.origin, root)).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("connecting took longer than {timeout:?}")),
    };
    end.outcome = Some(outcome);
}

/// Announces a dial's end when dropped: with its outcome, or as abandoned when the dial itself was (its runtime
/// shut down, say), so no request waits for a dial that no longer runs.
struct DialEnd {
    shared: Arc<Shared>,
    origin: Origin,
    number: u64,
    outcome: Option<Result<Dialed, String>>,
}

impl Drop for DialEnd {
    fn drop(&mut self) {
        let outcome = self.outcome.take().unwrap_or_else(|| Err("the connection attempt was abandoned".to_string()));
        let mut origins = self.shared.lock();
        let state = origins.entry(self.origin.clone()).or_default();
        state.dialing = false;
        state.dials += 1;
        match outcome {
            Ok(Dialed::Http2(connection)) => {
                state.failure = None;
                state.connections.push(connection);
            }
            Ok(Dialed::Http1) => state.http1 = true,
            Err(cause) => state.failure = Some((self.number, cause)),
        }
        state.changed.notify_waiters();
    }
}

/// One connection to `origin`: HTTP/2 once the server's settings arrived, or word that the server speaks HTTP/1.1.
async fn dial(shared: &Arc<Shared>, origin: &Origin, root: Uri) -> Result<Dialed, String> {
    let mut connector = shared.connector.clone();
    let stream = connector.call(root).await.map_err(|error| cause_in_words(&*error))?;
    if !shared.settings.prior_knowledge && !stream.connected().is_negotiated_h2() {
        return Ok(Dialed::Http1);
    }
    let changed = Arc::clone(&shared.lock().entry(origin.clone()).or_default().changed);
    let frames = Arc::new(ServerFrames::new(Arc::clone(&changed)));
    let io = TokioIo::new(FrameReader::new(TokioIo::new(stream), Arc::clone(&frames)));
    let (sender, connection) = http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .handshake(io)
        .await
        .map_err(|error| cause_in_words(&error))?;
    let pooled = Arc::new(PooledConnection {
        sender,
        streams: AtomicUsize::new(0),
        event_streams: AtomicUsize::new(0),
        changed,
        frames: Arc::clone(&frames),
        closed: AtomicBool::new(false),
        opened: Instant::now(),
        released_at: AtomicU64::new(0),
        released: Notify::new(),
    });
    tokio::spawn(drive(connection, Arc::clone(&pooled), Arc::downgrade(shared), origin.clone()));
    // The connection's I/O runs in a task of hyper's own; the frame reader there announces the settings.
    loop {
        let settled = frames.settled();
        if frames.max_streams().is_some() {
            return Ok(Dialed::Http2(pooled));
        }
        if pooled.closed.load(Ordering::Acquire) {
            return Err("the server closed the connection before sending its HTTP/2 settings".to_string());
        }
        settled.await;
    }
}

/// The I/O under a pooled connection: TCP, TLS when the origin is `https`, the frame reader.
type Io = TokioIo<FrameReader<TokioIo<hyper_rustls::MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>>>>;

/// Runs one connection's dispatch until it ends or stays idle for the idle timeout.
async fn drive(
    connection: http2::Connection<Io, RequestBody, TokioExecutor>,
    pooled: Arc<PooledConnection>,
    pool: Weak<Shared>,
    origin: Origin,
) {
    let idle_timeout = pool.upgrade().map_or(Duration::ZERO, |shared| shared.settings.idle_timeout);
    tokio::select! {
        ended = connection => {
            if let Err(error) = ended {
                tracing::debug!(cause = %cause_in_words(&error), "an HTTP/2 connection ended");
            }
        }
        () = idle_out(&pooled, &pool, &origin, idle_timeout) => {}
    }
    pooled.closed.store(true, Ordering::Release);
    pooled.frames.abandon();
    // A request waiting for room on this connection looks again (and dials, if it must).
    pooled.changed.notify_waiters();
}

/// Returns once `pooled` has had no stream for `idle_timeout` (at once when it is closed for new streams and has
/// none left) and is out of the pool.
async fn idle_out(pooled: &Arc<PooledConnection>, pool: &Weak<Shared>, origin: &Origin, idle_timeout: Duration) {
    if idle_timeout.is_zero() {
        // Closed as soon as it has no stream: not before its first one, unless nobody takes one.
        let _ = tokio::time::timeout(FIRST_USE_GRACE, pooled.released.notified()).await;
    }
    loop {
        if let Some(idle_for) = pooled.idle_for() {
            let limit = if pooled.closed.load(Ordering::Acquire) { Duration::ZERO } else { idle_timeout };
            if idle_for >= limit {
                match pool.upgrade().map(|shared| shared.retire_if_idle(origin, pooled)) {
                    Some(Retire::Busy) => continue,
                    Some(Retire::Awaited) => {
                        let _ = tokio::time::timeout(WAITERS_GRACE, pooled.released.notified()).await;
                        continue;
                    }
                    Some(Retire::Done) | None => return,
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
/// stream: `Some(true)` when its connection is going away (or already gone) and must take no more streams,
/// `Some(false)` when only the stream was refused, `None` when it may have been processed. A remote `GOAWAY`
/// counts only for a `repeatable` request.
fn never_processed(error: &hyper::Error, repeatable: bool) -> Option<bool> {
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
            return (repeatable && h2.is_go_away() && h2.is_remote()).then_some(true);
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
