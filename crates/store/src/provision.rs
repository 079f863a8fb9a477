//! [`SqliteStore`]: the provisioning store on an SQLite file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_core::Error;
use managed_agents_core::provision::{ProvisionStore, canonical_json};
use rusqlite::{OptionalExtension, TransactionBehavior};
use serde_json::Value;

use crate::sqlite::{Database, Schema};

/// The provisioning store's tables. Values are canonical JSON text ([`canonical_json`]), so SQL text equality
/// is JSON equality: `delete_value` and `compare_and_swap` compare in SQL. Anything writing this table directly
/// must keep that invariant.
static SCHEMA: Schema = Schema {
    component: "provision",
    migrations: &["CREATE TABLE provision_entries (
        key TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    ) WITHOUT ROWID"],
};

/// The environment variable [`SqliteStore::from_env`] reads the database path from.
pub const DB_PATH_ENV: &str = "MANAGED_AGENTS_DB";

/// How long an operation waits for another connection's lock before failing with a retryable
/// [`Error::Store`], unless [`SqliteOptions::busy_timeout`] says otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How [`SqliteStore::open_with`] opens a database.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { busy_timeout: DEFAULT_BUSY_TIMEOUT }
    }
}

impl SqliteOptions {
    /// The defaults: a [`DEFAULT_BUSY_TIMEOUT`] busy timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long an operation (opening included) waits for a lock another connection or process holds before
    /// it fails with a retryable [`Error::Store`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
}

/// A [`ProvisionStore`] in an SQLite database file, in WAL mode: durable across restarts, and shared safely by
/// every task, thread and process that opens the same file. [`update`](managed_agents_core::provision::update)
/// loses no write between processes, because [`ProvisionStore::compare_and_swap`] runs under SQLite's write
/// lock (`BEGIN IMMEDIATE`).
///
/// A compare-and-swap that finds another value returns `false` after a short random pause (up to 0.1 ms,
/// doubling with each loss in a row up to 10 ms), so that read-modify-write loops of several processes take
/// turns instead of one starving.
///
/// Each operation runs on tokio's blocking pool (so it needs a tokio runtime) on the store's one connection;
/// clones share that connection. Dropping an operation's future does not cancel it: it completes or fails
/// whole. Values are stored as canonical JSON text, so equal JSON values compare equal
/// whatever their key order. `Debug` shows the path, never the contents.
#[derive(Clone)]
pub struct SqliteStore {
    database: Database,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.database.path()).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the database at `path`, creating the file and its missing parent directories, switching it to WAL
    /// and creating or upgrading the store's tables, with the default [`SqliteOptions`]. Reads no environment.
    ///
    /// Fails with [`Error::Store`] (operation `"open"`) when the file cannot be opened or created, is not an
    /// SQLite database, or holds tables of a newer version of this crate; retryable only when another process
    /// held the lock past the busy timeout.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`SqliteStore::open`] with `options`.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, Error> {
        let database = Database::open(path.as_ref().to_path_buf(), options.busy_timeout, &SCHEMA).await?;
        Ok(Self { database })
    }

    /// Opens the database named by `MANAGED_AGENTS_DB` ([`DB_PATH_ENV`]), or else the one at
    /// [`SqliteStore::default_path`].
    pub async fn from_env() -> Result<Self, Error> {
        let path = std::env::var_os(DB_PATH_ENV).filter(|path| !path.is_empty()).map(PathBuf::from);
        let Some(path) = path.or_else(Self::default_path) else {
            return Err(Error::Store {
                operation: "open",
                message: format!("{DB_PATH_ENV} is not set and there is no home directory for the default path"),
                retryable: false,
                source: None,
            });
        };
        Self::open(path).await
    }

    /// Where an application's store lives by default: `managed-agents/managed-agents.sqlite3` in the user's
    /// data directory, from the environment: `$XDG_DATA_HOME` or `$HOME/.local/share` (Linux and other Unix),
    /// `$HOME/Library/Application Support` (macOS), `%LOCALAPPDATA%` (Windows). `None` when none of those is set.
    pub fn default_path() -> Option<PathBuf> {
        data_dir().map(|dir| dir.join("managed-agents").join("managed-agents.sqlite3"))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.database.path()
    }
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).map(PathBuf::from).filter(|path| path.is_absolute())
}

#[cfg(windows)]
fn data_dir() -> Option<PathBuf> {
    env_dir("LOCALAPPDATA")
}

#[cfg(target_os = "macos")]
fn data_dir() -> Option<PathBuf> {
    env_dir("HOME").map(|home| home.join("Library").join("Application Support"))
}

#[cfg(not(any(windows, target_os = "macos")))]
fn data_dir() -> Option<PathBuf> {
    env_dir("XDG_DATA_HOME").or_else(|| env_dir("HOME").map(|home| home.join(".local").join("share")))
}

/// Decodes a stored value; text this store did not write is a typed error, not a panic.
fn decode(operation: &'static str, key: &str, text: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|error| Error::Store {
        operation,
        message: format!("the value stored at `{key}` is not JSON: {error}"),
        retryable: false,
        source: Some(Box::new(error)),
    })
}

#[async_trait]
impl ProvisionStore for SqliteStore {
    async fn get(&self, key: &str) -> Result<Option<Value>, Error> {
        let owned = key.to_string();
        let text: Option<String> = self
            .database
            .call("get", move |connection| {
                connection
                    .query_row("SELECT value FROM provision_entries WHERE key = ?1", [&owned], |row| row.get(0))
                    .optional()
            })
            .await?;
        text.map(|text| decode("get", key, &text)).transpose()
    }

    async fn put(&self, key: &str, value: Value) -> Result<(), Error> {
        let key = key.to_string();
        let text = canonical_json(&value);
        self.database
            .call("put", move |connection| {
                connection.execute(
                    "INSERT INTO provision_entries (key, value) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [&key, &text],
                )
            })
            .await?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        let key = key.to_string();
        self.database
            .call("delete", move |connection| {
                connection.execute("DELETE FROM provision_entries WHERE key = ?1", [&key])
            })
            .await?;
        Ok(())
    }

    async fn delete_value(&self, value: &Value) -> Result<u64, Error> {
        let text = canonical_json(value);
        let removed = self
            .database
            .call("delete_value", move |connection| {
                connection.execute("DELETE FROM provision_entries WHERE value = ?1", [&text])
            })
            .await?;
        Ok(removed as u64)
    }

    async fn compare_and_swap(&self, key: &str, expected: Option<&Value>, new: Option<Value>) -> Result<bool, Error> {
        let key = key.to_string();
        let expected = expected.map(canonical_json);
        let new = new.as_ref().map(canonical_json);
        let swapped = self
            .database
            .call("compare_and_swap", move |connection| {
                // IMMEDIATE: take the write lock before reading, so no other writer (thread or process) can
                // commit between the comparison and the write. A deferred transaction could also fail to upgrade
                // its read lock with SQLITE_BUSY without waiting.
                let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let current: Option<String> = transaction
                    .query_row("SELECT value FROM provision_entries WHERE key = ?1", [&key], |row| row.get(0))
                    .optional()?;
                if current != expected {
                    return Ok(false);
                }
                match &new {
                    Some(text) => transaction.execute(
                        "INSERT INTO provision_entries (key, value) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [&key, text],
                    )?,
                    None => transaction.execute("DELETE FROM provision_entries WHERE key = ?1", [&key])?,
                };
                transaction.commit()?;
                Ok(true)
            })
            .await?;
        if swapped {
            self.database.won_race();
        } else {
            self.database.lost_race().await?;
        }
        Ok(swapped)
    }

    async fn keys(&self, prefix: &str) -> Result<Vec<String>, Error> {
        let prefix = prefix.to_string();
        self.database
            .call("keys", move |connection| {
                // Keys compare by their UTF-8 bytes (SQLite's BINARY collation, like Rust's `str`), so the keys
                // under `prefix` are a contiguous run starting at `prefix`: a range scan of the primary key.
                let mut statement =
                    connection.prepare("SELECT key FROM provision_entries WHERE key >= ?1 ORDER BY key")?;
                let mut rows = statement.query([&prefix])?;
                let mut keys = Vec::new();
                while let Some(row) = rows.next()? {
                    let key: String = row.get(0)?;
                    if !key.starts_with(&prefix) {
                        break;
                    }
                    keys.push(key);
                }
                Ok(keys)
            })
            .await
    }
}
