//! The Claude provider and client against the emulator: request shapes, send policy, faults, reconnects.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions, MALFORMED_FRAME_MARKER, RecordedRequest};
use managed_agents_claude::{ClaudeClient, ClaudeManagedAgents, MAX_CONSECUTIVE_MALFORMED_FRAMES};

/// The beta header of the wire (wire-claude.md), spelt out: a changed value must show here.
const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{Error, Notification, ReconnectPolicy, Session, SessionOptions, Terminal};
use serde_json::{Value, json};

fn provider(emulator: &ClaudeEmulator) -> ClaudeManagedAgents {
    emulator.provider_builder().retry(TEST_RETRY).build().unwrap()
}

fn client(emulator: &ClaudeEmulator) -> ClaudeClient {
    provider(emulator).client().clone()
}

fn session_options(emulator: &ClaudeEmulator) -> SessionOptions {
    let (agent, environment) = emulator.seed_agent();
    SessionOptions::new().agent_id(agent).environment_id(environment).timeout(Duration::from_secs(30))
}

/// Options for a run that fails when its stream fails, instead of reconnecting: for tests of how a failure
/// surfaces.
fn failing_options(emulator: &ClaudeEmulator) -> SessionOptions {
    session_options(emulator).reconnect_runs(false)
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
    let emulator = ClaudeEmulator::start_with(script, EmulatorOptions::default().with_page_size(2)).await.unwrap();
    let provider = provider(&emulator);
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
    let result = Session::run(&provider(&emulator), EchoTools, session_options(&emulator)).await;
    assert_eq!(result.unwrap().text, "ok");
    let posts = emulator.requests().iter().filter(|r| r.method == "POST" && r.path.ends_with("/events")).count();
    assert_eq!(posts, 2);

    // A 500 may have been processed: not repeated, surfaced with its body.
    let script =
        Script::new().turn(ScriptTurn::text("never").with_fault(Fault::HttpError { status: 500, retry_after: None }));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, failing_options(&emulator)).await.unwrap_err();
    let Error::Http { status: 500, body, .. } = error.root() else { panic!("{error:?}") };
    assert!(body.contains("injected failure"));
    let posts = emulator.requests().iter().filter(|r| r.method == "POST" && r.path.ends_with("/events")).count();
    assert_eq!(posts, 1, "never posted twice");
}

fn ids(events: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = events.iter().filter_map(|e| e["id"].as_str().map(str::to_string)).collect();
    ids.sort_unstable();
    ids
}

/// One undecodable frame in the middle of each turn is skipped: the run completes on its one stream (no
/// reconnect: they are off, and the stream is opened once) and records every event the server sent exactly once.
#[tokio::test]
async fn an_undecodable_frame_mid_turn_is_skipped() {
    let script = Script::new()
        .turn(
            ScriptTurn::tool_call("toolu_1", "step", json!({"n": 1}))
                .with_text("one")
                .with_fault(Fault::MalformedFrame),
        )
        .turn(ScriptTurn::text("done").with_usage(3, 2).with_fault(Fault::MalformedFrame));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let result = Session::run(&provider(&emulator), EchoTools, failing_options(&emulator)).await.unwrap();
    assert_eq!((result.terminal, result.text.as_str(), result.turns), (Terminal::EndTurn, "done", 2));
    assert_eq!(posts_of_tool_results(&emulator.requests()), ["toolu_1"]);
    let streams = emulator.requests().iter().filter(|r| r.path.contains("/events/stream")).count();
    assert_eq!(streams, 1, "the stream was never reopened");
    let recorded: Vec<Value> = result.events.iter().map(|e| e.to_value()).collect();
    let history = emulator.history(result.session_id.as_deref().unwrap());
    assert_eq!(ids(&recorded), ids(&history), "every event the server sent, each exactly once");
}

/// Up to `MAX_CONSECUTIVE_MALFORMED_FRAMES` undecodable frames in a row are skipped; one more fails the stream
/// with a typed error whose message does not carry the frame's content: a run that does not reconnect fails
/// with it, one that does recovers the turn from the history.
#[tokio::test]
async fn more_undecodable_frames_in_a_row_than_the_bound_fail_the_stream() {
    let run = |count: usize, reconnect: bool| async move {
        let script = Script::new().turn(ScriptTurn::text("x").with_fault(Fault::MalformedFrame));
        let options = EmulatorOptions::default().with_malformed_frames(count);
        let emulator = ClaudeEmulator::start_with(script, options).await.unwrap();
        let options = session_options(&emulator).reconnect_runs(reconnect);
        Session::run(&provider(&emulator), EchoTools, options).await
    };
    let bound = MAX_CONSECUTIVE_MALFORMED_FRAMES as usize;
    assert_eq!(run(bound, false).await.unwrap().text, "x", "{bound} bad frames in a row are skipped");
    assert_eq!(run(bound + 1, true).await.unwrap().text, "x", "a reconnect recovers the turn");
    let error = run(bound + 1, false).await.unwrap_err();
    let Error::Malformed { what, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!(*what, "SSE event");
    let shown = error.to_string();
    assert!(!shown.contains(MALFORMED_FRAME_MARKER), "raw data in the error's Display: {shown}");
    assert!(shown.contains(&format!("{} undecodable frames in a row", bound + 1)), "{shown}");
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let script =
        Script::new().turn(ScriptTurn::text("late").with_fault(Fault::Stall { duration: Duration::from_secs(30) }));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let provider = emulator.provider_builder().idle_timeout(Duration::from_millis(200)).build().unwrap();
    let error = Session::run(&provider, EchoTools, failing_options(&emulator)).await.unwrap_err();
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
            let provider = Arc::new(provider(&emulator));
            let quick = ReconnectPolicy::default()
                .with_initial(Duration::from_millis(1))
                .with_max(Duration::from_millis(5))
                .with_jitter(0.0)
                .with_max_attempts(Some(20));
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
    let result = Session::run(&provider(&emulator), EchoTools, options).await.unwrap();
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
    let provider = provider(&emulator);
    let spec = AgentSpec::new("demo", "be brief")
        .model("anthropic:claude-sonnet-4-6")
        .tool(ToolSchema::with_string_params("lookup", "Looks up", &["key"]));
    let handle = provider.provision(&spec, None).await.unwrap();
    let requests = emulator.requests();
    assert_eq!(
        requests[0].body,
        json!({"name": format!("demo_{}", spec.digest().short()), "model": "claude-sonnet-4-6", "system": "be brief",
            "tools": [{"type": "custom",
            "name": "lookup", "description": "Looks up", "input_schema": {"type": "object",
            "properties": {"key": {"type": "string"}}, "required": ["key"]}}]}),
        "the provider prefix is stripped from the model id"
    );
    assert_eq!(
        requests[1].body,
        json!({"name": format!("demo_env_{}", managed_agents_core::EnvironmentSpec::new().digest().short()),
            "config": {"type": "cloud", "networking": {"type": "unrestricted"}}})
    );
    provider.teardown(&handle).await.unwrap();
    let archived: Vec<String> =
        emulator.requests().iter().filter(|r| r.path.ends_with("/archive")).map(|r| r.path.clone()).collect();
    assert_eq!(archived.len(), 2, "{archived:?}");
    let no_model = provider.provision(&AgentSpec::new("x", "y"), None).await.unwrap_err();
    assert!(matches!(no_model, Error::InvalidSpec { what: "agent spec", .. }), "{no_model:?}");
}

#[tokio::test]
async fn an_error_frame_after_the_200_is_a_typed_error() {
    let fault = Fault::StreamException { kind: "overloaded_error".into(), message: "Overloaded".into() };
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(fault))).await.unwrap();
    let error = Session::run(&provider(&emulator), EchoTools, failing_options(&emulator)).await.unwrap_err();
    let Error::Provider { kind, message, retryable, .. } = error.root() else { panic!("{error:?}") };
    assert_eq!((kind.as_deref(), message.as_str(), *retryable), (Some("overloaded_error"), "Overloaded", true));
}

/// What the official SDKs rely on: a bearer token is a credential as well as `x-api-key` (and no credential is
/// a 401); records carry their required fields; event lists honour `types[]`, `order` and `created_at[…]`.
#[tokio::test]
async fn the_emulator_answers_as_the_sdks_expect() {
    use managed_agents_core::http::{HttpClient, Request, RequestBody};
    let script = Script::new().turn(ScriptTurn::tool_call("toolu_1", "step", json!({}))).turn(ScriptTurn::text("hi"));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let http = HttpClient::new(Duration::from_secs(5)).unwrap();
    let status = |credential: Option<(&'static str, &'static str)>| {
        let mut request = Request::get(format!("{}/v1/agents?beta=true", emulator.base_url()))
            .header("anthropic-version", "2023-06-01")
            .header("anthropic-beta", MANAGED_AGENTS_BETA);
        if let Some((name, value)) = credential {
            request = request.header(name, value);
        }
        let request = request.body(RequestBody::default()).unwrap();
        let http = http.clone();
        async move { http.send(request, Duration::from_secs(5)).await.unwrap().status().as_u16() }
    };
    assert_eq!(status(Some(("authorization", "Bearer a-token"))).await, 200);
    assert_eq!(status(Some(("x-api-key", "a-key"))).await, 200);
    assert_eq!(status(Some(("authorization", "Bearer "))).await, 401);
    assert_eq!(status(None).await, 401);

    let client = client(&emulator);
    let agent = client.create_agent(json!({"name": "a", "model": "claude-sonnet-4-6"})).await.unwrap();
    for field in ["created_at", "updated_at", "metadata", "tools", "skills", "mcp_servers", "execution_identity"] {
        assert!(!agent[field].is_null(), "agent.{field} missing: {agent}");
    }
    assert_eq!(agent["model"], json!({"id": "claude-sonnet-4-6", "speed": "standard"}));
    let updated = client.update_agent(agent["id"].as_str().unwrap(), json!({"version": 1, "system": "s"})).await;
    assert_eq!(updated.unwrap()["version"], 2);

    let provider = provider(&emulator);
    let result = Session::run(&provider, EchoTools, session_options(&emulator)).await.unwrap();
    let session_id = result.session_id.unwrap();
    let session = client.get_session(&session_id).await.unwrap();
    for field in ["created_at", "updated_at", "usage", "stats", "vault_ids", "outcome_evaluations", "resources"] {
        assert!(!session[field].is_null(), "session.{field} missing: {session}");
    }
    assert_eq!(session["status"], "idle");
    let history = emulator.history(&session_id);
    let span_start = history.iter().find(|e| e["type"] == "span.model_request_start").unwrap();
    let span_end = history.iter().find(|e| e["type"] == "span.model_request_end");
    assert!(span_end.is_none_or(|end| end["model_request_start_id"] == span_start["id"]));

    let list = |query: Vec<(&'static str, String)>| {
        let client = client.clone();
        let session_id = session_id.clone();
        async move {
            let page = client.list_events(&session_id, &query).await.unwrap();
            page["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect::<Vec<_>>()
        }
    };
    let all: Vec<String> = history.iter().map(|e| e["id"].as_str().unwrap().to_string()).collect();
    let of_type = |kind: &str| -> Vec<String> {
        history.iter().filter(|e| e["type"] == kind).map(|e| e["id"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(list(vec![("types[]", "agent.custom_tool_use".into())]).await, of_type("agent.custom_tool_use"));
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(list(vec![("order", "desc".into())]).await, reversed);
    let cut = history[history.len() / 2]["processed_at"].as_str().unwrap().to_string();
    assert_eq!(list(vec![("created_at[gt]", cut.clone())]).await, all[history.len() / 2 + 1..]);
    assert_eq!(list(vec![("created_at[lte]", cut)]).await, all[..=history.len() / 2]);
    let bad = client.list_events(&session_id, &[("created_at[gt]", "yesterday".into())]).await.unwrap_err();
    assert!(matches!(bad, Error::Http { status: 400, .. }), "{bad:?}");
}

/// `initial_events` start the session's first turn at creation; anything but user messages and outcomes is
/// refused.
#[tokio::test]
async fn initial_events_kick_a_session_off_at_creation() {
    let emulator = ClaudeEmulator::start(Script::new().turn(ScriptTurn::text("started"))).await.unwrap();
    let client = client(&emulator);
    let (agent, environment) = emulator.seed_agent();
    let refused = client
        .create_session(json!({"agent": agent, "environment_id": environment,
            "initial_events": [{"type": "user.interrupt"}]}))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Http { status: 400, .. }), "{refused:?}");
    let session = client
        .create_session(json!({"agent": agent, "environment_id": environment,
            "initial_events": [{"type": "user.message", "content": [{"type": "text", "text": "go"}]}]}))
        .await
        .unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    let ended = async {
        loop {
            let history = emulator.history(&session_id);
            if history.iter().any(|e| e["type"] == "session.status_idle") {
                return history;
            }
            tokio::task::yield_now().await;
        }
    };
    let history = tokio::time::timeout(Duration::from_secs(10), ended).await.unwrap();
    assert_eq!(history[0]["type"], "user.message");
    assert!(history.iter().any(|e| e["type"] == "agent.message" && e["content"][0]["text"] == "started"));
}
