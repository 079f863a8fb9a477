//! Raw provider events.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::thread::{THREAD_UPDATE_TYPE, ThreadUpdate};

/// The `type` of the synthetic text-delta event the session loop emits to handlers.
///
/// It is never stored in [`SessionResult::events`](crate::SessionResult::events).
pub const TEXT_DELTA_TYPE: &str = "managed_agents.text_delta";

/// One decoded provider event: the provider's own JSON object, kept verbatim.
///
/// Normalisation never replaces an event: typed views ([`Event::kind`], [`Event::id`], [`Event::get`]) sit beside
/// the raw object, which you can always reach with [`Event::as_object`]. Events of types this library does not
/// know pass through untouched. Cloning is cheap (the object is shared).
#[derive(Clone, PartialEq)]
pub struct Event(Arc<Map<String, Value>>);

impl Event {
    /// Wraps a decoded JSON object.
    pub fn new(object: Map<String, Value>) -> Self {
        Self(Arc::new(object))
    }

    /// Builds an event from any JSON value; a value that is not an object is rejected and handed back.
    pub fn from_value(value: Value) -> Result<Self, Value> {
        match value {
            Value::Object(object) => Ok(Self::new(object)),
            other => Err(other),
        }
    }

    /// Builds the synthetic text-delta event (`{"type": TEXT_DELTA_TYPE, "text": text}`).
    pub fn text_delta(text: impl Into<String>) -> Self {
        let mut object = Map::new();
        object.insert("type".into(), Value::String(TEXT_DELTA_TYPE.into()));
        object.insert("text".into(), Value::String(text.into()));
        Self::new(object)
    }

    /// Builds the synthetic thread-update event: `update` serialized, with `type` [`THREAD_UPDATE_TYPE`].
    pub fn thread_update(update: &ThreadUpdate) -> Self {
        let mut object = match serde_json::to_value(update) {
            Ok(Value::Object(object)) => object,
            _ => Map::new(),
        };
        object.insert("type".into(), Value::String(THREAD_UPDATE_TYPE.into()));
        Self::new(object)
    }

    /// The thread update a synthetic thread-update event carries.
    pub fn thread_update_view(&self) -> Option<ThreadUpdate> {
        if self.kind() != Some(THREAD_UPDATE_TYPE) {
            return None;
        }
        serde_json::from_value(Value::Object((*self.0).clone())).ok()
    }

    /// The event's kind: its string `type` field, or, for union-shaped events with exactly one key (such as
    /// AgentCore's `{"contentBlockDelta": {…}}`), that key.
    pub fn kind(&self) -> Option<&str> {
        match self.0.get("type") {
            Some(Value::String(kind)) => Some(kind),
            _ if self.0.len() == 1 => self.0.keys().next().map(String::as_str),
            _ => None,
        }
    }

    /// The event's string `id`, used to deliver each event at most once per session.
    pub fn id(&self) -> Option<&str> {
        self.0.get("id").and_then(Value::as_str)
    }

    /// A field of the raw object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// A string field of the raw object.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// The raw object.
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.0
    }

    /// A copy of the raw object as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object((*self.0).clone())
    }

    /// Whether this is the synthetic text-delta event.
    pub fn is_text_delta(&self) -> bool {
        self.kind() == Some(TEXT_DELTA_TYPE)
    }

    /// The text of a synthetic text-delta event.
    pub fn text_delta_text(&self) -> Option<&str> {
        if self.is_text_delta() { self.str_field("text") } else { None }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({})", Value::Object((*self.0).clone()))
    }
}

impl From<Map<String, Value>> for Event {
    fn from(object: Map<String, Value>) -> Self {
        Self::new(object)
    }
}

impl TryFrom<Value> for Event {
    type Error = Value;

    fn try_from(value: Value) -> Result<Self, Value> {
        Self::from_value(value)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kind_prefers_type_field_then_single_key() {
        let typed = Event::from_value(json!({"type": "agent.message", "id": "e1"})).unwrap();
        assert_eq!(typed.kind(), Some("agent.message"));
        assert_eq!(typed.id(), Some("e1"));
        let union = Event::from_value(json!({"contentBlockDelta": {"delta": {"text": "hi"}}})).unwrap();
        assert_eq!(union.kind(), Some("contentBlockDelta"));
        let unknown = Event::from_value(json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(unknown.kind(), None);
    }

    #[test]
    fn non_objects_are_rejected_not_lost() {
        assert_eq!(Event::from_value(json!([1, 2])), Err(json!([1, 2])));
    }

    #[test]
    fn serde_round_trip_is_verbatim() {
        let raw = json!({"type": "x.unknown", "nested": {"k": [1, 2, 3]}, "id": "sevt_1"});
        let event: Event = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(serde_json::to_value(&event).unwrap(), raw);
    }

    #[test]
    fn text_delta_shape() {
        let delta = Event::text_delta("hello");
        assert!(delta.is_text_delta());
        assert_eq!(delta.text_delta_text(), Some("hello"));
    }
}
