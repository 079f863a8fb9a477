//! Session options and their validation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::interrupter::Interrupter;
use super::retention::EventRetention;
use crate::ReconnectPolicy;
use crate::approval::{DefaultPermission, Permission};
use crate::ledger::ToolLedger;
use crate::{
    AgentHandle, Capabilities, EnvironmentHandle, Error, ModelConfig, OpenRequest, Outcome, Provider, ToolSchema, Usage,
};

/// The default timeout of a synchronous run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The default number of turns one request may take.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// The default number of re-prompts when the terminal tool was not called.
pub const DEFAULT_MAX_REPROMPTS: u32 = 2;
/// The default number of event ids (and answered tool-call ids) a session remembers to drop redeliveries.
pub const DEFAULT_SEEN_WINDOW: usize = 16_384;
/// The default number of tool calls of one turn that run at once.
pub const DEFAULT_TOOL_CONCURRENCY: usize = 8;

/// What the turn guard sees after each turn.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct GuardContext<'a> {
    /// Usage of the current request so far.
    pub usage: &'a Usage,
    /// Turns taken in the current request (including the one just finished).
    pub turns: u32,
    /// The provider-side session id.
    pub session_id: Option<&'a str>,
}

/// The turn guard's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardDecision {
    /// Go on.
    Continue,
    /// Stop the session with this reason ([`Error::Halted`]).
    Halt(String),
}

/// A check run after every turn (before the max-turns check), e.g. to stop at a token budget.
pub type TurnGuard = Arc<dyn Fn(&GuardContext<'_>) -> GuardDecision + Send + Sync>;

/// How a session runs. Build with [`SessionOptions::new`] and the chained setters.
#[derive(Clone)]
pub struct SessionOptions {
    pub(crate) prompt: Option<String>,
    pub(crate) outcome: Option<Outcome>,
    pub(crate) timeout: Duration,
    pub(crate) max_turns: u32,
    pub(crate) max_reprompts: u32,
    pub(crate) terminal_tool: Option<String>,
    pub(crate) turn_guard: Option<TurnGuard>,
    pub(crate) tool_concurrency: usize,
    pub(crate) tool_timeout: Option<Duration>,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) reconnect_runs: bool,
    pub(crate) seen_window: usize,
    pub(crate) retention: EventRetention,
    pub(crate) record_content: bool,
    pub(crate) permission: Arc<dyn Permission>,
    pub(crate) ledger: Option<Arc<dyn ToolLedger>>,
    pub(crate) resume_tool_uses: Vec<crate::ToolUse>,
    pub(crate) agent: Option<AgentHandle>,
    pub(crate) environment: Option<EnvironmentHandle>,
    pub(crate) open: OpenRequest,
    pub(crate) interrupter: Option<Interrupter>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionOptions")
            .field("prompt", &self.prompt.as_ref().map(|_| "<set>"))
            .field("outcome", &self.outcome.is_some())
            .field("timeout", &self.timeout)
            .field("max_turns", &self.max_turns)
            .field("max_reprompts", &self.max_reprompts)
            .field("terminal_tool", &self.terminal_tool)
            .field("turn_guard", &self.turn_guard.is_some())
            .field("tool_concurrency", &self.tool_concurrency)
            .field("tool_timeout", &self.tool_timeout)
            .field("reconnect", &self.reconnect)
            .field("reconnect_runs", &self.reconnect_runs)
            .field("seen_window", &self.seen_window)
            .field("event_retention", &self.retention)
            .field("record_content", &self.record_content)
            .field("tool_ledger", &self.ledger.is_some())
            .field("agent_id", &self.open.agent_id)
            .field("environment_id", &self.open.environment_id)
            .field("session_id", &self.open.session_id)
            .field("interrupter", &self.interrupter.is_some())
            .finish_non_exhaustive()
    }
}

impl SessionOptions {
    /// The defaults: no prompt (`"Begin."` is sent), 600 s timeout, 50 turns, 2 re-prompts, 8 concurrent tools.
    pub fn new() -> Self {
        Self {
            prompt: None,
            outcome: None,
            timeout: DEFAULT_TIMEOUT,
            max_turns: DEFAULT_MAX_TURNS,
            max_reprompts: DEFAULT_MAX_REPROMPTS,
            terminal_tool: None,
            turn_guard: None,
            tool_concurrency: DEFAULT_TOOL_CONCURRENCY,
            tool_timeout: None,
            reconnect: ReconnectPolicy::default(),
            reconnect_runs: true,
            seen_window: DEFAULT_SEEN_WINDOW,
            retention: EventRetention::All,
            record_content: false,
            permission: Arc::new(DefaultPermission),
            ledger: None,
            resume_tool_uses: Vec::new(),
            agent: None,
            environment: None,
            open: OpenRequest::default(),
            interrupter: None,
        }
    }

    /// The first user message (or, when resuming, the message delivered once nothing is pending).
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Kicks off with an outcome instead of the prompt (providers with the outcome capability).
    pub fn outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = Some(outcome);
        self
    }

    /// How long a synchronous [`Session::run`](crate::Session::run) may take (default 600 s). Any length is
    /// accepted: `Duration::MAX` means no limit in practice (a deadline past what the clock can represent is
    /// treated as none).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many turns one request may take (default 50; at least 1). A turn that ends the request completes it
    /// at the limit; one that needs another (tool calls whose results would go back) stops the request with
    /// [`Error::MaxTurnsExceeded`](crate::Error::MaxTurnsExceeded) before its calls run.
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// How many times the model is re-prompted to call the terminal tool (default 2).
    pub fn max_reprompts(mut self, max_reprompts: u32) -> Self {
        self.max_reprompts = max_reprompts;
        self
    }

    /// A custom tool the model must call before an `end_turn` counts as complete.
    pub fn terminal_tool(mut self, name: impl Into<String>) -> Self {
        self.terminal_tool = Some(name.into());
        self
    }

    /// A check run after every turn.
    pub fn turn_guard<F>(mut self, guard: F) -> Self
    where
        F: Fn(&GuardContext<'_>) -> GuardDecision + Send + Sync + 'static,
    {
        self.turn_guard = Some(Arc::new(guard));
        self
    }

    /// How many tool calls of one turn run at once (default 8, per session; at least 1).
    pub fn tool_concurrency(mut self, limit: usize) -> Self {
        self.tool_concurrency = limit;
        self
    }

    /// A time limit per tool call; a call that exceeds it gets an error result (default: none).
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// How the session reconnects after its stream drops (live sessions, and synchronous runs unless
    /// [`SessionOptions::reconnect_runs`] is off). Checked by [`SessionOptions::validate`].
    pub fn reconnect_policy(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// Whether a synchronous [`Session::run`](crate::Session::run) reconnects when its event stream drops
    /// (default: yes, under the [`ReconnectPolicy`] and within the run's timeout). The server-side session lives
    /// on; a reconnect recovers missed events and re-runs only tool calls the host still waits on, so each tool
    /// result is still posted once. Off: a dropped stream fails the run. Live sessions always reconnect.
    pub fn reconnect_runs(mut self, reconnect: bool) -> Self {
        self.reconnect_runs = reconnect;
        self
    }

    /// How many event ids (and answered tool-call ids) the session remembers to drop redelivered events and
    /// stale tool requests (default [`DEFAULT_SEEN_WINDOW`]; at least 1). Memory stays flat however long a live
    /// session runs: the oldest ids are forgotten first. A redelivery older than the window is no longer
    /// recognised, so keep it larger than the events a provider may replay after a reconnect beyond the last
    /// one the session saw.
    pub fn seen_window(mut self, ids: usize) -> Self {
        self.seen_window = ids;
        self
    }

    /// How many of a request's events the session keeps for [`SessionResult::events`](crate::SessionResult::events)
    /// (default [`EventRetention::All`]). A long live request keeps flat memory with
    /// [`EventRetention::Last`] or [`EventRetention::None`]; the handler sees every event either way.
    pub fn event_retention(mut self, retention: EventRetention) -> Self {
        self.retention = retention;
        self
    }

    /// Records tool arguments and results in the `execute_tool` spans (off by default: content may be private).
    pub fn record_content(mut self, record: bool) -> Self {
        self.record_content = record;
        self
    }

    /// Interrupts the session's turn whenever `interrupter` is pressed ([`Interrupter::interrupt`]), in a
    /// synchronous run as in a live session; see [`Interrupter`] for what a press does on each kind of provider,
    /// and when one is dropped. Default: none.
    pub fn interrupter(mut self, interrupter: Interrupter) -> Self {
        self.interrupter = Some(interrupter);
        self
    }

    /// The permission hook asked before each tool call runs (custom tools) or is confirmed (host-side tools
    /// that ask first). Default: [`DefaultPermission`] — custom tools run, confirmations wait for a person. See
    /// [`approval`](crate::approval).
    pub fn permission(mut self, permission: impl Permission) -> Self {
        self.permission = Arc::new(permission);
        self
    }

    /// Records each tool call's answer before it is posted, and answers a call that comes back from the record
    /// instead of running it again (default: no ledger). See [`ledger`](crate::ledger).
    pub fn tool_ledger(mut self, ledger: impl ToolLedger) -> Self {
        self.ledger = Some(Arc::new(ledger));
        self
    }

    /// Tool calls a resumed session still waits on, as the caller knows them (a host that stored them when a run
    /// stopped for approval, say). When the session reattaches ([`SessionOptions::session_id`] or
    /// [`SessionOptions::history`]), they are answered first — with whatever the provider recovers itself, each id
    /// once — and the prompt follows. Ignored by a session that does not resume.
    pub fn resume_tool_uses(mut self, tool_uses: Vec<crate::ToolUse>) -> Self {
        self.resume_tool_uses = tool_uses;
        self
    }

    /// The agent to run.
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.open.agent_id = Some(agent_id.into());
        self
    }

    /// The environment to run the agent in.
    pub fn environment_id(mut self, environment_id: impl Into<String>) -> Self {
        self.open.environment_id = Some(environment_id.into());
        self
    }

    /// A provisioned agent: its ids are used unless explicit ids are set (explicit ids win).
    pub fn agent(mut self, handle: AgentHandle) -> Self {
        self.agent = Some(handle);
        self
    }

    /// A provisioned environment: its id is used unless an explicit id is set.
    pub fn environment(mut self, handle: EnvironmentHandle) -> Self {
        self.environment = Some(handle);
        self
    }

    /// Reattaches to an existing session instead of creating one.
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.open.session_id = Some(session_id.into());
        self
    }

    /// Continues a client-held conversation (a previous [`SessionResult::transcript`](crate::SessionResult)).
    pub fn history(mut self, history: Vec<Value>) -> Self {
        self.open.history = history;
        self
    }

    /// The model for this run (providers with the runtime-model capability): a catalog id
    /// (`"anthropic:claude-sonnet-4-6"`) or a bare wire id. Shorthand for the model of
    /// [`SessionOptions::model_config`].
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.open.model_config.model = Some(model.into());
        self
    }

    /// The run's model configuration: model, and — on providers with a [`DataPlane`](crate::DataPlane) — the
    /// credential and destination this run's requests use instead of the provider's own (other sessions are not
    /// affected). A credential on a provider without a data plane fails before anything is sent.
    pub fn model_config(mut self, config: ModelConfig) -> Self {
        self.open.model_config = config;
        self
    }

    /// The run's system prompt, replacing the agent's (providers with the runtime-overrides capability).
    pub fn system_prompt(mut self, system: impl Into<String>) -> Self {
        self.open.system = Some(system.into());
        self
    }

    /// The run's custom tools, replacing the agent's (providers with the runtime-overrides capability). The
    /// handler must answer them.
    pub fn tools(mut self, tools: Vec<ToolSchema>) -> Self {
        self.open.tools = Some(tools);
        self
    }

    /// Streams the assistant's text as it is generated, as synthetic text-delta events, on hosts that send it
    /// only on request (Claude's live previews); [`SessionResult::text`](crate::SessionResult::text) still
    /// holds only finished messages, and no text reaches the handler twice. Off by default; hosts that always
    /// stream (Local, AgentCore) stream either way.
    pub fn live_text(mut self, live: bool) -> Self {
        self.open.live_text = live;
        self
    }

    /// The run's model configuration so far.
    pub fn model_config_ref(&self) -> &ModelConfig {
        &self.open.model_config
    }

    /// Metadata handed to handlers in [`SessionInfo`](crate::SessionInfo) and to the provider.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.open.metadata.insert(key.into(), value.into());
        self
    }

    /// A tag for the session this run creates on the loop host, not handed to handlers (see
    /// [`OpenRequest::session_tags`](crate::OpenRequest::session_tags)).
    pub fn session_tag(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.open.session_tags.insert(key.into(), value.into());
        self
    }

    /// A provider-specific option, passed through to [`Provider::open`](crate::Provider::open).
    pub fn provider_option(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.open.options.insert(key.into(), value.into());
        self
    }

    /// The metadata set so far.
    pub fn metadata_map(&self) -> &Map<String, Value> {
        &self.open.metadata
    }

    /// Checks every option against the provider's capabilities, before anything is opened.
    pub fn validate(&self, provider: &str, capabilities: Capabilities) -> Result<(), Error> {
        if self.max_turns == 0 {
            return Err(Error::invalid_option("max_turns", "must be at least 1"));
        }
        if self.seen_window == 0 {
            return Err(Error::invalid_option("seen_window", "must be at least 1"));
        }
        if self.tool_concurrency == 0 {
            return Err(Error::invalid_option("tool_concurrency", "must be at least 1"));
        }
        if self.timeout.is_zero() {
            return Err(Error::invalid_option("timeout", "must be longer than zero"));
        }
        if self.tool_timeout.is_some_and(|t| t.is_zero()) {
            return Err(Error::invalid_option("tool_timeout", "must be longer than zero"));
        }
        self.reconnect.validate()?;
        if let Some(name) = &self.terminal_tool
            && name.trim().is_empty()
        {
            return Err(Error::invalid_option("terminal_tool", "a terminal tool must be named"));
        }
        if let Some(outcome) = &self.outcome {
            outcome.validate()?;
            if !capabilities.outcomes {
                return Err(Error::outcome_unsupported(provider));
            }
        }
        if self.open.model_config.model.is_some() && !capabilities.runtime_model {
            return Err(Error::invalid_option(
                "model",
                format!("provider `{provider}` cannot choose the model per run"),
            ));
        }
        self.open.model_config.validate(provider, capabilities.data_plane)?;
        for (option, set) in [("system_prompt", self.open.system.is_some()), ("tools", self.open.tools.is_some())] {
            if set && !capabilities.runtime_overrides {
                return Err(Error::invalid_option(
                    option,
                    format!("provider `{provider}` cannot override the agent's {option} per run"),
                ));
            }
        }
        if let Some(tools) = &self.open.tools {
            crate::tool::check_tools(tools).map_err(|reason| Error::invalid_option("tools", reason))?;
        }
        Ok(())
    }

    /// Checks every option against `provider` itself, before anything is opened: [`SessionOptions::validate`]
    /// with its capabilities and data plane, and the run's model through
    /// [`Provider::native_model`](crate::Provider::native_model) (a catalog the provider cannot serve is
    /// [`Error::UnsupportedModel`]).
    pub fn check<P: Provider + ?Sized>(&self, provider: &P) -> Result<(), Error> {
        let capabilities = provider.capabilities().with_data_plane(provider.data_plane());
        self.validate(provider.name(), capabilities)?;
        if let Some(model) = &self.open.model_config.model {
            provider.native_model(model)?;
        }
        Ok(())
    }

    /// The open request, with handle ids lifted in where no explicit id was given.
    pub(crate) fn open_request(&self) -> OpenRequest {
        let mut request = self.open.clone();
        request.max_turns = Some(self.max_turns);
        if let Some(agent) = &self.agent {
            request.agent_id.get_or_insert_with(|| agent.agent_id.clone());
            if let Some(environment_id) = &agent.environment_id {
                request.environment_id.get_or_insert_with(|| environment_id.clone());
            }
        }
        if let Some(environment) = &self.environment {
            request.environment_id.get_or_insert_with(|| environment.environment_id.clone());
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_options_name_the_option() {
        let caps = Capabilities::none();
        let err = SessionOptions::new().max_turns(0).validate("p", caps).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { option: "max_turns", .. }));
        let err = SessionOptions::new().terminal_tool(" ").validate("p", caps).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { option: "terminal_tool", .. }));
        let bad = Outcome { description: String::new(), rubric: "r".into(), max_iterations: None };
        let err = SessionOptions::new().outcome(bad).validate("p", caps.with_outcomes()).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { option: "outcome", .. }));
        let good = Outcome::new("d", "r").unwrap();
        let err = SessionOptions::new().outcome(good.clone()).validate("p", caps).unwrap_err();
        assert!(matches!(err, Error::OutcomeUnsupported { .. }));
        SessionOptions::new().outcome(good).validate("p", caps.with_outcomes()).unwrap();
        let err = SessionOptions::new().tool_concurrency(0).validate("p", caps).unwrap_err();
        assert!(matches!(err, Error::InvalidOption { option: "tool_concurrency", .. }));
    }

    #[test]
    fn handle_ids_are_lifted_but_explicit_ids_win() {
        let handle = AgentHandle { agent_id: "agent_h".into(), environment_id: Some("env_h".into()) };
        let lifted = SessionOptions::new().agent(handle.clone()).open_request();
        assert_eq!(lifted.agent_id.as_deref(), Some("agent_h"));
        assert_eq!(lifted.environment_id.as_deref(), Some("env_h"));
        let explicit = SessionOptions::new()
            .agent(handle)
            .agent_id("agent_x")
            .environment(EnvironmentHandle { environment_id: "env_e".into() })
            .open_request();
        assert_eq!(explicit.agent_id.as_deref(), Some("agent_x"));
        assert_eq!(explicit.environment_id.as_deref(), Some("env_h"));
    }
}
