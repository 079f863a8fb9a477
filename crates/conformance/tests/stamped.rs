//! The `#[test]`-stamping form of the suite, against the streaming reference, with the scenarios it skips
//! declared: they show as ignored, everything else runs, and `conformance_completeness` checks the list.
//!
//! The tests of `skips` run this same test binary again with the backend's capabilities changed
//! (`STAMPED_CAPABILITIES`), and show that no skip can pass: an undeclared skip fails its test, and a skip list
//! that differs from the capabilities (either way) fails the completeness test.

use std::process::{Command, Output};

use managed_agents_conformance::reference::{StreamingReference, StreamingReferenceBackend};
use managed_agents_conformance::{Backend, BackendCapabilities, Harness, ProviderSettings, Scripts, async_trait};

/// Changes the capabilities the stamped tests see, in a child run of this binary.
const CAPABILITIES_VARIABLE: &str = "STAMPED_CAPABILITIES";

/// The streaming reference, declaring what it declares; or, when [`CAPABILITIES_VARIABLE`] says so, without
/// resume (`resume_with_prompt` is then skipped, undeclared) or with a transcript (`transcript_reattach`, a
/// declared skip, then runs).
struct Stamped;

#[async_trait]
impl Backend for Stamped {
    type Provider = StreamingReference;

    fn capabilities(&self) -> BackendCapabilities {
        let mut capabilities = StreamingReferenceBackend.capabilities();
        match std::env::var(CAPABILITIES_VARIABLE).as_deref() {
            Ok("without_resume") => capabilities.resume = false,
            Ok("with_transcript") => capabilities.provider.transcript = true,
            _ => {}
        }
        capabilities
    }

    async fn launch(&self, scripts: Scripts, settings: &ProviderSettings) -> Harness<StreamingReference> {
        StreamingReferenceBackend.launch(scripts, settings).await
    }
}

/// What the streaming reference cannot run.
macro_rules! declared {
    ($($name:ident),* $(,)?) => {
        managed_agents_conformance::conformance_suite!(Stamped, skip: [$($name),*]);

        /// The declared skips, as names.
        const DECLARED: &[&str] = &[$(stringify!($name)),*];
    };
}

declared![
    send_event_refused,
    interrupt_refused,
    interrupt_ends_the_turn_as_interrupted,
    concurrent_sessions_stay_apart,
    transcript_reattach,
    outcome_rejected_when_unsupported,
    confirmation_allow,
    confirmation_deny_with_message,
    confirmation_default_defers,
    per_run_destination_stays_apart,
    fault_http_429_live,
    fault_http_429_sync,
    fault_http_500_live,
    fault_http_500_sync,
    fault_http_529_live,
    fault_http_529_sync,
    fault_stall_live,
    fault_stall_sync,
    fault_malformed_frame_live,
    fault_malformed_frame_sync,
    fault_truncated_turn_live,
    fault_truncated_turn_sync,
];

mod skips {
    use super::*;

    /// Runs this test binary again with `capabilities` and `args`; its exit status and output.
    fn child(capabilities: &str, args: &[&str]) -> (bool, String) {
        let exe = std::env::current_exe().expect("the test binary's path");
        let Output { status, stdout, stderr } = Command::new(exe)
            .args(args)
            .env(CAPABILITIES_VARIABLE, capabilities)
            .output()
            .expect("the test binary runs again");
        let output = format!("{}{}", String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
        (status.success(), output)
    }

    /// Runs the one test `test` again with `capabilities`: it must fail, saying each of `expected`.
    fn fails_saying(capabilities: &str, test: &str, expected: &[&str]) {
        let (passed, output) = child(capabilities, &["--exact", test]);
        assert!(!passed, "{test} must fail with {capabilities}:\n{output}");
        for expected in expected {
            assert!(output.contains(expected), "`{expected}` missing from:\n{output}");
        }
    }

    #[test]
    fn an_undeclared_skip_fails_its_test_with_the_reason_and_the_ways_out() {
        fails_saying(
            "without_resume",
            "resume_with_prompt",
            &[
                "resume_with_prompt did not run: the provider cannot reattach to a session by id",
                "skip: [resume_with_prompt, …]",
                "managed_agents_conformance::Suite",
                "1 failed",
            ],
        );
    }

    #[test]
    fn the_same_scenario_runs_and_passes_when_the_backend_can_run_it() {
        let (passed, output) = child("", &["--exact", "resume_with_prompt"]);
        assert!(passed && output.contains("1 passed"), "{output}");
    }

    #[test]
    fn completeness_fails_on_a_skip_the_list_does_not_declare() {
        fails_saying(
            "without_resume",
            "conformance_completeness",
            &[
                "skipped but not declared (its test fails): resume_with_prompt (the provider cannot reattach",
                "for these capabilities, declare: skip: [",
            ],
        );
    }

    #[test]
    fn completeness_fails_on_a_declared_skip_the_backend_can_run() {
        fails_saying(
            "with_transcript",
            "conformance_completeness",
            &["declared but runnable (its test is ignored for nothing): transcript_reattach"],
        );
    }

    #[test]
    fn the_declared_skips_are_the_ignored_tests_and_still_skip() {
        let (_, listed) = child("", &["--list", "--ignored"]);
        let mut ignored: Vec<&str> = listed.lines().filter_map(|line| line.strip_suffix(": test")).collect();
        ignored.sort_unstable();
        let mut declared = DECLARED.to_vec();
        declared.sort_unstable();
        assert_eq!(ignored, declared, "{listed}");
        // Run anyway, each checks that its scenario is still skipped.
        let (passed, output) = child("", &["--ignored"]);
        let summary = format!("{} passed; 0 failed", DECLARED.len());
        assert!(passed && output.contains(&summary), "{output}");
        assert!(output.contains("transcript_reattach: skipped, as declared: the provider keeps no client-side"));
    }
}
