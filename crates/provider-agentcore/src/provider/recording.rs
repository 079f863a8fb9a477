//! Recording at the SDK's HTTP layer: an HTTP client wrapping the SDK's, so what is recorded is what went over
//! the wire (the signed request, each event-stream message as it arrived).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use aws_sdk_bedrockagentcore::config::http::HttpRequest;
use aws_sdk_bedrockagentcore::config::{RuntimeComponents, SharedHttpClient};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::event_stream::HeaderValue;
use bytes::{Buf, Bytes, BytesMut};
use managed_agents_core::cause_in_words;
use managed_agents_core::recording::{Body, End, EventMessage, Exchange, Recorder};
use serde_json::{Value, json};

/// The SDK's HTTP client, recording into a [`Recorder`].
#[derive(Debug, Clone)]
pub(crate) struct RecordingHttpClient {
    inner: SharedHttpClient,
    recorder: Recorder,
}

impl RecordingHttpClient {
    /// `inner`, recording into `recorder`.
    pub(crate) fn shared(inner: SharedHttpClient, recorder: Recorder) -> SharedHttpClient {
        SharedHttpClient::new(Self { inner, recorder })
    }
}

impl HttpClient for RecordingHttpClient {
    fn http_connector(&self, settings: &HttpConnectorSettings, components: &RuntimeComponents) -> SharedHttpConnector {
        let inner = self.inner.http_connector(settings, components);
        SharedHttpConnector::new(RecordingConnector { inner, recorder: self.recorder.clone() })
    }
}

#[derive(Debug)]
struct RecordingConnector {
    inner: SharedHttpConnector,
    recorder: Recorder,
}

impl HttpConnector for RecordingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let uri = request.uri().to_owned();
        let path = uri.find("://").and_then(|at| uri[at + 3..].find('/').map(|slash| at + 3 + slash));
        let path = path.map_or("/", |at| &uri[at..]);
        let body = request.body().bytes().unwrap_or_default();
        let mut exchange = self.recorder.request(request.method(), path, request.headers().iter(), body);
        let call = self.inner.call(request);
        HttpConnectorFuture::new(async move {
            match call.await {
                Ok(mut response) => {
                    exchange.response(response.status().as_u16(), response.headers().iter());
                    let event_stream = response
                        .headers()
                        .get("content-type")
                        .is_some_and(|value| value.starts_with("application/vnd.amazon.eventstream"));
                    let body = tapped(response.take_body(), exchange, event_stream);
                    *response.body_mut() = body;
                    Ok(response)
                }
                Err(error) => {
                    exchange.end(End::Broken(cause_in_words(&error)));
                    Err(error)
                }
            }
        })
    }
}

fn tapped(body: SdkBody, exchange: Exchange, event_stream: bool) -> SdkBody {
    // A body already in memory (a JSON answer) is recorded at once; a streamed one as it is read.
    if let Some(bytes) = body.bytes() {
        let mut exchange = exchange;
        exchange.body(bytes);
        exchange.end(End::Complete);
        return body;
    }
    SdkBody::from_body_1_x(TapBody { body: Box::pin(body), exchange, event_stream, buffer: BytesMut::new() })
}

/// A streamed response body, copied into the recording as it is read: event-stream messages one by one, any
/// other body whole at its end.
struct TapBody {
    body: Pin<Box<SdkBody>>,
    exchange: Exchange,
    event_stream: bool,
    buffer: BytesMut,
}

impl TapBody {
    fn data(&mut self, data: &Bytes) {
        self.buffer.extend_from_slice(data);
        if !self.event_stream {
            return;
        }
        // Each message starts with its total length (4 bytes, big-endian).
        while self.buffer.len() >= 4 {
            let length = u32::from_be_bytes([self.buffer[0], self.buffer[1], self.buffer[2], self.buffer[3]]) as usize;
            if length < 16 || self.buffer.len() < length {
                break;
            }
            let mut frame = self.buffer.split_to(length).freeze();
            match aws_smithy_eventstream::frame::read_message_from(&mut frame) {
                Ok(message) => self.exchange.message(recorded_message(&message)),
                Err(error) => self.exchange.end(End::Broken(format!("an undecodable event-stream frame: {error}"))),
            }
        }
    }

    fn flush(&mut self) {
        if !self.event_stream && !self.buffer.is_empty() {
            let whole = std::mem::take(&mut self.buffer);
            self.exchange.body(whole.chunk());
        }
    }
}

impl Drop for TapBody {
    fn drop(&mut self) {
        self.flush();
    }
}

impl http_body::Body for TapBody {
    type Data = Bytes;
    type Error = aws_smithy_types::body::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let polled = this.body.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.data(data);
                }
            }
            Poll::Ready(Some(Err(error))) => {
                this.flush();
                this.exchange.end(End::Broken(cause_in_words(error.as_ref())));
            }
            Poll::Ready(None) => {
                this.flush();
                this.exchange.end(End::Complete);
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&*self.body)
    }
}

/// An event-stream message as the recording keeps it: string headers as strings, others tagged with their type.
fn recorded_message(message: &aws_smithy_types::event_stream::Message) -> EventMessage {
    let headers: BTreeMap<String, Value> = message
        .headers()
        .iter()
        .map(|header| {
            let value = match header.value() {
                HeaderValue::String(text) => Value::String(text.as_str().to_owned()),
                HeaderValue::Bool(flag) => json!({"bool": flag}),
                HeaderValue::Byte(n) => json!({"byte": n}),
                HeaderValue::Int16(n) => json!({"int16": n}),
                HeaderValue::Int32(n) => json!({"int32": n}),
                HeaderValue::Int64(n) => json!({"int64": n}),
                HeaderValue::ByteArray(bytes) => json!({"bytes": Body::from_bytes(bytes)}),
                HeaderValue::Timestamp(at) => json!({"timestamp": at.secs()}),
                HeaderValue::Uuid(uuid) => json!({"uuid": format!("{uuid:032x}")}),
                _ => json!({"unknown": null}),
            };
            (header.name().as_str().to_owned(), value)
        })
        .collect();
    EventMessage::new(headers, Body::from_bytes(message.payload()))
}
