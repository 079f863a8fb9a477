//! [`IncomingBody`]: a response body as the client reads it, copied into the recording when one is kept.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::pool::StreamSlot;
use super::sse::{SseDecoder, SseFrame};
use crate::diagnostic::cause_in_words;
use crate::recording::{End, Exchange, SseRecord};

/// The largest whole body copied into a recording; a longer one is recorded cut at this length.
const MAX_RECORDED_BODY: usize = 16 << 20;

/// A response body from [`HttpClient`](super::HttpClient): hyper's, passed through untouched, and copied into
/// the [`Recorder`](crate::recording::Recorder) the client was given, if any (an SSE body frame by frame, any
/// other body whole).
#[derive(Debug)]
pub struct IncomingBody {
    body: Incoming,
    tap: Option<Tap>,
    /// The HTTP/2 stream's claim on its pooled connection, given back when the body ends or is dropped.
    slot: Option<StreamSlot>,
}

#[derive(Debug)]
struct Tap {
    exchange: Exchange,
    sse: Option<SseDecoder>,
    whole: BytesMut,
}

impl IncomingBody {
    pub(super) fn plain(body: Incoming, slot: Option<StreamSlot>) -> Self {
        Self { body, tap: None, slot }
    }

    pub(super) fn recorded(body: Incoming, slot: Option<StreamSlot>, exchange: Exchange, event_stream: bool) -> Self {
        let sse = event_stream.then(SseDecoder::new);
        Self { body, tap: Some(Tap { exchange, sse, whole: BytesMut::new() }), slot }
    }
}

impl Tap {
    fn data(&mut self, data: &Bytes) {
        match &mut self.sse {
            Some(decoder) => {
                let mut frames: Vec<SseFrame> = Vec::new();
                decoder.push(data, &mut frames);
                for frame in frames {
                    self.exchange.sse(SseRecord::new(frame.event, frame.id, frame.data));
                }
            }
            None => {
                let room = MAX_RECORDED_BODY.saturating_sub(self.whole.len());
                self.whole.extend_from_slice(&data[..data.len().min(room)]);
            }
        }
    }

    fn flush(&mut self) {
        if self.sse.is_none() {
            let whole = std::mem::take(&mut self.whole);
            self.exchange.body(&whole);
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Body for IncomingBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.slot = None;
        }
        if let Some(tap) = &mut this.tap {
            match &polled {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        tap.data(data);
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    tap.flush();
                    tap.exchange.end(End::Broken(cause_in_words(error)));
                }
                Poll::Ready(None) => {
                    tap.flush();
                    tap.exchange.end(End::Complete);
                }
                Poll::Pending => {}
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
