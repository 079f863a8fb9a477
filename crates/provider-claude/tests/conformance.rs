//! The conformance suite against `ClaudeManagedAgents` through its emulator, with LF framing and with CRLF
//! framing, comment heartbeats and small history pages.

mod plain {
    managed_agents_conformance::conformance_suite!(managed_agents_claude::emulator::ClaudeBackend::default());
}

mod crlf_heartbeats_small_pages {
    managed_agents_conformance::conformance_suite!(managed_agents_claude::emulator::ClaudeBackend {
        options: managed_agents_claude::emulator::EmulatorOptions { crlf: true, heartbeats: true, page_size: 2 },
    });
}
