//! The AgentCore emulator with a script per runtime session: concurrent sessions each play their own turns
//! (faults included), a per-session factory sees the session and its prompt, a spent script counts only its own
//! session's turns, and a shared script still hands its turns to whoever asks.

use std::collections::BTreeMap;
use std::time::Duration;

use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, InvokeRequest};
use managed_agents_conformance::support;
use managed_agents_conformance::{Fault, Script, ScriptTurn, Scripts};
use managed_agents_core::{Error, Session, SessionOptions, tool_fn};
use serde_json::{Value, json};

/// A provider on the emulator, as its builder makes it.
fn provider(emulator: &AgentCoreEmulator) -> BedrockAgentCore {
    emulator.provider_builder().build().expect("the emulator's provider builds")
}

fn options(emulator: &AgentCoreEmulator, prompt: &str) -> SessionOptions {
    SessionOptions::new().agent_id(emulator.harness_arn()).prompt(prompt).timeout(Duration::from_secs(30))
}

/// The requests of each runtime session, in order.
fn by_session(requests: Vec<InvokeRequest>) -> BTreeMap<String, Vec<Value>> {
    let mut sessions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for request in requests {
        sessions.entry(request.session_id.unwrap_or_default()).or_default().push(request.body);
    }
    sessions
}

#[tokio::test]
async fn concurrent_sessions_each_play_their_own_script() {
    // Each session's script shows what it was told: its key, its kickoff, how many came before; the tool
    // returns only once both are in it, so each is mid-script before either finishes.
    let scripts = support::telling_scripts();
    let emulator = AgentCoreEmulator::start(scripts).await.unwrap();
    let provider = provider(&emulator);
    let handler = support::gate(2);
    let (alpha, beta) = tokio::join!(
        Session::run(&provider, handler.clone(), options(&emulator, "alpha")),
        Session::run(&provider, handler, options(&emulator, "beta")),
    );
    let sessions = by_session(emulator.requests());
    assert_eq!(sessions.len(), 2);
    let mut indexes = Vec::new();
    for (result, who) in [(alpha.unwrap(), "alpha"), (beta.unwrap(), "beta")] {
        let session_id = result.session_id.as_deref().unwrap();
        assert_eq!(result.text, format!("done {who}"));
        assert_eq!(result.custom_tool_uses.len(), 1);
        assert_eq!(result.custom_tool_uses[0].id, format!("call_{who}"));
        let told = &result.custom_tool_uses[0].input;
        assert_eq!((&told["who"], &told["key"]), (&json!(who), &json!(session_id)), "keyed by the runtime session");
        indexes.push(told["index"].as_u64().unwrap());
        let calls = &sessions[session_id];
        assert_eq!(calls.len(), 2, "{who}: the kickoff and the resume");
        let resume = calls[1]["messages"].as_array().unwrap();
        let tool_result = &resume[resume.len() - 1]["content"][0]["toolResult"];
        assert_eq!(tool_result["toolUseId"], format!("call_{who}"));
        assert_eq!(tool_result["content"][0]["text"], format!("gate passed by {who}"));
    }
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1], "one script per session");
}

#[tokio::test]
async fn each_session_meets_its_own_truncation_once() {
    let cut = ScriptTurn::text("whole at last").with_fault(Fault::CloseStreamAfter { events: 2 });
    let emulator =
        AgentCoreEmulator::start(Scripts::per_session(move |_| Script::new().turn(cut.clone()))).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let (one, two) = tokio::join!(
        Session::run(&provider, echo.clone(), options(&emulator, "one")),
        Session::run(&provider, echo, options(&emulator, "two")),
    );
    assert_eq!((one.unwrap().text, two.unwrap().text), ("whole at last".into(), "whole at last".into()));
    let calls: Vec<usize> = by_session(emulator.requests()).values().map(Vec::len).collect();
    assert_eq!(calls, [2, 2], "each session cut short once, then served");
}

#[tokio::test]
async fn a_spent_script_counts_only_its_own_sessions_turns() {
    // A conversation prompted "done" answers at once; any other calls a tool and then has nothing left.
    let scripts = Scripts::per_session(|session| match session.prompt() {
        Some("done") => Script::new().turn(ScriptTurn::text("done")),
        _ => Script::new().turn(ScriptTurn::tool_call("call_1", "lookup", json!({}))),
    });
    let emulator = AgentCoreEmulator::start(scripts).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    assert_eq!(Session::run(&provider, echo.clone(), options(&emulator, "done")).await.unwrap().text, "done");
    let error = Session::run(&provider, echo, options(&emulator, "call")).await.unwrap_err();
    let Error::Provider { message, .. } = error.root() else { panic!("{error:?}") };
    // Two turns were served in all, one of them to this session.
    assert!(message.contains("unexpected model call: the script has only 1 turns"), "{message}");
}

#[tokio::test]
async fn a_shared_script_hands_its_turns_to_whichever_session_asks() {
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let emulator = AgentCoreEmulator::start(script).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let one = Session::run(&provider, echo.clone(), options(&emulator, "one")).await.unwrap();
    let two = Session::run(&provider, echo.clone(), options(&emulator, "two")).await.unwrap();
    assert_eq!((one.text.as_str(), two.text.as_str()), ("first", "second"));
    assert_ne!(one.session_id, two.session_id);
    let error = Session::run(&provider, echo, options(&emulator, "three")).await.unwrap_err();
    let Error::Provider { message, .. } = error.root() else { panic!("{error:?}") };
    assert!(message.contains("unexpected model call: the script has only 2 turns"), "counted over every session");
}
