//! The SQLite layer every durable store of this crate shares: opening a file with the settings several processes
//! need (WAL, a busy timeout), per-component schema versions, blocking calls moved off the async runtime, and the
//! mapping of SQLite errors to [`Error::Store`].
//!
//! The provisioning store ([`crate::SqliteStore`]) is its first user; the host's session store is meant to be the
//! second, on the same file if the application wants: each component versions its own tables in
//! `managed_agents_schema`, so one component's migration never touches another's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use managed_agents_core::Error;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

/// The tables of one component and how to reach its newest version: `migrations[n]` takes the component from
/// version `n` to `n + 1` (version 0: the component has no tables yet).
pub(crate) struct Schema {
    /// The component's name in `managed_agents_schema`.
    pub(crate) component: &'static str,
    /// SQL batches, oldest first; never edit one that has shipped, append a new one.
    pub(crate) migrations: &'static [&'static str],
}

impl Schema {
    fn latest(&self) -> i64 {
        self.migrations.len() as i64
    }
}

/// An open database file: one connection, used by one blocking call at a time.
#[derive(Clone)]
pub(crate) struct Database {
    path: Arc<Path>,
    connection: Arc<Mutex<Connection>>,
    /// Compare-and-swaps lost in a row (see [`Database::lost_race`]).
    lost_races: Arc<AtomicU32>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Database").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Database {
    /// Opens (creating it and its missing parent directories) the database at `path`, switches it to WAL, and
    /// brings `schema` to its newest version.
    pub(crate) async fn open(path: PathBuf, busy_timeout: Duration, schema: &'static Schema) -> Result<Self, Error> {
        let path: Arc<Path> = path.into();
        let opened = Arc::clone(&path);
        let connection = run_blocking("open", move || open_blocking(&opened, busy_timeout, schema)).await??;
        Ok(Self { path, connection: Arc::new(Mutex::new(connection)), lost_races: Arc::default() })
    }

    /// The file this database lives in.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `call` on the connection on tokio's blocking pool; SQLite errors become [`Error::Store`] for
    /// `operation`. Dropping the returned future does not stop `call`: it runs to its end (a transaction it
    /// started is committed or rolled back, never left half-done).
    pub(crate) async fn call<T, F>(&self, operation: &'static str, call: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        let result = run_blocking(operation, move || {
            // A panic inside `call` cannot leave the connection mid-transaction: rusqlite's `Transaction` rolls
            // back when dropped during unwinding. So a poisoned lock still guards a usable connection.
            let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
            call(&mut connection)
        })
        .await?;
        result.map_err(|error| sql_error(operation, error))
    }

    /// A compare-and-swap won: the next lost one pauses briefly again.
    pub(crate) fn won_race(&self) {
        self.lost_races.store(0, Ordering::Relaxed);
    }

    /// A compare-and-swap lost to another writer: waits a random moment, off the connection, up to a bound that
    /// doubles with each race lost in a row (from [`FIRST_LOST_RACE_PAUSE`] to [`MAX_LOST_RACE_PAUSE`]).
    ///
    /// Without it, two processes running read-modify-write loops on one key fall into step: the loser learns it
    /// lost only after the winner committed, so it always reads a little later and is overtaken again by the
    /// winner's next commit, until `update` gives up (seen in the two-process test, about one run in ten). A
    /// random, growing pause lets the winner finish and puts the loser at a random point of its cycle.
    pub(crate) async fn lost_race(&self) -> Result<(), Error> {
        let lost = self.lost_races.fetch_add(1, Ordering::Relaxed).min(16);
        let bound = FIRST_LOST_RACE_PAUSE.saturating_mul(1 << lost).min(MAX_LOST_RACE_PAUSE);
        let pause = bound.mul_f64(fastrand::f64());
        // On the blocking pool like everything else here: `tokio::time` would need the runtime's timer enabled.
        run_blocking("compare_and_swap", move || std::thread::sleep(pause)).await
    }
}

/// The bound of the pause after the first compare-and-swap lost in a row: about one transaction.
const FIRST_LOST_RACE_PAUSE: Duration = Duration::from_micros(100);

/// The largest bound of the pause after a lost compare-and-swap.
const MAX_LOST_RACE_PAUSE: Duration = Duration::from_millis(10);

/// Runs `work` on tokio's blocking pool. A panic in `work` becomes an error, not a panic of the caller.
async fn run_blocking<T, F>(operation: &'static str, work: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|joined| Error::Store {
        operation,
        message: format!("the blocking SQLite call failed: {joined}"),
        retryable: false,
        source: Some(Box::new(joined)),
    })
}

/// Whether an SQLite failure can go away by itself: another connection holds the lock.
fn is_retryable(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// An SQLite failure as an [`Error::Store`].
pub(crate) fn sql_error(operation: &'static str, error: rusqlite::Error) -> Error {
    let retryable = is_retryable(&error);
    Error::store(operation, retryable, error)
}

/// A failure to open `path`, saying which file.
fn open_error(path: &Path, what: &str, retryable: bool, source: impl Into<managed_agents_core::BoxError>) -> Error {
    let source = source.into();
    Error::Store {
        operation: "open",
        message: format!("{what} {}: {source}", path.display()),
        retryable,
        source: Some(source),
    }
}

fn open_blocking(path: &Path, busy_timeout: Duration, schema: &Schema) -> Result<Connection, Error> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|error| open_error(path, "cannot create the directory of", false, error))?;
    }
    let sql = |what: &str| {
        let what = what.to_string();
        move |error: rusqlite::Error| {
            let retryable = is_retryable(&error);
            open_error(path, &what, retryable, error)
        }
    };
    // No SQLITE_OPEN_URI: the path is a file name, never a `file:` URI with options.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut connection = Connection::open_with_flags(path, flags).map_err(sql("cannot open"))?;
    // First, so that everything below waits for other processes' locks instead of failing at once.
    connection.busy_timeout(busy_timeout).map_err(sql("cannot configure"))?;
    // The first statement that reads the file: a file that is not a database fails here, before anything is
    // written to it.
    let mode = enable_wal(&connection, busy_timeout).map_err(sql("cannot open the database"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        // SQLite refuses WAL where it cannot share memory between processes (some network file systems). The
        // rollback journal it keeps is just as safe across processes, only readers and the writer block each
        // other.
        tracing::warn!(path = %path.display(), mode, "SQLite kept its journal mode instead of WAL");
    }
    // In WAL mode, NORMAL never corrupts the database; a power loss or OS crash may lose the last commits (an
    // application crash loses nothing).
    connection.pragma_update(None, "synchronous", "NORMAL").map_err(sql("cannot configure"))?;
    migrate(&mut connection, schema).map_err(|error| match error {
        MigrationError::Sql(error) => {
            let retryable = is_retryable(&error);
            open_error(path, "cannot create the tables of", retryable, error)
        }
        MigrationError::Newer { found } => Error::Store {
            operation: "open",
            message: format!(
                "{} holds `{}` tables of schema version {found}, newer than this build's {}: upgrade \
                 managed-agents-store",
                path.display(),
                schema.component,
                schema.latest()
            ),
            retryable: false,
            source: None,
        },
    })?;
    Ok(connection)
}

/// Switches the file to WAL (a no-op when it already is) and returns the journal mode in force.
///
/// Switching needs an exclusive lock, and SQLite answers "busy" at once, without waiting, when another
/// connection is in the middle of the same switch (two processes opening a new file together; seen in the
/// two-process test). So this waits for the lock itself, in growing pauses, up to the busy timeout.
fn enable_wal(connection: &Connection, busy_timeout: Duration) -> rusqlite::Result<String> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match connection.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0)) {
            Err(error) if is_retryable(&error) && started.elapsed() + pause < busy_timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

enum MigrationError {
    Sql(rusqlite::Error),
    Newer { found: i64 },
}

impl From<rusqlite::Error> for MigrationError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sql(error)
    }
}

const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS managed_agents_schema (
    component TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID";

/// The version of `component`'s tables (0: none yet).
fn version(connection: &Connection, component: &str) -> rusqlite::Result<i64> {
    let has_table: bool = connection.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'managed_agents_schema')",
        [],
        |row| row.get(0),
    )?;
    if !has_table {
        return Ok(0);
    }
    let version = connection
        .query_row("SELECT version FROM managed_agents_schema WHERE component = ?1", [component], |row| row.get(0))
        .optional()?;
    Ok(version.unwrap_or(0))
}

/// Brings `schema` to its newest version. Cheap when it already is (one read); otherwise done under the write
/// lock, so two processes opening a new file at once create the tables once.
fn migrate(connection: &mut Connection, schema: &Schema) -> Result<(), MigrationError> {
    let found = version(connection, schema.component)?;
    if found == schema.latest() {
        return Ok(());
    }
    if found > schema.latest() {
        return Err(MigrationError::Newer { found });
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have migrated between the read above and taking the lock.
    let found = version(&transaction, schema.component)?;
    if found > schema.latest() {
        return Err(MigrationError::Newer { found });
    }
    transaction.execute_batch(SCHEMA_TABLE)?;
    let pending = usize::try_from(found).unwrap_or(0);
    for migration in schema.migrations.iter().skip(pending) {
        transaction.execute_batch(migration)?;
    }
    transaction.execute(
        "INSERT INTO managed_agents_schema (component, version) VALUES (?1, ?2)
         ON CONFLICT (component) DO UPDATE SET version = excluded.version",
        rusqlite::params![schema.component, schema.latest()],
    )?;
    transaction.commit()?;
    Ok(())
}
