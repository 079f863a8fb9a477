//! Replaying a recording of the chat completions wire: [`LocalReplay`].

use std::io;

use managed_agents_conformance::replay::{ReplayError, ReplayOptions, ReplayReport, ReplayServer, SseEncoding};
use managed_agents_core::recording::{Body, Recording};

use crate::{Local, LocalBuilder};

/// A loopback server playing a recording of the chat completions wire (see
/// [`managed_agents_conformance::replay`]): point a provider at it with [`LocalReplay::provider_builder`], run
/// the same app, then [`LocalReplay::finish`] says whether every request matched.
#[derive(Debug)]
pub struct LocalReplay {
    server: ReplayServer,
    /// The path the recorded chat URL had before `/chat/completions` (e.g. `/v1`).
    prefix: String,
    /// The model the recorded requests named.
    model: Option<String>,
}

impl LocalReplay {
    /// Starts playing `recording`; refused (`InvalidInput`) when it is not a recording of the `claude` wire.
    pub async fn start(recording: Recording, options: ReplayOptions) -> io::Result<Self> {
        let prefix = recording
            .requests()
            .find_map(|(_, _, request)| {
                request.uri.split_once("/chat/completions").map(|(prefix, _)| prefix.to_owned())
            })
            .unwrap_or_default();
        let model = recording.requests().find_map(|(_, _, request)| match &request.body {
            Some(Body::Json(body)) => body["model"].as_str().map(str::to_owned),
            _ => None,
        });
        Ok(Self { server: ReplayServer::start("local", recording, SseEncoding, options).await?, prefix, model })
    }

    /// The base URL to give the provider: `http://127.0.0.1:<port>` and the path the recorded chat URL had
    /// before `/chat/completions` (e.g. `/v1`).
    pub fn base_url(&self) -> String {
        format!("{}{}", self.server.base_url(), self.prefix)
    }

    /// The model the recorded requests named, if any.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The provider's builder pointed at the replay, for `model` (the one the recording's requests name).
    pub fn provider_builder(&self, model: &str) -> LocalBuilder {
        Local::builder().base_url(self.base_url()).model(model)
    }

    /// Whether the recording played through (see [`ReplayServer::finish`]).
    pub fn finish(&self) -> Result<ReplayReport, ReplayError> {
        self.server.finish()
    }
}
