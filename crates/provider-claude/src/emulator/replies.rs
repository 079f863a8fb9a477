//! The emulator's answers in the API's shapes: errors, and one page of a list.

use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::emulator::records::Query;
use crate::emulator::state::State;

pub(super) fn error(status: StatusCode, kind: &str, message: &str) -> Response<ResponseBody> {
    json_response(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_emulated"}),
    )
}

pub(super) fn not_found(what: &str) -> Response<ResponseBody> {
    error(StatusCode::NOT_FOUND, "not_found_error", &format!("no such {what}"))
}

pub(super) fn invalid(message: &str) -> Response<ResponseBody> {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

/// Whether a cursor is one the emulator made (`page_<offset>`); `Err` answers a bad one.
fn cursor(query: &Query) -> Result<usize, &'static str> {
    match query.get("page").filter(|p| !p.is_empty()) {
        None => Ok(0),
        Some(page) => page.strip_prefix("page_").and_then(|n| n.parse().ok()).ok_or("page: not a valid cursor"),
    }
}

/// One page of `items` (already filtered and ordered): `limit` (default 20, at most the page size), `page`;
/// `next_page`, and `prev_page` when `bidirectional`.
pub(super) fn page(state: &State, items: Vec<Value>, query: &Query, bidirectional: bool) -> Response<ResponseBody> {
    let start = match cursor(query) {
        Ok(start) => start,
        Err(message) => return invalid(message),
    };
    let limit =
        query.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).min(state.options.page_size).max(1);
    let end = start.saturating_add(limit).min(items.len());
    let data = items.get(start..end).unwrap_or_default().to_vec();
    let next = (end < items.len()).then(|| format!("page_{end}"));
    let mut body = json!({"data": data, "next_page": next});
    if bidirectional {
        body["prev_page"] = json!((start > 0).then(|| format!("page_{}", start.saturating_sub(limit))));
    }
    json_response(StatusCode::OK, &body)
}

/// Oldest first (by `created_at`, then id), or newest first for `order=desc`; `Err` for another order.
pub(super) fn ordered(mut items: Vec<Value>, query: &Query, field: &str) -> Result<Vec<Value>, &'static str> {
    items.sort_by(|a, b| (a[field].as_str(), a["id"].as_str()).cmp(&(b[field].as_str(), b["id"].as_str())));
    match query.get("order") {
        None | Some("asc") => Ok(items),
        Some("desc") => {
            items.reverse();
            Ok(items)
        }
        Some(_) => Err("order: must be asc or desc"),
    }
}
