//! The `InvokeHarness` sessions: the checks a call meets (session id, harness ARN, the resume contract, the
//! reasoning echo), the input it carries, and the turn it plays.

use managed_agents_conformance::RecordedInput;
use managed_agents_conformance::emulator::{Call, Settle, Shared, plan_call, streamed};
use managed_agents_conformance::{ScriptStop, ScriptTurn};
use managed_agents_core::ToolResult;
use managed_agents_core::http::Response;
use managed_agents_core::http::server::{Claim, Pacing, ReceivedRequest, ResponseBody};
use serde_json::{Value, json};

use super::encoding::{aws_error, event, exception, exception_with, query_value, validation_exception};
use super::playback::{CONTENT_TYPE, broken_crc, call_frames, frames_response, reasoning_echo};
use super::state::State;
use crate::provider::session_id::validate_session_id;

/// The session-id header.
pub const SESSION_HEADER: &str = "x-amzn-bedrock-agentcore-runtime-session-id";

/// The runtime user-id header.
pub(super) const USER_HEADER: &str = "x-amzn-bedrock-agentcore-runtime-user-id";

/// The harness ARN the emulator answers for: it follows the service's pattern
/// (`arn:<partition>:bedrock-agentcore:<region>:<12 digits>:harness/<name>-<10 alphanumerics>`).
pub const HARNESS_ARN: &str = "arn:aws:bedrock-agentcore:us-east-1:123456789012:harness/emulated_harness-EMU0123456";

/// The path `InvokeHarness` is posted to.
pub(super) const INVOKE_PATH: &str = "/harnesses/invoke";

/// Answers `InvokeHarness`: checks the request as the service does (the session id, the harness ARN, the resume
/// contract, the reasoning echo), then plays the session's next turn with its faults ([`plan_call`]).
pub(super) fn invoke(state: Shared<State>, request: &ReceivedRequest) -> Response<ResponseBody> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let session_id = request.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let Some(session_id) = session_id else { return aws_error(400, "the runtime session id header is required") };
    if validate_session_id(&session_id).is_err() {
        return aws_error(400, "the runtime session id must have 33 to 100 characters: [a-zA-Z0-9][a-zA-Z0-9-_]*");
    }
    let Some(harness_arn) = request.uri.query().and_then(|q| query_value(q, "harnessArn")) else {
        return aws_error(400, "harnessArn is required");
    };
    if !is_harness_arn(&harness_arn) {
        return aws_error(400, "harnessArn does not match the harness ARN pattern");
    }
    let mut guard = state.lock();
    let qualifier = request.uri.query().and_then(|q| query_value(q, "qualifier"));
    if harness_arn != HARNESS_ARN
        && let Err(why) = guard.control.invokable(&harness_arn, qualifier.as_deref())
    {
        return aws_error(404, &why);
    }
    if let Some(model) = wire_model(&body) {
        guard.log.record_model(model);
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let input = match decode_input(&messages, guard.sessions.contains(&session_id)) {
        Ok(input) => input,
        Err(complaint) => return frames_response(vec![exception("runtimeClientError", &complaint)]),
    };
    if matches!(input, RecordedInput::ToolResults(_))
        && let Some(expected) = guard.reasoning_echo.get(&session_id)
        && let Err(complaint) = check_reasoning_echo(&messages, expected)
    {
        return frames_response(vec![validation_exception(&complaint, &[("messages", &complaint)])]);
    }
    let options = guard.options;
    let call = plan_call(
        &mut guard.player,
        &session_id,
        &input,
        options.truncate_every_call,
        |turn, number| call_frames(turn, &options, number),
        |frames| vec![broken_crc(&frames.first().cloned().unwrap_or_default())],
    );
    let (turn, number, delivery, settle) = match call {
        Call::Deliver { turn, number, delivery, settle } => (turn, number, delivery, settle),
        Call::Failed { status, .. } => return aws_error(status, "injected failure"),
        Call::Spent { served } => {
            let message = format!("unexpected model call: the script has only {served} turns");
            return frames_response(vec![exception("validationException", &message)]);
        }
        _ => return aws_error(500, "a call this emulator cannot answer"),
    };
    if settle == Settle::Never {
        // The turn is not consumed: the next call for it is served again.
        return streamed(delivery, CONTENT_TYPE, None, Pacing::default());
    }
    if let Some((kind, message)) = turn.stream_exception() {
        commit_turn(&mut guard, &session_id, input, &turn);
        let frame = exception_with(kind, message, options.validation_reason);
        return frames_response(vec![event("messageStart", json!({"role": "assistant"})), frame]);
    }
    let pacing = Pacing::default().gate(guard.gate.clone());
    if settle != Settle::OnClaim {
        commit_turn(&mut guard, &session_id, input, &turn);
        return streamed(delivery, CONTENT_TYPE, None, pacing);
    }
    // A stalled turn is consumed only if the client still waits for it when the stall ends (one that gave up
    // retries, and the retry is served the turn whole).
    drop(guard);
    let claim: Claim = Box::new(move || {
        let mut state = state.lock();
        state.player.served(&session_id) == number && commit_turn(&mut state, &session_id, input, &turn)
    });
    streamed(delivery, CONTENT_TYPE, None, pacing.claim(Some(claim)))
}

/// The model id an invocation's `model` override names, whichever alternative of the union it is.
fn wire_model(body: &Value) -> Option<&str> {
    body["model"].as_object()?.values().next()?.get("modelId")?.as_str()
}

/// Checks that a resume echoes the reasoning the previous call streamed: the same blocks, in order, before
/// any `toolUse` block of the echoed assistant message.
fn check_reasoning_echo(messages: &[Value], expected: &[Value]) -> Result<(), String> {
    let Some(echo) = messages.iter().rev().nth(1).filter(|m| m["role"] == "assistant") else {
        return Err("the tool results follow no assistant message".into());
    };
    let content = echo["content"].as_array().cloned().unwrap_or_default();
    let reasoning: Vec<&Value> = content.iter().filter(|b| b.get("reasoningContent").is_some()).collect();
    if reasoning.len() != expected.len() || reasoning.iter().zip(expected).any(|(got, want)| *got != want) {
        return Err(format!(
            "the assistant message must carry the {} reasoning blocks of the previous response, unchanged",
            expected.len()
        ));
    }
    let first_tool = content.iter().position(|b| b.get("toolUse").is_some()).unwrap_or(content.len());
    let last_reasoning = content.iter().rposition(|b| b.get("reasoningContent").is_some()).unwrap_or(0);
    if !expected.is_empty() && last_reasoning > first_tool {
        return Err("reasoning blocks must precede the toolUse blocks they led to".into());
    }
    Ok(())
}

/// Whether `arn` follows the service's harness ARN pattern:
/// `arn:([^:]+)?:bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:harness/[a-zA-Z][a-zA-Z0-9_]{0,39}-[a-zA-Z0-9]{10}`.
pub fn is_harness_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    let [prefix, _partition, service, region, account, resource] = parts[..] else { return false };
    let Some((name, id)) = resource.strip_prefix("harness/").and_then(|r| r.split_once('-')) else { return false };
    prefix == "arn"
        && service == "bedrock-agentcore"
        && !region.is_empty()
        && region.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && (1..=40).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && id.len() == 10
        && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Decodes what a call sends, checking the resume contract. `Err` carries the service's complaint.
fn decode_input(messages: &[Value], known_session: bool) -> Result<RecordedInput, String> {
    let Some(last) = messages.last() else { return Err("messages must not be empty".into()) };
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let results: Vec<&Value> = blocks.iter().filter_map(|b| b.get("toolResult")).collect();
    if results.is_empty() {
        let text = blocks.iter().filter_map(|b| b["text"].as_str()).collect::<String>();
        return Ok(if known_session {
            RecordedInput::Message(text)
        } else {
            RecordedInput::Kickoff { prompt: Some(text), outcome: None }
        });
    }
    let echoed: Vec<&str> = messages
        .iter()
        .rev()
        .nth(1)
        .filter(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_array())
        .map(|c| c.iter().filter_map(|b| b.pointer("/toolUse/toolUseId").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    let mut unique = echoed.clone();
    unique.sort_unstable();
    unique.dedup();
    if unique.len() != echoed.len() {
        return Err("ValidationException: the assistant message has duplicate Ids".into());
    }
    if results.len() > echoed.len() {
        return Err("ValidationException: the number of toolResult blocks exceeds toolUse blocks".into());
    }
    let mut decoded = Vec::new();
    for result in results {
        let id = result["toolUseId"].as_str().unwrap_or_default();
        if !echoed.contains(&id) {
            return Err(format!("ValidationException: toolResult {id} answers no toolUse"));
        }
        let text: String =
            result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
        decoded.push(if result["status"] == "error" { ToolResult::error(id, text) } else { ToolResult::ok(id, text) });
    }
    Ok(RecordedInput::ToolResults(decoded))
}

/// Consumes the session's next turn: the input is logged, the reasoning a resume must echo is remembered.
/// `false` when the script has run out.
fn commit_turn(state: &mut State, session_id: &str, input: RecordedInput, turn: &ScriptTurn) -> bool {
    let number = state.player.served(session_id);
    if state.player.take(session_id, Some(&input)).is_none() {
        return false;
    }
    if state.options.reasoning && turn.stop == ScriptStop::ToolUse {
        state.reasoning_echo.insert(session_id.to_string(), reasoning_echo(number));
    } else {
        state.reasoning_echo.remove(session_id);
    }
    state.sessions.insert(session_id.to_string());
    state.log.record(input);
    true
}
