//! Our webhook verification agrees with the official `anthropic` Python SDK's (`client.beta.webhooks.unwrap`,
//! over the Standard Webhooks library) on the same deliveries: good ones accepted by both; a tampered body, a
//! wrong secret, an old timestamp and a missing signature refused by both; and deliveries the SDK's library signs
//! are accepted by ours. Runs when `MANAGED_AGENTS_SDK_PYTHON` names a Python with `tests/sdk/requirements.txt`
//! (`.ci/run` sets it up); without it the test says so and checks nothing (`MANAGED_AGENTS_REQUIRE_SDK=1` makes
//! that a failure).

use managed_agents_claude::webhooks::{WebhookError, WebhookVerifier};
use serde_json::{Value, json};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER_SECRET: &str = "whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh";

fn now() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

fn body(id: &str, kind: &str) -> String {
    json!({"type": "event", "id": id, "created_at": "2026-12-03T10:00:00Z",
           "data": {"type": kind, "id": "sesn_1", "organization_id": "org_1", "workspace_id": "w_1"}})
    .to_string()
}

/// One delivery: its headers (name → value) and body.
struct Delivery {
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Delivery {
    fn signed(signer: &str, id: &str, timestamp: i64, body: String) -> Self {
        let signature = WebhookVerifier::new(signer).unwrap().sign(id, timestamp, body.as_bytes()).unwrap();
        let headers = vec![
            ("webhook-id", id.to_string()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", signature),
        ];
        Self { headers, body }
    }

    fn header_map(&self) -> http::HeaderMap {
        self.headers.iter().map(|(name, value)| (http::HeaderName::from_static(name), value.parse().unwrap())).collect()
    }

    fn ours(&self) -> Result<String, WebhookError> {
        WebhookVerifier::new(SECRET).unwrap().verify(&self.header_map(), self.body.as_bytes()).map(|event| event.kind)
    }

    fn case(&self) -> Value {
        let headers: serde_json::Map<String, Value> =
            self.headers.iter().map(|(name, value)| ((*name).to_string(), json!(value))).collect();
        json!({"secret": SECRET, "headers": headers, "body": self.body})
    }
}

#[test]
fn our_verification_agrees_with_the_official_python_sdk() {
    let Some(python) = std::env::var_os("MANAGED_AGENTS_SDK_PYTHON").filter(|python| !python.is_empty()) else {
        assert!(std::env::var_os("MANAGED_AGENTS_REQUIRE_SDK").is_none(), "MANAGED_AGENTS_SDK_PYTHON is not set");
        eprintln!("skipped: MANAGED_AGENTS_SDK_PYTHON is not set");
        return;
    };
    let good = Delivery::signed(SECRET, "event_1", now(), body("event_1", "session.status_idled"));
    let thread = Delivery::signed(SECRET, "event_2", now(), body("event_2", "session.thread_idled"));
    let mut tampered = Delivery::signed(SECRET, "event_3", now(), body("event_3", "session.status_idled"));
    tampered.body = tampered.body.replace("sesn_1", "sesn_9");
    let wrong_secret = Delivery::signed(OTHER_SECRET, "event_4", now(), body("event_4", "session.status_idled"));
    let old = Delivery::signed(SECRET, "event_5", now() - 600, body("event_5", "session.status_idled"));
    let mut unsigned = Delivery::signed(SECRET, "event_6", now(), body("event_6", "session.status_idled"));
    unsigned.headers.retain(|(name, _)| *name != "webhook-signature");
    let cases = [&good, &thread, &tampered, &wrong_secret, &old, &unsigned];

    let to_sign = [("event_7", now()), ("event_8", now() - 30)];
    let input = json!({
        "verify": cases.iter().map(|delivery| delivery.case()).collect::<Vec<_>>(),
        "sign": to_sign.iter().map(|(id, timestamp)| json!({
            "secret": SECRET, "id": id, "timestamp": timestamp, "body": body(id, "session.outcome_evaluation_ended")
        })).collect::<Vec<_>>(),
    });
    let script: std::path::PathBuf = [env!("CARGO_MANIFEST_DIR"), "sdk", "claude_sdk_webhooks.py"].iter().collect();
    let mut child = std::process::Command::new(python)
        .arg(script)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the Python interpreter runs");
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the SDK check failed: {}", String::from_utf8_lossy(&output.stderr));
    let answer: Value = serde_json::from_slice(&output.stdout).expect("the script's JSON");

    let sdk: Vec<&str> = answer["verify"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(&sdk[..2], ["ok session.status_idled", "ok session.thread_idled"], "{sdk:?}");
    assert!(sdk[2..].iter().all(|verdict| verdict.starts_with("refused ")), "{sdk:?}");
    let ours: Vec<Result<String, WebhookError>> = cases.iter().map(|delivery| delivery.ours()).collect();
    assert_eq!(ours[0], Ok("session.status_idled".into()));
    assert_eq!(ours[1], Ok("session.thread_idled".into()));
    assert_eq!(
        ours[2..],
        [
            Err(WebhookError::Signature),
            Err(WebhookError::Signature),
            Err(WebhookError::Timestamp),
            Err(WebhookError::Header("webhook-signature"))
        ]
    );

    // Signed by the SDK's own library: accepted by ours.
    for ((id, timestamp), signature) in to_sign.iter().zip(answer["sign"].as_array().unwrap()) {
        let delivery = Delivery {
            headers: vec![
                ("webhook-id", (*id).to_string()),
                ("webhook-timestamp", timestamp.to_string()),
                ("webhook-signature", signature.as_str().unwrap().to_string()),
            ],
            body: body(id, "session.outcome_evaluation_ended"),
        };
        assert_eq!(delivery.ours(), Ok("session.outcome_evaluation_ended".into()), "{id}");
    }
}
