//! The conformance suite against `Local` through its emulator, streaming (`local`) and not (`local-non-streaming`).
//! Scenarios a backend cannot run show as ignored, with the reason.

use managed_agents_conformance::Suite;
use managed_agents_local::emulator::LocalBackend;

fn main() -> std::process::ExitCode {
    Suite::new()
        .backend("local", LocalBackend::streaming())
        .backend("local-non-streaming", LocalBackend::non_streaming())
        .run()
}
