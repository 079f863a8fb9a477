//! The conformance suite against `ClaudeManagedAgents` through its emulator, with LF framing (`claude`), and with
//! CRLF framing, comment heartbeats, small history pages and streams that re-send the history after every
//! reconnect (`claude-crlf-replays`). Scenarios a backend cannot run show as ignored, with the reason.

use managed_agents_claude::emulator::{ClaudeBackend, EmulatorOptions};
use managed_agents_conformance::Suite;

fn main() -> std::process::ExitCode {
    let awkward =
        EmulatorOptions::default().with_crlf(true).with_heartbeats(true).with_page_size(2).with_replay_history(true);
    Suite::new()
        .backend("claude", ClaudeBackend::default())
        .backend("claude-crlf-replays", ClaudeBackend::with_options(awkward))
        .run()
}
