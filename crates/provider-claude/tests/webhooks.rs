//! The emulator's signed webhooks (`EmulatorOptions::with_webhooks`): a session going idle is announced to a
//! receiver on loopback with a `session.status_idled` event that `WebhookVerifier` accepts (and a verifier with
//! another secret refuses), without holding up the session; an endpoint nobody listens on leaves the session
//! working and its delivery recorded as failed.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions, WebhookDelivery};
use managed_agents_claude::webhooks::{WebhookError, WebhookVerifier};
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::http::StatusCode;
use managed_agents_core::http::server::{LoopbackServer, ReceivedRequest, empty_response};
use managed_agents_core::{Session, SessionOptions, SessionResult, Terminal};
use tokio::sync::Notify;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET: &str = "whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh";

/// The longest any wait here may take.
const WAIT: Duration = Duration::from_secs(30);

/// A webhook endpoint on loopback that keeps every request it receives and answers each with 204 once its
/// gate lets it.
struct Receiver {
    server: LoopbackServer,
    received: Arc<Mutex<Vec<ReceivedRequest>>>,
    gate: Arc<Notify>,
}

impl Receiver {
    async fn start() -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Notify::new());
        let (kept, held) = (Arc::clone(&received), Arc::clone(&gate));
        let server = LoopbackServer::start(move |request| {
            let (kept, held) = (Arc::clone(&kept), Arc::clone(&held));
            async move {
                kept.lock().unwrap_or_else(PoisonError::into_inner).push(request);
                held.notified().await;
                empty_response(StatusCode::NO_CONTENT)
            }
        })
        .await
        .expect("the receiver starts on loopback");
        Self { server, received, gate }
    }

    fn url(&self) -> String {
        format!("{}/hooks/claude", self.server.base_url())
    }

    fn received(&self) -> Vec<ReceivedRequest> {
        self.received.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// Runs one session of a one-text-turn script on an emulator with `options`.
async fn run_session(options: EmulatorOptions) -> (ClaudeEmulator, SessionResult) {
    let script = Script::new().turn(ScriptTurn::text("all done"));
    let emulator = ClaudeEmulator::start_with(script, options).await.expect("the emulator starts");
    let provider = emulator.provider_builder().build().expect("the provider builds");
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).timeout(WAIT);
    let result = tokio::time::timeout(WAIT, Session::run(&provider, EchoTools, options))
        .await
        .expect("the session ends in time")
        .expect("the session runs");
    (emulator, result)
}

async fn deliveries(emulator: &ClaudeEmulator, count: usize) -> Vec<WebhookDelivery> {
    tokio::time::timeout(WAIT, emulator.wait_for_webhook_deliveries(count))
        .await
        .expect("the deliveries finish in time")
}

#[tokio::test]
async fn an_idle_session_is_announced_with_a_signed_webhook() {
    let receiver = Receiver::start().await;
    // The receiver holds its answer until the session has ended: the delivery must not hold up the stream.
    let (emulator, result) = run_session(EmulatorOptions::default().with_webhooks(receiver.url(), SECRET)).await;
    assert_eq!((result.terminal, result.text.as_str()), (Terminal::EndTurn, "all done"));
    let session_id = result.session_id.clone().expect("the result names its session");
    assert!(emulator.webhook_deliveries().is_empty(), "no POST has been answered yet");
    receiver.gate.notify_one();

    let finished = deliveries(&emulator, 1).await;
    assert_eq!(finished.len(), 1, "{finished:?}");
    let delivery = &finished[0];
    assert_eq!(delivery.id, "event_1");
    assert_eq!(delivery.session_id, session_id);
    assert_eq!((delivery.status, delivery.error.as_deref()), (Some(204), None));

    let received = receiver.received();
    assert_eq!(received.len(), 1, "one idle, one delivery");
    let request = &received[0];
    assert_eq!((request.method.as_str(), request.uri.path()), ("POST", "/hooks/claude"));
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(header("content-type"), "application/json");
    assert_eq!(header("webhook-id"), "event_1");
    assert!(header("webhook-timestamp").parse::<i64>().is_ok(), "{}", header("webhook-timestamp"));

    let event = WebhookVerifier::new(SECRET).unwrap().verify(&request.headers, &request.body).expect("it verifies");
    assert_eq!(event.id, "event_1");
    assert_eq!(event.kind, "session.status_idled");
    assert_eq!(event.session_id.as_deref(), Some(session_id.as_str()));
    assert!(event.wakes_a_session());
    assert_eq!(event.raw["type"], "event");
    assert_eq!(event.raw["data"]["organization_id"], "org_emulator");
    assert_eq!(event.raw["data"]["workspace_id"], "wrkspc_emulator");
    let created_at = event.created_at.as_deref().unwrap_or_default();
    assert!(created_at.len() > 20 && created_at.ends_with('Z'), "{created_at}");

    let other = WebhookVerifier::new(OTHER_SECRET).unwrap();
    assert_eq!(other.verify(&request.headers, &request.body), Err(WebhookError::Signature));
}

#[tokio::test]
async fn an_unreachable_endpoint_leaves_the_session_working() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/hooks");
    let (emulator, result) = run_session(EmulatorOptions::default().with_webhooks(url, SECRET)).await;
    assert_eq!((result.terminal, result.text.as_str()), (Terminal::EndTurn, "all done"));

    let finished = deliveries(&emulator, 1).await;
    assert_eq!(finished.len(), 1, "{finished:?}");
    let delivery = &finished[0];
    assert_eq!((delivery.id.as_str(), Some(delivery.session_id.clone())), ("event_1", result.session_id.clone()));
    assert_eq!(delivery.status, None);
    let error = delivery.error.as_deref().unwrap_or_default();
    assert!(error.contains(&format!("127.0.0.1:{port}")), "{error}");
}

#[tokio::test]
async fn a_bad_webhook_secret_or_url_refuses_to_start() {
    for options in [
        EmulatorOptions::default().with_webhooks("http://127.0.0.1:9/hooks", "not a signing secret"),
        EmulatorOptions::default().with_webhooks("/hooks", SECRET),
    ] {
        let refused = ClaudeEmulator::start_with(Script::new(), options).await.map(|_| ());
        assert_eq!(refused.map_err(|error| error.kind()), Err(io::ErrorKind::InvalidInput));
    }
}
