//! The shell's environment: the worker's `ANTHROPIC_*` secrets and the names given to `env_remove` never reach
//! it. The variables are set on a child run of this same test binary (so nothing here changes the
//! environment of a running test process), which checks what the shell sees.

use std::process::Command;

use managed_agents_toolset::Toolset;
use serde_json::json;

/// Set on the child run: it then does the checking.
const PROBE: &str = "TOOLSET_ENV_PROBE";

async fn env_of_shell(toolset: &Toolset) -> String {
    let env = toolset.call("bash", &json!({"command": "env"})).await;
    assert!(!env.is_error, "{env:?}");
    env.text
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_and_removed_variables_do_not_reach_the_shell() {
    if std::env::var_os(PROBE).is_none() {
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "secrets_and_removed_variables_do_not_reach_the_shell", "--nocapture"])
            .env(PROBE, "1")
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .env("ANTHROPIC_ENVIRONMENT_KEY", "env-key-test")
            .env("ANTHROPIC_WORK_SECRET", "work-secret-test")
            .env("ANTHROPIC_SOMETHING_NEW", "other-test")
            .env("MY_TOOLSET_SECRET", "custom-secret-test")
            .env("MY_TOOLSET_VISIBLE", "visible-test")
            .output()
            .unwrap();
        let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "the child run failed:\n{report}");
        assert!(report.contains("1 passed"), "the child run did not run the check:\n{report}");
        return;
    }
    // The child run: the variables are in this process's environment.
    assert_eq!(std::env::var("ANTHROPIC_API_KEY").as_deref(), Ok("sk-ant-test"));
    let dir = tempfile::tempdir().unwrap();
    let toolset = Toolset::builder(dir.path()).env_remove("MY_TOOLSET_SECRET").build().unwrap();
    let env = env_of_shell(&toolset).await;
    for secret in ["sk-ant-test", "env-key-test", "work-secret-test", "other-test", "custom-secret-test"] {
        assert!(!env.contains(secret), "{secret} reached the shell:\n{env}");
    }
    assert!(!env.lines().any(|line| line.starts_with("ANTHROPIC_")), "{env}");
    assert!(env.lines().any(|line| line == "MY_TOOLSET_VISIBLE=visible-test"), "{env}");
    assert!(env.lines().any(|line| line == "TERM=dumb"), "{env}");
}

#[tokio::test(flavor = "multi_thread")]
async fn env_clear_passes_only_the_given_variables() {
    let dir = tempfile::tempdir().unwrap();
    let toolset = Toolset::builder(dir.path()).env_clear().env("ONLY_THIS", "1").build().unwrap();
    let env = env_of_shell(&toolset).await;
    let mut names: Vec<&str> = env.lines().filter_map(|line| line.split_once('=').map(|(name, _)| name)).collect();
    names.sort_unstable();
    // Besides ours, only what bash itself exports (PWD, SHLVL, `_`) and the prompt settings.
    for name in &names {
        assert!(["ONLY_THIS", "PS1", "PS2", "TERM", "PWD", "OLDPWD", "SHLVL", "_"].contains(name), "{name} in:\n{env}");
    }
    assert!(names.contains(&"ONLY_THIS"));
}
