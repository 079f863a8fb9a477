//! The whole suite against both reference providers, as one harness: tests are named `<backend>::<scenario>`,
//! and scenarios a backend cannot run are reported as ignored with the reason.

use managed_agents_conformance::Suite;
use managed_agents_conformance::reference::{RequestResponseReferenceBackend, StreamingReferenceBackend};

fn main() -> std::process::ExitCode {
    Suite::new()
        .backend("streaming", StreamingReferenceBackend)
        .backend("request_response", RequestResponseReferenceBackend)
        .run()
}
