//! A connected MCP server: its session (restarted or reconnected when it is lost), its tool list (refreshed on
//! `notifications/tools/list_changed`), and calls.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use managed_agents_core::tools::DynTool;
use managed_agents_core::{Error, ToolOutput, ToolSchema};
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::watch;

use crate::connect::{self, Listener, Opened, Session};
use crate::error::CallError;
use crate::restart::RestartPolicy;
use crate::tool::McpTool;
use crate::transport::Transport;
use crate::{content, names};

/// Builds an [`McpServer`]. See [`McpServer::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct McpServerBuilder {
    name: String,
    transport: Transport,
    prefix: Option<String>,
    call_timeout: Duration,
    connect_timeout: Duration,
    restart: RestartPolicy,
}

impl McpServerBuilder {
    /// The prefix put before each tool's name (default `<server name>__`; `""` for none). Characters providers
    /// refuse in tool names become `_`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The time limit of one `tools/call` or `tools/list` (default 60 s).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The time limit for starting (or reaching) the server and its handshake (default 30 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How a server that exits or drops the connection is brought back (default [`RestartPolicy::new`]).
    pub fn restart(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// Starts (or reaches) the server and completes the MCP handshake. [`Error::InvalidOption`] for an empty name
    /// or a zero time limit, [`Error::Transport`] when the server cannot be started, reached, or does not
    /// complete the handshake in time.
    pub async fn connect(self) -> Result<McpServer, Error> {
        if self.name.trim().is_empty() {
            return Err(Error::invalid_option("name", "an MCP server needs a name"));
        }
        for (option, value) in [("call_timeout", self.call_timeout), ("connect_timeout", self.connect_timeout)] {
            if value.is_zero() {
                return Err(Error::invalid_option(option, "must be longer than zero"));
            }
        }
        let prefix = self.prefix.unwrap_or_else(|| names::default_prefix(&self.name));
        let (changes, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            name: self.name,
            prefix,
            transport: self.transport,
            call_timeout: self.call_timeout,
            connect_timeout: self.connect_timeout,
            restart: self.restart,
            session: tokio::sync::Mutex::new(None),
            tools: Mutex::new(Vec::new()),
            changes,
            restarts: AtomicU64::new(0),
            pid: AtomicU32::new(0),
        });
        let opened = inner.open().await?;
        inner.keep(&mut *inner.session.lock().await, opened);
        Ok(McpServer { inner })
    }
}

/// A connected MCP server whose tools a [`Toolbox`](managed_agents_core::tools::Toolbox) can call. Cheap to
/// clone; the child process (stdio) or session (HTTP) ends when the server and every tool it gave are dropped.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

impl McpServer {
    /// A server named `name` (the default tool prefix is `<name>__`) reached over `transport`.
    pub fn builder(name: impl Into<String>, transport: impl Into<Transport>) -> McpServerBuilder {
        McpServerBuilder {
            name: name.into(),
            transport: transport.into(),
            prefix: None,
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            restart: RestartPolicy::new(),
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Lists every tool of the server (all pages) as tools for a toolbox, each named `<prefix><tool name>`,
    /// and keeps the list as [`current_tools`](Self::current_tools). [`Error::InvalidSpec`] when two tools
    /// would get the same name; [`Error::Provider`] when the server answers the listing with an error;
    /// [`Error::Transport`] when it cannot be reached.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, Error> {
        self.inner.refresh().await?;
        Ok(self.current_tools())
    }

    /// The tools as last listed: by [`tools`](Self::tools), or after the server announced a change
    /// (`notifications/tools/list_changed`). Empty before the first listing.
    pub fn current_tools(&self) -> Vec<Arc<dyn DynTool>> {
        let listed = self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).clone();
        listed
            .into_iter()
            .map(|(schema, remote)| Arc::new(McpTool::new(self.inner.clone(), schema, remote)) as Arc<dyn DynTool>)
            .collect()
    }

    /// A receiver whose value grows by one each time the tool list is listed anew (by [`tools`](Self::tools) or
    /// after a `notifications/tools/list_changed`); `changed().await` waits for the next one.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The process id of the stdio server last started (it may have exited since); `None` over HTTP.
    pub fn process_id(&self) -> Option<u32> {
        Some(self.inner.pid.load(Ordering::Relaxed)).filter(|pid| *pid != 0)
    }

    /// How many times the server was restarted (stdio) or reconnected (HTTP) after it was lost.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .field("transport", &self.inner.transport)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

/// What the server and its tools share.
pub(crate) struct Inner {
    name: String,
    prefix: String,
    transport: Transport,
    call_timeout: Duration,
    connect_timeout: Duration,
    restart: RestartPolicy,
    /// The live session, `None` once it was found lost.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    /// The last listing: each tool's schema (with its prefixed name) and its name on the server.
    tools: Mutex<Vec<(ToolSchema, String)>>,
    changes: watch::Sender<u64>,
    restarts: AtomicU64,
    /// The process id of the last stdio server started (0 for none).
    pid: AtomicU32,
}

impl Inner {
    /// Opens a session within the connect time limit. The session's listener refreshes the tool list on
    /// `notifications/tools/list_changed`; it holds the server weakly, so the server can still be dropped.
    ///
    /// Boxed as `Send`: the listener's refresh opens sessions itself, and the compiler cannot see through
    /// that cycle otherwise.
    fn open(self: &Arc<Self>) -> Pin<Box<dyn Future<Output = Result<Opened, Error>> + Send + '_>> {
        let weak: Weak<Self> = Arc::downgrade(self);
        let listener = Listener {
            on_tools_changed: Arc::new(move || {
                let weak = weak.clone();
                tokio::spawn(async move {
                    if let Some(inner) = weak.upgrade()
                        && let Err(error) = inner.refresh().await
                    {
                        tracing::warn!(server = %inner.name, %error, "MCP tool list refresh failed");
                    }
                });
            }),
        };
        Box::pin(async move {
            match tokio::time::timeout(self.connect_timeout, connect::open(&self.name, &self.transport, listener)).await
            {
                Ok(result) => result,
                Err(_) => Err(Error::transport(
                    format!(
                        "MCP server `{}` ({}): no handshake within {:?}",
                        self.name,
                        self.transport.describe(),
                        self.connect_timeout
                    ),
                    "timed out",
                )),
            }
        })
    }

    /// The live session, restarting (stdio) or reconnecting (HTTP) a lost one under the restart policy.
    async fn session(self: &Arc<Self>) -> Result<Arc<Session>, Error> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref() {
            if !session.is_closed() && !session.peer().is_transport_closed() {
                return Ok(session.clone());
            }
            *slot = None;
        }
        if self.restart.attempts == 0 {
            return Err(Error::transport(
                format!("MCP server `{}` has stopped and its restart policy is `never`", self.name),
                "server stopped",
            ));
        }
        let mut wait = self.restart.backoff;
        let mut last = None;
        for attempt in 0..self.restart.attempts {
            if attempt > 0 {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(self.restart.max_backoff);
            }
            match self.open().await {
                Ok(opened) => {
                    let session = self.keep(&mut slot, opened);
                    self.restarts.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(server = %self.name, "MCP server restarted");
                    return Ok(session);
                }
                Err(error) => {
                    tracing::warn!(server = %self.name, attempt, %error, "MCP server restart failed");
                    last = Some(error);
                }
            }
        }
        Err(last.unwrap_or_else(|| Error::transport(format!("MCP server `{}` is gone", self.name), "server stopped")))
    }

    /// Makes `opened` the live session.
    fn keep(&self, slot: &mut Option<Arc<Session>>, opened: Opened) -> Arc<Session> {
        let session = Arc::new(opened.session);
        *slot = Some(session.clone());
        self.pid.store(opened.pid.unwrap_or(0), Ordering::Relaxed);
        session
    }

    /// Forgets `lost` so that the next call opens a new session (unless another call already did).
    async fn discard(&self, lost: &Arc<Session>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|current| Arc::ptr_eq(current, lost)) {
            *slot = None;
        }
    }

    /// Lists every page of tools, maps them and keeps the result.
    async fn refresh(self: &Arc<Self>) -> Result<(), Error> {
        let session = self.session().await?;
        let listed = match tokio::time::timeout(self.call_timeout, session.peer().list_all_tools()).await {
            Ok(Ok(listed)) => listed,
            Ok(Err(error)) => {
                if lost(&error) {
                    self.discard(&session).await;
                }
                return Err(match error {
                    ServiceError::McpError(data) => Error::provider(
                        format!("mcp:{}", self.name),
                        Some(data.code.0.to_string()),
                        format!("tools/list: {}", data.message),
                        false,
                    ),
                    other => Error::transport(format!("MCP server `{}`: tools/list failed", self.name), other),
                });
            }
            Err(_) => {
                return Err(Error::transport(
                    format!("MCP server `{}`: tools/list did not answer within {:?}", self.name, self.call_timeout),
                    "timed out",
                ));
            }
        };
        let mut mapped = Vec::with_capacity(listed.len());
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for tool in listed {
            let remote = tool.name.to_string();
            let name = names::tool_name(&self.prefix, &remote);
            if let Some(other) = seen.insert(name.clone(), remote.clone()) {
                return Err(Error::invalid_spec(
                    "tool",
                    format!("MCP server `{}`: tools `{other}` and `{remote}` would both be named `{name}`", self.name),
                ));
            }
            let description = tool.description.map(|text| text.to_string()).or(tool.title).unwrap_or_default();
            let schema = ToolSchema::new(name, description, Value::Object((*tool.input_schema).clone()));
            mapped.push((schema, remote));
        }
        *self.tools.lock().unwrap_or_else(PoisonError::into_inner) = mapped;
        self.changes.send_modify(|generation| *generation += 1);
        Ok(())
    }

    /// Calls the server's tool `remote` with the model's `input`.
    pub(crate) async fn call(self: &Arc<Self>, remote: &str, input: &Value) -> ToolOutput {
        let mut params = CallToolRequestParams::new(remote.to_string());
        match input {
            Value::Object(arguments) => params = params.with_arguments(arguments.clone()),
            Value::Null => {}
            other => return Err(CallError::InvalidInput { tool: remote.to_string(), got: json_kind(other) }.into()),
        }
        let session =
            self.session().await.map_err(|source| CallError::Unavailable { server: self.name.clone(), source })?;
        let (server, tool) = (self.name.clone(), remote.to_string());
        match tokio::time::timeout(self.call_timeout, session.peer().call_tool(params)).await {
            Ok(Ok(result)) => content::tool_output(&result),
            Ok(Err(error)) => {
                if lost(&error) {
                    self.discard(&session).await;
                }
                Err(match error {
                    ServiceError::McpError(data) => {
                        CallError::Refused { server, tool, code: data.code.0, message: data.message.to_string() }
                    }
                    ServiceError::Timeout { timeout } => CallError::TimedOut { server, tool, after: timeout },
                    error if lost(&error) => CallError::ServerStopped { server, tool },
                    other => CallError::Failed { server, tool, message: other.to_string() },
                }
                .into())
            }
            Err(_) => Err(CallError::TimedOut { server, tool, after: self.call_timeout }.into()),
        }
    }
}

/// Whether `error` means the session is gone (the process exited, the connection dropped).
fn lost(error: &ServiceError) -> bool {
    matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_))
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
