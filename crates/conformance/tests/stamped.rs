//! The `#[test]`-stamping form of the suite still covers every scenario (its `conformance_completeness` test
//! fails otherwise).

managed_agents_conformance::conformance_suite!(managed_agents_conformance::reference::StreamingReferenceBackend);
