//! The durable inbox on either database: [`Inbox`] for [`SqlStore`].
//!
//! * **Enqueue** inserts the message and, in the same transaction, the conversation's lease row when there is
//!   none (free, token 0), so that a claim has a row to take.
//! * **Claim** is two `UPDATE`s of lease rows, each picked by a sub-select — the conversations to recover, resume
//!   or wake, then those of the oldest open messages, walked in id order on a partial index: PostgreSQL locks the rows that sub-select returns and skips those
//!   another claimer locked (`FOR UPDATE SKIP LOCKED`), so concurrent claimers divide the work instead of
//!   queueing on the same rows; SQLite runs one writer at a time.
//! * **Update** checks the lease and locks its row first, as a save does, then writes the message (and the record,
//!   when given) in the same transaction: a message and its conversation never disagree after a crash.

use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::conversation::{Conversation, Lease};
use managed_agents_core::inbox::{Inbox, InboxMessage, InboxStats, MessageState};
use serde_json::{Map, Value};

use crate::db::{Col, Row, Sql, args, corrupt, sql};
use crate::session::{decode, encode, missing};
use crate::store::SqlStore;

static ENQUEUE: Sql = sql!(
    "INSERT INTO inbox_messages (external_id, text, metadata, state, attempts, enqueued_at_ms, updated_at_ms) "
    "VALUES ($1, $2, $3, 'pending', 0, " NOW ", " NOW ") RETURNING id, enqueued_at_ms"
);
static LEASE_ROW: Sql = sql!(
    "INSERT INTO conversation_leases (external_id, holder, token, expires_at_ms) VALUES ($1, NULL, 0, 0) "
    "ON CONFLICT (external_id) DO NOTHING"
);
const MESSAGE_COLS: &[Col] =
    &[Col::Int, Col::Text, Col::Text, Col::Text, Col::Text, Col::Int, Col::Text, Col::Text, Col::Int, Col::Int];
static MESSAGE: Sql = sql!(
    "SELECT id, external_id, text, metadata, state, attempts, result, error, enqueued_at_ms, updated_at_ms "
    "FROM inbox_messages WHERE id = $1"
);
static MESSAGES: Sql = sql!(
    "SELECT id, external_id, text, metadata, state, attempts, result, error, enqueued_at_ms, updated_at_ms "
    "FROM inbox_messages WHERE external_id = $1 ORDER BY id"
);
static UPDATE_MESSAGE: Sql = sql!(
    "UPDATE inbox_messages SET state = $3, attempts = $4, result = $5, error = $6, updated_at_ms = " NOW " "
    "WHERE id = $1 AND external_id = $2"
);
/// Takes, for holder `$1` and `$2` ms, the leases of up to `$3` conversations to recover, resume or wake (see
/// [`Inbox::claim`]): a record left running, approvals all answered, a wake flag; never one that waits for an
/// unanswered approval, never one whose lease is held. Few rows: the candidates come from the status index and
/// the partial index of woken leases.
static CLAIM_RECOVERIES: Sql = sql!(
    "UPDATE conversation_leases SET holder = $1, token = token + 1, expires_at_ms = " NOW " + $2, wake = 0 "
    "WHERE external_id IN (SELECT l.external_id FROM conversation_leases l "
    "WHERE l.external_id IN (SELECT c.external_id FROM conversations c WHERE c.status IN ('running', 'awaiting_approval') "
    "UNION SELECT w.external_id FROM conversation_leases w WHERE w.wake = 1) "
    "AND (l.holder IS NULL OR l.expires_at_ms <= " NOW ") "
    "AND NOT EXISTS (SELECT 1 FROM conversations c JOIN conversation_approvals a ON a.external_id = c.external_id "
    "WHERE c.external_id = l.external_id AND c.status = 'awaiting_approval' AND a.decision IS NULL) "
    "AND (l.wake = 1 OR EXISTS (SELECT 1 FROM conversations c WHERE c.external_id = l.external_id "
    "AND (c.status = 'running' OR (c.status = 'awaiting_approval' AND EXISTS "
    "(SELECT 1 FROM conversation_approvals a WHERE a.external_id = c.external_id))))) "
    "ORDER BY l.external_id LIMIT $3" SKIP_LOCKED ") "
    "RETURNING external_id, token, expires_at_ms"
);
/// Takes, for holder `$1` and `$2` ms, the leases of the conversations of the oldest messages not yet final, up
/// to `$3` messages (fewer conversations when one has several): walks the partial index of open messages in id
/// order — first come, first served — and stops at the limit, so a claim costs the same with 10 or 100,000
/// messages waiting. Skips conversations whose lease is held and those waiting for an unanswered approval.
static CLAIM_MESSAGES: Sql = sql!(
    "UPDATE conversation_leases SET holder = $1, token = token + 1, expires_at_ms = " NOW " + $2, wake = 0 "
    "WHERE external_id IN (SELECT l.external_id FROM inbox_messages m "
    "JOIN conversation_leases l ON l.external_id = m.external_id "
    "WHERE m.state IN ('pending', 'taken', 'posted') AND (l.holder IS NULL OR l.expires_at_ms <= " NOW ") "
    "AND NOT EXISTS (SELECT 1 FROM conversations c JOIN conversation_approvals a ON a.external_id = c.external_id "
    "WHERE c.external_id = l.external_id AND c.status = 'awaiting_approval' AND a.decision IS NULL) "
    "ORDER BY m.id LIMIT $3" SKIP_LOCKED ") "
    "RETURNING external_id, token, expires_at_ms"
);
static WAKE: Sql = sql!(
    "UPDATE conversation_leases SET wake = 1 WHERE external_id = $1 "
    "AND EXISTS (SELECT 1 FROM conversations c WHERE c.external_id = $1)"
);
static FIRST_DELIVERY: Sql = sql!(
    "INSERT INTO inbox_deliveries (delivery_id, received_at_ms) VALUES ($1, " NOW ") "
    "ON CONFLICT (delivery_id) DO NOTHING"
);
static STATS: Sql =
    sql!("SELECT state, COUNT(*), MIN(enqueued_at_ms) FROM inbox_messages GROUP BY state ORDER BY state");

/// A message from a row of [`MESSAGE_COLS`] (as [`MESSAGE`] selects them).
fn message(operation: &'static str, mut row: Row) -> Result<InboxMessage, Error> {
    let id = row.int(0).ok_or_else(|| missing(operation, "message id"))?;
    let external_id = row.text(1).ok_or_else(|| missing(operation, "message conversation"))?;
    let text = row.text(2).ok_or_else(|| missing(operation, "message text"))?;
    let enqueued_at_ms = row.int(8).ok_or_else(|| missing(operation, "message time"))?;
    let mut found = InboxMessage::new(id, external_id, text, enqueued_at_ms);
    found.metadata =
        decode(operation, "message metadata", &row.text(3).ok_or_else(|| missing(operation, "metadata"))?)?;
    let state = row.text(4).ok_or_else(|| missing(operation, "message state"))?;
    found.state = MessageState::parse(&state)
        .ok_or_else(|| corrupt(operation, format!("message {id} has an unknown state `{state}`")))?;
    let attempts = row.int(5).ok_or_else(|| missing(operation, "message attempts"))?;
    found.attempts = u32::try_from(attempts).unwrap_or(u32::MAX);
    found.result = row.text(6).map(|text| decode(operation, "message result", &text)).transpose()?;
    found.error = row.text(7);
    found.updated_at_ms = row.int(9).ok_or_else(|| missing(operation, "message update time"))?;
    Ok(found)
}

#[async_trait]
impl Inbox for SqlStore {
    async fn enqueue(
        &self,
        external_id: &str,
        text: &str,
        metadata: &Map<String, Value>,
    ) -> Result<InboxMessage, Error> {
        const OPERATION: &str = "enqueue";
        if external_id.is_empty() {
            return Err(Error::invalid_option("external_id", "must not be empty"));
        }
        let encoded = encode(OPERATION, metadata)?;
        let mut transaction = self.db.begin(OPERATION).await?;
        transaction.execute(OPERATION, self.sql(&LEASE_ROW), args![external_id]).await?;
        let rows = transaction
            .fetch(OPERATION, self.sql(&ENQUEUE), args![external_id, text, encoded], &[Col::Int, Col::Int])
            .await?;
        transaction.commit(OPERATION).await?;
        let row = rows.into_iter().next().ok_or_else(|| missing(OPERATION, "message id"))?;
        let id = row.int(0).ok_or_else(|| missing(OPERATION, "message id"))?;
        let enqueued_at_ms = row.int(1).ok_or_else(|| missing(OPERATION, "message time"))?;
        let mut enqueued = InboxMessage::new(id, external_id, text, enqueued_at_ms);
        enqueued.metadata = metadata.clone();
        Ok(enqueued)
    }

    async fn message(&self, id: i64) -> Result<Option<InboxMessage>, Error> {
        const OPERATION: &str = "message";
        let row = self.db.fetch_optional(OPERATION, self.sql(&MESSAGE), args![id], MESSAGE_COLS).await?;
        row.map(|row| message(OPERATION, row)).transpose()
    }

    async fn messages(&self, external_id: &str) -> Result<Vec<InboxMessage>, Error> {
        const OPERATION: &str = "messages";
        let rows = self.db.fetch(OPERATION, self.sql(&MESSAGES), args![external_id], MESSAGE_COLS).await?;
        rows.into_iter().map(|row| message(OPERATION, row)).collect()
    }

    async fn update(
        &self,
        message: &InboxMessage,
        conversation: Option<&Conversation>,
        lease: &Lease,
    ) -> Result<(), Error> {
        const OPERATION: &str = "update_message";
        let external_id = &message.external_id;
        if conversation.is_some_and(|conversation| conversation.external_id != *external_id) {
            return Err(Error::invalid_option("conversation", "must be the message's conversation"));
        }
        let result = message.result.as_ref().map(|result| encode(OPERATION, result)).transpose()?;
        let mut transaction = self.db.begin(OPERATION).await?;
        self.hold_lease(&mut transaction, OPERATION, external_id, lease).await?;
        if let Some(conversation) = conversation {
            self.write_conversation(&mut transaction, OPERATION, conversation).await?;
        }
        let values = args![
            message.id,
            external_id,
            message.state.as_str(),
            i64::from(message.attempts),
            result,
            message.error.clone()
        ];
        if transaction.execute(OPERATION, self.sql(&UPDATE_MESSAGE), values).await? != 1 {
            return Err(Error::not_found("message", message.id.to_string()));
        }
        transaction.commit(OPERATION).await?;
        self.announce(external_id);
        Ok(())
    }

    async fn claim(&self, holder: &str, ttl: Duration, limit: usize) -> Result<Vec<Lease>, Error> {
        const OPERATION: &str = "claim";
        if limit == 0 {
            return Ok(Vec::new());
        }
        let ttl = i64::try_from(ttl.min(crate::session::MAX_TTL).as_millis()).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut leases = Vec::new();
        // Recoveries first (each statement is atomic on its own), then messages for what is left of the limit.
        for statement in [&CLAIM_RECOVERIES, &CLAIM_MESSAGES] {
            let left = limit.saturating_sub(i64::try_from(leases.len()).unwrap_or(i64::MAX));
            if left == 0 {
                break;
            }
            let rows = self
                .db
                .fetch(OPERATION, self.sql(statement), args![holder, ttl, left], &[Col::Text, Col::Int, Col::Int])
                .await?;
            for mut row in rows {
                let external_id = row.text(0).ok_or_else(|| missing(OPERATION, "lease conversation"))?;
                let token = row.int(1).ok_or_else(|| missing(OPERATION, "lease token"))?;
                let expires_at_ms = row.int(2).ok_or_else(|| missing(OPERATION, "lease expiry"))?;
                leases.push(Lease::new(external_id, holder, token, expires_at_ms));
            }
        }
        Ok(leases)
    }

    async fn wake(&self, external_id: &str) -> Result<bool, Error> {
        Ok(self.db.execute("wake", self.sql(&WAKE), args![external_id]).await? > 0)
    }

    async fn first_delivery(&self, delivery_id: &str) -> Result<bool, Error> {
        Ok(self.db.execute("first_delivery", self.sql(&FIRST_DELIVERY), args![delivery_id]).await? > 0)
    }

    async fn stats(&self) -> Result<InboxStats, Error> {
        const OPERATION: &str = "stats";
        let rows = self.db.fetch(OPERATION, self.sql(&STATS), args![], &[Col::Text, Col::Int, Col::Int]).await?;
        let mut stats = InboxStats::default();
        for mut row in rows {
            let state = row.text(0).ok_or_else(|| missing(OPERATION, "message state"))?;
            let count = u64::try_from(row.int(1).unwrap_or(0)).unwrap_or(0);
            match MessageState::parse(&state) {
                Some(MessageState::Pending) => {
                    stats.pending = count;
                    stats.oldest_pending_ms = row.int(2);
                }
                Some(MessageState::Taken | MessageState::Posted) => stats.in_flight += count,
                Some(MessageState::Answered) => stats.answered = count,
                Some(MessageState::Failed) => stats.failed = count,
                _ => return Err(corrupt(OPERATION, format!("a message has an unknown state `{state}`"))),
            }
        }
        Ok(stats)
    }
}
