//! The emulator's one route: checks the credentials and headers the API requires, answers injected failures,
//! checks what a minted credential may do (see `credentials`), then dispatches on method and path.

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::server::{ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{HeaderMap, Method, Response, StatusCode};
use serde_json::{Value, json};

use crate::emulator::credentials::authorize;
use crate::emulator::records::Query;
use crate::emulator::replies::{error, invalid, not_found, page};
use crate::emulator::resources::{
    add_resource, archive, create, get, list, list_files, remove_resource, update, upload,
};
use crate::emulator::sessions::{create_session, list_events, list_sessions, open_stream, post_events};
use crate::emulator::skills;
use crate::emulator::state::{Kind, State};
use crate::emulator::threads;
use crate::emulator::work_endpoints;
use crate::wire::client::MANAGED_AGENTS_BETA;

/// The credential a request carries: `x-api-key`, else an `Authorization: Bearer <token>` (the official SDKs send
/// either).
pub(super) fn credential(headers: &HeaderMap) -> Option<&str> {
    let present = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty());
    let bearer = present("authorization").and_then(|value| {
        value.get(..7).filter(|scheme| scheme.eq_ignore_ascii_case("bearer ")).and_then(|_| value.get(7..))
    });
    present("x-api-key").or(bearer.map(str::trim).filter(|token| !token.is_empty()))
}

/// Answers one request (the scaffold logged it first).
pub(super) async fn route(state: Shared<State>, request: ReceivedRequest) -> Response<ResponseBody> {
    let path = request.uri.path().to_string();
    let query = Query::parse(request.uri.query());
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let beta = request.headers.get("anthropic-beta").and_then(|v| v.to_str().ok()).map(str::to_string);
    let Some(key) = credential(&request.headers) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "an x-api-key header or an Authorization: Bearer token is required",
        );
    };
    state.lock().log.record_credential(key);
    if request.headers.get("anthropic-version").is_none() {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "anthropic-version header is required");
    }
    if let Some(status) = injected_failure(&state, &request.method, &path) {
        let kind = if status == StatusCode::CONFLICT { "invalid_request_error" } else { "api_error" };
        return error(status, kind, "injected failure");
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let is_files = segments.get(1) == Some(&"files");
    if !is_files && !beta.as_deref().is_some_and(|b| b.split(',').any(|b| b.trim() == MANAGED_AGENTS_BETA)) {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "the managed-agents beta header is required");
    }
    let authorized = authorize(&state.lock(), key, &request.method, &segments);
    if let Err(message) = authorized {
        return error(StatusCode::FORBIDDEN, "permission_error", &message);
    }
    match (&request.method, segments.as_slice()) {
        (&Method::POST, ["v1", "agents"]) => create(&state, Kind::Agent, body),
        (&Method::GET, ["v1", "agents"]) => list(&state, &query, |s| s.agents.values().cloned().collect()),
        (&Method::GET, ["v1", "agents", id]) => get(&state, |s| s.agents.get(*id).cloned(), "agent"),
        (&Method::POST, ["v1", "agents", id]) => update(&state, Kind::Agent, id, body),
        (&Method::POST, ["v1", "agents", id, "archive"]) => archive(&state, |s| s.agents.get_mut(*id), "agent"),
        (&Method::POST, ["v1", "environments"]) => create(&state, Kind::Environment, body),
        (&Method::GET, ["v1", "environments"]) => list(&state, &query, |s| s.environments.values().cloned().collect()),
        (&Method::GET, ["v1", "environments", id]) => get(&state, |s| s.environments.get(*id).cloned(), "environment"),
        (&Method::POST, ["v1", "environments", id]) => update(&state, Kind::Environment, id, body),
        (&Method::POST, ["v1", "environments", id, "archive"]) => {
            archive(&state, |s| s.environments.get_mut(*id), "environment")
        }
        (method, ["v1", "environments", id, "work", rest @ ..]) => {
            work_endpoints::serve(&state, method, id, rest, &query, &request.headers, &request.body).await
        }
        (&Method::DELETE, ["v1", "environments", id]) => match state.lock().environments.remove(*id) {
            Some(_) => json_response(StatusCode::OK, &json!({"id": id, "type": "environment_deleted"})),
            None => not_found("environment"),
        },
        (&Method::POST, ["v1", "sessions"]) => create_session(&state, body).await,
        (&Method::GET, ["v1", "sessions"]) => list_sessions(&state, &query),
        (&Method::GET, ["v1", "sessions", id]) => {
            get(&state, |s| s.sessions.get(*id).map(|x| x.record.clone()), "session")
        }
        (&Method::POST, ["v1", "sessions", id]) => update(&state, Kind::Session, id, body),
        (&Method::POST, ["v1", "sessions", id, "archive"]) => {
            archive(&state, |s| s.sessions.get_mut(*id).map(|x| &mut x.record), "session")
        }
        (&Method::DELETE, ["v1", "sessions", id]) => {
            let mut guard = state.lock();
            match guard.sessions.remove(*id) {
                Some(_) => {
                    guard.player.forget(id);
                    json_response(StatusCode::OK, &json!({"id": id, "type": "session_deleted"}))
                }
                None => not_found("session"),
            }
        }
        (&Method::POST, ["v1", "sessions", id, "events"]) => post_events(&state, id, body).await,
        (&Method::GET, ["v1", "sessions", id, "events"]) => list_events(&state, id, &query),
        (&Method::GET, ["v1", "sessions", id, "events", "stream"]) => open_stream(&state, id, &query),
        (&Method::GET, ["v1", "sessions", id, "threads"]) => threads::list_threads(&state, id, &query),
        (&Method::GET, ["v1", "sessions", id, "threads", thread]) => threads::get_thread(&state, id, thread),
        (&Method::POST, ["v1", "sessions", id, "threads", thread, "archive"]) => {
            threads::archive_thread(&state, id, thread)
        }
        (&Method::GET, ["v1", "sessions", id, "threads", thread, "events"]) => {
            threads::list_thread_events(&state, id, thread, &query)
        }
        (&Method::GET, ["v1", "sessions", id, "threads", thread, "stream"]) => {
            threads::open_thread_stream(&state, id, thread, &query)
        }
        (&Method::POST, ["v1", "sessions", id, "resources"]) => add_resource(&state, id, body),
        (&Method::GET, ["v1", "sessions", id, "resources"]) => {
            let state = state.lock();
            match state.sessions.get(*id) {
                Some(session) => {
                    let resources = session.record["resources"].as_array().cloned().unwrap_or_default();
                    page(&state, resources, &query, false)
                }
                None => not_found("session"),
            }
        }
        (&Method::DELETE, ["v1", "sessions", id, "resources", resource]) => remove_resource(&state, id, resource),
        (&Method::GET, ["v1", "skills", id, "versions", version]) => skills::get_version(&state.lock(), id, version),
        (&Method::GET, ["v1", "skills", id, "versions", version, "content"]) => {
            skills::content(&state.lock(), id, version)
        }
        (&Method::POST, ["v1", "files"]) => upload(&state, &request),
        (&Method::GET, ["v1", "files"]) => list_files(&state, &query),
        (&Method::GET, ["v1", "files", id]) => get(&state, |s| s.files.get(*id).map(|(meta, _)| meta.clone()), "file"),
        (&Method::GET, ["v1", "files", id, "content"]) => match state.lock().files.get(*id) {
            Some((meta, _)) if meta["downloadable"] == json!(false) => invalid("this file is not downloadable"),
            Some((_, bytes)) => Response::new(ResponseBody::full(bytes.clone())),
            None => not_found("file"),
        },
        (&Method::DELETE, ["v1", "files", id]) => match state.lock().files.remove(*id) {
            Some(_) => json_response(StatusCode::OK, &json!({"id": id, "type": "file_deleted"})),
            None => not_found("file"),
        },
        _ => not_found("endpoint"),
    }
}

/// The status of an injected failure for this request, counting it down.
fn injected_failure(state: &Shared<State>, method: &Method, path: &str) -> Option<StatusCode> {
    let mut state = state.lock();
    let failure = state.injected.iter_mut().find(|f| f.remaining > 0 && f.method == method && f.path == path)?;
    failure.remaining -= 1;
    Some(failure.status)
}
