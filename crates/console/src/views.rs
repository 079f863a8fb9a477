//! What the API shows of the store's records: the fields a person needs, never a transcript or a credential
//! (the stores keep none), in the shapes `openapi.json` describes.

use managed_agents_core::approval::Decision;
use managed_agents_core::conversation::{Conversation, StoredApproval};
use managed_agents_core::inbox::InboxMessage;
use serde_json::{Value, json};

/// A conversation's record without its transcript (`ConversationSummary`).
pub(crate) fn conversation(record: &Conversation) -> Value {
    json!({
        "external_id": record.external_id,
        "provider": record.provider,
        "session_id": record.session_id,
        "status": record.status,
        "metadata": record.metadata,
        "last_error": record.last_error,
        "requests": record.requests,
        "model": record.model_config.model,
        "created_at_ms": record.created_at_ms,
        "updated_at_ms": record.updated_at_ms,
    })
}

/// A stored approval (`Approval`).
pub(crate) fn approval(stored: &StoredApproval) -> Value {
    let tool_use = &stored.request.tool_use;
    let (decision, message) = match &stored.decision {
        None => (None, None),
        Some(Decision::Deny { message }) => (Some("deny"), message.clone()),
        Some(_) => (Some("allow"), None),
    };
    json!({
        "external_id": stored.external_id,
        "tool_use_id": tool_use.id,
        "name": tool_use.name,
        "kind": tool_use.kind,
        "input": tool_use.input,
        "decision": decision,
        "message": message,
        "created_at_ms": stored.created_at_ms,
    })
}

/// An inbox message (`Message`): its reply's text rather than the whole result.
pub(crate) fn message(message: &InboxMessage) -> Value {
    json!({
        "id": message.id,
        "external_id": message.external_id,
        "text": message.text,
        "state": message.state,
        "attempts": message.attempts,
        "reply": message.result.as_ref().map(|result| result.text.clone()),
        "error": message.error,
        "enqueued_at_ms": message.enqueued_at_ms,
        "updated_at_ms": message.updated_at_ms,
    })
}
