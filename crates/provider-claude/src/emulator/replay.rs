//! Replaying a recording of the Claude wire: [`ClaudeReplay`].

use std::io;

use managed_agents_conformance::replay::{ReplayError, ReplayOptions, ReplayReport, ReplayServer, SseEncoding};
use managed_agents_core::recording::Recording;

use crate::{ClaudeManagedAgents, ClaudeManagedAgentsBuilder};

/// A loopback server playing a recording of the Claude wire (see
/// [`managed_agents_conformance::replay`]): point a provider at it with [`ClaudeReplay::provider_builder`], run
/// the same app, then [`ClaudeReplay::finish`] says whether every request matched.
#[derive(Debug)]
pub struct ClaudeReplay {
    server: ReplayServer,
}

impl ClaudeReplay {
    /// Starts playing `recording`; refused (`InvalidInput`) when it is not a recording of the `claude` wire.
    pub async fn start(recording: Recording, options: ReplayOptions) -> io::Result<Self> {
        Ok(Self { server: ReplayServer::start("claude", recording, SseEncoding, options).await? })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// The provider's builder pointed at the replay (with a placeholder API key).
    pub fn provider_builder(&self) -> ClaudeManagedAgentsBuilder {
        ClaudeManagedAgents::builder().base_url(self.base_url()).api_key("replay")
    }

    /// Whether the recording played through (see [`ReplayServer::finish`]).
    pub fn finish(&self) -> Result<ReplayReport, ReplayError> {
        self.server.finish()
    }
}
