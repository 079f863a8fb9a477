//! Multi-agent sessions against the Claude emulator: a coordinator provisioned with a roster delegates its
//! tool-use turns to a sub-agent's thread; the sub-agent's custom tool calls and confirmations reach the same
//! handler and permission hook as the primary's and are answered naming its thread; a thread is interrupted
//! alone; the result says which thread said what; the threads endpoints round-trip.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::provision::{ClaudeAgent, Multiagent, RosterEntry};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::support::{EchoTools, echo_text, recording};
use managed_agents_conformance::{Fault, Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::AllowAll;
use managed_agents_core::provision::MemoryStore;
use managed_agents_core::{
    AgentSpec, EnvironmentSpec, Event, Handler, MessageDirection, Notification, ReconnectPolicy, Session, SessionInfo,
    SessionOptions, ThreadStatus, ThreadUpdate, ToolKind, ToolOutput, ToolSchema, ToolUse,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// An emulator playing `script`, a provider on it, and the options of a session of a coordinator whose roster is
/// a worker agent (with the custom tool `lookup`) and itself.
struct Coordinated {
    emulator: ClaudeEmulator,
    provider: ClaudeManagedAgents,
    options: SessionOptions,
    /// The coordinator's id and its environment's.
    ids: (String, String),
    worker_name: String,
}

impl Coordinated {
    async fn start(script: Script) -> Self {
        Self::start_with(script, EmulatorOptions::default()).await
    }

    async fn start_with(script: Script, options: EmulatorOptions) -> Self {
        let emulator = ClaudeEmulator::start_with(script, options).await.unwrap();
        let provider = emulator
            .provider_builder()
            .retry(TEST_RETRY)
            .provision_store(Arc::new(MemoryStore::new()))
            .build()
            .unwrap();
        let provisioner = provider.provisioner();
        let worker = AgentSpec::new("worker", "Answer the question you are given.")
            .model("claude-haiku-4-5")
            .tool(ToolSchema::with_string_params("lookup", "Looks a fact up", &["q"]));
        let worker = provisioner.ensure_agent(&worker, None).await.unwrap();
        let lead = ClaudeAgent::new(AgentSpec::new("lead", "Delegate, then answer.").model("claude-opus-4-8"))
            .multiagent(Multiagent::coordinator([RosterEntry::agent(&worker.id), RosterEntry::itself()]));
        let lead = provisioner.ensure_claude_agent(&lead, None).await.unwrap();
        let environment = provisioner.ensure_environment(&EnvironmentSpec::new(), None).await.unwrap();
        let ids = (lead.id, environment.id);
        let options = SessionOptions::new()
            .agent_id(ids.0.clone())
            .environment_id(ids.1.clone())
            .timeout(Duration::from_secs(30))
            .permission(AllowAll);
        Self { emulator, provider, options, ids, worker_name: worker.name }
    }

    /// The events of every post that answers calls, one list per post.
    fn answers(&self, session_id: &str) -> Vec<Value> {
        self.emulator
            .requests_to("POST", &format!("/v1/sessions/{session_id}/events"))
            .into_iter()
            .flat_map(|r| r.body["events"].as_array().cloned().unwrap_or_default())
            .filter(|e| matches!(e["type"].as_str(), Some("user.custom_tool_result" | "user.tool_confirmation")))
            .collect()
    }
}

/// The sub-agent calls the custom tool `lookup` and the MCP tool `create_issue` (which asks first); then the
/// coordinator answers.
fn delegated_script() -> Script {
    let calls = [
        ScriptToolCall::new("c1", "lookup", json!({"q": "tides"})),
        ScriptToolCall::host("m1", "create_issue", json!({"title": "tides"})),
    ];
    Script::new()
        .turn(ScriptTurn::tool_calls(calls).with_text("Delegating."))
        .turn(ScriptTurn::text("The worker found the tides."))
}

/// A thread message as (reporting thread, direction, other thread, writer, text).
type Said<'a> = (Option<&'a str>, MessageDirection, Option<&'a str>, Option<&'a str>, &'a str);

fn thread_updates(events: &[Event]) -> Vec<ThreadUpdate> {
    events.iter().filter_map(Event::thread_update_view).collect()
}

#[tokio::test]
async fn a_sub_agents_custom_tool_call_and_confirmation_are_answered_naming_its_thread() {
    let run = Coordinated::start(delegated_script()).await;
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&run.provider, handler, run.options.clone()).await.unwrap();
    assert!(result.text.ends_with("The worker found the tides."), "{}", result.text);

    // One thread, the worker's, which asked for both calls.
    assert_eq!(result.threads.len(), 1, "{:?}", result.threads);
    let thread = &result.threads[0];
    assert_eq!(thread.agent_name.as_deref(), Some(run.worker_name.as_str()));
    assert_eq!(thread.status, ThreadStatus::Idle);
    assert_eq!(thread.stop_reason, Some(json!({"type": "end_turn"})));
    let owed: Vec<(&str, ToolKind, Option<&str>)> =
        result.custom_tool_uses.iter().map(|u| (u.id.as_str(), u.kind, u.thread_id.as_deref())).collect();
    let thread_id = Some(thread.thread_id.as_str());
    assert_eq!(owed, [("c1", ToolKind::Custom, thread_id), ("m1", ToolKind::Confirmation, thread_id)]);
    let calls = seen.calls();
    assert_eq!(calls.len(), 1, "the handler ran the sub-agent's custom tool");
    assert_eq!((calls[0].id.as_str(), calls[0].thread_id.as_deref()), ("c1", thread_id));

    // The answers name the thread, as the client sent them (the request log, not the server's echo).
    let session_id = result.session_id.clone().unwrap();
    let answers = run.answers(&session_id);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.iter().all(|a| a["session_thread_id"] == thread.thread_id.as_str()), "{answers:?}");
    assert_eq!(
        answers[1],
        json!({"type": "user.tool_confirmation", "tool_use_id": "m1", "result": "allow",
        "session_thread_id": thread.thread_id})
    );

    // Which thread said what: the coordinator's task, then the worker's report of what its calls returned.
    let messages: Vec<Said<'_>> = result
        .thread_messages
        .iter()
        .map(|m| (m.thread_id.as_deref(), m.direction, m.peer_thread_id.as_deref(), m.agent_name.as_deref(), &*m.text))
        .collect();
    let report = format!(
        "{} reports: {}; create_issue ran on the loop host",
        run.worker_name,
        echo_text("lookup", &json!({"q": "tides"}))
    );
    assert_eq!(
        messages,
        [
            (None, MessageDirection::Sent, thread_id, None, "Please call lookup, create_issue."),
            (None, MessageDirection::Received, thread_id, Some(run.worker_name.as_str()), report.as_str()),
        ]
    );

    // The handler saw every update as a synthetic event, after its raw event, which the record keeps.
    let updates = thread_updates(&seen.events());
    assert_eq!(updates.len(), 7, "created, task, running, idle (asks), running, report, idle: {updates:?}");
    assert!(matches!(&updates[0], ThreadUpdate::Created { thread_id: id, .. } if Some(id.as_str()) == thread_id));
    assert!(matches!(&updates[3],
        ThreadUpdate::Status { status: ThreadStatus::Idle, stop_reason: Some(reason), .. }
            if reason["type"] == "requires_action"));
    assert!(result.events.iter().any(|e| e.kind() == Some("session.thread_created")), "raw events stay");
    assert!(result.events.iter().all(|e| e.thread_update_view().is_none()));
}

/// A handler whose tool calls report their call and then wait until released.
#[derive(Clone, Default)]
struct Held {
    started: Arc<Notify>,
    release: Arc<Notify>,
    calls: Arc<Mutex<Vec<ToolUse>>>,
}

#[async_trait]
impl Handler for Held {
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, _: &SessionInfo) -> ToolOutput {
        self.calls.lock().unwrap().push(tool_use.clone());
        self.started.notify_one();
        self.release.notified().await;
        Ok("too late".into())
    }
}

async fn finished(session: &mut managed_agents_core::SessionHandle) -> managed_agents_core::SessionResult {
    loop {
        match tokio::time::timeout(Duration::from_secs(30), session.next_notification()).await {
            Ok(Some(Notification::Finished(result))) => return result,
            Ok(Some(Notification::Failed(error))) => panic!("{error}"),
            Ok(Some(_)) => {}
            other => panic!("no result: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_thread_is_interrupted_alone_and_the_coordinator_goes_on() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("c1", "lookup", json!({"q": "slow"})))
        .turn(ScriptTurn::text("Went on without it."));
    let run = Coordinated::start(script).await;
    let handler = Held::default();
    let mut session =
        Session::start(Arc::new(run.provider.clone()), handler.clone(), run.options.clone()).await.unwrap();
    handler.started.notified().await;
    let thread_id = handler.calls.lock().unwrap()[0].thread_id.clone().expect("the call names its thread");
    session.interrupt_thread(thread_id.clone()).await.unwrap();
    handler.release.notify_one();
    let result = finished(&mut session).await;

    assert!(result.text.ends_with("Went on without it."), "{}", result.text);
    let session_id = result.session_id.clone().unwrap();
    let interrupts: Vec<Value> = run
        .emulator
        .requests_to("POST", &format!("/v1/sessions/{session_id}/events"))
        .into_iter()
        .flat_map(|r| r.body["events"].as_array().cloned().unwrap_or_default())
        .filter(|e| e["type"] == "user.interrupt")
        .collect();
    assert_eq!(interrupts, [json!({"type": "user.interrupt", "session_thread_id": thread_id})], "one thread only");
    let thread = result.threads.iter().find(|t| t.thread_id == thread_id).unwrap();
    assert_eq!(
        (&thread.status, thread.stop_reason.as_ref()),
        (&ThreadStatus::Idle, Some(&json!({"type": "end_turn"})))
    );
    assert!(result.thread_messages.iter().all(|m| m.direction == MessageDirection::Sent), "no report came");
    // The thread's own history: its call closed with an error result.
    let own = run.provider.client().list_all_thread_events(&session_id, &thread_id).await.unwrap();
    let closed = own.iter().find(|e| e["type"] == "user.custom_tool_result" && e["custom_tool_use_id"] == "c1");
    assert_eq!(closed.map(|e| e["is_error"].clone()), Some(json!(true)), "{own:?}");
}

#[tokio::test]
async fn a_sub_agents_confirmation_deferred_to_a_person_is_approved_naming_its_thread() {
    let calls = [ScriptToolCall::host("m1", "create_issue", json!({"title": "tides"}))];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("Filed."));
    let run = Coordinated::start(script).await;
    // The default permission hook defers confirmations to a person.
    let options = SessionOptions::new()
        .agent_id(run.ids.0.clone())
        .environment_id(run.ids.1.clone())
        .timeout(Duration::from_secs(30));
    let mut session = Session::start(Arc::new(run.provider.clone()), EchoTools, options).await.unwrap();
    let request = loop {
        match tokio::time::timeout(Duration::from_secs(30), session.next_notification()).await {
            Ok(Some(Notification::ApprovalRequested(request))) => break request,
            Ok(Some(Notification::Finished(_) | Notification::Failed(_))) | Ok(None) | Err(_) => {
                panic!("no approval was asked for")
            }
            Ok(Some(_)) => {}
        }
    };
    assert_eq!((request.tool_use.id.as_str(), request.tool_use.kind), ("m1", ToolKind::Confirmation));
    let thread_id = request.tool_use.thread_id.clone().expect("the approval request names the sub-agent's thread");
    session.approve("m1").await.unwrap();
    let result = finished(&mut session).await;
    assert!(result.text.ends_with("Filed."), "{}", result.text);
    let answers = run.answers(result.session_id.as_deref().unwrap());
    assert_eq!(
        answers,
        [json!({"type": "user.tool_confirmation", "tool_use_id": "m1", "result": "allow",
                "session_thread_id": thread_id})]
    );
    let report = result.thread_messages.iter().find(|m| m.direction == MessageDirection::Received).unwrap();
    assert!(report.text.ends_with("create_issue ran on the loop host"), "{}", report.text);
}

#[tokio::test]
async fn an_answer_naming_another_thread_is_refused() {
    let run = Coordinated::start(delegated_script()).await;
    let client = run.provider.client();
    let session = client.create_session(json!({"agent": run.ids.0, "environment_id": run.ids.1})).await.unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    assert!(client.open_thread_stream(&session_id, "sthr_none").await.is_err(), "an unknown thread has no stream");
    let threads = client.list_all_threads(&session_id).await.unwrap();
    assert_eq!(threads.len(), 1, "a session starts with its primary thread");
    let primary = threads[0]["id"].as_str().unwrap().to_string();
    // The primary thread's stream is the session's.
    let mut stream = client.open_thread_stream(&session_id, &primary).await.unwrap();
    let kickoff = json!({"type": "user.message", "content": [{"type": "text", "text": "go"}]});
    client.send_events(&session_id, vec![kickoff]).await.unwrap();
    loop {
        let event = stream.next_event().await.expect("open").unwrap();
        if event.kind() == Some("session.status_idle") {
            break;
        }
    }
    let wrong = json!({"type": "user.custom_tool_result", "custom_tool_use_id": "c1", "session_thread_id": primary,
        "content": [{"type": "text", "text": "x"}]});
    let error = client.send_events(&session_id, vec![wrong]).await.unwrap_err();
    assert!(matches!(error, managed_agents_core::Error::Http { status: 400, .. }), "{error:?}");
    let unknown = json!({"type": "user.interrupt", "session_thread_id": "sthr_none"});
    assert!(client.send_events(&session_id, vec![unknown]).await.is_err());
}

#[tokio::test]
async fn the_threads_endpoints_round_trip() {
    let run = Coordinated::start(delegated_script()).await;
    let (handler, _) = recording(EchoTools);
    let result = Session::run(&run.provider, handler, run.options.clone()).await.unwrap();
    let session_id = result.session_id.unwrap();
    let thread_id = result.threads[0].thread_id.clone();
    let client = run.provider.client();

    let threads = client.list_all_threads(&session_id).await.unwrap();
    assert_eq!(threads.len(), 2, "the primary and the worker's: {threads:?}");
    assert!(threads[0]["parent_thread_id"].is_null(), "the primary comes first");
    assert_eq!(threads[1]["id"], thread_id.as_str());
    assert_eq!(threads[1]["parent_thread_id"], threads[0]["id"]);
    assert_eq!(threads[1]["agent"]["name"], run.worker_name.as_str());
    let page = client.list_threads(&session_id, &[("statuses[]", "running".into())]).await.unwrap();
    assert_eq!(page["data"], json!([]), "nothing runs any more");
    let one = client.get_thread(&session_id, &thread_id).await.unwrap();
    assert_eq!((one["type"].as_str(), one["status"].as_str()), (Some("session_thread"), Some("idle")));

    let own: Vec<String> = client
        .list_all_thread_events(&session_id, &thread_id)
        .await
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(own.first().map(String::as_str), Some("agent.thread_message_received"), "it starts with its task");
    for kind in ["agent.custom_tool_use", "agent.mcp_tool_use", "user.custom_tool_result", "agent.thread_message_sent"]
    {
        assert!(own.iter().any(|k| k == kind), "{kind} in {own:?}");
    }
    let first = client.list_thread_events(&session_id, &thread_id, &[("limit", "2".into())]).await.unwrap();
    assert_eq!(first["data"].as_array().map(Vec::len), Some(2));
    assert!(first["next_page"].is_string(), "paged like the session's events");

    // Archiving terminates it; its stream reports that live.
    let mut stream = client.open_thread_stream(&session_id, &thread_id).await.unwrap();
    let archived = client.archive_thread(&session_id, &thread_id).await.unwrap();
    assert!(archived["archived_at"].is_string());
    assert_eq!(archived["status"], "terminated");
    let event = tokio::time::timeout(Duration::from_secs(10), stream.next_event()).await.unwrap().unwrap().unwrap();
    assert_eq!(event.kind(), Some("session.thread_status_terminated"));
    let primary = threads[0]["id"].as_str().unwrap();
    assert!(client.archive_thread(&session_id, primary).await.is_err(), "the primary thread is not archived");
}

#[tokio::test]
async fn a_sub_agents_pending_call_is_recovered_after_a_reconnect_and_answered_in_its_thread() {
    let calls = [ScriptToolCall::new("c1", "lookup", json!({"q": "x"}))];
    let script = Script::new()
        .turn(ScriptTurn::tool_calls(calls).with_fault(Fault::DropStreamAfter { events: 3 }))
        .turn(ScriptTurn::text("Recovered."));
    let run = Coordinated::start(script).await;
    let quick = ReconnectPolicy::default()
        .with_initial(Duration::from_millis(1))
        .with_max(Duration::from_millis(5))
        .with_jitter(0.0)
        .with_max_attempts(Some(20));
    let (handler, seen) = recording(EchoTools);
    let result = Session::run(&run.provider, handler, run.options.clone().reconnect_policy(quick)).await.unwrap();
    assert!(result.text.ends_with("Recovered."), "{}", result.text);
    let session_id = result.session_id.unwrap();
    let opens = run.emulator.requests_to("GET", &format!("/v1/sessions/{session_id}/events/stream")).len();
    assert!(opens >= 2, "the stream was reopened ({opens})");
    let calls = seen.calls();
    assert_eq!(calls.len(), 1);
    assert!(calls[0].thread_id.is_some(), "the recovered call still names its thread");
    let answers = run.answers(&session_id);
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["session_thread_id"].as_str(), calls[0].thread_id.as_deref());
}

#[tokio::test]
async fn a_session_reattached_while_a_sub_agent_waits_answers_its_call_naming_the_thread() {
    let run = Coordinated::start(delegated_script()).await;
    let client = run.provider.client();
    let session = client.create_session(json!({"agent": run.ids.0, "environment_id": run.ids.1})).await.unwrap();
    let session_id = session["id"].as_str().unwrap().to_string();
    let primary = client.list_all_threads(&session_id).await.unwrap()[0]["id"].as_str().unwrap().to_string();
    let mut stream = client.open_thread_stream(&session_id, &primary).await.unwrap();
    let kickoff = json!({"type": "user.message", "content": [{"type": "text", "text": "go"}]});
    client.send_events(&session_id, vec![kickoff]).await.unwrap();
    while stream.next_event().await.expect("open").unwrap().kind() != Some("session.status_idle") {}
    drop(stream);

    let (handler, seen) = recording(EchoTools);
    let result =
        Session::run(&run.provider, handler, run.options.clone().session_id(session_id.clone())).await.unwrap();
    assert!(result.text.ends_with("The worker found the tides."), "{}", result.text);
    let thread = seen.calls()[0].thread_id.clone().expect("the recovered call names its thread");
    let answers = run.answers(&session_id);
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.iter().all(|a| a["session_thread_id"] == thread.as_str()), "{answers:?}");
}

#[tokio::test]
async fn rosters_are_part_of_the_agents_definition() {
    let run = Coordinated::start(Script::new()).await;
    let provisioner = run.provider.provisioner();
    let spec = AgentSpec::new("lead", "Delegate, then answer.").model("claude-opus-4-8");
    let solo = provisioner.ensure_claude_agent(&ClaudeAgent::new(spec.clone()), None).await.unwrap();
    let plain = provisioner.ensure_agent(&spec, None).await.unwrap();
    assert_eq!(solo.id, plain.id, "no roster: the same agent as the plain spec");
    let advised = ClaudeAgent::new(spec.clone())
        .multiagent(Multiagent::coordinator([RosterEntry::itself(), RosterEntry::advisor("claude-opus-4-8")]));
    let advised = provisioner.ensure_claude_agent(&advised, None).await.unwrap();
    assert_ne!(advised.id, plain.id, "a roster makes another agent");
    let record = run.emulator.agent(&advised.id).unwrap();
    assert_eq!(
        record["multiagent"],
        json!({"type": "coordinator", "agents": [{"type": "agent", "id": advised.id, "version": 1},
                                                 {"type": "advisor", "model": "claude-opus-4-8"}]}),
        "the service resolves `self`"
    );
    let created = run.emulator.requests_to("POST", "/v1/agents");
    let body = &created.last().unwrap().body;
    assert_eq!(body["multiagent"]["agents"][0], json!({"type": "self"}), "sent as the roster says");
    // A roster the service refuses fails provisioning with its error.
    let nested = ClaudeAgent::new(AgentSpec::new("meta", "x").model("claude-opus-4-8"))
        .multiagent(Multiagent::coordinator([RosterEntry::agent(&advised.id)]));
    assert!(provisioner.ensure_claude_agent(&nested, None).await.is_err(), "one level of delegation");
}

#[tokio::test]
async fn an_emulator_without_a_roster_plays_tool_turns_on_the_primary() {
    let emulator = ClaudeEmulator::start(delegated_script()).await.unwrap();
    let (agent, environment) = emulator.seed_agent();
    let provider = emulator.provider_builder().retry(TEST_RETRY).build().unwrap();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).permission(AllowAll);
    let result = Session::run(&provider, EchoTools, options).await.unwrap();
    assert!(result.threads.is_empty() && result.thread_messages.is_empty());
    assert!(result.custom_tool_uses.iter().all(|u| u.thread_id.is_none()));
}
