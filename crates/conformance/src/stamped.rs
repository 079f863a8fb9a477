//! [`conformance_suite!`](crate::conformance_suite): the suite stamped as `#[test]`s of the standard harness,
//! and what the stamped tests call. The [`Suite`](crate::Suite) is the documented path; this one exists for a
//! crate that must keep libtest's harness, and cannot pass a scenario that did not run.

use std::io::Write;

use crate::backend::{Backend, BackendCapabilities};
use crate::harness::block_on;
use crate::scenarios::{self, Verdict};

/// Stamps one `#[test]` per scenario for a backend, plus `conformance_completeness`.
///
/// **Prefer the [`Suite`](crate::Suite)** (an integration test with `harness = false`): it reports a scenario
/// the backend lacks the capability for as *ignored, with the reason*, in cargo's own summary. Libtest has no
/// way for a running `#[test]` to say "skipped", so this macro makes every skip explicit instead:
///
/// * `conformance_suite!(backend_expr)` stamps a test per scenario. A scenario that turns out skipped for the
///   backend's capabilities **fails**, with the reason and what to do (declare it, or use the `Suite`).
/// * `conformance_suite!(backend_expr, skip: [name, …])` stamps the listed scenarios as
///   `#[ignore = "skipped by declaration …"]`: they show as *ignored* in cargo's summary (run with
///   `--ignored`, each checks that it is still skipped and prints why). A name that is no scenario does not
///   compile.
/// * `conformance_completeness` fails unless the declared list is exactly what the capabilities skip — it
///   prints the scenarios skipped but not declared, those declared but runnable, and the list to declare.
///
/// `backend_expr` builds the backend; it is evaluated once per test.
///
/// ```no_run
/// // tests/conformance.rs, in the standard harness: what the streaming reference cannot run, declared.
/// managed_agents_conformance::conformance_suite!(
///     managed_agents_conformance::reference::StreamingReferenceBackend,
///     skip: [
///         send_event_refused, interrupt_refused, interrupt_ends_the_turn_as_interrupted,
///         concurrent_sessions_stay_apart, transcript_reattach, outcome_rejected_when_unsupported,
///         confirmation_allow, confirmation_deny_with_message, confirmation_default_defers,
///         per_run_destination_stays_apart, fault_http_429_live, fault_http_429_sync,
///         fault_http_500_live, fault_http_500_sync, fault_http_529_live, fault_http_529_sync, fault_stall_live,
///         fault_stall_sync, fault_malformed_frame_live, fault_malformed_frame_sync, fault_truncated_turn_live,
///         fault_truncated_turn_sync,
///     ],
/// );
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($backend:expr $(, skip: [$($skip:ident),* $(,)?])? $(,)?) => {
        $crate::__for_each_scenario! { [$crate::__stamp_suite] ($) ($backend) [$($($skip)*)?] }
    };
}

/// The callback of [`conformance_suite!`](crate::conformance_suite) over the registry. `$d` is a `$`, for the
/// helper macro it defines: that macro has one arm per declared skip (an ignored test) and a catch-all arm (a
/// test that fails on a skip), and is called once per scenario.
#[doc(hidden)]
#[macro_export]
macro_rules! __stamp_suite {
    (
        ($d:tt) ($backend:expr) [$($skip:ident)*]
        plain { $($module:ident::$name:ident: $requires:ident),* $(,)? }
        faults { $($(#[$doc:meta])* $case:ident($case_name:ident, $lacks:literal): $live:ident, $sync:ident;)* }
    ) => {
        macro_rules! __conformance_stamp_one {
            $(
                ($skip) => {
                    #[test]
                    #[ignore = "skipped by declaration (conformance_suite! skip list)"]
                    fn $skip() {
                        $crate::stamped::declared_skip(stringify!($skip), &$backend);
                    }
                };
            )*
            ($d name:ident) => {
                #[test]
                fn $d name() {
                    $crate::stamped::run(stringify!($d name), &$backend);
                }
            };
        }

        $(__conformance_stamp_one!($name);)*
        $(__conformance_stamp_one!($live); __conformance_stamp_one!($sync);)*

        #[test]
        fn conformance_completeness() {
            // Every declared name is a scenario: a misspelt one does not compile.
            $(let _ = $crate::scenarios::$skip::<$crate::reference::StreamingReferenceBackend>;)*
            $crate::stamped::assert_complete(
                &[$(stringify!($name),)* $(stringify!($live), stringify!($sync),)*],
                &[$(stringify!($skip)),*],
                &$crate::Backend::capabilities(&$backend),
            );
        }
    };
}

/// Runs the scenario `name` (a stamped test); a skip fails the test with the reason and the two ways out.
pub fn run<B: Backend>(name: &str, backend: &B) {
    match block_on(scenarios::run(name, backend)) {
        Some(Verdict::Passed) => {}
        Some(Verdict::Skipped(reason)) => panic!(
            "conformance: {name} did not run: {reason}. Under conformance_suite! a skipped scenario fails: declare \
             it with `conformance_suite!(<backend>, skip: [{name}, …])` to have it reported as ignored, or run the \
             suite with `managed_agents_conformance::Suite` from a `harness = false` test, which reports every \
             skip as ignored with its reason"
        ),
        None => panic!("conformance: no scenario is called {name}"),
    }
}

/// Runs the scenario `name`, declared skipped (an ignored test run with `--ignored`): it must still be skipped.
pub fn declared_skip<B: Backend>(name: &str, backend: &B) {
    match block_on(scenarios::run(name, backend)) {
        Some(Verdict::Skipped(reason)) => say(&format!("conformance: {name}: skipped, as declared: {reason}")),
        Some(Verdict::Passed) => panic!(
            "conformance: {name} is declared skipped, but the backend can run it (it passed): remove it from \
             `skip: [...]`"
        ),
        None => panic!("conformance: no scenario is called {name}"),
    }
}

/// Fails unless `stamped` (the tests a suite stamped) is every scenario of [`scenarios::ALL`] and `declared` (its
/// skip list) is exactly the scenarios `capabilities` skip; prints each skip with its reason.
pub fn assert_complete(stamped: &[&str], declared: &[&str], capabilities: &BackendCapabilities) {
    let known: Vec<&str> = scenarios::ALL.iter().map(|s| s.name).collect();
    assert_eq!(stamped, known.as_slice(), "the stamped tests are not the suite's scenarios");
    let skipped: Vec<(&str, &str)> =
        scenarios::ALL.iter().filter_map(|s| (s.requires)(capabilities).map(|reason| (s.name, reason))).collect();
    for (name, reason) in &skipped {
        say(&format!("conformance: {name:<40} skipped: {reason}"));
    }
    let undeclared: Vec<&(&str, &str)> = skipped.iter().filter(|(name, _)| !declared.contains(name)).collect();
    let runnable: Vec<&&str> = declared.iter().filter(|name| !skipped.iter().any(|(s, _)| s == *name)).collect();
    if undeclared.is_empty() && runnable.is_empty() {
        return;
    }
    let mut message = String::from("the declared skip list differs from what the backend's capabilities skip:\n");
    for (name, reason) in undeclared {
        message.push_str(&format!("  skipped but not declared (its test fails): {name} ({reason})\n"));
    }
    for name in runnable {
        message.push_str(&format!("  declared but runnable (its test is ignored for nothing): {name}\n"));
    }
    let names: Vec<&str> = skipped.iter().map(|(name, _)| *name).collect();
    message.push_str(&format!("for these capabilities, declare: skip: [{}]", names.join(", ")));
    panic!("{message}");
}

/// Writes a line straight to the process's stderr (which the test harness does not capture).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
