//! What the store's test binaries share: when the PostgreSQL tests run, and how each check gets a database of
//! its own.
//!
//! The PostgreSQL tests read the server's URL from `MANAGED_AGENTS_POSTGRES_URL` (`.ci/postgres.sh start`
//! starts a throwaway server and prints it). Without it they are reported as *ignored*, with the reason, never
//! as passed; with `MANAGED_AGENTS_REQUIRE_POSTGRES=1` (CI sets it) a missing URL fails them instead. Built
//! without the `postgres` feature, they are ignored with that reason.

#![allow(dead_code, unreachable_pub)] // each test binary uses a part

use std::future::Future;
use std::process::ExitCode;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// The environment variable with the PostgreSQL server's URL.
pub const POSTGRES_URL_ENV: &str = "MANAGED_AGENTS_POSTGRES_URL";
/// Set to `1`: a missing PostgreSQL URL fails the PostgreSQL tests instead of ignoring them.
pub const REQUIRE_POSTGRES_ENV: &str = "MANAGED_AGENTS_REQUIRE_POSTGRES";

/// Whether a backend's tests can run here.
#[derive(Debug, Clone)]
pub enum Gate {
    /// They run (for PostgreSQL: against this URL).
    Run(String),
    /// They are reported as ignored, for this reason.
    Ignore(String),
    /// They fail, for this reason.
    Fail(String),
}

/// The gate of the SQLite tests.
pub fn sqlite() -> Gate {
    if cfg!(feature = "sqlite") {
        Gate::Run(String::new())
    } else {
        Gate::Ignore("built without the `sqlite` feature".into())
    }
}

/// The gate of the PostgreSQL tests.
pub fn postgres() -> Gate {
    if !cfg!(feature = "postgres") {
        return Gate::Ignore("built without the `postgres` feature".into());
    }
    match std::env::var(POSTGRES_URL_ENV) {
        Ok(url) if !url.trim().is_empty() => Gate::Run(url),
        _ if std::env::var(REQUIRE_POSTGRES_ENV).is_ok_and(|value| value == "1") => Gate::Fail(format!(
            "{POSTGRES_URL_ENV} is not set but {REQUIRE_POSTGRES_ENV}=1 requires the PostgreSQL tests"
        )),
        _ => Gate::Ignore(format!("{POSTGRES_URL_ENV} is not set (`.ci/postgres.sh start` starts a server)")),
    }
}

/// A trial that runs `check` on a fresh two-worker runtime when `gate` lets it.
pub fn trial<F, Fut>(name: impl Into<String>, gate: &Gate, check: F) -> Trial
where
    F: FnOnce(String) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let gate = gate.clone();
    Trial::ignorable_test(name, move || match gate {
        Gate::Ignore(reason) => Ok(Completion::ignored_with(reason)),
        Gate::Fail(reason) => Err(Failed::from(reason)),
        Gate::Run(url) => {
            runtime().block_on(check(url));
            Ok(Completion::Completed)
        }
    })
}

/// A trial reported as ignored or failed by `gate` (for checks not built in).
pub fn unavailable(name: impl Into<String>, gate: &Gate) -> Trial {
    let gate = gate.clone();
    Trial::ignorable_test(name, move || match gate {
        Gate::Fail(reason) => Err(Failed::from(reason)),
        Gate::Ignore(reason) | Gate::Run(reason) => Ok(Completion::ignored_with(reason)),
    })
}

/// A multi-threaded runtime with every driver, as `#[tokio::test(flavor = "multi_thread")]` makes.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

/// Runs `trials` with the command line's test arguments.
pub fn run(trials: Vec<Trial>) -> ExitCode {
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// A schema name no other check uses: `<prefix>_<pid>_<n>_<nanos>`.
pub fn unique_schema(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Runs `check` with a fresh PostgreSQL schema at `url`, and drops the schema afterwards, also when the check
/// fails (the failure is then passed on).
#[cfg(feature = "postgres")]
pub async fn with_schema<F, Fut>(url: &str, check: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let schema = unique_schema("ma_test");
    let outcome = tokio::spawn(check(schema.clone())).await;
    drop_schema(url, &schema).await;
    if let Err(failed) = outcome {
        std::panic::resume_unwind(failed.into_panic());
    }
}

/// Drops `schema` and everything in it.
#[cfg(feature = "postgres")]
pub async fn drop_schema(url: &str, schema: &str) {
    use sqlx::{Connection, Executor};
    let mut connection = sqlx::PgConnection::connect(url).await.expect("connect to drop the test schema");
    connection.execute(format!("DROP SCHEMA IF EXISTS {schema} CASCADE").as_str()).await.expect("drop the test schema");
    connection.close().await.expect("close");
}
