//! A claimed work item, read from the queue's JSON: its ids, its state, and the per-item credential its
//! `secret` carries.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use managed_agents_core::{Error, Secret};
use serde_json::Value;

/// The parts of a work item the worker acts on.
#[derive(Debug, Clone)]
pub(crate) struct WorkItem {
    /// `work_…`.
    pub(crate) id: String,
    /// The environment it belongs to.
    pub(crate) environment_id: String,
    /// What the work is (`session`, or another kind — a health check, say — which the worker stops unrun).
    pub(crate) kind: String,
    /// The session, for a `session` item.
    pub(crate) session_id: String,
    /// The bearer token for this item's calls (heartbeats, stop, its session), when the poll gave one.
    pub(crate) sessions_token: Option<Secret>,
}

impl WorkItem {
    /// Reads a polled item; an item without an id is malformed.
    pub(crate) fn from_value(value: &Value, environment_id: &str) -> Result<Self, Error> {
        let text = |field: &Value| field.as_str().unwrap_or_default().to_string();
        let id = text(&value["id"]);
        if id.is_empty() {
            // What the error keeps of the item must not carry its secret.
            let mut shown = value.clone();
            if let Some(item) = shown.as_object_mut() {
                item.remove("secret");
            }
            return Err(Error::malformed("work item", "it has no id", shown.to_string()));
        }
        let environment = text(&value["environment_id"]);
        Ok(Self {
            id,
            environment_id: if environment.is_empty() { environment_id.to_string() } else { environment },
            kind: text(&value["data"]["type"]),
            session_id: text(&value["data"]["id"]),
            sessions_token: value["secret"].as_str().and_then(sessions_token),
        })
    }
}

/// The `sessions_token` inside a work item's `secret`: URL-safe base64 (padded or not) of a JSON object. `None`
/// when the payload does not decode or carries no token (the environment key is used instead). The payload
/// and the token never reach a log.
pub(crate) fn sessions_token(secret: &str) -> Option<Secret> {
    let bytes = URL_SAFE_NO_PAD.decode(secret.trim_end_matches('=')).ok()?;
    let payload: Value = serde_json::from_slice(&bytes).ok()?;
    payload["sessions_token"].as_str().filter(|token| !token.is_empty()).map(Secret::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encoded(payload: &Value, pad: bool) -> String {
        let text = URL_SAFE_NO_PAD.encode(payload.to_string());
        if pad { format!("{text}{}", "=".repeat((4 - text.len() % 4) % 4)) } else { text }
    }

    #[test]
    fn the_sessions_token_is_read_from_padded_and_unpadded_secrets() {
        for pad in [false, true] {
            let secret = encoded(&json!({"sessions_token": "tok-1", "ingress_token": "x"}), pad);
            assert_eq!(sessions_token(&secret).map(|s| s.expose().to_string()), Some("tok-1".to_string()));
        }
    }

    #[test]
    fn a_secret_without_a_token_or_not_base64_gives_none() {
        assert!(sessions_token(&encoded(&json!({"other": 1}), false)).is_none());
        assert!(sessions_token(&encoded(&json!({"sessions_token": ""}), false)).is_none());
        assert!(sessions_token("%%%not base64").is_none());
        assert!(sessions_token(&URL_SAFE_NO_PAD.encode("[1,2]")).is_none());
    }

    #[test]
    fn an_item_reads_its_ids_and_an_item_without_an_id_is_malformed() {
        let value = json!({"id": "work_1", "environment_id": "env_1", "data": {"type": "session", "id": "sesn_1"},
            "secret": encoded(&json!({"sessions_token": "t"}), false)});
        let item = WorkItem::from_value(&value, "env_other").unwrap();
        assert_eq!((item.id.as_str(), item.environment_id.as_str()), ("work_1", "env_1"));
        assert_eq!((item.kind.as_str(), item.session_id.as_str()), ("session", "sesn_1"));
        assert!(item.sessions_token.is_some());
        let error = WorkItem::from_value(&json!({"data": {}, "secret": "c2VjcmV0LXRva2Vu"}), "env").unwrap_err();
        assert!(!format!("{error:?}").contains("c2VjcmV0LXRva2Vu"), "the secret is not kept: {error:?}");
    }
}
