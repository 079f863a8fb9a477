//! The fault matrix: every fault a backend declares, injected at every event position of a three-turn tool
//! script, on live and on synchronous sessions.
//!
//! A backend declares each [`FaultCase`] it can inject with [`BackendCapabilities::with_fault`], together with
//! what its provider promises then ([`FaultOutcome`]). Each case has two scenarios, `fault_<case>_live` (a
//! [`Session::start`] handle) and `fault_<case>_sync` ([`Session::run`]), in [`scenarios`](crate::scenarios);
//! an undeclared case is a visible skip.
//!
//! The script ([`three_turn_script`]): turn 1 says a line and calls `step` (`call_1`), turn 2 calls `step`
//! again (`call_2`), turn 3 ends with `All steps done.`. The fault goes on one turn at a time; the faults that
//! cut a response ([`FaultCase::StreamDrop`], [`FaultCase::CleanClose`], [`FaultCase::Redelivery`],
//! [`FaultCase::TruncatedTurn`]) are tried after each of the first [`CUT_POSITIONS`] events of the turn (0: before
//! the first), the others once per turn. After every run:
//!
//! * **the outcome is the declared one**: [`FaultOutcome::Recovers`] — the run completes (`end_turn`, the last
//!   turn's text, three turns); [`FaultOutcome::Surfaces`] — it completes, or fails with a typed error naming the
//!   fault (for an HTTP status, [`Error::Http`] with that status; for a stall, an idle or response timeout; for a
//!   bad frame, [`Error::Malformed`]; for a cut, [`Error::StreamClosed`] or [`Error::Transport`]), and at least
//!   one run of the matrix does fail that way (else the declaration should say `Recovers`);
//! * **every tool result reaches the backend exactly once**: its input log holds `call_1` then `call_2` (on a
//!   failed run, a prefix of them), never one twice;
//! * **no event is recorded twice** in [`SessionResult::events`] (or in the partial result of a failure);
//! * **no task is left running**: once the session is over and the harness (provider and emulator) dropped, the
//!   runtime's live task count is back where it was before the backend started.
//!
//! [`FaultCase`]: crate::FaultCase
//! [`FaultCase::StreamDrop`]: crate::FaultCase::StreamDrop
//! [`FaultCase::CleanClose`]: crate::FaultCase::CleanClose
//! [`FaultCase::Redelivery`]: crate::FaultCase::Redelivery
//! [`FaultCase::TruncatedTurn`]: crate::FaultCase::TruncatedTurn
//! [`FaultOutcome`]: crate::FaultOutcome
//! [`FaultOutcome::Recovers`]: crate::FaultOutcome::Recovers
//! [`FaultOutcome::Surfaces`]: crate::FaultOutcome::Surfaces
//! [`BackendCapabilities::with_fault`]: crate::BackendCapabilities::with_fault
//! [`Session::start`]: managed_agents_core::Session::start
//! [`Session::run`]: managed_agents_core::Session::run
//! [`Error::Http`]: managed_agents_core::Error::Http
//! [`Error::Malformed`]: managed_agents_core::Error::Malformed
//! [`Error::StreamClosed`]: managed_agents_core::Error::StreamClosed
//! [`Error::Transport`]: managed_agents_core::Error::Transport
//! [`SessionResult::events`]: managed_agents_core::SessionResult::events

use std::time::Duration;

use serde_json::json;

use crate::script::{Fault, Script, ScriptTurn};

/// How many event positions a cutting fault is tried at in each turn (after 0, 1, … `CUT_POSITIONS - 1` events).
pub const CUT_POSITIONS: usize = 7;

/// The idle timeout the stall scenarios give the provider
/// ([`ProviderSettings::idle_timeout`](crate::ProviderSettings::idle_timeout)).
pub const STALL_IDLE_TIMEOUT: Duration = Duration::from_millis(300);

/// How long a stalled turn sends nothing: well past [`STALL_IDLE_TIMEOUT`].
pub const STALL: Duration = Duration::from_millis(1_000);

/// The `retry-after` the HTTP-error cases send.
pub const HTTP_RETRY_AFTER: Duration = Duration::from_millis(20);

/// The matrix's three-turn tool script, with `fault` on turn `faulty` (0-based).
pub fn three_turn_script(faulty: usize, fault: Fault) -> Script {
    let mut turns = vec![
        ScriptTurn::tool_call("call_1", "step", json!({"n": 1})).with_text("Step one."),
        ScriptTurn::tool_call("call_2", "step", json!({"n": 2})),
        ScriptTurn::text("All steps done."),
    ];
    if let Some(turn) = turns.get_mut(faulty) {
        turn.faults.push(fault);
    }
    turns.into_iter().fold(Script::new(), Script::turn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_carries_the_fault_on_the_chosen_turn_only() {
        let script = three_turn_script(1, Fault::DuplicateEvents);
        let faulty: Vec<bool> = script.turns.iter().map(|t| t.has(&Fault::DuplicateEvents)).collect();
        assert_eq!(faulty, [false, true, false]);
    }
}
