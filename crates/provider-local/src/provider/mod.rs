//! The Local provider: [`Local`] and its [`Provider`] impl (here), its builder (`builder`), the agent loop of one
//! connection (`connection`: one chat-completions call per model turn), the weak-model guards it applies
//! (`guards`), the model rule (`catalog`) and a run's own chat client (`endpoint`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, DataPlane, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest,
    Provider, TurnResult,
};
use serde_json::{Value, json};

use crate::provider::connection::LocalConnection;
use crate::provider::guards::{GuardSettings, GuardState};
use crate::provision::Agents;
use crate::wire;
use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};
use crate::wire::openai_tool;

pub(crate) mod builder;
mod catalog;
mod connection;
mod endpoint;
pub(crate) mod guards;

/// An in-process agent loop over any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
/// llama.cpp, gateways …). Cheap to clone.
///
/// [`Local::builder`] takes only what it is given; [`Local::from_env`] (or
/// [`LocalBuilder::from_env`](crate::LocalBuilder::from_env), to override some of it) reads `OPENAI_BASE_URL`,
/// `OPENAI_API_KEY` and `OPENAI_MODEL`.
///
/// Per run, [`SessionOptions::model_config`](managed_agents_core::SessionOptions::model_config) picks the model
/// (an `openai:` catalog prefix is dropped; any other id goes to the server as given, so Ollama's `qwen3:8b`
/// stays whole) and, with the built-in client, a destination and credential for that run's chat calls
/// (gateway lanes): a destination gets the run's credential and nothing of the provider's key or extra headers.
/// [`SessionOptions::system_prompt`](managed_agents_core::SessionOptions::system_prompt) and
/// [`SessionOptions::tools`](managed_agents_core::SessionOptions::tools) replace the agent's for a fresh run (a
/// resumed transcript keeps the system message it holds). The provider and other sessions are never changed.
#[derive(Clone)]
pub struct Local {
    settings: Arc<Settings>,
    chat: Arc<dyn ChatBackend>,
    agents: Arc<Agents>,
    /// Identifies this provider and its clones (they share `agents`).
    instance: u64,
}

/// What [`LocalBuilder::build`](crate::LocalBuilder::build) settled.
struct Settings {
    http: HttpChatConfig,
    /// The built-in client, which a run's destination and credential derive from; `None` with a custom backend.
    builtin: Option<HttpChat>,
    model: String,
    system_prompt: Option<String>,
    tools: Vec<Value>,
    stream: bool,
    guards: GuardSettings,
}

impl fmt::Debug for Local {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Local")
            .field("http", &self.settings.http)
            .field("model", &self.settings.model)
            .field("tools", &self.settings.tools.len())
            .field("stream", &self.settings.stream)
            .field("guards", &self.settings.guards)
            .finish_non_exhaustive()
    }
}

impl Local {
    /// What the provider supports with its built-in client: a client-held transcript, the model, system prompt
    /// and tools chosen per run, a run's own destination and credential for its chat calls, and interrupts (the
    /// session drops the turn in flight, and with it the chat request; the transcript keeps what was sent). With
    /// a custom [`ChatBackend`] the data plane is [`DataPlane::None`] ([`Provider::capabilities`] says so).
    pub const CAPABILITIES: Capabilities = Capabilities::none()
        .with_transcript()
        .with_interrupt()
        .with_runtime_model()
        .with_runtime_overrides()
        .with_data_plane(DataPlane::ChatCompletions);

    /// The model runs use unless a session picks another.
    pub fn model(&self) -> &str {
        &self.settings.model
    }
}

#[async_trait]
impl Provider for Local {
    fn name(&self) -> &str {
        "local"
    }

    /// This provider and its clones: its agents are registered in process, so a handle another instance (or an
    /// earlier process) provisioned is not valid here and must not be reused from a shared store.
    fn provision_scope(&self) -> String {
        format!("local:{:016x}", self.instance)
    }

    /// [`Local::CAPABILITIES`]; with a custom chat backend, no data plane (a run's destination and credential
    /// apply to the built-in HTTP client only).
    fn capabilities(&self) -> Capabilities {
        match self.settings.builtin {
            Some(_) => Self::CAPABILITIES,
            None => Self::CAPABILITIES.with_data_plane(DataPlane::None),
        }
    }

    /// The model value of the chat wire: an `openai:` prefix is dropped, any other id is sent as given (see the
    /// type's doc); no id is refused.
    fn native_model(&self, id: &str) -> Result<Value, Error> {
        Ok(Value::String(catalog::wire_model(id).to_string()))
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let settings = &self.settings;
        let chat = endpoint::chat_for(&request, &self.chat, settings.builtin.as_ref())?;
        // A provisioned agent's system prompt and tools drive the run; otherwise the builder's.
        let profile = match &request.agent_id {
            Some(id) => Some(self.agents.get(id).ok_or_else(|| {
                Error::invalid_option("agent_id", format!("no agent `{id}` was provisioned on this Local provider"))
            })?),
            None => None,
        };
        // The run's overrides come first, then the agent's, then the builder's.
        let system_prompt = match (&request.system, &profile) {
            (Some(system), _) => Some(system.as_str()),
            (None, Some(profile)) => Some(profile.system_prompt.as_str()),
            (None, None) => settings.system_prompt.as_deref(),
        };
        let tools = match (&request.tools, &profile) {
            (Some(tools), _) => tools.iter().map(openai_tool).collect(),
            (None, Some(profile)) => profile.tools.clone(),
            (None, None) => settings.tools.clone(),
        };
        let model = catalog::wire_model(request.model().unwrap_or(&settings.model)).to_string();
        let resumed = !request.history.is_empty();
        let history = if resumed {
            request.history
        } else {
            system_prompt.iter().map(|prompt| json!({"role": "system", "content": prompt})).collect()
        };
        let session_id = request.session_id.unwrap_or_else(|| format!("local_{:016x}", fastrand::u64(..)));
        // The final-turn directive follows the session's own limit when that is the tighter one.
        let mut guards = settings.guards.clone();
        if let Some(limit) = request.max_turns {
            guards.max_turns = guards.max_turns.min(limit);
        }
        Ok(OpenConnection::RequestResponse(Box::new(LocalConnection {
            chat,
            model,
            stream: settings.stream,
            guards_settings: guards,
            tools,
            history,
            session_id,
            resumed,
            guards: GuardState::default(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        wire::normalize(events)
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        wire::text_delta(event)
    }

    /// Nothing server-side: the spec is registered on this provider (and its clones) under
    /// `<name>_<digest8>`, and a run whose `agent_id` is that handle's uses the spec's system prompt and tools.
    /// The environment is ignored (the loop runs in this process).
    async fn provision(&self, spec: &AgentSpec, _: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        self.agents.register(spec)
    }

    /// Forgets the registration; nothing server-side.
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        self.agents.forget(&handle.agent_id);
        Ok(())
    }
}
