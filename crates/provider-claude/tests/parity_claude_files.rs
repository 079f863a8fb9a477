//! Parity with upstream `test/req_managed_agents/artifacts/claude_files_test.exs`: the artifacts store over
//! Claude's files. Upstream replaced the client with a stub that answered every call with canned data; here the
//! emulator holds the same files (seeded as outputs of the session, with upstream's timestamps) and its request
//! log shows what was called.
//!
//! Where the design differs on purpose (decision: artifacts are outputs *and* inputs), the test says so: inputs
//! are mounted at `/mnt/session/inputs/<name>` rather than upstream's `/data/<name>`, there is no per-call mount
//! path, and a listing has one entry per name.

use managed_agents_claude::artifacts::{OUTPUTS_DIR, output_path};
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_claude::{ClaudeArtifacts, ClaudeClient, ClaudeManagedAgents};
use managed_agents_conformance::Script;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_core::Error;
use managed_agents_core::artifacts::Artifacts;
use managed_agents_core::http::StatusCode;
use managed_agents_core::http::server::{LoopbackServer, json_response};
use serde_json::json;

fn client(base_url: String) -> ClaudeClient {
    let provider = ClaudeManagedAgents::builder().base_url(base_url).api_key("test-key").retry(TEST_RETRY).build();
    provider.unwrap().client().clone()
}

/// An emulator with one session holding upstream's three files: `report.md` twice (`file_old` of
/// 2026-07-01, 10 bytes; `file_new` of 2026-07-03, 20 bytes) and `data.csv` (2026-07-02, 5 bytes).
struct Upstream {
    emulator: ClaudeEmulator,
    store: ClaudeArtifacts,
    file_old: String,
    file_new: String,
    file_z: String,
}

impl Upstream {
    async fn new() -> Self {
        let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
        let client = client(emulator.base_url());
        let (agent, environment) = emulator.seed_agent();
        let session = client.create_session(json!({"agent": agent, "environment_id": environment})).await.unwrap();
        let session = session["id"].as_str().unwrap().to_string();
        let file_old = emulator.write_output_at(&session, "report.md", b"0123456789", "2026-07-01T00:00:00Z");
        let file_new = emulator.write_output_at(&session, "report.md", b"0123456789abcdefghij", "2026-07-03T00:00:00Z");
        let file_z = emulator.write_output_at(&session, "data.csv", b"a,b\n1", "2026-07-02T00:00:00Z");
        Self { store: ClaudeArtifacts::new(client, session), emulator, file_old, file_new, file_z }
    }
}

/// A server that answers every request with `200 {}`: a list body without `data`.
async fn no_data_server() -> LoopbackServer {
    LoopbackServer::start(|_| async { json_response(StatusCode::OK, &json!({})) }).await.unwrap()
}

/// claude_files_test.exs: "list scopes by session and maps to Artifact structs". By decision the listing has
/// one entry per name (the newest), so upstream's three files are two artifacts here; and it is sorted by name.
#[tokio::test]
async fn list_scopes_by_session_and_maps_files_to_artifacts() {
    let up = Upstream::new().await;
    let listed = up.store.list().await.unwrap();
    let listing = &up.emulator.requests_to("GET", "/v1/files")[0];
    assert!(listing.path.contains(&format!("scope_id={}", up.store.session_id())), "{}", listing.path);
    let mapped: Vec<(&str, Option<&str>, Option<u64>)> =
        listed.iter().map(|a| (a.name.as_str(), a.id.as_deref(), a.size)).collect();
    assert_eq!(
        mapped,
        [("data.csv", Some(up.file_z.as_str()), Some(5)), ("report.md", Some(up.file_new.as_str()), Some(20))]
    );
}

/// claude_files_test.exs: "fetch downloads the NEWEST match by created_at".
#[tokio::test]
async fn fetch_downloads_the_newest_match_by_created_at() {
    let up = Upstream::new().await;
    assert_eq!(up.store.fetch("report.md").await.unwrap(), b"0123456789abcdefghij");
    assert_eq!(up.emulator.requests_to("GET", &format!("/v1/files/{}/content", up.file_new)).len(), 1);
    assert!(up.emulator.requests_to("GET", &format!("/v1/files/{}/content", up.file_old)).is_empty());
}

/// claude_files_test.exs: "fetch of a missing name is :not_found" (here the typed `Error::NotFound`).
#[tokio::test]
async fn fetch_of_a_missing_name_is_not_found() {
    let up = Upstream::new().await;
    let missing = up.store.fetch("nope.txt").await;
    assert!(
        matches!(&missing, Err(Error::NotFound { resource: "artifact", name, .. }) if name == "nope.txt"),
        "{missing:?}"
    );
}

/// claude_files_test.exs: "delete removes the newest match".
#[tokio::test]
async fn delete_removes_the_newest_match() {
    let up = Upstream::new().await;
    up.store.delete("report.md").await.unwrap();
    assert_eq!(up.emulator.requests_to("DELETE", &format!("/v1/files/{}", up.file_new)).len(), 1);
    assert!(up.emulator.file(&up.file_new).is_none());
    assert!(up.emulator.file(&up.file_old).is_some(), "only the newest is deleted");
}

/// claude_files_test.exs: "put uploads then attaches at the default mount path". By decision the default is
/// `/mnt/session/inputs/<name>` (upstream: `/data/<name>`), derived from a validated name; the upload's
/// `purpose` form field is the client's (`user_data`; upstream sent `agent`).
#[tokio::test]
async fn put_uploads_then_attaches_at_the_inputs_mount_path() {
    let up = Upstream::new().await;
    let stored = up.store.put("in.csv", b"a,b").await.unwrap();
    let requests = up.emulator.requests();
    let upload = requests.iter().position(|r| r.method == "POST" && r.path == "/v1/files").expect("uploaded");
    let attach_path = format!("/v1/sessions/{}/resources", up.store.session_id());
    let attach = requests.iter().position(|r| r.method == "POST" && r.path == attach_path).expect("attached");
    assert!(upload < attach, "upload, then attach");
    let file_id = stored.id.unwrap();
    assert_eq!(
        requests[attach].body,
        json!({"type": "file", "file_id": file_id, "mount_path": "/mnt/session/inputs/in.csv"})
    );
    assert_eq!(up.emulator.file(&file_id).unwrap()["filename"], "in.csv");
}

/// claude_files_test.exs: "put honors a custom mount_path". Not ported by decision: the mount path is derived
/// from the name (so `list` can find inputs again and no name can escape the inputs directory); a nested name
/// is how a caller chooses where below it the file lands, and a name that would leave it is refused.
#[tokio::test]
async fn the_mount_path_follows_the_name_and_cannot_escape() {
    let up = Upstream::new().await;
    up.store.put("inputs/in.csv", b"a,b").await.unwrap();
    let resources = up.emulator.resources(up.store.session_id());
    assert_eq!(resources[0]["mount_path"], "/mnt/session/inputs/inputs/in.csv");
    let escape = up.store.put("../data/in.csv", b"a,b").await;
    assert!(matches!(escape, Err(Error::InvalidSpec { .. })), "{escape:?}");
}

/// claude_files_test.exs: "list normalizes a body without \"data\" to an error" (here `Error::Malformed`).
#[tokio::test]
async fn list_of_a_body_without_data_is_an_error() {
    let server = no_data_server().await;
    let store = ClaudeArtifacts::new(client(server.base_url()), "sess_1");
    let listed = store.list().await;
    assert!(matches!(listed, Err(Error::Malformed { .. })), "{listed:?}");
}

/// claude_files_test.exs: "fetch normalizes a body without \"data\" to an error (via newest/3)".
#[tokio::test]
async fn fetch_with_a_listing_without_data_is_an_error() {
    let server = no_data_server().await;
    let store = ClaudeArtifacts::new(client(server.base_url()), "sess_1");
    let fetched = store.fetch("report.md").await;
    assert!(matches!(fetched, Err(Error::Malformed { .. })), "{fetched:?}");
}

/// claude_files_test.exs: "outputs_dir/0 is the single source of truth for the sandbox outputs path".
#[test]
fn outputs_dir_is_the_sandbox_outputs_path() {
    assert_eq!(OUTPUTS_DIR, "/mnt/session/outputs");
}

/// claude_files_test.exs: "output_path/1 builds the absolute deliverable path" (the name is validated here).
#[test]
fn output_path_builds_the_absolute_deliverable_path() {
    assert_eq!(output_path("report.md").unwrap(), "/mnt/session/outputs/report.md");
}
