//! Replaying a [`Recording`] (feature `emulator`): a loopback server that answers a client's requests with the
//! recorded responses and frames, checking each request against the recorded one.
//!
//! Requests are matched in recorded order among those not yet played (a request that goes elsewhere than every
//! recorded one left, or whose body differs, is a [`Divergence`]: it is answered with a 400 naming the
//! difference, and [`ReplayServer::finish`] reports it). Frames keep the recording's causality: a frame is sent
//! only once every request recorded before it has arrived, so a client sees an event after posting what the
//! event answered, as it did live. [`Timing::Kept`] also keeps the recorded delays.
//!
//! Each provider's emulator module has a `replay` function that starts one with its wire's encoding.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use managed_agents_core::http::server::{LoopbackServer, ReceivedRequest, ResponseBody};
use managed_agents_core::http::{Bytes, HeaderName, HeaderValue, Response, StatusCode};
use managed_agents_core::recording::{
    Body, Divergence, End, EntryKind, RecordedRequest, Recording, request_difference, same_target,
};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

/// How a wire's frames are written back: SSE frames as text, event-stream messages as binary frames.
pub trait FrameEncoding: Send + Sync + 'static {
    /// The bytes of a frame entry ([`EntryKind::Sse`], [`EntryKind::Message`]); `None` for kinds the wire does
    /// not have.
    fn encode(&self, frame: &EntryKind) -> Option<Bytes>;
}

/// The encoding of SSE wires (Claude's event stream, chat completion chunks).
#[derive(Debug, Clone, Copy, Default)]
pub struct SseEncoding;

impl FrameEncoding for SseEncoding {
    fn encode(&self, frame: &EntryKind) -> Option<Bytes> {
        match frame {
            EntryKind::Sse(frame) => Some(Bytes::from(frame.encode())),
            _ => None,
        }
    }
}

/// Whether a replay keeps the recorded delays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Timing {
    /// As fast as causality allows (the default).
    #[default]
    Collapsed,
    /// Each response entry no sooner after its request than it came in the recording.
    Kept,
}

/// How a replay plays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// Kept or collapsed delays.
    pub timing: Timing,
}

impl ReplayOptions {
    /// Collapsed timing.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `timing`.
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }
}

/// Why a replay did not play its recording through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A request differed from the recorded one.
    #[error("{0}")]
    Diverged(Divergence),
    /// The client stopped before sending every recorded request.
    #[error("{remaining} recorded requests were never sent; the first is exchange {exchange}: {next}")]
    Unplayed {
        /// How many.
        remaining: usize,
        /// The first one's exchange.
        exchange: u64,
        /// The first one, `METHOD path`.
        next: String,
    },
}

/// What a replay played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayReport {
    /// The requests answered from the recording.
    pub requests: usize,
}

struct State {
    recording: Recording,
    /// Per entry: whether it is a request that has been played.
    played: Vec<bool>,
    divergence: Option<Divergence>,
    requests: usize,
}

/// A loopback server playing a recording (see the [module](self)). Dropping it stops it.
pub struct ReplayServer {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for ReplayServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayServer").field("address", &self.server.address()).finish_non_exhaustive()
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The first entry index that is an unplayed request (the entries before it may be sent).
fn watermark(state: &State) -> usize {
    state
        .recording
        .entries
        .iter()
        .enumerate()
        .find(|(index, entry)| matches!(entry.kind, EntryKind::Request(_)) && !state.played[*index])
        .map_or(state.recording.entries.len(), |(index, _)| index)
}

fn target(request: &RecordedRequest) -> String {
    format!("{} {}", request.method, request.uri)
}

impl ReplayServer {
    /// Starts playing `recording` of `wire` (its header's `provider`), frames written by `encoding`; refused
    /// (`InvalidInput`) when the recording is of another wire.
    pub async fn start(
        wire: &str,
        recording: Recording,
        encoding: impl FrameEncoding,
        options: ReplayOptions,
    ) -> io::Result<Self> {
        if recording.header.provider != wire {
            let message = format!("a recording of the `{}` wire cannot replay as `{wire}`", recording.header.provider);
            return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
        }
        let played = vec![false; recording.entries.len()];
        let state = Arc::new(Mutex::new(State { recording, played, divergence: None, requests: 0 }));
        let (progress, watching) = watch::channel(0usize);
        let progress = Arc::new(progress);
        let encoding: Arc<dyn FrameEncoding> = Arc::new(encoding);
        let shared = Arc::clone(&state);
        let server = LoopbackServer::start(move |request| {
            let (state, progress, watching, encoding) =
                (Arc::clone(&shared), Arc::clone(&progress), watching.clone(), Arc::clone(&encoding));
            async move { answer(state, progress, watching, encoding, options, request).await }
        })
        .await?;
        Ok(Self { server, state })
    }

    /// `http://127.0.0.1:<port>`: point the provider's base URL (or endpoint) here.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The first divergence, if a request differed.
    pub fn divergence(&self) -> Option<Divergence> {
        lock(&self.state).divergence.clone()
    }

    /// Whether the recording played through: every recorded request arrived, and none differed.
    pub fn finish(&self) -> Result<ReplayReport, ReplayError> {
        let state = lock(&self.state);
        if let Some(divergence) = &state.divergence {
            return Err(ReplayError::Diverged(divergence.clone()));
        }
        let unplayed: Vec<(u64, String)> = state
            .recording
            .requests()
            .filter(|(index, _, _)| !state.played[*index])
            .map(|(_, exchange, request)| (exchange, target(request)))
            .collect();
        match unplayed.first() {
            Some((exchange, next)) => {
                Err(ReplayError::Unplayed { remaining: unplayed.len(), exchange: *exchange, next: next.clone() })
            }
            None => Ok(ReplayReport { requests: state.requests }),
        }
    }
}

/// The recorded request `received` plays, or the divergence it is.
fn matched(state: &mut State, received: &RecordedRequest) -> Result<usize, Divergence> {
    let open: Vec<(usize, u64, &RecordedRequest)> =
        state.recording.requests().filter(|(index, _, _)| !state.played[*index]).collect();
    if let Some((index, _, _)) = open
        .iter()
        .find(|(_, _, recorded)| same_target(recorded, received) && request_difference(recorded, received).is_none())
    {
        return Ok(*index);
    }
    let divergence = |exchange: Option<u64>, recorded: Option<&RecordedRequest>, difference: String| {
        Divergence::new(exchange.zip(recorded.map(target)), target(received), difference)
    };
    if let Some((_, exchange, recorded)) = open.iter().find(|(_, _, recorded)| same_target(recorded, received)) {
        let difference = request_difference(recorded, received).unwrap_or_default();
        return Err(divergence(Some(*exchange), Some(recorded), difference));
    }
    Err(match open.first() {
        Some((_, exchange, recorded)) => {
            let difference = request_difference(recorded, received).unwrap_or_default();
            divergence(
                Some(*exchange),
                Some(recorded),
                format!("no recorded request left goes there; the next one differs in {difference}"),
            )
        }
        None => divergence(None, None, "the recording has no requests left".to_owned()),
    })
}

fn divergence_response(divergence: &Divergence) -> Response<ResponseBody> {
    let message = divergence.to_string();
    // Readable in every wire's error shape: Claude's and OpenAI's `error.message`, AWS's `message`.
    let body = json!({"type": "error", "error": {"type": "replay_divergence", "message": message}, "message": message});
    let mut response = Response::new(ResponseBody::full(body.to_string()));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("x-amzn-errortype", HeaderValue::from_static("ValidationException"));
    headers.insert("x-should-retry", HeaderValue::from_static("false"));
    response
}

async fn answer(
    state: Arc<Mutex<State>>,
    progress: Arc<watch::Sender<usize>>,
    mut watching: watch::Receiver<usize>,
    encoding: Arc<dyn FrameEncoding>,
    options: ReplayOptions,
    request: ReceivedRequest,
) -> Response<ResponseBody> {
    let arrived = Instant::now();
    let received = RecordedRequest::new(
        request.method.as_str(),
        request.uri.path_and_query().map_or("/", |path| path.as_str()),
        Default::default(),
        Body::from_bytes(&request.body),
    );
    let (request_index, plan) = {
        let mut state = lock(&state);
        let index = match matched(&mut state, &received) {
            Ok(index) => index,
            Err(divergence) => {
                let response = divergence_response(&divergence);
                state.divergence.get_or_insert(divergence);
                return response;
            }
        };
        state.played[index] = true;
        state.requests += 1;
        let exchange = state.recording.entries[index].exchange;
        let plan: Vec<(usize, u64, EntryKind)> = state
            .recording
            .entries
            .iter()
            .enumerate()
            .skip(index + 1)
            .filter(|(_, entry)| entry.exchange == exchange)
            .map(|(at, entry)| (at, entry.at_ms, entry.kind.clone()))
            .collect();
        progress.send_replace(watermark(&state));
        (index, plan)
    };
    let request_at = lock(&state).recording.entries[request_index].at_ms;
    let due = move |at_ms: u64| match options.timing {
        Timing::Collapsed => None,
        Timing::Kept => Some(arrived + Duration::from_millis(at_ms.saturating_sub(request_at))),
    };
    let mut plan = plan.into_iter();
    // The head: once every request recorded before it has arrived.
    let Some((head_index, head_at, EntryKind::Response(head))) = plan.next() else {
        // The recording has no answer to this request (the client gave up waiting): neither has the replay.
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes");
    };
    if watching.wait_for(|mark| *mark > head_index).await.is_err() {
        return divergence_response(&Divergence::new(None, target(&received), "the replay stopped"));
    }
    if let Some(due) = due(head_at) {
        tokio::time::sleep_until(due).await;
    }
    let rest: Vec<(usize, u64, EntryKind)> = plan.collect();
    let body = match rest.first() {
        Some((_, _, EntryKind::Body(body))) => ResponseBody::full(body.to_bytes()),
        _ => streamed(rest, watching, encoding, due),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(head.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in &head.headers {
        if matches!(name.as_str(), "content-length" | "transfer-encoding" | "connection" | "keep-alive") {
            continue;
        }
        if let (Ok(name), Ok(value)) = (name.parse::<HeaderName>(), HeaderValue::from_str(value)) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// A streamed body: each frame once the requests recorded before it arrived (and, with kept timing, when due),
/// then the recorded end.
fn streamed(
    frames: Vec<(usize, u64, EntryKind)>,
    mut watching: watch::Receiver<usize>,
    encoding: Arc<dyn FrameEncoding>,
    due: impl Fn(u64) -> Option<Instant> + Send + 'static,
) -> ResponseBody {
    let (sender, body) = ResponseBody::channel();
    tokio::spawn(async move {
        for (index, at_ms, kind) in frames {
            let ready = tokio::select! {
                ready = watching.wait_for(|mark| *mark > index) => ready.is_ok(),
                () = sender.closed() => return,
            };
            if !ready {
                return;
            }
            if let Some(due) = due(at_ms) {
                tokio::time::sleep_until(due).await;
            }
            match &kind {
                EntryKind::End(End::Complete) => return,
                EntryKind::End(End::Broken(why)) => {
                    let _ = sender.send(Err(io::Error::new(io::ErrorKind::ConnectionReset, why.clone()))).await;
                    return;
                }
                EntryKind::End(_) => break,
                EntryKind::Body(body) => {
                    if sender.send(Ok(Bytes::from(body.to_bytes()))).await.is_err() {
                        return;
                    }
                }
                frame => {
                    if let Some(bytes) = encoding.encode(frame)
                        && sender.send(Ok(bytes)).await.is_err()
                    {
                        return;
                    }
                }
            }
        }
        // The client left this body open-ended (a live stream): hold it until the client goes.
        sender.closed().await;
    });
    body
}

/// A loopback proxy that records what any client — an official SDK, an app in another language — exchanges with
/// the server behind it, in the same format our providers record in. Point the client at
/// [`RecordingProxy::base_url`]; take the recording from the
/// [`Recorder`](managed_agents_core::recording::Recorder) given.
pub struct RecordingProxy {
    server: LoopbackServer,
}

impl std::fmt::Debug for RecordingProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingProxy").field("address", &self.server.address()).finish_non_exhaustive()
    }
}

/// Headers a proxy does not pass on: hop-by-hop, and those the next hop sets again.
const HOP_HEADERS: [&str; 6] = ["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"];

impl RecordingProxy {
    /// Starts forwarding every request to `upstream` (an `http(s)` base URL), recording into `recorder`.
    pub async fn start(upstream: &str, recorder: managed_agents_core::recording::Recorder) -> io::Result<Self> {
        let client = managed_agents_core::http::HttpClient::with_options(&managed_agents_core::HttpOptions::new())
            .map_err(io::Error::other)?
            .with_recorder(recorder);
        let upstream = Arc::new(upstream.trim_end_matches('/').to_owned());
        let server =
            LoopbackServer::start(move |request| forward(client.clone(), Arc::clone(&upstream), request)).await?;
        Ok(Self { server })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }
}

async fn forward(
    client: managed_agents_core::http::HttpClient,
    upstream: Arc<String>,
    request: ReceivedRequest,
) -> Response<ResponseBody> {
    use http_body_util::BodyExt as _;

    let target = format!("{upstream}{}", request.uri.path_and_query().map_or("/", |path| path.as_str()));
    let mut outgoing = managed_agents_core::http::Request::builder().method(request.method.clone()).uri(target);
    for (name, value) in &request.headers {
        if !HOP_HEADERS.contains(&name.as_str()) {
            outgoing = outgoing.header(name, value);
        }
    }
    let Ok(outgoing) = outgoing.body(managed_agents_core::http::RequestBody::new(request.body.clone())) else {
        return bad_gateway("the request could not be forwarded");
    };
    let response = match client.send(outgoing, Duration::from_secs(600)).await {
        Ok(response) => response,
        Err(error) => return bad_gateway(&error.to_string()),
    };
    let (parts, mut body) = response.into_parts();
    let (sender, streamed) = ResponseBody::channel();
    tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                // The client left: dropping the body records that it stopped reading.
                () = sender.closed() => return,
            };
            match frame {
                None => return,
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data()
                        && sender.send(Ok(data)).await.is_err()
                    {
                        return;
                    }
                }
                Some(Err(error)) => {
                    let _ = sender.send(Err(io::Error::new(io::ErrorKind::ConnectionReset, error.to_string()))).await;
                    return;
                }
            }
        }
    });
    let mut answer = Response::new(streamed);
    *answer.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if !HOP_HEADERS.contains(&name.as_str()) {
            answer.headers_mut().append(name, value.clone());
        }
    }
    answer
}

fn bad_gateway(message: &str) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(json!({"message": message}).to_string()));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}
