//! Connecting to PostgreSQL: a pool on a URL, optionally confined to one schema.

use std::str::FromStr;
use std::time::Duration;

use managed_agents_core::Error;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};

use super::BoxFuture;
use super::error::is_retryable;

/// How long the server lets a session sit idle inside a transaction before ending it (this crate's transactions
/// take milliseconds; a process stopped in the middle of one must not hold its locks for long).
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(60);

/// Where a pool connects, for messages and `Debug`: user, host, port, database, never the password.
pub(crate) fn describe(options: &PgConnectOptions) -> String {
    let place = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    format!("postgres://{}@{place}/{}", options.get_username(), options.get_database().unwrap_or(""))
}

/// Parses a connection URL; the error never repeats the URL (it may hold a password).
pub(crate) fn parse(url: &str) -> Result<PgConnectOptions, Error> {
    let invalid = |reason: &str| {
        Error::store_message("connect", format!("not a valid PostgreSQL connection URL: {reason}"), false)
    };
    // sqlx takes any scheme; another database's URL is a mistake to report, not a server to try.
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(invalid("it does not start with postgres:// or postgresql://"));
    }
    PgConnectOptions::from_str(url).map_err(|error| invalid(without_url(&error)))
}

/// The parse error's kind, not its text (which may quote the URL).
fn without_url(error: &sqlx::Error) -> &'static str {
    match error {
        sqlx::Error::Configuration(_) => "malformed URL or unknown parameter",
        _ => "unusable URL",
    }
}

/// Opens a pool on `options` and checks that a connection can be made.
pub(crate) fn connect(
    options: PgConnectOptions,
    schema: Option<&str>,
    max_connections: u32,
    acquire_timeout: Duration,
) -> BoxFuture<'static, Result<PgPool, Error>> {
    let target = describe(&options);
    let mut settings = vec![
        // A row lock held too long (by a stuck transaction) fails the waiting statement, retryably (55P03).
        ("lock_timeout", acquire_timeout.as_millis().max(1).to_string()),
        // A session that stalls inside a transaction is ended by the server, so its locks are not held forever.
        ("idle_in_transaction_session_timeout", IDLE_IN_TRANSACTION.as_millis().to_string()),
    ];
    if let Some(schema) = schema {
        // Every connection of the pool resolves unqualified table names in this schema first.
        settings.push(("search_path", schema.to_string()));
    }
    let options = options.options(settings);
    let failed = move |error: sqlx::Error| {
        let message = format!("cannot connect to {target}: {error}");
        let mut failed = Error::store("connect", is_retryable(&error), error);
        if let Error::Store { message: text, .. } = &mut failed {
            *text = message.into();
        }
        failed
    };
    Box::pin(async move {
        // One connection first, to report why it fails (the pool retries until its timeout and then only says
        // that it timed out).
        match tokio::time::timeout(acquire_timeout, PgConnection::connect_with(&options)).await {
            Ok(Ok(probe)) => drop(probe.close().await),
            Ok(Err(error)) => return Err(failed(error)),
            Err(_) => return Err(failed(sqlx::Error::PoolTimedOut)),
        }
        PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(acquire_timeout)
            .connect_with(options)
            .await
            .map_err(failed)
    })
}

/// Whether `name` is a schema name this crate accepts: lowercase ASCII letters, digits and `_`, not starting with
/// a digit, at most 63 bytes (so it needs no quoting anywhere).
pub(crate) fn is_plain_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Forwards the change notices of this pool's schema to `changes` until the pool closes or the store is gone
/// (noticed at the next notice, or at the next reconnection). A lost connection is reconnected (by the listener,
/// then here with a growing pause up to half a minute when the database stays away); notices sent meanwhile are
/// missed, which readers' polling covers. Holds one connection of the pool while it listens.
pub(crate) async fn forward_changes(pool: PgPool, changes: tokio::sync::broadcast::WeakSender<std::sync::Arc<str>>) {
    let mut failures = 0u32;
    loop {
        if pool.is_closed() || changes.upgrade().is_none() {
            return;
        }
        match listen(&pool, &changes, &mut failures).await {
            Ok(()) | Err(sqlx::Error::PoolClosed) => return,
            Err(error) => {
                failures = failures.saturating_add(1);
                if failures == 1 {
                    tracing::warn!(%error, "lost the change notices: readers poll until they are back");
                }
                let pause = Duration::from_secs(1u64 << failures.min(5)).min(Duration::from_secs(30));
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// Listens on this schema's channel and forwards each notice; `Ok` once the store is gone.
async fn listen(
    pool: &PgPool,
    changes: &tokio::sync::broadcast::WeakSender<std::sync::Arc<str>>,
    failures: &mut u32,
) -> Result<(), sqlx::Error> {
    let channel: String = sqlx::query_scalar(concat!("SELECT ", super::changes_channel!())).fetch_one(pool).await?;
    let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
    listener.listen(&channel).await?;
    *failures = 0;
    loop {
        let notice = listener.recv().await?;
        let Some(changes) = changes.upgrade() else { return Ok(()) };
        let _ = changes.send(std::sync::Arc::from(notice.payload()));
    }
}
