//! Session artifacts in a directory pass the artifacts contract.

use managed_agents_local::DirectoryArtifacts;

#[tokio::test]
async fn directory_artifacts_meet_the_contract() {
    let base = std::env::temp_dir().join(format!("managed-agents-artifacts-{}", std::process::id()));
    let counter = std::sync::atomic::AtomicU32::new(0);
    managed_agents_conformance::artifacts_contract::run_all(|| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::future::ready(DirectoryArtifacts::new(base.join(format!("session-{n}"))))
    })
    .await;
    // Nothing was written outside the sessions' directories.
    let outside: Vec<_> = std::fs::read_dir(&base).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(outside.iter().all(|name| name.to_string_lossy().starts_with("session-")), "{outside:?}");
    std::fs::remove_dir_all(&base).unwrap();
}
