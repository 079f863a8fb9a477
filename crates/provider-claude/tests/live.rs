//! Live test against the real Claude Managed Agents service. Ignored by default: it needs a key, and it
//! provisions (then archives) an agent and an environment.
//!
//! ```text
//! ANTHROPIC_API_KEY=sk-ant-… cargo test -p managed-agents-claude --test live -- --ignored
//! ```

use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_core::{AgentSpec, Provider, Session, SessionOptions, TerminalReason, ToolSchema, tool_fn};

#[tokio::test]
#[ignore = "needs ANTHROPIC_API_KEY and talks to the real service"]
async fn a_hosted_agent_calls_a_local_tool() {
    let provider = ClaudeManagedAgents::from_env().expect("ANTHROPIC_API_KEY must be set");
    let spec = AgentSpec::new("managed_agents_live_test", "Use your tools. Answer in one short sentence.")
        .model("claude-sonnet-4-6")
        .tool(ToolSchema::with_string_params("secret_word", "Returns the secret word for a color", &["color"]));
    let handle = provider.provision(&spec, None).await.expect("provision");
    let handler = tool_fn(|_, input| async move {
        Ok(if input["color"] == "blue" { "kumquat".to_string() } else { "none".to_string() })
    });
    let options = SessionOptions::new()
        .agent(handle.clone())
        .prompt("What is the secret word for blue?")
        .timeout(Duration::from_secs(600));
    let outcome = Session::run(&provider, handler, options).await;
    provider.teardown(&handle).await.expect("teardown");
    let result = outcome.expect("run");
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert!(result.custom_tool_uses.iter().any(|u| u.name == "secret_word"));
    assert!(result.text.to_lowercase().contains("kumquat"), "{}", result.text);
}
