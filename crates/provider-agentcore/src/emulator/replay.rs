//! Replaying a recording of the AgentCore wire: [`AgentCoreReplay`], whose frames are AWS event-stream
//! messages.

use std::io;

use aws_sdk_bedrockagentcore::primitives::event_stream::{Header, HeaderValue, Message};
use aws_smithy_types::DateTime;
use managed_agents_conformance::replay::{FrameEncoding, ReplayError, ReplayOptions, ReplayReport, ReplayServer};
use managed_agents_core::http::Bytes;
use managed_agents_core::recording::{Body, EntryKind, EventMessage, Recording};
use serde_json::Value;

use super::server::sdk_clients;
use crate::{BedrockAgentCore, BedrockAgentCoreBuilder};

/// Recorded event-stream messages written back as binary frames.
#[derive(Debug, Clone, Copy, Default)]
struct EventStreamEncoding;

impl FrameEncoding for EventStreamEncoding {
    fn encode(&self, frame: &EntryKind) -> Option<Bytes> {
        let EntryKind::Message(recorded) = frame else { return None };
        let message = message(recorded);
        let mut buffer = Vec::new();
        aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer).ok()?;
        Some(Bytes::from(buffer))
    }
}

/// The message a recorded one stands for: string headers as strings, tagged values as their type.
fn message(recorded: &EventMessage) -> Message {
    let payload = recorded.payload.as_ref().map(Body::to_bytes).unwrap_or_default();
    recorded.headers.iter().fold(Message::new(Bytes::from(payload)), |message, (name, value)| {
        match header_value(value) {
            Some(value) => message.add_header(Header::new(name.clone(), value)),
            None => message,
        }
    })
}

fn header_value(value: &Value) -> Option<HeaderValue> {
    if let Some(text) = value.as_str() {
        return Some(HeaderValue::String(text.to_owned().into()));
    }
    let (kind, inner) = value.as_object()?.iter().next()?;
    Some(match kind.as_str() {
        "bool" => HeaderValue::Bool(inner.as_bool()?),
        "byte" => HeaderValue::Byte(i8::try_from(inner.as_i64()?).ok()?),
        "int16" => HeaderValue::Int16(i16::try_from(inner.as_i64()?).ok()?),
        "int32" => HeaderValue::Int32(i32::try_from(inner.as_i64()?).ok()?),
        "int64" => HeaderValue::Int64(inner.as_i64()?),
        "timestamp" => HeaderValue::Timestamp(DateTime::from_secs(inner.as_i64()?)),
        "uuid" => HeaderValue::Uuid(u128::from_str_radix(inner.as_str()?, 16).ok()?),
        "bytes" => {
            let body: Body = serde_json::from_value(inner.clone()).ok()?;
            HeaderValue::ByteArray(Bytes::from(body.to_bytes()))
        }
        _ => return None,
    })
}

/// A loopback server playing a recording of the AgentCore wire (see [`managed_agents_conformance::replay`]):
/// point a provider at it with [`AgentCoreReplay::provider_builder`], run the same app, then
/// [`AgentCoreReplay::finish`] says whether every request matched.
#[derive(Debug)]
pub struct AgentCoreReplay {
    server: ReplayServer,
}

impl AgentCoreReplay {
    /// Starts playing `recording`; refused (`InvalidInput`) when it is not a recording of the `agentcore` wire.
    pub async fn start(recording: Recording, options: ReplayOptions) -> io::Result<Self> {
        Ok(Self { server: ReplayServer::start("agentcore", recording, EventStreamEncoding, options).await? })
    }

    /// The endpoint URL to give the SDK client.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The provider's builder on SDK clients pointed at the replay (static test credentials, plain HTTP).
    pub fn provider_builder(&self) -> BedrockAgentCoreBuilder {
        let (data, control) = sdk_clients(&self.base_url());
        BedrockAgentCore::builder().client(data).control_client(control)
    }

    /// Whether the recording played through (see [`ReplayServer::finish`]).
    pub fn finish(&self) -> Result<ReplayReport, ReplayError> {
        self.server.finish()
    }
}
