//! The Local provider against `stubllm` 0.1.5 (from PyPI), a third-party OpenAI-compatible mock server, as a
//! user would point it there. Ignored by default: it needs that server running on loopback with this crate's
//! fixtures (`tests/fixtures/stubllm.yaml`, which keep no state, so the test can run any number of times):
//!
//! ```text
//! python3 -m venv /tmp/stubllm-venv && /tmp/stubllm-venv/bin/pip install stubllm==0.1.5
//! /tmp/stubllm-venv/bin/stubllm serve --host 127.0.0.1 --port 18765 \
//!     --fixture-file crates/provider-local/tests/fixtures/stubllm.yaml &
//! STUBLLM_BASE_URL=http://127.0.0.1:18765/v1 cargo test -p managed-agents-local --test stubllm -- --ignored
//! ```
//!
//! What that server streams (seen with 0.1.5): each tool call whole in one chunk, every one at `index` 0, no
//! chunk with a finish reason, no usage, then `data: [DONE]`; text in chunks whose last carries
//! `finish_reason: "stop"`, then `[DONE]`; a whole completion always has its finish reason. It ignores
//! `stream_options`. The emulator plays the first shape as
//! `StreamEnd::DoneWithoutFinishReason` (tests/stream_end.rs).

use std::time::Duration;

use managed_agents_core::{Session, SessionOptions, TerminalReason, ToolSchema, tool_fn};
use managed_agents_local::Local;
use serde_json::json;

#[tokio::test]
#[ignore = "needs stubllm 0.1.5 serving tests/fixtures/stubllm.yaml at STUBLLM_BASE_URL (see the file's doc)"]
async fn stubllms_streamed_tool_calls_and_text_make_a_completed_run() {
    // Streamed, the tool-call turn has no finish reason: it is inferred.
    run_against_stubllm(true, json!(true)).await;
}

#[tokio::test]
#[ignore = "needs stubllm 0.1.5 serving tests/fixtures/stubllm.yaml at STUBLLM_BASE_URL (see the file's doc)"]
async fn stubllms_whole_completions_make_a_completed_run() {
    // A whole completion carries `finish_reason: "tool_calls"`.
    run_against_stubllm(false, json!(false)).await;
}

/// One run of the fixtures' exchange; `tool_turn_inferred` is what the tool-call turn's record should say.
async fn run_against_stubllm(stream: bool, tool_turn_inferred: serde_json::Value) {
    let base_url = std::env::var("STUBLLM_BASE_URL").expect("STUBLLM_BASE_URL, e.g. http://127.0.0.1:18765/v1");
    let provider = Local::builder()
        .base_url(base_url)
        .model("stub")
        .stream(stream)
        .tool(ToolSchema::with_string_params("secret_word", "Returns the secret word for a color", &["color"]))
        .build()
        .expect("provider");
    let handler = tool_fn(|_, input| async move {
        Ok(match input["color"].as_str() {
            Some("blue") => "kumquat".to_string(),
            Some("red") => "quince".to_string(),
            _ => "none".to_string(),
        })
    });
    let options =
        SessionOptions::new().prompt("What are the secret words for blue and red?").timeout(Duration::from_secs(30));
    let result = Session::run(&provider, handler, options).await.expect("the run completes");
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    let calls: Vec<_> = result.custom_tool_uses.iter().map(|u| (u.id.as_str(), u.input.clone())).collect();
    assert_eq!(
        calls,
        vec![("call_stub_blue", json!({"color": "blue"})), ("call_stub_red", json!({"color": "red"}))],
        "two calls, though both came at index 0"
    );
    assert_eq!(result.text, "The secret words are kumquat and quince.");
    let finishes: Vec<_> = result
        .events
        .iter()
        .filter(|e| e.kind() == Some("local.model_response"))
        .map(|e| (e.get("finish_reason").cloned().unwrap(), e.get("finish_reason_inferred").cloned().unwrap()))
        .collect();
    assert_eq!(
        finishes,
        vec![(json!("tool_calls"), tool_turn_inferred), (json!("stop"), json!(false))],
        "the text turn's finish reason is stubllm's own"
    );
}
