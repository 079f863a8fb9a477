//! The tool ledger: each tool call's answer, recorded before it is posted, so a call that comes back runs once.
//!
//! With a ledger set ([`SessionOptions::tool_ledger`](crate::SessionOptions::tool_ledger)), the session records
//! every answer (a custom tool's result, a denial, a confirmation) under (session scope, tool-use id) before the
//! answer is posted. The session scope is [`scope`]`(provider name, provider session id)`: two providers sharing
//! a store never see each other's entries even if their session ids collide. When the same call comes back — a redelivered or recovered `requires_action`, a reconnect,
//! a new process reattaching after a crash — the recorded answer is posted again and the tool does not run
//! again. Only a crash *during* the tool's own run runs it again: a tool with side effects should use
//! [`ToolUse::id`] as its idempotency key, which is stable across every retry.
//!
//! An entry answers a call only when the call's name and input match the ones recorded ([`LedgerEntry::answers`]):
//! a loop host that reuses call ids for different calls (some OpenAI-compatible servers do) gets each call run.
//!
//! **The first answer wins.** Two workers can answer the same call at once — one of them stale, its lease having
//! expired while its tool ran. [`ToolLedger::record`] keeps an entry already recorded for the same call (same
//! [`fingerprint`]) and hands it back; the session posts the entry `record` returns, never its own answer, so
//! both workers post the same answer and the posted answer is always the recorded one. An entry recorded for a
//! different call under the same id is replaced.
//!
//! [`MemoryLedger`] keeps a bounded window in memory; `managed-agents-store` keeps the ledger in SQLite or
//! PostgreSQL alongside the host's conversations.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::provision::Digest;
use crate::{Error, ToolResult, ToolUse};

/// One recorded answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LedgerEntry {
    /// A digest of the call's name and input: the entry answers only the call it was recorded for.
    pub fingerprint: String,
    /// The answer as posted.
    pub result: ToolResult,
}

impl LedgerEntry {
    /// The entry recording `result` as the answer to `tool_use`.
    pub fn new(tool_use: &ToolUse, result: ToolResult) -> Self {
        Self { fingerprint: fingerprint(tool_use), result }
    }

    /// Whether this entry answers `tool_use` (same name and input as the call it was recorded for).
    pub fn answers(&self, tool_use: &ToolUse) -> bool {
        self.fingerprint == fingerprint(tool_use) && self.result.tool_use_id == tool_use.id
    }

    /// Whether this entry and `other` answer the same call (same fingerprint): under one key, the first of the
    /// two recorded stays (see [`ToolLedger::record`]).
    pub fn same_call(&self, other: &LedgerEntry) -> bool {
        self.fingerprint == other.fingerprint
    }
}

/// The scope a session's entries are recorded under: `<provider>:<session id>`.
pub fn scope(provider: &str, session_id: &str) -> String {
    format!("{provider}:{session_id}")
}

/// The fingerprint of a call: a digest over its name, kind and canonical input.
pub fn fingerprint(tool_use: &ToolUse) -> String {
    let value = serde_json::json!([tool_use.name, tool_use.kind, tool_use.input]);
    Digest::of_json(&value).hex()[..32].to_string()
}

/// Where answers are recorded. Implementations must be safe to share between tasks, and durable ones between
/// processes.
///
/// `managed-agents-conformance` checks ledgers as part of its session store contract
/// (`session_store_contract::ledger_records_per_session` and `ledger_concurrent_records_agree`, which take any
/// session store; a ledger on its own is those checks' two calls).
#[async_trait]
pub trait ToolLedger: Send + Sync + 'static {
    /// The entry recorded for `tool_use_id` in the session scope `session_id` (see [`scope`]).
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error>;

    /// Records `entry` for `tool_use_id` in `session_id` unless an entry for the same call
    /// ([`LedgerEntry::same_call`]) is there already; returns the entry recorded now: that earlier one, else
    /// `entry`. An entry there for a different call (an id reused for another call) is replaced by `entry`.
    ///
    /// Atomic per key: of any number of concurrent records of the same call (tasks, processes, machines), one
    /// entry is recorded and every one of them returns it. The session posts what this returns.
    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error>;
}

#[async_trait]
impl<L: ToolLedger + ?Sized> ToolLedger for Arc<L> {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        (**self).recorded(session_id, tool_use_id).await
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        (**self).record(session_id, tool_use_id, entry).await
    }
}

/// The default number of entries a [`MemoryLedger`] keeps.
pub const DEFAULT_MEMORY_LEDGER_CAPACITY: usize = 16_384;

/// A ledger in memory: the most recent entries (a window of [`MemoryLedger::with_capacity`] entries, oldest
/// dropped first), shared by its clones. It survives reconnects, not restarts.
#[derive(Debug, Clone)]
pub struct MemoryLedger {
    inner: Arc<Mutex<Window>>,
}

#[derive(Debug)]
struct Window {
    capacity: usize,
    entries: HashMap<(String, String), LedgerEntry>,
    order: VecDeque<(String, String)>,
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryLedger {
    /// A ledger keeping [`DEFAULT_MEMORY_LEDGER_CAPACITY`] entries.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_MEMORY_LEDGER_CAPACITY)
    }

    /// A ledger keeping the `capacity` most recent entries (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let window = Window { capacity: capacity.max(1), entries: HashMap::new(), order: VecDeque::new() };
        Self { inner: Arc::new(Mutex::new(window)) }
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl ToolLedger for MemoryLedger {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        let window = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(window.entries.get(&(session_id.to_string(), tool_use_id.to_string())).cloned())
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        let mut window = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (session_id.to_string(), tool_use_id.to_string());
        if let Some(earlier) = window.entries.get(&key).filter(|earlier| earlier.same_call(entry)) {
            return Ok(earlier.clone());
        }
        if window.entries.insert(key.clone(), entry.clone()).is_none() {
            window.order.push_back(key);
            while window.order.len() > window.capacity {
                if let Some(oldest) = window.order.pop_front() {
                    window.entries.remove(&oldest);
                }
            }
        }
        Ok(entry.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn an_entry_answers_only_the_call_it_was_recorded_for() {
        let call = ToolUse::new("t1", "charge", json!({"cents": 100}));
        let entry = LedgerEntry::new(&call, ToolResult::ok("t1", "charged"));
        assert!(entry.answers(&call));
        assert!(!entry.answers(&ToolUse::new("t1", "charge", json!({"cents": 200}))), "other input");
        assert!(!entry.answers(&ToolUse::new("t1", "refund", json!({"cents": 100}))), "other tool");
        assert!(!entry.answers(&ToolUse::new("t2", "charge", json!({"cents": 100}))), "other id");
        let reordered: serde_json::Value = serde_json::from_str(r#"{"cents": 100}"#).unwrap();
        assert!(entry.answers(&ToolUse::new("t1", "charge", reordered)));
    }

    #[tokio::test]
    async fn the_memory_ledger_keeps_a_window_of_entries() {
        let ledger = MemoryLedger::with_capacity(2);
        for id in ["a", "b", "c"] {
            let call = ToolUse::new(id, "x", json!({}));
            ledger.record("s", id, &LedgerEntry::new(&call, ToolResult::ok(id, id))).await.unwrap();
        }
        assert_eq!(ledger.len(), 2);
        assert!(ledger.recorded("s", "a").await.unwrap().is_none(), "the oldest entry left the window");
        assert_eq!(ledger.recorded("s", "c").await.unwrap().unwrap().result.text, "c");
        assert!(ledger.recorded("other", "c").await.unwrap().is_none(), "entries are per session");
    }

    #[tokio::test]
    async fn the_memory_ledger_keeps_the_first_answer_to_a_call() {
        let ledger = MemoryLedger::new();
        let call = ToolUse::new("t1", "charge", json!({"cents": 100}));
        let first = LedgerEntry::new(&call, ToolResult::ok("t1", "charged"));
        let second = LedgerEntry::new(&call, ToolResult::error("t1", "declined"));
        assert_eq!(ledger.record("s", "t1", &first).await.unwrap(), first);
        assert_eq!(ledger.record("s", "t1", &second).await.unwrap(), first, "the earlier answer is returned");
        assert_eq!(ledger.recorded("s", "t1").await.unwrap(), Some(first));

        let other_call = ToolUse::new("t1", "refund", json!({"cents": 100}));
        let refunded = LedgerEntry::new(&other_call, ToolResult::ok("t1", "refunded"));
        assert_eq!(ledger.record("s", "t1", &refunded).await.unwrap(), refunded, "another call replaces");
        assert_eq!(ledger.recorded("s", "t1").await.unwrap(), Some(refunded));
        assert_eq!(ledger.len(), 1);
    }
}
