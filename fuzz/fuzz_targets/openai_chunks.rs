#![no_main]
//! The Local provider's streamed chat completion: `ChunkAssembler` fed arbitrary `chat.completion.chunk`
//! sequences, either decoded from raw SSE bytes (as `HttpChat` reads them: `data: {json}` frames, `[DONE]`) or
//! built with `arbitrary` (ids and indexes from small pools, so fragments collide, go missing and repeat); then
//! the assembled message through `wire::clean_message`, `wire::tool_uses` and `wire::normalize`.
//!
//! Invariants checked:
//! * the assembled message is an assistant message; its `content` is the concatenation of every string
//!   `choices[0].delta.content` (or `null` when no chunk had one);
//! * the finish reason is the last string `choices[0].finish_reason`; `finished()` says whether one arrived;
//! * the usage is the last object `usage`;
//! * every assembled tool call has a non-empty string id, `type: "function"`, and a string name and arguments;
//!   and there are no more calls than fragments;
//! * `clean_message` keeps every call, each with a non-empty id; `tool_uses` gives one `ToolUse` per call, with
//!   the call's id;
//! * `normalize` of the turn's events (the chunks, then the model response) is `RequiresAction` exactly when the
//!   response has calls, each with a non-empty id; its text is the message's content.
//!
//! It reaches the Local wire module, which is public only under `--cfg fuzzing` (as `cargo fuzz` builds): a plain build
//! compiles an empty target.

#[cfg(fuzzing)]
#[path = "wire/openai_chunks.rs"]
mod target;

#[cfg(not(fuzzing))]
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
