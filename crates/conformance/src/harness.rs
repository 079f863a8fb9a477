//! The suite as a test harness of its own: every scenario of every backend is one test, named
//! `<label>::<scenario>`, and a scenario a backend cannot run is reported by cargo as *ignored, with the reason*
//! — visible in cargo's own summary, not only on stderr.

use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Completion, Trial};

use crate::backend::Backend;
use crate::scenarios::{self, Verdict};

/// The conformance suite over one or more backends, run as a `harness = false` integration test.
///
/// ```toml
/// # Cargo.toml
/// [[test]]
/// name = "conformance"
/// harness = false
/// ```
///
/// ```no_run
/// // tests/conformance.rs
/// # use managed_agents_conformance::reference::{StreamingReferenceBackend as MyBackend};
/// fn main() -> std::process::ExitCode {
///     managed_agents_conformance::Suite::new().backend("my-provider", MyBackend).run()
/// }
/// ```
///
/// `cargo test` then lists `my-provider::single_tool_round_trip … ok`, and for a scenario the backend lacks
/// the capability for, `my-provider::stream_drop_reconnect_redrive … ignored, the provider has no event stream
/// to drop and reconnect`. The usual test flags work (a name filter, `--list`, `--test-threads`).
#[derive(Default)]
pub struct Suite {
    trials: Vec<Trial>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suite").field("tests", &self.trials.len()).finish()
    }
}

impl Suite {
    /// An empty suite.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every scenario for `backend`, each test named `<label>::<scenario>`.
    pub fn backend<B: Backend + 'static>(mut self, label: &str, backend: B) -> Self {
        let backend = Arc::new(backend);
        for scenario in scenarios::ALL {
            let backend = Arc::clone(&backend);
            let name = scenario.name;
            self.trials.push(Trial::ignorable_test(format!("{label}::{name}"), move || {
                // Each scenario runs on a fresh runtime; a failing assertion panics, which the harness reports.
                match block_on(scenarios::run(name, &*backend)) {
                    Some(Verdict::Passed) => Ok(Completion::Completed),
                    Some(Verdict::Skipped(reason)) => Ok(Completion::ignored_with(reason)),
                    None => Err(format!("no scenario is called {name}").into()),
                }
            }));
        }
        self
    }

    /// How many tests the suite holds.
    pub fn len(&self) -> usize {
        self.trials.len()
    }

    /// Whether the suite holds no test.
    pub fn is_empty(&self) -> bool {
        self.trials.is_empty()
    }

    /// Runs the suite with the command line's test arguments; the exit code says whether every test passed.
    pub fn run(self) -> ExitCode {
        libtest_mimic::run(&Arguments::from_args(), self.trials).exit_code()
    }
}

/// Runs a future on a fresh multi-threaded tokio runtime (two workers), as each test of the suite does.
#[doc(hidden)]
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("cannot start a tokio runtime: {error}"));
    runtime.block_on(future)
}
