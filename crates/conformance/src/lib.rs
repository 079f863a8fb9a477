//! # managed-agents-conformance
//!
//! The conformance suite every managed-agents provider runs — ours and third parties' alike — plus the pieces
//! it is made of:
//!
//! * [`Script`]: what the remote model does, turn by turn (text chunks, tool calls, stop, usage, [`Fault`]s);
//!   [`Scripts`] gives each of an emulator's sessions its own, and [`ScriptPlayer`] hands the turns out.
//! * [`Backend`]: starts your provider against something that plays a script (your emulator on loopback) and
//!   reports what it received as an [`InputLog`].
//! * [`BackendCapabilities`]: what your backend can do; scenarios that need more are reported as skipped, with the
//!   reason.
//! * [`scenarios`]: one `pub async fn` per behaviour, the list of them ([`scenarios::ALL`]) and what a scenario
//!   returns ([`scenarios::Verdict`]); the fault matrix is among them — every [`FaultCase`] a backend declares
//!   (with its [`FaultOutcome`]), at every event position, live and synchronous, as [`faults`] describes.
//! * [`Delivery`] and [`ScriptPlayer::faults_due`]: the wire-agnostic half of fault injection an emulator builds
//!   on (which frames go out, how the response ends, when a retried turn is served whole).
//! * [`Suite`]: **the way to run the suite** — a test harness of its own (`harness = false`): one test per
//!   scenario and backend, named `<label>::<scenario>`; a scenario your backend lacks the capability for shows
//!   as *ignored* with the reason in cargo's own output and summary.
//! * [`conformance_suite!`]: for a crate that must keep the standard harness. It stamps one `#[test]` per
//!   scenario plus `conformance_completeness`; since libtest cannot report a skip, a skipped scenario *fails*
//!   unless the invocation declares it (`skip: [...]`, then it shows as ignored), and the completeness test
//!   fails when the declared list is not what the capabilities skip. No skip passes for a pass.
//! * [`support`]: handlers and counters for scenarios (and for tests of code on top of the session loop).
//! * [`store_contract`]: the checks every provisioning store must pass; [`artifacts_contract`], every session
//!   artifact store.
//! * [`session_store_contract`]: the checks every host session store (conversations, leases, approvals, tool
//!   ledger) must pass; [`inbox_contract`], every store's durable inbox.
//! * [`reference`](mod@reference): in-memory reference providers of both modes, which pass the suite in this crate's own tests.
//!
//! ## Testing your own provider
//!
//! Add the kit as a dev-dependency, implement [`Backend`] for your emulator, and run the [`Suite`] from an
//! integration test without the standard harness:
//!
//! ```toml
//! [dev-dependencies]
//! managed-agents-conformance = "0.1"
//!
//! [[test]]
//! name = "conformance"
//! harness = false
//! ```
//!
//! A complete `tests/conformance.rs`, with the reference provider standing in for yours:
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents_conformance::{
//!     Backend, BackendCapabilities, Harness, ProviderSettings, Scripts, async_trait,
//!     reference::StreamingReference,
//! };
//! use managed_agents_core::{Mode, SessionOptions};
//!
//! /// Starts `MyProvider` against its emulator. Here the in-memory reference provider plays that part.
//! struct MyBackend;
//!
//! #[async_trait]
//! impl Backend for MyBackend {
//!     type Provider = StreamingReference;
//!
//!     fn capabilities(&self) -> BackendCapabilities {
//!         BackendCapabilities::new(Mode::Streaming)
//!             .with_provider(StreamingReference::CAPABILITIES)
//!             .with_reconnect()
//!             .with_duplicate_delivery()
//!             .with_split_requires_action()
//!             .with_resume()
//!             .with_resume_pending()
//!     }
//!
//!     async fn launch(&self, scripts: Scripts, _: &ProviderSettings) -> Harness<StreamingReference> {
//!         // A real backend starts its emulator on 127.0.0.1 playing `scripts` (see `emulator`), points the
//!         // provider at it, and keeps the server alive with `Harness::keep_alive`.
//!         let script = scripts.into_shared().expect("no per-session scripts declared");
//!         let provider = StreamingReference::new(script);
//!         let log = provider.log();
//!         Harness::new(Arc::new(provider), SessionOptions::new(), log)
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     // One test per scenario, `my-provider::<scenario>`; add more backends (configurations) with `.backend`.
//! #   if true { return std::process::ExitCode::SUCCESS; } // doctests do not run the whole suite
//!     managed_agents_conformance::Suite::new().backend("my-provider", MyBackend).run()
//! }
//! ```
//!
//! `cargo test` then lists `my-provider::single_tool_round_trip … ok` for what ran and, for what your backend
//! cannot run, `my-provider::interrupt_refused … ignored, the provider supports interrupts (see
//! interrupt_reaches_host)`; the summary counts them as *ignored*, never as *passed*.
//!
//! Each scenario can also be called directly, e.g.
//! `managed_agents_conformance::scenarios::single_tool_round_trip(&MyBackend).await`, which returns its
//! [`Verdict`](scenarios::Verdict).
//!
//! ## Writing an emulator
//!
//! An emulator is a server on 127.0.0.1 that speaks your wire and plays a [`Script`]. The wire-agnostic parts
//! come from this crate, so a script plays the same on every wire:
//!
//! * **Which input plays a turn.** A kickoff (prompt or outcome), a user message, and a *complete* set of tool
//!   results each take the session's next turn ([`ScriptPlayer::take`]); a partial set of results, a
//!   confirmation or an interrupt takes none. A turn whose stop is `tool_use` waits for its calls' results; with
//!   [`Fault::SplitRequiresAction`], a streaming wire names one call per idle, and the rest must be recovered
//!   from the history. [`ScriptPlayer`] keys sessions by your wire's session id ([`Scripts::per_session`]);
//!   record every input that took a turn in an [`InputLog`] — the scenarios read tool results from it.
//! * **How a turn goes out.** Encode the turn as one frame per event, then let [`Delivery::plan`] apply the
//!   turn's faults: which frames are written (duplicates, malformed frames after the first), how the response
//!   ends ([`End`]: complete, broken, closed, truncated), what a streaming wire keeps in the history
//!   ([`Delivery::held_back`]) and re-sends on the next stream ([`Delivery::redeliver`]). A cut's `events: n`
//!   counts the turn's own frames, before duplicates and malformed frames. A wire that answers each turn with a
//!   response of its own uses [`Delivery::plan_per_turn`], so a cut always loses the turn's end.
//! * **When faults fire.** A turn's faults meet the first request that reaches it
//!   ([`ScriptPlayer::faults_due`], [`ScriptPlayer::fault_fired`]); a retry gets the turn whole. On a per-turn
//!   wire, only a response that carries the turn whole takes it; a stalled one takes it when it is finally
//!   written, unless a retry already did ([`ScriptPlayer::take_at`]).
//!
//! Then declare what your backend injects ([`BackendCapabilities::with_fault`]) and the [`faults`] matrix runs
//! each case at every position, live and synchronous. The emulators of this workspace (`ClaudeEmulator`,
//! `AgentCoreEmulator`, `LocalEmulator`) are built this way.
//!
//! The suite's scenarios are part of this crate's API: pin its version, and expect new scenarios in minor
//! releases.

pub mod artifacts_contract;
mod backend;
mod delivery;
#[cfg(feature = "emulator")]
pub mod emulator;
mod fault_case;
pub mod faults;
mod harness;
pub mod inbox_contract;
mod log;
mod player;
pub mod reference;
mod registry;
#[cfg(feature = "emulator")]
pub mod replay;
pub mod scenarios;
mod script;
pub mod session_store_contract;
#[doc(hidden)]
pub mod stamped;
pub mod store_contract;
pub mod support;

pub use async_trait::async_trait;
pub use backend::{Backend, BackendCapabilities, Destination, Harness, ModelCatalog, ProviderSettings};
pub use delivery::{Delivery, End};
pub use fault_case::{FaultCase, FaultOutcome};
pub use harness::Suite;
#[doc(hidden)]
pub use harness::block_on;
pub use log::{InputLog, RecordedInput};
pub use player::{ScriptContext, ScriptPlayer, Scripts};
pub use script::{Fault, Script, ScriptStop, ScriptToolCall, ScriptTurn, ScriptUsage, host_tool_output};
