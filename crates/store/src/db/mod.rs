//! The SQL layer every store of this crate shares, for SQLite and PostgreSQL alike: a pool, statements with
//! bound values, transactions, the schema migrations, and the mapping of database errors to
//! [`Error::Store`](managed_agents_core::Error::Store).
//!
//! The stores speak to a [`Database`] in values of their own ([`Arg`] in, [`Row`] out), so each store
//! operation is written once; only the few statements whose SQL differs between the dialects (the clock, the
//! way to lock) come in two versions ([`Sql`], written with [`sql!`]). Placeholders are `$1`, `$2` … in both:
//! SQLite reads `$N` as the N-th value.

mod error;
mod migrate;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

pub(crate) use error::{corrupt, store_error};
pub(crate) use migrate::{Component, migrate};

use std::future::Future;
use std::pin::Pin;

use managed_agents_core::Error;

/// A boxed `Send` future. The database calls return these: each one's `Send`-ness is then proven where its
/// lifetimes are known, instead of in every caller's future, where the compiler cannot see through sqlx's
/// higher-ranked bounds (rust-lang/rust#102211) and `tokio::spawn` would refuse the caller's future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which SQL dialect a [`Database`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite, in this process.
    #[cfg(feature = "sqlite")]
    Sqlite,
    /// PostgreSQL, over the network.
    #[cfg(feature = "postgres")]
    Postgres,
}

/// One statement, in each dialect's SQL. Written with [`sql!`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sql {
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) sqlite: &'static str,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) postgres: &'static str,
}

impl Sql {
    /// The statement in `dialect`.
    pub(crate) fn text(&self, dialect: Dialect) -> &'static str {
        match dialect {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => self.sqlite,
            #[cfg(feature = "postgres")]
            Dialect::Postgres => self.postgres,
        }
    }
}

/// A statement in both dialects, from string literals and two words: `NOW`, the store's clock, in milliseconds
/// since the Unix epoch (PostgreSQL's own clock, so that the machines sharing a database agree; SQLite's is this
/// machine's); and `SKIP_LOCKED`, which ends a `SELECT` whose rows of the table aliased `l` concurrent claimers
/// divide among themselves (PostgreSQL locks those rows and skips the ones another transaction locked; SQLite has
/// one writer at a time anyway).
macro_rules! sql {
    (@sqlite NOW) => { "CAST(unixepoch('now', 'subsec') * 1000 AS INTEGER)" };
    (@postgres NOW) => { "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)" };
    (@sqlite SKIP_LOCKED) => { "" };
    (@postgres SKIP_LOCKED) => { " FOR UPDATE OF l SKIP LOCKED" };
    (@$dialect:ident $text:literal) => { $text };
    ($($part:tt)+) => {
        $crate::db::Sql {
            sqlite: concat!($($crate::db::sql!(@sqlite $part)),+),
            postgres: concat!($($crate::db::sql!(@postgres $part)),+),
        }
    };
}
pub(crate) use sql;

/// The `NOTIFY` channel of this schema's changes (`SessionStore::changes`), as an SQL expression: a channel per
/// schema, so stores in other schemas of the database are not woken; hashed, as a schema name may be longer than
/// a channel name may.
macro_rules! changes_channel {
    () => {
        "'managed_agents_changes_' || left(md5(current_schema()), 16)"
    };
}
pub(crate) use changes_channel;

/// A value bound to a statement.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Text(String),
    MaybeText(Option<String>),
    Int(i64),
}

impl From<String> for Arg {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for Arg {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl From<&String> for Arg {
    fn from(text: &String) -> Self {
        Self::Text(text.clone())
    }
}

impl From<Option<String>> for Arg {
    fn from(text: Option<String>) -> Self {
        Self::MaybeText(text)
    }
}

impl From<i64> for Arg {
    fn from(int: i64) -> Self {
        Self::Int(int)
    }
}

/// The values of a statement, in placeholder order: `args![key, value]`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => { vec![$($crate::db::Arg::from($arg)),*] };
}
pub(crate) use args;

/// The type of a result column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    /// Text (or NULL).
    Text,
    /// A 64-bit integer (or NULL).
    Int,
}

#[derive(Debug)]
enum Cell {
    Text(Option<String>),
    Int(Option<i64>),
}

/// One result row, its columns in the order of the [`Col`]s it was fetched with.
#[derive(Debug)]
pub(crate) struct Row {
    cells: Vec<Cell>,
}

impl Row {
    /// Takes the text in column `index` (`None`: NULL, or not a text column).
    pub(crate) fn text(&mut self, index: usize) -> Option<String> {
        match self.cells.get_mut(index) {
            Some(Cell::Text(text)) => text.take(),
            _ => None,
        }
    }

    /// The integer in column `index` (`None`: NULL, or not an integer column).
    pub(crate) fn int(&self, index: usize) -> Option<i64> {
        match self.cells.get(index) {
            Some(Cell::Int(int)) => *int,
            _ => None,
        }
    }
}

/// `sqlx::query($sql)` for database `$db` with `$args` bound.
macro_rules! bound {
    ($db:ty, $sql:expr, $args:expr) => {{
        let mut query = sqlx::query::<$db>($sql);
        for arg in $args {
            query = match arg {
                Arg::Text(text) => query.bind(text),
                Arg::MaybeText(text) => query.bind(text),
                Arg::Int(int) => query.bind(int),
            };
        }
        query
    }};
}

/// Decodes database rows into [`Row`]s of `$cols`.
macro_rules! decoded {
    ($rows:expr, $cols:expr) => {
        $rows
            .iter()
            .map(|row| {
                let cells = $cols
                    .iter()
                    .enumerate()
                    .map(|(index, col)| {
                        Ok(match col {
                            Col::Text => Cell::Text(sqlx::Row::try_get(row, index)?),
                            Col::Int => Cell::Int(sqlx::Row::try_get(row, index)?),
                        })
                    })
                    .collect::<Result<Vec<Cell>, sqlx::Error>>()?;
                Ok(Row { cells })
            })
            .collect::<Result<Vec<Row>, sqlx::Error>>()
    };
}

/// A pool of connections to one database.
#[derive(Debug, Clone)]
pub(crate) enum Database {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Database {
    /// The dialect it speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Forwards the `NOTIFY`s of this schema's changes (other processes' too) to `changes`, from a task of its own
    /// holding a connection of the pool (PostgreSQL; nothing on SQLite, whose other processes cannot be heard, or
    /// outside a tokio runtime).
    pub(crate) fn listen_for_changes(&self, changes: tokio::sync::broadcast::WeakSender<std::sync::Arc<str>>) {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => drop(changes),
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(postgres::forward_changes(pool.clone(), changes));
                }
            }
        }
    }

    /// Runs one statement on a connection of the pool; the number of rows it changed.
    pub(crate) fn execute<'a>(
        &'a self,
        operation: &'static str,
        sql: &'a str,
        args: Vec<Arg>,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move { self.acquire(operation).await?.connection().execute(operation, sql, args).await })
    }

    /// Runs one query on a connection of the pool; its rows, with columns of the types `cols` names.
    pub(crate) fn fetch<'a>(
        &'a self,
        operation: &'static str,
        sql: &'a str,
        args: Vec<Arg>,
        cols: &'a [Col],
    ) -> BoxFuture<'a, Result<Vec<Row>, Error>> {
        Box::pin(async move { self.acquire(operation).await?.connection().fetch(operation, sql, args, cols).await })
    }

    /// [`Database::fetch`] for a query of at most one row.
    pub(crate) async fn fetch_optional(
        &self,
        operation: &'static str,
        sql: &str,
        args: Vec<Arg>,
        cols: &[Col],
    ) -> Result<Option<Row>, Error> {
        Ok(self.fetch(operation, sql, args, cols).await?.into_iter().next())
    }

    /// A connection of the pool, for one statement (it goes back to the pool when dropped).
    fn acquire(&self, operation: &'static str) -> BoxFuture<'_, Result<Pooled, Error>> {
        Box::pin(async move {
            let acquired = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(pool) => pool.acquire().await.map(Pooled::Sqlite),
                #[cfg(feature = "postgres")]
                Self::Postgres(pool) => pool.acquire().await.map(Pooled::Postgres),
            };
            acquired.map_err(|error| store_error(operation, error))
        })
    }

    /// Starts a transaction that writes: on SQLite it holds the write lock from its start (`BEGIN IMMEDIATE`),
    /// so it never fails half-way because another connection wrote first; on PostgreSQL it is an ordinary
    /// `READ COMMITTED` transaction, which takes row locks as it writes.
    pub(crate) fn begin(&self, operation: &'static str) -> BoxFuture<'_, Result<Transaction, Error>> {
        Box::pin(async move {
            let begun = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(pool) => pool.begin_with("BEGIN IMMEDIATE").await.map(Transaction::Sqlite),
                #[cfg(feature = "postgres")]
                Self::Postgres(pool) => pool.begin().await.map(Transaction::Postgres),
            };
            begun.map_err(|error| store_error(operation, error))
        })
    }

    /// Closes every connection, waiting for the ones in use to come back.
    pub(crate) async fn close(&self) {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => pool.close().await,
        }
    }
}

/// A connection taken from a [`Database`]'s pool.
enum Pooled {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
}

impl Pooled {
    fn connection(&mut self) -> Connection<'_> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(pooled) => Connection::Sqlite(pooled),
            #[cfg(feature = "postgres")]
            Self::Postgres(pooled) => Connection::Postgres(pooled),
        }
    }
}

/// A transaction on one connection of a [`Database`]. Dropped without [`Transaction::commit`], it rolls back.
pub(crate) enum Transaction {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Transaction {
    fn connection(&mut self) -> Connection<'_> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(tx) => Connection::Sqlite(tx),
            #[cfg(feature = "postgres")]
            Self::Postgres(tx) => Connection::Postgres(tx),
        }
    }

    /// Runs one statement; the number of rows it changed.
    pub(crate) fn execute<'a>(
        &'a mut self,
        operation: &'static str,
        sql: &'a str,
        args: Vec<Arg>,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        self.connection().execute(operation, sql, args)
    }

    /// Runs one query; its rows, with columns of the types `cols` names.
    pub(crate) fn fetch<'a>(
        &'a mut self,
        operation: &'static str,
        sql: &'a str,
        args: Vec<Arg>,
        cols: &'a [Col],
    ) -> BoxFuture<'a, Result<Vec<Row>, Error>> {
        self.connection().fetch(operation, sql, args, cols)
    }

    /// Runs a script of several statements without values (a migration).
    pub(crate) fn execute_script<'a>(
        &'a mut self,
        operation: &'static str,
        script: &'a str,
    ) -> BoxFuture<'a, Result<(), Error>> {
        self.connection().execute_script(operation, script)
    }

    /// Makes the transaction's writes durable and visible.
    pub(crate) fn commit(self, operation: &'static str) -> BoxFuture<'static, Result<(), Error>> {
        Box::pin(async move {
            let done = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(tx) => tx.commit().await,
                #[cfg(feature = "postgres")]
                Self::Postgres(tx) => tx.commit().await,
            };
            done.map_err(|error| store_error(operation, error))
        })
    }
}

/// One connection, pooled or in a transaction: where statements run.
enum Connection<'c> {
    #[cfg(feature = "sqlite")]
    Sqlite(&'c mut sqlx::SqliteConnection),
    #[cfg(feature = "postgres")]
    Postgres(&'c mut sqlx::PgConnection),
}

impl<'c> Connection<'c> {
    fn execute(self, operation: &'static str, sql: &'c str, args: Vec<Arg>) -> BoxFuture<'c, Result<u64, Error>> {
        Box::pin(async move {
            let changed = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(connection) => {
                    bound!(sqlx::Sqlite, sql, args).execute(connection).await.map(|done| done.rows_affected())
                }
                #[cfg(feature = "postgres")]
                Self::Postgres(connection) => {
                    bound!(sqlx::Postgres, sql, args).execute(connection).await.map(|done| done.rows_affected())
                }
            };
            changed.map_err(|error| store_error(operation, error))
        })
    }

    fn fetch(
        self,
        operation: &'static str,
        sql: &'c str,
        args: Vec<Arg>,
        cols: &'c [Col],
    ) -> BoxFuture<'c, Result<Vec<Row>, Error>> {
        Box::pin(async move {
            let rows = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(connection) => match bound!(sqlx::Sqlite, sql, args).fetch_all(connection).await {
                    Ok(rows) => decoded!(rows, cols),
                    Err(error) => Err(error),
                },
                #[cfg(feature = "postgres")]
                Self::Postgres(connection) => match bound!(sqlx::Postgres, sql, args).fetch_all(connection).await {
                    Ok(rows) => decoded!(rows, cols),
                    Err(error) => Err(error),
                },
            };
            rows.map_err(|error| store_error(operation, error))
        })
    }

    fn execute_script(self, operation: &'static str, script: &'c str) -> BoxFuture<'c, Result<(), Error>> {
        Box::pin(async move {
            let done = match self {
                #[cfg(feature = "sqlite")]
                Self::Sqlite(connection) => sqlx::Executor::execute(connection, sqlx::raw_sql(script)).await.map(drop),
                #[cfg(feature = "postgres")]
                Self::Postgres(connection) => {
                    sqlx::Executor::execute(connection, sqlx::raw_sql(script)).await.map(drop)
                }
            };
            done.map_err(|error| store_error(operation, error))
        })
    }
}
