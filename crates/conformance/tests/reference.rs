//! The whole suite against both reference providers.

mod streaming {
    managed_agents_conformance::conformance_suite!(managed_agents_conformance::reference::StreamingReferenceBackend);
}

mod request_response {
    managed_agents_conformance::conformance_suite!(
        managed_agents_conformance::reference::RequestResponseReferenceBackend
    );
}
