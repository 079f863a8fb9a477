//! The conformance suite against `Local` through its emulator, streaming and not.

mod streaming {
    managed_agents_conformance::conformance_suite!(managed_agents_local::emulator::LocalBackend::streaming());
}

mod non_streaming {
    managed_agents_conformance::conformance_suite!(managed_agents_local::emulator::LocalBackend::non_streaming());
}
