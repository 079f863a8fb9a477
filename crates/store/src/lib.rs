//! Durable embedded storage for managed-agents.
//!
//! [`SqliteStore`] is the default durable [`ProvisionStore`](managed_agents_core::provision::ProvisionStore):
//! an SQLite file in WAL mode that several processes can share — two programs provisioning the same agent at
//! once reuse one handle instead of each remembering its own, and no
//! [`update`](managed_agents_core::provision::update) is lost between them. The in-memory
//! [`MemoryStore`](managed_agents_core::provision::MemoryStore) stays in core for tests and short-lived programs.
//!
//! ```
//! use managed_agents_core::provision::{ProvisionStore, update};
//! use managed_agents_store::SqliteStore;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! let dir = tempfile::tempdir().expect("a temporary directory");
//! // Creates the file (and its directory) on first use; `SqliteStore::from_env()` opens `$MANAGED_AGENTS_DB`
//! // or the per-user default instead.
//! let store = SqliteStore::open(dir.path().join("state").join("agents.sqlite3")).await?;
//!
//! // What `managed_agents_core::provision::provision` does with it: remember a handle under its cache key …
//! store.put("provision:claude:3f2a…:none", json!({"agent_id": "agent_01", "environment_id": "env_01"})).await?;
//! // … and tags are read-modify-writes that no concurrent writer (task or process) can undo.
//! update(&store, "tags:production", |current| {
//!     let mut tags = current.cloned().unwrap_or_else(|| json!([]));
//!     tags.as_array_mut()?.push(json!("agent_01"));
//!     Some(tags)
//! })
//! .await?;
//! drop(store);
//!
//! // Durable: another process, or this one later, sees the same entries.
//! let reopened = SqliteStore::open(dir.path().join("state").join("agents.sqlite3")).await?;
//! assert_eq!(reopened.get("tags:production").await?, Some(json!(["agent_01"])));
//! assert_eq!(reopened.keys("provision:").await?.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! Pass the store to [`provision`](managed_agents_core::provision::provision) as `&store` and a definition is
//! provisioned once per (provider, agent digest, environment digest), whichever process asks first.
//!
//! # Design
//!
//! * **rusqlite with `bundled`, not sqlx.** SQLite's API is synchronous whatever the wrapper (sqlx runs each
//!   connection on a worker thread of its own), so an async driver buys nothing here, while sqlx brings its
//!   runtime layer, pool and macros on top of the same `libsqlite3-sys`. rusqlite is that crate plus a thin
//!   safe wrapper; each operation runs on tokio's blocking pool (`spawn_blocking`) on the store's one
//!   connection. `bundled` compiles SQLite from source: the same version on every machine, no system library.
//! * **WAL, `synchronous = NORMAL`, a busy timeout** (5 s by default, [`SqliteOptions::busy_timeout`]):
//!   readers never block the writer; a write waits for another process's lock instead of failing at once, and
//!   when it waited too long the error is retryable. An application crash loses nothing; a power loss may lose
//!   the last commits, never the database.
//! * **Compare-and-swap under `BEGIN IMMEDIATE`**: the write lock is taken before the comparison, so no process
//!   commits in between. A compare-and-swap that lost returns after a short random pause, bounded from 0.1 ms
//!   doubling to 10 ms with each loss in a row: without it, two processes looping on one key fall into step and
//!   one of them loses every time, until `update` gives up (the two-process test showed it in about one run in
//!   ten; with the pause, no update took more than 20 of its 64 attempts in 100 runs).
//! * **Values are canonical JSON text** ([`canonical_json`](managed_agents_core::provision::canonical_json)):
//!   equal JSON is equal text, so `compare_and_swap` and `delete_value` compare in SQL, key order never matters.
//! * **Schema versions per component** in a `managed_agents_schema` table (not `PRAGMA user_version`, which is one
//!   number per file): the host's session store can share the file and version its own tables. Opening a file
//!   written by a newer version of this crate fails instead of guessing.
//! * **Paths**: [`SqliteStore::open`] takes a path and creates missing parent directories; it never reads the
//!   environment. [`SqliteStore::from_env`] reads `MANAGED_AGENTS_DB`, else [`SqliteStore::default_path`].
//!
//! Errors are [`Error::Store`](managed_agents_core::Error::Store) with the operation (`"open"`, `"get"`,
//! `"compare_and_swap"` …); retryable exactly when SQLite reported the database busy or locked. A file that is
//! not an SQLite database fails to open (and is left untouched).

mod provision;
mod sqlite;

pub use provision::{DB_PATH_ENV, DEFAULT_BUSY_TIMEOUT, SqliteOptions, SqliteStore};
