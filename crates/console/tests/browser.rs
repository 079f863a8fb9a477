//! The console in a real browser: headless Chromium (Debian's `chromium`) signs in, opens the approvals inbox,
//! approves a waiting call and sees the conversation go on in its timeline; a tool result holding markup shows as
//! text. Driven by `tests/browser/drive.py` over the DevTools protocol; screenshots land in
//! `target/tmp/console-browser/`.
//!
//! The browser is `MANAGED_AGENTS_CHROMIUM`, else `chromium` on the PATH. Without one the test is listed as
//! ignored, with the reason — or fails, with `MANAGED_AGENTS_REQUIRE_BROWSER=1` (as `.ci/run` sets it).

mod support;

use std::path::PathBuf;

use hyper::Method;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Value, json};
use support::{Auth, ConsoleClient, Feed, MARKUP_RESULT, Rig, TOKEN, deploy_script};

/// The browser to drive, if there is one.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MANAGED_AGENTS_CHROMIUM").filter(|path| !path.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("chromium")).find(|candidate| candidate.is_file())
}

fn main() {
    let args = Arguments::from_args();
    let required = std::env::var("MANAGED_AGENTS_REQUIRE_BROWSER").is_ok_and(|value| value == "1");
    let name = "a_person_approves_a_call_in_the_browser_and_sees_the_conversation_go_on";
    let trial = match chromium() {
        Some(browser) => Trial::test(name, move || approve_in_the_browser(browser)),
        None if required => Trial::test(name, || Err("no Chromium (MANAGED_AGENTS_REQUIRE_BROWSER=1)".into())),
        None => Trial::test(name, || Ok(())).with_ignored_flag(true).with_kind("no Chromium: apt-get install chromium"),
    };
    libtest_mimic::run(&args, vec![trial]).exit();
}

fn approve_in_the_browser(browser: PathBuf) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let rig = Rig::start(deploy_script(), false).await;
        let client = ConsoleClient::new(&rig);
        let bearer = Auth::Bearer(TOKEN.to_string());
        let sent = client.post_json("/api/conversations/deploy-42/messages", &bearer, json!({"text": "Ship it"})).await;
        assert_eq!(sent.status, 202, "{}", sent.text());
        let mut feed = Feed::new(client.open(Method::GET, "/api/conversations/deploy-42/events", &bearer, None).await);
        let (requested, _) = feed.until_entry("approval_requested").await;
        let tool_use_id = requested["data"]["tool_use_id"].as_str().expect("a call id").to_string();
        feed.until_status("awaiting_approval").await;

        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-browser");
        let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/drive.py");
        let output = tokio::process::Command::new("python3")
            .arg(driver)
            .arg(&browser)
            .arg(rig.url(""))
            .arg(TOKEN)
            .arg(&tool_use_id)
            .arg(&shots)
            .output()
            .await?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!("the browser run failed: {stderr}").into());
        }
        let seen: Value = serde_json::from_slice(&output.stdout)?;
        assert_eq!(seen["redirected_to"], "/login", "{seen}");
        assert!(seen["inbox_input"].as_str().unwrap_or_default().contains("<i>now</i>"), "{seen}");
        let kinds: Vec<&str> = seen["kinds"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for kind in ["message", "tool_call", "approval_requested", "approval_decided", "tool_result", "reply"] {
            assert!(kinds.contains(&kind), "the timeline shows a {kind}: {kinds:?}");
        }
        assert_eq!(seen["result_text"], MARKUP_RESULT, "the result's markup is shown as text");
        assert_eq!(seen["markup_elements"], 0, "no element was made from a tool's markup");
        assert_eq!(seen["script_ran"], false, "no script from a tool result ran");
        assert_eq!(seen["reply_text"], "Deployed to prod.");
        for shot in ["1-conversations.png", "2-approvals.png", "3-timeline.png"] {
            let size = std::fs::metadata(shots.join(shot))?.len();
            assert!(size > 1000, "{shot} is a real screenshot ({size} bytes)");
        }
        // And the store agrees with what the page showed.
        let record = rig.store.load("deploy-42").await?.expect("the conversation");
        assert_eq!(record.requests, 1);
        Ok(())
    })
}
