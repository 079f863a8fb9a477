//! Parity with upstream `test/req_managed_agents/provisioner/runtimes_test.exs` (V-11, V-12): the runtime
//! bootstrap script and its system-prompt section, the hosts the script needs, and their merge into a limited
//! network's `allowed_hosts` when Claude creates the environment (D-44).
//!
//! Upstream's `Runtimes.bootstrap_script/1` and `system_prompt_block/1` are [`Bootstrap::script`] and
//! [`Bootstrap::instructions`] here; `required_hosts/1` is [`MISE_HOSTS`], added whenever an environment has
//! runtimes. Upstream's maps versus `%Runtime{}` structs are runtimes read from JSON versus built with
//! [`Runtime::new`]. The `ensure_environment` cases run against the emulator, whose request log shows the create
//! body (upstream captured it with a `create_fun`); atom versus string keys and types do not exist in JSON, so
//! upstream's pairs of those cases are the typed [`Networking`] versus a raw `config`.
//!
//! The `validate/1` cases and the two `ensure_environment` cases about identity and validation order are in
//! `crates/core/tests/parity_provision_runtimes.rs`.

mod common;

use common::Fixture;
use managed_agents_claude::provision::{BASHRC_MARKER, Bootstrap, MISE_HOSTS, environment_config};
use managed_agents_core::{EnvironmentSpec, Networking, Runtime};
use serde_json::{Value, json};

const PATH_EXPORT: &str = "export PATH=\"$HOME/.local/bin:$HOME/.local/share/mise/shims:$PATH\"";

fn bootstrap(runtimes: &[Runtime]) -> Bootstrap {
    Bootstrap::for_runtimes(runtimes).unwrap().expect("runtimes give a bootstrap")
}

fn script(runtimes: &[Runtime]) -> String {
    bootstrap(runtimes).script
}

fn elixir() -> Runtime {
    Runtime::new("elixir", "1.17.0")
}

/// Where `needle` first occurs in `haystack`.
fn at(haystack: &str, needle: &str) -> usize {
    haystack.find(needle).unwrap_or_else(|| panic!("`{needle}` not in:\n{haystack}"))
}

/// Runtimes read from JSON, the way a spec file gives them (upstream's maps).
fn from_json(runtimes: Value) -> Vec<Runtime> {
    serde_json::from_value(runtimes).unwrap()
}

/// The hosts of the `https://` URLs in `text`.
fn url_hosts(text: &str) -> Vec<&str> {
    text.split("https://").skip(1).map(|rest| rest.split(['/', ' ', '"', '\'', '\n']).next().unwrap_or("")).collect()
}

// -------------------------------------------------------------------------------------------------------------
// bootstrap_script/1
// -------------------------------------------------------------------------------------------------------------

/// `runtimes_test.exs` › bootstrap_script/1: "renders shebang, pipefail, and locale exports".
///
/// The locale line exports the same two variables (`LANG`, `LC_ALL`, both `C.UTF-8`), in the other order.
#[test]
fn renders_shebang_pipefail_and_locale_exports() {
    let script = script(&[elixir()]);
    assert!(script.starts_with("#!/usr/bin/env bash\n"), "{script}");
    assert!(script.lines().any(|line| line == "set -euo pipefail"), "{script}");
    assert!(script.lines().any(|line| line == "export LANG=C.UTF-8 LC_ALL=C.UTF-8"), "{script}");
    assert!(at(&script, "export LANG=C.UTF-8") < at(&script, "mise use --global"), "the locale is set first");
}

/// `runtimes_test.exs` › bootstrap_script/1: "renders mise use --global and mise install".
#[test]
fn renders_mise_use_global_and_mise_install() {
    let script = script(&[elixir()]);
    assert!(script.lines().any(|line| line == "mise use --global elixir@1.17.0"), "{script}");
    assert!(at(&script, "mise use --global") < at(&script, "mise install\n"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "erlang appears before elixir when both present".
#[test]
fn erlang_comes_before_elixir() {
    let script = script(&[elixir(), Runtime::new("erlang", "26.2.5")]);
    assert!(at(&script, "mise use --global erlang@") < at(&script, "mise use --global elixir@"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "elixir version gets OTP suffix when erlang is present".
#[test]
fn elixir_gets_the_otp_suffix_when_erlang_is_declared() {
    let script = script(&[elixir(), Runtime::new("erlang", "26.2.5")]);
    assert!(script.lines().any(|line| line == "mise use --global elixir@1.17.0-otp-26"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "elixir version is plain when no erlang present".
#[test]
fn elixir_is_plain_without_erlang() {
    let script = script(&[elixir()]);
    assert!(script.lines().any(|line| line == "mise use --global elixir@1.17.0"), "{script}");
    assert!(!script.contains("-otp-"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "erlang major is derived from the version up to first dot".
#[test]
fn the_erlang_major_is_the_version_up_to_the_first_dot() {
    let script = script(&[Runtime::new("erlang", "27.1.2"), Runtime::new("elixir", "1.18.0")]);
    assert!(script.lines().any(|line| line == "mise use --global elixir@1.18.0-otp-27"), "{script}");
    assert!(script.lines().any(|line| line == "mise use --global erlang@27.1.2"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "other languages render as lang@version verbatim".
#[test]
fn other_languages_render_verbatim() {
    let script = script(&[Runtime::new("nodejs", "20.0.0")]);
    assert!(script.lines().any(|line| line == "mise use --global nodejs@20.0.0"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "other langs preserve input order after the erlang/elixir pair".
#[test]
fn other_languages_keep_their_order_after_the_erlang_elixir_pair() {
    let script = script(&[
        Runtime::new("erlang", "26.2.5"),
        Runtime::new("python", "3.12.0"),
        elixir(),
        Runtime::new("nodejs", "20.0.0"),
    ]);
    let order = ["erlang@", "elixir@", "python@", "nodejs@"].map(|spec| at(&script, spec));
    assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{order:?} in:\n{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "is deterministic: same input produces identical binary".
#[test]
fn the_script_is_deterministic() {
    let runtimes = [Runtime::new("erlang", "26.2.5"), elixir(), Runtime::new("nodejs", "20.0.0")];
    assert_eq!(script(&runtimes), script(&runtimes));
}

/// `runtimes_test.exs` › bootstrap_script/1: "installs mise when absent, then exports PATH, before any mise
/// use" — the order: the install guarded by a check for mise, then the PATH export, then the first `mise use`.
///
/// Only half of the case: upstream's installer fetched `https://mise.jdx.dev/install.sh`, a host of its
/// allowlist; ours fetches from a host the allowlist lacks, which fails
/// `the_installer_is_fetched_from_an_allowed_host` below. The case counts as missing until that passes.
#[test]
fn installs_mise_when_absent_then_exports_path_before_any_mise_use() {
    let script = script(&[elixir()]);
    let check = at(&script, "if ! command -v mise >/dev/null 2>&1");
    let installer = at(&script, "| sh\n");
    let path = at(&script, PATH_EXPORT);
    assert!(check < installer && installer < path && path < at(&script, "mise use --global"), "{script}");
}

/// `runtimes_test.exs` › bootstrap_script/1: "installs mise when absent, then exports PATH, before any mise
/// use" — the installer's download.
///
/// Every host the script fetches from is one the allowlist merge adds (a bug this port found: the installer came
/// from `mise.run`, which a limited network was not given, so the bootstrap failed at its first download).
#[test]
fn the_installer_is_fetched_from_an_allowed_host() {
    let script = script(&[elixir()]);
    let hosts = url_hosts(&script);
    assert!(!hosts.is_empty(), "the script downloads mise when it is missing:\n{script}");
    for host in hosts {
        assert!(MISE_HOSTS.contains(&host), "the script fetches from {host}, not in {MISE_HOSTS:?}");
    }
}

/// `runtimes_test.exs` › bootstrap_script/1: "persists PATH + locale to ~/.bashrc, guarded by the marker
/// comment".
///
/// Our marker is [`BASHRC_MARKER`] (upstream's was `# mise activate-rma`) and the block is written with `echo`s
/// inside an `if ! grep -qF`, after the final `mise install`; the PATH and locale exports each occur twice
/// (run, then persisted).
#[test]
fn persists_path_and_locale_to_bashrc_behind_the_marker() {
    let script = script(&[elixir()]);
    let guard = format!("if ! grep -qF '{BASHRC_MARKER}' \"$HOME/.bashrc\"");
    assert!(at(&script, "mise install\n") < at(&script, &guard), "{script}");
    assert!(script.contains(&format!("echo '{BASHRC_MARKER}'")), "{script}");
    assert!(script.contains("\"$HOME/.bashrc\"") && script.contains(">> \"$HOME/.bashrc\""), "{script}");
    assert_eq!(script.matches(PATH_EXPORT).count(), 2, "{script}");
    assert_eq!(script.matches("export LANG=C.UTF-8 LC_ALL=C.UTF-8").count(), 2, "{script}");
    assert!(at(&script, &guard) < script.rfind(PATH_EXPORT).unwrap(), "the second export is the persisted one");
}

/// `runtimes_test.exs` › bootstrap_script/1: "persists PATH + locale to ~/.bashrc, guarded by the marker
/// comment" — run with bash against a stub `mise` in a scratch `$HOME`, twice: mise gets the runtimes under the
/// UTF-8 locale, and `~/.bashrc` gets the marker, PATH and locale once.
#[cfg(unix)]
#[test]
fn running_the_script_twice_persists_the_block_once() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let home = std::env::temp_dir().join(format!("parity_runtimes_{}_{nanos}", std::process::id()));
    let bin = home.join(".local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = home.join("calls.log");
    let stub = |name: &str, body: &str| {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stub("mise", &format!("echo \"$LANG $LC_ALL mise $*\" >> '{}'", log.display()));
    stub("curl", "echo 'curl must not run when mise is present' >&2; exit 1");
    let script_path = home.join("bootstrap.sh");
    std::fs::write(&script_path, script(&[Runtime::new("erlang", "27.1"), elixir()])).unwrap();

    for _ in 0..2 {
        let status = Command::new("bash")
            .arg(&script_path)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .status()
            .unwrap();
        assert!(status.success(), "the script failed: {status}");
    }

    let calls = std::fs::read_to_string(&log).unwrap();
    let bashrc = std::fs::read_to_string(home.join(".bashrc")).unwrap();
    std::fs::remove_dir_all(&home).unwrap();
    let once = "C.UTF-8 C.UTF-8 mise use --global erlang@27.1\n\
                C.UTF-8 C.UTF-8 mise use --global elixir@1.17.0-otp-27\n\
                C.UTF-8 C.UTF-8 mise install\n";
    assert_eq!(calls, once.repeat(2));
    assert_eq!(bashrc, format!("{BASHRC_MARKER}\n{PATH_EXPORT}\nexport LANG=C.UTF-8 LC_ALL=C.UTF-8\n"));
}

/// `runtimes_test.exs` › bootstrap_script/1: "renders byte-identical output for maps vs %Runtime{} structs".
#[test]
fn runtimes_from_json_render_the_same_script() {
    let built = [Runtime::new("erlang", "26.2.5"), elixir(), Runtime::new("nodejs", "20.0.0")];
    let read = from_json(json!([
        {"lang": "erlang", "version": "26.2.5"},
        {"lang": "elixir", "version": "1.17.0"},
        {"lang": "nodejs", "version": "20.0.0"}
    ]));
    assert_eq!(script(&read), script(&built));
}

// -------------------------------------------------------------------------------------------------------------
// system_prompt_block/1
// -------------------------------------------------------------------------------------------------------------

fn block_runtimes() -> [Runtime; 2] {
    [Runtime::new("erlang", "29.0.2"), Runtime::new("elixir", "1.20.2")]
}

/// `runtimes_test.exs` › system_prompt_block/1: "names each declared runtime as \"<lang> <version>\"".
#[test]
fn the_instructions_name_each_runtime() {
    let instructions = bootstrap(&block_runtimes()).instructions;
    assert!(instructions.contains("erlang 29.0.2, elixir 1.20.2"), "{instructions}");
}

/// `runtimes_test.exs` › system_prompt_block/1: "instructs exactly-once execution via bash and notes
/// idempotence" — in our words: run it once, with bash; running it again changes nothing.
#[test]
fn the_instructions_ask_for_one_run_with_bash_and_say_a_rerun_is_harmless() {
    let instructions = bootstrap(&block_runtimes()).instructions;
    assert!(instructions.contains("run the script below once, with bash"), "{instructions}");
    assert!(instructions.contains("running it again changes nothing"), "{instructions}");
    assert!(instructions.contains("Before the first command"), "{instructions}");
}

/// `runtimes_test.exs` › system_prompt_block/1: "embeds the full bootstrap script verbatim in a fenced block".
#[test]
fn the_instructions_embed_the_whole_script_in_a_bash_fence() {
    let Bootstrap { script, instructions, .. } = bootstrap(&block_runtimes());
    assert!(instructions.contains(&format!("```bash\n{script}```\n")), "{instructions}");
}

/// `runtimes_test.exs` › system_prompt_block/1: "is deterministic: renders identically twice".
#[test]
fn the_instructions_are_deterministic() {
    assert_eq!(bootstrap(&block_runtimes()).instructions, bootstrap(&block_runtimes()).instructions);
}

/// `runtimes_test.exs` › system_prompt_block/1: "accepts %Runtime{} structs and matches the map-input result".
#[test]
fn runtimes_from_json_give_the_same_instructions() {
    let read = from_json(json!([{"lang": "erlang", "version": "29.0.2"}, {"lang": "elixir", "version": "1.20.2"}]));
    assert_eq!(bootstrap(&read).instructions, bootstrap(&block_runtimes()).instructions);
}

// -------------------------------------------------------------------------------------------------------------
// required_hosts/1
// -------------------------------------------------------------------------------------------------------------

fn limited(hosts: &[&str]) -> EnvironmentSpec {
    EnvironmentSpec::new()
        .networking(Networking::Limited { allowed_hosts: hosts.iter().map(|h| h.to_string()).collect() })
}

/// `runtimes_test.exs` › required_hosts/1: "returns a non-empty sorted, deduped list for :mise runtimes".
#[test]
fn the_required_hosts_are_sorted_and_unique() {
    assert!(!MISE_HOSTS.is_empty());
    assert!(MISE_HOSTS.windows(2).all(|pair| pair[0] < pair[1]), "sorted and without duplicates: {MISE_HOSTS:?}");
}

/// `runtimes_test.exs` › required_hosts/1: "includes known mise hosts" — and they are what a limited network
/// with runtimes is given.
#[test]
fn the_required_hosts_include_the_known_mise_hosts() {
    for host in [
        "mise.jdx.dev",
        "mise-versions.jdx.dev",
        "github.com",
        "objects.githubusercontent.com",
        "repo.hex.pm",
        "builds.hex.pm",
    ] {
        assert!(MISE_HOSTS.contains(&host), "{host} missing from {MISE_HOSTS:?}");
    }
    let config = environment_config(&limited(&[]).runtime(Runtime::new("erlang", "26.2.5")));
    assert_eq!(config["networking"]["allowed_hosts"], json!(MISE_HOSTS));
}

/// `runtimes_test.exs` › required_hosts/1: "returns empty list for empty runtimes" — without runtimes there is
/// no bootstrap and a limited network is given no hosts.
#[tokio::test]
async fn no_runtimes_require_no_hosts() {
    assert_eq!(Bootstrap::for_runtimes(&[]).unwrap(), None);
    let spec = limited(&["example.com"]);
    assert_eq!(environment_config(&spec)["networking"]["allowed_hosts"], json!(["example.com"]));
    let fx = Fixture::new(100).await;
    let env = fx.provisioner().ensure_environment(&spec, Some("env")).await.unwrap();
    assert_eq!(env.bootstrap, None);
    let body = &fx.emulator.requests_to("POST", "/v1/environments")[0].body;
    assert_eq!(body["config"]["networking"]["allowed_hosts"], json!(["example.com"]));
}

/// `runtimes_test.exs` › required_hosts/1: "accepts %Runtime{} structs and matches the map-input result".
#[test]
fn runtimes_from_json_require_the_same_hosts() {
    let read = from_json(json!([{"lang": "elixir", "version": "1.17.0"}]));
    let from_read = read.into_iter().fold(limited(&[]), EnvironmentSpec::runtime);
    assert_eq!(environment_config(&from_read), environment_config(&limited(&[]).runtime(elixir())));
}

// -------------------------------------------------------------------------------------------------------------
// ensure_environment with runtimes
// -------------------------------------------------------------------------------------------------------------

/// `spec` ensured on a fresh emulator; the `config` of its create body.
async fn created_config(spec: EnvironmentSpec) -> Value {
    let fx = Fixture::new(100).await;
    let env = fx.provisioner().ensure_environment(&spec, Some("env")).await.unwrap();
    assert!(env.bootstrap.is_some() || spec.runtimes.is_empty());
    let requests = fx.emulator.requests_to("POST", "/v1/environments");
    assert_eq!(requests.len(), 1);
    requests[0].body["config"].clone()
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "unrestricted networking: create body unchanged (no
/// allowed_hosts injected)".
#[tokio::test]
async fn unrestricted_networking_gets_no_allowed_hosts() {
    let given = json!({"type": "cloud", "networking": {"type": "unrestricted"}});
    let config = created_config(EnvironmentSpec::new().runtime(elixir()).config(given.clone())).await;
    assert_eq!(config, given);
    let typed = created_config(EnvironmentSpec::new().runtime(elixir())).await;
    assert_eq!(typed, given, "the typed default is unrestricted too");
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "limited networking: runtimes' required hosts merged
/// into allowed_hosts" (upstream's atom-typed networking is the typed [`Networking::Limited`]).
#[tokio::test]
async fn limited_networking_gets_the_required_hosts_merged() {
    let config = created_config(limited(&["example.com"]).runtime(elixir())).await;
    let mut expected = vec![json!("example.com")];
    expected.extend(MISE_HOSTS.iter().map(|h| json!(h)));
    assert_eq!(config, json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": expected}}));
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "limited networking: hosts deduplicated when consumer
/// already lists a runtime host".
#[tokio::test]
async fn a_required_host_already_listed_is_not_repeated() {
    let one_host = MISE_HOSTS[0];
    let config = created_config(limited(&[one_host, "example.com"]).runtime(elixir())).await;
    let hosts = config["networking"]["allowed_hosts"].as_array().unwrap();
    assert_eq!(hosts.iter().filter(|h| *h == one_host).count(), 1, "{hosts:?}");
    assert_eq!(hosts[..2], [json!(one_host), json!("example.com")], "the hosts given stay first");
    assert_eq!(hosts.len(), 1 + MISE_HOSTS.len());
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "limited networking as string type: hosts merged"
/// (a raw `config` whose `type` is the string `"limited"`, with no hosts yet).
#[tokio::test]
async fn a_limited_raw_config_gets_the_required_hosts() {
    let given = json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": []}});
    let config = created_config(EnvironmentSpec::new().runtime(elixir()).config(given)).await;
    assert_eq!(config["networking"]["allowed_hosts"], json!(MISE_HOSTS));
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "absent networking key: create body unchanged (no
/// networking key added)".
#[tokio::test]
async fn a_raw_config_without_networking_gets_none() {
    let given = json!({"type": "cloud"});
    let config = created_config(EnvironmentSpec::new().runtime(elixir()).config(given.clone())).await;
    assert_eq!(config, given);
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "string-keyed limited networking map: hosts merged
/// under the string key" — JSON keys are strings, so the case is that the merge writes into the one
/// `allowed_hosts` given and adds no other key.
#[tokio::test]
async fn a_raw_limited_networking_map_is_merged_in_place() {
    let given = json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["example.com"]}});
    let config = created_config(EnvironmentSpec::new().runtime(elixir()).config(given)).await;
    let networking = config["networking"].as_object().unwrap();
    let mut keys: Vec<&str> = networking.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["allowed_hosts", "type"]);
    let hosts = networking["allowed_hosts"].as_array().unwrap();
    for host in ["example.com", "mise.jdx.dev", "mise-versions.jdx.dev"] {
        assert!(hosts.contains(&json!(host)), "{host} missing from {hosts:?}");
    }
}

/// `runtimes_test.exs` › ensure_environment with runtimes: "string-keyed unrestricted networking map: create
/// body unchanged" (a raw `config` whose networking is given as-is).
#[tokio::test]
async fn a_raw_unrestricted_networking_map_is_sent_unchanged() {
    let networking = json!({"type": "unrestricted"});
    let given = json!({"type": "cloud", "networking": networking});
    let config = created_config(EnvironmentSpec::new().runtime(elixir()).config(given)).await;
    assert_eq!(config["networking"], networking);
}

// -------------------------------------------------------------------------------------------------------------
// via
// -------------------------------------------------------------------------------------------------------------

/// `runtimes_test.exs` › validate/1: "rejects unknown via".
///
/// By decision (D-44, D-45): mise is the only install method, so [`Runtime`] has no `via`; a runtime naming one
/// is refused as an unknown key whatever its value, `nix` as upstream did and `mise` too (upstream accepted it).
#[test]
fn a_runtime_naming_an_install_method_is_refused() {
    for via in ["nix", "mise"] {
        let entry = json!({"lang": "elixir", "version": "1.17.0", "via": via});
        let error = serde_json::from_value::<Runtime>(entry.clone()).unwrap_err();
        assert!(error.to_string().contains("via"), "{error}");
        assert!(serde_json::from_value::<EnvironmentSpec>(json!({"runtimes": [entry]})).is_err());
    }
    let plain: Runtime = serde_json::from_value(json!({"lang": "elixir", "version": "1.17.0"})).unwrap();
    assert_eq!(plain, elixir());
}
