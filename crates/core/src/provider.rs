//! The provider contract: how a loop host plugs into the session loop.
//!
//! A [`Provider`] is a cheap, shareable handle to one loop host (it holds the wire client and configuration). It
//! interprets events with pure functions ([`Provider::normalize`], [`Provider::text_delta`],
//! [`Provider::pending_tool_uses`]) and opens one [`Connection`] per session. A connection is either streaming
//! (the host pushes events; the client posts inputs out of band, and the connection says which event ends a turn:
//! [`StreamingConnection::is_turn_boundary`], required) or request/response (each turn is one call that returns
//! the turn's events).
//!
//! `docs/provider-contract.md` maps every callback of the original Elixir contract onto these traits.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::model::{DataPlane, ModelConfig};
use crate::thread::ThreadUpdate;
use crate::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, Outcome, SeenIds, ToolResult, ToolSchema, ToolUse,
    TurnResult,
};

/// The prompt sent at kickoff when the options name none.
pub const DEFAULT_KICKOFF_PROMPT: &str = "Begin.";

/// What a provider can do beyond the basic loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Honours an [`Outcome`] at kickoff.
    pub outcomes: bool,
    /// Enforces a spend budget on a fresh session.
    pub budget: bool,
    /// Lets the session options choose the model per run.
    pub runtime_model: bool,
    /// Lets the session options replace the agent's system prompt and custom tools per run
    /// ([`SessionOptions::system_prompt`](crate::SessionOptions::system_prompt),
    /// [`SessionOptions::tools`](crate::SessionOptions::tools)).
    pub runtime_overrides: bool,
    /// The wire a run's [`ModelConfig`] credential and destination apply to ([`DataPlane::None`]: they cannot).
    pub data_plane: DataPlane,
    /// Accepts [`TurnInput::Interrupt`].
    pub interrupt: bool,
    /// Keeps the conversation client-side and reports it through [`Connection::transcript`].
    pub transcript: bool,
}

impl Capabilities {
    /// No optional capability.
    pub const fn none() -> Self {
        Self {
            outcomes: false,
            budget: false,
            runtime_model: false,
            runtime_overrides: false,
            data_plane: DataPlane::None,
            interrupt: false,
            transcript: false,
        }
    }

    /// With the outcome capability.
    pub const fn with_outcomes(mut self) -> Self {
        self.outcomes = true;
        self
    }

    /// With the budget capability.
    pub const fn with_budget(mut self) -> Self {
        self.budget = true;
        self
    }

    /// With the runtime-model capability.
    pub const fn with_runtime_model(mut self) -> Self {
        self.runtime_model = true;
        self
    }

    /// With the runtime-overrides capability.
    pub const fn with_runtime_overrides(mut self) -> Self {
        self.runtime_overrides = true;
        self
    }

    /// With this data plane for a run's credential and destination.
    pub const fn with_data_plane(mut self, data_plane: DataPlane) -> Self {
        self.data_plane = data_plane;
        self
    }

    /// With the interrupt capability.
    pub const fn with_interrupt(mut self) -> Self {
        self.interrupt = true;
        self
    }

    /// With the transcript capability.
    pub const fn with_transcript(mut self) -> Self {
        self.transcript = true;
        self
    }
}

/// What drives the next turn. Providers translate it into their wire shape.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TurnInput {
    /// Starts the conversation: the prompt, or an outcome (which wins on providers that support outcomes).
    Kickoff {
        /// The first user message ([`DEFAULT_KICKOFF_PROMPT`] when none was given).
        prompt: String,
        /// The outcome to pursue, if any.
        outcome: Option<Outcome>,
    },
    /// A follow-up user message.
    Message {
        /// The message text.
        text: String,
    },
    /// The results of the tool calls the loop host waits on, in call order (never empty).
    ToolResults {
        /// The calls being answered.
        tool_uses: Vec<ToolUse>,
        /// One result per call, in the same order.
        results: Vec<ToolResult>,
    },
    /// A raw wire event, posted verbatim (streaming providers; e.g. a tool confirmation).
    Event(Event),
    /// Asks the loop host to stop the current turn (providers with the interrupt capability).
    Interrupt,
    /// Asks the loop host to stop one thread of a multi-agent session, leaving the others running (providers
    /// with the interrupt capability whose sessions have threads).
    InterruptThread {
        /// The thread to stop ([`Thread::thread_id`](crate::Thread::thread_id)).
        thread_id: String,
    },
}

/// What a session asks a provider to open.
///
/// Its `Debug` output lists the keys of `metadata` and `options`, never their values (options may carry
/// credentials, such as a per-run API key).
#[derive(Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct OpenRequest {
    /// The agent to run (a Claude agent id, an AgentCore harness ARN …).
    pub agent_id: Option<String>,
    /// The environment to run it in.
    pub environment_id: Option<String>,
    /// An existing session to reattach to instead of creating one.
    pub session_id: Option<String>,
    /// A client-held conversation to continue (providers with the transcript capability).
    pub history: Vec<Value>,
    /// The run's model configuration: the model (providers with the runtime-model capability) and, on providers
    /// with a [`DataPlane`], the credential and destination this run's requests use. Already checked against
    /// the provider ([`ModelConfig::validate`], [`Provider::native_model`]).
    pub model_config: ModelConfig,
    /// The run's system prompt, replacing the agent's (providers with the runtime-overrides capability).
    pub system: Option<String>,
    /// The run's custom tools, replacing the agent's (providers with the runtime-overrides capability).
    pub tools: Option<Vec<ToolSchema>>,
    /// Whether the assistant's text should stream as it is generated, for hosts that only stream it on request
    /// (Claude's `event_deltas`). Hosts that always stream ignore it.
    pub live_text: bool,
    /// The session's turn limit per request, for providers that steer the model toward it (e.g. a final-turn
    /// directive).
    pub max_turns: Option<u32>,
    /// User metadata from the session options.
    pub metadata: Map<String, Value>,
    /// Metadata for a session this request creates on the loop host, and for nothing else (handlers never see
    /// it): what a host tags its sessions with to find one again ([`Provider::find_sessions`]) when the worker
    /// that created it died before saving its id. Providers without session metadata ignore it.
    pub session_tags: Map<String, Value>,
    /// Provider-specific options, passed through verbatim.
    pub options: Map<String, Value>,
}

impl std::fmt::Debug for OpenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenRequest")
            .field("agent_id", &self.agent_id)
            .field("environment_id", &self.environment_id)
            .field("session_id", &self.session_id)
            .field("history", &format_args!("[{} messages]", self.history.len()))
            .field("model_config", &self.model_config)
            .field("system", &self.system.as_ref().map(|_| "<set>"))
            .field("tools", &self.tools.as_ref().map(|tools| tools.iter().map(|t| &t.name).collect::<Vec<_>>()))
            .field("live_text", &self.live_text)
            .field("max_turns", &self.max_turns)
            .field("metadata", &self.metadata.keys().collect::<Vec<_>>())
            .field("session_tags", &self.session_tags.keys().collect::<Vec<_>>())
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl OpenRequest {
    /// The run's model, as given (a catalog id or a bare wire id).
    pub fn model(&self) -> Option<&str> {
        self.model_config.model.as_deref()
    }

    /// A provider-specific string option.
    pub fn str_option(&self, key: &str) -> Option<&str> {
        self.options.get(key).and_then(Value::as_str)
    }

    /// A provider-specific option.
    pub fn option(&self, key: &str) -> Option<&Value> {
        self.options.get(key)
    }
}

/// What a streaming connection yields.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamItem {
    /// The stream is open (sent once per stream, before its first event).
    Connected,
    /// A decoded event.
    Event(Event),
    /// The stream ended cleanly.
    Closed,
    /// The stream failed.
    Failed(Error),
}

/// What a reconnect (or a reattach to an existing session) recovered.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Reconnected {
    /// Custom tool calls the loop host still waits on; the session runs them again (at-least-once).
    pub pending_tool_uses: Vec<ToolUse>,
    /// Events of the session's history the session has not seen, oldest first (see [`SeenIds::unseen`]).
    pub history: Vec<Event>,
    /// Every event id the provider found in the history, so the session never delivers them again.
    pub seen_ids: Vec<String>,
}

impl Reconnected {
    /// A reconnect that recovered the given pending tool calls, history and ids.
    pub fn new(pending_tool_uses: Vec<ToolUse>, history: Vec<Event>, seen_ids: Vec<String>) -> Self {
        Self { pending_tool_uses, history, seen_ids }
    }
}

/// Where a request/response connection reports events while a turn is still running.
///
/// Events reported here reach the handler at once; the turn's returned events are then not forwarded a second
/// time. The returned events must still contain every event of the turn (they are the record), with the events
/// reported live among them in the order they were reported.
#[derive(Debug, Clone)]
pub struct LiveEvents(Option<mpsc::UnboundedSender<Event>>);

impl LiveEvents {
    pub(crate) fn new(sender: mpsc::UnboundedSender<Event>) -> Self {
        Self(Some(sender))
    }

    /// A sink that drops every event (for calling `poll_turn` outside a session).
    pub fn discard() -> Self {
        Self(None)
    }

    /// Reports an event as it arrives.
    pub fn emit(&self, event: Event) {
        if let Some(sender) = &self.0 {
            // The session may be gone (its run dropped): nothing left to tell.
            let _ = sender.send(event);
        }
    }
}

/// What every connection offers.
#[async_trait]
pub trait Connection: Send {
    /// The provider-side session id, when the provider has one.
    fn session_id(&self) -> Option<String>;

    /// Whether `open` reattached to an existing session instead of creating one. A resumed session goes through
    /// [`StreamingConnection::reconnect`] first (a streaming connection) and delivers the prompt only when nothing
    /// is pending.
    fn resumed(&self) -> bool {
        false
    }

    /// The client-held conversation, verbatim, for providers with the transcript capability.
    fn transcript(&self) -> Option<Vec<Value>> {
        None
    }
}

/// A connection whose loop host pushes events while the client posts inputs out of band.
#[async_trait]
pub trait StreamingConnection: Connection {
    /// Posts an input; its events arrive through [`StreamingConnection::next_item`].
    async fn push(&mut self, input: TurnInput) -> Result<(), Error>;

    /// The next stream item. Must be cancel-safe: the session drops this future when something else happens
    /// first, and calls it again later without losing an item. After [`StreamItem::Closed`] or
    /// [`StreamItem::Failed`] it is called again only after a successful [`StreamingConnection::reconnect`].
    async fn next_item(&mut self) -> StreamItem;

    /// Whether `event` (from this stream, or from the history a reconnect recovered) ends a turn: the session
    /// normalises the events gathered since the last boundary and acts on the turn. Required — a stream whose
    /// turns never end would leave every session waiting until its timeout.
    fn is_turn_boundary(&self, event: &Event) -> bool;

    /// The text the handler's synthetic text-delta event should carry for `event`, given what
    /// [`Provider::text_delta`] read from it. The default passes `text` on. A connection whose host sends text
    /// twice — live previews, then the finished message — keeps what it already showed here and returns only the
    /// part not yet shown, so no text reaches the handler twice.
    fn reconcile_text(&mut self, event: &Event, text: Option<String>) -> Option<String> {
        let _ = event;
        text
    }

    /// Re-opens the event stream after a drop (or attaches to a resumed session) and recovers what was missed.
    /// `seen` holds the ids of the most recent events the session has; [`SeenIds::unseen`] picks the history
    /// events it lacks. Required: a loop host that cannot reconnect answers [`Error::Unsupported`], and the
    /// session then fails with what broke the stream.
    async fn reconnect(&mut self, seen: &SeenIds) -> Result<Reconnected, Error>;
}

/// A connection where each turn is one call returning the turn's events.
#[async_trait]
pub trait RequestResponseConnection: Connection {
    /// Sends `input` and returns every event of the turn it caused. Events may also be reported through `live`
    /// as they arrive.
    async fn poll_turn(&mut self, input: TurnInput, live: LiveEvents) -> Result<Vec<Event>, Error>;

    /// Called once when [`Connection::resumed`] is true, before anything is sent: the tool calls the reopened
    /// conversation still waits on (a client-held transcript whose last assistant message has calls without
    /// results, say). The session runs them (answering from the tool ledger what was recorded) before it
    /// delivers the prompt. Default: nothing pending.
    async fn reattach(&mut self) -> Result<Reconnected, Error> {
        Ok(Reconnected::default())
    }
}

/// An open connection, of either mode.
#[non_exhaustive]
pub enum OpenConnection {
    /// A streaming connection.
    Streaming(Box<dyn StreamingConnection>),
    /// A request/response connection.
    RequestResponse(Box<dyn RequestResponseConnection>),
}

impl OpenConnection {
    /// The connection's mode.
    pub fn mode(&self) -> Mode {
        match self {
            Self::Streaming(_) => Mode::Streaming,
            Self::RequestResponse(_) => Mode::RequestResponse,
        }
    }

    /// The mode-independent part of the connection.
    pub fn common(&self) -> &dyn Connection {
        match self {
            Self::Streaming(connection) => connection.as_ref(),
            Self::RequestResponse(connection) => connection.as_ref(),
        }
    }

    /// The mode-independent part of the connection, mutably.
    pub fn common_mut(&mut self) -> &mut dyn Connection {
        match self {
            Self::Streaming(connection) => connection.as_mut(),
            Self::RequestResponse(connection) => connection.as_mut(),
        }
    }
}

/// How a provider's connections exchange turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The loop host pushes events over a long-lived stream.
    Streaming,
    /// Each turn is one request whose response carries the turn's events.
    RequestResponse,
}

/// A loop host.
///
/// Implement it for your own backend and run `managed-agents-conformance` against it. Only [`Provider::name`],
/// [`Provider::open`] and [`Provider::normalize`] are required; a streaming connection must also say where its
/// turns end ([`StreamingConnection::is_turn_boundary`]), which the compiler enforces.
#[async_trait]
pub trait Provider: Send + Sync {
    /// A short stable name (`"claude"`, `"agentcore"`, `"local"` …), used in errors, telemetry and
    /// [`SessionInfo`](crate::SessionInfo).
    fn name(&self) -> &str;

    /// The optional capabilities.
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    /// The wire a run's [`ModelConfig`] credential and destination apply to: by default what
    /// [`Capabilities::data_plane`] says, so the two never disagree.
    fn data_plane(&self) -> DataPlane {
        self.capabilities().data_plane
    }

    /// The wire's model value for a model id (a catalog id `"provider:model_id"` or a bare wire id), or
    /// [`Error::UnsupportedModel`] for an id this provider cannot serve. The session checks a run's model with it
    /// before [`Provider::open`]; provisioning checks an agent's. Default: the id, as given.
    fn native_model(&self, id: &str) -> Result<Value, Error> {
        Ok(Value::String(id.to_string()))
    }

    /// The thread update one raw event stands for, on providers whose sessions run sub-agents in threads. The
    /// session hands it to the handler as a synthetic event and folds it into the result.
    fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
        let _ = event;
        None
    }

    /// Opens a session: creates one, or reattaches when `request.session_id` (or, for client-held providers,
    /// `request.history`) says so. Streaming providers open the event stream here and yield
    /// [`StreamItem::Connected`] once it is up.
    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error>;

    /// Folds one turn's events into a [`TurnResult`] (which carries the events verbatim).
    fn normalize(&self, events: &[Event]) -> TurnResult;

    /// The assistant text one event carries, for the synthetic text-delta event.
    fn text_delta(&self, event: &Event) -> Option<String> {
        let _ = event;
        None
    }

    /// The custom tool calls that the most recent `requires_action` in `events` (a request's events, oldest
    /// first) waits on. Called when a `requires_action` turn resolves to no tool call of its own; the session
    /// skips calls it already answered.
    fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
        let _ = events;
        Vec::new()
    }

    /// What the handles this provider provisions are valid for. The provisioning facade remembers handles under
    /// this scope, so two providers of one kind pointed at different accounts or endpoints — or, for a loop that
    /// keeps its agents in process, two instances — never share entries in a shared store. Default: the name.
    fn provision_scope(&self) -> String {
        self.name().to_string()
    }

    /// Creates (or finds) the provider-side agent for `spec`.
    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        let _ = (spec, environment);
        Err(Error::unsupported("provision", self.name()))
    }

    /// Deletes (or archives) what [`Provider::provision`] created.
    async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
        let _ = handle;
        Err(Error::unsupported("teardown", self.name()))
    }

    /// The text of each user message the loop host holds for session `session_id`, oldest first, reached with
    /// the run's `model_config` (its credential and destination); `None` when the loop host cannot list them
    /// (the default). A host recovering a message whose post may or may not have arrived — its worker died
    /// during the post — reads them to tell, instead of posting the message a second time.
    async fn user_messages(&self, session_id: &str, model_config: &ModelConfig) -> Result<Option<Vec<String>>, Error> {
        let _ = (session_id, model_config);
        Ok(None)
    }

    /// The ids of the loop host's sessions (of agent `agent_id`, when given) whose session tag `key` is `value`
    /// ([`OpenRequest::session_tags`]), newest first, reached with the run's `model_config`; `None` when the loop
    /// host cannot search its sessions (the default). A host finds with it the session a worker created but died
    /// before saving, instead of leaving it behind and creating another.
    async fn find_sessions(
        &self,
        key: &str,
        value: &str,
        agent_id: Option<&str>,
        model_config: &ModelConfig,
    ) -> Result<Option<Vec<String>>, Error> {
        let _ = (key, value, agent_id, model_config);
        Ok(None)
    }
}

macro_rules! forward_provider {
    ($($wrapper:ty),*) => {$(
        #[async_trait]
        impl<P: Provider + ?Sized> Provider for $wrapper {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn capabilities(&self) -> Capabilities {
                (**self).capabilities()
            }
            fn data_plane(&self) -> DataPlane {
                (**self).data_plane()
            }
            fn native_model(&self, id: &str) -> Result<Value, Error> {
                (**self).native_model(id)
            }
            fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
                (**self).thread_update(event)
            }
            async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
                (**self).open(request).await
            }
            fn normalize(&self, events: &[Event]) -> TurnResult {
                (**self).normalize(events)
            }
            fn text_delta(&self, event: &Event) -> Option<String> {
                (**self).text_delta(event)
            }
            fn pending_tool_uses(&self, events: &[Event]) -> Vec<ToolUse> {
                (**self).pending_tool_uses(events)
            }
            fn provision_scope(&self) -> String {
                (**self).provision_scope()
            }
            async fn provision(
                &self,
                spec: &AgentSpec,
                environment: Option<&EnvironmentSpec>,
            ) -> Result<AgentHandle, Error> {
                (**self).provision(spec, environment).await
            }
            async fn teardown(&self, handle: &AgentHandle) -> Result<(), Error> {
                (**self).teardown(handle).await
            }
            async fn user_messages(
                &self,
                session_id: &str,
                model_config: &ModelConfig,
            ) -> Result<Option<Vec<String>>, Error> {
                (**self).user_messages(session_id, model_config).await
            }
            async fn find_sessions(
                &self,
                key: &str,
                value: &str,
                agent_id: Option<&str>,
                model_config: &ModelConfig,
            ) -> Result<Option<Vec<String>>, Error> {
                (**self).find_sessions(key, value, agent_id, model_config).await
            }
        }
    )*};
}

forward_provider!(Arc<P>, Box<P>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_request_debug_hides_option_values() {
        let mut request = OpenRequest::default();
        request.options.insert("api_key".into(), Value::from("sk-very-secret"));
        let printed = format!("{request:?}");
        assert!(printed.contains("api_key") && !printed.contains("sk-very-secret"), "{printed}");
    }
}
