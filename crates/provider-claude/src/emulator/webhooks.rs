//! Webhooks: with [`EmulatorOptions::with_webhooks`], each time a session goes idle the emulator POSTs a signed
//! `session.status_idled` event to the endpoint, in the background, and records how each delivery went
//! ([`WebhookDelivery`]).
//!
//! [`EmulatorOptions::with_webhooks`]: crate::emulator::EmulatorOptions::with_webhooks

use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use managed_agents_core::http::{Bytes, HeaderValue, HttpClient, Method, Request, RequestBody, Uri};
use serde_json::json;
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::emulator::options::WebhookEndpoint;
use crate::emulator::records::{Micros, format_rfc3339};
use crate::webhooks::WebhookVerifier;

/// How long a delivery may take to connect, and then to get its response's head.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// The organization and workspace every delivery names.
const ORGANIZATION_ID: &str = "org_emulator";
const WORKSPACE_ID: &str = "wrkspc_emulator";

/// One webhook delivery the emulator made, recorded once its POST finished.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookDelivery {
    /// The event's id, also its `webhook-id` header (`event_<n>`, counted per emulator from 1).
    pub id: String,
    /// The session that went idle.
    pub session_id: String,
    /// The status the endpoint answered; `None` when the POST failed (no connection, no response in time).
    pub status: Option<u16>,
    /// Why the POST failed, in words; `None` when the endpoint answered (whatever its status).
    pub error: Option<String>,
}

/// Every delivery recorded so far, in the order their POSTs finished; waiters subscribe to it.
pub(super) type Deliveries = watch::Sender<Vec<WebhookDelivery>>;

/// What the emulator needs to deliver webhooks to one endpoint.
pub(super) struct Webhooks {
    uri: Uri,
    signer: Arc<WebhookVerifier>,
    client: HttpClient,
    runtime: Handle,
    next: u64,
    deliveries: Deliveries,
}

impl Webhooks {
    /// Deliveries to `endpoint`, recorded into `deliveries`, sent on the current runtime. `InvalidInput` for a
    /// secret that is not a signing secret or a URL that is not absolute `http(s)` (neither is repeated).
    pub(super) fn new(endpoint: &WebhookEndpoint, deliveries: Deliveries) -> io::Result<Self> {
        let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
        let signer = WebhookVerifier::new(endpoint.secret.clone()).map_err(|error| invalid(error.to_string()))?;
        let uri = endpoint
            .url
            .parse::<Uri>()
            .ok()
            .filter(|uri| matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some())
            .ok_or_else(|| invalid("the webhook URL is not an absolute http(s) URL".into()))?;
        let client = HttpClient::new(DELIVERY_TIMEOUT).map_err(|error| invalid(error.to_string()))?;
        let runtime = Handle::try_current().map_err(|error| io::Error::other(error.to_string()))?;
        Ok(Self { uri, signer: Arc::new(signer), client, runtime, next: 0, deliveries })
    }

    /// Delivers one `session.status_idled` event for `session_id` in the background; the POST's outcome is
    /// recorded when it finishes. Never blocks and never fails: a delivery that cannot even be built is recorded
    /// (and logged) as failed.
    pub(super) fn session_idled(&mut self, session_id: &str) {
        self.next += 1;
        let id = format!("event_{}", self.next);
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let created_at = format_rfc3339(Micros::try_from(wall.as_micros()).unwrap_or(Micros::MAX));
        let timestamp = i64::try_from(wall.as_secs()).unwrap_or(i64::MAX);
        let body = json!({"type": "event", "id": id, "created_at": created_at,
            "data": {"type": "session.status_idled", "id": session_id,
                     "organization_id": ORGANIZATION_ID, "workspace_id": WORKSPACE_ID}})
        .to_string();
        let mut delivery = WebhookDelivery { id, session_id: session_id.to_string(), status: None, error: None };
        let request = match self.request(&delivery.id, timestamp, body) {
            Ok(request) => request,
            Err(error) => {
                tracing::warn!(id = %delivery.id, %error, "the emulator could not build a webhook delivery");
                delivery.error = Some(error);
                self.deliveries.send_modify(|all| all.push(delivery));
                return;
            }
        };
        let client = self.client.clone();
        let deliveries = self.deliveries.clone();
        self.runtime.spawn(async move {
            match client.send(request, DELIVERY_TIMEOUT).await {
                Ok(response) => {
                    let status = response.status();
                    if !status.is_success() {
                        tracing::warn!(id = %delivery.id, %status, "the webhook endpoint refused a delivery");
                    }
                    delivery.status = Some(status.as_u16());
                }
                Err(error) => {
                    tracing::warn!(id = %delivery.id, %error, "the emulator could not deliver a webhook");
                    delivery.error = Some(error.to_string());
                }
            }
            deliveries.send_modify(|all| all.push(delivery));
        });
    }

    /// The signed POST of `body` as delivery `id` at `timestamp` (Unix seconds).
    fn request(&self, id: &str, timestamp: i64, body: String) -> Result<Request<RequestBody>, String> {
        let signature = self.signer.sign(id, timestamp, body.as_bytes()).map_err(|error| error.to_string())?;
        let header = |value: &str| HeaderValue::from_str(value).map_err(|error| error.to_string());
        Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header("content-type", HeaderValue::from_static("application/json"))
            .header("webhook-id", header(id)?)
            .header("webhook-timestamp", HeaderValue::from(timestamp))
            .header("webhook-signature", header(&signature)?)
            .body(RequestBody::new(Bytes::from(body)))
            .map_err(|error| error.to_string())
    }
}
