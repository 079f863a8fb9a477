//! The work endpoints of a self-hosted environment (`/v1/environments/{id}/work…`): poll, ack, heartbeat, stop,
//! retrieve, update, list and stats, in the shapes the official SDK's `Work` resource parses (see `work` for
//! the queue they act on).
//!
//! A poll with no work answers `200` with a JSON `null`, which the SDK turns into `None`.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{HeaderMap, Method, Response, StatusCode};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::emulator::records::{Query, merge_metadata};
use crate::emulator::replies::{error, invalid, not_found, ordered, page};
use crate::emulator::state::State;
use crate::emulator::work::{WorkItem, WorkState, expire, is_self_hosted};

/// The literal a first heartbeat sends as `expected_last_heartbeat`.
const NO_HEARTBEAT: &str = "NO_HEARTBEAT";

/// How long un-acked items wait before a poll that names no `reclaim_older_than_ms` offers them again.
const DEFAULT_RECLAIM: Duration = Duration::from_millis(5000);

/// Serves `method` on `/v1/environments/{environment_id}/work/{rest…}`; `body` is the raw request body.
pub(super) async fn serve(
    state: &Shared<State>,
    method: &Method,
    environment_id: &str,
    rest: &[&str],
    query: &Query,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<ResponseBody> {
    let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        match serde_json::from_slice(body) {
            Ok(body) => body,
            Err(cause) => return invalid(&format!("the body is not JSON: {cause}")),
        }
    };
    {
        let mut guard = state.lock();
        match guard.environments.get(environment_id) {
            None => return not_found("environment"),
            Some(record) if !is_self_hosted(record) => {
                return invalid(&format!("environment {environment_id} is not self_hosted: it has no work queue"));
            }
            Some(_) => {}
        }
        expire(&mut guard);
    }
    match (method, rest) {
        (&Method::GET, ["poll"]) => poll(state, environment_id, query, headers).await,
        (&Method::GET, ["stats"]) => stats(&state.lock(), environment_id),
        (&Method::GET, []) => list(&state.lock(), environment_id, query),
        (&Method::GET, [id]) => with_item(state, environment_id, id, |_, item| Ok(item.to_json(false))),
        (&Method::POST, [id]) => update(state, environment_id, id, &body),
        (&Method::POST, [id, "ack"]) => with_item(state, environment_id, id, ack),
        (&Method::POST, [id, "heartbeat"]) => heartbeat(state, environment_id, id, query),
        (&Method::POST, [id, "stop"]) => stop(state, environment_id, id, &body),
        _ => not_found("endpoint"),
    }
}

/// Runs `act` on item `id` of `environment_id` with the current time: its `Ok` is the `200` body, its `Err` the
/// answer; `404` without such an item.
fn with_item(
    state: &Shared<State>,
    environment_id: &str,
    id: &str,
    act: impl FnOnce(String, &mut WorkItem) -> Result<Value, Box<Response<ResponseBody>>>,
) -> Response<ResponseBody> {
    let mut guard = state.lock();
    let now = guard.now();
    let Some(item) = guard.work.item_mut(environment_id, id) else { return not_found("work item") };
    match act(now, item) {
        Ok(body) => json_response(StatusCode::OK, &body),
        Err(response) => *response,
    }
}

/// A query parameter parsed as an integer in `range`; `Ok(None)` when absent, `Err` the `400`.
fn integer(
    query: &Query,
    name: &str,
    range: std::ops::RangeInclusive<u64>,
) -> Result<Option<u64>, Box<Response<ResponseBody>>> {
    match query.get(name) {
        None => Ok(None),
        Some(value) => match value.parse::<u64>() {
            Ok(n) if range.contains(&n) => Ok(Some(n)),
            _ => {
                Err(Box::new(invalid(&format!("{name}: must be an integer from {} to {}", range.start(), range.end()))))
            }
        },
    }
}

/// `GET …/work/poll`: offers the first claimable item, waiting up to `block_ms` (1–999; absent: not at all) for
/// one to be queued, to lapse or to become reclaimable; `null` when none came.
async fn poll(
    state: &Shared<State>,
    environment_id: &str,
    query: &Query,
    headers: &HeaderMap,
) -> Response<ResponseBody> {
    let block = match integer(query, "block_ms", 1..=999) {
        Ok(block) => Duration::from_millis(block.unwrap_or(0)),
        Err(response) => return *response,
    };
    let reclaim = match integer(query, "reclaim_older_than_ms", 0..=u64::MAX) {
        Ok(reclaim) => reclaim.map_or(DEFAULT_RECLAIM, Duration::from_millis),
        Err(response) => return *response,
    };
    let worker = headers.get("anthropic-worker-id").and_then(|v| v.to_str().ok()).map(str::trim);
    let deadline = Instant::now() + block;
    let arrived = {
        let mut guard = state.lock();
        if let Some(worker) = worker.filter(|w| !w.is_empty()) {
            guard.work.saw_worker(environment_id, worker);
        }
        Arc::clone(&guard.work.arrived)
    };
    loop {
        // Enabled before the queue is looked at: an item queued after the look wakes this wait.
        let queued = arrived.notified();
        tokio::pin!(queued);
        queued.as_mut().enable();
        let wake = {
            let mut guard = state.lock();
            expire(&mut guard);
            if let Some(item) = guard.work.claim(environment_id, reclaim) {
                return json_response(StatusCode::OK, &item.to_json(true));
            }
            if Instant::now() >= deadline {
                return json_response(StatusCode::OK, &Value::Null);
            }
            guard.work.next_change(environment_id, reclaim).map_or(deadline, |at| at.min(deadline))
        };
        tokio::select! {
            () = &mut queued => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}

/// `POST …/work/{id}/ack`: a queued item leaves the queue (`starting`) and its lease starts; `409` otherwise.
fn ack(now: String, item: &mut WorkItem) -> Result<Value, Box<Response<ResponseBody>>> {
    if item.state != WorkState::Queued {
        let message = format!("work item {} is {}, not queued", item.id, item.state.name());
        return Err(Box::new(error(StatusCode::CONFLICT, "invalid_request_error", &message)));
    }
    item.state = WorkState::Starting;
    item.acknowledged_at = Some(now);
    item.offered = None;
    item.last_heartbeat = None;
    item.renewed = Instant::now();
    Ok(item.to_json(false))
}

/// `POST …/work/{id}/heartbeat`: renews the lease when `expected_last_heartbeat` matches the stored heartbeat
/// (`NO_HEARTBEAT` for none), else `412` with the lease as the server holds it. A `stopping` or `stopped` item is
/// not compared and not renewed (`lease_extended: false`); a queued one has no lease to renew (`412`). No
/// `expected_last_heartbeat` renews unconditionally; `desired_ttl_seconds` (1–86400) sets the lease's TTL from
/// this beat on.
fn heartbeat(state: &Shared<State>, environment_id: &str, id: &str, query: &Query) -> Response<ResponseBody> {
    let desired = match integer(query, "desired_ttl_seconds", 1..=86_400) {
        Ok(desired) => desired,
        Err(response) => return *response,
    };
    let expected = query.get("expected_last_heartbeat").map(str::to_string);
    with_item(state, environment_id, id, |now, item| {
        let lease = |item: &WorkItem, extended: bool| {
            json!({"last_heartbeat": item.last_heartbeat, "lease_extended": extended, "state": item.state.name(),
                "ttl_seconds": item.ttl_seconds()})
        };
        if matches!(item.state, WorkState::Stopping | WorkState::Stopped) {
            let mut body = lease(item, false);
            body["type"] = json!("work_heartbeat");
            body["last_heartbeat"] = json!(item.last_heartbeat.as_deref().unwrap_or_default());
            return Ok(body);
        }
        let matches = match expected.as_deref() {
            None => true,
            Some(NO_HEARTBEAT) => item.last_heartbeat.is_none(),
            Some(expected) => item.last_heartbeat.as_deref() == Some(expected),
        };
        if item.state == WorkState::Queued || !matches {
            return Err(Box::new(precondition_failed(lease(item, false))));
        }
        if let Some(seconds) = desired {
            item.ttl = Duration::from_secs(seconds);
        }
        item.state = WorkState::Active;
        item.started_at.get_or_insert_with(|| now.clone());
        item.last_heartbeat = Some(now);
        item.renewed = Instant::now();
        let mut body = lease(item, true);
        body["type"] = json!("work_heartbeat");
        Ok(body)
    })
}

/// The `412` of a refused heartbeat, carrying the lease as the server holds it (`error.details.current_state`).
fn precondition_failed(current_state: Value) -> Response<ResponseBody> {
    let body = json!({"type": "error", "request_id": "req_emulated", "error": {"type": "invalid_request_error",
        "message": "expected_last_heartbeat does not match the stored heartbeat: another worker may hold the lease",
        "details": {"error_code": "heartbeat_precondition_failed", "current_state": current_state}}});
    json_response(StatusCode::PRECONDITION_FAILED, &body)
}

/// `POST …/work/{id}/stop` (`{force}`): a held item is asked to stop (`stopping`), or stopped at once with
/// `force` (an item nobody holds is stopped at once either way); `409` when it already stopped.
fn stop(state: &Shared<State>, environment_id: &str, id: &str, body: &Value) -> Response<ResponseBody> {
    let force = match (body, &body["force"]) {
        (Value::Null, _) | (Value::Object(_), Value::Null) => false,
        (Value::Object(_), Value::Bool(force)) => *force,
        (Value::Object(_), _) => return invalid("force: must be a boolean"),
        _ => return invalid("the body must be a JSON object"),
    };
    with_item(state, environment_id, id, |now, item| {
        match item.state {
            WorkState::Stopped => {
                let message = format!("work item {} is already stopped", item.id);
                return Err(Box::new(error(StatusCode::CONFLICT, "invalid_request_error", &message)));
            }
            WorkState::Stopping if !force => {}
            WorkState::Starting | WorkState::Active if !force => {
                item.state = WorkState::Stopping;
                item.stop_requested_at = Some(now);
            }
            _ => {
                item.state = WorkState::Stopped;
                item.stop_requested_at.get_or_insert_with(|| now.clone());
                item.stopped_at = Some(now);
            }
        }
        Ok(item.to_json(false))
    })
}

/// `POST …/work/{id}` (`{metadata}`): merges the patch; a key set to `null` or `""` is deleted.
fn update(state: &Shared<State>, environment_id: &str, id: &str, body: &Value) -> Response<ResponseBody> {
    let Some(patch) = body.get("metadata") else { return invalid("metadata: field required") };
    let Some(patch) = patch.as_object() else { return invalid("metadata: must be an object") };
    if let Some((key, _)) = patch.iter().find(|(_, v)| !(v.is_string() || v.is_null())) {
        return invalid(&format!("metadata.{key}: must be a string or null"));
    }
    let patch: serde_json::Map<String, Value> =
        patch.iter().map(|(key, value)| (key.clone(), if value == "" { Value::Null } else { value.clone() })).collect();
    with_item(state, environment_id, id, |_, item| {
        let mut record = json!({"metadata": item.metadata.take()});
        merge_metadata(&mut record, Some(&Value::Object(patch)));
        item.metadata = record["metadata"].take();
        Ok(item.to_json(false))
    })
}

/// `GET …/work`: the environment's items, oldest first, in pages (`limit`, `page`; `next_page`).
fn list(state: &State, environment_id: &str, query: &Query) -> Response<ResponseBody> {
    let items = state.work.of_environment(environment_id).map(|item| item.to_json(false)).collect();
    match ordered(items, query, "created_at") {
        Ok(items) => page(state, items, query, false),
        Err(message) => invalid(message),
    }
}

/// `GET …/work/stats`: queued items nobody was offered (`depth`), offered but un-acked ones (`pending`), the
/// oldest of either (`oldest_queued_at`), and the workers that polled in the last 30 s.
fn stats(state: &State, environment_id: &str) -> Response<ResponseBody> {
    let queued: Vec<&WorkItem> =
        state.work.of_environment(environment_id).filter(|item| item.state == WorkState::Queued).collect();
    let pending = queued.iter().filter(|item| item.offered.is_some()).count();
    let oldest = queued.iter().map(|item| item.queued_at.as_str()).min();
    let body = json!({"type": "work_queue_stats", "depth": queued.len() - pending, "pending": pending,
        "oldest_queued_at": oldest, "workers_polling": state.work.workers_polling(environment_id)});
    json_response(StatusCode::OK, &body)
}
