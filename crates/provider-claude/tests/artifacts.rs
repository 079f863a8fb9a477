//! Claude artifacts (`ClaudeArtifacts`) against the emulator: the shared contract, outputs the agent wrote,
//! inputs put through the interface, shadowing, downloads the service refuses, and paging.

use managed_agents_claude::artifacts::{INPUTS_DIR, NOT_DOWNLOADABLE, OUTPUTS_DIR, input_path, output_path};
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::{ClaudeArtifacts, ClaudeClient, ClaudeManagedAgents};

/// The beta headers of the wire (wire-claude.md), spelt out: a changed value must show here.
const FILES_BETA: &str = "files-api-2025-04-14";
const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{Script, artifacts_contract};
use managed_agents_core::Error;
use managed_agents_core::artifacts::Artifacts;
use managed_agents_core::http::{Method, StatusCode};
use serde_json::json;

/// An emulator, a provider and its client on it, and an agent and environment to open sessions with.
struct Fixture {
    emulator: ClaudeEmulator,
    provider: ClaudeManagedAgents,
    client: ClaudeClient,
    agent: String,
    environment: String,
}

impl Fixture {
    async fn new(options: EmulatorOptions) -> Self {
        let emulator = ClaudeEmulator::start_with(Script::new(), options).await.unwrap();
        let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
        let client = provider.client().clone();
        let (agent, environment) = emulator.seed_agent();
        Self { emulator, provider, client, agent, environment }
    }

    async fn paged(page_size: usize) -> Self {
        Self::new(EmulatorOptions::default().with_page_size(page_size)).await
    }

    /// A fresh session's artifacts.
    async fn session(&self) -> ClaudeArtifacts {
        new_session(&self.client, &self.agent, &self.environment).await
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.emulator.requests_to(method, path).len()
    }
}

async fn new_session(client: &ClaudeClient, agent: &str, environment: &str) -> ClaudeArtifacts {
    let session = client.create_session(json!({"agent": agent, "environment_id": environment})).await.unwrap();
    ClaudeArtifacts::new(client.clone(), session["id"].as_str().unwrap())
}

fn names(listed: &[managed_agents_core::artifacts::Artifact]) -> Vec<&str> {
    listed.iter().map(|a| a.name.as_str()).collect()
}

async fn run_contract(fx: &Fixture) {
    let (client, agent, environment) = (fx.client.clone(), fx.agent.clone(), fx.environment.clone());
    artifacts_contract::run_all(move || {
        let (client, agent, environment) = (client.clone(), agent.clone(), environment.clone());
        async move { new_session(&client, &agent, &environment).await }
    })
    .await;
}

#[tokio::test]
async fn the_contract_holds_against_the_emulator() {
    run_contract(&Fixture::paged(100).await).await;
}

#[tokio::test]
async fn the_contract_holds_with_one_item_per_page() {
    let fx = Fixture::paged(1).await;
    run_contract(&fx).await;
    let later_pages =
        fx.emulator.requests().iter().filter(|r| r.path.contains("/resources?") && r.path.contains("page=")).count();
    assert!(later_pages > 0, "the inputs' listing went past its first page");
}

#[tokio::test]
async fn outputs_the_agent_wrote_are_listed_and_fetched() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    let report = fx.emulator.write_output(&session, "report.md", b"# Q3\n");
    fx.emulator.write_output(&session, "charts/q3.png", &[0x89, b'P', b'N', b'G', 0, 255]);
    let other = fx.session().await;
    fx.emulator.write_output(other.session_id(), "not-mine.txt", b"other session");

    let listed = artifacts.list().await.unwrap();
    assert_eq!(names(&listed), ["charts/q3.png", "report.md"], "this session's outputs only, sorted");
    assert_eq!(listed[1].id.as_deref(), Some(report.as_str()));
    assert_eq!((listed[1].size, listed[1].content_type.as_deref()), (Some(5), Some("text/markdown")));
    assert_eq!(artifacts.fetch("report.md").await.unwrap(), b"# Q3\n");
    assert_eq!(artifacts.fetch("charts/q3.png").await.unwrap(), [0x89, b'P', b'N', b'G', 0, 255]);
    assert!(matches!(artifacts.fetch("not-mine.txt").await, Err(Error::NotFound { resource: "artifact", .. })));

    let listing = &fx.emulator.requests_to("GET", "/v1/files")[0];
    assert!(listing.path.contains(&format!("scope_id={session}")), "{}", listing.path);
    assert_eq!(listing.beta.as_deref(), Some(format!("{FILES_BETA},{MANAGED_AGENTS_BETA}").as_str()));
    let download = &fx.emulator.requests_to("GET", &format!("/v1/files/{report}/content"))[0];
    assert_eq!(download.beta.as_deref(), Some(format!("{FILES_BETA},{MANAGED_AGENTS_BETA}").as_str()));
}

#[tokio::test]
async fn the_newest_version_of_a_name_wins_by_time_not_by_text() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    // Half a second later, though `…00Z` sorts after `…00.5Z` as text; seeded first, so its id is lower too.
    let newer = fx.emulator.write_output_at(&session, "report.md", b"newer", "2026-07-01T00:00:00.5Z");
    let older = fx.emulator.write_output_at(&session, "report.md", b"old", "2026-07-01T00:00:00Z");

    let listed = artifacts.list().await.unwrap();
    assert_eq!(listed.len(), 1, "one entry per name");
    assert_eq!((listed[0].id.as_deref(), listed[0].size), (Some(newer.as_str()), Some(5)));
    assert_eq!(artifacts.fetch("report.md").await.unwrap(), b"newer");

    artifacts.delete("report.md").await.unwrap();
    assert!(fx.emulator.file(&newer).is_none() && fx.emulator.file(&older).is_some(), "only the newest goes");
    assert_eq!(artifacts.fetch("report.md").await.unwrap(), b"old", "the older version shows again");
    artifacts.delete("report.md").await.unwrap();
    assert!(artifacts.list().await.unwrap().is_empty());
    assert!(matches!(artifacts.delete("report.md").await, Err(Error::NotFound { .. })));
}

#[tokio::test]
async fn inputs_are_mounted_under_the_inputs_directory() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    let stored = artifacts.put("data/in.csv", b"a,b\n").await.unwrap();
    assert_eq!((stored.name.as_str(), stored.size), ("data/in.csv", Some(4)));
    assert_eq!(stored.content_type.as_deref(), Some("text/csv"));

    let resources = fx.emulator.resources(&session);
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0]["type"], "file");
    assert_eq!(resources[0]["file_id"], json!(stored.id));
    assert_eq!(resources[0]["mount_path"], "/mnt/session/inputs/data/in.csv");
    assert_eq!(input_path("data/in.csv").unwrap(), format!("{INPUTS_DIR}/data/in.csv"));
    let file = fx.emulator.file(stored.id.as_deref().unwrap()).unwrap();
    assert_eq!(file["filename"], "in.csv", "the upload is named after the last segment");
    assert!(file.get("scope").is_none_or(|scope| scope.is_null()), "an upload is not a session output");
    let upload = &fx.emulator.requests_to("POST", "/v1/files")[0];
    assert_eq!(upload.beta.as_deref(), Some(FILES_BETA), "uploads carry the files beta");

    // Resources the interface did not mount under the inputs directory are not artifacts.
    let other = fx.client.upload_file("elsewhere.txt", b"x").await.unwrap();
    fx.client.attach_file(&session, other["id"].as_str().unwrap(), Some("/data/elsewhere.txt")).await.unwrap();
    assert_eq!(names(&artifacts.list().await.unwrap()), ["data/in.csv"]);
}

#[tokio::test]
async fn replacing_and_deleting_an_input_cleans_up_its_resource_and_file() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    let first = artifacts.put("in.txt", b"one").await.unwrap().id.unwrap();
    let second = artifacts.put("in.txt", b"two").await.unwrap().id.unwrap();
    assert!(fx.emulator.file(&first).is_none(), "the replaced file is deleted");
    let resources = fx.emulator.resources(&session);
    assert_eq!(resources.len(), 1, "one mount per name");
    assert_eq!(resources[0]["file_id"], json!(second));
    assert_eq!(artifacts.fetch("in.txt").await.unwrap(), b"two");

    artifacts.delete("in.txt").await.unwrap();
    assert!(fx.emulator.file(&second).is_none() && fx.emulator.resources(&session).is_empty());
    assert!(matches!(artifacts.fetch("in.txt").await, Err(Error::NotFound { .. })));
}

#[tokio::test]
async fn an_output_shadows_an_input_of_the_same_name() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    let input = artifacts.put("notes.md", b"from you").await.unwrap().id.unwrap();
    artifacts.put("only-input.md", b"i").await.unwrap();
    let output = fx.emulator.write_output(&session, "notes.md", b"from the agent");

    let listed = artifacts.list().await.unwrap();
    assert_eq!(names(&listed), ["notes.md", "only-input.md"]);
    assert_eq!(listed[0].id.as_deref(), Some(output.as_str()), "the output is the one listed");
    assert_eq!(artifacts.fetch("notes.md").await.unwrap(), b"from the agent");

    // Deleting the visible output uncovers the input.
    artifacts.delete("notes.md").await.unwrap();
    assert!(fx.emulator.file(&output).is_none() && fx.emulator.file(&input).is_some());
    assert_eq!(artifacts.fetch("notes.md").await.unwrap(), b"from you");

    // A put replaces every version of the name, outputs included, so it reads back.
    fx.emulator.write_output(&session, "notes.md", b"agent again");
    fx.emulator.write_output(&session, "notes.md", b"agent once more");
    artifacts.put("notes.md", b"yours now").await.unwrap();
    assert_eq!(artifacts.fetch("notes.md").await.unwrap(), b"yours now");
    let files = fx.client.list_all_files(Some(&session)).await.unwrap();
    assert!(files.is_empty(), "no output of that name is left: {files:?}");
}

#[tokio::test]
async fn a_file_the_service_will_not_serve_is_a_typed_error() {
    let fx = Fixture::new(EmulatorOptions::default().with_uploads_downloadable(false)).await;
    let artifacts = fx.session().await;
    let stored = artifacts.put("in.csv", b"a,b").await.unwrap();
    let refused = artifacts.fetch("in.csv").await;
    let Err(Error::Provider { kind, retryable: false, message, .. }) = refused else { panic!("{refused:?}") };
    assert_eq!(kind.as_deref(), Some(NOT_DOWNLOADABLE));
    assert!(message.contains(stored.id.as_deref().unwrap()), "{message}");
    assert_eq!(fx.count("GET", &format!("/v1/files/{}/content", stored.id.unwrap())), 0, "asked first");
    assert_eq!(names(&artifacts.list().await.unwrap()), ["in.csv"], "it is still listed");

    // An output the listing marks undownloadable is refused from the listing alone.
    let output = fx.emulator.write_output(artifacts.session_id(), "out.txt", b"x");
    assert!(fx.emulator.set_downloadable(&output, false));
    let refused = artifacts.fetch("out.txt").await;
    assert!(
        matches!(&refused, Err(Error::Provider { kind: Some(kind), .. }) if kind == NOT_DOWNLOADABLE),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_download_refused_without_warning_is_an_error_not_a_panic() {
    // The metadata promised a download but the content is refused (the file changed in between): the
    // service's status comes back as it is.
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let output = fx.emulator.write_output(artifacts.session_id(), "out.txt", b"x");
    fx.emulator.fail_requests(Method::GET, &format!("/v1/files/{output}/content"), StatusCode::FORBIDDEN, 1);
    let refused = artifacts.fetch("out.txt").await;
    assert!(matches!(refused, Err(Error::Http { status: 403, .. })), "{refused:?}");
    assert_eq!(artifacts.fetch("out.txt").await.unwrap(), b"x");
}

#[tokio::test]
async fn listings_are_followed_across_pages() {
    let fx = Fixture::paged(2).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    fx.emulator.write_output(&session, "repeat.txt", b"first");
    for n in 0..5 {
        fx.emulator.write_output(&session, &format!("out{n}.txt"), b"o");
    }
    fx.emulator.write_output(&session, "repeat.txt", b"latest");
    for n in 0..5 {
        artifacts.put(&format!("in{n}.txt"), b"i").await.unwrap();
    }
    let before = (fx.count("GET", "/v1/files"), fx.count("GET", &format!("/v1/sessions/{session}/resources")));
    let listed = artifacts.list().await.unwrap();
    let expected: Vec<String> = (0..5)
        .map(|n| format!("in{n}.txt"))
        .chain((0..5).map(|n| format!("out{n}.txt")))
        .chain(["repeat.txt".to_string()])
        .collect();
    assert_eq!(names(&listed), expected);
    let after = (fx.count("GET", "/v1/files"), fx.count("GET", &format!("/v1/sessions/{session}/resources")));
    assert!(after.0 - before.0 >= 3, "7 files in pages of 2: {} requests", after.0 - before.0);
    assert!(after.1 - before.1 >= 3, "5 resources in pages of 2: {} requests", after.1 - before.1);
    // The newest `repeat.txt` is on the first page of a newest-first listing, the oldest on the last.
    assert_eq!(artifacts.fetch("repeat.txt").await.unwrap(), b"latest");
    assert_eq!(artifacts.fetch("in4.txt").await.unwrap(), b"i");
}

#[tokio::test]
async fn a_failed_attach_keeps_the_previous_input_and_discards_the_upload() {
    let fx = Fixture::paged(100).await;
    let artifacts = fx.session().await;
    let session = artifacts.session_id().to_string();
    artifacts.put("in.txt", b"kept").await.unwrap();
    let files_before = fx.client.list_all_files(None).await.unwrap().len();
    let attach = format!("/v1/sessions/{session}/resources");
    fx.emulator.fail_requests(Method::POST, &attach, StatusCode::INTERNAL_SERVER_ERROR, 1);
    let failed = artifacts.put("in.txt", b"lost").await;
    assert!(matches!(failed, Err(Error::Http { status: 500, .. })), "{failed:?}");
    assert_eq!(artifacts.fetch("in.txt").await.unwrap(), b"kept", "the previous input is mounted again");
    assert_eq!(fx.client.list_all_files(None).await.unwrap().len(), files_before, "the upload was deleted");
    assert_eq!(fx.emulator.resources(&session).len(), 1);
}

#[tokio::test]
async fn the_provider_hands_out_a_session_s_artifacts_and_paths_for_prompts() {
    let fx = Fixture::paged(100).await;
    let provider = fx.provider.clone();
    let session = fx.session().await.session_id().to_string();
    let artifacts = provider.artifacts(session.clone());
    assert_eq!(artifacts.session_id(), session);
    fx.emulator.write_output(&session, "summary.txt", b"done");
    assert_eq!(artifacts.fetch("summary.txt").await.unwrap(), b"done");
    assert_eq!(OUTPUTS_DIR, "/mnt/session/outputs");
    assert_eq!(output_path("summary.txt").unwrap(), "/mnt/session/outputs/summary.txt");
    assert!(matches!(output_path("../x"), Err(Error::InvalidSpec { .. })));
    for bad in ["../x", "/etc/passwd"] {
        assert!(matches!(artifacts.put(bad, b"x").await, Err(Error::InvalidSpec { .. })));
        assert!(matches!(artifacts.delete(bad).await, Err(Error::InvalidSpec { .. })));
    }
    assert_eq!(fx.count("POST", "/v1/files"), 0, "nothing was uploaded for a refused name");
}
