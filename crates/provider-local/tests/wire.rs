//! The Local provider against its emulator: stream assembly, retries, faults, guards, reattach.

mod support;

use std::time::Duration;

use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptTurn};
use managed_agents_core::RetryPolicy;
use managed_agents_core::{Error, ModelConfig, Session, SessionOptions, TerminalReason, tool_fn};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{GuardSettings, Local};
use serde_json::json;
use support::Scripted;

fn provider(emulator: &LocalEmulator) -> managed_agents_local::LocalBuilder {
    emulator.provider_builder()
}

fn options() -> SessionOptions {
    SessionOptions::new().timeout(Duration::from_secs(30))
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let emulator = LocalEmulator::start(
        Script::new().turn(
            ScriptTurn::text("finally")
                .with_fault(Fault::HttpError { status: 429, retry_after: Some(Duration::from_millis(250)) }),
        ),
    )
    .await
    .unwrap();
    let provider = provider(&emulator).build().unwrap();
    let result = Session::run(&provider, EchoTools, options()).await.unwrap();
    assert_eq!(result.text, "finally");
    let arrivals = emulator.arrivals();
    assert_eq!(arrivals.len(), 2, "one failure, one retry");
    let waited = arrivals[1] - arrivals[0];
    // The server asked for 250 ms; the default backoff would have waited 0.8–1 s.
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_millis(800), "waited {waited:?}");
}

#[tokio::test]
async fn server_errors_are_retried_and_client_errors_are_typed_with_their_body() {
    let fast = RetryPolicy::default().with_initial(Duration::from_millis(5)).with_max(Duration::from_millis(20));
    let emulator = LocalEmulator::start(
        Script::new().turn(ScriptTurn::text("ok").with_fault(Fault::HttpError { status: 503, retry_after: None })),
    )
    .await
    .unwrap();
    let result = Session::run(&provider(&emulator).retry(fast).build().unwrap(), EchoTools, options()).await.unwrap();
    assert_eq!(result.text, "ok");
    assert_eq!(emulator.arrivals().len(), 2);

    let emulator = LocalEmulator::start(
        Script::new().turn(ScriptTurn::text("never").with_fault(Fault::HttpError { status: 400, retry_after: None })),
    )
    .await
    .unwrap();
    let error =
        Session::run(&provider(&emulator).retry(fast).build().unwrap(), EchoTools, options()).await.unwrap_err();
    let Error::Http { status: 400, body, .. } = error.root() else { panic!("{error:?}") };
    assert!(body.contains("injected failure"), "{body}");
    assert_eq!(emulator.arrivals().len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn a_stream_that_breaks_midway_is_a_typed_error_and_is_not_retried() {
    let emulator = LocalEmulator::start(
        Script::new().turn(ScriptTurn::chunks(["a", "b", "c"]).with_fault(Fault::DropStreamAfter { events: 2 })),
    )
    .await
    .unwrap();
    let error = Session::run(&provider(&emulator).build().unwrap(), EchoTools, options()).await.unwrap_err();
    assert!(matches!(error.root(), Error::Transport { .. }), "{error:?}");
    assert_eq!(emulator.arrivals().len(), 1, "no retry once the response has started");
}

#[tokio::test]
async fn a_malformed_chunk_is_a_typed_error_keeping_the_raw_data() {
    let emulator = LocalEmulator::start(Script::new().turn(ScriptTurn::text("x").with_fault(Fault::MalformedFrame)))
        .await
        .unwrap();
    let error = Session::run(&provider(&emulator).build().unwrap(), EchoTools, options()).await.unwrap_err();
    let Error::Malformed { raw, .. } = error.root() else { panic!("{error:?}") };
    assert!(raw.contains("oops"), "{raw}");
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let emulator = LocalEmulator::start(
        Script::new().turn(ScriptTurn::text("late").with_fault(Fault::Stall { duration: Duration::from_secs(30) })),
    )
    .await
    .unwrap();
    let provider = provider(&emulator).idle_timeout(Duration::from_millis(200)).build().unwrap();
    let error = Session::run(&provider, EchoTools, options()).await.unwrap_err();
    assert!(matches!(error.root(), Error::StreamIdleTimeout { .. }), "{error:?}");
}

#[tokio::test]
async fn a_repeated_call_is_answered_from_history_and_the_loop_goes_on() {
    let call = || ScriptTurn::tool_call("call_1", "lookup", json!({"key": "a"}));
    let script = Script::new()
        .turn(call())
        .turn(ScriptTurn::tool_call("call_2", "lookup", json!({"key": "a"})))
        .turn(ScriptTurn::text("done"));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let (handler, seen) = managed_agents_conformance::support::recording(EchoTools);
    let result = Session::run(&provider(&emulator).build().unwrap(), handler, options()).await.unwrap();
    assert_eq!(result.terminal_reason, TerminalReason::Completed);
    assert_eq!(result.text, "done");
    assert_eq!(seen.calls().len(), 1, "the repeat never reaches the handler");
    let requests = emulator.requests();
    assert_eq!(requests.len(), 3);
    let answered = requests[2]["messages"].as_array().unwrap().iter().any(|m| {
        m["tool_call_id"] == "call_2" && m["content"].as_str().is_some_and(|c| c.contains("\"duplicate\":true"))
    });
    assert!(answered, "the repeat is answered in the history: {:?}", requests[2]);
    assert!(result.events.iter().any(|e| e.kind() == Some("local.duplicate_tool_call")));
}

#[tokio::test]
async fn repeated_tool_errors_bring_a_corrective_and_the_last_call_a_final_turn_directive() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("c1", "flaky", json!({"n": 1})))
        .turn(ScriptTurn::tool_call("c2", "flaky", json!({"n": 2})))
        .turn(ScriptTurn::text("gave up"));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let guards = GuardSettings::default().with_max_turns(3).with_terminal_tool("submit");
    let provider = provider(&emulator).guards(guards).build().unwrap();
    let failing = tool_fn(|_, _| async { Err("backend down".into()) });
    let result = Session::run(&provider, failing, options()).await.unwrap();
    assert_eq!(result.text, "gave up");
    let last = emulator.requests()[2]["messages"].as_array().unwrap().clone();
    let users: Vec<&str> = last.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str()).collect();
    assert!(users.iter().any(|u| u.contains("`flaky` failed 2 times") && u.contains("backend down")), "{users:?}");
    assert!(users.iter().any(|u| u.contains("last turn") && u.contains("`submit`")), "{users:?}");
    let kinds: Vec<&str> = result.events.iter().filter_map(|e| e.kind()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "local.directive").count(), 2, "{kinds:?}");
}

#[tokio::test]
async fn a_transcript_reattaches_with_its_system_prompt() {
    let emulator =
        LocalEmulator::start(Script::new().turn(ScriptTurn::text("one")).turn(ScriptTurn::text("two"))).await.unwrap();
    let provider = provider(&emulator).system_prompt("You are terse.").build().unwrap();
    let first = Session::run(&provider, EchoTools, options().prompt("hi")).await.unwrap();
    let transcript = first.transcript.unwrap();
    assert_eq!(transcript[0], json!({"role": "system", "content": "You are terse."}));
    let second =
        Session::run(&provider, EchoTools, options().history(transcript.clone()).prompt("again")).await.unwrap();
    assert_eq!(second.text, "two");
    let sent = emulator.requests()[1]["messages"].as_array().unwrap().clone();
    assert_eq!(&sent[..transcript.len()], transcript.as_slice(), "the history is sent verbatim");
    assert_eq!(emulator.log().inputs()[1], RecordedInput::Message("again".into()));
}

#[tokio::test]
async fn the_api_key_is_sent_as_a_bearer_token_and_never_printed() {
    let emulator = LocalEmulator::start(Script::new().turn(ScriptTurn::text("ok"))).await.unwrap();
    let provider = provider(&emulator).api_key("sk-test-secret").header("x-team", "search").build().unwrap();
    Session::run(&provider, EchoTools, options()).await.unwrap();
    let headers = &emulator.request_headers()[0];
    assert_eq!(headers["authorization"], "Bearer sk-test-secret");
    assert_eq!(headers["x-team"], "search");
    let printed = format!("{provider:?}");
    assert!(!printed.contains("sk-test-secret"), "{printed}");
    let per_run = options().model_config(ModelConfig::new().credential("sk-run-secret"));
    assert!(!format!("{per_run:?}").contains("sk-run-secret"));
}

#[tokio::test]
async fn tools_go_out_in_the_openai_function_shape_and_a_run_can_pick_its_endpoint_and_model() {
    let default = LocalEmulator::start(Script::new()).await.unwrap();
    let lane = LocalEmulator::start(Script::new().turn(ScriptTurn::text("from the lane"))).await.unwrap();
    let tool = managed_agents_core::ToolSchema::with_string_params("get_weather", "Weather for a city", &["city"]);
    let provider = provider(&default).tool(tool).build().unwrap();
    let run = options()
        .model_config(ModelConfig::new().model("lane-model").destination(lane.base_url()).credential("sk-lane"));
    let result = Session::run(&provider, EchoTools, run).await.unwrap();
    assert_eq!(result.text, "from the lane");
    assert!(default.requests().is_empty(), "the run went to its own endpoint");
    let body = &lane.requests()[0];
    assert_eq!(body["model"], "lane-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})
    );
    assert_eq!(lane.request_headers()[0]["authorization"], "Bearer sk-lane");
}

#[tokio::test]
async fn any_client_can_sit_behind_the_chat_seam() {
    let answers = vec![
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "echo", "arguments": {"x": 1}}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        json!({"choices": [{"message": {"role": "assistant", "content": "echoed"}, "finish_reason": "stop"}]}),
    ];
    // A chat backend that needs no network: it answers every call from a queue.
    let canned = Scripted::answering(answers);
    let provider = Local::builder().model("canned").chat_backend(canned.clone()).build().unwrap();
    let result = Session::run(&provider, EchoTools, options()).await.unwrap();
    assert!(canned.requests().iter().all(|request| !request.messages.is_empty()));
    assert_eq!(result.text, "echoed");
    assert_eq!(result.custom_tool_uses[0].input, json!({"x": 1}), "object arguments are accepted too");
    assert_eq!(result.usage.input_tokens, 5);
}

#[tokio::test]
async fn a_request_that_ends_between_call_and_result_leaves_a_valid_history() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "step", json!({"n": 1}))).turn(ScriptTurn::text("fresh start"));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let provider = std::sync::Arc::new(provider(&emulator).build().unwrap());
    let mut session = Session::start(provider, EchoTools, options().max_turns(1)).await.unwrap();
    let error = session.next_result().await.unwrap_err();
    assert!(matches!(error, Error::MaxTurnsExceeded { .. }), "{error:?}");
    // call c1 was never answered (its result would have needed a second turn); the next message must still make a
    // conversation the server accepts.
    session.message("start over").unwrap();
    let result = session.next_result().await.unwrap();
    assert_eq!(result.text, "fresh start");
    let last = emulator.requests().last().cloned().unwrap();
    managed_agents_local::emulator::validate_messages(&last).unwrap();
    session.close().await;
}

#[tokio::test]
async fn calls_without_ids_and_with_extra_fields_go_back_clean() {
    let answers = vec![
        json!({"choices": [{"message": {"role": "assistant", "content": null, "reasoning_content": "hmm",
            "tool_calls": [{"type": "function", "function": {"name": "echo", "arguments": {"x": 1}}}]},
            "finish_reason": "tool_calls"}]}),
        json!({"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "stop"}]}),
    ];
    // Records every request it answers, answering from a queue.
    let backend = Scripted::answering(answers);
    let provider = Local::builder().model("m").chat_backend(backend.clone()).build().unwrap();
    let result = Session::run(&provider, EchoTools, options()).await.unwrap();
    assert_eq!(result.text, "");
    let second = json!({"messages": backend.requests()[1].messages});
    managed_agents_local::emulator::validate_messages(&second).unwrap();
    let assistant = &second["messages"][1];
    assert!(assistant.get("reasoning_content").is_none(), "{assistant}");
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], "{\"x\":1}");
    let id = assistant["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(second["messages"][2]["tool_call_id"], id, "the synthesised id is answered");
}

#[tokio::test]
async fn the_final_turn_directive_follows_the_session_limit() {
    let script =
        Script::new().turn(ScriptTurn::tool_call("c1", "step", json!({"n": 1}))).turn(ScriptTurn::text("done"));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let result = Session::run(&provider(&emulator).build().unwrap(), EchoTools, options().max_turns(2)).await.unwrap();
    assert_eq!(result.text, "done");
    let requests = emulator.requests();
    let directive = |n: usize| {
        requests[n]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.contains("last turn")))
    };
    assert!(!directive(0) && directive(1), "the second of two allowed calls is announced as the last");
}

/// Issue 9: `provision` returns a handle that `Session::run` accepts, and the run uses the provisioned spec's
/// system prompt and tools (not the builder's); an unknown handle is refused before any request.
#[tokio::test]
async fn a_provisioned_spec_drives_the_run() {
    use managed_agents_core::{AgentSpec, Provider, ToolSchema};
    let emulator = LocalEmulator::start(
        Script::new()
            .turn(ScriptTurn::tool_call("call_1", "lookup", json!({"q": "x"})))
            .turn(ScriptTurn::text("found it")),
    )
    .await
    .unwrap();
    let provider =
        Local::builder().base_url(emulator.base_url()).model("m").system_prompt("builder prompt").build().unwrap();
    let spec = AgentSpec::new("finder", "You find things.").tool(ToolSchema::new(
        "lookup",
        "Looks up",
        json!({"type": "object"}),
    ));
    let handle = provider.provision(&spec, None).await.unwrap();
    let options = SessionOptions::new().agent(handle.clone()).prompt("find x");
    let result = Session::run(&provider, EchoTools, options).await.unwrap();
    assert_eq!(result.text, "found it");
    let first = &emulator.requests()[0];
    assert_eq!(first["messages"][0], json!({"role": "system", "content": "You find things."}));
    assert_eq!(first["tools"][0]["function"]["name"], "lookup");

    provider.teardown(&handle).await.unwrap();
    let gone = Session::run(&provider, EchoTools, SessionOptions::new().agent(handle).prompt("again")).await;
    assert!(matches!(gone, Err(Error::InvalidOption { option: "agent_id", .. })), "{gone:?}");
}

#[tokio::test]
async fn a_transcript_with_open_calls_runs_them_before_the_prompt() {
    use managed_agents_core::approval::{Decision, permission_fn};
    let script = Script::new()
        .turn(ScriptTurn::tool_call("c1", "pay", json!({"cents": 5})))
        .turn(ScriptTurn::text("Paid."))
        .turn(ScriptTurn::text("Nothing else."));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let provider = provider(&emulator).build().unwrap();
    let defer = permission_fn(|_| async { Decision::Defer });
    let error = Session::run(&provider, EchoTools, options().prompt("pay").permission(defer)).await.unwrap_err();
    let Error::ApprovalRequired { partial, .. } = error else { panic!("{error:?}") };
    let transcript = partial.transcript.clone().unwrap();
    assert!(transcript.last().unwrap()["tool_calls"].is_array(), "the transcript ends on the open call");
    // A new session over the transcript, told nothing else: the open call runs first, then the prompt.
    let (handler, seen) = managed_agents_conformance::support::recording(EchoTools);
    let opts = options().history(transcript).session_id(partial.session_id.clone().unwrap()).prompt("anything else?");
    let result = Session::run(&provider, handler, opts).await.unwrap();
    assert_eq!(result.text, "Nothing else.");
    assert_eq!(seen.calls().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1"], "the open call ran");
    assert_eq!(
        emulator.log().inputs()[1..],
        [
            RecordedInput::ToolResults(vec![managed_agents_core::ToolResult::ok("c1", "pay:{\"cents\":5}")]),
            RecordedInput::Message("anything else?".into()),
        ]
    );
    for request in emulator.requests() {
        managed_agents_local::emulator::validate_messages(&request).unwrap();
    }
}
