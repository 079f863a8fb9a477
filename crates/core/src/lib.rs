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
//! * The loop itself is a pure state machine (internal; `docs/session-machine.md` tables its phases) driven by
//!   one async driver.
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
//! ## Provisioning
//!
//! [`provision::provision`] creates the loop host's side of an [`AgentSpec`] once and reuses it: definitions
//! are identified by a digest of their content, providers name resources `<name>_<digest8>`, and a
//! [`provision::ProvisionStore`] remembers the handles (in memory here; SQLite in `managed-agents-store`).
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//! use managed_agents_core::provision::{MemoryStore, provision, teardown};
//! use managed_agents_core::{AgentSpec, NoTools, Session, SessionOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! let provider = RequestResponseReference::new(Script::new().turn(ScriptTurn::text("Hello.")));
//! let store = MemoryStore::new();
//! let spec = AgentSpec::new("greeter", "Greet the user.");
//! let handle = provision(&provider, &store, &spec, None).await?;
//! assert_eq!(provision(&provider, &store, &spec, None).await?, handle, "reused, not created again");
//! let result = Session::run(&provider, NoTools, SessionOptions::new().agent(handle.clone())).await?;
//! assert_eq!(result.text, "Hello.");
//! teardown(&provider, &store, &handle).await?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Approvals and the tool ledger
//!
//! A [`approval::Permission`] hook decides for each tool call whether it runs: allow, deny (the model gets the
//! reason), or defer to a person, who answers through the [`SessionHandle`]. A [`ledger::ToolLedger`] records
//! each call's answer before it is posted, so a call that comes back (a reconnect, a recovered `requires_action`,
//! a restart) is answered from the record instead of running again. `managed-agents-host` keeps both durable, per
//! conversation ([`conversation::SessionStore`]).
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, reference::StreamingReference};
//! use managed_agents_core::approval::{Decision, permission_fn};
//! use managed_agents_core::ledger::MemoryLedger;
//! use managed_agents_core::{Notification, Session, SessionOptions, tool_fn};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! let script = Script::new()
//!     .turn(ScriptTurn::tool_call("call_1", "send_invoice", json!({"to": "ada@example.com"})))
//!     .turn(ScriptTurn::text("Invoice sent."));
//! let provider = Arc::new(StreamingReference::new(script));
//! let handler = tool_fn(|_, input| async move { Ok(format!("sent to {}", input["to"])) });
//! let ask_first = permission_fn(|request| async move {
//!     if request.tool_use.name == "send_invoice" { Decision::Defer } else { Decision::Allow }
//! });
//! let options = SessionOptions::new().permission(ask_first).tool_ledger(MemoryLedger::new());
//! let mut session = Session::start(provider, handler, options).await?;
//! while let Some(notification) = session.next_notification().await {
//!     match notification {
//!         Notification::ApprovalRequested(request) => session.approve(request.tool_use.id).await?,
//!         Notification::Finished(result) => {
//!             assert_eq!(result.text, "Invoice sent.");
//!             break;
//!         }
//!         other => println!("{other:?}"),
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! ## A run's model, credential and destination
//!
//! [`SessionOptions::model_config`] chooses, per run, the model (a catalog id such as
//! `"anthropic:claude-sonnet-4-6"`, or a bare wire id) and — on providers with a [`DataPlane`] — the credential and
//! base URL this run's requests use; the provider's own settings and every other session stay as they are. The
//! whole configuration is checked against the provider before anything is sent ([`SessionOptions::check`]): a
//! catalog the provider cannot serve is [`Error::UnsupportedModel`], a credential on a provider without a data
//! plane [`Error::DataPlaneUnsupported`]. The credential is a [`Secret`]: it never prints and is never
//! serialized.
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//! use managed_agents_core::{Error, ModelConfig, NoTools, Session, SessionOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! let provider = RequestResponseReference::new(Script::new().turn(ScriptTurn::text("Hello.")));
//! let refused = SessionOptions::new().model("openai:gpt-4.1");
//! let error = Session::run(&provider, NoTools, refused).await.unwrap_err();
//! assert!(matches!(error, Error::UnsupportedModel { .. }));
//! let keyed = SessionOptions::new().model_config(ModelConfig::new().credential("sk-run-key"));
//! let error = Session::run(&provider, NoTools, keyed).await.unwrap_err();
//! assert!(matches!(error, Error::DataPlaneUnsupported { setting: "credential", .. }));
//! let result = Session::run(&provider, NoTools, SessionOptions::new().model("reference:small")).await?;
//! assert_eq!(result.text, "Hello.");
//! # Ok(())
//! # }
//! ```
//!
//! ## Delivery guarantees
//!
//! [`SessionResult::events`] holds every event of a request exactly once, in both modes: an event whose id the
//! session has seen (a redelivery, a replayed history, a host repeating itself) is recorded, forwarded and
//! interpreted once; events without an id are taken as they come. What the session remembers for this is a
//! window of recent ids ([`SessionOptions::seen_window`]), so its memory stays flat however long it lives. The
//! handler's [`Handler::handle_event`] and its tool calls are at-least-once: a reconnect or a recovered
//! `requires_action` may repeat them.
//!
//! ## Features
//!
//! Without features the crate has no HTTP stack: third-party providers that bring their own pay nothing.
//!
//! * `http` — the pieces the Claude and Local providers share, for your provider too: a hyper 1 client on rustls
//!   with retries that honour `retry-after` ([`http::HttpClient`], [`RetryPolicy`]), an incremental SSE decoder
//!   ([`http::SseDecoder`]), response bodies read with an idle timeout ([`http::SseBody`], [`http::read_body`]),
//!   and request sending with retries.
//! * `http-server` — a small HTTP/1 server on loopback (`http::server`) for emulators of a wire, as each provider's
//!   `emulator` feature uses.
//!
//! ## Errors print safely
//!
//! [`Error`]'s `Display` and `Debug` are bounded and keep content out (tool inputs and outputs, model output, raw
//! frames): printing `{err:?}` or returning it from `main` shows counts and lengths, never what a tool fetched.
//!
//! ## Telemetry
//!
//! Each session runs in an `invoke_agent` span and each tool call in an `execute_tool` span, with OpenTelemetry
//! GenAI field names (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.conversation.id`,
//! `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.usage.*`, `error.type`). Tool arguments and results are
//! recorded only with [`SessionOptions::record_content`].

pub mod approval;
pub mod artifacts;
mod backoff;
pub mod conversation;
mod diagnostic;
mod error;
mod event;
mod handler;
mod http_settings;
pub mod inbox;
mod info;
pub mod journal;
pub mod ledger;
mod model;
mod outcome;
mod provider;
pub mod provision;
pub mod recording;
mod result;
mod secret;
mod seen;
mod session;
mod spec;
mod thread;
mod tool;
pub mod tools;
mod usage;

/// The attribute for implementing [`Provider`], [`Connection`] (and its two kinds) and [`Handler`] with `async fn`s
/// (re-exported from the `async-trait` crate, so providers and handlers need no dependency of their own).
pub use async_trait::async_trait;
pub use backoff::{Backoff, RetryPolicy};
pub use diagnostic::{cause_in_words, redacted_url};
pub use error::{
    BoxError, Error, ErrorText, MAX_DISPLAYED_BODY_BYTES, MAX_ERROR_BODY_BYTES, MAX_MALFORMED_RAW_BYTES, RawInput,
};
pub use event::{Event, TEXT_DELTA_TYPE};
pub use handler::{Handler, NoTools, ToolFn, ToolFnWithInfo, ToolOutput, tool_fn, tool_fn_with_info};
pub use http_settings::{HttpOptions, HttpSettings, HttpVersion, env_var};
pub use info::SessionInfo;
pub use model::{DataPlane, ModelConfig, split_catalog_id};
pub use outcome::{MAX_OUTCOME_ITERATIONS, Outcome};
pub use provider::{
    Capabilities, Connection, DEFAULT_KICKOFF_PROMPT, LiveEvents, Mode, OpenConnection, OpenRequest, Provider,
    Reconnected, RequestResponseConnection, StreamItem, StreamingConnection, TurnInput,
};
pub use result::{SessionResult, Terminal, TerminalReason, TurnResult};
/// The `schemars` crate, whose `JsonSchema` derive gives a typed [`tools::Tool`] its input schema.
pub use schemars;
pub use secret::Secret;
pub use seen::SeenIds;
pub use session::{
    DEFAULT_MAX_REPROMPTS, DEFAULT_MAX_TURNS, DEFAULT_SEEN_WINDOW, DEFAULT_TIMEOUT, DEFAULT_TOOL_CONCURRENCY,
    EventRetention, GuardContext, GuardDecision, Interrupter, Notification, ReconnectPolicy, Session, SessionHandle,
    SessionOptions, TurnGuard,
};
pub use spec::{AgentHandle, AgentSpec, EnvironmentHandle, EnvironmentSpec, Networking, Runtime};
pub use thread::{MessageDirection, THREAD_UPDATE_TYPE, Thread, ThreadMessage, ThreadStatus, ThreadUpdate};
pub use tool::{HostPermission, ToolKind, ToolResult, ToolSchema, ToolUse};
pub use usage::Usage;
#[cfg(feature = "http")]
pub mod http;

/// Internals reachable only from the fuzz targets in `fuzz/` (built with `--cfg fuzzing`, as `cargo fuzz` does).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    #[cfg(feature = "http")]
    pub use crate::http::fuzzing::watch_frames;
    pub use crate::session::fuzzing::{machine, retention};
}
