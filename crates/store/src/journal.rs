//! The journal on either database: [`Journal`] for [`SqlStore`]. One row an entry, numbered by the database
//! (`seq`), its data as JSON text; the readers walk the `(external_id, seq)` index in either direction. An append is
//! a change (`SessionStore::changes`).

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::journal::{EntryKind, Journal, JournalEntry, MAX_JOURNAL_PAGE};
use serde_json::Value;

use crate::db::{Col, Row, Sql, args, changes_channel, corrupt, sql};
use crate::session::{DELETE_JOURNAL, decode, encode, missing};
use crate::store::SqlStore;

/// Appends an entry; on PostgreSQL the same statement notifies the listeners of this schema's journal
/// (`changes_channel!`), delivered when it commits.
static APPEND: Sql = Sql {
    sqlite: concat!(
        "INSERT INTO conversation_journal (external_id, kind, data, at_ms) VALUES ($1, $2, $3, ",
        sql!(@sqlite NOW),
        ") RETURNING seq, at_ms"
    ),
    postgres: concat!(
        "WITH e AS (INSERT INTO conversation_journal (external_id, kind, data, at_ms) VALUES ($1, $2, $3, ",
        sql!(@postgres NOW),
        ") RETURNING seq, at_ms), n AS (SELECT pg_notify(",
        changes_channel!(),
        ", $1)) SELECT e.seq, e.at_ms FROM e, n"
    ),
};
/// Makes a conversation's appends commit one after the other, in the order of their numbers: numbers are handed
/// out when a row is inserted but seen when it commits, so two appends committing the other way round would let a
/// reader that already read the larger number pass over the smaller one for good. PostgreSQL: a lock on the
/// conversation until the transaction ends; SQLite writes one transaction at a time anyway (nothing).
static SERIALIZE_APPENDS: Sql = Sql { sqlite: "", postgres: "SELECT pg_advisory_xact_lock(hashtext($1))" };
const ENTRY_COLS: &[Col] = &[Col::Int, Col::Text, Col::Text, Col::Text, Col::Int];
static AFTER: Sql = sql!(
    "SELECT seq, external_id, kind, data, at_ms FROM conversation_journal "
    "WHERE external_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
);
static BEFORE: Sql = sql!(
    "SELECT seq, external_id, kind, data, at_ms FROM conversation_journal "
    "WHERE external_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"
);

/// An entry from a row of [`ENTRY_COLS`].
fn entry(operation: &'static str, mut row: Row) -> Result<JournalEntry, Error> {
    let seq = row.int(0).ok_or_else(|| missing(operation, "journal entry number"))?;
    let external_id = row.text(1).ok_or_else(|| missing(operation, "journal entry conversation"))?;
    let kind = row.text(2).ok_or_else(|| missing(operation, "journal entry kind"))?;
    let kind = EntryKind::parse(&kind)
        .ok_or_else(|| corrupt(operation, format!("journal entry {seq} has an unknown kind `{kind}`")))?;
    let data = decode(operation, "journal entry", &row.text(3).ok_or_else(|| missing(operation, "journal data"))?)?;
    let at_ms = row.int(4).ok_or_else(|| missing(operation, "journal entry time"))?;
    Ok(JournalEntry::new(seq, external_id, kind, data, at_ms))
}

/// `limit` as a bound value: at most [`MAX_JOURNAL_PAGE`].
fn page(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_JOURNAL_PAGE)).unwrap_or(0)
}

#[async_trait]
impl Journal for SqlStore {
    async fn append(&self, external_id: &str, kind: EntryKind, data: &Value) -> Result<JournalEntry, Error> {
        const OPERATION: &str = "journal_append";
        let encoded = encode(OPERATION, data)?;
        let mut transaction = self.db.begin(OPERATION).await?;
        let lock = self.sql(&SERIALIZE_APPENDS);
        if !lock.is_empty() {
            transaction.execute(OPERATION, lock, args![external_id]).await?;
        }
        let values = args![external_id, kind.as_str(), encoded];
        let rows = transaction.fetch(OPERATION, self.sql(&APPEND), values, &[Col::Int, Col::Int]).await?;
        transaction.commit(OPERATION).await?;
        let row = rows.into_iter().next().ok_or_else(|| missing(OPERATION, "journal entry number"))?;
        let seq = row.int(0).ok_or_else(|| missing(OPERATION, "journal entry number"))?;
        let at_ms = row.int(1).ok_or_else(|| missing(OPERATION, "journal entry time"))?;
        self.announce(external_id);
        Ok(JournalEntry::new(seq, external_id, kind, data.clone(), at_ms))
    }

    async fn entries_after(&self, external_id: &str, after: i64, limit: usize) -> Result<Vec<JournalEntry>, Error> {
        const OPERATION: &str = "journal_after";
        let values = args![external_id, after, page(limit)];
        let rows = self.db.fetch(OPERATION, self.sql(&AFTER), values, ENTRY_COLS).await?;
        rows.into_iter().map(|row| entry(OPERATION, row)).collect()
    }

    async fn entries_before(
        &self,
        external_id: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<JournalEntry>, Error> {
        const OPERATION: &str = "journal_before";
        let values = args![external_id, before.unwrap_or(i64::MAX), page(limit)];
        let rows = self.db.fetch(OPERATION, self.sql(&BEFORE), values, ENTRY_COLS).await?;
        let mut newest = rows.into_iter().map(|row| entry(OPERATION, row)).collect::<Result<Vec<_>, _>>()?;
        newest.reverse();
        Ok(newest)
    }

    async fn clear(&self, external_id: &str) -> Result<u64, Error> {
        self.db.execute("journal_clear", self.sql(&DELETE_JOURNAL), args![external_id]).await
    }
}
