//! What each credential may do. The account's API key (any credential the emulator did not mint) may do
//! anything. A self-hosted environment's key is good for that environment's work endpoints and for its sessions'
//! worker calls; a work item's sessions token (carried in its `secret`) for that item's own work endpoints and
//! for its session's worker calls. The worker calls of a session are its retrieval and its events: listed,
//! streamed and sent — what the official SDK's environment worker makes — and reading skill versions (which it
//! downloads).

use managed_agents_core::http::Method;

use crate::emulator::state::State;

/// Whether `key` may make the request `method` on `segments` (its path split at `/`); `Err` says why not.
pub(super) fn authorize(state: &State, key: &str, method: &Method, segments: &[&str]) -> Result<(), String> {
    let (environment, item) = if let Some(environment) = state.work.environment_of_key(key) {
        (environment, None)
    } else if let Some(item) = state.work.item_of_token(key) {
        (item.environment_id.as_str(), Some(item))
    } else {
        return Ok(());
    };
    let allowed = match segments {
        ["v1", "environments", id, "work", rest @ ..] => {
            *id == environment && item.is_none_or(|item| rest.first() == Some(&item.id.as_str()))
        }
        ["v1", "sessions", id, rest @ ..] => {
            worker_call(method, rest)
                && state.sessions.get(*id).is_some_and(|s| s.record["environment_id"] == environment)
                && item.is_none_or(|item| item.session_id == *id)
        }
        // The skills of the sessions it serves, which a worker downloads.
        ["v1", "skills", _, "versions", ..] => *method == Method::GET,
        _ => false,
    };
    if allowed {
        return Ok(());
    }
    Err(match item {
        None => format!("this environment key is only valid for environment {environment}'s work and sessions"),
        Some(item) => format!("this sessions token is only valid for work item {} and its session", item.id),
    })
}

/// Whether a request under `/v1/sessions/{id}` is one of a worker's: `GET` the session, `GET` or `POST` its
/// events, `GET` its event stream.
fn worker_call(method: &Method, rest: &[&str]) -> bool {
    matches!((method, rest), (&Method::GET, [] | ["events"] | ["events", "stream"]) | (&Method::POST, ["events"]))
}
