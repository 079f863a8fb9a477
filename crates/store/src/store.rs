//! [`SqlStore`]: the stores' operations on a [`Database`] of either kind, and the tables they need.
//!
//! The public [`SqliteStore`](crate::SqliteStore) and [`PostgresStore`](crate::PostgresStore) each wrap one and
//! pass every trait method through ([`delegate_stores!`]).

use managed_agents_core::Error;

use crate::db::{Component, Database, Sql, migrate};

/// The provisioning store's tables.
static PROVISION: Component = Component {
    name: "provision",
    sqlite: &[include_str!("../migrations/sqlite/provision/0001_entries.sql")],
    postgres: &[include_str!("../migrations/postgres/provision/0001_entries.sql")],
};

/// The session store's tables: conversations, leases, approvals, the tool ledger; then (2) each conversation's
/// model configuration; then (3) the inbox; then (4) the journal.
static SESSIONS: Component = Component {
    name: "sessions",
    sqlite: &[
        include_str!("../migrations/sqlite/sessions/0001_conversations.sql"),
        include_str!("../migrations/sqlite/sessions/0002_model_config.sql"),
        include_str!("../migrations/sqlite/sessions/0003_inbox.sql"),
        include_str!("../migrations/sqlite/sessions/0004_journal.sql"),
    ],
    postgres: &[
        include_str!("../migrations/postgres/sessions/0001_conversations.sql"),
        include_str!("../migrations/postgres/sessions/0002_model_config.sql"),
        include_str!("../migrations/postgres/sessions/0003_inbox.sql"),
        include_str!("../migrations/postgres/sessions/0004_journal.sql"),
    ],
};

/// Every store operation, on one database. Clones share its pool.
#[derive(Debug, Clone)]
pub(crate) struct SqlStore {
    pub(crate) db: Database,
    /// Notices of changes (`SessionStore::changes`), shared by the clones.
    pub(crate) changes: tokio::sync::broadcast::Sender<std::sync::Arc<str>>,
    /// Whether the store listens for other processes' changes already (PostgreSQL).
    pub(crate) listening: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl SqlStore {
    /// The store on `db`, its tables created or upgraded first (`setup` runs before, under the same lock).
    pub(crate) async fn new(db: Database, setup: Option<&str>) -> Result<Self, Error> {
        migrate(&db, &[&PROVISION, &SESSIONS], setup).await?;
        let changes = tokio::sync::broadcast::Sender::new(managed_agents_core::conversation::CHANGE_NOTICES);
        Ok(Self { db, changes, listening: Default::default() })
    }

    /// Tells this process's readers that `external_id` changed (PostgreSQL tells every process's, through the
    /// `NOTIFY` of the statement that changed it).
    pub(crate) fn announce(&self, external_id: &str) {
        let _ = self.changes.send(std::sync::Arc::from(external_id));
    }

    /// Notices of changes: this process's, and on PostgreSQL every process's, from the first reader on (a task
    /// with a connection of its own listens; it ends with the store's pool, or at the first notice after the
    /// store is gone).
    pub(crate) fn changes(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<str>> {
        let notices = self.changes.subscribe();
        if !self.listening.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.db.listen_for_changes(self.changes.downgrade());
        }
        notices
    }

    /// `statement` in this database's dialect.
    pub(crate) fn sql(&self, statement: &Sql) -> &'static str {
        statement.text(self.db.dialect())
    }
}

/// Implements `ProvisionStore`, `ToolLedger`, `SessionStore`, `Inbox` and `Journal` for `$store` by passing every call to
/// its `inner: SqlStore`.
macro_rules! delegate_stores {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl managed_agents_core::provision::ProvisionStore for $store {
            async fn get(&self, key: &str) -> Result<Option<serde_json::Value>, managed_agents_core::Error> {
                self.inner.get(key).await
            }
            async fn put(&self, key: &str, value: serde_json::Value) -> Result<(), managed_agents_core::Error> {
                self.inner.put(key, value).await
            }
            async fn delete(&self, key: &str) -> Result<(), managed_agents_core::Error> {
                self.inner.delete(key).await
            }
            async fn delete_value(&self, value: &serde_json::Value) -> Result<u64, managed_agents_core::Error> {
                self.inner.delete_value(value).await
            }
            async fn compare_and_swap(
                &self,
                key: &str,
                expected: Option<&serde_json::Value>,
                new: Option<serde_json::Value>,
            ) -> Result<bool, managed_agents_core::Error> {
                self.inner.compare_and_swap(key, expected, new).await
            }
            async fn keys(&self, prefix: &str) -> Result<Vec<String>, managed_agents_core::Error> {
                self.inner.keys(prefix).await
            }
        }

        #[async_trait::async_trait]
        impl managed_agents_core::ledger::ToolLedger for $store {
            async fn recorded(
                &self,
                session_id: &str,
                tool_use_id: &str,
            ) -> Result<Option<managed_agents_core::ledger::LedgerEntry>, managed_agents_core::Error> {
                self.inner.recorded(session_id, tool_use_id).await
            }
            async fn record(
                &self,
                session_id: &str,
                tool_use_id: &str,
                entry: &managed_agents_core::ledger::LedgerEntry,
            ) -> Result<managed_agents_core::ledger::LedgerEntry, managed_agents_core::Error> {
                self.inner.record(session_id, tool_use_id, entry).await
            }
        }

        #[async_trait::async_trait]
        impl managed_agents_core::conversation::SessionStore for $store {
            async fn load(
                &self,
                external_id: &str,
            ) -> Result<Option<managed_agents_core::conversation::Conversation>, managed_agents_core::Error> {
                self.inner.load(external_id).await
            }
            async fn save(
                &self,
                conversation: &managed_agents_core::conversation::Conversation,
                lease: &managed_agents_core::conversation::Lease,
            ) -> Result<(), managed_agents_core::Error> {
                self.inner.save(conversation, lease).await
            }
            async fn list(
                &self,
                filter: &managed_agents_core::conversation::ConversationFilter,
            ) -> Result<Vec<managed_agents_core::conversation::Conversation>, managed_agents_core::Error> {
                self.inner.list(filter).await
            }
            async fn purge(&self, external_id: &str) -> Result<bool, managed_agents_core::Error> {
                self.inner.purge(external_id).await
            }
            async fn acquire(
                &self,
                external_id: &str,
                holder: &str,
                ttl: std::time::Duration,
            ) -> Result<Option<managed_agents_core::conversation::Lease>, managed_agents_core::Error> {
                self.inner.acquire(external_id, holder, ttl).await
            }
            async fn renew(
                &self,
                lease: &managed_agents_core::conversation::Lease,
                ttl: std::time::Duration,
            ) -> Result<managed_agents_core::conversation::Lease, managed_agents_core::Error> {
                self.inner.renew(lease, ttl).await
            }
            async fn release(
                &self,
                lease: &managed_agents_core::conversation::Lease,
            ) -> Result<(), managed_agents_core::Error> {
                self.inner.release(lease).await
            }
            async fn put_approval(
                &self,
                external_id: &str,
                request: &managed_agents_core::approval::ApprovalRequest,
            ) -> Result<(), managed_agents_core::Error> {
                self.inner.put_approval(external_id, request).await
            }
            async fn decide(
                &self,
                external_id: &str,
                tool_use_id: &str,
                decision: &managed_agents_core::approval::Decision,
            ) -> Result<bool, managed_agents_core::Error> {
                self.inner.decide(external_id, tool_use_id, decision).await
            }
            async fn approvals(
                &self,
                external_id: &str,
            ) -> Result<Vec<managed_agents_core::conversation::StoredApproval>, managed_agents_core::Error> {
                self.inner.approvals(external_id).await
            }
            async fn remove_approval(
                &self,
                external_id: &str,
                tool_use_id: &str,
            ) -> Result<(), managed_agents_core::Error> {
                self.inner.remove_approval(external_id, tool_use_id).await
            }
            fn inbox(&self) -> Option<&dyn managed_agents_core::inbox::Inbox> {
                Some(self)
            }
            fn journal(&self) -> Option<&dyn managed_agents_core::journal::Journal> {
                Some(self)
            }
            fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<std::sync::Arc<str>>> {
                Some(self.inner.changes())
            }
        }

        #[async_trait::async_trait]
        impl managed_agents_core::journal::Journal for $store {
            async fn append(
                &self,
                external_id: &str,
                kind: managed_agents_core::journal::EntryKind,
                data: &serde_json::Value,
            ) -> Result<managed_agents_core::journal::JournalEntry, managed_agents_core::Error> {
                self.inner.append(external_id, kind, data).await
            }
            async fn entries_after(
                &self,
                external_id: &str,
                after: i64,
                limit: usize,
            ) -> Result<Vec<managed_agents_core::journal::JournalEntry>, managed_agents_core::Error> {
                self.inner.entries_after(external_id, after, limit).await
            }
            async fn entries_before(
                &self,
                external_id: &str,
                before: Option<i64>,
                limit: usize,
            ) -> Result<Vec<managed_agents_core::journal::JournalEntry>, managed_agents_core::Error> {
                self.inner.entries_before(external_id, before, limit).await
            }
            async fn clear(&self, external_id: &str) -> Result<u64, managed_agents_core::Error> {
                self.inner.clear(external_id).await
            }
        }

        #[async_trait::async_trait]
        impl managed_agents_core::inbox::Inbox for $store {
            async fn enqueue(
                &self,
                external_id: &str,
                text: &str,
                metadata: &serde_json::Map<String, serde_json::Value>,
            ) -> Result<managed_agents_core::inbox::InboxMessage, managed_agents_core::Error> {
                self.inner.enqueue(external_id, text, metadata).await
            }
            async fn message(
                &self,
                id: i64,
            ) -> Result<Option<managed_agents_core::inbox::InboxMessage>, managed_agents_core::Error> {
                self.inner.message(id).await
            }
            async fn messages(
                &self,
                external_id: &str,
            ) -> Result<Vec<managed_agents_core::inbox::InboxMessage>, managed_agents_core::Error> {
                self.inner.messages(external_id).await
            }
            async fn update(
                &self,
                message: &managed_agents_core::inbox::InboxMessage,
                conversation: Option<&managed_agents_core::conversation::Conversation>,
                lease: &managed_agents_core::conversation::Lease,
            ) -> Result<(), managed_agents_core::Error> {
                self.inner.update(message, conversation, lease).await
            }
            async fn claim(
                &self,
                holder: &str,
                ttl: std::time::Duration,
                limit: usize,
            ) -> Result<Vec<managed_agents_core::conversation::Lease>, managed_agents_core::Error> {
                self.inner.claim(holder, ttl, limit).await
            }
            async fn wake(&self, external_id: &str) -> Result<bool, managed_agents_core::Error> {
                self.inner.wake(external_id).await
            }
            async fn first_delivery(&self, delivery_id: &str) -> Result<bool, managed_agents_core::Error> {
                self.inner.first_delivery(delivery_id).await
            }
            async fn stats(&self) -> Result<managed_agents_core::inbox::InboxStats, managed_agents_core::Error> {
                self.inner.stats().await
            }
        }
    };
}
pub(crate) use delegate_stores;
