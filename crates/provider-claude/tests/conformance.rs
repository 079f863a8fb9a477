//! The conformance suite against `ClaudeManagedAgents` through its emulator, with LF framing, and with CRLF
//! framing, comment heartbeats, small history pages and streams that re-send the history after every reconnect.

mod plain {
    managed_agents_conformance::conformance_suite!(managed_agents_claude::emulator::ClaudeBackend::default());
}

mod crlf_heartbeats_small_pages_replays {
    managed_agents_conformance::conformance_suite!(managed_agents_claude::emulator::ClaudeBackend {
        options: managed_agents_claude::emulator::EmulatorOptions {
            crlf: true,
            heartbeats: true,
            page_size: 2,
            replay_history: true,
        },
    });
}
