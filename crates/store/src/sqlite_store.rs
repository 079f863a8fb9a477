//! [`SqliteStore`]: every store of this crate in one SQLite file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Error;

use crate::db::{Database, sqlite};
use crate::store::{SqlStore, delegate_stores};

/// The environment variable [`SqliteStore::from_env`] reads the database path from.
pub const DB_PATH_ENV: &str = "MANAGED_AGENTS_DB";

/// How long an operation waits for another connection's lock before failing with a retryable
/// [`Error::Store`], unless [`SqliteOptions::busy_timeout`] says otherwise.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How many connections a [`SqliteStore`] opens at most, unless [`SqliteOptions::max_connections`] says
/// otherwise.
pub const DEFAULT_SQLITE_CONNECTIONS: u32 = 4;

/// How [`SqliteStore::open_with`] opens a database.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    busy_timeout: Duration,
    max_connections: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { busy_timeout: DEFAULT_BUSY_TIMEOUT, max_connections: DEFAULT_SQLITE_CONNECTIONS }
    }
}

impl SqliteOptions {
    /// The defaults: a [`DEFAULT_BUSY_TIMEOUT`] busy timeout, [`DEFAULT_SQLITE_CONNECTIONS`] connections.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long an operation (opening included) waits for a lock another connection or process holds before
    /// it fails with a retryable [`Error::Store`]; at most [`MAX_WAIT`](crate::MAX_WAIT) (longer is shortened to
    /// it).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout.min(crate::MAX_WAIT);
        self
    }

    /// How many connections the store opens at most (at least one): readers run in parallel on them, writers
    /// take turns on SQLite's one write lock.
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = connections.max(1);
        self
    }
}

/// Every store of this crate in an SQLite database file, in WAL mode: the provisioning store
/// ([`ProvisionStore`](managed_agents_core::provision::ProvisionStore)), the host's session store
/// ([`SessionStore`](managed_agents_core::conversation::SessionStore)) and its tool ledger
/// ([`ToolLedger`](managed_agents_core::ledger::ToolLedger)). Durable across restarts, and shared safely by every
/// task, thread and process of one machine that opens the same file.
///
/// Operations run on a small pool of connections (each SQLite connection works on a thread of its own), so a
/// tokio runtime with its timer is needed (`#[tokio::main]` has one). Clones share the pool. Each operation is
/// atomic: one statement, or one transaction that holds SQLite's write lock from its start. A write waits up to
/// the busy timeout for another connection's lock, then fails with a retryable [`Error::Store`]. `Debug` shows
/// the path, never the contents.
#[derive(Clone)]
pub struct SqliteStore {
    inner: SqlStore,
    path: Arc<Path>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the database at `path`, creating the file and its missing parent directories, switching it to WAL
    /// and creating or upgrading the stores' tables, with the default [`SqliteOptions`]. Reads no environment.
    ///
    /// Fails with [`Error::Store`] (operation `"open"`) when the file cannot be opened or created, is not an
    /// SQLite database, or holds tables of a newer version of this crate; retryable only when another process
    /// held the lock past the busy timeout.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`SqliteStore::open`] with `options`.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, Error> {
        let path: Arc<Path> = path.as_ref().into();
        let pool = sqlite::open(&path, options.busy_timeout, options.max_connections).await?;
        let database = Database::Sqlite(pool);
        let inner = match SqlStore::new(database.clone(), None).await {
            Ok(inner) => inner,
            Err(error) => {
                database.close().await;
                return Err(sqlite::naming(&path, "cannot prepare the tables of", error));
            }
        };
        Ok(Self { inner, path })
    }

    /// Opens the database named by `MANAGED_AGENTS_DB` ([`DB_PATH_ENV`]), or else the one at
    /// [`SqliteStore::default_path`].
    pub async fn from_env() -> Result<Self, Error> {
        let path = std::env::var_os(DB_PATH_ENV).filter(|path| !path.is_empty()).map(PathBuf::from);
        let Some(path) = path.or_else(Self::default_path) else {
            return Err(Error::store_message(
                "open",
                format!("{DB_PATH_ENV} is not set and there is no home directory for the default path"),
                false,
            ));
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
        &self.path
    }

    /// Closes the store's connections (every clone's), waiting for operations in flight. Later operations fail.
    /// Dropping the last clone closes them too, without waiting.
    pub async fn close(&self) {
        self.inner.db.close().await;
    }
}

delegate_stores!(SqliteStore);

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
