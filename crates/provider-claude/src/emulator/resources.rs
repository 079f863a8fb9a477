//! The control plane's resources: agents and environments (create, update, get, archive, list), files
//! (upload, list, metadata) and a session's resources (attach, remove).

use managed_agents_conformance::emulator::Shared;
use managed_agents_core::http::server::{ReceivedRequest, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use serde_json::{Value, json};

use crate::emulator::records::{self, Query, TimeFilter};
use crate::emulator::replies::{error, invalid, not_found, ordered, page};
use crate::emulator::roster;
use crate::emulator::state::{Kind, State};
use crate::wire::files::content_type;

pub(super) fn create(state: &Shared<State>, kind: Kind, body: Value) -> Response<ResponseBody> {
    let Value::Object(body) = body else { return invalid("the body must be a JSON object") };
    let mut state = state.lock();
    let id = state.id(if kind == Kind::Agent { "agent" } else { "env" });
    let now = state.now();
    let record = match kind {
        Kind::Agent => records::new_agent(&id, &now, &body).and_then(|mut record| {
            roster::resolve(&state.agents, &mut record)?;
            Ok(record)
        }),
        _ => records::new_environment(&id, &now, &body),
    };
    let record = match record {
        Ok(record) => record,
        Err(message) => return invalid(&message),
    };
    // Names are unique per kind, archived records included (their names stay taken).
    let existing = match kind {
        Kind::Agent => &state.agents,
        _ => &state.environments,
    };
    if existing.values().any(|other| other["name"] == record["name"]) {
        let what = if kind == Kind::Agent { "agent" } else { "environment" };
        return error(
            StatusCode::CONFLICT,
            "invalid_request_error",
            &format!("an {what} named {} already exists", record["name"]),
        );
    }
    match kind {
        Kind::Agent => state.agents.insert(id, record.clone()),
        _ => state.environments.insert(id, record.clone()),
    };
    json_response(StatusCode::OK, &record)
}

/// `POST /v1/{agents,environments,sessions}/{id}`: a partial update. An agent gets a new version (a `version`
/// in the body must match the current one: 409 otherwise).
pub(super) fn update(state: &Shared<State>, kind: Kind, id: &str, body: Value) -> Response<ResponseBody> {
    let Value::Object(body) = body else { return invalid("the body must be a JSON object") };
    let mut state = state.lock();
    let now = state.now();
    // A roster is resolved against the other agents (an update may name any of them).
    let agents = if kind == Kind::Agent { state.agents.clone() } else { Default::default() };
    let (record, what) = match kind {
        Kind::Agent => (state.agents.get_mut(id), "agent"),
        Kind::Environment => (state.environments.get_mut(id), "environment"),
        Kind::Session => (state.sessions.get_mut(id).map(|s| &mut s.record), "session"),
    };
    let Some(record) = record else { return not_found(what) };
    if !record["archived_at"].is_null() {
        return error(StatusCode::CONFLICT, "invalid_request_error", &format!("the {what} is archived"));
    }
    let mut updated = record.clone();
    let applied = match kind {
        Kind::Agent => {
            if let Some(expected) = body.get("version").filter(|v| !v.is_null())
                && *expected != updated["version"]
            {
                return error(StatusCode::CONFLICT, "invalid_request_error", "version: does not match the agent");
            }
            updated["version"] = json!(updated["version"].as_u64().unwrap_or(1) + 1);
            records::apply_agent(&mut updated, &body).and_then(|()| roster::resolve(&agents, &mut updated))
        }
        Kind::Environment => records::apply_environment(&mut updated, &body),
        Kind::Session => {
            if let Some(title) = body.get("title") {
                updated["title"] = title.clone();
            }
            records::merge_metadata(&mut updated, body.get("metadata"));
            Ok(())
        }
    };
    if let Err(message) = applied {
        return invalid(&message);
    }
    updated["updated_at"] = json!(now);
    *record = updated.clone();
    json_response(StatusCode::OK, &updated)
}

pub(super) fn get(
    state: &Shared<State>,
    find: impl FnOnce(&State) -> Option<Value>,
    what: &str,
) -> Response<ResponseBody> {
    match find(&state.lock()) {
        Some(record) => json_response(StatusCode::OK, &record),
        None => not_found(what),
    }
}

pub(super) fn archive(
    state: &Shared<State>,
    find: impl FnOnce(&mut State) -> Option<&mut Value>,
    what: &str,
) -> Response<ResponseBody> {
    let mut state = state.lock();
    let now = state.now();
    match find(&mut state) {
        Some(record) => {
            record["archived_at"] = json!(now);
            record["updated_at"] = json!(now);
            json_response(StatusCode::OK, record)
        }
        None => not_found(what),
    }
}

/// Lists agents or environments: archived ones only with `include_archived=true`; `created_at[…]` filters.
pub(super) fn list(
    state: &Shared<State>,
    query: &Query,
    all: impl FnOnce(&State) -> Vec<Value>,
) -> Response<ResponseBody> {
    let state = state.lock();
    let filter = match TimeFilter::parse(query) {
        Ok(filter) => filter,
        Err(message) => return invalid(&message),
    };
    let include_archived = query.flag("include_archived");
    let items: Vec<Value> = all(&state)
        .into_iter()
        .filter(|r| include_archived || r["archived_at"].is_null())
        .filter(|r| filter.admits(r, "created_at"))
        .collect();
    match ordered(items, query, "created_at") {
        Ok(items) => page(&state, items, query, false),
        Err(message) => invalid(message),
    }
}

/// Lists files newest first in the files API's own paging: `limit` (default 20, at most the page size),
/// `after_id` / `before_id`, `scope_id`; `has_more`, `first_id`, `last_id`.
pub(super) fn list_files(state: &Shared<State>, query: &Query) -> Response<ResponseBody> {
    let state = state.lock();
    let scope = query.get("scope_id");
    let mut files: Vec<Value> = state
        .files
        .values()
        .map(|(meta, _)| meta.clone())
        .filter(|meta| scope.is_none_or(|s| meta["scope"]["id"] == json!(s)))
        .collect();
    files.sort_by(|a, b| {
        (b["created_at"].as_str(), b["id"].as_str()).cmp(&(a["created_at"].as_str(), a["id"].as_str()))
    });
    let position = |id: &str| files.iter().position(|f| f["id"] == json!(id));
    let limit =
        query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).min(state.options.page_size).max(1);
    let (start, end) = match (query.get("after_id"), query.get("before_id")) {
        (Some(after), _) => match position(after) {
            Some(at) => (at + 1, (at + 1).saturating_add(limit).min(files.len())),
            None => return invalid("after_id: no such file"),
        },
        (None, Some(before)) => match position(before) {
            Some(at) => (at.saturating_sub(limit), at),
            None => return invalid("before_id: no such file"),
        },
        (None, None) => (0, limit.min(files.len())),
    };
    let data = files.get(start..end).unwrap_or_default().to_vec();
    let has_more =
        if query.get("before_id").is_some() && query.get("after_id").is_none() { start > 0 } else { end < files.len() };
    let first = data.first().map(|f| f["id"].clone()).unwrap_or(Value::Null);
    let last = data.last().map(|f| f["id"].clone()).unwrap_or(Value::Null);
    json_response(StatusCode::OK, &json!({"data": data, "has_more": has_more, "first_id": first, "last_id": last}))
}

pub(super) fn add_resource(state: &Shared<State>, session_id: &str, body: Value) -> Response<ResponseBody> {
    let mut guard = state.lock();
    if !guard.sessions.contains_key(session_id) {
        return not_found("session");
    }
    let resource = match resource_record(&mut guard, body) {
        Ok(resource) => resource,
        Err(response) => return *response,
    };
    let Some(session) = guard.sessions.get_mut(session_id) else { return not_found("session") };
    if let Some(list) = session.record["resources"].as_array_mut() {
        list.push(resource.clone());
    }
    json_response(StatusCode::OK, &resource)
}

/// A session resource as the API keeps it, from what a client sent: a file (which must exist; an `id`, its
/// mount path defaulting to `/mnt/session/uploads/<file_id>`), a memory store (`access` defaulting to
/// `read_write`, mounted under `/mnt/memory/`), any other kind as sent with an `id`. `Err` is the answer.
fn resource_record(state: &mut State, body: Value) -> Result<Value, Box<Response<ResponseBody>>> {
    let now = state.now();
    let mut resource = body;
    if !resource.is_object() {
        return Err(Box::new(invalid("a resource must be a JSON object")));
    }
    match resource["type"].as_str() {
        Some("file") => {
            if !resource["file_id"].as_str().is_some_and(|file| state.files.contains_key(file)) {
                return Err(Box::new(not_found("file")));
            }
            if resource.get("mount_path").is_none_or(Value::is_null) {
                let file = resource["file_id"].as_str().unwrap_or("file").to_string();
                resource["mount_path"] = json!(format!("/mnt/session/uploads/{file}"));
            }
        }
        Some("memory_store") => {
            let Some(store) = resource["memory_store_id"].as_str().filter(|id| !id.is_empty()).map(str::to_string)
            else {
                return Err(Box::new(invalid("memory_store_id: field required")));
            };
            if !matches!(resource.get("access").and_then(Value::as_str), None | Some("read_write" | "read_only")) {
                return Err(Box::new(invalid("access: must be read_write or read_only")));
            }
            if resource["instructions"].as_str().is_some_and(|text| text.chars().count() > 4096) {
                return Err(Box::new(invalid("instructions: at most 4096 characters")));
            }
            if resource["access"].is_null() {
                resource["access"] = json!("read_write");
            }
            resource["mount_path"] = json!(format!("/mnt/memory/{store}"));
            resource["name"] = json!(store);
            resource["description"] = json!("");
            // Memory store attachments carry no id or timestamps of their own.
            return Ok(resource);
        }
        Some(_) => {}
        None => return Err(Box::new(invalid("resources: every resource needs a type"))),
    }
    resource["id"] = json!(state.id("sesrsc"));
    resource["created_at"] = json!(now);
    resource["updated_at"] = json!(now);
    Ok(resource)
}

/// What a new session mounts and may use (`resources`, `vault_ids` of the create body), checked: every resource
/// as [`add_resource`] takes it, vault ids a list of strings. `Ok` is the session's resource list.
pub(super) fn creation_resources(state: &mut State, body: &Value) -> Result<Vec<Value>, Box<Response<ResponseBody>>> {
    if !matches!(body.get("vault_ids"), None | Some(Value::Null))
        && !body["vault_ids"].as_array().is_some_and(|ids| ids.iter().all(Value::is_string))
    {
        return Err(Box::new(invalid("vault_ids: must be a list of vault ids")));
    }
    match body.get("resources") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|item| resource_record(state, item.clone())).collect(),
        Some(_) => Err(Box::new(invalid("resources: must be a list"))),
    }
}

pub(super) fn remove_resource(state: &Shared<State>, session_id: &str, resource_id: &str) -> Response<ResponseBody> {
    let mut guard = state.lock();
    let Some(session) = guard.sessions.get_mut(session_id) else { return not_found("session") };
    let Some(list) = session.record["resources"].as_array_mut() else { return not_found("resource") };
    let before = list.len();
    list.retain(|r| r["id"] != json!(resource_id));
    if list.len() == before {
        return not_found("resource");
    }
    json_response(StatusCode::OK, &json!({"id": resource_id, "type": "session_resource_deleted"}))
}

/// Reads the `file` part of a multipart upload: its filename and bytes.
fn file_part(request: &ReceivedRequest) -> Option<(String, Bytes)> {
    let content_type = request.headers.get("content-type")?.to_str().ok()?;
    let boundary = content_type.split("boundary=").nth(1)?.trim_matches('"');
    let delimiter = format!("--{boundary}");
    let body = &request.body[..];
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(start) = find(rest, delimiter.as_bytes()) {
        rest = &rest[start + delimiter.len()..];
        let end = find(rest, delimiter.as_bytes()).unwrap_or(rest.len());
        parts.push(&rest[..end]);
    }
    parts.into_iter().find_map(|part| {
        let header_end = find(part, b"\r\n\r\n")?;
        let headers = String::from_utf8_lossy(&part[..header_end]);
        let filename = headers.split("filename=\"").nth(1)?.split('"').next()?.to_string();
        let content = &part[header_end + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        Some((filename, Bytes::copy_from_slice(content)))
    })
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

pub(super) fn upload(state: &Shared<State>, request: &ReceivedRequest) -> Response<ResponseBody> {
    let Some((filename, bytes)) = file_part(request) else {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "a multipart `file` part is required");
    };
    let mut guard = state.lock();
    let id = guard.id("file");
    let now = guard.now();
    let mime_type = content_type(&filename);
    let meta = json!({"id": id, "type": "file", "filename": filename, "mime_type": mime_type,
        "size_bytes": bytes.len(), "created_at": now, "downloadable": guard.options.uploads_downloadable});
    guard.files.insert(id, (meta.clone(), bytes));
    json_response(StatusCode::OK, &meta)
}
