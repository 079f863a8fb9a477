//! Self-hosted sessions' sandbox calls. In a self-hosted environment the environment's worker runs the agent's
//! built-in tools (MCP tools still run on the service): a scripted host-side call of a built-in tool is announced
//! (`agent.tool_use`, its `evaluated_permission` as the agent's tools say) and waited on, never run by the
//! emulator. The worker answers it with `user.tool_result`; a call that asks needs an allowing
//! `user.tool_confirmation` first (a denying one closes it with the refusal, as on a hosted session). The turn
//! after plays once every awaited call — custom ones included — is answered.
//!
//! Every result the emulator receives (custom or built-in) is checked against its call's expected text
//! ([`ScriptToolCall::expect`]); the misses are kept for the test to read.

use managed_agents_conformance::ScriptToolCall;
use managed_agents_core::ToolResult;
use serde_json::Value;

use crate::emulator::permissions::{self, HostTool, Verdict};
use crate::emulator::state::{SessionState, State};

/// The awaited calls of a self-hosted session's turn that its worker answers with `user.tool_result`.
#[derive(Debug, Default, Clone)]
pub(super) struct SandboxCalls {
    /// The awaited built-in calls.
    awaited: Vec<String>,
    /// Those of them that asked and have no allowing `user.tool_confirmation` yet.
    unconfirmed: Vec<String>,
}

impl SandboxCalls {
    /// The sandbox calls among a turn's `awaiting` calls, on a session (self-hosted or not) whose turn follows
    /// `tools`.
    pub(super) fn of_turn(self_hosted: bool, tools: &Value, awaiting: &[ScriptToolCall]) -> Self {
        let mut calls = Self::default();
        for call in awaiting.iter().filter(|call| call.host_side) {
            let host = permissions::host_tool(tools, call);
            if in_sandbox(self_hosted, &host) {
                calls.awaited.push(call.id.clone());
                if host.verdict == Verdict::Ask {
                    calls.unconfirmed.push(call.id.clone());
                }
            }
        }
        calls
    }
}

/// Whether a host-side call configured as `host` runs in the session's sandbox: a built-in tool of a self-hosted
/// session's agent.
pub(super) fn in_sandbox(self_hosted: bool, host: &HostTool) -> bool {
    self_hosted && host.mcp_server.is_none()
}

/// Checks the `user.tool_result` events of a post to `session`, in order (a confirmation earlier in the post
/// counts): each must name a sandbox call the session awaits, once, and one that asked must have been allowed.
pub(super) fn check_post(session: &SessionState, events: &[Value]) -> Result<(), String> {
    let mut allowed: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for event in events {
        match event["type"].as_str() {
            Some("user.tool_confirmation") if event["result"] == "allow" => {
                allowed.extend(event["tool_use_id"].as_str());
            }
            Some("user.tool_result") => {
                let Some(id) = event["tool_use_id"].as_str() else {
                    return Err("user.tool_result: tool_use_id: field required".into());
                };
                if !session.self_hosted {
                    return Err("user.tool_result: only valid on self_hosted environments".into());
                }
                if !matches!(event.get("content"), None | Some(Value::Null | Value::Array(_))) {
                    return Err("user.tool_result: content: must be a list of content blocks".into());
                }
                if !session.sandbox.awaited.iter().any(|c| c == id) || answered.contains(&id) {
                    return Err(format!("tool_use_id: the session awaits no tool result for {id}"));
                }
                if session.sandbox.unconfirmed.iter().any(|c| c == id) && !allowed.contains(&id) {
                    return Err(format!("tool_use_id: {id} awaits a user.tool_confirmation first"));
                }
                answered.push(id);
            }
            _ => {}
        }
    }
    Ok(())
}

/// What a `user.tool_confirmation` does to a session's sandbox calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Confirmed {
    /// It names no sandbox call: it is taken as on a hosted session.
    Hosted,
    /// It allows a sandbox call that asked: the call now awaits its result.
    Allowed,
    /// It denies a sandbox call that asked: the call is closed with the refusal, as on a hosted session.
    Denied,
    /// It names a sandbox call that was allowed already or never asked: nothing changes.
    Ignored,
}

/// Takes a confirmation of call `id` of `session`.
pub(super) fn confirm(session: &mut SessionState, id: &str, allowed: bool) -> Confirmed {
    let calls = &mut session.sandbox;
    if !calls.awaited.iter().any(|c| c == id) {
        return Confirmed::Hosted;
    }
    if !calls.unconfirmed.iter().any(|c| c == id) {
        return Confirmed::Ignored;
    }
    calls.unconfirmed.retain(|c| c != id);
    if allowed {
        return Confirmed::Allowed;
    }
    calls.awaited.retain(|c| c != id);
    Confirmed::Denied
}

/// Takes a `user.tool_result` ([`check_post`] passed it): its call is answered, and its text checked against
/// the call's expectation. Returns the result.
pub(super) fn take_result(state: &mut State, session_id: &str, event: &Value) -> ToolResult {
    let id = event["tool_use_id"].as_str().unwrap_or_default();
    let text = result_text(event);
    if let Some(session) = state.sessions.get_mut(session_id) {
        session.sandbox.awaited.retain(|c| c != id);
    }
    check_expected(state, session_id, id, &text);
    if event["is_error"] == true { ToolResult::error(id, text) } else { ToolResult::ok(id, text) }
}

/// Records a result of call `call_id` whose `text` misses what the call expects (if the session awaits it and
/// expects anything).
pub(super) fn check_expected(state: &mut State, session_id: &str, call_id: &str, text: &str) {
    let Some(session) = state.sessions.get(session_id) else { return };
    let expected = session.awaiting.iter().find(|call| call.id == call_id).and_then(|call| call.expect.clone());
    if let Some(expected) = expected.filter(|expected| !text.contains(expected.as_str())) {
        let line =
            format!("session {session_id}: call {call_id} expected a result containing {expected:?}, got {text:?}");
        state.work.unexpected.push(line);
    }
}

/// The text of a result event: its content's text blocks, joined.
pub(super) fn result_text(event: &Value) -> String {
    let blocks = event["content"].as_array().into_iter().flatten();
    blocks.filter(|block| block["type"] == "text").filter_map(|block| block["text"].as_str()).collect()
}
