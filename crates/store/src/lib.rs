//! Durable storage for managed-agents, on SQLite or PostgreSQL.
//!
//! Two stores, each implementing every store trait of
//! [`managed-agents-core`](managed_agents_core): the provisioning store
//! ([`ProvisionStore`](managed_agents_core::provision::ProvisionStore)), the host's session store
//! ([`SessionStore`](managed_agents_core::conversation::SessionStore): conversations keyed by external id,
//! leases, pending tool approvals) and the tool ledger ([`ToolLedger`](managed_agents_core::ledger::ToolLedger)).
//!
//! * [`SqliteStore`][sqlite-store] (feature `sqlite`, on by default): an SQLite file in WAL mode that the
//!   processes of one machine share. SQLite is compiled in; nothing to install or run.
//! * [`PostgresStore`][postgres-store] (feature `postgres`): a PostgreSQL database that the processes of several
//!   machines share.
//!
//! The in-memory stores ([`MemoryStore`](managed_agents_core::provision::MemoryStore),
//! [`MemorySessionStore`](managed_agents_core::conversation::MemorySessionStore)) stay in core, for tests and
//! short-lived programs. All of them pass the same contract tests (`managed-agents-conformance`'s
//! `store_contract` and `session_store_contract`).
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # mod example {
//! use std::time::Duration;
//! use managed_agents_core::conversation::{Conversation, ConversationFilter, SessionStore};
//! use managed_agents_core::provision::{ProvisionStore, update};
//! use managed_agents_store::SqliteStore;
//! use serde_json::json;
//!
//! # pub async fn main() -> Result<(), managed_agents_core::Error> {
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! let path = dir.path().join("state").join("agents.sqlite3");
//! // Creates the file (and its directory) on first use; `SqliteStore::from_env()` opens `$MANAGED_AGENTS_DB`
//! // or the per-user default instead.
//! let store = SqliteStore::open(&path).await?;
//!
//! // The provisioning store: what `managed_agents_core::provision::provision` remembers, and read-modify-writes
//! // that no concurrent writer (task or process) can undo.
//! store.put("provision:claude:3f2a…:none", json!({"agent_id": "agent_01"})).await?;
//! update(&store, "tags:production", |current| {
//!     let mut tags = current.cloned().unwrap_or_else(|| json!([]));
//!     tags.as_array_mut()?.push(json!("agent_01"));
//!     Some(tags)
//! })
//! .await?;
//!
//! // The session store: one worker at a time drives a conversation, under a lease.
//! let lease = store.acquire("slack:T1/C2/1712", "worker-a", Duration::from_secs(30)).await?.expect("free");
//! assert!(store.acquire("slack:T1/C2/1712", "worker-b", Duration::from_secs(30)).await?.is_none());
//! let mut conversation = Conversation::new("slack:T1/C2/1712", "claude");
//! conversation.metadata.insert("team".into(), json!("support"));
//! store.save(&conversation, &lease).await?;
//! store.release(&lease).await?;
//! drop(store);
//!
//! // Durable: another process, or this one later, sees the same state.
//! let reopened = SqliteStore::open(&path).await?;
//! assert_eq!(reopened.get("tags:production").await?, Some(json!(["agent_01"])));
//! let support = reopened.list(&ConversationFilter::new().metadata("team", "support")).await?;
//! assert_eq!(support[0].external_id, "slack:T1/C2/1712");
//! # Ok(())
//! # }
//! # }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! #     #[cfg(feature = "sqlite")]
//! #     example::main().await?;
//! #     Ok(())
//! # }
//! ```
//!
//! With PostgreSQL, the same calls on a [`PostgresStore`][postgres-store]:
//!
//! ```no_run
//! # #[cfg(feature = "postgres")]
//! # async fn example() -> Result<(), managed_agents_core::Error> {
//! use managed_agents_store::{PostgresOptions, PostgresStore};
//!
//! // `PostgresStore::from_env()` reads `MANAGED_AGENTS_POSTGRES_URL` instead.
//! let store = PostgresStore::connect_with(
//!     "postgres://agents:secret@db.internal:5432/agents",
//!     PostgresOptions::new().schema("managed_agents"),
//! )
//! .await?;
//! # let _ = store;
//! # Ok(())
//! # }
//! # fn main() {}
//! ```
//!
//! # Design
//!
//! * **One SQL layer, sqlx**, for both databases, without its macros (no database needed to build) and with
//!   each operation written once: the stores bind values and read rows of their own types, and only the
//!   statements whose SQL differs between the dialects (the clock, the migration lock) come in two versions.
//! * **Migrations** are the `.sql` files under `crates/store/migrations/<sqlite|postgres>/<component>/`,
//!   embedded in the binary and applied in order under a lock (SQLite's write lock, a PostgreSQL advisory
//!   lock), so several processes can open a new database at once. Each component (`provision`, `sessions`)
//!   records its version in the `managed_agents_schema` table; a database whose tables are newer than this build
//!   is refused instead of guessed at.
//! * **SQLite: WAL, `synchronous = NORMAL`, a busy timeout** (5 s by default,
//!   [`SqliteOptions::busy_timeout`][busy-timeout]): readers never block the writer; a write waits for another
//!   process's lock instead of failing at once, and when it waited too long the error is retryable. An
//!   application crash loses nothing; a power loss may lose the last commits, never the database. Transactions
//!   take the write lock at their start (`BEGIN IMMEDIATE`).
//! * **Atomic without locks held across calls**: a compare-and-swap is one conditional statement; a lease is
//!   taken with one `INSERT … ON CONFLICT DO UPDATE … WHERE <free, expired or mine> RETURNING token`; a save
//!   locks the lease row while it checks the token and writes. The fencing token only grows, release and purge
//!   included. Lease expiry follows the database's clock (PostgreSQL's own; SQLite's is the machine's).
//! * **JSON as canonical text** ([`canonical_json`](managed_agents_core::provision::canonical_json)): equal
//!   JSON is equal text, so values compare in SQL and metadata filters are exact, indexed comparisons.
//!
//! Errors are [`Error::Store`](managed_agents_core::Error::Store) with the operation (`"open"`, `"get"`,
//! `"acquire"`, `"save"` …), retryable exactly when waiting can help (SQLite busy or locked; PostgreSQL
//! serialization failures, deadlocks, unavailable locks or connections), and
//! [`Error::LeaseLost`](managed_agents_core::Error::LeaseLost) for a save or renewal under a lease that is no
//! longer current. Data this crate did not write (text that is not JSON, an unknown status) is a typed error,
//! never a panic. A file that is not an SQLite database fails to open (and is left untouched).
//!
//! PostgreSQL connections set `lock_timeout` (the acquire timeout) and `idle_in_transaction_session_timeout`
//! (a minute), so a worker stalled inside a transaction cannot hold a conversation's rows for long.
//!
//! # Testing
//!
//! The PostgreSQL tests (built with the `postgres` feature) read the server's URL from
//! `MANAGED_AGENTS_POSTGRES_URL`; without it they are reported as ignored, with the reason, and with
//! `MANAGED_AGENTS_REQUIRE_POSTGRES=1` (as in CI) they fail. `.ci/postgres.sh start` starts a throwaway
//! server under `target/` and prints its URL.
//!
//! # Features
//!
//! * `sqlite` (default): [`SqliteStore`][sqlite-store].
//! * `postgres`: [`PostgresStore`][postgres-store].
//!
//! (A store whose feature is off links here.)
//!
#![cfg_attr(feature = "sqlite", doc = "[sqlite-store]: crate::SqliteStore")]
#![cfg_attr(not(feature = "sqlite"), doc = "[sqlite-store]: #features")]
#![cfg_attr(feature = "postgres", doc = "[postgres-store]: crate::PostgresStore")]
#![cfg_attr(not(feature = "postgres"), doc = "[postgres-store]: #features")]
#![cfg_attr(feature = "sqlite", doc = "[busy-timeout]: crate::SqliteOptions::busy_timeout")]
#![cfg_attr(not(feature = "sqlite"), doc = "[busy-timeout]: #features")]

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod db;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod inbox;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod journal;
#[cfg(feature = "postgres")]
mod postgres_store;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod provision;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod session;
#[cfg(feature = "sqlite")]
mod sqlite_store;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store;

/// The longest wait a setting can ask for (a day): `SqliteOptions::busy_timeout` and
/// `PostgresOptions::acquire_timeout` shorten longer ones to it.
pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

#[cfg(feature = "postgres")]
pub use postgres_store::{
    DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_POSTGRES_CONNECTIONS, POSTGRES_URL_ENV, PostgresOptions, PostgresStore,
};
#[cfg(feature = "sqlite")]
pub use sqlite_store::{DB_PATH_ENV, DEFAULT_BUSY_TIMEOUT, DEFAULT_SQLITE_CONNECTIONS, SqliteOptions, SqliteStore};
