//! The Claude provider and client against the emulator: request shapes, send policy, faults, reconnects.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_claude::emulator::{ClaudeEmulator, RecordedRequest};
use managed_agents_claude::{ClaudeClient, ClaudeManagedAgents, MANAGED_AGENTS_BETA};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::http::RetryPolicy;
use managed_agents_core::{Error, Notification, ReconnectPolicy, Session, SessionOptions, Terminal};
use serde_json::{Value, json};

fn client(emulator: &ClaudeEmulator) -> ClaudeClient {
    let quick =
        RetryPolicy { initial: Duration::from_millis(5), max: Duration::from_millis(50), ..RetryPolicy::default() };
    ClaudeClient::builder().base_url(emulator.base_url()).api_key("test-key").retry(quick).build().unwrap()
}

fn session_options(emulator: &ClaudeEmulator) -> SessionOptions {
    let (agent, environment) = emulator.seed_agent();
    SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30))
}

fn posts_of_tool_results(requests: &[RecordedRequest]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/events"))
        .flat_map(|r| r.body["events"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "user.custom_tool_result")
        .filter_map(|e| e["custom_tool_use_id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn every_endpoint_sends_the_documented_request() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let client = client(&emulator);
    let agent = client
        .create_agent(json!({"name": "a1", "model": "claude-sonnet-4-6", "system": "s", "tools": []}))
        .await
        .unwrap();
    let agent_id = agent["id"].as_str().unwrap().to_string();
    client.get_agent(&agent_id).await.unwrap();
    client.list_agents(&[("limit", "10".into())]).await.unwrap();
    client.archive_agent(&agent_id).await.unwrap();
    let environment = client
        .create_environment(json!({"name": "e1", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}}))
        .await
        .unwrap();
    let environment_id = environment["id"].as_str().unwrap().to_string();
    let session = client.create_session(json!({"agent": agent_id, "environment_id": environment_id})).await.unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    client.get_session(&session_id).await.unwrap();
    client.list_sessions(&[]).await.unwrap();
    let file = client.upload_file("notes.txt", b"hello files").await.unwrap();
    let file_id = file["id"].as_str().unwrap().to_string();
    assert_eq!(&client.download_file(&file_id).await.unwrap()[..], b"hello files");
    client.list_files(Some(&session_id)).await.unwrap();
    let resource = client.attach_file(&session_id, &file_id, Some("/data/notes.txt")).await.unwrap();
    client.list_resources(&session_id).await.unwrap();
    client.remove_resource(&session_id, resource["id"].as_str().unwrap()).await.unwrap();
    client.delete_file(&file_id).await.unwrap();
    client.archive_session(&session_id).await.unwrap();
    client.delete_session(&session_id).await.unwrap();
    client.archive_environment(&environment_id).await.unwrap();
    client.delete_environment(&environment_id).await.unwrap();

    let requests = emulator.requests();
    let shape: Vec<(String, String)> = requests
        .iter()
        .map(|r| {
            (
                r.method.clone(),
                r.path
                    .replace(&agent_id, "{agent}")
                    .replace(&environment_id, "{env}")
                    .replace(&session_id, "{session}")
                    .replace(&file_id, "{file}"),
            )
        })
        .collect();
    let expected = [
        ("POST", "/v1/agents"),
        ("GET", "/v1/agents/{agent}"),
        ("GET", "/v1/agents?limit=10"),
        ("POST", "/v1/agents/{agent}/archive"),
        ("POST", "/v1/environments"),
        ("POST", "/v1/sessions"),
        ("GET", "/v1/sessions/{session}"),
        ("GET", "/v1/sessions"),
        ("POST", "/v1/files"),
        ("GET", "/v1/files/{file}/content"),
        ("GET", "/v1/files?scope_id={session}"),
        ("POST", "/v1/sessions/{session}/resources"),
        ("GET", "/v1/sessions/{session}/resources"),
    ];
    for (n, (method, path)) in expected.iter().enumerate() {
        assert_eq!((shape[n].0.as_str(), shape[n].1.as_str()), (*method, *path), "request {n}");
    }
    assert_eq!(requests[5].body, json!({"agent": agent_id, "environment_id": environment_id}));
    assert_eq!(requests[11].body, json!({"type": "file", "file_id": file_id, "mount_path": "/data/notes.txt"}));
    let beta = |n: usize| requests[n].beta.clone().unwrap_or_default();
    assert_eq!(beta(0), MANAGED_AGENTS_BETA);
    assert_eq!(beta(8), "files-api-2025-04-14", "uploads carry the files beta only");
    assert_eq!(beta(9), format!("files-api-2025-04-14,{MANAGED_AGENTS_BETA}"), "downloads carry both");
    assert!(shape.iter().any(|(m, p)| m == "DELETE" && p == "/v1/sessions/{session}"));
    assert!(shape.iter().any(|(m, p)| m == "DELETE" && p == "/v1/environments/{env}"));
}

#[tokio::test]
async fn history_is_listed_page_by_page() {
    let script = Script::new().turn(ScriptTurn::chunks(["a", "b"]).with_usage(1, 1));
    let emulator = ClaudeEmulator::with_options(
        script,
        managed_agents_claude::emulator::EmulatorOptions { page_size: 2, ..Default::default() },
    )
    .await
    .unwrap();
    let provider = ClaudeManagedAgents::new(client(&emulator));
    let result = Session::run(&provider, EchoTools, session_options(&emulator)).await.unwrap();
    let session_id = result.session_id.unwrap();
    let all = provider.client().list_all_events(&session_id).await.unwrap();
    assert_eq!(all, emulator.history(&session_id));
    let pages = emulator.requests().iter().filter(|r| r.path.contains("/events?limit=100")).count();
    assert_eq!(pages, all.len().div_ceil(2), "one request per page of 2");
}

#[tokio::test]
async fn a_refused_post_is_retried_only_when_unprocessed() {
    // 529 (overloaded) is refused before processing: retried, honouring retry-after-ms.
    let script = Script::new().turn(
        ScriptTurn::text("ok")
            .with_fault(Fault::HttpError { status: 529, retry_after: Some(Duration::from_millis(30)) }),
    );
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let result =
        Session::run(&ClaudeManagedAgents::new(client(&emulator)), EchoTools, session_options(&emulator)).await;
    assert_eq!(result.unwrap().text, "ok");
    let posts = emulator.requests().iter().filter(|r| r.method == "POST" && r.path.ends_with("/events")).count();
    assert_eq!(posts, 2);

    // A 500 may have been processed: not repeated, surfaced with its body.
    let script =
        Script::new().turn(ScriptTurn::text("never").with_fault(Fault::HttpError { status: 500, retry_after: None }));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let error = Session::run(&ClaudeManagedAgents::new(client(&emulator)), EchoTools, session_options(&emulator))
        .await
        .unwrap_err();
    let Error::Http { status: 500, body, .. } = error.root() else { panic!("{error:?}") };
    assert!(body.contains("injected failure"));
    let posts = emulator.requests().iter().filter(|r| r.method == "POST" && r.path.ends_with("/events")).count();
    assert_eq!(posts, 1, "never posted twice");
}

#[tokio::test]
async fn a_malformed_frame_fails_a_run_with_the_raw_data_kept() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(Fault::MalformedFrame)))
        .await
        .unwrap();
    let error = Session::run(&ClaudeManagedAgents::new(client(&emulator)), EchoTools, session_options(&emulator))
        .await
        .unwrap_err();
    let Error::Malformed { raw, .. } = error.root() else { panic!("{error:?}") };
    assert!(raw.contains("broken"), "{raw}");
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let script =
        Script::new().turn(ScriptTurn::text("late").with_fault(Fault::Stall { duration: Duration::from_secs(30) }));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let client = ClaudeClient::builder()
        .base_url(emulator.base_url())
        .api_key("k")
        .stream_idle_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let error =
        Session::run(&ClaudeManagedAgents::new(client), EchoTools, session_options(&emulator)).await.unwrap_err();
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "{error:?}");
}

/// For a 3-turn tool script, the stream drops after every event position of every turn; each live session
/// reconnects, posts each tool result exactly once (from the emulator's request log) and records no event twice.
#[tokio::test]
async fn a_drop_at_every_position_posts_each_result_once() {
    let turns = || {
        vec![
            ScriptTurn::tool_call("toolu_1", "step", json!({"n": 1})).with_text("one").with_usage(5, 1),
            ScriptTurn::tool_call("toolu_2", "step", json!({"n": 2})).with_usage(5, 1),
            ScriptTurn::text("done").with_usage(5, 1),
        ]
    };
    for dropped in 0..3 {
        // A turn has at most 6 events (running, span start, message, tool use, span end, idle): try 0..=6.
        for position in 0..=6 {
            let mut script = turns();
            script[dropped] = script[dropped].clone().with_fault(Fault::DropStreamAfter { events: position });
            let emulator = ClaudeEmulator::start(script.into_iter().fold(Script::new(), Script::turn)).await.unwrap();
            let provider = Arc::new(ClaudeManagedAgents::new(client(&emulator)));
            let quick = ReconnectPolicy {
                initial: Duration::from_millis(1),
                max: Duration::from_millis(5),
                jitter: 0.0,
                max_attempts: Some(20),
            };
            let options = session_options(&emulator).reconnect_policy(quick);
            let mut session = Session::start(provider, EchoTools, options).await.unwrap();
            let context = format!("turn {dropped}, drop after {position}");
            let result = loop {
                match tokio::time::timeout(Duration::from_secs(30), session.next_notification()).await {
                    Ok(Some(Notification::Finished(result))) => break result,
                    Ok(Some(Notification::Failed(error))) => panic!("{context}: {error}"),
                    Ok(Some(_)) => continue,
                    other => panic!("{context}: {other:?}"),
                }
            };
            assert_eq!(result.terminal, Terminal::EndTurn, "{context}");
            assert_eq!(result.text, "done", "{context}");
            assert_eq!(result.turns, 3, "{context}");
            assert_eq!(result.usage.input_tokens, 15, "{context}: every turn's usage counted once");
            assert_eq!(posts_of_tool_results(&emulator.requests()), ["toolu_1", "toolu_2"], "{context}");
            let mut ids: Vec<&str> = result.events.iter().filter_map(|e| e.id()).collect();
            let total = ids.len();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(ids.len(), total, "{context}: an event recorded twice");
            session.close().await;
        }
    }
}

#[tokio::test]
async fn reattaching_recovers_an_unanswered_call_then_delivers_the_prompt() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("toolu_9", "step", json!({})))
        .turn(ScriptTurn::text("after the tool"))
        .turn(ScriptTurn::text("after the prompt"));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let client = client(&emulator);
    let (agent, environment) = emulator.seed_agent();
    // Someone else started the session and left it waiting on a tool call.
    let session = client.create_session(json!({"agent": agent, "environment_id": environment})).await.unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    client
        .send_events(&session_id, vec![json!({"type": "user.message", "content": [{"type": "text", "text": "go"}]})])
        .await
        .unwrap();
    let waiting = async {
        loop {
            if emulator.history(&session_id).iter().any(|e| e["type"] == "session.status_idle") {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap();
    let options =
        SessionOptions::new().session_id(session_id.clone()).prompt("and now?").timeout(Duration::from_secs(30));
    let result = Session::run(&ClaudeManagedAgents::new(client), EchoTools, options).await.unwrap();
    assert_eq!(result.text, "after the prompt");
    assert_eq!(posts_of_tool_results(&emulator.requests()), ["toolu_9"]);
    let messages: Vec<Value> = emulator
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events") && r.method == "POST")
        .flat_map(|r| r.body["events"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "user.message")
        .collect();
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "and now?");
}

#[tokio::test]
async fn provisioning_creates_agent_and_environment_and_teardown_archives_both() {
    use managed_agents_core::{AgentSpec, Provider, ToolSchema};
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let provider = ClaudeManagedAgents::new(client(&emulator));
    let spec = AgentSpec::new("demo", "be brief")
        .model("anthropic:claude-sonnet-4-6")
        .tool(ToolSchema::with_string_params("lookup", "Looks up", &["key"]));
    let handle = provider.provision(&spec, None).await.unwrap();
    let requests = emulator.requests();
    assert_eq!(
        requests[0].body,
        json!({"name": "demo", "model": "claude-sonnet-4-6", "system": "be brief", "tools": [{"type": "custom",
            "name": "lookup", "description": "Looks up", "input_schema": {"type": "object",
            "properties": {"key": {"type": "string"}}, "required": ["key"]}}]}),
        "the provider prefix is stripped from the model id"
    );
    assert_eq!(
        requests[1].body,
        json!({"name": "demo_env", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}})
    );
    provider.teardown(&handle).await.unwrap();
    let archived: Vec<String> =
        emulator.requests().iter().filter(|r| r.path.ends_with("/archive")).map(|r| r.path.clone()).collect();
    assert_eq!(archived.len(), 2, "{archived:?}");
    let no_model = provider.provision(&AgentSpec::new("x", "y"), None).await.unwrap_err();
    assert!(matches!(no_model, Error::InvalidOption { option: "model", .. }));
}

#[tokio::test]
async fn an_error_frame_after_the_200_is_a_typed_error() {
    let fault = Fault::StreamException { kind: "overloaded_error".into(), message: "Overloaded".into() };
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(fault))).await.unwrap();
    let error = Session::run(&ClaudeManagedAgents::new(client(&emulator)), EchoTools, session_options(&emulator))
        .await
        .unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!((kind.as_deref(), message.as_str(), *retryable), (Some("overloaded_error"), "Overloaded", true));
}
