//! The journal: what happened in each conversation, in order — the messages it was sent, the model's text, the
//! tool calls with their arguments and results, the approvals asked and answered, how each request ended.
//!
//! `managed-agents-host` writes it as its requests run (in whichever process runs them), so that a person can
//! read a conversation afterwards or follow it live from elsewhere (the operator console of
//! `managed-agents-console` reads it). A store offers it through
//! [`SessionStore::journal`](crate::conversation::SessionStore::journal);
//! [`MemorySessionStore`](crate::conversation::MemorySessionStore) and `managed-agents-store`'s SQLite and
//! PostgreSQL stores have one.
//!
//! A reader that follows a conversation live reads again when the store announces a change to it
//! ([`SessionStore::changes`](crate::conversation::SessionStore::changes)), or polls.
//!
//! Entries are numbered by the store ([`JournalEntry::seq`]): the numbers grow with every append, across all
//! conversations, so "the entries after `n`" is a cursor a reader keeps. The journal is an account for people,
//! not a source of truth: the host never reads it back, an entry whose write failed is logged and skipped, and
//! the session loop's exactly-once record stays [`SessionResult::events`](crate::SessionResult::events).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// What a [`JournalEntry`] records. Its [`JournalEntry::data`] has the fields listed with each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryKind {
    /// A message the conversation was sent: `text`, and `message_id` when it came through the inbox.
    Message,
    /// One model turn: its `text` and `usage` (or `null`).
    Turn,
    /// A custom tool call the session will answer: `id`, `name`, `kind`, `input`.
    ToolCall,
    /// A tool call's answer as posted: `tool_use_id`, `text`, `is_error`.
    ToolResult,
    /// A call that waits for a person: `tool_use_id`, `name`, `input`.
    ApprovalRequested,
    /// A person's answer to a waiting call: `tool_use_id`, `decision` (`allow` or `deny`), `message`.
    ApprovalDecided,
    /// A request that ended well: `text`, `usage`, `turns`, `terminal_reason`.
    Reply,
    /// A request that failed: `error`.
    Failure,
    /// The conversation was ended or deleted by a person: `status`.
    Closed,
}

impl EntryKind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [EntryKind] = &[
        Self::Message,
        Self::Turn,
        Self::ToolCall,
        Self::ToolResult,
        Self::ApprovalRequested,
        Self::ApprovalDecided,
        Self::Reply,
        Self::Failure,
        Self::Closed,
    ];

    /// The kind as stored (`"message"`, `"tool_call"` …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Turn => "turn",
            Self::ToolCall => "tool_call",
            Self::ToolResult => "tool_result",
            Self::ApprovalRequested => "approval_requested",
            Self::ApprovalDecided => "approval_decided",
            Self::Reply => "reply",
            Self::Failure => "failure",
            Self::Closed => "closed",
        }
    }

    /// The kind stored as `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == text)
    }
}

/// One thing that happened in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalEntry {
    /// The entry's number: larger than every entry's appended before it, in any conversation.
    pub seq: i64,
    /// The conversation.
    pub external_id: String,
    /// What it records.
    pub kind: EntryKind,
    /// Its fields (see [`EntryKind`]).
    pub data: Value,
    /// When it was appended, in milliseconds since the Unix epoch, by the store's clock.
    pub at_ms: i64,
}

impl JournalEntry {
    /// An entry as a store reads it back.
    pub fn new(seq: i64, external_id: impl Into<String>, kind: EntryKind, data: Value, at_ms: i64) -> Self {
        Self { seq, external_id: external_id.into(), kind, data, at_ms }
    }
}

/// The most entries one read returns, whatever it asks for.
pub const MAX_JOURNAL_PAGE: usize = 1000;

/// Where a store keeps its journal (see the [module documentation](self)). Implementations must be safe to share
/// between tasks; durable ones between processes.
///
/// `managed-agents-conformance` checks journals as part of its session store contract.
#[async_trait]
pub trait Journal: Send + Sync {
    /// Appends an entry to `external_id`'s journal and returns it as stored (with its number and time).
    async fn append(&self, external_id: &str, kind: EntryKind, data: &Value) -> Result<JournalEntry, Error>;

    /// `external_id`'s entries numbered above `after`, oldest first, at most `limit` (and at most
    /// [`MAX_JOURNAL_PAGE`]).
    async fn entries_after(&self, external_id: &str, after: i64, limit: usize) -> Result<Vec<JournalEntry>, Error>;

    /// `external_id`'s newest entries numbered below `before` (`None`: the newest of all), at most `limit` (and at
    /// most [`MAX_JOURNAL_PAGE`]), returned oldest first.
    async fn entries_before(
        &self,
        external_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JournalEntry>, Error>;

    /// Removes `external_id`'s entries (a deleted conversation's); returns how many there were.
    async fn clear(&self, external_id: &str) -> Result<u64, Error>;
}
