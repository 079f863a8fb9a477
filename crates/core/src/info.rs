//! What handlers learn about the session they serve.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The running session, as tool and event handlers see it.
///
/// It is rebuilt after every reconnect, so handlers always see the current session id. It grows by fields, never
/// by new handler arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The provider-side session id, when the provider has one.
    pub session_id: Option<String>,
    /// The provider's name (e.g. `"claude"`, `"agentcore"`, `"local"`).
    pub provider: String,
    /// User metadata given with the session options.
    pub metadata: Map<String, Value>,
}

impl SessionInfo {
    /// Session information for the given provider and session id.
    pub fn new(provider: impl Into<String>, session_id: Option<String>, metadata: Map<String, Value>) -> Self {
        Self { session_id, provider: provider.into(), metadata }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip() {
        let mut metadata = Map::new();
        metadata.insert("team".into(), Value::from("search"));
        let info = SessionInfo::new("claude", Some("sesn_1".into()), metadata);
        let back: SessionInfo = serde_json::from_value(serde_json::to_value(&info).unwrap()).unwrap();
        assert_eq!(back, info);
    }
}
