//! # managed-agents-claude
//!
//! Anthropic's Claude Managed Agents as a loop host for [managed-agents](https://crates.io/crates/managed-agents):
//! the agent loop runs on Anthropic's side, custom tool calls come back over the session's SSE event stream,
//! and your handler answers them locally.
//!
//! * [`ClaudeManagedAgents`]: the streaming provider (kickoff or outcome, tool results, interrupt, reconnect
//!   that consolidates from the server's history and re-runs unanswered calls, reattach by session id).
//! * Tool confirmations: a built-in or MCP tool whose permission policy is `always_ask` announces its call with
//!   `evaluated_permission: "ask"` and blocks the session until the client answers. The provider hands such
//!   calls to the session as [`ToolKind::Confirmation`](managed_agents_core::ToolKind) tool uses (in
//!   `custom_tool_uses`; they stay in `server_tool_uses` too), the session's permission hook decides
//!   (`SessionOptions::permission`: allow, deny with a reason, or defer to a person — the default defers them),
//!   and the answers go back as `user.tool_confirmation` events, in the same post as the turn's custom tool
//!   results. A reconnect (or a reattach by session id) finds calls still waiting for a confirmation in the
//!   history, like unanswered custom calls.
//! * Multi-agent sessions: a coordinator's roster ([`provision::Multiagent`]) is part of the agent definition
//!   ([`provision::ClaudeAgent`], provisioned by [`ClaudeProvisioner::ensure_claude_agent`]). The threads' events
//!   on the session stream (created, statuses, the messages between threads) stay raw events and also become
//!   thread updates (`Provider::thread_update`): handlers get them as synthetic events and the result folds them
//!   into `SessionResult::threads` and `thread_messages`. A sub-agent's custom tool calls and confirmations,
//!   cross-posted to the session stream, reach the session like the primary's (same handler, approvals and
//!   ledger) with `ToolUse::thread_id` set, and their answers name the thread (`session_thread_id`);
//!   `SessionHandle::interrupt_thread` stops one thread. Only the session's own idle ends a turn.
//! * A run's model configuration (`SessionOptions::model_config`, `model`, `system_prompt`, `tools`): the model
//!   (an `anthropic:` catalog id or a bare one; any other catalog is `Error::UnsupportedModel`, in provisioning
//!   too), system prompt and custom tools reach the new session as `agent_with_overrides` (the agent's toolsets
//!   stay); a run's credential and destination carry every request of its session
//!   ([`ClaudeManagedAgents::run_client`]; the data plane is `DataPlane::ManagedAgentsApi`).
//! * Live text (`SessionOptions::live_text`): the stream asks for previews (`event_deltas[]=agent.message`),
//!   which reach the handler as text deltas while the model writes; the buffered message then adds only the rest.
//! * Permissions and resources: the host's verdict on a built-in or MCP call (`evaluated_permission`, and the
//!   `auto` policy's reason code) is `ToolUse::host_permission`, seen by the permission hook; a new session's
//!   [`SessionResource`]s (files, memory stores) and [`VAULT_IDS`] are provider options.
//! * [`ClaudeManagedAgents::builder`] / [`ClaudeManagedAgents::from_env`]: configuration, one builder
//!   ([`ClaudeManagedAgentsBuilder`]). `builder()` never reads the environment; `from_env` reads
//!   `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`. Knobs: `api_key`, `base_url`, `anthropic_version`, `beta`,
//!   `files_beta`, the HTTP settings (`request_timeout`, `idle_timeout`, `retry`, `http_options`, or
//!   `http_settings` at once, from [`DEFAULT_HTTP_SETTINGS`]) and `provision_store`; invalid values fail `build()`
//!   with a typed error.
//! * [`ClaudeClient`] ([`ClaudeManagedAgents::client`]): the HTTP API — agents, environments, sessions, events
//!   (send, list with paging, stream), session resources, files, a multi-agent session's threads (list,
//!   retrieve, archive, each thread's history and its live [`ThreadStream`]); every `list_all_*` follows all
//!   pages. Retries honour `retry-after`; posting events is never blindly repeated.
//! * [`provision`]: agents and environments as content-addressed images ([`ClaudeProvisioner`]: ensure with
//!   `409` adoption, tag / resolve, prune), which [`ClaudeManagedAgents`]'s `Provider::provision` uses.
//! * [`artifacts`]: a session's files by name ([`ClaudeArtifacts`], also [`ClaudeManagedAgents::artifacts`]):
//!   what the agent wrote under [`artifacts::OUTPUTS_DIR`] and what you put, mounted under
//!   [`artifacts::INPUTS_DIR`].
//! * [`SpendLimit`] / [`SpendLimitReached`]: a session's spend limit (the wire's `budget`) and the report of
//!   reaching it.
//! * Self-hosted environments (`worker` feature): `environment::EnvironmentWorker` long-polls an environment's
//!   work queue with its key, serves each claimed session's tool calls on your machine — the built-in toolset
//!   (`bash`, `read`, `write`, `edit`, `glob`, `grep`, from `managed-agents-toolset`, confined to a working
//!   directory) and any custom tools of its own — through the same session loop, permission hook and ledger, while
//!   heartbeating the item's lease; it downloads the agent's skills first, lets an item go once its session stays
//!   idle, and drains on shutdown. The work queue itself is on [`ClaudeClient`] (`poll_work`, `ack_work`,
//!   `heartbeat_work`, `get_work`, `update_work`, `list_work`, `work_stats`, `stop_work`, with
//!   [`ClaudeClient::with_environment_key`]); [`provision::self_hosted`] makes an environment definition
//!   self-hosted. An application driving such a session leaves the built-in calls to the worker
//!   (`TurnResult::awaited_elsewhere`) and keeps waiting while it runs them.
//! * `emulator` feature: [`emulator::ClaudeEmulator`], a Managed Agents server on loopback that plays a
//!   conformance script with faults — host-side tool calls included, asking for confirmation as the agent's
//!   permission policies say, and self-hosted environments' work queues — and [`emulator::ClaudeBackend`] to run
//!   the conformance suite.
//!
//! ## The crate's rooms
//!
//! The same rooms as every provider crate of managed-agents:
//!
//! | module | what it holds |
//! |---|---|
//! | `provider` | [`ClaudeManagedAgents`] and its `Provider` impl, [`ClaudeManagedAgentsBuilder`] (with [`DEFAULT_HTTP_SETTINGS`]), a session's streaming connection, a run's own client, the create-session body, [`SessionResource`], [`SpendLimit`] |
//! | [`provision`] | [`ClaudeProvisioner`] (content-addressed agents and environments), what it hands out and reports, the create bodies, the runtimes' [`Bootstrap`](provision::Bootstrap) |
//! | `wire` (private) | the Managed Agents wire: [`ClaudeClient`] and [`ClaudeConfig`] (the HTTP API, its files endpoints), the event vocabulary and how a turn's events fold, the event stream's SSE decoding, the API's timestamps, the model value, agent overrides, permission verdicts, live previews |
//! | [`artifacts`] | [`ClaudeArtifacts`]: a session's files by name |
//! | `environment` | feature `worker`: the self-hosted environment worker (the queue's items, their leases, serving a session, skills) |
//! | [`emulator`] | feature `emulator`: [`emulator::ClaudeEmulator`] (its server, state, routes, resources, sessions and playback in files of their own) and [`emulator::ClaudeBackend`] |
//!
//! ## Example
//!
//! Against the bundled emulator (no key, no network beyond loopback):
//!
//! ```
//! # #[cfg(feature = "emulator")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_claude::{ClaudeManagedAgents, emulator::ClaudeEmulator};
//! use managed_agents_conformance::{Script, ScriptTurn};
//! use managed_agents_core::{Session, SessionOptions, tool_fn};
//! use serde_json::json;
//!
//! let emulator = ClaudeEmulator::start(
//!     Script::new()
//!         .turn(ScriptTurn::tool_call("toolu_1", "add", json!({"a": 2, "b": 3})))
//!         .turn(ScriptTurn::text("2 + 3 = 5")),
//! )
//! .await
//! .expect("emulator");
//! // `builder()` never reads the environment; `ClaudeManagedAgents::from_env()` uses `ANTHROPIC_API_KEY`.
//! let provider = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build()?;
//! let (agent_id, environment_id) = emulator.seed_agent();
//! let handler = tool_fn(|_, input| async move {
//!     Ok((input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)).to_string())
//! });
//! let options = SessionOptions::new().agent_id(agent_id).environment_id(environment_id).prompt("2 + 3?");
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
#[cfg(feature = "worker")]
pub mod environment;
#[cfg(test)]
mod parity;
mod provider;
pub mod provision;
pub mod webhooks;
// Public only to the fuzz targets (`--cfg fuzzing`): the wire is no public API.
#[cfg(not(fuzzing))]
mod wire;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod wire;

pub use artifacts::ClaudeArtifacts;
pub use provider::ClaudeManagedAgents;
pub use provider::builder::{ClaudeManagedAgentsBuilder, DEFAULT_BASE_URL, DEFAULT_HTTP_SETTINGS};
pub use provider::resources::{MAX_MEMORY_INSTRUCTIONS, MemoryAccess, SessionResource, VAULT_IDS};
pub use provider::spend_limit::{SESSION_USAGE, SPEND_LIMIT_REACHED, SpendLimit, SpendLimitReached};
pub use provision::provisioner::ClaudeProvisioner;
pub use wire::client::{ClaudeClient, ClaudeConfig};
pub use wire::stream::MAX_CONSECUTIVE_MALFORMED_FRAMES;
pub use wire::threads::ThreadStream;
/// The Managed Agents wire's schema vocabulary ([`VOCABULARY`]) and the check of a recording against it
/// ([`check_recording`]): unknown event types, unknown fields and missing required fields, reported, not failed.
pub use wire::vocabulary::{VOCABULARY, check_recording};

/// Internals reachable only from the fuzz targets in `fuzz/` (built with `--cfg fuzzing`, as `cargo fuzz` does).
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::wire::stream::{Decoded, decode as decode_frame};
}

// The ported upstream tests in `parity` name the crate as users do.
#[cfg(test)]
extern crate self as managed_agents_claude;
