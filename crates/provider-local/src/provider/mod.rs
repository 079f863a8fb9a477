//! The Local provider: [`Local`] and its [`Provider`] impl (here), its builder (`builder`), the agent loop of one
//! connection (`connection`: one chat-completions call per model turn) and the weak-model guards it applies
//! (`guards`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use managed_agents_core::Secret;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest, Provider,
    TurnResult,
};
use serde_json::{Value, json};

use crate::provider::connection::LocalConnection;
use crate::provider::guards::{GuardSettings, GuardState};
use crate::provision::Agents;
use crate::wire;
use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};

pub(crate) mod builder;
mod connection;
pub(crate) mod guards;

/// An in-process agent loop over any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
/// llama.cpp, gateways …). Cheap to clone.
///
/// [`Local::builder`] takes only what it is given; [`Local::from_env`] (or
/// [`LocalBuilder::from_env`](crate::LocalBuilder::from_env), to override some of it) reads `OPENAI_BASE_URL`,
/// `OPENAI_API_KEY` and `OPENAI_MODEL`. Per run, [`SessionOptions::model`](managed_agents_core::SessionOptions::model)
/// picks the model and the provider options `base_url` / `api_key` point the run at another endpoint (gateway
/// lanes).
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
    custom_chat: bool,
    http: HttpChatConfig,
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
    /// What the provider supports: a client-held transcript, and the model chosen per run.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_transcript().with_runtime_model();

    /// The model runs use unless a session picks another.
    pub fn model(&self) -> &str {
        &self.settings.model
    }

    /// The chat client of a run: the provider's own, or one for the run's `base_url` / `api_key` options.
    fn chat_for(&self, request: &OpenRequest) -> Result<Arc<dyn ChatBackend>, Error> {
        let (base_url, api_key) = (request.str_option("base_url"), request.str_option("api_key"));
        if base_url.is_none() && api_key.is_none() {
            return Ok(Arc::clone(&self.chat));
        }
        if self.settings.custom_chat {
            return Err(Error::invalid_option(
                "base_url",
                "a per-run base_url or api_key applies to the built-in HTTP client, not to a custom chat backend",
            ));
        }
        let mut http = self.settings.http.clone();
        if let Some(base_url) = base_url {
            http.base_url = base_url.to_string();
        }
        if let Some(api_key) = api_key {
            http.api_key = Some(Secret::new(api_key));
        }
        Ok(Arc::new(HttpChat::new(http)?))
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

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        let settings = &self.settings;
        let chat = self.chat_for(&request)?;
        // A provisioned agent's system prompt and tools drive the run; otherwise the builder's.
        let profile = match &request.agent_id {
            Some(id) => Some(self.agents.get(id).ok_or_else(|| {
                Error::invalid_option("agent_id", format!("no agent `{id}` was provisioned on this Local provider"))
            })?),
            None => None,
        };
        let system_prompt = match &profile {
            Some(profile) => Some(profile.system_prompt.as_str()),
            None => settings.system_prompt.as_deref(),
        };
        let tools = profile.as_ref().map_or_else(|| settings.tools.clone(), |profile| profile.tools.clone());
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
            model: request.model_config.model.unwrap_or_else(|| settings.model.clone()),
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
