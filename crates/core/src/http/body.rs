//! Reading response bodies with an idle timeout.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;

use super::incoming::IncomingBody;

use super::sse::{SseDecoder, SseFrame};
use crate::Error;

/// Reads a whole body, failing when it exceeds `limit` bytes or goes silent for `idle`.
pub async fn read_body(mut body: IncomingBody, limit: usize, idle: Duration) -> Result<Bytes, Error> {
    let mut collected = BytesMut::new();
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(Error::stream_idle_timeout(idle)),
            Ok(None) => return Ok(collected.freeze()),
            Ok(Some(Err(error))) => return Err(Error::transport("reading the response body failed", error)),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if collected.len() + data.len() > limit {
                return Err(Error::malformed("response body", format!("larger than {limit} bytes"), ""));
            }
            collected.extend_from_slice(&data);
        }
    }
}

/// The largest event (or unfinished line) an [`SseBody`] holds before failing: a server that never ends a line
/// must not grow memory without bound.
pub const MAX_EVENT_BYTES: usize = 32 << 20;

/// An SSE response body, decoded incrementally; fails when it goes silent for longer than `idle` (keepalive
/// comments count as activity).
#[derive(Debug)]
pub struct SseBody {
    body: IncomingBody,
    decoder: SseDecoder,
    ready: VecDeque<SseFrame>,
    idle: Duration,
    ended: bool,
}

impl SseBody {
    /// Wraps a response body.
    pub fn new(body: IncomingBody, idle: Duration) -> Self {
        Self { body, decoder: SseDecoder::new(), ready: VecDeque::new(), idle, ended: false }
    }

    /// The next event; `Ok(None)` at the clean end of the stream. An event cut off by the end of the stream is
    /// an [`Error::Malformed`] carrying its data. Cancel-safe.
    pub async fn next(&mut self) -> Result<Option<SseFrame>, Error> {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Ok(Some(frame));
            }
            if self.ended {
                return Ok(None);
            }
            let frame = match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => return Err(Error::stream_idle_timeout(self.idle)),
                Ok(Some(Ok(frame))) => frame,
                Ok(Some(Err(error))) => return Err(Error::transport("the event stream broke", error)),
                Ok(None) => {
                    self.ended = true;
                    if let Some(partial) = self.decoder.finish() {
                        return Err(Error::malformed("SSE stream", "it ended inside an event", partial));
                    }
                    continue;
                }
            };
            if let Ok(data) = frame.into_data() {
                self.decoder.push(&data, &mut self.ready);
                if self.decoder.buffered() > MAX_EVENT_BYTES {
                    let detail = format!("an event grew past {MAX_EVENT_BYTES} bytes without ending");
                    return Err(Error::malformed("SSE stream", detail, ""));
                }
            }
        }
    }
}
