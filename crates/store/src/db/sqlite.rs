//! Opening an SQLite file with what several processes need: WAL, a busy timeout, `synchronous = NORMAL`.

use std::path::Path;
use std::time::{Duration, Instant};

use managed_agents_core::Error;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Executor, SqlitePool};

use super::BoxFuture;
use super::error::store_error;

/// Opens (creating it and its missing parent directories) the database at `path` and switches it to WAL.
/// Errors name the file.
pub(crate) fn open(
    path: &Path,
    busy_timeout: Duration,
    max_connections: u32,
) -> BoxFuture<'_, Result<SqlitePool, Error>> {
    Box::pin(open_pool(path, busy_timeout, max_connections))
}

async fn open_pool(path: &Path, busy_timeout: Duration, max_connections: u32) -> Result<SqlitePool, Error> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| open_error(path, "cannot create the directory of", false, error))?;
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        // Every statement waits this long for another connection's lock (in this process or another) before it
        // fails with SQLITE_BUSY, which is retryable.
        .busy_timeout(busy_timeout)
        // In WAL mode, NORMAL never corrupts the database; a power loss or OS crash may lose the last commits (an
        // application crash loses nothing).
        .synchronous(SqliteSynchronous::Normal);
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections.max(1))
        .min_connections(0)
        // Waiting for a free connection: at most what a statement waits for a lock, and a little more.
        .acquire_timeout(busy_timeout.saturating_add(Duration::from_secs(1)))
        .connect_with(options)
        .await
        .map_err(|error| naming(path, "cannot open", store_error("open", error)))?;
    let mode =
        enable_wal(&pool, busy_timeout).await.map_err(|error| naming(path, "cannot open the database", error))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // SQLite refuses WAL where it cannot share memory between processes (some network file systems). The
        // rollback journal it keeps is just as safe across processes, only readers and the writer block each
        // other.
        tracing::warn!(path = %path.display(), mode, "SQLite kept its journal mode instead of WAL");
    }
    Ok(pool)
}

/// A failure to open `path`, saying which file.
fn open_error(path: &Path, what: &str, retryable: bool, source: impl Into<managed_agents_core::BoxError>) -> Error {
    naming(path, what, Error::store("open", retryable, source))
}

/// A store error met while opening `path`, as an `"open"` error that names the file.
pub(crate) fn naming(path: &Path, what: &str, mut error: Error) -> Error {
    if let Error::Store { operation, message, .. } = &mut error {
        *operation = "open";
        *message = format!("{what} {}: {message}", path.display()).into();
    }
    error
}

/// Switches the file to WAL (a no-op when it already is) and returns the journal mode in force. The first
/// statement that reads the file: a file that is not a database fails here, before anything is written to it.
///
/// Switching needs an exclusive lock, and SQLite answers "busy" at once, without waiting, when another
/// connection is in the middle of the same switch (two processes opening a new file together). So this waits
/// for the lock itself, in growing pauses, up to the busy timeout.
async fn enable_wal(pool: &SqlitePool, busy_timeout: Duration) -> Result<String, Error> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt = pool.fetch_one("PRAGMA journal_mode = WAL").await;
        match attempt {
            Ok(row) => return sqlx::Row::try_get::<String, _>(&row, 0).map_err(|error| store_error("open", error)),
            Err(error) => {
                let error = store_error("open", error);
                if !error.is_retryable() || started.elapsed() + pause >= busy_timeout {
                    return Err(error);
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
