//! A connected MCP server and its builder: the public face of the connection state (`state.rs`) its tools
//! share.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Error;
use managed_agents_core::tools::DynTool;
use tokio::sync::watch;

use crate::names;
use crate::restart::RestartPolicy;
use crate::state::ServerState;
use crate::stderr::StderrLines;
use crate::tool::McpTool;
use crate::transport::Transport;

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
    stderr: Option<StderrLines>,
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

    /// Gives each line a stdio server writes on its standard error to `f` instead of letting the server write
    /// to ours (the default): without its `\n` or `\r\n`, invalid UTF-8 replaced by `U+FFFD`, and a line longer
    /// than 8 KiB cut to its first 8 KiB (the rest of it is dropped). The lines are read on a task of their own
    /// until the stream ends, so the server never waits on `f`; `f` runs on the runtime and should return
    /// quickly. A restarted process keeps the same `f`. Over HTTP it is never called.
    pub fn on_stderr(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr = Some(StderrLines(Arc::new(f)));
        self
    }

    /// Starts (or reaches) the server and completes the MCP handshake. [`Error::InvalidOption`] for an empty name
    /// or a zero time limit, a restart backoff that [`Backoff::validate`](managed_agents_core::Backoff::validate)
    /// refuses (option `restart`), or an [`Http`](crate::Http) URL that is not an absolute `http(s)` URL with a
    /// host (option `url`); [`Error::Connect`] when an HTTP server cannot be reached; [`Error::Transport`] when a
    /// server cannot be started, fails or does not complete the handshake in time. The messages name the server,
    /// its command line or URL (without a query string), and the cause in words.
    pub async fn connect(self) -> Result<McpServer, Error> {
        if self.name.trim().is_empty() {
            return Err(Error::invalid_option("name", "an MCP server needs a name"));
        }
        for (option, value) in [("call_timeout", self.call_timeout), ("connect_timeout", self.connect_timeout)] {
            if value.is_zero() {
                return Err(Error::invalid_option(option, "must be longer than zero"));
            }
        }
        self.restart.backoff.validate().map_err(|error| match error {
            Error::InvalidOption { reason, .. } => Error::invalid_option("restart", reason),
            other => other,
        })?;
        let prefix = self.prefix.unwrap_or_else(|| names::default_prefix(&self.name));
        let state = ServerState::connect(
            self.name,
            prefix,
            self.transport,
            self.call_timeout,
            self.connect_timeout,
            self.restart,
            self.stderr,
        )
        .await?;
        Ok(McpServer { state })
    }
}

/// A connected MCP server whose tools a [`Toolbox`](managed_agents_core::tools::Toolbox) can call. Cheap to
/// clone; the child process (stdio) or session (HTTP) ends when the server and every tool it gave are dropped.
#[derive(Clone)]
pub struct McpServer {
    state: Arc<ServerState>,
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
            stderr: None,
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// Lists every tool of the server (all pages) as tools for a toolbox, each named `<prefix><tool name>`,
    /// and keeps the list as [`current_tools`](Self::current_tools). [`Error::InvalidSpec`] when two tools
    /// would get the same name; [`Error::Provider`] when the server answers the listing with an error;
    /// [`Error::Transport`] when it cannot be reached.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn DynTool>>, Error> {
        self.state.refresh().await?;
        Ok(self.current_tools())
    }

    /// The tools as last listed: by [`tools`](Self::tools), or after the server announced a change
    /// (`notifications/tools/list_changed`). Empty before the first listing.
    pub fn current_tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.state
            .listed()
            .into_iter()
            .map(|(schema, remote)| Arc::new(McpTool::new(Arc::clone(&self.state), schema, remote)) as Arc<dyn DynTool>)
            .collect()
    }

    /// A receiver whose value grows by one each time the tool list is listed anew (by [`tools`](Self::tools) or
    /// after a `notifications/tools/list_changed`); `changed().await` waits for the next one.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.state.listings()
    }

    /// The process id of the stdio server last started (it may have exited since); `None` over HTTP.
    pub fn process_id(&self) -> Option<u32> {
        self.state.process_id()
    }

    /// How many times the server was restarted (stdio) or reconnected (HTTP) after it was lost.
    pub fn restarts(&self) -> u64 {
        self.state.restarts()
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.state.name)
            .field("transport", &self.state.transport)
            .field("prefix", &self.state.prefix)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use managed_agents_core::Backoff;

    use super::*;
    use crate::transport::Stdio;

    async fn refused(builder: McpServerBuilder) -> &'static str {
        match builder.connect().await {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("expected an invalid option, got {other:?}"),
        }
    }

    /// Every setting is checked before anything is started: the command here does not exist.
    #[tokio::test]
    async fn settings_are_checked_before_connecting() {
        let builder = || McpServer::builder("test", Stdio::new("/nonexistent/mcp-server"));
        assert_eq!(refused(McpServer::builder(" ", Stdio::new("/nonexistent"))).await, "name");
        assert_eq!(refused(builder().call_timeout(Duration::ZERO)).await, "call_timeout");
        let nan = Backoff::new(Duration::ZERO, Duration::ZERO).with_jitter(f64::NAN);
        assert_eq!(refused(builder().restart(RestartPolicy::new().with_backoff(nan))).await, "restart");
        let unordered = Backoff::new(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(refused(builder().restart(RestartPolicy::never().with_backoff(unordered))).await, "restart");
        assert!(matches!(builder().connect().await, Err(Error::Transport { .. })));
    }
}
