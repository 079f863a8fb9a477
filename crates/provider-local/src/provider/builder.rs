//! [`LocalBuilder`]: every setting of a [`Local`] provider, checked when it builds.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Secret;
use managed_agents_core::http::HttpClient;
use managed_agents_core::recording::Recorder;
use managed_agents_core::{AgentSpec, Error, HttpOptions, HttpSettings, RetryPolicy, ToolSchema, env_var};

use crate::provider::guards::GuardSettings;
use crate::provider::{Local, Settings};
use crate::wire::chat::ChatBackend;
use crate::wire::http::{HttpChat, HttpChatConfig};
use crate::wire::openai_tool;

/// The default API root.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The HTTP settings a [`LocalBuilder`] starts from: a 600 s request timeout, a 300 s idle timeout, the default
/// [`RetryPolicy`] (3 retries, 1 s doubling, with jitter, honouring `retry-after`) and [`HttpOptions::new`].
///
/// The timeouts are long because the server may be a slow local model: a non-streamed completion arrives only
/// once the model is done, which on a laptop-sized GPU (or a CPU) may take minutes, and a streamed one may pause
/// for minutes before its first token while a long prompt is processed. A request that hits the request timeout
/// is not retried (the server may still be generating), so a short one would waste the work.
pub const DEFAULT_HTTP_SETTINGS: HttpSettings = HttpSettings::new(Duration::from_secs(600), Duration::from_secs(300));

/// Builds a [`Local`] provider. Start from [`Local::builder`] (nothing set) or [`Local::from_env`]'s
/// [`LocalBuilder::from_env`] (the environment), set what you need, then [`build`](Self::build), which checks
/// every setting.
#[derive(Clone)]
pub struct LocalBuilder {
    base_url: Option<String>,
    api_key: Option<Secret>,
    model: Option<String>,
    headers: Vec<(String, String)>,
    system_prompt: Option<String>,
    tools: Vec<ToolSchema>,
    stream: bool,
    http: HttpSettings,
    guards: GuardSettings,
    chat: Option<Arc<dyn ChatBackend>>,
    recorder: Option<Recorder>,
    http_client: Option<HttpClient>,
}

impl Default for LocalBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Shows every setting but the values of the key and the extra headers (either may carry a secret).
impl fmt::Debug for LocalBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalBuilder")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("system_prompt", &self.system_prompt.as_ref().map(|prompt| prompt.len()))
            .field("tools", &self.tools.iter().map(|tool| &tool.name).collect::<Vec<_>>())
            .field("stream", &self.stream)
            .field("http", &self.http)
            .field("guards", &self.guards)
            .field("chat_backend", &self.chat.is_some())
            .field("recorder", &self.recorder)
            .field("http_client", &self.http_client)
            .finish()
    }
}

impl Local {
    /// A builder with nothing set. It never reads the environment: what is not set gets its default (base URL
    /// [`DEFAULT_BASE_URL`], no API key, [`DEFAULT_HTTP_SETTINGS`]), and the model must be set.
    pub fn builder() -> LocalBuilder {
        LocalBuilder::new()
    }

    /// A provider configured from the environment: `OPENAI_BASE_URL` (else [`DEFAULT_BASE_URL`]),
    /// `OPENAI_API_KEY` (optional: local servers need none) and `OPENAI_MODEL` (required). The same as
    /// `LocalBuilder::from_env().build()`; start from [`LocalBuilder::from_env`] to add tools or override a value.
    pub fn from_env() -> Result<Local, Error> {
        LocalBuilder::from_env().build()
    }
}

impl LocalBuilder {
    /// A builder with nothing set, like [`Local::builder`]; it never reads the environment.
    pub fn new() -> Self {
        Self {
            base_url: None,
            api_key: None,
            model: None,
            headers: Vec::new(),
            system_prompt: None,
            tools: Vec::new(),
            stream: true,
            http: DEFAULT_HTTP_SETTINGS,
            guards: GuardSettings::default(),
            chat: None,
            recorder: None,
            http_client: None,
        }
    }

    /// A builder holding what the environment sets — `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`
    /// (empty values count as unset) — which later calls may override.
    pub fn from_env() -> Self {
        Self {
            base_url: env_var("OPENAI_BASE_URL"),
            api_key: env_var("OPENAI_API_KEY").map(Secret::new),
            model: env_var("OPENAI_MODEL"),
            ..Self::new()
        }
    }

    /// The API root (default [`DEFAULT_BASE_URL`]): an `http` or `https` URL, e.g. `http://localhost:11434/v1`.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as a bearer token (default: none, which local servers accept).
    #[must_use]
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key));
        self
    }

    /// The model (required).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// An extra header on every request.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The system prompt of fresh sessions.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// A tool the model may call (run by the session's handler).
    #[must_use]
    pub fn tool(mut self, tool: ToolSchema) -> Self {
        self.tools.push(tool);
        self
    }

    /// Takes the system prompt, tools and terminal tool of an agent definition.
    #[must_use]
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
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The limit for a response head (and a whole non-streamed response, which arrives only once the model is
    /// done); default 600 s ([`DEFAULT_HTTP_SETTINGS`]); zero is refused by [`build`](Self::build), a huge value
    /// means no limit. A request that hits it is not retried (the server may still be generating).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.request_timeout(timeout);
        self
    }

    /// The longest silence between streamed chunks; default 300 s ([`DEFAULT_HTTP_SETTINGS`]); zero is refused
    /// by [`build`](Self::build), a huge value means no limit.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.idle_timeout(timeout);
        self
    }

    /// The retry policy (default: 3 retries, 1 s doubling, with jitter, honouring `retry-after`); checked by
    /// [`build`](Self::build) with [`RetryPolicy::validate`].
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.http = self.http.retry(retry);
        self
    }

    /// The HTTP connection settings: connect timeout, idle pool bound, HTTP version, streams per HTTP/2 connection
    /// (default [`HttpOptions::new`]: HTTP/2 where a TLS server offers it, at most 100 idle HTTP/1.1 connections,
    /// 10 s connect timeout; what [`HttpOptions::validate`] refuses is refused by [`build`](Self::build)).
    #[must_use]
    pub fn http_options(mut self, options: HttpOptions) -> Self {
        self.http = self.http.options(options);
        self
    }

    /// All the HTTP settings at once (default [`DEFAULT_HTTP_SETTINGS`]), checked by [`build`](Self::build) with
    /// [`HttpSettings::validate`].
    #[must_use]
    pub fn http_settings(mut self, settings: HttpSettings) -> Self {
        self.http = settings;
        self
    }

    /// The HTTP client the built-in chat client sends through, instead of one built from
    /// [`http_options`](Self::http_options) (whose connection settings then do not apply; the timeouts and retry
    /// policy still do). Share one client between providers to share its connections, or build one that trusts a
    /// private root ([`HttpClient::with_root_certificates`]).
    #[must_use]
    pub fn http_client(mut self, client: HttpClient) -> Self {
        self.http_client = Some(client);
        self
    }

    /// The weak-model guards.
    #[must_use]
    pub fn guards(mut self, guards: GuardSettings) -> Self {
        self.guards = guards;
        self
    }

    /// Puts another client behind the provider instead of the built-in HTTP one.
    #[must_use]
    pub fn chat_backend(mut self, chat: Arc<dyn ChatBackend>) -> Self {
        self.chat = Some(chat);
        self
    }

    /// Records every exchange with the chat endpoint into `recorder` (for replaying the session offline through
    /// [`emulator::replay`](crate::emulator) or `managed-agents replay`); the API key and the extra headers'
    /// values are registered as secrets to redact. Off by default; recording never changes what the session
    /// does. (A [`chat_backend`](Self::chat_backend) of your own is not recorded.)
    #[must_use]
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Builds the provider. It reads nothing from the environment, and every setting is checked here: a missing
    /// or empty model, a zero timeout, an invalid retry policy, base URL or header is an
    /// [`Error::InvalidOption`] naming the setting (`model`, `request_timeout`, `idle_timeout`, `retry`,
    /// `http_options`, `base_url`, `api_key`, `headers`).
    pub fn build(self) -> Result<Local, Error> {
        let model = self.model.filter(|model| !model.trim().is_empty()).ok_or_else(|| {
            Error::invalid_option("model", "no model given (set `model`, or OPENAI_MODEL for `from_env`)")
        })?;
        let http = HttpChatConfig {
            base_url: self.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            api_key: self.api_key,
            headers: self.headers,
            http: self.http,
        };
        // Checked even with a custom chat backend (which takes no run's destination or credential): the
        // settings must still make sense.
        http.validate()?;
        let (chat, builtin): (Arc<dyn ChatBackend>, _) = match self.chat {
            Some(chat) => (chat, None),
            None => {
                let builtin = HttpChat::new(http.clone(), self.recorder, self.http_client)?;
                (Arc::new(builtin.clone()), Some(builtin))
            }
        };
        let settings = Settings {
            http,
            builtin,
            model,
            system_prompt: self.system_prompt,
            tools: self.tools.iter().map(openai_tool).collect(),
            stream: self.stream,
            guards: self.guards,
        };
        Ok(Local { settings: Arc::new(settings), chat, agents: Arc::default(), instance: fastrand::u64(..) })
    }
}
