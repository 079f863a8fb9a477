//! The HTTP pieces the Claude and Local providers share (feature `http`): a hyper 1 client with rustls, an
//! incremental SSE decoder, response bodies read with an idle timeout, and a retry policy. With feature
//! `http-server`, a small loopback server for the providers' emulators.
//!
//! Third-party providers that bring their own HTTP stack do not enable these features and pay nothing for them.

mod body;
mod client;
mod frames;
mod incoming;
mod pool;
#[cfg(all(test, feature = "http-server"))]
mod pool_tests;
mod retry;
#[cfg(feature = "http-server")]
pub mod server;
pub mod sse;

pub use body::{MAX_EVENT_BYTES, SseBody, read_body};
pub use client::{HttpClient, Replay, RequestBody, validate_base_url};
pub use incoming::IncomingBody;
pub use retry::{retry_after, should_retry_header};
pub use sse::{SseDecoder, SseFrame};

/// Internals reachable only from the fuzz targets (see [`crate::fuzzing`]).
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    /// What an HTTP/2 server's frames, read in `chunks`, said: its stream limit and whether it goes away.
    pub fn watch_frames(chunks: &[&[u8]]) -> (Option<usize>, bool) {
        super::frames::watch(chunks)
    }
}

/// Re-exports of the HTTP types the providers build requests with.
pub use bytes::Bytes;
pub use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
