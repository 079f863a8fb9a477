//! `managed-agents serve`: the operator console (`managed-agents-console`) on a store of conversations — the
//! SQLite file the other commands use, another SQLite file, or a PostgreSQL database — until SIGTERM or Ctrl-C.
//! The token comes from MANAGED_AGENTS_CONSOLE_TOKEN only (a flag would show in the process list). A signal ends
//! the live feeds and gives requests in flight a few seconds; a second one quits at once.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;

use managed_agents_console::{Console, ConsoleBuilder, MIN_TOKEN_LENGTH, TOKEN_ENV};
use managed_agents_core::BoxError;
use managed_agents_core::conversation::SessionStore;
use managed_agents_host::Operator;
use managed_agents_store::{PostgresStore, SqliteStore};

use crate::conversations::open_store;
use crate::outcome::{EXIT_COMPLETED, EXIT_INTERRUPTED, Hinted, UsageError};
use crate::signals::StopSignals;

/// How long requests in flight get to finish after SIGTERM or Ctrl-C.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The console's settings from the command line.
pub struct Settings {
    pub bind: SocketAddr,
    pub store: Option<String>,
    pub read_only: bool,
}

/// Opens the store `location` names: a `postgres://` or `postgresql://` URL, else an SQLite file; none, the
/// SQLite file of `run` and `chat`.
async fn store(location: Option<&str>) -> Result<Arc<dyn SessionStore>, BoxError> {
    Ok(match location {
        None => Arc::new(open_store().await?),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Arc::new(PostgresStore::connect(url).await?)
        }
        Some(path) => Arc::new(SqliteStore::open(path).await?),
    })
}

/// Serves the console until SIGTERM or Ctrl-C; prints its address (`http://…/`) on stdout once it listens.
pub async fn run(settings: Settings) -> Result<u8, BoxError> {
    let operator = Operator::new(store(settings.store.as_deref()).await?);
    let console: Console =
        ConsoleBuilder::from_env(operator).read_only(settings.read_only).build().map_err(|error| Hinted {
            error: Box::new(UsageError(error.to_string())),
            hint: format!(
                "set {TOKEN_ENV} to a secret of at least {MIN_TOKEN_LENGTH} characters (e.g. `openssl rand -hex 32`)"
            ),
        })?;
    let listener = tokio::net::TcpListener::bind(settings.bind)
        .await
        .map_err(|error| UsageError(format!("cannot listen on {}: {error}", settings.bind)))?;
    let address = listener.local_addr()?;
    if !address.ip().is_loopback() {
        eprintln!("note: the console listens on {address}, beyond this machine: put it behind TLS");
    }
    println!("http://{address}/");
    eprintln!(
        "the operator console{} is at http://{address}/ (sign in with {TOKEN_ENV}; Ctrl-C stops it)",
        if console.is_read_only() { ", read-only," } else { "" }
    );
    let mut signals = StopSignals::listen();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = axum::serve(listener, console.router())
        .with_graceful_shutdown(async move {
            let _ = stopped.await;
        })
        .into_future();
    tokio::pin!(serving);
    tokio::select! {
        served = &mut serving => served?,
        () = signals.next() => {
            // Live feeds end, requests in flight get a few seconds; a second signal quits at once.
            console.shutdown();
            let _ = stop.send(());
            tokio::select! {
                served = tokio::time::timeout(SHUTDOWN_GRACE, &mut serving) => {
                    if let Ok(served) = served {
                        served?;
                    }
                }
                () = signals.next() => return Ok(EXIT_INTERRUPTED),
            }
        }
    }
    Ok(EXIT_COMPLETED)
}
