//! # managed-agents-conformance
//!
//! The conformance suite every managed-agents provider runs — ours and third parties' alike — plus the pieces
//! it is made of:
//!
//! * [`Script`]: what the remote model does, turn by turn (text chunks, tool calls, stop, usage, [`Fault`]s).
//! * [`Backend`]: starts your provider against something that plays a script (your emulator on loopback) and
//!   reports what it received as an [`InputLog`].
//! * [`BackendCapabilities`]: what your backend can do; scenarios that need more are reported as skipped, with the
//!   reason.
//! * [`scenarios`]: one `pub async fn` per behaviour; [`conformance_suite!`] stamps one `#[test]` per scenario
//!   (each on its own tokio runtime) plus a `conformance_completeness` test that fails when a scenario is
//!   neither run nor skipped, and prints the run/skip table.
//! * [`reference`](mod@reference): in-memory reference providers of both modes, which pass the suite in this crate's own tests.
//!
//! ## Testing your own provider
//!
//! Add the kit as a dev-dependency, implement [`Backend`] for your emulator, and stamp the suite into an
//! integration test (`tests/conformance.rs`). A complete example, with the reference provider standing in for
//! yours:
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents_conformance::{
//!     Backend, BackendCapabilities, Harness, Script, async_trait, reference::StreamingReference,
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
//!     }
//!
//!     async fn start(&self, script: Script) -> Harness<StreamingReference> {
//!         // A real backend starts its emulator on 127.0.0.1 with `script`, points the provider at it,
//!         // and keeps the server alive with `Harness::keep_alive`.
//!         let provider = StreamingReference::new(script);
//!         let log = provider.log();
//!         Harness::new(Arc::new(provider), SessionOptions::new(), log)
//!     }
//! }
//!
//! // In tests/conformance.rs this one line stamps every scenario as its own test:
//! managed_agents_conformance::conformance_suite!(MyBackend);
//! # fn main() {}
//! ```
//!
//! Each scenario can also be called directly, e.g.
//! `managed_agents_conformance::scenarios::single_tool_round_trip(&MyBackend).await`.
//!
//! The suite's scenarios are part of this crate's API: pin its version, and expect new scenarios in minor
//! releases.

mod backend;
mod log;
pub mod reference;
pub mod scenarios;
mod script;
pub mod support;

pub use async_trait::async_trait;
pub use backend::{Backend, BackendCapabilities, Harness};
pub use log::{InputLog, RecordedInput};
pub use scenarios::{ScenarioInfo, Verdict};
pub use script::{Fault, Script, ScriptStop, ScriptToolCall, ScriptTurn, ScriptUsage};

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
            interrupt_reaches_host,
            timeout_cleans_up,
            cancellation_cleans_up,
            split_requires_action_recovery,
            duplicate_event_dedupe,
            stream_drop_reconnect_redrive,
            resume_with_prompt,
            transcript_reattach,
            outcome_kickoff,
            outcome_rejected_when_unsupported,
        );
    };
    (@stamp $backend:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let backend = $backend;
                let verdict = $crate::block_on(async { $crate::scenarios::$name(&backend).await });
                $crate::report(stringify!($name), verdict);
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

/// Prints a scenario's verdict straight to the process's stderr (which the test harness does not capture, so
/// skips are visible in every run).
#[doc(hidden)]
pub fn report(name: &str, verdict: Verdict) {
    if let Verdict::Skipped(reason) = verdict {
        say(&format!("conformance: {name}: SKIPPED: {reason}"));
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
