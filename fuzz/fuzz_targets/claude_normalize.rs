#![no_main]
//! Claude Managed Agents events: arbitrary bytes become events (as SSE frames through the stream's frame decoder,
//! or as a JSON array of event objects), and every interpretation of a turn runs on them without panicking:
//! `events::normalize`, `pending_tool_uses`, `unanswered_tool_uses`, `text_delta`, `is_turn_boundary`, and
//! `input_events` for the answers to the calls found.
//!
//! Invariants checked (each follows from the documented contract of `events.rs`):
//! * the turn carries the events it was given, unchanged;
//! * a `RequiresAction` terminal comes only from a `session.status_idle` (the latest status event) whose
//!   `stop_reason.type` is `requires_action`; any other turn owes the client no call;
//! * every call owed to the client is named by that idle's `event_ids` and is an event of the batch with that id;
//! * when the latest status is an idle, `pending_tool_uses` finds exactly the calls `normalize` found;
//! * every `agent.tool_use` / `agent.mcp_tool_use` with a string `name` is observed once in `server_tool_uses`;
//! * `text_delta` is never an empty string, and only an `agent.message` has one;
//! * `unanswered_tool_uses` never lists a call that a `user.custom_tool_result` or `user.tool_confirmation` in
//!   the history answers;
//! * answering the owed calls posts one event per result, a confirmation for a confirmation call and a custom
//!   tool result otherwise;
//! * an undecodable frame keeps its data as the frame carried it, reports its true length, and says why.
//!
//! It reaches the Claude events module, which is public only under `--cfg fuzzing` (as `cargo fuzz` builds): a plain build
//! compiles an empty target.

#[cfg(fuzzing)]
#[path = "wire/claude_normalize.rs"]
mod target;

#[cfg(not(fuzzing))]
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
