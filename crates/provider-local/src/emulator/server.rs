//! [`LocalEmulator`]: the emulator's server (on the scaffold's [`EmulatorServer`]) and what it shows of the
//! requests it received.

use std::io;

use managed_agents_conformance::emulator::{EmulatorServer, LoggedRequest};
use managed_agents_conformance::{InputLog, Scripts};
use managed_agents_core::http::HeaderMap;
use serde_json::Value;

use crate::emulator::encode::StreamEnd;
use crate::emulator::playback::State;
use crate::emulator::routes::{is_chat, route};
#[cfg(doc)]
use crate::emulator::sessions::conversation_key;
use crate::provider::Local;
use crate::provider::builder::LocalBuilder;
#[cfg(doc)]
use managed_agents_conformance::Script;

/// How a [`LocalEmulator`] behaves beyond its script: start from [`EmulatorOptions::default`] (OpenAI's
/// shapes) and change what you need with the `with_*` methods.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct EmulatorOptions {
    /// How a streamed completion ends (default [`StreamEnd::FinishReasonThenDone`]).
    pub stream_end: StreamEnd,
}

impl EmulatorOptions {
    /// Streamed completions end as `end` says: e.g. [`StreamEnd::DoneWithoutFinishReason`] to play a server
    /// that never sends a finish reason.
    #[must_use]
    pub fn with_stream_end(mut self, end: StreamEnd) -> Self {
        self.stream_end = end;
        self
    }
}

/// The emulator. Dropping it stops the server.
///
/// With [`Scripts::per_session`], each conversation plays its own script, keyed by [`conversation_key`] (its
/// system message and first user message): two conversations that open with the same messages share one.
pub struct LocalEmulator {
    server: EmulatorServer<State>,
}

impl std::fmt::Debug for LocalEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmulator").field("base_url", &self.base_url()).finish_non_exhaustive()
    }
}

impl LocalEmulator {
    /// Starts a server on `127.0.0.1` playing `scripts`: a [`Script`] shared by every conversation, or
    /// [`Scripts::per_session`] keyed by [`conversation_key`].
    pub async fn start(scripts: impl Into<Scripts>) -> io::Result<Self> {
        Self::start_with(scripts, EmulatorOptions::default()).await
    }

    /// [`LocalEmulator::start`] with `options`.
    pub async fn start_with(scripts: impl Into<Scripts>, options: EmulatorOptions) -> io::Result<Self> {
        let EmulatorOptions { stream_end } = options;
        let server = EmulatorServer::start(State::new(scripts.into(), stream_end), route).await?;
        Ok(Self { server })
    }

    /// The API root to point a provider at (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// A [`Local`] builder pointed at the emulator, with the model `emulated` and no key (the emulator takes
    /// any model and needs no key): ready to build, or to set more on first.
    pub fn provider_builder(&self) -> LocalBuilder {
        Local::builder().base_url(self.base_url()).model("emulated")
    }

    /// The inputs received, decoded.
    pub fn log(&self) -> InputLog {
        self.server.state().lock().log.clone()
    }

    /// Every chat-completions request received (a `POST …/chat/completions` with a JSON body), in order: its
    /// body, verbatim. Requests the emulator refused (an invalid conversation, an injected failure) count too.
    pub fn requests(&self) -> Vec<Value> {
        self.chat_requests().map(|request| request.json()).collect()
    }

    /// When each request of [`LocalEmulator::requests`] arrived.
    pub fn arrivals(&self) -> Vec<tokio::time::Instant> {
        self.chat_requests().map(|request| request.arrived).collect()
    }

    /// The headers of each request of [`LocalEmulator::requests`], in order.
    pub fn request_headers(&self) -> Vec<HeaderMap> {
        self.chat_requests().map(|request| request.headers).collect()
    }

    /// The chat-completions requests of the scaffold's log (the only route this wire has).
    fn chat_requests(&self) -> impl Iterator<Item = LoggedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|request| is_chat(&request.method, request.uri.path()) && !request.json().is_null())
    }
}
