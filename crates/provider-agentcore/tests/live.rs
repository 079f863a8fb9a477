//! Live test against a real AgentCore harness. Ignored by default: it needs AWS credentials (the standard chain),
//! a region, and a harness with an `inline_function` tool `secret_word` taking `{"color": string}`.
//!
//! ```text
//! AWS_REGION=us-west-2 AGENTCORE_HARNESS_ARN=arn:aws:bedrock-agentcore:…:harness/… \
//!     cargo test -p managed-agents-agentcore --test live -- --ignored
//! ```

use std::time::Duration;

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_core::{Session, SessionOptions, TerminalReason, tool_fn};

#[tokio::test]
#[ignore = "needs AWS credentials and AGENTCORE_HARNESS_ARN"]
async fn a_harness_calls_a_local_tool() {
    let harness = std::env::var("AGENTCORE_HARNESS_ARN").expect("AGENTCORE_HARNESS_ARN must be set");
    let provider = BedrockAgentCore::from_env().await.expect("an AWS region");
    let handler = tool_fn(|_, input| async move {
        Ok(if input["color"] == "blue" { "kumquat".to_string() } else { "none".to_string() })
    });
    let options = SessionOptions::new()
        .agent_id(harness)
        .prompt("What is the secret word for blue? Use your tool.")
        .timeout(Duration::from_secs(600));
    let result = Session::run(&provider, handler, options).await.expect("run");
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert!(result.text.to_lowercase().contains("kumquat"), "{}", result.text);
}
