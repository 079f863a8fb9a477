//! What a request writes to its conversation's journal ([`Journal`]): the message, each turn's text, each call
//! with its arguments, each answer, the approvals asked, and how the request ended.
//!
//! Entries come from places that cannot wait for the store (a provider's `normalize` is not async), so a request
//! hands them to a [`JournalWriter`] whose task appends them one by one, in the order they were written. The
//! journal is an account for people, never read back by the host: an entry that cannot be written is logged and
//! dropped, and never fails the request.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::approval::{ApprovalRequest, Decision};
use managed_agents_core::conversation::SessionStore;
use managed_agents_core::journal::EntryKind;
use managed_agents_core::ledger::{LedgerEntry, ToolLedger};
use managed_agents_core::{Error, SessionResult, ToolUse, TurnResult};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// The longest text an entry keeps of one string (a tool's output, a message): longer ones are cut, and say so.
pub(crate) const MAX_ENTRY_TEXT: usize = 32 * 1024;

/// How long a request waits, at its end, for its entries to be written before it goes on without them.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

enum Item {
    Entry(EntryKind, Value),
    Flush(oneshot::Sender<()>),
}

/// Writes one conversation's entries in order; cheap to clone. Writes nothing when the store keeps no journal.
#[derive(Clone, Default)]
pub(crate) struct JournalWriter {
    sender: Option<mpsc::UnboundedSender<Item>>,
}

impl JournalWriter {
    /// A writer for conversation `external_id` of `store`, with the task that appends its entries (ended once
    /// every clone of the writer is dropped).
    pub(crate) fn start(store: &Arc<dyn SessionStore>, external_id: &str) -> Self {
        if store.journal().is_none() {
            return Self::default();
        }
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let store = Arc::clone(store);
        let external_id = external_id.to_string();
        tokio::spawn(async move {
            while let Some(item) = receiver.recv().await {
                match item {
                    Item::Entry(kind, data) => append(&*store, &external_id, kind, &data).await,
                    Item::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Self { sender: Some(sender) }
    }

    /// Hands an entry to the writer's task.
    pub(crate) fn write(&self, kind: EntryKind, data: Value) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(Item::Entry(kind, capped(data)));
        }
    }

    /// Waits (a few seconds at most) until every entry written before is in the store.
    pub(crate) async fn flush(&self) {
        let Some(sender) = &self.sender else { return };
        let (done, written) = oneshot::channel();
        if sender.send(Item::Flush(done)).is_ok() && tokio::time::timeout(FLUSH_WAIT, written).await.is_err() {
            tracing::warn!("the conversation journal is slow: a request went on before its entries were written");
        }
    }

    /// The request's message.
    pub(crate) fn message(&self, text: &str, message_id: Option<i64>) {
        self.write(EntryKind::Message, json!({"text": text, "message_id": message_id}));
    }

    /// One model turn: its text and usage (a turn with neither is not written), then the calls it makes are
    /// written as they are decided ([`JournalWriter::tool_call`]).
    pub(crate) fn turn(&self, turn: &TurnResult) {
        if !turn.text.is_empty() || turn.usage.is_some() {
            self.write(EntryKind::Turn, json!({"text": turn.text, "usage": turn.usage}));
        }
    }

    /// A call about to be decided (run, denied or deferred).
    pub(crate) fn tool_call(&self, tool_use: &ToolUse) {
        let data = json!({"id": tool_use.id, "name": tool_use.name, "kind": tool_use.kind, "input": tool_use.input});
        self.write(EntryKind::ToolCall, data);
    }

    /// A call deferred to a person.
    pub(crate) fn approval_requested(&self, request: &ApprovalRequest) {
        let tool_use = &request.tool_use;
        let data = json!({"tool_use_id": tool_use.id, "name": tool_use.name, "input": tool_use.input});
        self.write(EntryKind::ApprovalRequested, data);
    }

    /// How a request ended: a reply, or a failure (a request stopped for approvals wrote those already).
    pub(crate) fn outcome(&self, outcome: &Result<SessionResult, Error>) {
        match outcome {
            Ok(result) => self.write(
                EntryKind::Reply,
                json!({
                    "text": result.text,
                    "usage": result.usage,
                    "turns": result.turns,
                    "terminal_reason": result.terminal_reason,
                }),
            ),
            Err(Error::ApprovalRequired { .. } | Error::NothingToResume | Error::LeaseLost { .. }) => {}
            Err(error) => self.write(EntryKind::Failure, json!({"error": error.to_string()})),
        }
    }
}

/// Appends one entry now (for writes made outside a request: a person's decision, a conversation closed).
pub(crate) async fn append(store: &dyn SessionStore, external_id: &str, kind: EntryKind, data: &Value) {
    let Some(journal) = store.journal() else { return };
    if let Err(error) = journal.append(external_id, kind, &capped(data.clone())).await {
        tracing::warn!(external_id, kind = kind.as_str(), %error, "could not write to the conversation journal");
    }
}

/// The entry of a person's `decision` on call `tool_use_id`.
pub(crate) fn decided(tool_use_id: &str, decision: &Decision) -> Value {
    match decision {
        Decision::Deny { message } => json!({"tool_use_id": tool_use_id, "decision": "deny", "message": message}),
        _ => json!({"tool_use_id": tool_use_id, "decision": "allow", "message": null}),
    }
}

/// `value` with every string longer than [`MAX_ENTRY_TEXT`] bytes cut there (on a character boundary), followed
/// by a note of how much was left out.
pub(crate) fn capped(value: Value) -> Value {
    match value {
        Value::String(text) if text.len() > MAX_ENTRY_TEXT => {
            let mut end = MAX_ENTRY_TEXT;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(format!("{}… [{} more bytes]", &text[..end], text.len() - end))
        }
        Value::Array(items) => Value::Array(items.into_iter().map(capped).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(key, value)| (key, capped(value))).collect()),
        other => other,
    }
}

/// The store as the session's tool ledger, writing each recorded answer (as posted: the first recorded wins) to
/// the journal.
pub(crate) struct JournaledLedger {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) journal: JournalWriter,
}

#[async_trait]
impl ToolLedger for JournaledLedger {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        self.store.recorded(session_id, tool_use_id).await
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        let recorded = self.store.record(session_id, tool_use_id, entry).await?;
        let result = &recorded.result;
        self.journal.write(
            EntryKind::ToolResult,
            json!({"tool_use_id": result.tool_use_id, "text": result.text, "is_error": result.is_error}),
        );
        Ok(recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_strings_are_cut_on_a_character_boundary_and_say_how_much_is_left_out() {
        let long = "é".repeat(MAX_ENTRY_TEXT);
        let cut = capped(json!({"input": {"text": long, "n": 1}, "list": ["short"]}));
        let text = cut["input"]["text"].as_str().unwrap();
        assert!(text.len() < MAX_ENTRY_TEXT + 40, "{}", text.len());
        assert!(text.ends_with(&format!("… [{} more bytes]", MAX_ENTRY_TEXT)), "{}", &text[text.len() - 30..]);
        assert_eq!((cut["input"]["n"].clone(), cut["list"].clone()), (json!(1), json!(["short"])));
    }
}
