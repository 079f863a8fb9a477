//! The builder convention: `Local::builder()` takes only what it is given, `Local::from_env()` reads the
//! environment, and `build()` refuses every setting that could misbehave later instead of panicking.
//!
//! The environment is process-global, so the environment checks run in a child process (this test binary
//! re-executed with the variables set), never by changing this process's environment.

use std::process::Command;
use std::time::Duration;

use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{Error, HttpOptions, NoTools, RetryPolicy, Session, SessionOptions};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{DEFAULT_BASE_URL, DEFAULT_HTTP_SETTINGS, Local, LocalBuilder};

/// Set in the child only.
const CHILD: &str = "MANAGED_AGENTS_LOCAL_BUILDER_CHILD";
const ENV_URL: &str = "http://127.0.0.1:9/from-the-environment";

#[test]
fn builder_ignores_the_environment_and_from_env_reads_it() {
    let exe = std::env::current_exe().expect("the test binary");
    let output = Command::new(exe)
        .args(["--exact", "environment_checks_in_the_child", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("OPENAI_BASE_URL", ENV_URL)
        .env("OPENAI_MODEL", "model-from-env")
        .env("OPENAI_API_KEY", "sk-from-env")
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("environment checks passed"), "the child ran the checks:\n{stdout}");
}

/// Runs only in the child, with the variables set by the parent.
#[test]
fn environment_checks_in_the_child() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    assert_eq!(std::env::var("OPENAI_BASE_URL").as_deref(), Ok(ENV_URL));

    // builder(): nothing from the environment — no model, so no provider …
    let error = Local::builder().build().expect_err("OPENAI_MODEL must not be read");
    assert!(matches!(error, Error::InvalidOption { option: "model", .. }), "{error}");
    // … and with a model, the default base URL and no key, whatever OPENAI_BASE_URL / OPENAI_API_KEY say.
    let provider = Local::builder().model("m").build().expect("builds");
    let debug = format!("{provider:?}");
    assert!(debug.contains(DEFAULT_BASE_URL) && !debug.contains(ENV_URL), "{debug}");
    assert!(debug.contains("api_key: None"), "{debug}");
    assert_eq!(provider.model(), "m");

    // from_env(): all three.
    let provider = Local::from_env().expect("from_env");
    let debug = format!("{provider:?}");
    assert!(debug.contains(ENV_URL), "{debug}");
    assert!(!debug.contains("api_key: None") && !debug.contains("sk-from-env"), "a key, never shown: {debug}");
    assert_eq!(provider.model(), "model-from-env");

    // LocalBuilder::from_env(): the environment, then overrides.
    let provider = LocalBuilder::from_env().model("override").base_url("http://127.0.0.1:1/v1").build().unwrap();
    let debug = format!("{provider:?}");
    assert!(debug.contains("http://127.0.0.1:1/v1") && !debug.contains(ENV_URL), "{debug}");
    assert_eq!(provider.model(), "override");
    println!("environment checks passed");
}

fn invalid(builder: LocalBuilder) -> &'static str {
    match builder.build() {
        Err(Error::InvalidOption { option, .. }) => option,
        other => panic!("expected an invalid option, got {other:?}"),
    }
}

#[test]
fn build_refuses_settings_that_could_misbehave_later() {
    let base = || Local::builder().model("m");
    assert_eq!(invalid(Local::builder().model("  ")), "model");
    assert_eq!(invalid(base().request_timeout(Duration::ZERO)), "request_timeout");
    assert_eq!(invalid(base().idle_timeout(Duration::ZERO)), "idle_timeout");
    assert_eq!(invalid(base().base_url("not a url")), "base_url");
    assert_eq!(invalid(base().base_url("ftp://example.com/v1")), "base_url");
    assert_eq!(invalid(base().api_key("line\nbreak")), "api_key");
    assert_eq!(invalid(base().header("bad name", "v")), "headers");
    assert_eq!(invalid(base().header("x-ok", "bad\r\nvalue")), "headers");
    assert_eq!(invalid(base().retry(RetryPolicy::default().with_jitter(f64::NAN))), "retry");
    let inverted = RetryPolicy::default().with_initial(Duration::from_secs(10)).with_max(Duration::from_secs(1));
    assert_eq!(invalid(base().retry(inverted)), "retry");
}

#[test]
fn the_http_settings_start_from_the_defaults_and_are_checked_as_one() {
    assert_eq!(DEFAULT_HTTP_SETTINGS.request_timeout, Duration::from_secs(600));
    assert_eq!(DEFAULT_HTTP_SETTINGS.idle_timeout, Duration::from_secs(300));
    assert!(DEFAULT_HTTP_SETTINGS.validate().is_ok());
    let base = || Local::builder().model("m");
    assert_eq!(invalid(base().http_settings(DEFAULT_HTTP_SETTINGS.idle_timeout(Duration::ZERO))), "idle_timeout");
    assert_eq!(invalid(base().http_options(HttpOptions::new().connect_timeout(Duration::ZERO))), "http_options");
    assert!(base().http_settings(DEFAULT_HTTP_SETTINGS.retry(RetryPolicy::none())).build().is_ok());
}

#[test]
fn the_builder_clones_and_its_debug_shows_no_secret() {
    let builder = Local::builder().model("m").api_key("sk-builder-secret").header("x-gateway", "header-secret");
    let debug = format!("{:?}", builder.clone());
    assert!(!debug.contains("sk-builder-secret") && !debug.contains("header-secret"), "{debug}");
    assert!(debug.contains("x-gateway") && debug.contains("\"m\""), "{debug}");
    let clone = builder.clone().model("other");
    assert_eq!(builder.build().unwrap().model(), "m", "a clone's changes stay its own");
    assert_eq!(clone.build().unwrap().model(), "other");
}

#[test]
fn the_secret_stays_out_of_errors() {
    let Err(error) = Local::builder().model("m").api_key("sk-secret\n").build() else { panic!("accepted") };
    assert!(!format!("{error} {error:?}").contains("sk-secret"), "{error:?}");
}

#[tokio::test]
async fn huge_durations_and_extreme_policies_are_accepted_and_do_not_panic() {
    let retry = RetryPolicy::default()
        .with_max_retries(u32::MAX)
        .with_initial(Duration::MAX)
        .with_max(Duration::MAX)
        .with_jitter(1.0);
    let provider = Local::builder()
        .model("m")
        .base_url("http://127.0.0.1:9/v1")
        .request_timeout(Duration::MAX)
        .idle_timeout(Duration::MAX)
        .retry(retry)
        .guards(managed_agents_local::GuardSettings::default().with_max_turns(0).with_corrective_after(u32::MAX))
        .build()
        .expect("huge values mean no limit");
    assert_eq!(provider.model(), "m");

    // And a run with no limit at all works.
    let emulator = LocalEmulator::start(Script::new().turn(ScriptTurn::text("fine"))).await.expect("emulator");
    let provider = Local::builder()
        .model("emulated")
        .base_url(emulator.base_url())
        .request_timeout(Duration::MAX)
        .idle_timeout(Duration::MAX)
        .retry(RetryPolicy::default().with_max(Duration::MAX))
        .build()
        .expect("builds");
    let result = Session::run(&provider, NoTools, SessionOptions::new().prompt("hi")).await.expect("run");
    assert_eq!(result.text, "fine");
}
