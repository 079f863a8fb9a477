//! Database failures as [`Error::Store`]: retryable exactly when trying again can succeed by itself — SQLite
//! reported the database busy or locked past the busy timeout, PostgreSQL aborted a transaction for a
//! serialization failure or a deadlock, a lock or a connection was not to be had, the connection broke.

use managed_agents_core::Error;

/// A database failure during `operation`.
pub(crate) fn store_error(operation: &'static str, error: sqlx::Error) -> Error {
    let retryable = is_retryable(&error);
    Error::store(operation, retryable, error)
}

/// Something read back from the database that this crate did not write (a value that is not JSON, an unknown
/// status …): never retryable.
pub(crate) fn corrupt(operation: &'static str, message: String) -> Error {
    Error::store_message(operation, message, false)
}

/// Whether trying again can succeed by itself.
pub(crate) fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(error) => is_transient(&**error),
        // The connection broke, or none was free in time.
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut => true,
        _ => false,
    }
}

fn is_transient(error: &dyn sqlx::error::DatabaseError) -> bool {
    #[cfg(feature = "sqlite")]
    if error.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        // The extended result code; the primary one is its low byte: SQLITE_BUSY (5), SQLITE_LOCKED (6).
        let code = error.code().and_then(|code| code.parse::<i32>().ok()).unwrap_or(0);
        return matches!(code & 0xff, 5 | 6);
    }
    #[cfg(feature = "postgres")]
    if let Some(error) = error.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        let code = error.code();
        return matches!(
            code,
            // serialization_failure, deadlock_detected, lock_not_available, too_many_connections,
            // admin_shutdown, crash_shutdown, cannot_connect_now
            "40001" | "40P01" | "55P03" | "53300" | "57P01" | "57P02" | "57P03"
        ) || code.starts_with("08"); // connection exceptions
    }
    let _ = error;
    false
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_locked_sqlite_database_is_retryable_and_a_syntax_error_is_not() {
        use sqlx::{Connection, Executor};
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = dir.path().join("lock.sqlite3");
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .busy_timeout(std::time::Duration::ZERO);
        let mut holder = sqlx::SqliteConnection::connect_with(&options).await.expect("connect");
        let mut other = sqlx::SqliteConnection::connect_with(&options).await.expect("connect");
        holder.execute("CREATE TABLE t (x INTEGER)").await.expect("create");
        holder.execute("BEGIN EXCLUSIVE").await.expect("lock");
        let busy = other.execute("INSERT INTO t VALUES (1)").await.expect_err("locked");
        assert!(store_error("put", busy).is_retryable());
        let syntax = other.execute("NOT SQL").await.expect_err("syntax");
        assert!(!store_error("put", syntax).is_retryable());
    }
}
