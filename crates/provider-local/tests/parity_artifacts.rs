//! Parity with upstream `test/req_managed_agents/artifacts_test.exs` on the Local provider's artifacts, a
//! directory on disk ([`DirectoryArtifacts`], D-40). The dispatch case with upstream's echo store is
//! `crates/core/tests/parity_provision_artifacts.rs`.

use std::sync::Arc;

use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts};
use managed_agents_local::DirectoryArtifacts;

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "managed-agents-parity-artifacts-{label}-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `artifacts_test.exs`: "facade dispatches every verb to the impl with the store".
///
/// Every verb, through `dyn Artifacts`, on a session directory: list what is there, fetch it, put, delete, and a
/// missing artifact is [`Error::NotFound`]. Files the session wrote without the interface are listed too.
#[tokio::test]
async fn every_verb_reaches_the_session_directory() {
    let dir = TempDir::new("dispatch");
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::write(dir.0.join("report.md"), b"# seen").unwrap();
    let artifacts: Arc<dyn Artifacts> = Arc::new(DirectoryArtifacts::new(&dir.0));

    assert_eq!(artifacts.list().await.unwrap(), [Artifact::new("report.md").with_size(6)]);
    assert_eq!(artifacts.fetch("report.md").await.unwrap(), b"# seen");
    assert_eq!(artifacts.put("in.csv", b"a,b").await.unwrap(), Artifact::new("in.csv").with_size(3));
    assert_eq!(std::fs::read(dir.0.join("in.csv")).unwrap(), b"a,b");
    artifacts.delete("report.md").await.unwrap();
    assert!(!dir.0.join("report.md").exists());
    let missing = artifacts.delete("missing").await;
    assert!(
        matches!(&missing, Err(Error::NotFound { resource: "artifact", name, .. }) if name == "missing"),
        "{missing:?}"
    );
    let names: Vec<String> = artifacts.list().await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["in.csv"]);
}

/// The defaults part of `artifacts_test.exs`: "Artifact struct defaults + JSON encoding": the directory knows
/// an artifact's name and size, nothing else (no media type, no store id). The JSON encoding half is missing
/// (`Artifact` does not implement `Serialize`).
#[tokio::test]
async fn a_directory_artifact_has_a_name_and_a_size() {
    let dir = TempDir::new("defaults");
    let artifacts = DirectoryArtifacts::new(&dir.0);
    let stored = artifacts.put("r.md", b"twelve bytes").await.unwrap();
    assert_eq!(stored, Artifact::new("r.md").with_size(12));
    assert_eq!((stored.content_type, stored.id), (None, None));
    assert_eq!(artifacts.list().await.unwrap(), [Artifact::new("r.md").with_size(12)]);
}
