//! # managed-agents
//!
//! Run an agent's loop on a hosted or local **loop host** while its custom tools run on **your** machine:
//!
//! * Claude Managed Agents (server-side loop over SSE) — feature `claude`;
//! * Amazon Bedrock AgentCore harness (server-side loop over AWS event-stream) — feature `agentcore` (it needs
//!   Rust 1.94.1, as the AWS SDK does; everything else 1.88);
//! * a local in-process loop over any OpenAI-compatible chat endpoint — feature `local`;
//! * or your own provider, built on [`managed-agents-core`](managed_agents_core) and checked with
//!   `managed-agents-conformance`.
//!
//! This crate re-exports the core (the [`Session`] loop, the [`Provider`] and [`Handler`] traits and the
//! vocabulary) and, behind features, the provider crates. Feature `emulator` turns on the bundled emulator of
//! each provider you enabled (a loopback server speaking its wire, for tests and demos); it enables no provider
//! by itself. Feature `store` adds the durable stores (SQLite, `managed-agents-store`; PostgreSQL too with feature
//! `postgres`) for provisioning and for the host; feature `host`
//! the durable session host (`managed-agents-host`: conversations keyed by your id, one driver at a time across
//! processes, tool approvals answered later); feature `mcp` MCP servers as tools (`managed-agents-mcp`). No
//! feature is on by default.
//!
//! ## Example
//!
//! The quickstart (`cargo run -p managed-agents --example quickstart`) runs this against a bundled provider; any
//! provider works the same way, and can be chosen at run time as an `Arc<dyn Provider>`:
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents::{Provider, Session, SessionOptions, tool_fn};
//! # use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents::Error> {
//! # let script = Script::new()
//! #     .turn(ScriptTurn::tool_call("c1", "add", serde_json::json!({"a": 2, "b": 3})))
//! #     .turn(ScriptTurn::text("2 + 3 = 5"));
//! let provider: Arc<dyn Provider> = Arc::new(RequestResponseReference::new(script));
//! let handler = tool_fn(|name, input| async move {
//!     match name.as_str() {
//!         "add" => Ok((input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)).to_string()),
//!         other => Err(format!("unknown tool {other}").into()),
//!     }
//! });
//! let result = Session::run(&*provider, handler, SessionOptions::new().prompt("What is 2 + 3?")).await?;
//! assert_eq!(result.text, "2 + 3 = 5");
//! # Ok(())
//! # }
//! ```

pub use managed_agents_core::*;

/// The Claude Managed Agents provider (feature `claude`).
#[cfg(feature = "claude")]
pub use managed_agents_claude as claude;

/// The Bedrock AgentCore provider (feature `agentcore`).
#[cfg(feature = "agentcore")]
pub use managed_agents_agentcore as agentcore;

/// The local OpenAI-compatible provider (feature `local`).
#[cfg(feature = "local")]
pub use managed_agents_local as local;

/// The durable stores: SQLite shared by several processes (feature `store`), PostgreSQL for several machines
/// (feature `postgres`).
#[cfg(feature = "store")]
pub use managed_agents_store as store;

/// The durable session host: conversations keyed by an external id, leases, tool ledger and approvals (feature
/// `host`).
#[cfg(feature = "host")]
pub use managed_agents_host as host;

/// MCP servers as tools: stdio and streamable-HTTP servers, listed, prefixed and called from any provider's
/// session (feature `mcp`).
#[cfg(feature = "mcp")]
pub use managed_agents_mcp as mcp;
