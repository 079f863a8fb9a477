//! The conformance suite against `BedrockAgentCore` through the real SDK client and the emulator, with distinct
//! and with reused content-block indexes.

mod plain {
    managed_agents_conformance::conformance_suite!(managed_agents_agentcore::emulator::AgentCoreBackend::default());
}

mod reused_block_index {
    managed_agents_conformance::conformance_suite!(managed_agents_agentcore::emulator::AgentCoreBackend {
        options: managed_agents_agentcore::emulator::EmulatorOptions { reuse_block_index: true, ..Default::default() },
    });
}
