//! The Claude emulator with a script per session: concurrent sessions each play their own turns, a per-session
//! factory sees the session's first input, and a shared script still hands its turns to whoever asks.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{Fault, RecordedInput, Script, ScriptTurn, Scripts};
use managed_agents_core::{Session, SessionOptions, SessionResult, tool_fn};
use serde_json::{Value, json};
use tokio::sync::Barrier;

const DEADLINE: Duration = Duration::from_secs(30);

fn provider(emulator: &ClaudeEmulator) -> Arc<ClaudeManagedAgents> {
    Arc::new(emulator.provider_builder().retry(TEST_RETRY).build().unwrap())
}

fn options(emulator: &ClaudeEmulator, prompt: &str) -> SessionOptions {
    let (agent, environment) = emulator.seed_agent();
    SessionOptions::new().agent_id(agent).environment_id(environment).prompt(prompt).timeout(DEADLINE)
}

/// What a per-session factory was told: the session's key, its first input, its index.
type Seen = Arc<Mutex<Vec<(String, Option<RecordedInput>, usize)>>>;

/// Each session calls `gate` with its prompt, then answers `done <prompt>`; each factory call is noted in `seen`.
fn gated_scripts(seen: &Seen) -> Scripts {
    let seen = Arc::clone(seen);
    Scripts::per_session(move |session| {
        seen.lock().unwrap().push((session.session_id.to_string(), session.first_input.cloned(), session.index));
        let who = session.prompt().unwrap_or_default();
        Script::new()
            .turn(ScriptTurn::tool_call(format!("call_{who}"), "gate", json!({"who": who})))
            .turn(ScriptTurn::text(format!("done {who}")))
    })
}

fn session_error(history: &[Value]) -> Option<String> {
    history.iter().find(|e| e["type"] == "session.error").and_then(|e| e["error"]["message"].as_str()).map(Into::into)
}

fn assert_played(result: &SessionResult, who: &str) {
    assert_eq!(result.text, format!("done {who}"));
    assert_eq!(result.turns, 2);
    assert_eq!(result.custom_tool_uses.len(), 1, "{who}: one tool call");
    assert_eq!(result.custom_tool_uses[0].id, format!("call_{who}"));
    assert_eq!(result.custom_tool_uses[0].input, json!({"who": who}));
}

/// The factory was called once per session, with the session's key and its kickoff, numbering sessions from 0.
fn assert_factory_told(seen: &Seen, sessions: [(&str, &str); 2]) {
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one script per session");
    for (id, prompt) in sessions {
        let told = seen.iter().find(|(key, ..)| key == id).map(|(_, input, _)| input.clone());
        let kickoff = RecordedInput::Kickoff { prompt: Some(prompt.into()), outcome: None };
        assert_eq!(told, Some(Some(kickoff)), "session {id}");
    }
    let mut indexes: Vec<usize> = seen.iter().map(|(.., index)| *index).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1]);
}

#[tokio::test]
async fn concurrent_live_sessions_each_play_their_own_script() {
    let seen = Seen::default();
    let emulator = ClaudeEmulator::start(gated_scripts(&seen)).await.unwrap();
    let provider = provider(&emulator);
    // The tool returns only once both sessions are in it: each is mid-script before either finishes.
    let barrier = Arc::new(Barrier::new(2));
    let handler = tool_fn(move |_, input| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            Ok(format!("passed {}", input["who"].as_str().unwrap_or_default()))
        }
    });
    let mut alpha = Session::start(Arc::clone(&provider), handler.clone(), options(&emulator, "alpha")).await.unwrap();
    let mut beta = Session::start(Arc::clone(&provider), handler, options(&emulator, "beta")).await.unwrap();
    let (a, b) = tokio::time::timeout(DEADLINE, async { tokio::join!(alpha.next_result(), beta.next_result()) })
        .await
        .expect("both sessions finish");
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_played(&a, "alpha");
    assert_played(&b, "beta");

    let alpha_id = alpha.session_id().unwrap().to_string();
    let beta_id = beta.session_id().unwrap().to_string();
    assert_ne!(alpha_id, beta_id);
    // The factory was called once per session, with its id and kickoff.
    assert_factory_told(&seen, [(&alpha_id, "alpha"), (&beta_id, "beta")]);
    assert_eq!(emulator.custom_tool_results_posted(&alpha_id), ["call_alpha"]);
    assert_eq!(emulator.custom_tool_results_posted(&beta_id), ["call_beta"]);
    let messages = |id: &str| -> Vec<Value> {
        emulator
            .history(id)
            .into_iter()
            .filter(|e| e["type"] == "agent.message")
            .map(|e| e["content"].clone())
            .collect()
    };
    assert_eq!(messages(&alpha_id), [json!([{"type": "text", "text": "done alpha"}])]);
    assert_eq!(messages(&beta_id), [json!([{"type": "text", "text": "done beta"}])]);

    // Alpha's script is spent: one more message is an unexpected model call, counted on alpha's two turns
    // (not the four the sessions played together).
    alpha.message("once more").unwrap();
    let _ = tokio::time::timeout(DEADLINE, alpha.next_result()).await.expect("alpha answers");
    assert_eq!(
        session_error(&emulator.history(&alpha_id)).as_deref(),
        Some("unexpected model call: the script has only 2 turns")
    );
    assert_eq!(session_error(&emulator.history(&beta_id)), None, "beta is untouched");
    alpha.close().await;
    beta.close().await;
}

#[tokio::test]
async fn each_session_meets_its_own_injected_http_error_once() {
    // 529 is refused before processing, so the client posts the kickoff again.
    let refused = ScriptTurn::text("after a refusal")
        .with_fault(Fault::HttpError { status: 529, retry_after: Some(Duration::from_millis(1)) });
    let scripts = Scripts::per_session(move |_| Script::new().turn(refused.clone()));
    let emulator = ClaudeEmulator::start(scripts).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let (a, b) = tokio::join!(
        Session::run(&*provider, echo.clone(), options(&emulator, "one")),
        Session::run(&*provider, echo.clone(), options(&emulator, "two")),
    );
    for result in [a.unwrap(), b.unwrap()] {
        assert_eq!(result.text, "after a refusal");
        let id = result.session_id.unwrap();
        let posts = emulator.requests_to("POST", &format!("/v1/sessions/{id}/events")).len();
        assert_eq!(posts, 2, "session {id}: its kickoff refused once, then played");
    }
}

#[tokio::test]
async fn a_shared_script_hands_its_turns_to_whichever_session_asks() {
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let provider = provider(&emulator);
    let echo = tool_fn(|_, _| async { Ok(String::new()) });
    let one = Session::run(&*provider, echo.clone(), options(&emulator, "one")).await.unwrap();
    let two = Session::run(&*provider, echo.clone(), options(&emulator, "two")).await.unwrap();
    assert_eq!((one.text.as_str(), two.text.as_str()), ("first", "second"));
    // A third session finds the script spent, counted over every session.
    let _ = Session::run(&*provider, echo, options(&emulator, "three")).await;
    let sessions: BTreeSet<String> = emulator
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/events"))
        .filter_map(|r| r.path.split('/').nth(3).map(str::to_string))
        .collect();
    assert_eq!(sessions.len(), 3);
    let errors: Vec<String> = sessions.iter().filter_map(|id| session_error(&emulator.history(id))).collect();
    assert_eq!(errors, ["unexpected model call: the script has only 2 turns"], "only the third session ran out");
}
