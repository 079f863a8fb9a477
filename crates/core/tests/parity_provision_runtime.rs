//! Parity with upstream `test/req_managed_agents/provisioner/runtime_test.exs` (V-5): one language runtime of
//! an environment and its shell-injection guard.
//!
//! Upstream's `Runtime.new/1` coerced a map into `%Runtime{lang, version, via}`; here a [`Runtime`] is built with
//! [`Runtime::new`] or deserialized from JSON, and checked as part of [`EnvironmentSpec::validate`] (the check
//! that runs before anything is provisioned). `via` (how the runtime is installed; upstream allowed only
//! `:mise`) is not modelled: it belongs to the runtime bootstrap script (V-11), which is not built.

use managed_agents_core::{EnvironmentSpec, Error, Runtime};
use serde_json::json;

fn check(runtime: Runtime) -> Result<(), Error> {
    EnvironmentSpec::new().runtime(runtime).validate()
}

fn refused(runtime: Runtime) {
    let result = check(runtime.clone());
    match result {
        Err(Error::InvalidSpec { what: "environment spec", reason, .. }) => {
            assert!(reason.contains(&runtime.lang), "the error names the runtime: {reason}");
        }
        other => panic!("{runtime:?} should be refused, got {other:?}"),
    }
}

/// `provisioner/runtime_test.exs` › new/1: "accepts a valid map and defaults via to :mise".
///
/// The map is accepted with its language and version (there is no `via` to default).
#[test]
fn a_valid_map_is_accepted() {
    let runtime: Runtime = serde_json::from_value(json!({"lang": "elixir", "version": "1.17.0"})).unwrap();
    assert_eq!(runtime, Runtime::new("elixir", "1.17.0"));
    assert_eq!((runtime.lang.as_str(), runtime.version.as_str()), ("elixir", "1.17.0"));
    check(runtime).unwrap();
}

/// `provisioner/runtime_test.exs` › new/1: "rejects a version containing a shell-injection metacharacter".
#[test]
fn a_version_with_a_shell_metacharacter_is_refused() {
    refused(Runtime::new("elixir", "1.0; rm -rf /"));
}

/// `provisioner/runtime_test.exs` › new/1: "rejects a version containing shell metacharacters via newline".
#[test]
fn a_version_with_a_newline_is_refused() {
    refused(Runtime::new("elixir", "1.18\nrm -rf /"));
}

/// `provisioner/runtime_test.exs` › new/1: "rejects an empty version".
#[test]
fn an_empty_version_is_refused() {
    refused(Runtime::new("elixir", ""));
}

/// `provisioner/runtime_test.exs` › new/1: "accepts a version containing a hyphen (pre-suffixed OTP build)".
#[test]
fn a_hyphenated_version_is_accepted() {
    let runtime = Runtime::new("elixir", "1.20.2-otp-29");
    check(runtime.clone()).unwrap();
    assert_eq!(runtime.version, "1.20.2-otp-29");
}

/// `provisioner/runtime_test.exs` › new/1: "rejects non-map input".
#[test]
fn non_map_input_is_refused() {
    assert!(serde_json::from_value::<Runtime>(json!("not_a_map")).is_err());
    assert!(serde_json::from_value::<Runtime>(json!(null)).is_err());
}

/// `provisioner/runtime_test.exs` › new/1: "rejects a map missing :lang".
#[test]
fn a_map_without_a_language_is_refused() {
    assert!(serde_json::from_value::<Runtime>(json!({"version": "1.17.0"})).is_err());
    // Built by hand, an empty language fails the check.
    assert!(matches!(check(Runtime::new("", "1.17.0")), Err(Error::InvalidSpec { .. })));
}

/// `provisioner/runtime_test.exs` › new/1: "rejects a map missing :version".
#[test]
fn a_map_without_a_version_is_refused() {
    assert!(serde_json::from_value::<Runtime>(json!({"lang": "elixir"})).is_err());
}

/// `provisioner/runtime_test.exs` › new/1: "re-validates an existing struct and passes through when valid".
#[test]
fn an_existing_valid_runtime_passes_again() {
    let runtime = Runtime::new("elixir", "1.17.0");
    check(runtime.clone()).unwrap();
    check(runtime.clone()).unwrap();
    assert_eq!(runtime, Runtime::new("elixir", "1.17.0"), "checking does not change it");
}

/// `provisioner/runtime_test.exs` › new/1: "re-validates an existing struct and rejects a struct with an
/// injected version".
///
/// [`Runtime::new`] does not check (upstream's struct literal did not either); the check before provisioning
/// does.
#[test]
fn an_existing_runtime_with_an_injected_version_is_refused() {
    let mut runtime = Runtime::new("elixir", "1.17.0");
    runtime.version = "1.0; rm -rf /".into();
    refused(runtime);
}
