//! MCP servers as tools: the tools of any [Model Context Protocol](https://modelcontextprotocol.io) server —
//! a child process over stdio, or a server at a URL over streamable HTTP — as tools of a
//! [`Toolbox`](managed_agents_core::tools::Toolbox), so a model on any provider (Claude, AgentCore, Local)
//! calls them and they run on this machine.
//!
//! - [`McpServer::builder`] with a [`Stdio`] command (or [`Stdio::parse`] of a command line) or an [`Http`] URL,
//!   then [`connect`](McpServerBuilder::connect).
//! - [`McpServer::tools`] lists every tool (all pages) and maps each to a tool named `<prefix><tool>` (the
//!   prefix is `<server name>__` unless set; names are made to fit the providers' `^[a-zA-Z0-9_-]{1,64}$`), with
//!   the server's description and input schema as they are.
//! - A call sends `tools/call` with the model's input. Text content is joined, `structuredContent` is given as
//!   JSON text, other content is summarised; `isError: true` becomes an error result with the tool's text, and
//!   protocol errors, time-outs and a server that stops become error results too ([`CallError`]). A server that
//!   exits (stdio) or drops the session (HTTP) is restarted or reconnected for the next call under its
//!   [`RestartPolicy`]: the session goes on.
//! - `notifications/tools/list_changed` refreshes [`McpServer::current_tools`] ([`McpServer::tool_list_changes`]
//!   tells when). A toolbox already built keeps the tools it was given.
//!
//! ```no_run
//! use managed_agents_core::tools::Toolbox;
//! use managed_agents_mcp::{Http, McpServer, Stdio};
//!
//! # async fn run() -> Result<(), managed_agents_core::Error> {
//! let time = McpServer::builder("time", Stdio::new("python3").args(["-m", "mcp_server_time"])).connect().await?;
//! let docs = McpServer::builder("docs", Http::new("https://example.com/mcp").bearer_token("…")).connect().await?;
//!
//! let toolbox = Toolbox::builder().dyn_tools(time.tools().await?).dyn_tools(docs.tools().await?).build()?;
//! // The model sees `time__get_current_time`, `docs__search`, …: give `toolbox.schemas()` to the agent and
//! // `toolbox` to the session as its handler.
//! # let _ = toolbox;
//! # Ok(())
//! # }
//! ```

mod connect;
mod content;
mod error;
mod failure;
mod names;
mod restart;
mod server;
mod state;
mod stderr;
mod tool;
mod transport;

pub use error::CallError;
pub use restart::RestartPolicy;
pub use server::{McpServer, McpServerBuilder};
pub use transport::{Http, Stdio, Transport};
