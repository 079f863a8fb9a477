//! The chat emulator with a script per conversation: concurrent conversations each play their own turns (faults
//! included), a per-session factory sees the conversation's key and prompt, a spent script counts only its own
//! conversation's turns, and a shared script still hands its turns to whoever asks.

use std::collections::BTreeMap;
use std::time::Duration;

use managed_agents_conformance::support;
use managed_agents_conformance::{Fault, Script, ScriptTurn, Scripts};
use managed_agents_core::{Error, Session, SessionOptions, tool_fn};
use managed_agents_local::Local;
use managed_agents_local::emulator::{LocalEmulator, conversation_key};
use serde_json::{Value, json};

fn provider(emulator: &LocalEmulator) -> Local {
    emulator.provider_builder().build().unwrap()
}

fn options(prompt: &str) -> SessionOptions {
    SessionOptions::new().prompt(prompt).timeout(Duration::from_secs(30))
}

/// The request bodies of each conversation, in order.
fn by_conversation(requests: Vec<Value>) -> BTreeMap<String, Vec<Value>> {
    let mut conversations: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for body in requests {
        conversations.entry(conversation_key(&body)).or_default().push(body);
    }
    conversations
}

/// The request's first user message.
fn opening(body: &Value) -> &str {
    let messages = body["messages"].as_array().unwrap();
    messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap()
}

#[tokio::test]
async fn concurrent_conversations_each_play_their_own_script() {
    // Each session's script shows what it was told: its key, its kickoff, how many came before; the tool
    // returns only once both are in it, so each is mid-script before either finishes.
    let scripts = support::telling_scripts();
    let emulator = LocalEmulator::start(scripts).await.unwrap();
    let provider = provider(&emulator);
    let handler = support::gate(2);
    let (alpha, beta) = tokio::join!(
        Session::run(&provider, handler.clone(), options("alpha")),
        Session::run(&provider, handler, options("beta")),
    );
    let conversations = by_conversation(emulator.requests());
    assert_eq!(conversations.len(), 2);
    let mut results = BTreeMap::from([("alpha", alpha.unwrap()), ("beta", beta.unwrap())]);
    let mut indexes = Vec::new();
    for (key, calls) in &conversations {
        let who = opening(&calls[0]);
        let result = results.remove(who).unwrap();
        assert_eq!(result.text, format!("done {who}"));
        assert_eq!(result.custom_tool_uses.len(), 1);
        assert_eq!(result.custom_tool_uses[0].id, format!("call_{who}"));
        let told = &result.custom_tool_uses[0].input;
        assert_eq!((&told["who"], &told["key"]), (&json!(who), &json!(key)), "keyed by the conversation");
        indexes.push(told["index"].as_u64().unwrap());
        assert_eq!(calls.len(), 2, "{who}: the kickoff and the tool results");
        let tool = calls[1]["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
        assert_eq!(tool["tool_call_id"], format!("call_{who}"));
        assert_eq!(tool["content"], format!("gate passed by {who}"));
    }
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1], "one script per conversation");
}

#[tokio::test]
async fn each_conversation_meets_its_own_injected_http_error_once() {
    let refused = ScriptTurn::text("after a refusal")
        .with_fault(Fault::HttpError { status: 503, retry_after: Some(Duration::from_millis(1)) });
    let emulator =
        LocalEmulator::start(Scripts::per_session(move |_| Script::new().turn(refused.clone()))).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let (one, two) = tokio::join!(
        Session::run(&provider, echo.clone(), options("one")),
        Session::run(&provider, echo, options("two"))
    );
    assert_eq!((one.unwrap().text, two.unwrap().text), ("after a refusal".into(), "after a refusal".into()));
    let calls: Vec<usize> = by_conversation(emulator.requests()).values().map(Vec::len).collect();
    assert_eq!(calls, [2, 2], "each conversation refused once, then served");
}

#[tokio::test]
async fn a_spent_script_counts_only_its_own_conversations_turns() {
    // A conversation prompted "done" answers at once; any other calls a tool and then has nothing left.
    let scripts = Scripts::per_session(|session| match session.prompt() {
        Some("done") => Script::new().turn(ScriptTurn::text("done")),
        _ => Script::new().turn(ScriptTurn::tool_call("call_1", "lookup", json!({}))),
    });
    let emulator = LocalEmulator::start(scripts).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    assert_eq!(Session::run(&provider, echo.clone(), options("done")).await.unwrap().text, "done");
    let error = Session::run(&provider, echo, options("call")).await.unwrap_err();
    let Error::Http { body, .. } = error.root() else { panic!("{error:?}") };
    // Two turns were served in all, one of them to this session.
    assert!(body.contains("unexpected model call: the script has only 1 turns"), "{body}");
}

#[test]
fn the_conversation_key_follows_the_opening_messages_only() {
    let body = |messages: Value| json!({"model": "m", "messages": messages});
    let opening = json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]);
    let key = conversation_key(&body(opening.clone()));
    let mut later = opening.as_array().unwrap().clone();
    later.push(json!({"role": "assistant", "content": "hello"}));
    later.push(json!({"role": "user", "content": "more"}));
    assert_eq!(conversation_key(&body(json!(later))), key, "later turns keep the key");
    let other_prompt = json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hey"}]);
    assert_ne!(conversation_key(&body(other_prompt)), key);
    let other_system = json!([{"role": "system", "content": "be long"}, {"role": "user", "content": "hi"}]);
    assert_ne!(conversation_key(&body(other_system)), key);
}

#[tokio::test]
async fn a_shared_script_hands_its_turns_to_whichever_conversation_asks() {
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let emulator = LocalEmulator::start(script).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let one = Session::run(&provider, echo.clone(), options("one")).await.unwrap();
    let two = Session::run(&provider, echo.clone(), options("two")).await.unwrap();
    assert_eq!((one.text.as_str(), two.text.as_str()), ("first", "second"));
    let error = Session::run(&provider, echo, options("three")).await.unwrap_err();
    let Error::Http { body, .. } = error.root() else { panic!("{error:?}") };
    assert!(body.contains("unexpected model call: the script has only 2 turns"), "counted over every conversation");
}
