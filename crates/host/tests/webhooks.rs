//! Webhooks that wake parked conversations, on every store: a conversation answered and left idle; then
//! someone else posts to its session (a message from another client of the same session), the loop host calls a
//! custom tool and parks on `requires_action` with nobody listening. Deliveries come as Anthropic sends them
//! (Standard Webhooks, signed with the endpoint's secret): one with a bad signature and one with an old timestamp
//! are refused and wake nothing; a good one wakes the conversation and a worker answers the call; the same
//! delivery again changes nothing.
//!
//! End to end, the emulator delivers its own signed webhooks to an endpoint on loopback that verifies them and
//! wakes the conversation, while a worker runs: the parked call is answered with no stream open and no poll of
//! the session.
//!
//! Each test's PostgreSQL store is a schema of its own; PostgreSQL tests are ignored, with the reason, without a
//! database.

mod support;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::webhooks::{WebhookError, WebhookVerifier};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::conversation::ConversationStatus;
use managed_agents_core::http::StatusCode;
use managed_agents_core::http::server::{LoopbackServer, empty_response};
use managed_agents_core::inbox::MessageState;
use managed_agents_core::{ToolResult, tool_fn};
use managed_agents_host::{Host, Wake, Worker, WorkerSettings};
use serde_json::json;
use support::{Place, Test, unique};

const TESTS: &[(&str, Test)] = crate::store_tests![
    a_signed_webhook_wakes_a_parked_conversation,
    the_emulators_own_webhooks_keep_a_parked_conversation_going,
];

fn main() -> std::process::ExitCode {
    support::run_on_every_store_in(TESTS, Place::isolated)
}

/// The longest any wait here may take.
const PATIENCE: Duration = Duration::from_secs(30);

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn now() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

/// A delivery of `session.status_idled` for `session_id` as Anthropic sends it, signed by `signer` at `timestamp`.
fn delivery(signer: &WebhookVerifier, id: &str, session_id: &str, timestamp: i64) -> (http::HeaderMap, Vec<u8>) {
    let body = json!({
        "type": "event", "id": id, "created_at": "2026-12-03T10:00:00Z",
        "data": {"type": "session.status_idled", "id": session_id, "organization_id": "org_1", "workspace_id": "w_1"}
    })
    .to_string()
    .into_bytes();
    let mut headers = http::HeaderMap::new();
    headers.insert("webhook-id", id.parse().unwrap());
    headers.insert("webhook-timestamp", timestamp.to_string().parse().unwrap());
    headers.insert("webhook-signature", signer.sign(id, timestamp, &body).unwrap().parse().unwrap());
    (headers, body)
}

/// What a web endpoint does with a delivery: verify, then wake the session's conversation.
async fn receive(
    host: &Host,
    verifier: &WebhookVerifier,
    (headers, body): (http::HeaderMap, Vec<u8>),
) -> Result<Wake, WebhookError> {
    let event = verifier.verify(&headers, &body)?;
    assert!(event.wakes_a_session());
    let session_id = event.session_id.expect("a session event");
    Ok(host.wake_session(&session_id, Some(&event.id)).await.expect("wake"))
}

async fn a_signed_webhook_wakes_a_parked_conversation(place: Place) {
    let call = support::call_id("work");
    let script = Script::new()
        .turn(ScriptTurn::text("hello"))
        .turn(ScriptTurn::tool_call(&call, "work", json!({})))
        .turn(ScriptTurn::text("done"));
    let (emulator, provider, agent) = support::claude(script).await;
    let handler = tool_fn(|name, _| async move { Ok(format!("{name} ran")) });
    let host = Host::builder(provider, place.open().await, handler).agent(agent).build().expect("host");
    let worker = Worker::new(host.clone(), WorkerSettings::new()).expect("worker");
    let id = unique("parked");

    // Answered, then left idle.
    let first = host.enqueue(&id, "hi").await.expect("enqueue");
    assert_eq!(worker.run_once().await.expect("run once"), 1);
    assert_eq!(host.message(first.id).await.unwrap().unwrap().result.expect("answered").text, "hello");
    let record = host.conversation(&id).await.unwrap().unwrap();
    let session_id = record.session_id.clone().expect("a session");

    // Another client of the session posts to it: the loop host calls the custom tool and parks.
    let other = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build().unwrap();
    let message = json!({"type": "user.message", "content": [{"type": "text", "text": "please run work"}]});
    other.client().send_events(&session_id, vec![message]).await.expect("posted from elsewhere");
    // The loop host runs that turn on its own time: the webhook below says it parked, so it must have.
    support::wait_until("the session parked on the call", PATIENCE, || async {
        let history = emulator.history(&session_id);
        history.iter().any(|event| event["type"] == "agent.custom_tool_use")
            && history.last().is_some_and(|event| event["type"] == "session.status_idle")
    })
    .await;
    assert_eq!(worker.run_once().await.expect("run once"), 0, "nothing is ready: nobody knows it waits");

    let verifier = WebhookVerifier::new(SECRET).expect("the endpoint's secret");
    let impostor = WebhookVerifier::new("whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh").unwrap();
    let forged = receive(&host, &verifier, delivery(&impostor, "event_1", &session_id, now())).await;
    assert_eq!(forged, Err(WebhookError::Signature));
    let stale = receive(&host, &verifier, delivery(&verifier, "event_1", &session_id, now() - 3600)).await;
    assert_eq!(stale, Err(WebhookError::Timestamp));
    assert_eq!(worker.run_once().await.expect("run once"), 0, "refused deliveries wake nothing");

    let good = receive(&host, &verifier, delivery(&verifier, "event_1", &session_id, now())).await;
    assert_eq!(good, Ok(Wake::Woken { external_id: id.clone() }));
    assert_eq!(worker.run_once().await.expect("run once"), 1, "the woken conversation is claimed");
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work ran")], "answered once");
    let record = host.conversation(&id).await.unwrap().unwrap();
    assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));

    let replayed = receive(&host, &verifier, delivery(&verifier, "event_1", &session_id, now())).await;
    assert_eq!(replayed, Ok(Wake::Replayed));
    let unknown = receive(&host, &verifier, delivery(&verifier, "event_2", "sesn_nobody", now())).await;
    assert_eq!(unknown, Ok(Wake::NoConversation));
    assert_eq!(worker.run_once().await.expect("run once"), 0, "nothing more to do");
    assert_eq!(emulator.log().tool_results().len(), 1);
}

async fn the_emulators_own_webhooks_keep_a_parked_conversation_going(place: Place) {
    // The endpoint: verify, wake, answer 204 (400 for a delivery it refuses).
    let host_cell: Arc<OnceLock<Host>> = Arc::new(OnceLock::new());
    let endpoint = {
        let host_cell = Arc::clone(&host_cell);
        LoopbackServer::start(move |request| {
            let host_cell = Arc::clone(&host_cell);
            async move {
                let verifier = WebhookVerifier::new(SECRET).expect("the secret");
                let Ok(event) = verifier.verify(&request.headers, &request.body) else {
                    return empty_response(StatusCode::BAD_REQUEST);
                };
                if let (Some(host), Some(session_id)) = (host_cell.get(), &event.session_id)
                    && event.wakes_a_session()
                {
                    host.wake_session(session_id, Some(&event.id)).await.expect("wake");
                }
                empty_response(StatusCode::NO_CONTENT)
            }
        })
        .await
        .expect("the endpoint starts")
    };
    let call = support::call_id("work");
    let script = Script::new()
        .turn(ScriptTurn::text("hello"))
        .turn(ScriptTurn::tool_call(&call, "work", json!({})))
        .turn(ScriptTurn::text("done"));
    let options = EmulatorOptions::default().with_webhooks(format!("{}/hooks", endpoint.base_url()), SECRET);
    let emulator = ClaudeEmulator::start_with(script, options).await.expect("the emulator starts");
    let (provider, agent) = support::claude_provider(&emulator);
    let handler = tool_fn(|name, _| async move { Ok(format!("{name} ran")) });
    let host = Host::builder(provider, place.open().await, handler).agent(agent).build().expect("host");
    host_cell.set(host.clone()).expect("set once");
    let worker = Worker::new(host.clone(), WorkerSettings::new().idle_poll(Duration::from_secs(3600))).unwrap();
    let running = {
        let worker = worker.clone();
        tokio::spawn(async move { worker.run_until(std::future::pending()).await })
    };

    let id = unique("webhooked");
    let first = host.enqueue(&id, "hi").await.expect("enqueue");
    assert_eq!(
        tokio::time::timeout(PATIENCE, host.wait(first.id)).await.unwrap().unwrap().state,
        MessageState::Answered
    );
    let session_id = host.conversation(&id).await.unwrap().unwrap().session_id.expect("a session");
    let other = ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build().unwrap();
    let message = json!({"type": "user.message", "content": [{"type": "text", "text": "please run work"}]});
    other.client().send_events(&session_id, vec![message]).await.expect("posted from elsewhere");

    // The idle after the tool call is announced, and the woken conversation answers the call.
    support::wait_until("the parked call answered", PATIENCE, || async { !emulator.log().tool_results().is_empty() })
        .await;
    support::wait_until("the conversation idle again", PATIENCE, || async {
        host.conversation(&id)
            .await
            .unwrap()
            .is_some_and(|record| record.status == ConversationStatus::Idle && record.requests == 2)
    })
    .await;
    running.abort();
    assert_eq!(emulator.log().tool_results(), vec![ToolResult::ok(&call, "work ran")], "answered once");
    let deliveries = emulator.webhook_deliveries();
    assert!(deliveries.len() >= 2, "{deliveries:?}");
    assert!(deliveries.iter().all(|delivery| delivery.status == Some(204)), "{deliveries:?}");
}
