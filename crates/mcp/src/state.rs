//! The connection state an MCP server and its tools share: the live session (restarted or reconnected when it
//! is lost), the tool list (refreshed on `notifications/tools/list_changed`), and calls.
//!
//! Below both [`McpServer`](crate::McpServer) and its tools: each holds this state, and it knows neither.

use std::collections::BTreeMap;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use managed_agents_core::{Error, ToolOutput, ToolSchema};
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::watch;

use crate::connect::{self, Listener, Opened, Session};
use crate::error::CallError;
use crate::restart::RestartPolicy;
use crate::stderr::StderrLines;
use crate::transport::Transport;
use crate::{content, failure, names};

/// What a server and its tools share: the settings, the live session, the last tool listing.
pub(crate) struct ServerState {
    pub(crate) name: String,
    pub(crate) prefix: String,
    pub(crate) transport: Transport,
    call_timeout: Duration,
    connect_timeout: Duration,
    restart: RestartPolicy,
    /// Where a stdio server's standard error goes (inherited when `None`); the same for each restarted process.
    stderr: Option<StderrLines>,
    /// The live session, `None` once it was found lost.
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    /// The last listing: each tool's schema (with its prefixed name) and its name on the server.
    tools: Mutex<Vec<(ToolSchema, String)>>,
    changes: watch::Sender<u64>,
    restarts: AtomicU64,
    /// The process id of the last stdio server started (0 for none).
    pid: AtomicU32,
}

impl ServerState {
    /// Starts (or reaches) the server named `name` over `transport` and completes the handshake, within
    /// `connect_timeout`.
    pub(crate) async fn connect(
        name: String,
        prefix: String,
        transport: Transport,
        call_timeout: Duration,
        connect_timeout: Duration,
        restart: RestartPolicy,
        stderr: Option<StderrLines>,
    ) -> Result<Arc<Self>, Error> {
        let (changes, _) = watch::channel(0);
        let state = Arc::new(Self {
            name,
            prefix,
            transport,
            call_timeout,
            connect_timeout,
            restart,
            stderr,
            session: tokio::sync::Mutex::new(None),
            tools: Mutex::new(Vec::new()),
            changes,
            restarts: AtomicU64::new(0),
            pid: AtomicU32::new(0),
        });
        let opened = state.open().await?;
        state.keep(&mut *state.session.lock().await, opened);
        Ok(state)
    }

    /// The tools as last listed: each one's schema (with its prefixed name) and its name on the server.
    pub(crate) fn listed(&self) -> Vec<(ToolSchema, String)> {
        self.tools.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A receiver of the listing's generation (one more for each listing).
    pub(crate) fn listings(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The process id of the stdio server last started; `None` over HTTP.
    pub(crate) fn process_id(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::Relaxed)).filter(|pid| *pid != 0)
    }

    /// How many times the server was restarted or reconnected after it was lost.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

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
                    if let Some(state) = weak.upgrade()
                        && let Err(error) = state.refresh().await
                    {
                        tracing::warn!(server = %state.name, %error, "MCP tool list refresh failed");
                    }
                });
            }),
        };
        Box::pin(async move {
            match tokio::time::timeout(
                self.connect_timeout,
                connect::open(&self.name, &self.transport, listener, self.stderr.as_ref()),
            )
            .await
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
        let mut last = None;
        for attempt in 0..self.restart.attempts {
            if attempt > 0 {
                tokio::time::sleep(self.restart.wait(attempt, unit())).await;
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
    pub(crate) async fn refresh(self: &Arc<Self>) -> Result<(), Error> {
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
                    other => Error::transport_message(format!(
                        "MCP server `{}`: tools/list failed: {}",
                        self.name,
                        failure::service_failure(&other)
                    )),
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
                    other => CallError::Failed { server, tool, message: failure::service_failure(&other) },
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

/// A uniform random number in `[0, 1)` for the restart policy's jitter, from the standard library's randomly
/// keyed hasher (this crate needs no random-number crate for it).
fn unit() -> f64 {
    let bits = RandomState::new().hash_one(()) >> 11;
    bits as f64 / (1u64 << 53) as f64
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_units_are_in_range_and_vary() {
        let units: Vec<f64> = (0..1000).map(|_| unit()).collect();
        assert!(units.iter().all(|unit| (0.0..1.0).contains(unit)));
        assert!(units.iter().any(|unit| *unit < 0.5) && units.iter().any(|unit| *unit >= 0.5));
    }
}
