//! Parity with upstream `test/req_managed_agents/provisioner/environments_test.exs` (V-9 … V-14): environments as
//! content-addressed images on Claude, against the emulator (upstream injected `create_fun` / `list_fun` /
//! `archive_fun`; here the emulator's request log shows what was called, and its failure injection stands in
//! for failing functions).
//!
//! The coercion cases that exist because Elixir accepted maps are covered by the type system (see each note
//! below).

mod common;

use common::{Fixture, is_archived};
use managed_agents_claude::provision::{Bootstrap, MISE_HOSTS, Origin, ResourceKind};
use managed_agents_core::http::{Method, StatusCode};
use managed_agents_core::provision::ProvisionStore;
use managed_agents_core::{EnvironmentSpec, Error, Networking, Runtime};
use serde_json::json;

fn spec1() -> EnvironmentSpec {
    EnvironmentSpec::new().packages("pip", ["pandas"])
}

fn spec2() -> EnvironmentSpec {
    EnvironmentSpec::new().packages("pip", ["pandas", "numpy"])
}

fn digest8(spec: &EnvironmentSpec) -> String {
    spec.digest().short().to_string()
}

/// environments_test.exs: "digest-named create on miss; identical spec is a pure cache hit".
#[tokio::test]
async fn digest_named_create_on_miss_then_a_pure_cache_hit() {
    let fx = Fixture::new(100).await;
    let env = fx.provisioner().ensure_environment(&spec1(), Some("data_analysis")).await.unwrap();
    assert_eq!(env.name, format!("data_analysis_{}", env.digest));
    assert!(env.digest.len() == 8 && env.digest.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(fx.emulator.requests_to("POST", "/v1/environments")[0].body["name"], env.name);
    let again = fx.provisioner().ensure_environment(&spec1(), Some("data_analysis")).await.unwrap();
    assert_eq!((again.id, again.origin), (env.id, Origin::Stored));
    assert_eq!((fx.count("POST", "/v1/environments"), fx.count("GET", "/v1/environments")), (1, 0));
}

/// environments_test.exs: "different spec = different image (different digest-name), ensured alongside".
#[tokio::test]
async fn a_different_spec_is_a_different_image_alongside() {
    let fx = Fixture::new(100).await;
    let one = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap();
    let two = fx.provisioner().ensure_environment(&spec2(), Some("data")).await.unwrap();
    assert_ne!((one.id.as_str(), one.name.as_str()), (two.id.as_str(), two.name.as_str()));
    assert!(!is_archived(&fx.emulator.environment(&one.id).unwrap()), "the old image stays");
}

/// environments_test.exs: "empty store recovers by exact digest-name via list (409 or fresh machine)".
#[tokio::test]
async fn an_empty_store_recovers_by_the_exact_digest_name() {
    let fx = Fixture::new(2).await;
    fx.emulator.insert_environment(&format!("data_{}_old", digest8(&spec1())), false);
    fx.emulator.insert_environment("data", false);
    let existing = fx.emulator.insert_environment(&format!("data_{}", digest8(&spec1())), false);
    let env = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap();
    assert_eq!((env.id.as_str(), env.origin), (existing.as_str(), Origin::Adopted));
}

/// environments_test.exs: "archived exact digest-name in recovery surfaces environment_archived".
#[tokio::test]
async fn an_archived_exact_name_is_a_name_conflict() {
    let fx = Fixture::new(100).await;
    let archived = fx.emulator.insert_environment(&format!("data_{}", digest8(&spec1())), true);
    let error = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap_err();
    let Error::NameConflict { resource: "environment", name, reason, .. } = error else { panic!("{error:?}") };
    assert_eq!(name, format!("data_{}", digest8(&spec1())));
    assert!(reason.contains("archived") && reason.contains(&archived), "{reason}");
}

/// environments_test.exs: "409 with no name match at all is a name conflict, not archived".
#[tokio::test]
async fn a_409_with_no_name_match_is_a_name_conflict() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_environment("someone_else", false);
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::CONFLICT, 1);
    let error = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap_err();
    let Error::NameConflict { reason, .. } = error else { panic!("{error:?}") };
    assert!(!reason.contains("archived"), "{reason}");
}

/// environments_test.exs: "malformed store entry is treated as a miss: rebuild and overwrite".
#[tokio::test]
async fn a_malformed_store_entry_is_rebuilt_and_overwritten() {
    let fx = Fixture::new(100).await;
    let key = ResourceKind::Environment.store_key("data", &digest8(&spec1()));
    fx.store.put(&key, json!("not a handle")).await.unwrap();
    let env = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap();
    assert_eq!(env.origin, Origin::Created);
    assert_eq!(fx.store.get(&key).await.unwrap().unwrap()["id"], env.id.as_str());
}

/// environments_test.exs: "provider errors pass through".
#[tokio::test]
async fn provider_errors_pass_through() {
    let fx = Fixture::new(100).await;
    fx.emulator.fail_requests(Method::POST, "/v1/environments", StatusCode::INTERNAL_SERVER_ERROR, 1);
    let error = fx.provisioner().ensure_environment(&spec1(), Some("data")).await.unwrap_err();
    assert!(matches!(error, Error::Http { status: 500, .. }), "{error:?}");
}

/// environments_test.exs: "tag + resolve round-trip via the registry entry".
#[tokio::test]
async fn tag_and_resolve_round_trip() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let env = provisioner.ensure_environment(&spec1(), Some("data")).await.unwrap();
    provisioner.tag(ResourceKind::Environment, "data", "prod", &env.digest).await.unwrap();
    let resolved = provisioner.resolve(ResourceKind::Environment, "data:prod").await.unwrap();
    assert_eq!((resolved.id, resolved.name, resolved.digest), (env.id, env.name, env.digest));
}

/// environments_test.exs: "resolve of a tag whose digest lost its provision entry is :untracked_digest".
#[tokio::test]
async fn a_tag_whose_version_is_forgotten_is_untracked() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let env = provisioner.ensure_environment(&spec1(), Some("data")).await.unwrap();
    provisioner.tag(ResourceKind::Environment, "data", "prod", &env.digest).await.unwrap();
    fx.store.delete(&ResourceKind::Environment.store_key("data", &env.digest)).await.unwrap();
    let error = provisioner.resolve(ResourceKind::Environment, "data:prod").await.unwrap_err();
    assert!(matches!(&error, Error::InvalidSpec { reason, .. } if reason.contains(&env.digest)), "{error:?}");
}

/// environments_test.exs: "resolve raises ArgumentError on a ref without a colon" — a typed error here, not a
/// raise.
#[tokio::test]
async fn a_reference_without_a_colon_is_refused() {
    let fx = Fixture::new(100).await;
    let error = fx.provisioner().resolve(ResourceKind::Environment, "no-colon").await.unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { what: "tag reference", .. }), "{error:?}");
}

/// environments_test.exs: "tag accepts a raw digest string too".
#[tokio::test]
async fn tag_accepts_a_raw_digest() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    provisioner.tag(ResourceKind::Environment, "data", "raw", "ABCDEF01").await.unwrap();
    let tags = provisioner.tags(ResourceKind::Environment, "data").await.unwrap();
    assert_eq!(tags.get("raw").map(String::as_str), Some("abcdef01"));
}

/// environments_test.exs: "keeps newest N + tagged; archives the rest; :keep is mandatory" — `keep` is a
/// `usize` here, so only 0 can be refused.
#[tokio::test]
async fn prune_keeps_newest_and_tagged_and_requires_keep() {
    let fx = Fixture::new(2).await;
    let provisioner = fx.provisioner();
    provisioner.tag(ResourceKind::Environment, "d", "prod", "cccccccc").await.unwrap();
    fx.emulator.insert_environment("d_ffffffff", true);
    let ids: Vec<String> = ["d_aaaaaaaa", "d_bbbbbbbb", "d_cccccccc", "d_dddddddd", "other_eeeeeeee"]
        .iter()
        .map(|name| fx.emulator.insert_environment(name, false))
        .collect();
    let error = provisioner.prune(ResourceKind::Environment, "d", 0).await.unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "keep", .. }), "{error:?}");
    let report = provisioner.prune(ResourceKind::Environment, "d", 1).await.unwrap();
    let mut kept = report.kept.clone();
    kept.sort();
    assert_eq!(kept, ["d_cccccccc", "d_dddddddd"]);
    assert_eq!(report.archived, ["d_aaaaaaaa", "d_bbbbbbbb"]);
    assert!(!is_archived(&fx.emulator.environment(&ids[4]).unwrap()), "other bases are untouched");
    assert_eq!(fx.archive_paths().len(), 2, "the already-archived one is skipped");
}

/// environments_test.exs: "partial failure reports progress". By decision prune goes on after a failure and
/// reports every failure (upstream stopped at the first); the failed version's store entry survives.
#[tokio::test]
async fn a_partial_failure_reports_progress() {
    let fx = Fixture::new(100).await;
    let provisioner = fx.provisioner();
    let first = fx.emulator.insert_environment("d_11111111", false);
    let second = fx.emulator.insert_environment("d_22222222", false);
    fx.emulator.insert_environment("d_33333333", false);
    for (id, digest) in [(&first, "11111111"), (&second, "22222222")] {
        let value =
            json!({"kind": "environment", "id": id, "name": format!("d_{digest}"), "base": "d", "digest": digest});
        fx.store.put(&ResourceKind::Environment.store_key("d", digest), value).await.unwrap();
    }
    fx.emulator.fail_requests(
        Method::POST,
        &format!("/v1/environments/{second}/archive"),
        StatusCode::INTERNAL_SERVER_ERROR,
        usize::MAX,
    );
    let report = provisioner.prune(ResourceKind::Environment, "d", 1).await.unwrap();
    assert_eq!(report.archived, ["d_11111111"]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].name, "d_22222222");
    assert!(matches!(report.failed[0].error, Error::Http { status: 500, .. }));
    assert!(fx.store.get(&ResourceKind::Environment.store_key("d", "11111111")).await.unwrap().is_none());
    assert!(fx.store.get(&ResourceKind::Environment.store_key("d", "22222222")).await.unwrap().is_some());
}

/// environments_test.exs: "a malformed atom-keyed store entry (missing digest) is rebuilt, not returned".
#[tokio::test]
async fn a_store_entry_missing_its_digest_is_rebuilt() {
    let fx = Fixture::new(100).await;
    let key = ResourceKind::Environment.store_key("d", &digest8(&spec1()));
    fx.store.put(&key, json!({"kind": "environment", "id": "env_partial", "name": "x", "base": "d"})).await.unwrap();
    let env = fx.provisioner().ensure_environment(&spec1(), Some("d")).await.unwrap();
    assert_ne!(env.id, "env_partial");
    let healed = fx.provisioner().ensure_environment(&spec1(), Some("d")).await.unwrap();
    assert_eq!((healed.id, healed.origin), (env.id, Origin::Stored));
    assert_eq!(fx.count("POST", "/v1/environments"), 1);
}

/// environments_test.exs: "a longer base sharing the name prefix is never a candidate".
#[tokio::test]
async fn a_longer_base_sharing_the_prefix_is_never_a_candidate() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_environment("data_aaaaaaaa", false);
    fx.emulator.insert_environment("data_bbbbbbbb", false);
    let other = fx.emulator.insert_environment("data_analysis_abc12345", false);
    let report = fx.provisioner().prune(ResourceKind::Environment, "data", 1).await.unwrap();
    assert_eq!(
        (report.kept.as_slice(), report.archived.as_slice()),
        (&["data_bbbbbbbb".to_string()][..], &["data_aaaaaaaa".to_string()][..])
    );
    assert!(!is_archived(&fx.emulator.environment(&other).unwrap()));
}

/// environments_test.exs: "a name with a repeated base prefix is not a version and is untouched".
#[tokio::test]
async fn a_repeated_base_prefix_is_not_a_version() {
    let fx = Fixture::new(100).await;
    let odd = fx.emulator.insert_environment("d_d_aaaaaaaa", false);
    fx.emulator.insert_environment("d_bbbbbbbb", false);
    fx.emulator.insert_environment("d_cccccccc", false);
    let report = fx.provisioner().prune(ResourceKind::Environment, "d", 1).await.unwrap();
    assert_eq!(report.kept, ["d_cccccccc"]);
    assert_eq!(report.archived, ["d_bbbbbbbb"]);
    assert!(!is_archived(&fx.emulator.environment(&odd).unwrap()));
}

/// environments_test.exs: "wire config never carries :runtimes — library vocabulary, provider-opaque".
#[tokio::test]
async fn the_wire_config_never_carries_runtimes() {
    let fx = Fixture::new(100).await;
    let spec = spec1().runtime(Runtime::new("python", "3.12"));
    fx.provisioner().ensure_environment(&spec, Some("rt")).await.unwrap();
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert!(!body.to_string().contains("runtime") && !body.to_string().contains("3.12"), "{body}");
}

/// environments_test.exs: "accepts an %Environment.Spec{} struct directly" — the typed spec is the only input;
/// a spec built from JSON (the map form) provisions the same image.
#[tokio::test]
async fn a_spec_from_json_is_the_same_image() {
    let fx = Fixture::new(100).await;
    let from_json: EnvironmentSpec = serde_json::from_value(json!({"packages": {"pip": ["pandas"]}})).unwrap();
    let a = fx.provisioner().ensure_environment(&from_json, Some("j")).await.unwrap();
    let b = fx.provisioner().ensure_environment(&spec1(), Some("j")).await.unwrap();
    assert_eq!((a.id, b.origin), (b.id, Origin::Stored));
}

/// environments_test.exs: "a literal nil env spec is rejected with a tagged error" — `ensure_environment` takes
/// `&EnvironmentSpec`, so there is no nil to pass; `Provider::provision` reads `None` as the default spec.
#[tokio::test]
async fn no_environment_spec_means_the_default_environment() {
    let fx = Fixture::new(100).await;
    let agent = managed_agents_core::AgentSpec::new("a", "p").model("claude-sonnet-4-6");
    use managed_agents_core::Provider;
    fx.provider().provision(&agent, None).await.unwrap();
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert_eq!(body["name"], format!("a_env_{}", digest8(&EnvironmentSpec::new())));
    assert_eq!(body["config"], json!({"type": "cloud", "networking": {"type": "unrestricted"}}));
}

/// environments_test.exs: "an invalid runtime surfaces {:error, :invalid_environment_spec}".
#[tokio::test]
async fn an_invalid_runtime_is_an_invalid_spec_and_creates_nothing() {
    let fx = Fixture::new(100).await;
    let spec = spec1().runtime(Runtime::new("python", "3.12; rm -rf /"));
    let error = fx.provisioner().ensure_environment(&spec, Some("d")).await.unwrap_err();
    assert!(matches!(error, Error::InvalidSpec { what: "environment spec", .. }), "{error:?}");
    assert_eq!(fx.count("POST", "/v1/environments"), 0);
}

/// environments_test.exs: "create_environment wire config is byte-identical to the pre-#72 flat-networking
/// shape (host merge preserved)": the flat networking shape, and with runtimes the mise hosts appended after the
/// hosts given.
#[tokio::test]
async fn the_wire_config_has_the_flat_networking_shape_and_the_host_merge() {
    let fx = Fixture::new(100).await;
    let spec = EnvironmentSpec::new().networking(Networking::Limited { allowed_hosts: vec!["example.com".into()] });
    fx.provisioner().ensure_environment(&spec, Some("net")).await.unwrap();
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert_eq!(
        body["config"],
        json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["example.com"]}})
    );
    fx.provisioner().ensure_environment(&spec.runtime(Runtime::new("erlang", "27.1")), Some("net")).await.unwrap();
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[1].body;
    let mut hosts = vec![json!("example.com")];
    hosts.extend(MISE_HOSTS.iter().map(|h| json!(h)));
    assert_eq!(body["config"]["networking"]["allowed_hosts"], json!(hosts));
}

fn runtime_spec() -> EnvironmentSpec {
    spec1().runtime(Runtime::new("elixir", "1.17.3")).runtime(Runtime::new("erlang", "27.1"))
}

/// environments_test.exs: "fresh create returns bootstrap with script + instructions".
#[tokio::test]
async fn a_fresh_create_returns_the_bootstrap() {
    let fx = Fixture::new(100).await;
    let env = fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    let bootstrap = env.bootstrap.expect("runtimes give a bootstrap");
    assert!(bootstrap.script.contains("mise use --global erlang@27.1\nmise use --global elixir@1.17.3-otp-27\n"));
    assert!(bootstrap.instructions.contains(bootstrap.script.trim_end()));
    assert_eq!(Some(bootstrap), Bootstrap::for_runtimes(&runtime_spec().runtimes).unwrap());
}

/// environments_test.exs: "runtime-bearing return is a %Handle{} struct, not a bare map (regression, #69)" —
/// by the type system: `ensure_environment` always returns a `Provisioned`.
#[tokio::test]
async fn a_runtime_bearing_return_is_the_same_type() {
    let fx = Fixture::new(100).await;
    let env: managed_agents_claude::provision::Provisioned =
        fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    assert_eq!(env.kind, ResourceKind::Environment);
}

/// environments_test.exs: "store HIT still returns bootstrap (no create, no list)".
#[tokio::test]
async fn a_store_hit_still_returns_the_bootstrap() {
    let fx = Fixture::new(100).await;
    fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    let hit = fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    assert_eq!(hit.origin, Origin::Stored);
    assert!(hit.bootstrap.is_some());
    assert_eq!((fx.count("POST", "/v1/environments"), fx.count("GET", "/v1/environments")), (1, 0));
}

/// environments_test.exs: "recovery path (409 -> list) carries bootstrap".
#[tokio::test]
async fn the_recovery_path_carries_the_bootstrap() {
    let fx = Fixture::new(100).await;
    fx.emulator.insert_environment(&format!("rt_{}", digest8(&runtime_spec())), false);
    let adopted = fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    assert_eq!(adopted.origin, Origin::Adopted);
    assert!(adopted.bootstrap.is_some());
}

/// environments_test.exs: "stored values never carry bootstrap (spy on every put)".
#[tokio::test]
async fn stored_values_never_carry_the_bootstrap() {
    let fx = Fixture::new(100).await;
    fx.provisioner().ensure_environment(&runtime_spec(), Some("rt")).await.unwrap();
    for key in fx.store.keys("").await.unwrap() {
        let value = fx.store.get(&key).await.unwrap().unwrap();
        assert!(!value.to_string().contains("mise"), "{key}: {value}");
    }
}

/// environments_test.exs: "spec without runtimes yields a struct with bootstrap: nil".
#[tokio::test]
async fn no_runtimes_no_bootstrap() {
    let fx = Fixture::new(100).await;
    assert_eq!(fx.provisioner().ensure_environment(&spec1(), Some("d")).await.unwrap().bootstrap, None);
}

/// environments_test.exs: "content-addressing: specs differing only by config or runtimes get different
/// digests".
#[test]
fn config_or_runtimes_change_the_digest() {
    let base = spec1();
    assert_ne!(base.digest(), base.clone().config(json!({"type": "cloud"})).digest());
    assert_ne!(base.digest(), base.clone().runtime(Runtime::new("python", "3.12")).digest());
}

/// environments_test.exs: "content-addressing: differing only by name (base) shares the digest".
#[test]
fn the_name_does_not_change_the_digest() {
    assert_eq!(spec1().name("one").digest(), spec1().name("two").digest());
}
