//! Parity with upstream `test/req_managed_agents/environment/spec_test.exs` (V-4): the environment definition
//! and its content digest.
//!
//! Upstream coerced an atom- or string-keyed Elixir map (or `nil`) with `Environment.Spec.new/1`, sweeping every
//! top-level key other than `name` / `runtimes` / `config` into `config`. Here an environment is an
//! `Option<EnvironmentSpec>`, built with setters or deserialized from JSON (string keys), checked by
//! [`EnvironmentSpec::validate`]. It is typed: runtimes, networking and packages are fields of their own and
//! provider-specific configuration goes under `config`; nothing is swept (proposed decision, see the report of
//! this port).

use managed_agents_core::provision::{MemoryStore, cache_key, provision};
use managed_agents_core::{
    AgentHandle, AgentSpec, EnvironmentSpec, Error, Event, Networking, OpenConnection, OpenRequest, Provider, Runtime,
    Terminal, TurnResult, async_trait,
};
use serde_json::json;

/// A loop host that provisions anything and names the environment it was given.
struct Host;

#[async_trait]
impl Provider for Host {
    fn name(&self) -> &str {
        "host"
    }

    async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
        Err(Error::unsupported("open", "host"))
    }

    fn normalize(&self, _: &[Event]) -> TurnResult {
        TurnResult::new(Terminal::EndTurn)
    }

    async fn provision(&self, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<AgentHandle, Error> {
        Ok(AgentHandle {
            agent_id: spec.name.clone(),
            environment_id: environment.map(|env| env.digest().short().to_string()),
        })
    }
}

fn env(value: serde_json::Value) -> EnvironmentSpec {
    serde_json::from_value(value).unwrap()
}

/// `environment/spec_test.exs` › new/1: "nil is a valid (absent) environment".
///
/// JSON `null` is no environment, and the facade provisions without one (its cache key says `none`).
#[tokio::test]
async fn null_is_no_environment() {
    let absent: Option<EnvironmentSpec> = serde_json::from_value(json!(null)).unwrap();
    assert_eq!(absent, None);
    let spec = AgentSpec::new("a", "s");
    assert!(cache_key("host", &spec, absent.as_ref()).ends_with(":none"));
    let handle = provision(&Host, &MemoryStore::new(), &spec, absent.as_ref()).await.unwrap();
    assert_eq!(handle.environment_id, None);
}

/// `environment/spec_test.exs` › new/1: "coerces a map, validating runtimes into %Runtime{} structs".
#[test]
fn a_map_deserializes_with_its_runtimes() {
    let spec = env(json!({"name": "prod", "runtimes": [{"lang": "python", "version": "3.12"}], "config": {"a": 1}}));
    assert_eq!(spec.name.as_deref(), Some("prod"));
    assert_eq!(spec.runtimes, [Runtime::new("python", "3.12")]);
    assert_eq!(spec.config, Some(json!({"a": 1})));
    spec.validate().unwrap();
}

/// `environment/spec_test.exs` › new/1: "accepts an existing %Spec{} and re-validates its runtimes".
///
/// `validate` checks the spec as it is now: one whose runtime was changed after construction to carry a shell
/// metacharacter is refused.
#[test]
fn an_existing_spec_is_validated_again() {
    let spec = EnvironmentSpec::new().runtime(Runtime::new("node", "22"));
    spec.validate().unwrap();
    assert_eq!(spec.runtimes, [Runtime::new("node", "22")]);
    let mut tampered = spec.clone();
    tampered.runtimes[0].version = "22 && curl evil".into();
    assert!(matches!(tampered.validate(), Err(Error::InvalidSpec { what: "environment spec", .. })));
}

/// `environment/spec_test.exs` › new/1: "accepts string-keyed maps".
#[test]
fn string_keyed_maps_deserialize() {
    let spec = env(json!({"name": "prod", "runtimes": [], "config": {"type": "cloud"}}));
    assert_eq!(spec.name.as_deref(), Some("prod"));
    assert_eq!(spec.config, Some(json!({"type": "cloud"})));
    assert!(spec.runtimes.is_empty());
}

/// `environment/spec_test.exs` › new/1: "an invalid runtime fails the whole coercion (no unvalidated runtime
/// escapes)".
///
/// A runtime without a version does not deserialize; one whose version carries a shell metacharacter fails
/// `validate`, and the facade refuses the environment before provisioning anything.
#[tokio::test]
async fn an_invalid_runtime_fails_the_whole_environment() {
    assert!(serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": [{"lang": "python"}]})).is_err());
    let injected = env(json!({"runtimes": [{"lang": "python", "version": "3.12; rm -rf /"}]}));
    assert!(matches!(injected.validate(), Err(Error::InvalidSpec { what: "environment spec", .. })));
    let store = MemoryStore::new();
    let refused = provision(&Host, &store, &AgentSpec::new("a", "s"), Some(&injected)).await;
    assert!(matches!(refused, Err(Error::InvalidSpec { what: "environment spec", .. })), "{refused:?}");
}

/// `environment/spec_test.exs` › new/1: "a non-map, non-nil input is rejected".
#[test]
fn a_non_map_is_rejected() {
    assert!(serde_json::from_value::<Option<EnvironmentSpec>>(json!("nope")).is_err());
    assert!(serde_json::from_value::<EnvironmentSpec>(json!([1, 2])).is_err());
}

/// `environment/spec_test.exs` › new/1: "defaults: empty runtimes and empty config".
///
/// No name, no runtimes, unrestricted networking, no packages and no provider configuration (`None`, where
/// upstream had an empty map), from the builder and from `{}` alike.
#[test]
fn defaults_are_empty() {
    let from_map = env(json!({}));
    assert_eq!(from_map, EnvironmentSpec::new());
    assert_eq!(from_map.name, None);
    assert!(from_map.runtimes.is_empty());
    assert!(from_map.packages.is_empty());
    assert_eq!(from_map.networking, Networking::Unrestricted);
    assert_eq!(from_map.config, None);
    from_map.validate().unwrap();
}

/// `environment/spec_test.exs` › new/1: "auto-collects stray top-level keys into config (flat map)".
///
/// By decision (proposed with this port: the environment spec is typed): networking is a field of its own, not
/// a key of `config`, and provider configuration is given under `config`; top-level keys are not swept into it.
/// The upstream input in our shape keeps everything it said.
#[test]
fn networking_is_a_field_and_provider_configuration_goes_under_config() {
    let spec = env(json!({
        "runtimes": [{"lang": "elixir", "version": "1.17.0"}],
        "networking": {"type": "unrestricted"},
        "config": {"type": "cloud"},
    }));
    assert_eq!(spec.runtimes, [Runtime::new("elixir", "1.17.0")]);
    assert_eq!(spec.networking, Networking::Unrestricted);
    assert_eq!(spec.config, Some(json!({"type": "cloud"})));
    let limited = env(json!({"networking": {"type": "limited", "allowed_hosts": ["example.com"]}}));
    assert_eq!(limited.networking, Networking::Limited { allowed_hosts: vec!["example.com".into()] });
}

/// `environment/spec_test.exs` › new/1: "explicit config is unchanged when there are no stray keys".
#[test]
fn explicit_config_is_kept_verbatim() {
    let spec = env(json!({"config": {"a": 1}}));
    assert_eq!(spec.config, Some(json!({"a": 1})));
    assert_eq!(EnvironmentSpec::new().config(json!({"a": 1})), spec);
}

/// `environment/spec_test.exs` › new/1: "explicit :config wins over a colliding stray key".
///
/// By decision (typed spec, nothing swept; D-45): `config` is what was given under `config`, and a stray key
/// beside it is refused rather than merged or dropped.
#[test]
fn explicit_config_is_the_configuration() {
    let spec: EnvironmentSpec = serde_json::from_str(r#"{"config": {"k": "explicit"}}"#).unwrap();
    assert_eq!(spec.config, Some(json!({"k": "explicit"})));
    assert!(serde_json::from_str::<EnvironmentSpec>(r#"{"config": {"k": "explicit"}, "k": "stray"}"#).is_err());
}

/// `environment/spec_test.exs` › new/1: "string-keyed flat map collects stray keys correctly".
///
/// By decision (typed spec, nothing swept): the provider configuration `{"type": "cloud"}` is written under
/// `config`.
#[test]
fn provider_configuration_is_written_under_config() {
    let spec = env(json!({"config": {"type": "cloud"}}));
    assert_eq!(spec.config, Some(json!({"type": "cloud"})));
    assert_ne!(spec.digest(), EnvironmentSpec::new().digest(), "the configuration is part of the definition");
}

/// `environment/spec_test.exs` › new/1: "live-smoke shape: flat map with type/networking populates config
/// (guards the silent-drop footgun)".
///
/// A key our spec does not know is refused (a bug this port found: it was dropped without a word, so
/// `{"type": "cloud", …}` became an environment with no provider configuration at all).
#[test]
fn stray_top_level_keys_are_not_silently_dropped() {
    let parsed =
        serde_json::from_value::<EnvironmentSpec>(json!({"type": "cloud", "networking": {"type": "unrestricted"}}));
    let error = parsed.expect_err("an unknown key is refused");
    assert!(error.to_string().contains("type"), "{error}");
}

/// `environment/spec_test.exs` › digest/1: "is stable across calls".
#[test]
fn the_digest_is_stable() {
    let spec = env(json!({"runtimes": [{"lang": "python", "version": "3.12"}], "config": {"a": 1}}));
    assert_eq!(spec.digest(), spec.digest());
    assert_eq!(spec.digest(), spec.clone().digest());
    // Field order in the input does not matter.
    let reordered: EnvironmentSpec =
        serde_json::from_str(r#"{"config":{"a":1},"runtimes":[{"version":"3.12","lang":"python"}]}"#).unwrap();
    assert_eq!(spec.digest(), reordered.digest());
}

/// `environment/spec_test.exs` › digest/1: "excludes name (two specs differing only by name share a digest)".
#[test]
fn the_digest_excludes_the_name() {
    let one = env(json!({"name": "one", "config": {"a": 1}}));
    let two = env(json!({"name": "two", "config": {"a": 1}}));
    assert_eq!(one.digest(), two.digest());
}

/// `environment/spec_test.exs` › digest/1: "differs when config differs".
#[test]
fn the_digest_follows_the_config() {
    assert_ne!(env(json!({"config": {"a": 1}})).digest(), env(json!({"config": {"a": 2}})).digest());
}

/// `environment/spec_test.exs` › digest/1: "differs when runtimes differ".
#[test]
fn the_digest_follows_the_runtimes() {
    let a = EnvironmentSpec::new().runtime(Runtime::new("python", "3.12"));
    let b = EnvironmentSpec::new().runtime(Runtime::new("python", "3.13"));
    assert_ne!(a.digest(), b.digest());
}

/// Beyond upstream, from "defaults: empty runtimes and empty config" and "is stable across calls": upstream's
/// config defaulted to an empty map, so an environment with `config: %{}` and one without were the same
/// definition with the same digest.
///
/// An empty configuration and an absent one are the same definition, as are no packages and a package manager
/// with an empty list (a bug this port found: they digested differently, so one environment provisioned twice).
#[test]
fn an_empty_configuration_is_the_same_definition_as_none() {
    let none = EnvironmentSpec::new();
    assert_eq!(none.digest(), EnvironmentSpec::new().config(json!({})).digest(), "config {{}} vs none");
    assert_eq!(none.digest(), EnvironmentSpec::new().packages("pip", Vec::<String>::new()).digest(), "pip [] vs none");
}
