//! Parity with upstream `test/req_managed_agents/artifacts_test.exs`: the session-scoped artifacts
//! interface (D-40).
//!
//! Upstream's facade dispatched `{impl, store}` tuples to a behaviour module; here the interface is the
//! [`Artifacts`] trait, used through `dyn Artifacts` by whoever holds a session's artifacts. The Local
//! provider's directory runs the same verbs in `crates/provider-local/tests/parity_artifacts.rs`.

use std::sync::{Arc, Mutex};

use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, Artifacts, validate_artifact_name};
use managed_agents_core::async_trait;

/// Upstream's `EchoStore`: lists one artifact carrying the store's tag, fetches `bytes-of-<name>`, accepts
/// puts, and has no `missing`.
struct EchoStore {
    tag: &'static str,
    calls: Mutex<Vec<String>>,
}

impl EchoStore {
    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl Artifacts for EchoStore {
    async fn list(&self) -> Result<Vec<Artifact>, Error> {
        self.record("list".into());
        Ok(vec![Artifact::new("seen").with_id(self.tag)])
    }

    async fn fetch(&self, name: &str) -> Result<Vec<u8>, Error> {
        validate_artifact_name(name)?;
        self.record(format!("fetch {name}"));
        Ok(format!("bytes-of-{name}").into_bytes())
    }

    async fn put(&self, name: &str, bytes: &[u8]) -> Result<Artifact, Error> {
        validate_artifact_name(name)?;
        self.record(format!("put {name} {}", String::from_utf8_lossy(bytes)));
        Ok(Artifact::new(name).with_size(bytes.len() as u64))
    }

    async fn delete(&self, name: &str) -> Result<(), Error> {
        validate_artifact_name(name)?;
        self.record(format!("delete {name}"));
        if name == "missing" {
            return Err(Error::not_found("artifact", name));
        }
        Ok(())
    }
}

/// `artifacts_test.exs`: "facade dispatches every verb to the impl with the store".
///
/// Every verb reaches the implementation behind `dyn Artifacts`, with its own state (upstream's store term is
/// the implementation's fields); a missing artifact is [`Error::NotFound`] (upstream `{:error, :not_found}`).
/// Upstream's per-call options have no counterpart: an implementation is built for one session.
#[tokio::test]
async fn every_verb_is_dispatched_to_the_implementation() {
    let echo = Arc::new(EchoStore { tag: "s1", calls: Mutex::default() });
    let artifacts: Arc<dyn Artifacts> = echo.clone();

    assert_eq!(artifacts.list().await.unwrap(), [Artifact::new("seen").with_id("s1")]);
    assert_eq!(artifacts.fetch("report.md").await.unwrap(), b"bytes-of-report.md");
    assert_eq!(artifacts.put("in.csv", b"a,b").await.unwrap(), Artifact::new("in.csv").with_size(3));
    artifacts.delete("report.md").await.unwrap();
    let missing = artifacts.delete("missing").await;
    assert!(
        matches!(&missing, Err(Error::NotFound { resource: "artifact", name, .. }) if name == "missing"),
        "{missing:?}"
    );
    assert_eq!(
        *echo.calls.lock().unwrap(),
        ["list", "fetch report.md", "put in.csv a,b", "delete report.md", "delete missing"]
    );
}

/// `artifacts_test.exs`: "Artifact struct defaults + JSON encoding": an artifact knows only its name until told
/// its size (and media type, and the store's id, upstream's `ref`), and encodes to JSON with what it knows.
#[test]
fn an_artifact_knows_only_its_name_by_default() {
    let bare = Artifact::new("r.md");
    assert_eq!((bare.size, bare.content_type.as_deref(), bare.id.as_deref()), (None, None, None));
    let full = Artifact::new("r.md").with_size(12).with_id("file_1");
    assert_eq!(full.name, "r.md");
    assert_eq!(full.size, Some(12));
    assert_eq!(full.id.as_deref(), Some("file_1"));
    let encoded = serde_json::to_value(&full).unwrap();
    assert_eq!(encoded, serde_json::json!({"name": "r.md", "size": 12, "id": "file_1"}));
    assert_eq!(serde_json::from_value::<Artifact>(encoded).unwrap(), full);
    assert_eq!(serde_json::to_value(&bare).unwrap(), serde_json::json!({"name": "r.md"}));
}
