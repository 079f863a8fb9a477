//! The Local provider: the agent loop runs in-process, one chat-completions call per turn.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::http::Secret;
use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{
    AgentHandle, AgentSpec, Capabilities, Connection, EnvironmentSpec, Error, Event, LiveEvents, OpenConnection,
    OpenRequest, Provider, Reconnected, RequestResponseConnection, ToolResult, ToolSchema, ToolUse, TurnInput,
    TurnResult,
};
use managed_agents_core::{HttpOptions, RetryPolicy};
use serde_json::{Value, json};

use crate::chat::{ChatBackend, ChatRequest, HttpChat, HttpChatConfig};
use crate::guards::{DUPLICATE_DIRECTIVE, GuardSettings, GuardState};
use crate::wire;

/// The default API root.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An in-process agent loop over any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM,
/// llama.cpp, gateways …). Cheap to clone.
///
/// [`Local::builder`] takes only what it is given; [`Local::from_env`] (or [`LocalBuilder::from_env`], to override
/// some of it) reads `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`. Per run, [`SessionOptions::model`](managed_agents_core::SessionOptions::model) picks the model and the
/// provider options `base_url` / `api_key` point the run at another endpoint (gateway lanes).
#[derive(Clone)]
pub struct Local {
    settings: Arc<Settings>,
    chat: Arc<dyn ChatBackend>,
    agents: Arc<RwLock<HashMap<String, Arc<Profile>>>>,
    /// Identifies this provider and its clones (they share `agents`).
    instance: u64,
}

/// What a provisioned agent brings to a run: its system prompt and tools (OpenAI shape).
#[derive(Debug)]
struct Profile {
    system_prompt: String,
    tools: Vec<Value>,
}

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
    fn agent(&self, id: &str) -> Option<Arc<Profile>> {
        self.agents.read().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// What the provider supports: a client-held transcript, and the model chosen per run.
    pub const CAPABILITIES: Capabilities = Capabilities::none().with_transcript().with_runtime_model();

    /// A builder with nothing set. It never reads the environment: what is not set gets its default (base URL
    /// [`DEFAULT_BASE_URL`], no API key), and the model must be set.
    pub fn builder() -> LocalBuilder {
        LocalBuilder::default()
    }

    /// A provider configured from the environment: `OPENAI_BASE_URL` (else [`DEFAULT_BASE_URL`]),
    /// `OPENAI_API_KEY` (optional: local servers need none) and `OPENAI_MODEL` (required). The same as
    /// `LocalBuilder::from_env().build()`; start from [`LocalBuilder::from_env`] to add tools or override a value.
    pub fn from_env() -> Result<Local, Error> {
        LocalBuilder::from_env().build()
    }

    /// The model runs use unless a session picks another.
    pub fn model(&self) -> &str {
        &self.settings.model
    }
}

/// Builds a [`Local`] provider.
#[derive(Default)]
pub struct LocalBuilder {
    base_url: Option<String>,
    api_key: Option<Secret>,
    model: Option<String>,
    headers: Vec<(String, String)>,
    system_prompt: Option<String>,
    tools: Vec<ToolSchema>,
    stream: Option<bool>,
    request_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    retry: Option<RetryPolicy>,
    http_options: Option<HttpOptions>,
    guards: GuardSettings,
    chat: Option<Arc<dyn ChatBackend>>,
}

impl fmt::Debug for LocalBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBuilder")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// The default limit for a response head (and a whole non-streamed response).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The default longest silence between streamed chunks.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

impl LocalBuilder {
    /// A builder with nothing set, like [`Local::builder`]; it never reads the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder holding what the environment sets — `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`
    /// (empty values count as unset) — which later calls may override.
    pub fn from_env() -> Self {
        let env = crate::settings::env_var;
        Self {
            base_url: env("OPENAI_BASE_URL"),
            api_key: env("OPENAI_API_KEY").map(Secret::new),
            model: env("OPENAI_MODEL"),
            ..Self::default()
        }
    }

    /// The API root (default [`DEFAULT_BASE_URL`]): an `http` or `https` URL, e.g. `http://localhost:11434/v1`.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as a bearer token (default: none, which local servers accept).
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key));
        self
    }

    /// The model (required).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// An extra header on every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The system prompt of fresh sessions.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// A tool the model may call (run by the session's handler).
    pub fn tool(mut self, tool: ToolSchema) -> Self {
        self.tools.push(tool);
        self
    }

    /// Takes the system prompt, tools and terminal tool of an agent definition.
    pub fn agent(mut self, spec: &AgentSpec) -> Self {
        self.system_prompt = Some(spec.system_prompt.clone());
        self.tools.extend(spec.tools.iter().cloned());
        self.guards.terminal_tool = spec.terminal_tool.clone();
        if let Some(model) = &spec.model {
            self.model = Some(model.clone());
        }
        self
    }

    /// Stream responses (default) or not.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = Some(stream);
        self
    }

    /// The limit for a response head (and a whole non-streamed response, which arrives only once the model is
    /// done); default 600 s; zero is refused by [`build`](Self::build), a huge value means no limit. A request
    /// that hits it is not retried (the server may still be generating).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    /// The longest silence between streamed chunks; default 300 s; zero is refused by [`build`](Self::build), a
    /// huge value means no limit.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// The retry policy (default: 3 retries, 1 s doubling, with jitter, honouring `retry-after`); checked by
    /// [`build`](Self::build) with [`RetryPolicy::validate`].
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// The HTTP connection settings: connect timeout, idle pool bound, HTTP version (default [`HttpOptions::new`]:
    /// HTTP/1.1, at most 100 idle connections, 10 s connect timeout; a zero connect timeout is refused by
    /// [`build`](Self::build)).
    pub fn http_options(mut self, options: HttpOptions) -> Self {
        self.http_options = Some(options);
        self
    }

    /// The weak-model guards.
    pub fn guards(mut self, guards: GuardSettings) -> Self {
        self.guards = guards;
        self
    }

    /// Puts another client behind the provider instead of the built-in HTTP one.
    pub fn chat_backend(mut self, chat: Arc<dyn ChatBackend>) -> Self {
        self.chat = Some(chat);
        self
    }

    /// Builds the provider. It reads nothing from the environment, and every setting is checked here: a missing
    /// or empty model, a zero timeout, an invalid retry policy, base URL or header is an
    /// [`Error::InvalidOption`].
    pub fn build(self) -> Result<Local, Error> {
        let model = self.model.filter(|model| !model.trim().is_empty()).ok_or_else(|| {
            Error::invalid_option("model", "no model given (set `model`, or OPENAI_MODEL for `from_env`)")
        })?;
        let mut http = HttpChatConfig::new(self.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.into()));
        http.api_key = self.api_key;
        http.headers = self.headers;
        http.request_timeout = self.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        http.idle_timeout = self.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
        http.retry = self.retry.unwrap_or_default();
        http.http_options = self.http_options.unwrap_or_default();
        // Checked even with a custom chat backend: a per-run `base_url` or `api_key` is refused there, but the
        // settings must still make sense.
        http.validate()?;
        let custom_chat = self.chat.is_some();
        let chat: Arc<dyn ChatBackend> = match self.chat {
            Some(chat) => chat,
            None => Arc::new(HttpChat::new(http.clone())?),
        };
        let tools = self.tools.iter().map(openai_tool).collect();
        let settings = Settings {
            custom_chat,
            http,
            model,
            system_prompt: self.system_prompt,
            tools,
            stream: self.stream.unwrap_or(true),
            guards: self.guards,
        };
        Ok(Local { settings: Arc::new(settings), chat, agents: Arc::default(), instance: fastrand::u64(..) })
    }
}

/// A tool in the OpenAI function shape.
pub(crate) fn openai_tool(tool: &ToolSchema) -> Value {
    let parameters = if tool.input_schema.is_object() { tool.input_schema.clone() } else { json!({"type": "object"}) };
    json!({"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": parameters}})
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
        let chat = match (request.str_option("base_url"), request.str_option("api_key")) {
            (None, None) => Arc::clone(&self.chat),
            _ if settings.custom_chat => {
                return Err(Error::invalid_option(
                    "base_url",
                    "a per-run base_url or api_key applies to the built-in HTTP client, not to a custom chat backend",
                ));
            }
            (base_url, api_key) => {
                let mut http = settings.http.clone();
                if let Some(base_url) = base_url {
                    http.base_url = base_url.to_string();
                }
                if let Some(api_key) = api_key {
                    http.api_key = Some(Secret::new(api_key));
                }
                Arc::new(HttpChat::new(http)?) as Arc<dyn ChatBackend>
            }
        };
        // A provisioned agent's system prompt and tools drive the run; otherwise the builder's.
        let profile = match &request.agent_id {
            Some(id) => Some(self.agent(id).ok_or_else(|| {
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
            model: request.model.unwrap_or_else(|| settings.model.clone()),
            guards_settings: guards,
            settings: Arc::clone(settings),
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
        spec.validate()?;
        let agent_id = NamePolicy::CLAUDE.compose(&spec.name, &spec.digest())?;
        let profile =
            Profile { system_prompt: spec.system_prompt.clone(), tools: spec.tools.iter().map(openai_tool).collect() };
        self.agents.write().unwrap_or_else(PoisonError::into_inner).insert(agent_id.clone(), Arc::new(profile));
        Ok(AgentHandle { agent_id, environment_id: None })
    }

    /// Forgets the registration; nothing server-side.
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        self.agents.write().unwrap_or_else(PoisonError::into_inner).remove(&handle.agent_id);
        Ok(())
    }
}

struct LocalConnection {
    chat: Arc<dyn ChatBackend>,
    model: String,
    guards_settings: GuardSettings,
    settings: Arc<Settings>,
    tools: Vec<Value>,
    history: Vec<Value>,
    session_id: String,
    resumed: bool,
    guards: GuardState,
}

/// The tool message answering `result`; errors are the JSON `{"error": text, "isError": true}`.
pub(crate) fn tool_message(result: &ToolResult) -> Value {
    let content =
        if result.is_error { json!({"error": result.text, "isError": true}).to_string() } else { result.text.clone() };
    json!({"role": "tool", "tool_call_id": result.tool_use_id, "content": content})
}

impl LocalConnection {
    /// Applies the input to the history; returns the guard events it caused.
    fn apply(&mut self, input: TurnInput) -> Result<Vec<Event>, Error> {
        match input {
            TurnInput::Kickoff { prompt: text, .. } | TurnInput::Message { text } => {
                self.guards.reset();
                close_open_calls(&mut self.history);
                self.history.push(json!({"role": "user", "content": text}));
                Ok(Vec::new())
            }
            TurnInput::ToolResults { tool_uses, results } => {
                self.history.extend(results.iter().map(tool_message));
                let directives = self.guards.after_results(&self.guards_settings, &tool_uses, &results);
                Ok(directives.into_iter().map(|text| self.directive("corrective", text)).collect())
            }
            TurnInput::Event(_) => Err(self.unsupported("send_event")),
            TurnInput::Interrupt => Err(self.unsupported("interrupt")),
            _ => Err(self.unsupported("this input")),
        }
    }

    fn unsupported(&self, operation: &'static str) -> Error {
        Error::unsupported(operation, "local")
    }

    fn directive(&mut self, role: &str, text: String) -> Event {
        close_open_calls(&mut self.history);
        self.history.push(json!({"role": "user", "content": text}));
        wire::event(wire::DIRECTIVE, json!({"role": role, "text": text}))
    }
}

#[async_trait]
impl Connection for LocalConnection {
    fn session_id(&self) -> Option<String> {
        Some(self.session_id.clone())
    }

    fn resumed(&self) -> bool {
        self.resumed
    }

    fn transcript(&self) -> Option<Vec<Value>> {
        Some(self.history.clone())
    }
}

#[async_trait]
impl RequestResponseConnection for LocalConnection {
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error> {
        let mut events = self.apply(input)?;
        let mut asks = 0;
        loop {
            asks += 1;
            if let Some(text) = self.guards.final_turn(&self.guards_settings) {
                events.push(self.directive("final_turn", text));
            }
            self.guards.polls = self.guards.polls.saturating_add(1);
            let request = ChatRequest {
                model: self.model.clone(),
                messages: self.history.clone(),
                tools: self.tools.clone(),
                stream: self.settings.stream,
            };
            let response = self.chat.complete(request, &live).await?;
            let streamed = !response.events.is_empty();
            events.extend(response.events);
            let message = wire::clean_message(&response.message, &format!("call_{}", self.guards.polls));
            self.history.push(message.clone());
            events.push(wire::event(
                wire::MODEL_RESPONSE,
                json!({
                    "message": message,
                    "finish_reason": response.finish_reason,
                    "usage": response.usage,
                    "streamed": streamed,
                    "response": response.raw,
                }),
            ));
            let calls = wire::tool_uses(&message);
            let duplicates = self.guards.duplicates(&self.guards_settings, &calls);
            for duplicate in &duplicates {
                self.history.push(duplicate_answer(duplicate));
                events.push(wire::event(
                    wire::DUPLICATE_TOOL_CALL,
                    json!({"tool_call": {"id": duplicate.id, "name": duplicate.name, "input": duplicate.input}}),
                ));
            }
            // Only repeats: they are answered in the history, so ask the model again, a bounded number of times
            // (upstream ended the run with an unresolved requires_action here). The session's own limits see one
            // turn; past the bound the turn ends (terminated) instead of looping.
            let only_repeats = !calls.is_empty() && duplicates.len() == calls.len();
            if !only_repeats || asks > MAX_REASKS || self.guards.polls >= self.guards_settings.max_turns {
                return Ok(events);
            }
        }
    }

    /// A transcript whose last assistant message has calls without tool messages (a run that stopped for an
    /// approval, or a worker that died mid-batch) still waits on them: they are returned as pending, so the
    /// session runs them — answering from its tool ledger the ones recorded — before anything else is sent.
    async fn reattach(&mut self) -> Result<Reconnected, Error> {
        Ok(Reconnected::new(open_calls(&self.history), Vec::new(), Vec::new()))
    }
}

/// How many times one poll asks the model again after a response made only of repeated calls.
const MAX_REASKS: u32 = 2;

/// The calls of the last assistant message that no tool message answers yet, in call order.
fn open_calls(history: &[Value]) -> Vec<ToolUse> {
    let Some(last_assistant) = history.iter().rposition(|m| m["role"] == "assistant") else { return Vec::new() };
    let answered: Vec<&str> = history[last_assistant + 1..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    wire::tool_uses(&history[last_assistant]).into_iter().filter(|call| !answered.contains(&call.id.as_str())).collect()
}

/// Answers every call of the last assistant message that has no tool message yet, so the history stays valid for
/// strict servers when a request ended between a call and its result (max turns, guard, timeout, failure).
fn close_open_calls(history: &mut Vec<Value>) {
    for call in open_calls(history) {
        let content = json!({"error": "not run: the request ended before this call was answered", "isError": true});
        history.push(json!({"role": "tool", "tool_call_id": call.id, "content": content.to_string()}));
    }
}

fn duplicate_answer(tool_use: &ToolUse) -> Value {
    let content = json!({"duplicate": true, "message": DUPLICATE_DIRECTIVE}).to_string();
    json!({"role": "tool", "tool_call_id": tool_use.id, "content": content})
}
