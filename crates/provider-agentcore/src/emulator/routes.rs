//! The routes: the control plane (`/harnesses…`, the token vault's `/identities/…`), runtime commands
//! (`/runtimes/{arn}/commands`) and `InvokeHarness` (`/harnesses/invoke`); anything else is a 404 in the AWS
//! error shape.

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::Method;
use managed_agents_core::http::Response;
use managed_agents_core::http::server::{ReceivedRequest, ResponseBody};
use serde_json::Value;

use super::encoding::aws_error;
use super::runtime::command_response;
use super::sessions::{INVOKE_PATH, SESSION_HEADER, invoke};
use super::state::State;
use super::vault::VAULT_PREFIX;

/// Whether `path` is the control plane's (every `/harnesses…` path but `InvokeHarness`, and the token vault's).
pub(super) fn is_control(path: &str) -> bool {
    (path != INVOKE_PATH && path.starts_with("/harnesses")) || path.starts_with(VAULT_PREFIX)
}

/// Answers one request.
pub(super) async fn route(state: Shared<State>, request: ReceivedRequest) -> Response<ResponseBody> {
    let path = request.uri.path();
    if path != INVOKE_PATH {
        let (response, delay) = {
            let mut guard = state.lock();
            let options = guard.control.options();
            let delay = if request.method == Method::GET && path.starts_with("/harnesses/") {
                options.get_delay
            } else if request.method == Method::POST && path == "/harnesses" {
                options.create_delay
            } else {
                None
            };
            (guard.control.serve(&request), delay)
        };
        if let Some(response) = response {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            return response;
        }
    }
    if let Some(operation) = path.strip_prefix(VAULT_PREFIX)
        && request.method == Method::POST
    {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        return state.lock().vault.serve(operation, &body);
    }
    if request.method == Method::POST && path.starts_with("/runtimes/") && path.ends_with("/commands") {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let Some(session_id) = request.headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
            return aws_error(400, "the runtime session id header is required");
        };
        return command_response(&state, path, session_id, &body);
    }
    if request.method != Method::POST || path != INVOKE_PATH {
        return aws_error(404, "only InvokeHarness and InvokeAgentRuntimeCommand are emulated");
    }
    invoke(state, &request)
}
