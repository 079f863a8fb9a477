//! The conformance suite against `BedrockAgentCore` through the real SDK client and the emulator: with distinct
//! content-block indexes (`agentcore`), with reused ones (`agentcore-reused-index`), and with reasoning,
//! server-side tool results and cache usage in every call (`agentcore-reasoning`). Scenarios a backend cannot
//! run show as ignored, with the reason.

use managed_agents_agentcore::emulator::{AgentCoreBackend, EmulatorOptions};
use managed_agents_conformance::Suite;

fn main() -> std::process::ExitCode {
    let reasoning =
        EmulatorOptions::default().with_reasoning(true).with_server_tool_results(true).with_cache_usage(3, 1);
    Suite::new()
        .backend("agentcore", AgentCoreBackend::default())
        .backend(
            "agentcore-reused-index",
            AgentCoreBackend::with_options(EmulatorOptions::default().with_reuse_block_index(true)),
        )
        .backend("agentcore-reasoning", AgentCoreBackend::with_options(reasoning))
        .run()
}
