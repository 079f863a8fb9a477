//! [`PostgresStore`]: every store of this crate in one PostgreSQL database, shared by several machines.

use std::fmt;
use std::time::Duration;

use managed_agents_core::Error;

use crate::db::{Database, postgres};
use crate::store::{SqlStore, delegate_stores};

/// The environment variable [`PostgresStore::from_env`] reads the connection URL from.
pub const POSTGRES_URL_ENV: &str = "MANAGED_AGENTS_POSTGRES_URL";

/// How many connections a [`PostgresStore`] opens at most, unless [`PostgresOptions::max_connections`] says
/// otherwise.
pub const DEFAULT_POSTGRES_CONNECTIONS: u32 = 8;

/// How long an operation waits for a free connection (or for a new one to be made), and for a row lock, before
/// failing with a retryable [`Error::Store`], unless [`PostgresOptions::acquire_timeout`] says otherwise.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// How [`PostgresStore::connect_with`] connects.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    max_connections: u32,
    acquire_timeout: Duration,
    schema: Option<String>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self { max_connections: DEFAULT_POSTGRES_CONNECTIONS, acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT, schema: None }
    }
}

impl PostgresOptions {
    /// The defaults: [`DEFAULT_POSTGRES_CONNECTIONS`] connections, a [`DEFAULT_ACQUIRE_TIMEOUT`] wait for one,
    /// tables in the connection's default schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many connections the store opens at most (at least one).
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How long an operation waits for a free connection (or for a new one to be made), and for a row lock
    /// another connection holds, before it fails with a retryable [`Error::Store`]; at most
    /// [`MAX_WAIT`](crate::MAX_WAIT) (longer is shortened to it).
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout.min(crate::MAX_WAIT);
        self
    }

    /// Keeps the store's tables in `schema` (created when missing) instead of the connection's default schema
    /// (usually `public`): lowercase ASCII letters, digits and `_`, not starting with a digit, at most 63 bytes.
    /// Another name makes [`PostgresStore::connect_with`] fail with [`Error::InvalidOption`].
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }
}

/// Every store of this crate in a PostgreSQL database: the provisioning store
/// ([`ProvisionStore`](managed_agents_core::provision::ProvisionStore)), the host's session store
/// ([`SessionStore`](managed_agents_core::conversation::SessionStore)) and its tool ledger
/// ([`ToolLedger`](managed_agents_core::ledger::ToolLedger)), shared by every process on every machine that
/// connects to the same database (and schema).
///
/// Lease expiry and record times follow the database server's clock, so machines with skewed clocks agree.
/// Operations run on a pool of connections on the tokio runtime (with its IO driver and timer; `#[tokio::main]`
/// has both). Clones share the pool. Each operation is atomic: one statement, or one transaction. Failures that
/// can pass by themselves (a broken connection, no connection free in time, a serialization failure or
/// deadlock) are retryable [`Error::Store`]s. Connections are made without TLS: use it on a trusted network or
/// through a local socket or proxy. `Debug` shows the user, host, port and database, never the password.
#[derive(Clone)]
pub struct PostgresStore {
    inner: SqlStore,
    target: String,
    schema: Option<String>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("database", &self.target)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`, or with `?host=/path`
    /// for a socket directory; see the `libpq` URL format) with the default [`PostgresOptions`], and creates or
    /// upgrades the stores' tables. Reads no environment.
    ///
    /// Fails with [`Error::Store`] (operation `"connect"` or `"open"`) when the URL is malformed (the message
    /// never repeats it), the server cannot be reached or refuses the login (retryable when it may pass: an
    /// unreachable server, too many connections), or the tables are of a newer version of this crate.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// [`PostgresStore::connect`] with `options`.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, Error> {
        if let Some(schema) = &options.schema
            && !postgres::is_plain_identifier(schema)
        {
            return Err(Error::invalid_option(
                "schema",
                "use lowercase ASCII letters, digits and `_`, not starting with a digit, at most 63 bytes",
            ));
        }
        let connect_options = postgres::parse(url)?;
        let target = postgres::describe(&connect_options);
        let schema = options.schema.clone();
        let pool =
            postgres::connect(connect_options, schema.as_deref(), options.max_connections, options.acquire_timeout)
                .await?;
        let database = Database::Postgres(pool);
        let setup = schema.as_ref().map(|schema| format!("CREATE SCHEMA IF NOT EXISTS {schema}"));
        let inner = match SqlStore::new(database.clone(), setup.as_deref()).await {
            Ok(inner) => inner,
            Err(error) => {
                database.close().await;
                return Err(error);
            }
        };
        Ok(Self { inner, target, schema })
    }

    /// Connects to the database named by `MANAGED_AGENTS_POSTGRES_URL` ([`POSTGRES_URL_ENV`]); an
    /// [`Error::Store`] when it is not set.
    pub async fn from_env() -> Result<Self, Error> {
        match std::env::var(POSTGRES_URL_ENV) {
            Ok(url) if !url.is_empty() => Self::connect(&url).await,
            _ => Err(Error::store_message("connect", format!("{POSTGRES_URL_ENV} is not set"), false)),
        }
    }

    /// Closes the store's connections (every clone's), waiting for operations in flight. Later operations fail.
    pub async fn close(&self) {
        self.inner.db.close().await;
    }
}

delegate_stores!(PostgresStore);
