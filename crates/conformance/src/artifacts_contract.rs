//! The contract every [`Artifacts`] implementation must pass: Local's directory, Claude's files, AgentCore's
//! session storage, and yours.
//!
//! Call [`run_all`] with a function that gives a fresh, empty session's artifacts:
//!
//! ```
//! use managed_agents_core::artifacts::Artifacts;
//!
//! /// In a test: `check(|| std::future::ready(MyArtifacts::for_a_fresh_session())).await`.
//! async fn check<A: Artifacts>(fresh: impl Fn() -> std::future::Ready<A>) {
//!     managed_agents_conformance::artifacts_contract::run_all(fresh).await;
//! }
//! ```

use std::future::Future;

use managed_agents_core::Error;
use managed_agents_core::artifacts::Artifacts;

/// Runs every check, each on fresh artifacts from `make`.
pub async fn run_all<A, F, Fut>(make: F)
where
    A: Artifacts,
    F: Fn() -> Fut,
    Fut: Future<Output = A>,
{
    put_fetch_list_delete(&make().await).await;
    binary_and_large_contents_survive(&make().await).await;
    names_outside_the_session_are_refused(&make().await).await;
    missing_artifacts_are_typed(&make().await).await;
}

/// Put two artifacts (one nested), list them sorted with sizes, fetch them back, replace one, delete one.
pub async fn put_fetch_list_delete<A: Artifacts + ?Sized>(artifacts: &A) {
    assert!(artifacts.list().await.expect("list").is_empty(), "a fresh session has no artifacts");
    let stored = artifacts.put("report.md", b"# Report\n").await.expect("put");
    assert_eq!(stored.name, "report.md");
    artifacts.put("charts/q3.csv", b"a,b\n1,2\n").await.expect("put nested");
    let listed = artifacts.list().await.expect("list");
    let names: Vec<&str> = listed.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["charts/q3.csv", "report.md"], "sorted by name");
    let report = listed.iter().find(|a| a.name == "report.md").expect("listed");
    assert!(report.size.is_none_or(|size| size == 9), "size {:?}", report.size);
    assert_eq!(artifacts.fetch("report.md").await.expect("fetch"), b"# Report\n");
    artifacts.put("report.md", b"v2").await.expect("replace");
    assert_eq!(artifacts.fetch("report.md").await.expect("fetch"), b"v2");
    assert_eq!(artifacts.list().await.expect("list").len(), 2, "a replacement is not a second artifact");
    artifacts.delete("report.md").await.expect("delete");
    let names: Vec<String> = artifacts.list().await.expect("list").into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["charts/q3.csv"]);
}

/// Every byte value, and a payload of several MiB, come back unchanged.
pub async fn binary_and_large_contents_survive<A: Artifacts + ?Sized>(artifacts: &A) {
    let every_byte: Vec<u8> = (0..=255u8).collect();
    artifacts.put("bytes.bin", &every_byte).await.expect("put binary");
    assert_eq!(artifacts.fetch("bytes.bin").await.expect("fetch"), every_byte);
    let large: Vec<u8> = (0..3 * 1024 * 1024 + 7).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    artifacts.put("large.bin", &large).await.expect("put large");
    assert_eq!(artifacts.fetch("large.bin").await.expect("fetch"), large);
}

/// Names that would reach outside the session are refused before anything is stored.
pub async fn names_outside_the_session_are_refused<A: Artifacts + ?Sized>(artifacts: &A) {
    for name in ["../escape", "/abs", "a/../../b", ""] {
        let put = artifacts.put(name, b"x").await;
        assert!(matches!(put, Err(Error::InvalidSpec { .. })), "put {name:?}: {put:?}");
        let fetched = artifacts.fetch(name).await;
        assert!(matches!(fetched, Err(Error::InvalidSpec { .. })), "fetch {name:?}: {fetched:?}");
    }
    assert!(artifacts.list().await.expect("list").is_empty());
}

/// Fetching or deleting what is not there is [`Error::NotFound`].
pub async fn missing_artifacts_are_typed<A: Artifacts + ?Sized>(artifacts: &A) {
    let fetched = artifacts.fetch("nothing.txt").await;
    assert!(matches!(fetched, Err(Error::NotFound { resource: "artifact", .. })), "{fetched:?}");
    let deleted = artifacts.delete("nothing.txt").await;
    assert!(matches!(deleted, Err(Error::NotFound { resource: "artifact", .. })), "{deleted:?}");
}
