#![no_main]
//! AgentCore InvokeHarness events: arbitrary sequences of the SDK's stream events (`InvokeHarnessStreamOutput`,
//! built with `arbitrary` through the SDK's own builders, as the SDK's frame decoder hands them to the provider)
//! go through `wire::stream_event` and every interpretation of a call: `wire::normalize`, `is_complete`,
//! `text_delta`, `assistant_blocks`, and `messages_after` for the answers to the calls found. Documents (tool
//! result JSON) go through `to_document` / `to_json`.
//!
//! Invariants checked:
//! * each SDK event becomes one object with one member, named after the event;
//! * a JSON value survives `to_json(to_document(v))` unchanged;
//! * the turn carries the events it was given; its text is the concatenation of the events' text deltas;
//! * `RequiresAction` only for a `tool_use` stop reason and with at least one client call; any other terminal
//!   hands the client no call;
//! * the calls of a turn (client and server side together) have distinct ids, each announced by a
//!   `contentBlockStart` of that `toolUseId`;
//! * `assistant_blocks` records each tool call once;
//! * answering a turn's client calls builds two messages: the assistant echo holding each call once, and the
//!   user message holding one tool result per result.
//!
//! It reaches the AgentCore `wire` module (conversion included), which is public only under `--cfg fuzzing` (as `cargo fuzz` builds): a plain build
//! compiles an empty target.

#[cfg(fuzzing)]
#[path = "wire/agentcore_convert.rs"]
mod target;

#[cfg(not(fuzzing))]
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
