//! Live test against a real OpenAI-compatible endpoint. Ignored by default: it needs a server and a model that
//! can call tools.
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3:8b \
//!     cargo test -p managed-agents-local --test live -- --ignored
//! ```
//!
//! (`OPENAI_API_KEY` as the endpoint needs.)

use std::time::Duration;

use managed_agents_core::{Session, SessionOptions, TerminalReason, ToolSchema, tool_fn};
use managed_agents_local::LocalBuilder;

#[tokio::test]
#[ignore = "needs OPENAI_BASE_URL and OPENAI_MODEL pointing at a real tool-calling model"]
async fn a_real_model_calls_a_local_tool() {
    let provider = LocalBuilder::from_env()
        .system_prompt("Use the tools you are given. Answer in one short sentence.")
        .tool(ToolSchema::with_string_params("secret_word", "Returns the secret word for a color", &["color"]))
        .build()
        .expect("OPENAI_MODEL (and OPENAI_BASE_URL) must be set");
    let handler = tool_fn(|_, input| async move {
        Ok(if input["color"] == "blue" { "kumquat".to_string() } else { "none".to_string() })
    });
    let options = SessionOptions::new().prompt("What is the secret word for blue?").timeout(Duration::from_secs(300));
    let result = Session::run(&provider, handler, options).await.expect("run");
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert!(result.custom_tool_uses.iter().any(|u| u.name == "secret_word"), "{result:?}");
    assert!(result.text.to_lowercase().contains("kumquat"), "{}", result.text);
}
