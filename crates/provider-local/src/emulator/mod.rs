//! An OpenAI-compatible chat-completions server on loopback that plays a conformance [`Script`] (feature
//! `emulator`), and the conformance [`LocalBackend`] built on it.
//!
//! Each `POST …/chat/completions` plays the next scripted turn, streamed (SSE chunks, tool-call fragments split
//! across chunks, usage in a final chunk) when the request asks for `stream: true`, as one JSON completion
//! otherwise. Every request is recorded ([`LocalEmulator::requests`]), and decoded into the conformance
//! [`InputLog`]. Faults, delivered with the conformance kit's [`Delivery`](managed_agents_conformance::Delivery),
//! each on the first request for the turn only (a retry is served whole): [`Fault::HttpError`] (that status,
//! with `retry-after-ms`), [`Fault::Stall`] (a wait before the first byte; the turn counts as served only if the
//! client still waits when it ends), [`Fault::DropStreamAfter`] (the body breaks after that many chunks),
//! [`Fault::CloseStreamAfter`] (it ends there, without `[DONE]`), [`Fault::TruncateTurn`] (`data: [DONE]`
//! there, with no finish reason yet, which the provider takes at its word as the end of the turn) and
//! [`Fault::MalformedFrame`] (a chunk that is not JSON after the first). A cut never reaches the finish reason.
//!
//! How a streamed completion ends is a server's shape, set with [`EmulatorOptions::with_stream_end`]: a chunk
//! with the finish reason then `data: [DONE]` (OpenAI, the default), `[DONE]` with no finish reason anywhere
//! ([`StreamEnd::DoneWithoutFinishReason`], as `stubllm` streams tool calls), or the finish reason and no
//! `[DONE]` ([`StreamEnd::FinishReasonWithoutDone`]).
//!
//! Scripts: [`LocalEmulator::start`] takes a [`Script`] (or [`Scripts::shared`]), whose turns go to whichever
//! request comes next, or [`Scripts::per_session`], which builds a fresh script for each conversation the first
//! time it calls. The chat wire has no session id, so a conversation is known by [`conversation_key`]: a hash
//! of its system message and its first user message. Two conversations that open with the same messages share
//! one script; give concurrent conversations different prompts (or system messages). The factory gets the key
//! as [`ScriptContext::session_id`](managed_agents_conformance::ScriptContext::session_id) and the kickoff as
//! its `first_input`. Faults apply per conversation: an `HttpError` turn fails the first request of each
//! conversation that reaches it, and a spent script reports how many turns that conversation played.
//!
//! The emulator stands on the conformance kit's scaffold ([`managed_agents_conformance::emulator`]); its own
//! parts are the server and its inspection (`server`: [`LocalEmulator`]), the route (`routes`: what a strict
//! server refuses, [`validate_messages`]), the conversations (`sessions`: [`conversation_key`] and what a
//! request adds), the playback of a turn (`playback`), the wire's encoding (`encode`) and the conformance
//! backend (`backend`: [`LocalBackend`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_conformance::{Script, ScriptTurn, Scripts};
//! use managed_agents_core::{Session, SessionOptions, tool_fn};
//! use managed_agents_local::emulator::LocalEmulator;
//!
//! // Each conversation answers with the prompt it opened with.
//! let scripts = Scripts::per_session(|session| {
//!     Script::new().turn(ScriptTurn::text(format!("you said {}", session.prompt().unwrap_or_default())))
//! });
//! let emulator = LocalEmulator::start(scripts).await.expect("emulator");
//! let provider = emulator.provider_builder().build()?;
//! let handler = tool_fn(|_, _| async { Ok(String::new()) });
//! let (one, two) = tokio::join!(
//!     Session::run(&provider, handler.clone(), SessionOptions::new().prompt("one")),
//!     Session::run(&provider, handler, SessionOptions::new().prompt("two")),
//! );
//! assert_eq!((one?.text, two?.text), ("you said one".to_string(), "you said two".to_string()));
//! # Ok(())
//! # }
//! ```

mod backend;
mod encode;
mod playback;
mod replay;
mod routes;
mod server;
mod sessions;

pub use backend::LocalBackend;
pub use encode::StreamEnd;
pub use replay::LocalReplay;
pub use routes::validate_messages;
pub use server::{EmulatorOptions, LocalEmulator};
pub use sessions::conversation_key;

#[cfg(doc)]
use managed_agents_conformance::{Fault, InputLog, Script, Scripts};
