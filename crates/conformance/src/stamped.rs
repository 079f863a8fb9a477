//! [`conformance_suite!`](crate::conformance_suite): the suite stamped as `#[test]`s of the standard harness,
//! and what the stamped tests call.

use std::io::Write;

use crate::backend::{Backend, BackendCapabilities};
use crate::harness::block_on;
use crate::scenarios::{self, Verdict};

/// Stamps one `#[test]` per scenario for a backend, plus `conformance_completeness`.
///
/// `$backend` is an expression building the backend; it is evaluated once per test.
#[macro_export]
macro_rules! conformance_suite {
    ($backend:expr) => {
        $crate::__for_each_scenario! { [$crate::__stamp_suite] ($backend) }
    };
}

/// The callback of [`conformance_suite!`](crate::conformance_suite) over the registry.
#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_suite {
    (
        ($backend:expr)
        plain { $($module:ident::$name:ident: $requires:ident),* $(,)? }
        faults { $($(#[$doc:meta])* $case:ident($case_name:ident, $lacks:literal): $live:ident, $sync:ident;)* }
    ) => {
        $(
            #[test]
            fn $name() {
                $crate::stamped::run(module_path!(), stringify!($name), &$backend);
            }
        )*
        $(
            #[test]
            fn $live() {
                $crate::stamped::run(module_path!(), stringify!($live), &$backend);
            }

            #[test]
            fn $sync() {
                $crate::stamped::run(module_path!(), stringify!($sync), &$backend);
            }
        )*

        #[test]
        fn conformance_completeness() {
            $crate::stamped::assert_complete(
                &[$(stringify!($name),)* $(stringify!($live), stringify!($sync),)*],
                &$crate::Backend::capabilities(&$backend),
            );
        }
    };
}

/// Runs the scenario `name` (a stamped test); a skip's verdict, labelled with the suite's module, goes straight
/// to the process's stderr (which the test harness does not capture).
pub fn run<B: Backend>(suite: &str, name: &str, backend: &B) {
    match block_on(scenarios::run(name, backend)) {
        Some(Verdict::Passed) => {}
        Some(Verdict::Skipped(reason)) => say(&format!("conformance: {suite}::{name}: SKIPPED: {reason}")),
        None => panic!("conformance: no scenario is called {name}"),
    }
}

/// Fails unless `stamped` (the tests a suite stamped) is exactly [`scenarios::ALL`]; prints which scenarios
/// run and which are skipped, with reasons, for `capabilities`.
pub fn assert_complete(stamped: &[&str], capabilities: &BackendCapabilities) {
    let known: Vec<&str> = scenarios::ALL.iter().map(|s| s.name).collect();
    let missing: Vec<&&str> = known.iter().filter(|name| !stamped.contains(name)).collect();
    let unknown: Vec<&&str> = stamped.iter().filter(|name| !known.contains(name)).collect();
    for scenario in scenarios::ALL {
        match (scenario.requires)(capabilities) {
            None => say(&format!("conformance: {:<36} run", scenario.name)),
            Some(reason) => say(&format!("conformance: {:<36} skipped: {reason}", scenario.name)),
        }
    }
    assert!(missing.is_empty(), "scenarios neither run nor skipped: {missing:?}");
    assert!(unknown.is_empty(), "stamped tests that are no scenario: {unknown:?}");
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
