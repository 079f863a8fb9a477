//! The session store on either database: [`SessionStore`] and its [`ToolLedger`] for [`SqlStore`].
//!
//! * **Leases**: one row per conversation in `conversation_leases`, taken with a single
//!   `INSERT … ON CONFLICT DO UPDATE … WHERE <free, expired or mine> RETURNING token`: the database serializes
//!   concurrent takers on the row (SQLite's write lock; PostgreSQL's row lock, re-checking the condition on the
//!   row as the winner left it), so exactly one of them gets it. The token grows by one with every grant and the
//!   row stays when the lease is given up, so tokens never repeat. Expiry is judged by the database's clock.
//! * **Fenced saves**: a save is one transaction that first touches the lease row, only if the lease's token is
//!   still the current one (`UPDATE … WHERE token = $2 AND holder IS NOT NULL`). That write locks the row (and,
//!   in SQLite, the database) until the commit, so no other worker can take the lease between the check and
//!   the write.
//! * **Metadata** is stored whole with the record and, for [`SessionStore::list`], one row per key with the
//!   value as canonical JSON text, so "has key = value" is an exact, indexed comparison in both databases.
//! * **Model configuration**: a conversation's [`ModelConfig`](managed_agents_core::ModelConfig) is stored as
//!   JSON text, which never holds the credential (serializing leaves it out); NULL when none was chosen.
//! * **Approvals**: answering is `SET decision = COALESCE(decision, $3)`: the first final answer stays.
//! * **Ledger**: the first answer to a call stays. Recording is `INSERT … ON CONFLICT DO NOTHING`; when a row was
//!   there, it is read: an entry for the same call is returned as it is, one for another call is replaced by an
//!   `UPDATE … WHERE entry = <the entry as read>`, which does nothing when a concurrent writer changed it first
//!   (then the new entry is read and judged again). No writer overwrites an entry it has not seen.

use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::approval::{ApprovalRequest, Decision};
use managed_agents_core::conversation::{
    Conversation, ConversationFilter, ConversationStatus, Lease, SessionStore, StoredApproval, duration_ms,
};
use managed_agents_core::ledger::{LedgerEntry, ToolLedger};
use managed_agents_core::provision::canonical_json;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::db::{Arg, Col, Row, Sql, Transaction, args, changes_channel, corrupt, sql};
use crate::store::SqlStore;

/// The longest lease handed out (about a hundred years): longer ones are shortened to it, so that "now + ttl"
/// never overflows.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

fn ttl_ms(ttl: Duration) -> i64 {
    duration_ms(ttl.min(MAX_TTL))
}

static ACQUIRE: Sql = sql!(
    "INSERT INTO conversation_leases (external_id, holder, token, expires_at_ms) VALUES ($1, $2, 1, " NOW " + $3) "
    "ON CONFLICT (external_id) DO UPDATE SET holder = excluded.holder, "
    "token = conversation_leases.token + 1, expires_at_ms = excluded.expires_at_ms "
    "WHERE conversation_leases.holder IS NULL OR conversation_leases.holder = excluded.holder "
    "OR conversation_leases.expires_at_ms <= " NOW " "
    "RETURNING token, expires_at_ms"
);
static RENEW: Sql = sql!(
    "UPDATE conversation_leases SET expires_at_ms = " NOW " + $3 "
    "WHERE external_id = $1 AND token = $2 AND holder IS NOT NULL "
    "RETURNING holder, token, expires_at_ms"
);
static RELEASE: Sql = sql!("UPDATE conversation_leases SET holder = NULL WHERE external_id = $1 AND token = $2");
/// Checks the lease and locks its row until the transaction ends (see the module docs).
static HOLD_LEASE: Sql = sql!(
    "UPDATE conversation_leases SET token = token "
    "WHERE external_id = $1 AND token = $2 AND holder IS NOT NULL"
);
static RELEASE_ANY: Sql = sql!("UPDATE conversation_leases SET holder = NULL WHERE external_id = $1");

const CONVERSATION_COLUMNS: &str = "external_id, provider, session_id, status, transcript, metadata, last_error, \
                                    requests, created_at_ms, updated_at_ms, model_config";
const CONVERSATION_COLS: &[Col] = &[
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Text,
    Col::Int,
    Col::Int,
    Col::Int,
    Col::Text,
];

static LOAD: Sql = sql!(
    "SELECT external_id, provider, session_id, status, transcript, metadata, last_error, requests, created_at_ms, "
    "updated_at_ms, model_config FROM conversations WHERE external_id = $1"
);
static UPSERT: Sql = sql!(
    "INSERT INTO conversations (external_id, provider, session_id, status, transcript, metadata, last_error, "
    "requests, created_at_ms, updated_at_ms, model_config) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, " NOW ", $10) "
    "ON CONFLICT (external_id) DO UPDATE SET provider = excluded.provider, session_id = excluded.session_id, "
    "status = excluded.status, transcript = excluded.transcript, metadata = excluded.metadata, "
    "last_error = excluded.last_error, requests = excluded.requests, updated_at_ms = excluded.updated_at_ms, "
    "model_config = excluded.model_config"
);
static DELETE_CONVERSATION: Sql = sql!("DELETE FROM conversations WHERE external_id = $1");
static DELETE_METADATA: Sql = sql!("DELETE FROM conversation_metadata WHERE external_id = $1");
static INSERT_METADATA: Sql = sql!("INSERT INTO conversation_metadata (external_id, key, value) VALUES ($1, $2, $3)");

static PUT_APPROVAL: Sql = sql!(
    "INSERT INTO conversation_approvals (external_id, tool_use_id, request, created_at_ms) "
    "VALUES ($1, $2, $3, " NOW ") ON CONFLICT (external_id, tool_use_id) DO NOTHING"
);
static DECIDE: Sql = sql!(
    "UPDATE conversation_approvals SET decision = COALESCE(decision, $3) "
    "WHERE external_id = $1 AND tool_use_id = $2"
);
static APPROVALS: Sql =
    sql!("SELECT request, decision, created_at_ms FROM conversation_approvals WHERE external_id = $1 ORDER BY id");
static REMOVE_APPROVAL: Sql = sql!("DELETE FROM conversation_approvals WHERE external_id = $1 AND tool_use_id = $2");
static DELETE_APPROVALS: Sql = sql!("DELETE FROM conversation_approvals WHERE external_id = $1");
static DELETE_MESSAGES: Sql = sql!("DELETE FROM inbox_messages WHERE external_id = $1");
/// Tells every process's readers that conversation `$1` changed, when the transaction commits (PostgreSQL; SQLite's
/// other processes cannot be told: nothing).
static NOTIFY_CHANGE: Sql = Sql { sqlite: "", postgres: concat!("SELECT pg_notify(", changes_channel!(), ", $1)") };
pub(crate) static DELETE_JOURNAL: Sql = sql!("DELETE FROM conversation_journal WHERE external_id = $1");

static RECORDED: Sql = sql!("SELECT entry FROM tool_ledger WHERE session_id = $1 AND tool_use_id = $2");
/// Records an entry where there is none; changes nothing (0 rows) where there is one.
static RECORD: Sql = sql!(
    "INSERT INTO tool_ledger (session_id, tool_use_id, entry, recorded_at_ms) VALUES ($1, $2, $3, " NOW ") "
    "ON CONFLICT (session_id, tool_use_id) DO NOTHING"
);
/// Replaces the entry `$4` (as read) with `$3`; 0 rows when the entry is no longer `$4`.
static REPLACE_RECORDED: Sql = sql!(
    "UPDATE tool_ledger SET entry = $3, recorded_at_ms = " NOW " "
    "WHERE session_id = $1 AND tool_use_id = $2 AND entry = $4"
);
/// How many times [`ToolLedger::record`] reads and writes again when other writers keep changing the entry
/// under it (each round is lost only to a writer that succeeded, so this is never reached in practice).
const RECORD_ROUNDS: usize = 16;

fn lease_lost(external_id: &str) -> Error {
    Error::lease_lost(external_id)
}

pub(crate) fn encode<T: Serialize + ?Sized>(operation: &'static str, value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|error| Error::store(operation, false, error))
}

pub(crate) fn decode<T: DeserializeOwned>(operation: &'static str, what: &str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|error| corrupt(operation, format!("the stored {what} is unreadable: {error}")))
}

pub(crate) fn missing(operation: &'static str, what: &str) -> Error {
    corrupt(operation, format!("the stored {what} is missing"))
}

/// A conversation from a row of [`CONVERSATION_COLUMNS`].
fn conversation(operation: &'static str, mut row: Row) -> Result<Conversation, Error> {
    let external_id = row.text(0).ok_or_else(|| missing(operation, "external id"))?;
    let provider = row.text(1).ok_or_else(|| missing(operation, "provider"))?;
    let status_text = row.text(3).ok_or_else(|| missing(operation, "status"))?;
    let status = ConversationStatus::parse(&status_text)
        .ok_or_else(|| corrupt(operation, format!("`{external_id}` has an unknown status `{status_text}`")))?;
    let transcript = row.text(4).map(|text| decode(operation, "transcript", &text)).transpose()?;
    let metadata: Map<String, Value> =
        decode(operation, "metadata", &row.text(5).ok_or_else(|| missing(operation, "metadata"))?)?;
    let requests = row.int(7).ok_or_else(|| missing(operation, "request count"))?;
    let requests = u64::try_from(requests)
        .map_err(|_| corrupt(operation, format!("`{external_id}` has a negative request count")))?;
    let mut found = Conversation::new(external_id, provider);
    found.session_id = row.text(2);
    found.status = status;
    found.transcript = transcript;
    found.metadata = metadata;
    found.last_error = row.text(6);
    found.requests = requests;
    found.created_at_ms = row.int(8).ok_or_else(|| missing(operation, "creation time"))?;
    found.updated_at_ms = row.int(9).ok_or_else(|| missing(operation, "update time"))?;
    // NULL: no model configuration was chosen (also every row written before the column existed).
    if let Some(text) = row.text(10) {
        found.model_config = decode(operation, "model configuration", &text)?;
    }
    Ok(found)
}

/// The `list` query for `filter` and its values.
fn list_query(filter: &ConversationFilter) -> (String, Vec<Arg>) {
    let mut args: Vec<Arg> = Vec::new();
    let next = |arg: Arg, args: &mut Vec<Arg>| {
        args.push(arg);
        format!("${}", args.len())
    };
    let mut conditions: Vec<String> = Vec::new();
    if !filter.statuses.is_empty() {
        let placeholders: Vec<String> =
            filter.statuses.iter().map(|status| next(Arg::from(status.as_str()), &mut args)).collect();
        conditions.push(format!("c.status IN ({})", placeholders.join(", ")));
    }
    if let Some(provider) = &filter.provider {
        conditions.push(format!("c.provider = {}", next(Arg::from(provider), &mut args)));
    }
    if let Some(session_id) = &filter.session_id {
        conditions.push(format!("c.session_id = {}", next(Arg::from(session_id), &mut args)));
    }
    for (key, value) in &filter.metadata {
        let key = next(Arg::from(key), &mut args);
        let value = next(Arg::from(canonical_json(value)), &mut args);
        conditions.push(format!(
            "EXISTS (SELECT 1 FROM conversation_metadata m \
             WHERE m.external_id = c.external_id AND m.key = {key} AND m.value = {value})"
        ));
    }
    if let Some((created_at_ms, external_id)) = &filter.after {
        let created = next(Arg::from(*created_at_ms), &mut args);
        let id = next(Arg::from(external_id), &mut args);
        let after = if filter.newest_first { "<" } else { ">" };
        conditions.push(format!("(c.created_at_ms, c.external_id) {after} ({created}, {id})"));
    }
    let mut query = format!("SELECT {CONVERSATION_COLUMNS} FROM conversations c");
    if !conditions.is_empty() {
        query.push_str(" WHERE ");
        query.push_str(&conditions.join(" AND "));
    }
    query.push_str(match filter.newest_first {
        true => " ORDER BY c.created_at_ms DESC, c.external_id DESC",
        false => " ORDER BY c.created_at_ms, c.external_id",
    });
    if let Some(limit) = filter.limit {
        let limit = next(Arg::from(i64::try_from(limit).unwrap_or(i64::MAX)), &mut args);
        query.push_str(&format!(" LIMIT {limit}"));
    }
    (query, args)
}

impl SqlStore {
    /// Checks, inside `transaction`, that `lease` is `external_id`'s current lease and locks its row until the
    /// transaction ends; [`Error::LeaseLost`] otherwise (dropping the transaction then rolls it back).
    pub(crate) async fn hold_lease(
        &self,
        transaction: &mut Transaction,
        operation: &'static str,
        external_id: &str,
        lease: &Lease,
    ) -> Result<(), Error> {
        if lease.external_id != external_id {
            return Err(lease_lost(external_id));
        }
        let held = transaction.execute(operation, self.sql(&HOLD_LEASE), args![external_id, lease.token]).await?;
        if held == 1 { Ok(()) } else { Err(lease_lost(external_id)) }
    }

    /// Writes `conversation`'s record and metadata inside `transaction` (whose lease was checked).
    pub(crate) async fn write_conversation(
        &self,
        transaction: &mut Transaction,
        operation: &'static str,
        conversation: &Conversation,
    ) -> Result<(), Error> {
        let external_id = &conversation.external_id;
        let transcript =
            conversation.transcript.as_ref().map(|transcript| encode(operation, transcript)).transpose()?;
        let metadata = encode(operation, &conversation.metadata)?;
        // Serializing a `ModelConfig` leaves its credential out: it never reaches the database.
        let model_config = Some(&conversation.model_config)
            .filter(|config| !config.without_credential().is_empty())
            .map(|config| encode(operation, config))
            .transpose()?;
        let requests = i64::try_from(conversation.requests).unwrap_or(i64::MAX);
        let record = args![
            external_id,
            &conversation.provider,
            conversation.session_id.clone(),
            conversation.status.as_str(),
            transcript,
            metadata,
            conversation.last_error.clone(),
            requests,
            conversation.created_at_ms,
            model_config,
        ];
        transaction.execute(operation, self.sql(&UPSERT), record).await?;
        let notify = self.sql(&NOTIFY_CHANGE);
        if !notify.is_empty() {
            transaction.execute(operation, notify, args![external_id]).await?;
        }
        transaction.execute(operation, self.sql(&DELETE_METADATA), args![external_id]).await?;
        for (key, value) in &conversation.metadata {
            let entry = args![external_id, key, canonical_json(value)];
            transaction.execute(operation, self.sql(&INSERT_METADATA), entry).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl ToolLedger for SqlStore {
    async fn recorded(&self, session_id: &str, tool_use_id: &str) -> Result<Option<LedgerEntry>, Error> {
        const OPERATION: &str = "recorded";
        let row = self
            .db
            .fetch_optional(OPERATION, self.sql(&RECORDED), args![session_id, tool_use_id], &[Col::Text])
            .await?;
        row.and_then(|mut row| row.text(0)).map(|text| decode(OPERATION, "ledger entry", &text)).transpose()
    }

    async fn record(&self, session_id: &str, tool_use_id: &str, entry: &LedgerEntry) -> Result<LedgerEntry, Error> {
        const OPERATION: &str = "record";
        let encoded = encode(OPERATION, entry)?;
        for _ in 0..RECORD_ROUNDS {
            let inserted =
                self.db.execute(OPERATION, self.sql(&RECORD), args![session_id, tool_use_id, &encoded]).await?;
            if inserted == 1 {
                return Ok(entry.clone());
            }
            let row = self
                .db
                .fetch_optional(OPERATION, self.sql(&RECORDED), args![session_id, tool_use_id], &[Col::Text])
                .await?;
            // Gone since the insert (removed by hand): insert again.
            let Some(stored) = row.and_then(|mut row| row.text(0)) else { continue };
            let earlier: LedgerEntry = decode(OPERATION, "ledger entry", &stored)?;
            if earlier.same_call(entry) {
                return Ok(earlier);
            }
            let replace = args![session_id, tool_use_id, &encoded, stored];
            if self.db.execute(OPERATION, self.sql(&REPLACE_RECORDED), replace).await? == 1 {
                return Ok(entry.clone());
            }
        }
        Err(Error::store(OPERATION, true, "the ledger entry kept changing while it was recorded"))
    }
}

#[async_trait]
impl SessionStore for SqlStore {
    async fn load(&self, external_id: &str) -> Result<Option<Conversation>, Error> {
        const OPERATION: &str = "load";
        let row = self.db.fetch_optional(OPERATION, self.sql(&LOAD), args![external_id], CONVERSATION_COLS).await?;
        row.map(|row| conversation(OPERATION, row)).transpose()
    }

    async fn save(&self, conversation: &Conversation, lease: &Lease) -> Result<(), Error> {
        const OPERATION: &str = "save";
        let mut transaction = self.db.begin(OPERATION).await?;
        self.hold_lease(&mut transaction, OPERATION, &conversation.external_id, lease).await?;
        self.write_conversation(&mut transaction, OPERATION, conversation).await?;
        transaction.commit(OPERATION).await?;
        self.announce(&conversation.external_id);
        Ok(())
    }

    async fn list(&self, filter: &ConversationFilter) -> Result<Vec<Conversation>, Error> {
        const OPERATION: &str = "list";
        let (query, args) = list_query(filter);
        let rows = self.db.fetch(OPERATION, &query, args, CONVERSATION_COLS).await?;
        rows.into_iter().map(|row| conversation(OPERATION, row)).collect()
    }

    async fn purge(&self, external_id: &str) -> Result<bool, Error> {
        const OPERATION: &str = "purge";
        let mut transaction = self.db.begin(OPERATION).await?;
        // The lease row first, as `save` does, so the two never wait for each other in opposite orders.
        transaction.execute(OPERATION, self.sql(&RELEASE_ANY), args![external_id]).await?;
        let removed = transaction.execute(OPERATION, self.sql(&DELETE_CONVERSATION), args![external_id]).await?;
        transaction.execute(OPERATION, self.sql(&DELETE_METADATA), args![external_id]).await?;
        transaction.execute(OPERATION, self.sql(&DELETE_APPROVALS), args![external_id]).await?;
        transaction.execute(OPERATION, self.sql(&DELETE_MESSAGES), args![external_id]).await?;
        transaction.execute(OPERATION, self.sql(&DELETE_JOURNAL), args![external_id]).await?;
        transaction.commit(OPERATION).await?;
        Ok(removed > 0)
    }

    async fn acquire(&self, external_id: &str, holder: &str, ttl: Duration) -> Result<Option<Lease>, Error> {
        const OPERATION: &str = "acquire";
        let row = self
            .db
            .fetch_optional(
                OPERATION,
                self.sql(&ACQUIRE),
                args![external_id, holder, ttl_ms(ttl)],
                &[Col::Int, Col::Int],
            )
            .await?;
        let Some(row) = row else { return Ok(None) };
        let token = row.int(0).ok_or_else(|| missing(OPERATION, "lease token"))?;
        let expires_at_ms = row.int(1).ok_or_else(|| missing(OPERATION, "lease expiry"))?;
        Ok(Some(Lease::new(external_id, holder, token, expires_at_ms)))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, Error> {
        const OPERATION: &str = "renew";
        let args = args![&lease.external_id, lease.token, ttl_ms(ttl)];
        let row = self.db.fetch_optional(OPERATION, self.sql(&RENEW), args, &[Col::Text, Col::Int, Col::Int]).await?;
        let Some(mut row) = row else { return Err(lease_lost(&lease.external_id)) };
        let mut renewed = lease.clone();
        renewed.holder = row.text(0).ok_or_else(|| missing(OPERATION, "lease holder"))?;
        renewed.token = row.int(1).ok_or_else(|| missing(OPERATION, "lease token"))?;
        renewed.expires_at_ms = row.int(2).ok_or_else(|| missing(OPERATION, "lease expiry"))?;
        Ok(renewed)
    }

    async fn release(&self, lease: &Lease) -> Result<(), Error> {
        self.db.execute("release", self.sql(&RELEASE), args![&lease.external_id, lease.token]).await.map(drop)
    }

    async fn put_approval(&self, external_id: &str, request: &ApprovalRequest) -> Result<(), Error> {
        const OPERATION: &str = "put_approval";
        let encoded = encode(OPERATION, request)?;
        let args = args![external_id, request.tool_use_id(), encoded];
        self.db.execute(OPERATION, self.sql(&PUT_APPROVAL), args).await.map(drop)
    }

    async fn decide(&self, external_id: &str, tool_use_id: &str, decision: &Decision) -> Result<bool, Error> {
        const OPERATION: &str = "decide";
        // A deferral is no answer: the update then leaves the decision as it is.
        let answer = if decision.is_final() { Some(encode(OPERATION, decision)?) } else { None };
        let found = self.db.execute(OPERATION, self.sql(&DECIDE), args![external_id, tool_use_id, answer]).await?;
        Ok(found > 0)
    }

    async fn approvals(&self, external_id: &str) -> Result<Vec<StoredApproval>, Error> {
        const OPERATION: &str = "approvals";
        let rows = self
            .db
            .fetch(OPERATION, self.sql(&APPROVALS), args![external_id], &[Col::Text, Col::Text, Col::Int])
            .await?;
        rows.into_iter()
            .map(|mut row| {
                let request = row.text(0).ok_or_else(|| missing(OPERATION, "approval request"))?;
                let request: ApprovalRequest = decode(OPERATION, "approval request", &request)?;
                let decision = row.text(1).map(|text| decode(OPERATION, "approval decision", &text)).transpose()?;
                let created_at_ms = row.int(2).ok_or_else(|| missing(OPERATION, "approval time"))?;
                Ok(StoredApproval::new(external_id, request, decision, created_at_ms))
            })
            .collect()
    }

    async fn remove_approval(&self, external_id: &str, tool_use_id: &str) -> Result<(), Error> {
        self.db.execute("remove_approval", self.sql(&REMOVE_APPROVAL), args![external_id, tool_use_id]).await.map(drop)
    }
}
