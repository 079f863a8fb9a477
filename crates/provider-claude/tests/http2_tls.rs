//! Live Claude sessions over TLS on loopback, with the client's defaults (HTTP/2 where the server offers it):
//! more live sessions than a connection allows streams, a `GOAWAY` in the middle of every session, and a server
//! that only speaks HTTP/1.1.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_conformance::emulator::TEST_RETRY;
use managed_agents_conformance::{Script, ScriptTurn, Scripts};
use managed_agents_core::http::server::{ServerOptions, ServerTls};
use managed_agents_core::{Handler, Session, SessionOptions, SessionResult, tool_fn};
use serde_json::json;
use tokio::sync::Barrier;

const DEADLINE: Duration = Duration::from_secs(30);

async fn emulator(tls: ServerTls, max_streams: Option<u32>, scripts: Scripts) -> Arc<ClaudeEmulator> {
    let server = ServerOptions::default().tls(Some(tls)).max_concurrent_streams(max_streams);
    Arc::new(ClaudeEmulator::start_with(scripts, EmulatorOptions::default().with_server(server)).await.unwrap())
}

/// Each session calls `gate` with its prompt (`then` more tools after it), then answers `done <prompt>`.
fn gated(then: &'static [&'static str]) -> Scripts {
    Scripts::per_session(move |session| {
        let who = session.prompt().unwrap_or_default().to_string();
        let script = Script::new().turn(ScriptTurn::tool_call(format!("gate_{who}"), "gate", json!({"who": who})));
        then.iter()
            .fold(script, |script, tool| script.turn(ScriptTurn::tool_call(format!("{tool}_{who}"), *tool, json!({}))))
            .turn(ScriptTurn::text(format!("done {who}")))
    })
}

/// Runs `sessions` sessions at once through one provider built by the emulator (trusting its certificate).
async fn run_all(emulator: &ClaudeEmulator, sessions: usize, handler: Arc<dyn Handler>) -> Vec<SessionResult> {
    let provider = Arc::new(emulator.provider_builder().retry(TEST_RETRY).build().unwrap());
    let runs = (0..sessions).map(|index| {
        let (provider, handler) = (Arc::<ClaudeManagedAgents>::clone(&provider), Arc::clone(&handler));
        let (agent, environment) = emulator.seed_agent();
        let options = SessionOptions::new()
            .agent_id(agent)
            .environment_id(environment)
            .prompt(format!("s{index}"))
            .timeout(DEADLINE);
        async move { Session::run(&*provider, handler, options).await }
    });
    let results = tokio::time::timeout(DEADLINE, futures_util::future::join_all(runs)).await.expect("in time");
    results.into_iter().map(|result| result.expect("the session completes")).collect()
}

fn streams_opened(emulator: &ClaudeEmulator, session_id: &str) -> usize {
    emulator.requests_to("GET", &format!("/v1/sessions/{session_id}/events/stream")).len()
}

/// What the first session at the gate does while the others wait.
type AtGate = Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// A `gate` tool that returns once `sessions` sessions are all in it (so all are live at once) and `at_gate`,
/// run once by one of them, has completed.
fn gate(sessions: usize, at_gate: Option<AtGate>) -> Arc<dyn Handler> {
    let (arrived, released) = (Arc::new(Barrier::new(sessions)), Arc::new(Barrier::new(sessions)));
    let at_gate = Arc::new(at_gate);
    Arc::new(tool_fn(move |_, input| {
        let (arrived, released, at_gate) = (Arc::clone(&arrived), Arc::clone(&released), Arc::clone(&at_gate));
        async move {
            if input.get("who").is_some() {
                if arrived.wait().await.is_leader()
                    && let Some(at_gate) = &*at_gate
                {
                    at_gate().await;
                }
                released.wait().await;
            }
            Ok("passed".to_string())
        }
    }))
}

fn assert_done(results: &[SessionResult], emulator: &ClaudeEmulator, tools: &[&str]) {
    for (index, result) in results.iter().enumerate() {
        assert_eq!(result.text, format!("done s{index}"));
        let id = result.session_id.as_deref().unwrap();
        let expected: Vec<String> = tools.iter().map(|tool| format!("{tool}_s{index}")).collect();
        assert_eq!(emulator.custom_tool_results_posted(id), expected, "each tool result posted once");
    }
}

#[tokio::test]
async fn ten_live_sessions_on_a_server_allowing_three_streams_share_four_connections() {
    let emulator = emulator(ServerTls::Http2AndHttp1, Some(3), gated(&[])).await;
    let results = run_all(&emulator, 10, gate(10, None)).await;
    assert_done(&results, &emulator, &["gate"]);
    // Ten event streams open at the gate, three to a connection: ⌈10 / 3⌉ connections, the other requests
    // queued into their free streams.
    assert_eq!(emulator.connections(), 4);
}

#[tokio::test]
async fn a_goaway_in_the_middle_of_every_session_reconnects_them_and_posts_each_result_once() {
    let emulator = emulator(ServerTls::Http2AndHttp1, None, gated(&["after"])).await;
    let server = Arc::clone(&emulator);
    // At the gate every session is live on the one connection; the server sends it away and, its grace over,
    // cuts it with the sessions' event streams. Then the sessions post their results and wait for their next
    // turn.
    let go_away: AtGate = Box::new(move || Box::pin(server.go_away(Duration::from_millis(20))));
    let results = run_all(&emulator, 4, gate(4, Some(go_away))).await;
    assert_done(&results, &emulator, &["gate", "after"]);
    for result in &results {
        let id = result.session_id.as_deref().unwrap();
        assert!(streams_opened(&emulator, id) >= 2, "session {id} reconnected its stream");
    }
    assert!(emulator.connections() >= 2, "the sessions moved to a new connection");
}

#[tokio::test]
async fn a_tls_server_without_http2_is_spoken_to_over_http1() {
    let emulator = emulator(ServerTls::Http1Only, None, gated(&[])).await;
    let results = run_all(&emulator, 3, gate(3, None)).await;
    assert_done(&results, &emulator, &["gate"]);
    // HTTP/1.1: a connection per live stream at the gate (HTTP/2 would have used one for all), besides the dial
    // that learnt the server's choice.
    assert!(emulator.connections() >= 4, "{} connections", emulator.connections());
}
