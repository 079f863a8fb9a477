//! # managed-agents-core
//!
//! The vocabulary, the [`Provider`] and [`Handler`] traits, and the one session loop of
//! [managed-agents](https://crates.io/crates/managed-agents): run an agent on any loop host (Claude Managed
//! Agents, Bedrock AgentCore, a local OpenAI-compatible loop, or your own provider) while its custom tools run on
//! your machine.
//!
//! * A [`Provider`] opens a [`Connection`] per session and interprets its events.
//! * A [`Handler`] runs the custom tools (concurrently, bounded, results in call order) and observes events.
//! * [`Session::run`] drives one request to its [`SessionResult`]; [`Session::start`] keeps a live session with
//!   follow-up messages and reconnects.
//! * The loop itself is a pure state machine ([`session::machine`]) driven by one async driver.
//!
//! ## Example
//!
//! A session against the in-memory reference provider of `managed-agents-conformance`: the scripted model calls
//! a tool, the handler answers it locally, the model ends its turn.
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//! use managed_agents_core::{Session, SessionOptions, TerminalReason, tool_fn};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! let script = Script::new()
//!     .turn(ScriptTurn::tool_call("call_1", "get_weather", json!({"city": "Oslo"})))
//!     .turn(ScriptTurn::text("It is sunny in Oslo."));
//! let provider = RequestResponseReference::new(script);
//!
//! let handler = tool_fn(|name, input| async move {
//!     match name.as_str() {
//!         "get_weather" => Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))),
//!         other => Err(format!("unknown tool {other}").into()),
//!     }
//! });
//!
//! let result = Session::run(&provider, handler, SessionOptions::new().prompt("Weather in Oslo?")).await?;
//! assert_eq!(result.terminal_reason, TerminalReason::Completed);
//! assert_eq!(result.text, "It is sunny in Oslo.");
//! assert_eq!(result.turns, 2);
//! # Ok(())
//! # }
//! ```
//!
//! ## Delivery guarantees
//!
//! [`SessionResult::events`] holds every event of a request exactly once. The handler's
//! [`Handler::handle_event`] and its tool calls are at-least-once: a reconnect or a recovered `requires_action`
//! may repeat them.
//!
//! ## Telemetry
//!
//! Each session runs in an `invoke_agent` span and each tool call in an `execute_tool` span, with OpenTelemetry
//! GenAI field names (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.conversation.id`,
//! `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.usage.*`, `error.type`). Tool arguments and results are
//! recorded only with [`SessionOptions::record_content`].

mod error;
mod event;
mod handler;
mod info;
mod outcome;
pub mod provider;
mod result;
pub mod session;
mod spec;
mod tool;
mod usage;

pub use error::{BoxError, Error};
pub use event::{Event, TEXT_DELTA_TYPE};
pub use handler::{Handler, NoTools, ToolFn, ToolFnWithInfo, ToolOutput, tool_fn, tool_fn_with_info};
pub use info::SessionInfo;
pub use outcome::{MAX_OUTCOME_ITERATIONS, Outcome};
pub use provider::{
    Capabilities, Connection, DEFAULT_KICKOFF_PROMPT, LiveEvents, Mode, OpenConnection, OpenRequest, Provider,
    Reconnected, RequestResponseConnection, StreamItem, StreamingConnection, TurnInput,
};
pub use result::{SessionResult, Terminal, TerminalReason, TurnResult};
pub use session::{
    GuardContext, GuardDecision, Notification, ReconnectPolicy, Session, SessionHandle, SessionOptions, TurnGuard,
};
pub use spec::{AgentHandle, AgentSpec, EnvironmentHandle, EnvironmentSpec, Networking};
pub use tool::{ToolResult, ToolSchema, ToolUse};
pub use usage::Usage;
#[cfg(feature = "http")]
pub mod http;
