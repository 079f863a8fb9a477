//! The runtime shell's route (`InvokeAgentRuntimeCommand`): `echo`, `fail`, injected failures, and everything
//! else on the session's files, streamed back as `chunk` events.

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::Response;
use managed_agents_core::http::server::ResponseBody;
use serde_json::{Value, json};

use super::encoding::event;
use super::playback::frames_response;
use super::state::State;

/// Answers `InvokeAgentRuntimeCommand`: `echo ARGS` prints its arguments, `fail N` prints to stderr and exits with
/// N, an injected failure (see [`AgentCoreEmulator::fail_commands`](super::AgentCoreEmulator::fail_commands))
/// exits as it says, and anything else runs on the session's files (see `shell`).
pub(super) fn command_response(
    state: &Shared<State>,
    runtime: &str,
    session_id: &str,
    body: &Value,
) -> Response<ResponseBody> {
    let command = body["command"].as_str().unwrap_or_default();
    state.lock().commands.push(command.to_string());
    let (stdout, stderr, code) = match command.split_once(' ').unwrap_or((command, "")) {
        ("echo", rest) => (format!("{rest}\n"), String::new(), 0),
        ("fail", code) => (String::new(), format!("failing with {code}\n"), code.trim().parse().unwrap_or(1)),
        _ => {
            let mut guard = state.lock();
            let injected = match &mut guard.failing_commands {
                (0, failures) => failures.pop_front(),
                (after, _) => {
                    *after -= 1;
                    None
                }
            };
            if let Some((code, stderr)) = injected {
                (String::new(), stderr, code)
            } else {
                let files = guard.runtime_files.entry((runtime.to_string(), session_id.to_string())).or_default();
                let outcome = files.run(command);
                (outcome.stdout, outcome.stderr, outcome.code)
            }
        }
    };
    let chunk = |payload: Value| event("chunk", payload);
    let mut frames = vec![chunk(json!({"contentStart": {}}))];
    for piece in pieces(&stdout, COMMAND_OUTPUT_PIECE) {
        frames.push(chunk(json!({"contentDelta": {"stdout": piece}})));
    }
    for piece in pieces(&stderr, COMMAND_OUTPUT_PIECE) {
        frames.push(chunk(json!({"contentDelta": {"stderr": piece}})));
    }
    frames.push(chunk(json!({"contentStop": {"exitCode": code, "status": "COMPLETED"}})));
    frames_response(frames)
}

/// The most command output one `contentDelta` event carries, in bytes.
const COMMAND_OUTPUT_PIECE: usize = 16 * 1024;

/// `text` in pieces of at most `max` bytes (more only for a character longer than that), never splitting a
/// character.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = max.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        if cut == 0 {
            cut = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}
