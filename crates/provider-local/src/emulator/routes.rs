//! The emulator's one route, `POST …/chat/completions`, and what it refuses as a strict server (OpenAI) does.

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::server::{ReceivedRequest, ResponseBody};
use managed_agents_core::http::{HeaderMap, Method, Response, StatusCode};
use serde_json::Value;

use crate::emulator::encode::error_response;
use crate::emulator::playback::{State, complete};

/// Whether a request is for the route: a `POST` to a path ending in `/chat/completions` (under any API root).
pub(super) fn is_chat(method: &Method, path: &str) -> bool {
    method == Method::POST && path.ends_with("/chat/completions")
}

/// Serves one request: a conversation the route accepts plays its next turn.
pub(super) async fn route(state: Shared<State>, request: ReceivedRequest) -> Response<ResponseBody> {
    if !is_chat(&request.method, request.uri.path()) {
        return error_response(StatusCode::NOT_FOUND, "only POST /v1/chat/completions is emulated");
    }
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(error) => return error_response(StatusCode::BAD_REQUEST, &format!("invalid JSON: {error}")),
    };
    record_wire_settings(&state, &request.headers, &body);
    if let Err(problem) = validate_messages(&body) {
        return error_response(StatusCode::BAD_REQUEST, &problem);
    }
    complete(state, body).await
}

/// Records, for the model-configuration scenarios, the model a request names and the bearer key it carries.
fn record_wire_settings(state: &Shared<State>, headers: &HeaderMap, body: &Value) {
    let log = &state.lock().log;
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        log.record_model(model);
    }
    let bearer = headers.get("authorization").and_then(|value| value.to_str().ok());
    if let Some(key) = bearer.and_then(|value| value.strip_prefix("Bearer ")) {
        log.record_credential(key);
    }
}

/// Rejects conversations a strict server (OpenAI) rejects: a tool call left unanswered before the next
/// non-tool message, a tool message answering no call, arguments that are not a string, a `null` content
/// without tool calls.
pub fn validate_messages(body: &Value) -> Result<(), String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err("messages: field required".into());
    };
    let mut open: Vec<&str> = Vec::new();
    for (n, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        if role == "tool" {
            let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            let Some(position) = open.iter().position(|open_id| *open_id == id) else {
                return Err(format!("messages[{n}]: a tool message answers `{id}`, which no pending call has"));
            };
            open.remove(position);
            continue;
        }
        if !open.is_empty() {
            return Err(format!("messages[{n}]: tool calls {open:?} must be answered before a {role} message"));
        }
        if role == "assistant" {
            let calls = message.get("tool_calls").and_then(Value::as_array);
            if message.get("content").is_none_or(Value::is_null) && calls.is_none_or(|c| c.is_empty()) {
                return Err(format!("messages[{n}]: an assistant message needs content or tool calls"));
            }
            for call in calls.into_iter().flatten() {
                if !call.pointer("/function/arguments").is_some_and(Value::is_string) {
                    return Err(format!("messages[{n}]: function arguments must be a JSON string"));
                }
                open.push(call.get("id").and_then(Value::as_str).unwrap_or_default());
            }
        }
    }
    Ok(())
}
