//! Claude Managed Agents webhooks: verifying a delivery and reading what it says.
//!
//! Anthropic signs each delivery the [Standard Webhooks](https://www.standardwebhooks.com/) way: headers
//! `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64>` entries, an
//! HMAC-SHA256 over `id.timestamp.body` with the endpoint's `whsec_` signing secret). [`WebhookVerifier`] checks
//! all of it with the maintained `standardwebhooks` crate — the signature in constant time, the timestamp
//! within five minutes of this machine's clock either way — and only then parses the body into a
//! [`WebhookEvent`]. Verify the raw body as received: JSON parsed and serialized again no longer matches.
//!
//! Deliveries can repeat (a retry keeps its `webhook-id`, which is also the event's `id`) and come in any order:
//! `managed_agents_host::Host::wake_session` takes the id and does nothing for one it has seen.
//!
//! ```
//! use managed_agents_claude::webhooks::WebhookVerifier;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The secret the Console showed when the endpoint was created (`WebhookVerifier::from_env` reads
//! // ANTHROPIC_WEBHOOK_SIGNING_KEY).
//! let verifier = WebhookVerifier::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")?;
//! let body = br#"{"type":"event","id":"event_01","created_at":"2026-03-18T14:05:22Z",
//!     "data":{"type":"session.status_idled","id":"sesn_01"}}"#;
//! # let timestamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs() as i64;
//! # let signature = verifier.sign("event_01", timestamp, body)?;
//! let mut headers = http::HeaderMap::new();
//! headers.insert("webhook-id", "event_01".parse()?);
//! headers.insert("webhook-timestamp", timestamp.to_string().parse()?);
//! headers.insert("webhook-signature", signature.parse()?);
//!
//! let event = verifier.verify(&headers, body)?;
//! assert_eq!(event.kind, "session.status_idled");
//! assert_eq!(event.session_id.as_deref(), Some("sesn_01"));
//! assert!(event.wakes_a_session());
//! # Ok(())
//! # }
//! ```

use managed_agents_core::{Error, Secret, env_var};
use serde_json::Value;

/// Where [`WebhookVerifier::from_env`] reads the signing secret (the name the official SDKs read too).
pub const WEBHOOK_SIGNING_KEY_ENV: &str = "ANTHROPIC_WEBHOOK_SIGNING_KEY";

/// The event types after which a session may have work for the client: it went idle (possibly waiting on a
/// custom tool's result or a confirmation), a thread went idle, an outcome was evaluated.
pub const WAKING_EVENTS: &[&str] = &[
    "session.status_idled",
    "session.idled",
    "session.requires_action",
    "session.thread_idled",
    "session.outcome_evaluation_ended",
];

/// Checks and reads webhook deliveries signed with one endpoint's secret. Its `Debug` output never shows the
/// secret.
pub struct WebhookVerifier {
    webhook: standardwebhooks::Webhook,
}

impl std::fmt::Debug for WebhookVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookVerifier").field("secret", &"[redacted]").finish()
    }
}

impl WebhookVerifier {
    /// A verifier for the signing secret `secret` (`whsec_` and base64). [`Error::InvalidOption`] for a secret
    /// that is not one; the error never repeats it.
    pub fn new(secret: impl Into<Secret>) -> Result<Self, Error> {
        let secret = secret.into();
        if secret.expose().trim().is_empty() {
            return Err(Error::invalid_option("webhook_secret", "must not be empty"));
        }
        let webhook = standardwebhooks::Webhook::new(secret.expose())
            .map_err(|_| Error::invalid_option("webhook_secret", "is not a `whsec_` signing secret (base64)"))?;
        Ok(Self { webhook })
    }

    /// A verifier for the secret in [`WEBHOOK_SIGNING_KEY_ENV`].
    pub fn from_env() -> Result<Self, Error> {
        let secret = env_var(WEBHOOK_SIGNING_KEY_ENV)
            .ok_or_else(|| Error::invalid_option("webhook_secret", format!("{WEBHOOK_SIGNING_KEY_ENV} is not set")))?;
        Self::new(secret)
    }

    /// Checks the delivery's headers against `body` (the raw bytes received) and reads the event. Every refusal
    /// is a [`WebhookError`] saying which check failed; nothing is parsed before the signature holds.
    pub fn verify(&self, headers: &http::HeaderMap, body: &[u8]) -> Result<WebhookEvent, WebhookError> {
        self.webhook.verify(body, headers).map_err(WebhookError::from_standard)?;
        let raw: Value = serde_json::from_slice(body).map_err(|error| WebhookError::Payload(error.to_string()))?;
        let event = WebhookEvent::read(raw)?;
        // The signed id names the delivery; an event whose own id differs is not the one signed for.
        let header = headers.get("webhook-id").and_then(|value| value.to_str().ok()).unwrap_or_default();
        if event.id != header {
            return Err(WebhookError::Payload(format!("the event id `{}` is not the delivery's `{header}`", event.id)));
        }
        Ok(event)
    }

    /// The `webhook-signature` value for delivery `id` at `timestamp` (Unix seconds) of `body`: for emulators and
    /// tests that deliver webhooks.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> Result<String, Error> {
        self.webhook
            .sign(id, timestamp, body)
            .map_err(|error| Error::invalid_option("webhook_secret", format!("cannot sign: {error}")))
    }
}

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// A `webhook-*` header is missing or unreadable.
    #[error("the webhook delivery lacks a readable `{0}` header")]
    Header(&'static str),
    /// No signature of the delivery matches its body under the secret.
    #[error("no webhook signature matches the body")]
    Signature,
    /// The timestamp is more than five minutes from this machine's clock (a replay, or a skewed clock).
    #[error("the webhook timestamp is outside the five-minute window")]
    Timestamp,
    /// The signed body is not a webhook event.
    #[error("the webhook body is not an event: {0}")]
    Payload(String),
}

impl WebhookError {
    fn from_standard(error: standardwebhooks::WebhookError) -> Self {
        use standardwebhooks::WebhookError as Standard;
        let header = |name: &str| {
            if name.contains("timestamp") {
                "webhook-timestamp"
            } else if name.contains("signature") {
                "webhook-signature"
            } else {
                "webhook-id"
            }
        };
        match error {
            Standard::MissingHeader(name) | Standard::InvalidHeader(name) => Self::Header(header(name)),
            Standard::InvalidTimestamp => Self::Header("webhook-timestamp"),
            Standard::TimestampTooOldError | Standard::FutureTimestampError => Self::Timestamp,
            Standard::InvalidPayload => Self::Payload("unreadable".into()),
            _ => Self::Signature,
        }
    }
}

/// A verified webhook event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WebhookEvent {
    /// The event's id (also the delivery's `webhook-id`): the same on every retry of it.
    pub id: String,
    /// What happened: `data.type` (`session.status_idled`, `session.thread_idled`, `vault.created` …). Types
    /// this crate does not know are passed on as they are.
    pub kind: String,
    /// The session it is about (`data.id` of a `session.*` event).
    pub session_id: Option<String>,
    /// The thread it is about (`data.session_thread_id`), for thread events.
    pub thread_id: Option<String>,
    /// When it happened, as sent (RFC 3339).
    pub created_at: Option<String>,
    /// The whole event, as received.
    pub raw: Value,
}

impl WebhookEvent {
    fn read(raw: Value) -> Result<Self, WebhookError> {
        let data = raw
            .get("data")
            .filter(|data| data.is_object())
            .ok_or_else(|| WebhookError::Payload("no `data` object".into()))?;
        let kind = data["type"].as_str().ok_or_else(|| WebhookError::Payload("no `data.type`".into()))?.to_string();
        let text = |value: &Value| value.as_str().map(str::to_string);
        let session_id = if kind.starts_with("session.") { text(&data["id"]) } else { None };
        let id = text(&raw["id"]).filter(|id| !id.is_empty()).ok_or_else(|| WebhookError::Payload("no `id`".into()))?;
        Ok(Self {
            id,
            session_id,
            thread_id: text(&data["session_thread_id"]),
            created_at: text(&raw["created_at"]),
            kind,
            raw,
        })
    }

    /// Whether the event may leave its session with work for the client ([`WAKING_EVENTS`]).
    pub fn wakes_a_session(&self) -> bool {
        self.session_id.is_some() && WAKING_EVENTS.contains(&self.kind.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn now() -> i64 {
        i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs())
            .unwrap_or(i64::MAX)
    }

    fn delivery(verifier: &WebhookVerifier, id: &str, timestamp: i64, body: &[u8]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", id.parse().unwrap());
        headers.insert("webhook-timestamp", timestamp.to_string().parse().unwrap());
        headers.insert("webhook-signature", verifier.sign(id, timestamp, body).unwrap().parse().unwrap());
        headers
    }

    const BODY: &[u8] = br#"{"type":"event","id":"event_1","created_at":"2026-03-18T14:05:22Z","data":{"type":"session.thread_idled","id":"sesn_1","session_thread_id":"sthr_2"}}"#;

    #[test]
    fn a_good_delivery_is_read() {
        let verifier = WebhookVerifier::new(SECRET).unwrap();
        let event = verifier.verify(&delivery(&verifier, "event_1", now(), BODY), BODY).unwrap();
        assert_eq!((event.id.as_str(), event.kind.as_str()), ("event_1", "session.thread_idled"));
        assert_eq!((event.session_id.as_deref(), event.thread_id.as_deref()), (Some("sesn_1"), Some("sthr_2")));
        assert!(event.wakes_a_session());
    }

    #[test]
    fn each_broken_delivery_is_refused_with_what_failed() {
        let verifier = WebhookVerifier::new(SECRET).unwrap();
        let good = delivery(&verifier, "event_1", now(), BODY);
        let tampered = BODY.to_vec().into_iter().map(|b| if b == b'1' { b'9' } else { b }).collect::<Vec<u8>>();
        assert_eq!(verifier.verify(&good, &tampered), Err(WebhookError::Signature));
        let other = WebhookVerifier::new("whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh").unwrap();
        assert_eq!(other.verify(&good, BODY), Err(WebhookError::Signature));
        let old = delivery(&verifier, "event_1", now() - 600, BODY);
        assert_eq!(verifier.verify(&old, BODY), Err(WebhookError::Timestamp));
        let mut missing = good.clone();
        missing.remove("webhook-signature");
        assert_eq!(verifier.verify(&missing, BODY), Err(WebhookError::Header("webhook-signature")));
        let relabelled = delivery(&verifier, "event_7", now(), BODY);
        assert!(matches!(verifier.verify(&relabelled, BODY), Err(WebhookError::Payload(_))));
        let anonymous = br#"{"type":"event","data":{"type":"session.status_idled","id":"sesn_1"}}"#;
        let signed = delivery(&verifier, "event_1", now(), anonymous);
        assert!(matches!(verifier.verify(&signed, anonymous), Err(WebhookError::Payload(_))), "an event needs its id");
        let mut unreadable = good.clone();
        unreadable.insert("webhook-signature", http::HeaderValue::from_bytes(b"v1,\xff").unwrap());
        assert_eq!(verifier.verify(&unreadable, BODY), Err(WebhookError::Header("webhook-signature")));
        let not_json = b"not json";
        let signed = delivery(&verifier, "event_1", now(), not_json);
        assert!(matches!(verifier.verify(&signed, not_json), Err(WebhookError::Payload(_))));
    }

    #[test]
    fn a_bad_secret_is_refused_and_never_printed() {
        for bad in ["", "whsec_***not base64***"] {
            let error = WebhookVerifier::new(bad).unwrap_err();
            assert!(matches!(error, Error::InvalidOption { option: "webhook_secret", .. }), "{error}");
            if !bad.is_empty() {
                assert!(!error.to_string().contains(bad));
            }
        }
        let verifier = WebhookVerifier::new(SECRET).unwrap();
        assert!(!format!("{verifier:?}").contains("MfKQ"), "{verifier:?}");
    }

    #[test]
    fn events_about_other_things_wake_nothing() {
        let body = br#"{"type":"event","id":"event_2","data":{"type":"vault.created","id":"vlt_1"}}"#;
        let verifier = WebhookVerifier::new(SECRET).unwrap();
        let event = verifier.verify(&delivery(&verifier, "event_2", now(), body), body).unwrap();
        assert_eq!((event.session_id.as_deref(), event.wakes_a_session()), (None, false));
    }
}
