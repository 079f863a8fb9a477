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
//! * [`scenarios`]: one `pub async fn` per behaviour; [`faults`] is the fault matrix among them — every
//!   [`FaultCase`] a backend declares, at every event position, live and synchronous.
//! * [`Delivery`] and [`ScriptPlayer::faults_due`]: the wire-agnostic half of fault injection an emulator builds
//!   on (which frames go out, how the response ends, when a retried turn is served whole).
//! * [`Suite`]: the whole suite as a test harness of its own (`harness = false`): one test per scenario and
//!   backend, named `<label>::<scenario>`; a scenario your backend lacks the capability for shows as *ignored*
//!   with the reason in cargo's own output. [`conformance_suite!`] is the alternative inside the standard harness:
//!   it stamps one `#[test]` per scenario plus `conformance_completeness`, but libtest counts a skip as `ok` and
//!   the reason only reaches stderr.
//! * [`store_contract`]: the checks every provisioning store must pass; [`artifacts_contract`], every session
//!   artifact store.
//! * [`session_store_contract`]: the checks every host session store (conversations, leases, approvals, tool
//!   ledger) must pass.
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
//! Each scenario can also be called directly, e.g.
//! `managed_agents_conformance::scenarios::single_tool_round_trip(&MyBackend).await`.
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
//! `AgentCoreEmulator`, `ChatEmulator`) are built this way.
//!
//! The suite's scenarios are part of this crate's API: pin its version, and expect new scenarios in minor
//! releases.

mod approvals;
pub mod artifacts_contract;
mod backend;
mod delivery;
#[cfg(feature = "emulator")]
pub mod emulator;
pub mod faults;
mod harness;
mod log;
mod player;
pub mod reference;
pub mod scenarios;
mod script;
pub mod session_store_contract;
pub mod store_contract;
pub mod support;

pub use async_trait::async_trait;
pub use backend::{Backend, BackendCapabilities, Harness, ProviderSettings};
pub use delivery::{Delivery, End};
pub use faults::{FaultCase, FaultOutcome};
pub use harness::Suite;
pub use log::{InputLog, RecordedInput};
pub use player::{ScriptContext, ScriptPlayer, Scripts};
pub use scenarios::{ScenarioInfo, Verdict};
pub use script::{Fault, Script, ScriptStop, ScriptToolCall, ScriptTurn, ScriptUsage, host_tool_output};

/// Stamps one `#[test]` per scenario for a backend, plus `conformance_completeness`.
///
/// `$backend` is an expression building the backend; it is evaluated once per test.
#[macro_export]
macro_rules! conformance_suite {
    ($backend:expr) => {
        $crate::conformance_suite!(@stamp $backend;
            plain_end_turn,
            single_tool_round_trip,
            parallel_tools_keep_order,
            tool_error_result,
            tool_panic_becomes_error,
            multi_turn_tool_loop,
            terminated_turn,
            max_turns_exceeded,
            turn_guard_halts,
            terminal_tool_reprompt,
            terminal_tool_exhaustion,
            text_delta_emission,
            usage_accumulation,
            invalid_options_rejected,
            follow_up_message,
            message_queued_mid_turn,
            send_event_passthrough,
            send_event_refused,
            interrupt_reaches_host,
            interrupt_refused,
            timeout_cleans_up,
            cancellation_cleans_up,
            split_requires_action_recovery,
            duplicate_event_dedupe,
            stream_drop_reconnect_redrive,
            stream_drop_sync_run,
            concurrent_sessions_stay_apart,
            resume_with_prompt,
            transcript_reattach,
            outcome_kickoff,
            outcome_rejected_when_unsupported,
            approval_allow,
            approval_deny_with_reason,
            approval_defer_then_approve,
            approval_defer_then_deny,
            sync_run_defer_returns_approval_required,
            approval_resumed_by_a_new_session,
            ledger_answers_a_recovered_call,
            confirmation_allow,
            confirmation_deny_with_message,
            confirmation_default_defers,
            fault_stream_drop_live,
            fault_stream_drop_sync,
            fault_clean_close_live,
            fault_clean_close_sync,
            fault_duplicate_events_live,
            fault_duplicate_events_sync,
            fault_redelivery_live,
            fault_redelivery_sync,
            fault_http_429_live,
            fault_http_429_sync,
            fault_http_500_live,
            fault_http_500_sync,
            fault_http_529_live,
            fault_http_529_sync,
            fault_stall_live,
            fault_stall_sync,
            fault_malformed_frame_live,
            fault_malformed_frame_sync,
            fault_truncated_turn_live,
            fault_truncated_turn_sync,
        );
    };
    (@stamp $backend:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let backend = $backend;
                let verdict = $crate::block_on(async { $crate::scenarios::$name(&backend).await });
                $crate::report(module_path!(), stringify!($name), verdict);
            }
        )*

        #[test]
        fn conformance_completeness() {
            $crate::assert_complete(&[$(stringify!($name)),*], &$crate::Backend::capabilities(&$backend));
        }
    };
}

/// Runs a future on a fresh multi-threaded tokio runtime (two workers), as each stamped test does.
#[doc(hidden)]
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("cannot start a tokio runtime: {error}"));
    runtime.block_on(future)
}

/// Prints a skipped scenario's verdict, labelled with the suite's module, straight to the process's stderr
/// (which the test harness does not capture). [`Suite`] reports skips in cargo's own summary instead.
#[doc(hidden)]
pub fn report(suite: &str, name: &str, verdict: Verdict) {
    if let Verdict::Skipped(reason) = verdict {
        say(&format!("conformance: {suite}::{name}: SKIPPED: {reason}"));
    }
}

fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Fails unless `stamped` (the tests a suite stamped) is exactly [`scenarios::ALL`]; prints which scenarios
/// run and which are skipped, with reasons, for `capabilities`.
#[doc(hidden)]
pub fn assert_complete(stamped: &[&str], capabilities: &BackendCapabilities) {
    let known: Vec<&str> = scenarios::ALL.iter().map(|s| s.name).collect();
    let missing: Vec<&&str> = known.iter().filter(|name| !stamped.contains(name)).collect();
    let unknown: Vec<&&str> = stamped.iter().filter(|name| !known.contains(name)).collect();
    for scenario in scenarios::ALL {
        match (scenario.requires)(capabilities) {
            None => say(&format!("conformance: {:<36} run", scenario.name)),
            Some(reason) => say(&format!("conformance: {:<36} skipped: {reason}", scenario.name)),
        }
    }
    assert!(missing.is_empty(), "scenarios neither run nor skipped: {missing:?}");
    assert!(unknown.is_empty(), "stamped tests that are no scenario: {unknown:?}");
}
