//! # managed-agents-local
//!
//! The Local provider of [managed-agents](https://crates.io/crates/managed-agents): the agent loop runs in your
//! process, one chat-completions call per turn, against any OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
//! llama.cpp, gateways), while your tools run through the session's handler.
//!
//! * [`Local`]: the provider (streaming or not, retries with `retry-after`, tool-call assembly robust to
//!   servers that omit `index` or repeat ids, transcript for reattach, weak-model [`GuardSettings`]).
//!   [`Local::builder`] takes only what it is given; [`Local::from_env`] (or [`LocalBuilder::from_env`], to
//!   override part of it) reads `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`. The HTTP settings start
//!   from [`DEFAULT_HTTP_SETTINGS`]. Every setting is checked by `build()`: a bad one is an error there, never a
//!   panic later.
//! * Resuming: a session opened with a previous transcript (`SessionOptions::history`, with the same
//!   `SessionOptions::session_id` so a tool ledger recognises the calls) whose last assistant message has calls
//!   without tool messages — a run that stopped for an approval, or a worker that died mid-batch — runs those
//!   calls first (answering from the ledger the ones it recorded), then sends the prompt. Calls left open when a
//!   new message is sent without resuming are closed as "not run".
//! * [`ChatBackend`]: the seam to put any other client behind the provider ([`LocalBuilder::chat_backend`]),
//!   taking a [`ChatRequest`] and answering a [`ChatResponse`]; the built-in client speaks HTTP with hyper.
//! * `emulator` feature: [`emulator::LocalEmulator`], an OpenAI-compatible server on loopback that plays a
//!   conformance script, and [`emulator::LocalBackend`] to run the conformance suite.
//!
//! ## The crate's rooms
//!
//! The same rooms as every provider crate of managed-agents:
//!
//! | module | what it holds |
//! |---|---|
//! | `provider` | [`Local`] and its `Provider` impl, [`LocalBuilder`], the agent loop of a connection, the weak-model guards |
//! | `provision` | provisioning: agent definitions registered in process, under `<name>_<digest8>` |
//! | `wire` (private) | the OpenAI chat-completions wire: the chat seam's types, the built-in HTTP client, the assembly of a streamed completion, the provider's events and their interpretation |
//! | `artifacts` | [`DirectoryArtifacts`]: session artifacts in a directory |
//! | [`emulator`] | feature `emulator`: [`emulator::LocalEmulator`] (its route, conversations, playback and wire encoding) and [`emulator::LocalBackend`] |
//!
//! ## Example
//!
//! Against the bundled emulator (no network beyond loopback, no key):
//!
//! ```
//! # #[cfg(feature = "emulator")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_conformance::{Script, ScriptTurn};
//! use managed_agents_core::{Session, SessionOptions, ToolSchema, tool_fn};
//! use managed_agents_local::{Local, emulator::LocalEmulator};
//! use serde_json::json;
//!
//! let emulator = LocalEmulator::start(
//!     Script::new()
//!         .turn(ScriptTurn::tool_call("call_1", "add", json!({"a": 2, "b": 3})))
//!         .turn(ScriptTurn::text("2 + 3 = 5")),
//! )
//! .await
//! .expect("emulator");
//! let provider = Local::builder()
//!     .base_url(emulator.base_url())
//!     .model("emulated")
//!     .tool(ToolSchema::new("add", "Adds two numbers", json!({"type": "object"})))
//!     .build()?;
//! let handler = tool_fn(|_, input| async move {
//!     Ok((input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)).to_string())
//! });
//! let result = Session::run(&provider, handler, SessionOptions::new().prompt("2 + 3?")).await?;
//! assert_eq!(result.text, "2 + 3 = 5");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "emulator"))]
//! # fn main() {}
//! ```

mod artifacts;
#[cfg(feature = "emulator")]
pub mod emulator;
mod provider;
mod provision;
// Public only to the fuzz targets (`--cfg fuzzing`): the wire is no public API.
#[cfg(not(fuzzing))]
mod wire;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod wire;

pub use artifacts::DirectoryArtifacts;
pub use provider::Local;
pub use provider::builder::{DEFAULT_BASE_URL, DEFAULT_HTTP_SETTINGS, LocalBuilder};
pub use provider::guards::{DUPLICATE_DIRECTIVE, GuardSettings};
pub use wire::chat::{ChatBackend, ChatRequest, ChatResponse};
/// The chat-completions wire's schema vocabulary ([`VOCABULARY`]) and the check of a recording's chunks and
/// completions against it ([`check_recording`]): unknown objects, unknown fields and missing required fields,
/// reported, not failed.
pub use wire::vocabulary::{VOCABULARY, check_recording};
