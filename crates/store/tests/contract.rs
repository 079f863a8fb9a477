//! Every store of this crate passes the contracts of `managed-agents-conformance`: the provisioning store
//! contract and, one test per check, the session store and inbox contracts — on SQLite (a fresh file per check) and on
//! PostgreSQL (a fresh schema per check; see `support` for when those run).

mod support;

use std::process::ExitCode;

use libtest_mimic::Trial;
use managed_agents_conformance::{inbox_contract, session_store_contract};
use support::Gate;

fn main() -> ExitCode {
    let mut trials = sqlite_trials(&support::sqlite());
    trials.extend(postgres_trials(&support::postgres()));
    support::run(trials)
}

/// The tests' names after `<backend>::`.
#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
fn names() -> Vec<String> {
    let mut names = vec!["provision_store".to_string()];
    names.extend(session_store_contract::ALL.iter().map(|check| format!("session_store::{check}")));
    names.extend(inbox_contract::ALL.iter().map(|check| format!("inbox::{check}")));
    names
}

#[cfg(feature = "sqlite")]
fn sqlite_trials(gate: &Gate) -> Vec<Trial> {
    use std::sync::Arc;

    use managed_agents_store::SqliteStore;

    let mut trials = vec![support::trial("sqlite::provision_store", gate, |_| async {
        let dir = tempfile::tempdir().expect("temporary directory");
        let next = std::sync::atomic::AtomicUsize::new(0);
        managed_agents_conformance::store_contract::run_all(|| {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.path().join(format!("store-{n}.sqlite3"));
            async move { SqliteStore::open(path).await.expect("open") }
        })
        .await;
    })];
    for check in session_store_contract::ALL {
        trials.push(support::trial(format!("sqlite::session_store::{check}"), gate, move |_| async move {
            let dir = tempfile::tempdir().expect("temporary directory");
            let store = SqliteStore::open(dir.path().join("sessions.sqlite3")).await.expect("open");
            assert!(session_store_contract::run(check, Arc::new(store)).await, "no check is called {check}");
        }));
    }
    for check in inbox_contract::ALL {
        trials.push(support::trial(format!("sqlite::inbox::{check}"), gate, move |_| async move {
            let dir = tempfile::tempdir().expect("temporary directory");
            let store = SqliteStore::open(dir.path().join("sessions.sqlite3")).await.expect("open");
            assert!(inbox_contract::run(check, Arc::new(store)).await, "no check is called {check}");
        }));
    }
    trials
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_trials(gate: &Gate) -> Vec<Trial> {
    names().into_iter().map(|name| support::unavailable(format!("sqlite::{name}"), gate)).collect()
}

#[cfg(feature = "postgres")]
fn postgres_trials(gate: &Gate) -> Vec<Trial> {
    use std::sync::{Arc, Mutex, PoisonError};

    use managed_agents_store::{PostgresOptions, PostgresStore};

    async fn open(url: &str, schema: &str) -> PostgresStore {
        PostgresStore::connect_with(url, PostgresOptions::new().schema(schema)).await.expect("connect")
    }

    let mut trials = vec![support::trial("postgres::provision_store", gate, |url| async move {
        // One schema per check of the contract; all dropped at the end.
        let schemas = Arc::new(Mutex::new(Vec::<String>::new()));
        let (made, target) = (Arc::clone(&schemas), url.clone());
        let outcome = tokio::spawn(async move {
            managed_agents_conformance::store_contract::run_all(|| {
                let schema = support::unique_schema("ma_test");
                made.lock().unwrap_or_else(PoisonError::into_inner).push(schema.clone());
                let url = target.clone();
                async move { open(&url, &schema).await }
            })
            .await;
        })
        .await;
        let schemas = std::mem::take(&mut *schemas.lock().unwrap_or_else(PoisonError::into_inner));
        for schema in schemas {
            support::drop_schema(&url, &schema).await;
        }
        if let Err(failed) = outcome {
            std::panic::resume_unwind(failed.into_panic());
        }
    })];
    for check in session_store_contract::ALL {
        trials.push(support::trial(format!("postgres::session_store::{check}"), gate, move |url| async move {
            let target = url.clone();
            support::with_schema(&url, move |schema| async move {
                let store = open(&target, &schema).await;
                assert!(session_store_contract::run(check, Arc::new(store)).await, "no check is called {check}");
            })
            .await;
        }));
    }
    for check in inbox_contract::ALL {
        trials.push(support::trial(format!("postgres::inbox::{check}"), gate, move |url| async move {
            let target = url.clone();
            support::with_schema(&url, move |schema| async move {
                let store = open(&target, &schema).await;
                assert!(inbox_contract::run(check, Arc::new(store)).await, "no check is called {check}");
            })
            .await;
        }));
    }
    trials
}

#[cfg(not(feature = "postgres"))]
fn postgres_trials(gate: &Gate) -> Vec<Trial> {
    names().into_iter().map(|name| support::unavailable(format!("postgres::{name}"), gate)).collect()
}
