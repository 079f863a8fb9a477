//! Parity with upstream `test/req_managed_agents/provisioner/runtimes_test.exs` (V-5, V-11, V-12): validating a
//! list of runtimes, and what runtimes do to an environment's identity and provisioning.
//!
//! `Runtimes.validate/1` is the runtime check of [`EnvironmentSpec::validate`] here. The bootstrap script and its
//! system-prompt block (V-11) and the hosts a runtime install needs (V-12) are the Claude crate's
//! (`crates/provider-claude/tests/parity_runtimes.rs`); `via` is not modelled (D-53).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use managed_agents_core::provision::{MemoryStore, NamePolicy, ProvisionStore, provision};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, OpenConnection, OpenRequest, Provider, Runtime, Terminal,
    TurnResult, async_trait,
};
use serde_json::{Value, json};

fn validate(runtimes: Vec<Runtime>) -> Result<(), Error> {
    runtimes.into_iter().fold(EnvironmentSpec::new(), EnvironmentSpec::runtime).validate()
}

fn assert_refused(result: Result<(), Error>, naming: &str) {
    match result {
        Err(Error::InvalidSpec { what: "environment spec", reason, .. }) => {
            assert!(reason.contains(naming), "{reason}")
        }
        other => panic!("expected the runtime `{naming}` to be refused, got {other:?}"),
    }
}

/// `provisioner/runtimes_test.exs` › validate/1: "accepts valid elixir entry".
#[test]
fn accepts_an_elixir_runtime() {
    validate(vec![Runtime::new("elixir", "1.17.0")]).unwrap();
}

/// `provisioner/runtimes_test.exs` › validate/1: "accepts valid erlang entry".
#[test]
fn accepts_an_erlang_runtime() {
    validate(vec![Runtime::new("erlang", "26.2.5")]).unwrap();
}

/// `provisioner/runtimes_test.exs` › validate/1: "accepts empty list".
#[test]
fn accepts_no_runtimes() {
    validate(Vec::new()).unwrap();
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects missing version".
#[test]
fn refuses_a_runtime_without_a_version() {
    let parsed = serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": [{"lang": "elixir"}]}));
    assert!(parsed.is_err());
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects missing lang".
#[test]
fn refuses_a_runtime_without_a_language() {
    let parsed = serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": [{"version": "1.17.0"}]}));
    assert!(parsed.is_err());
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects non-list input".
#[test]
fn refuses_runtimes_that_are_not_a_list() {
    let parsed = serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": "not_a_list"}));
    assert!(parsed.is_err());
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects nil".
///
/// Runtimes given as `null` are refused (an absent key means none).
#[test]
fn refuses_null_runtimes() {
    assert!(serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": null})).is_err());
    let absent: EnvironmentSpec = serde_json::from_value(json!({})).unwrap();
    assert!(absent.runtimes.is_empty());
}

/// `provisioner/runtimes_test.exs` › validate/1: "first invalid entry in a mixed list is reported".
///
/// Upstream's bad entry had `via: :nix` (not modelled here); ours has a bad version. The error names the bad
/// entry, not the good one before it.
#[test]
fn the_first_invalid_entry_is_reported() {
    let result = validate(vec![
        Runtime::new("erlang", "26.2.5"),
        Runtime::new("elixir", "1.17.0;"),
        Runtime::new("python", "3 12"),
    ]);
    match result {
        Err(Error::InvalidSpec { what: "environment spec", reason, .. }) => {
            assert!(reason.contains("elixir@1.17.0;"), "{reason}");
            assert!(!reason.contains("erlang") && !reason.contains("python"), "{reason}");
        }
        other => panic!("expected the elixir runtime to be refused, got {other:?}"),
    }
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects version with shell metacharacters".
#[test]
fn refuses_a_version_with_a_newline() {
    assert_refused(validate(vec![Runtime::new("elixir", "1.18\nrm -rf /")]), "elixir");
}

/// `provisioner/runtimes_test.exs` › validate/1: "rejects empty version".
#[test]
fn refuses_an_empty_version() {
    assert_refused(validate(vec![Runtime::new("elixir", "")]), "elixir");
}

/// `provisioner/runtimes_test.exs` › validate/1: "accepts version containing a hyphen (pre-suffixed OTP
/// build)".
#[test]
fn accepts_a_hyphenated_version() {
    validate(vec![Runtime::new("elixir", "1.20.2-otp-29")]).unwrap();
}

/// `provisioner/runtimes_test.exs` › validate/1: "accepts a %Runtime{} struct entry".
#[test]
fn accepts_a_runtime_value() {
    let runtime: Runtime = serde_json::from_value(json!({"lang": "elixir", "version": "1.17.0"})).unwrap();
    validate(vec![runtime]).unwrap();
}

/// A loop host that records the environment it was asked to provision in.
#[derive(Default)]
struct Recorder {
    provisioned: AtomicUsize,
    environments: Mutex<Vec<Option<EnvironmentSpec>>>,
}

#[async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Err(Error::unsupported("open", "recorder"))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        TurnResult::new(Terminal::EndTurn)
    }

    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        self.provisioned.fetch_add(1, Ordering::SeqCst);
        self.environments.lock().unwrap().push(environment.cloned());
        let environment_id = match environment {
            Some(env) => Some(NamePolicy::CLAUDE.compose(env.name.as_deref().unwrap_or("env"), &env.digest())?),
            None => None,
        };
        Ok(AgentHandle { agent_id: spec.name.clone(), environment_id })
    }
}

/// A store that records every call (upstream's `SpyStore`).
#[derive(Default)]
struct SpyStore {
    calls: Mutex<Vec<String>>,
}

impl SpyStore {
    fn record(&self, call: &str) {
        self.calls.lock().unwrap().push(call.to_string());
    }
}

#[async_trait]
impl ProvisionStore for SpyStore {
    async fn get(&self, _: &str) -> Result<Option<Value>, Error> {
        self.record("get");
        Ok(None)
    }
    async fn put(&self, _: &str, _: Value) -> Result<(), Error> {
        self.record("put");
        Ok(())
    }
    async fn delete(&self, _: &str) -> Result<(), Error> {
        self.record("delete");
        Ok(())
    }
    async fn delete_value(&self, _: &Value) -> Result<u64, Error> {
        self.record("delete_value");
        Ok(0)
    }
    async fn compare_and_swap(&self, _: &str, _: Option<&Value>, _: Option<Value>) -> Result<bool, Error> {
        self.record("compare_and_swap");
        Ok(false)
    }
    async fn keys(&self, _: &str) -> Result<Vec<String>, Error> {
        self.record("keys");
        Ok(Vec::new())
    }
}

/// `provisioner/runtimes_test.exs` › ensure_environment with runtimes: "spec with runtimes yields different
/// digest-name than spec without".
///
/// Core-level: the environment's digest, and so its `<base>_<digest8>` name under the Claude policy, changes
/// with its runtimes; provisioning both gives two environments.
#[tokio::test]
async fn runtimes_change_the_environment_name() {
    let without = EnvironmentSpec::new().name("env").config(json!({"type": "cloud"}));
    let with = without.clone().runtime(Runtime::new("elixir", "1.17.0"));
    let name_without = NamePolicy::CLAUDE.compose("env", &without.digest()).unwrap();
    let name_with = NamePolicy::CLAUDE.compose("env", &with.digest()).unwrap();
    assert_ne!(name_without, name_with);

    let (recorder, store) = (Recorder::default(), MemoryStore::new());
    let spec = AgentSpec::new("agent", "s");
    let a = provision(&recorder, &store, &spec, Some(&without)).await.unwrap();
    let b = provision(&recorder, &store, &spec, Some(&with)).await.unwrap();
    assert_eq!(a.environment_id.as_deref(), Some(name_without.as_str()));
    assert_eq!(b.environment_id.as_deref(), Some(name_with.as_str()));
    assert_eq!(recorder.provisioned.load(Ordering::SeqCst), 2);
}

/// `provisioner/runtimes_test.exs` › ensure_environment with runtimes: "validation error returns before any
/// store/create call".
///
/// Upstream's invalid runtime had `via: :nix`; ours has an injected version. The facade refuses it before it
/// reads the store or calls the provider.
#[tokio::test]
async fn an_invalid_runtime_is_refused_before_any_store_or_provider_call() {
    let (recorder, store) = (Recorder::default(), SpyStore::default());
    let invalid =
        EnvironmentSpec::new().runtime(Runtime::new("elixir", "1.17.0 `id`")).config(json!({"type": "cloud"}));
    let result = provision(&recorder, &store, &AgentSpec::new("agent", "s"), Some(&invalid)).await;
    assert!(matches!(result, Err(Error::InvalidSpec { what: "environment spec", .. })), "{result:?}");
    assert!(store.calls.lock().unwrap().is_empty(), "store calls: {:?}", store.calls.lock().unwrap());
    assert_eq!(recorder.provisioned.load(Ordering::SeqCst), 0, "create must not be called");
    assert!(recorder.environments.lock().unwrap().is_empty());
}
