//! The routes, and the JSON API's handlers (`openapi.json` describes them).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router, middleware};
use managed_agents_core::conversation::{Conversation, ConversationFilter, ConversationStatus};
use managed_agents_core::journal::MAX_JOURNAL_PAGE;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::auth;
use crate::builder::Console;
use crate::feed;
use crate::page;
use crate::problem::Problem;
use crate::views;

/// A page of conversations when the query names no `limit`, and the most one may ask for.
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 500;
/// The journal entries a conversation's view includes by default.
const DEFAULT_ENTRIES: usize = 200;
/// The inbox messages a conversation's view includes (the newest).
const VIEW_MESSAGES: usize = 50;

pub(crate) fn routes(console: Console) -> Router {
    let guarded = Router::new()
        .route("/", get(page::index))
        .route("/logout", post(auth::sign_out))
        .route("/api/info", get(info))
        .route("/api/conversations", get(conversations))
        .route("/api/conversations/{id}", get(conversation))
        .route("/api/conversations/{id}/journal", get(journal))
        .route("/api/conversations/{id}/events", get(feed::events))
        .route("/api/conversations/{id}/approvals/{tool_use_id}", post(decide))
        .route("/api/conversations/{id}/messages", post(enqueue))
        .route("/api/conversations/{id}/terminate", post(terminate))
        .route("/api/approvals", get(approvals))
        .route_layer(middleware::from_fn_with_state(console.clone(), auth::guard));
    Router::new()
        .route("/login", get(page::login_page).post(auth::sign_in))
        .route("/assets/console.js", get(page::script))
        .route("/assets/console.css", get(page::style))
        .merge(guarded)
        // No fallback of its own: an application that mounts the console keeps its own for its unknown paths.
        .layer(middleware::from_fn(page::headers))
        .with_state(console)
}

/// `GET /api/info`.
async fn info(State(console): State<Console>) -> Json<Value> {
    let store = console.inner.operator.store();
    Json(json!({
        "read_only": console.is_read_only(),
        "inbox": store.inbox().is_some(),
        "journal": store.journal().is_some(),
        "version": env!("CARGO_PKG_VERSION"),
    }))
}

/// `GET /api/conversations`: `status` (comma-separated, or repeated), `provider`, `metadata.KEY` (a JSON value,
/// else the text itself), `limit`, `order` (`newest`, the default, or `oldest`), `cursor` (the last page's
/// `next_cursor`).
async fn conversations(
    State(console): State<Console>,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Json<Value>, Problem> {
    let Query(pairs) = pairs.map_err(refused)?;
    let mut filter = ConversationFilter::new().newest_first();
    let mut limit = DEFAULT_PAGE;
    let mut cursor = None;
    for (key, value) in pairs {
        match key.as_str() {
            "status" => {
                for name in value.split(',').filter(|name| !name.is_empty()) {
                    let status = ConversationStatus::parse(name)
                        .ok_or_else(|| Problem::bad_request(format!("`{name}` is no conversation status")))?;
                    filter = filter.status(status);
                }
            }
            "provider" => filter = filter.provider(value),
            "limit" => {
                limit = value.parse::<usize>().map_err(|_| Problem::bad_request("`limit` is a whole number"))?;
                limit = limit.clamp(1, MAX_PAGE);
            }
            "order" => match value.as_str() {
                "newest" => filter.newest_first = true,
                "oldest" => filter.newest_first = false,
                _ => return Err(Problem::bad_request("`order` is `newest` or `oldest`")),
            },
            "cursor" => cursor = Some(parse_cursor(&value)?),
            _ => match key.strip_prefix("metadata.") {
                Some(name) if !name.is_empty() => {
                    let wanted = serde_json::from_str(&value).unwrap_or(Value::String(value));
                    filter = filter.metadata(name, wanted);
                }
                _ => return Err(Problem::bad_request(format!("`{key}` is no filter of conversations"))),
            },
        }
    }
    filter.after = cursor;
    // One more than the page: whether there is a next page.
    filter.limit = Some(limit + 1);
    let mut found = console.inner.operator.store().list(&filter).await?;
    let next = (found.len() > limit).then(|| {
        found.truncate(limit);
        found.last().map(cursor_of)
    });
    let listed: Vec<Value> = found.iter().map(views::conversation).collect();
    Ok(Json(json!({"conversations": listed, "next_cursor": next.flatten()})))
}

/// A conversation's place in a listing, as a cursor: `<created_at_ms>.<external_id>`.
fn cursor_of(record: &Conversation) -> String {
    format!("{}.{}", record.created_at_ms, record.external_id)
}

fn parse_cursor(text: &str) -> Result<(i64, String), Problem> {
    let bad = || Problem::bad_request("`cursor` is a `next_cursor` of an earlier page");
    let (created, external_id) = text.split_once('.').ok_or_else(bad)?;
    Ok((created.parse().map_err(|_| bad())?, external_id.to_string()))
}

/// The `entries` a conversation's view includes.
#[derive(Deserialize)]
struct ViewQuery {
    entries: Option<usize>,
}

async fn record(console: &Console, external_id: &str) -> Result<Conversation, Problem> {
    console
        .inner
        .operator
        .store()
        .load(external_id)
        .await?
        .ok_or_else(|| Problem::not_found(format!("there is no conversation `{external_id}`")))
}

/// `GET /api/conversations/{id}`: the record, the approvals it waits on (answered ones until they are posted),
/// its newest inbox messages, and its newest journal entries (`entries`, 200 by default).
async fn conversation(
    State(console): State<Console>,
    Path(external_id): Path<String>,
    query: Result<Query<ViewQuery>, QueryRejection>,
) -> Result<Json<Value>, Problem> {
    let Query(query) = query.map_err(refused)?;
    let record = record(&console, &external_id).await?;
    let store = console.inner.operator.store();
    let approvals: Vec<Value> = store.approvals(&external_id).await?.iter().map(views::approval).collect();
    let messages: Vec<Value> = match store.inbox() {
        Some(inbox) => {
            let all = inbox.messages(&external_id).await?;
            all[all.len().saturating_sub(VIEW_MESSAGES)..].iter().map(views::message).collect()
        }
        None => Vec::new(),
    };
    let wanted = query.entries.unwrap_or(DEFAULT_ENTRIES).min(MAX_JOURNAL_PAGE);
    let entries = match store.journal() {
        Some(journal) => journal.entries_before(&external_id, None, wanted).await?,
        None => Vec::new(),
    };
    Ok(Json(json!({
        "conversation": views::conversation(&record),
        "approvals": approvals,
        "messages": messages,
        "journal": entries,
    })))
}

/// The journal page asked for: `after` or `before` an entry number, `limit`.
#[derive(Deserialize)]
struct JournalQuery {
    after: Option<i64>,
    before: Option<i64>,
    limit: Option<usize>,
}

/// `GET /api/conversations/{id}/journal`.
async fn journal(
    State(console): State<Console>,
    Path(external_id): Path<String>,
    query: Result<Query<JournalQuery>, QueryRejection>,
) -> Result<Json<Value>, Problem> {
    let Query(query) = query.map_err(refused)?;
    record(&console, &external_id).await?;
    let Some(journal) = console.inner.operator.store().journal() else {
        return Ok(Json(json!({"entries": []})));
    };
    let limit = query.limit.unwrap_or(DEFAULT_ENTRIES).min(MAX_JOURNAL_PAGE);
    let entries = match (query.after, query.before) {
        (Some(_), Some(_)) => return Err(Problem::bad_request("give `after` or `before`, not both")),
        (Some(after), None) => journal.entries_after(&external_id, after, limit).await?,
        (None, before) => journal.entries_before(&external_id, before, limit).await?,
    };
    Ok(Json(json!({"entries": entries})))
}

/// `GET /api/approvals`: every call waiting for a person (of at most `limit` waiting conversations).
async fn approvals(
    State(console): State<Console>,
    query: Result<Query<ViewQuery>, QueryRejection>,
) -> Result<Json<Value>, Problem> {
    let Query(query) = query.map_err(refused)?;
    let limit = query.entries.unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
    let waiting = console.inner.operator.waiting_approvals(limit).await?;
    Ok(Json(json!({"approvals": waiting.iter().map(views::approval).collect::<Vec<_>>()})))
}

/// A person's answer to a waiting call.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: String,
    #[serde(default)]
    message: Option<String>,
}

/// `POST /api/conversations/{id}/approvals/{tool_use_id}`.
async fn decide(
    State(console): State<Console>,
    Path((external_id, tool_use_id)): Path<(String, String)>,
    body: Result<Json<Answer>, JsonRejection>,
) -> Result<Json<Value>, Problem> {
    let Json(answer) = body.map_err(refused)?;
    let operator = &console.inner.operator;
    match answer.decision.as_str() {
        "allow" => operator.approve(&external_id, &tool_use_id).await?,
        "deny" => operator.deny(&external_id, &tool_use_id, answer.message.filter(|text| !text.is_empty())).await?,
        _ => return Err(Problem::bad_request("`decision` is `allow` or `deny`")),
    }
    let stored = console.inner.operator.store().approvals(&external_id).await?;
    let approval = stored.iter().find(|stored| stored.request.tool_use.id == tool_use_id).map(views::approval);
    Ok(Json(json!({"approval": approval})))
}

/// A message for a conversation's inbox.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    text: String,
    #[serde(default)]
    metadata: Map<String, Value>,
}

/// `POST /api/conversations/{id}/messages`: 202, the message committed; a worker delivers it.
async fn enqueue(
    State(console): State<Console>,
    Path(external_id): Path<String>,
    body: Result<Json<NewMessage>, JsonRejection>,
) -> Result<Response, Problem> {
    let Json(message) = body.map_err(refused)?;
    if message.text.trim().is_empty() {
        return Err(Problem::bad_request("`text` is empty"));
    }
    let store = console.inner.operator.store();
    if let Some(record) = store.load(&external_id).await?
        && record.status.is_closed()
    {
        return Err(managed_agents_core::Error::conversation_closed(external_id, record.status).into());
    }
    if store.inbox().is_none() {
        return Err(Problem::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the store has no inbox"));
    }
    let enqueued = console.inner.operator.enqueue(&external_id, &message.text, &message.metadata).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"message": views::message(&enqueued)}))).into_response())
}

/// `POST /api/conversations/{id}/terminate`: 409 `busy` while a worker runs one of its requests.
async fn terminate(State(console): State<Console>, Path(external_id): Path<String>) -> Result<Json<Value>, Problem> {
    record(&console, &external_id).await?;
    console.inner.operator.terminate(&external_id).await?;
    let record = record(&console, &external_id).await?;
    Ok(Json(json!({"conversation": views::conversation(&record)})))
}

/// A query string or body the extractors could not read, as a problem answer of ours.
pub(crate) fn refused(rejection: impl axum::response::IntoResponse + std::fmt::Display) -> Problem {
    Problem::bad_request(rejection.to_string())
}
