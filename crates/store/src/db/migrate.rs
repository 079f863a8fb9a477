//! Schema migrations: the `.sql` files under `crates/store/migrations/<dialect>/<component>/`, embedded in the
//! binary, applied in order and recorded per component in the `managed_agents_schema` table.
//!
//! Each component (the provisioning store, the session store) versions its own tables, so a database can hold
//! any set of them and one component's migration never touches another's. Opening a database whose tables are
//! newer than this build fails instead of guessing. Several processes may open a new database at once: the
//! migrations run in one transaction under a lock (SQLite's write lock; a PostgreSQL advisory lock), and a
//! process that waited for it finds the work done.

use managed_agents_core::Error;

use super::{BoxFuture, Col, Database, Dialect, Sql, Transaction, args, sql};

/// The tables of one component, and the scripts that build them: `sqlite[n]` (or `postgres[n]`) takes the
/// component from version `n` to `n + 1` (version 0: no tables yet). Never edit a script that has shipped:
/// append one.
#[derive(Debug)]
pub(crate) struct Component {
    /// The component's name in `managed_agents_schema`.
    pub(crate) name: &'static str,
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    pub(crate) sqlite: &'static [&'static str],
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) postgres: &'static [&'static str],
}

impl Component {
    fn scripts(&self, dialect: Dialect) -> &'static [&'static str] {
        match dialect {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => self.sqlite,
            #[cfg(feature = "postgres")]
            Dialect::Postgres => self.postgres,
        }
    }

    fn latest(&self, dialect: Dialect) -> i64 {
        i64::try_from(self.scripts(dialect).len()).unwrap_or(i64::MAX)
    }
}

const OPERATION: &str = "open";

/// Whether the versions table exists (a count: 0 or 1).
static HAS_SCHEMA_TABLE: Sql = Sql {
    sqlite: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'managed_agents_schema'",
    postgres: "SELECT count(*) FROM pg_catalog.pg_tables \
               WHERE schemaname = current_schema() AND tablename = 'managed_agents_schema'",
};

/// Waits for every other process's migrations (PostgreSQL: a transaction-scoped advisory lock; SQLite: the
/// transaction already holds the write lock).
static LOCK: Sql = Sql {
    sqlite: "SELECT 0",
    // The key: "managed_agents_schema" hashed once, a constant so that every version of this crate agrees.
    postgres: "SELECT pg_advisory_xact_lock(7370752263217561953)",
};

/// The versions table. SQLite's matches what earlier versions of this crate created.
static SCHEMA_TABLE: Sql = Sql {
    sqlite: "CREATE TABLE IF NOT EXISTS managed_agents_schema (
        component TEXT PRIMARY KEY NOT NULL,
        version INTEGER NOT NULL
    ) WITHOUT ROWID",
    postgres: "CREATE TABLE IF NOT EXISTS managed_agents_schema (
        component TEXT PRIMARY KEY,
        version BIGINT NOT NULL
    )",
};

static VERSION: Sql = sql!("SELECT version FROM managed_agents_schema WHERE component = $1");

static SET_VERSION: Sql = sql!(
    "INSERT INTO managed_agents_schema (component, version) VALUES ($1, $2) "
    "ON CONFLICT (component) DO UPDATE SET version = excluded.version"
);

/// Brings every component to its newest version. Cheap when they are (one or two reads). `setup` runs first,
/// under the lock (creating the PostgreSQL schema the tables live in, say).
pub(crate) fn migrate<'a>(
    database: &'a Database,
    components: &'a [&'a Component],
    setup: Option<&'a str>,
) -> BoxFuture<'a, Result<(), Error>> {
    Box::pin(run(database, components, setup))
}

async fn run(database: &Database, components: &[&Component], setup: Option<&str>) -> Result<(), Error> {
    let dialect = database.dialect();
    if up_to_date(database, components).await? {
        return Ok(());
    }
    let mut transaction = database.begin(OPERATION).await?;
    transaction.execute(OPERATION, LOCK.text(dialect), args![]).await?;
    if let Some(setup) = setup {
        transaction.execute_script(OPERATION, setup).await?;
    }
    transaction.execute_script(OPERATION, SCHEMA_TABLE.text(dialect)).await?;
    for component in components {
        // Read again under the lock: another process may have migrated since.
        let found = version_in(&mut transaction, dialect, component).await?;
        let scripts = component.scripts(dialect);
        let pending = usize::try_from(found).unwrap_or(0);
        if pending >= scripts.len() {
            continue;
        }
        for script in &scripts[pending..] {
            transaction.execute_script(OPERATION, script).await?;
        }
        transaction
            .execute(OPERATION, SET_VERSION.text(dialect), args![component.name, component.latest(dialect)])
            .await?;
    }
    transaction.commit(OPERATION).await
}

/// Whether every component is at its newest version; an error when one is newer than this build knows.
async fn up_to_date(database: &Database, components: &[&Component]) -> Result<bool, Error> {
    let dialect = database.dialect();
    let exists = database.fetch_optional(OPERATION, HAS_SCHEMA_TABLE.text(dialect), args![], &[Col::Int]).await?;
    if exists.and_then(|row| row.int(0)).unwrap_or(0) == 0 {
        return Ok(false);
    }
    let mut current = true;
    for component in components {
        let found = database
            .fetch_optional(OPERATION, VERSION.text(dialect), args![component.name], &[Col::Int])
            .await?
            .and_then(|row| row.int(0))
            .unwrap_or(0);
        check_not_newer(component, dialect, found)?;
        current &= found == component.latest(dialect);
    }
    Ok(current)
}

async fn version_in(transaction: &mut Transaction, dialect: Dialect, component: &Component) -> Result<i64, Error> {
    let rows = transaction.fetch(OPERATION, VERSION.text(dialect), args![component.name], &[Col::Int]).await?;
    let found = rows.first().and_then(|row| row.int(0)).unwrap_or(0);
    check_not_newer(component, dialect, found)?;
    Ok(found)
}

fn check_not_newer(component: &Component, dialect: Dialect, found: i64) -> Result<(), Error> {
    let latest = component.latest(dialect);
    if found > latest {
        return Err(Error::store_message(
            OPERATION,
            format!(
                "the database holds `{}` tables of schema version {found}, newer than this build's {latest}: \
                 upgrade managed-agents-store",
                component.name
            ),
            false,
        ));
    }
    Ok(())
}
