//! # managed-agents-agentcore
//!
//! Amazon Bedrock AgentCore's harness as a loop host for [managed-agents](https://crates.io/crates/managed-agents),
//! on the official AWS SDK (`aws-sdk-bedrockagentcore`, `aws-config`'s credential chain, rustls with ring — no
//! aws-lc build). Each turn is one `InvokeHarness` call; the event stream is read incrementally with an idle
//! timeout; custom tool calls come back with `stopReason: tool_use` and run locally through your handler; the
//! next call echoes the calls (after the reasoning that led to them) and sends the results.
//!
//! The crate is laid out in the rooms every provider crate of the workspace has:
//!
//! * `provider`: [`BedrockAgentCore`], the request/response provider, made by [`BedrockAgentCore::builder`] (an
//!   SDK client or `SdkConfig`; never reads the environment) or [`BedrockAgentCore::from_env`] (the standard AWS
//!   chain), with the HTTP settings it starts from ([`DEFAULT_HTTP_SETTINGS`]) and AgentCore's runtime session
//!   id rule ([`validate_session_id`] / [`new_session_id`]).
//!   * Resuming: `SessionOptions::session_id` reattaches to a runtime session (the connection reports itself
//!     resumed). The harness keeps no record of the calls it waits on that a client could list, so a new process
//!     answers the calls an earlier run stopped on (an approval, a crash) when it is given them with
//!     `SessionOptions::resume_tool_uses`: the answers echo the calls and go out with the next invocation. With a
//!     reasoning model this needs the earlier response's reasoning blocks, which only the connection that
//!     received them holds, so such calls can be answered only by the session that received them.
//! * [`provision`]: the harness lifecycle on the control plane (`aws-sdk-bedrockagentcorecontrol`):
//!   `Provider::provision` creates (or adopts) the content-addressed harness of an `AgentSpec` and waits until it
//!   and the endpoint its sessions invoke are `READY`, under one wall-clock budget ([`ProvisionSettings`]);
//!   `Provider::teardown` deletes it and waits until it is gone. The handle's `agent_id` is the harness ARN a
//!   session runs on.
//! * `wire` (private): the `InvokeHarness` events and messages on the SDK's types; of it only [`StopReason`] is
//!   public: the harness stop reasons and how each ends a turn.
//! * [`artifacts`]: the session's artifacts ([`SessionStorageArtifacts`]: list, fetch, put, delete by name) as
//!   files in its session storage mount, through runtime commands ([`run_command`]: a shell command in the
//!   session's runtime, stdout/stderr streamed, exit code returned).
//! * `emulator` (feature `emulator`): `emulator::AgentCoreEmulator`, an `InvokeHarness` server on loopback (on
//!   the conformance kit's emulator scaffold) that answers the real SDK client with event-stream frames following
//!   a conformance script (and the harness control plane, with statuses that change over time, and runtime
//!   commands over an in-memory filesystem per session), and `emulator::AgentCoreBackend`.
//!
//! ## Example
//!
//! Against the bundled emulator (the real SDK client over plain HTTP on 127.0.0.1, static test credentials):
//!
//! ```
//! # #[cfg(feature = "emulator")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_agentcore::emulator::AgentCoreEmulator;
//! use managed_agents_conformance::{Script, ScriptTurn};
//! use managed_agents_core::{Session, SessionOptions, tool_fn};
//! use serde_json::json;
//!
//! let emulator = AgentCoreEmulator::start(
//!     Script::new()
//!         .turn(ScriptTurn::tool_call("tooluse_1", "add", json!({"a": 2, "b": 3})))
//!         .turn(ScriptTurn::text("2 + 3 = 5")),
//! )
//! .await
//! .expect("emulator");
//! let provider = emulator.provider_builder().build()?;
//! let handler = tool_fn(|_, input| async move {
//!     Ok((input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)).to_string())
//! });
//! let options = SessionOptions::new().agent_id(emulator.harness_arn()).prompt("2 + 3?");
//! let result = Session::run(&provider, handler, options).await?;
//! assert_eq!(result.text, "2 + 3 = 5");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "emulator"))]
//! # fn main() {}
//! ```

pub mod artifacts;
#[cfg(feature = "emulator")]
pub mod emulator;
mod provider;
pub mod provision;
// Public only to the fuzz targets (`--cfg fuzzing`): the wire is no public API.
#[cfg(not(fuzzing))]
mod wire;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod wire;

pub use artifacts::command::{CommandOutput, OutputStream, run_command};
pub use artifacts::session_storage::SessionStorageArtifacts;
pub use provider::agentcore::BedrockAgentCore;
pub use provider::builder::BedrockAgentCoreBuilder;
pub use provider::session_id::{MAX_SESSION_ID_LEN, MIN_SESSION_ID_LEN, new_session_id, validate_session_id};
pub use provider::settings::DEFAULT_HTTP_SETTINGS;
pub use provision::lifecycle::ProvisionedHarness;
pub use provision::settings::ProvisionSettings;
pub use wire::events::StopReason;
/// The AgentCore wire's schema vocabulary ([`VOCABULARY`]) and the check of a recording's event-stream messages
/// against it ([`check_recording`]): unknown event and exception types, unknown fields and missing required fields,
/// reported, not failed.
pub use wire::vocabulary::{VOCABULARY, check_recording};
