//! The suite's one list: every scenario and every fault case, once.
//!
//! `__for_each_scenario!` hands the list to a callback macro, and everything that
//! enumerates scenarios is generated from it:
//!
//! * [`scenarios::ALL`](crate::scenarios::ALL), [`scenarios::run`](crate::scenarios::run) and the flat
//!   `scenarios::<name>` paths (in `scenarios/mod.rs`), which the [`Suite`](crate::Suite) runs;
//! * the fault matrix's `fault_<case>_live` / `fault_<case>_sync` scenarios (in `scenarios/faults.rs`);
//! * [`FaultCase`](crate::FaultCase) itself: its variants, [`FaultCase::ALL`](crate::FaultCase::ALL),
//!   [`FaultCase::name`](crate::FaultCase::name) and the reason an undeclared case is skipped (in
//!   `fault_case.rs`);
//! * the tests [`conformance_suite!`](crate::conformance_suite) stamps in a provider's crate.
//!
//! **A new scenario** is one `module::name: requirement` entry under `plain` (the function goes in that module of
//! `scenarios/`, the requirement in `scenarios/requirements.rs` unless an existing one fits). **A new fault
//! case** is one entry under `faults`; the compiler then asks for its [`Fault`](crate::Fault) in
//! `FaultCase::fault` (and, where they apply, add it to `FaultCase::CUTS` / `FaultCase::HTTP` and to
//! `FaultCase::is_named_by`).

/// Calls `$callback! { <extra> plain { … } faults { … } }` with the suite's one list (see the module docs of
/// `registry.rs`). The callback is written in brackets, its leading arguments after them:
/// `__for_each_scenario!([$crate::__stamp_suite] ($) ($backend) [...])`.
///
/// * `plain`: `module::scenario: requirement`, in the order the suite runs them.
/// * `faults`: the doc comment of the [`FaultCase`](crate::FaultCase) variant, then
///   `Variant(name, "what an undeclared backend lacks"): live_scenario, sync_scenario;` — the scenarios' names
///   must be `fault_<name>_live` and `fault_<name>_sync` (a unit test checks).
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_scenario {
    ([$($callback:tt)*] $($extra:tt)*) => {
        $($callback)*! {
            $($extra)*
            plain {
                basic::plain_end_turn: always,
                basic::single_tool_round_trip: always,
                basic::parallel_tools_keep_order: always,
                basic::tool_error_result: always,
                basic::tool_panic_becomes_error: always,
                basic::multi_turn_tool_loop: always,
                basic::terminated_turn: always,
                basic::max_turns_exceeded: always,
                basic::max_turns_allows_a_last_answer: always,
                basic::turn_guard_halts: always,
                basic::terminal_tool_reprompt: always,
                basic::terminal_tool_exhaustion: always,
                basic::text_delta_emission: always,
                basic::usage_accumulation: always,
                basic::invalid_options_rejected: always,
                live::follow_up_message: always,
                live::message_queued_mid_turn: always,
                live::send_event_passthrough: needs_streaming,
                live::send_event_refused: needs_request_response,
                live::interrupt_reaches_host: needs_pushed_interrupt,
                live::interrupt_refused: needs_no_interrupt,
                live::interrupt_ends_the_turn_as_interrupted: needs_interrupt_mid_turn,
                live::timeout_cleans_up: always,
                live::cancellation_cleans_up: always,
                reconnect::split_requires_action_recovery: needs_split,
                reconnect::duplicate_event_dedupe: needs_duplicates,
                reconnect::stream_drop_reconnect_redrive: needs_reconnect,
                reconnect::stream_drop_sync_run: needs_reconnect,
                live::concurrent_sessions_stay_apart: needs_per_session_scripts,
                reconnect::resume_with_prompt: needs_resume,
                reconnect::transcript_reattach: needs_transcript,
                basic::outcome_kickoff: needs_outcomes,
                basic::outcome_rejected_when_unsupported: needs_no_outcomes,
                approvals::approval_allow: always,
                approvals::approval_deny_with_reason: always,
                approvals::approval_defer_then_approve: always,
                approvals::approval_defer_then_deny: always,
                approvals::sync_run_defer_returns_approval_required: always,
                approvals::approval_resumed_by_a_new_session: needs_reattach,
                approvals::ledger_answers_a_recovered_call: needs_reattach,
                approvals::confirmation_allow: needs_confirmations,
                approvals::confirmation_deny_with_message: needs_confirmations,
                approvals::confirmation_default_defers: needs_confirmations,
                models::model_config_refused_without_data_plane: needs_no_data_plane,
                models::catalog_ids_refused: needs_refused_models,
                models::runtime_model_reaches_wire: needs_accepted_models,
                models::per_run_destination_stays_apart: needs_data_plane,
            }
            faults {
                /// The connection breaks mid-turn ([`Fault::DropStreamAfter`]).
                StreamDrop(stream_drop, "stream drop"): fault_stream_drop_live, fault_stream_drop_sync;
                /// The server ends the response cleanly mid-turn ([`Fault::CloseStreamAfter`]).
                CleanClose(clean_close, "clean server close"): fault_clean_close_live, fault_clean_close_sync;
                /// Every event of a turn arrives twice ([`Fault::DuplicateEvents`]).
                DuplicateEvents(duplicate_events, "duplicate delivery"):
                    fault_duplicate_events_live, fault_duplicate_events_sync;
                /// The stream breaks mid-turn and the next stream re-sends what was delivered
                /// ([`Fault::RedeliverAfter`]).
                Redelivery(redelivery, "re-delivery after reconnect"): fault_redelivery_live, fault_redelivery_sync;
                /// The request for a turn is refused with 429 and a `retry-after` ([`Fault::HttpError`]).
                Http429(http_429, "HTTP 429"): fault_http_429_live, fault_http_429_sync;
                /// The request for a turn is refused with 500 and a `retry-after`.
                Http500(http_500, "HTTP 500"): fault_http_500_live, fault_http_500_sync;
                /// The request for a turn is refused with 529 (overloaded) and a `retry-after`.
                Http529(http_529, "HTTP 529"): fault_http_529_live, fault_http_529_sync;
                /// A turn sends nothing for longer than the provider's idle timeout ([`Fault::Stall`]).
                Stall(stall, "stall past the idle timeout"): fault_stall_live, fault_stall_sync;
                /// Undecodable frames arrive amid a turn's events ([`Fault::MalformedFrame`]).
                MalformedFrame(malformed_frame, "malformed frame"): fault_malformed_frame_live, fault_malformed_frame_sync;
                /// A turn's response claims to be complete before the turn ended ([`Fault::TruncateTurn`]).
                TruncatedTurn(truncated_turn, "truncated turn"): fault_truncated_turn_live, fault_truncated_turn_sync;
            }
        }
    };
}
