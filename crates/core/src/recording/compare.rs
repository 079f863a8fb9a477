//! Comparing a request a replay received with the recorded one: method, path and body, modulo ids and
//! timestamps; the first difference named in words.

use std::fmt;

use serde_json::Value;

use super::format::{Body, RecordedRequest};
use super::redact::{account_ids_redacted, looks_like_id, looks_like_uuid};

/// Where a replay left its recording: the first request that did not match.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Divergence {
    /// The recorded exchange it was compared with, if any was left.
    pub exchange: Option<u64>,
    /// The recorded request, `METHOD path`.
    pub recorded: Option<String>,
    /// The request received, `METHOD path`.
    pub received: String,
    /// The first difference, e.g. `body /events/0/content: recorded "42", received "41"`.
    pub difference: String,
}

impl Divergence {
    /// A divergence of the request `received` from `recorded` (exchange and `METHOD path`, when one was left).
    pub fn new(recorded: Option<(u64, String)>, received: impl Into<String>, difference: impl Into<String>) -> Self {
        let (exchange, recorded) =
            recorded.map_or((None, None), |(exchange, recorded)| (Some(exchange), Some(recorded)));
        Self { exchange, recorded, received: received.into(), difference: difference.into() }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.exchange, &self.recorded) {
            (Some(exchange), Some(recorded)) => write!(
                f,
                "replay diverged at exchange {exchange} (recorded {recorded}, received {}): {}",
                self.received, self.difference
            ),
            _ => write!(f, "replay diverged: received {}: {}", self.received, self.difference),
        }
    }
}

/// `text` with ids, UUIDs and timestamps replaced by `<id>` / `<time>`, and ARNs' account numbers zeroed (a
/// recording keeps them zeroed).
fn normalized_text(text: &str) -> String {
    if let Some(zeroed) = account_ids_redacted(text) {
        normalized_text(&zeroed)
    } else if looks_like_id(text) || looks_like_uuid(text) {
        "<id>".to_owned()
    } else if looks_like_timestamp(text) {
        "<time>".to_owned()
    } else {
        text.to_owned()
    }
}

/// `2026-12-02T10:00…`.
fn looks_like_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 16
        && bytes[..16].iter().enumerate().all(|(index, b)| match index {
            4 | 7 => *b == b'-',
            10 => *b == b'T' || *b == b' ',
            13 => *b == b':',
            _ => b.is_ascii_digit(),
        })
}

/// The path and query with each id segment (and each id query value) as `<id>`.
pub fn normalized_uri(uri: &str) -> String {
    let zeroed = account_ids_redacted(uri);
    let uri = zeroed.as_deref().unwrap_or(uri);
    let (path, query) = uri.split_once('?').map_or((uri, None), |(path, query)| (path, Some(query)));
    let mut out: Vec<String> = path.split('/').map(normalized_text).collect::<Vec<_>>();
    let mut joined = out.join("/");
    if let Some(query) = query {
        out = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, value)) => {
                    format!("{}={}", percent_decoded(name), normalized_text(&percent_decoded(value)))
                }
                None => pair.to_owned(),
            })
            .collect();
        joined.push('?');
        joined.push_str(&out.join("&"));
    }
    joined
}

/// `text` with its `%XX` escapes decoded (a query's `event_deltas%5B%5D` and `event_deltas[]` are one name);
/// escapes that do not decode to UTF-8 are kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[index], hex(index + 1), hex(index + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                index += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// The prefix of the keys managed-agents itself writes into a request (session tags such as the host's
/// `managed_agents_conversation`): their values name the run (its conversation), not what the app asked, and are
/// compared as ids.
const OWN_KEY_PREFIX: &str = "managed_agents_";

/// `json` with every id, UUID and timestamp string replaced, and the string values of our own keys.
fn normalized_json(json: &Value) -> Value {
    match json {
        Value::String(text) => Value::String(normalized_text(text)),
        Value::Array(items) => Value::Array(items.iter().map(normalized_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| match value {
                    Value::String(_) if key.starts_with(OWN_KEY_PREFIX) => (key.clone(), Value::from("<id>")),
                    _ => (key.clone(), normalized_json(value)),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The first place `received` differs from `recorded`, as `/pointer: recorded …, received …`.
fn json_difference(recorded: &Value, received: &Value, at: &str) -> Option<String> {
    let here = if at.is_empty() { "/".to_owned() } else { at.to_owned() };
    match (recorded, received) {
        (Value::Object(left), Value::Object(right)) => {
            for (key, value) in left {
                let path = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match right.get(key) {
                    Some(other) => {
                        if let Some(difference) = json_difference(value, other, &path) {
                            return Some(difference);
                        }
                    }
                    None => return Some(format!("{path}: recorded {}, received nothing", brief(value))),
                }
            }
            right
                .iter()
                .find(|(key, _)| !left.contains_key(*key))
                .map(|(key, value)| format!("{at}/{key}: recorded nothing, received {}", brief(value)))
        }
        (Value::Array(left), Value::Array(right)) => {
            for (index, (a, b)) in left.iter().zip(right).enumerate() {
                if let Some(difference) = json_difference(a, b, &format!("{at}/{index}")) {
                    return Some(difference);
                }
            }
            (left.len() != right.len())
                .then(|| format!("{here}: recorded {} items, received {}", left.len(), right.len()))
        }
        (left, right) if left == right => None,
        (left, right) => Some(format!("{here}: recorded {}, received {}", brief(left), brief(right))),
    }
}

/// A value in a message: at most 120 characters of its JSON.
fn brief(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn normalized_body(body: Option<&Body>) -> Value {
    match body {
        None => Value::Null,
        Some(Body::Json(json)) => normalized_json(json),
        Some(Body::Text(text)) => Value::String(normalized_text(text)),
        Some(Body::Base64(encoded)) => Value::String(encoded.clone()),
    }
}

/// Whether `received` goes to the same place as `recorded` (method and normalized path).
pub fn same_target(recorded: &RecordedRequest, received: &RecordedRequest) -> bool {
    recorded.method.eq_ignore_ascii_case(&received.method)
        && normalized_uri(&recorded.uri) == normalized_uri(&received.uri)
}

/// The first difference between a recorded request and a received one (method, path, body; ids and
/// timestamps do not count), or `None` when they match.
pub fn request_difference(recorded: &RecordedRequest, received: &RecordedRequest) -> Option<String> {
    if !recorded.method.eq_ignore_ascii_case(&received.method) {
        return Some(format!("method: recorded {}, received {}", recorded.method, received.method));
    }
    let (left, right) = (normalized_uri(&recorded.uri), normalized_uri(&received.uri));
    if left != right {
        return Some(format!("path: recorded {left}, received {right}"));
    }
    let (left, right) = (normalized_body(recorded.body.as_ref()), normalized_body(received.body.as_ref()));
    json_difference(&left, &right, "").map(|difference| format!("body {difference}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(method: &str, uri: &str, body: Option<Value>) -> RecordedRequest {
        RecordedRequest {
            method: method.into(),
            uri: uri.into(),
            headers: Default::default(),
            body: body.map(Body::Json),
        }
    }

    #[test]
    fn the_session_tags_of_another_conversation_do_not_count() {
        let tagged = |tag: &str| {
            request(
                "POST",
                "/v1/sessions",
                Some(json!({"metadata": {"managed_agents_conversation": tag, "team": "a"}})),
            )
        };
        assert_eq!(request_difference(&tagged("c6b004503915dbfda"), &tagged("c56e72ad507ec3479")), None);
        let other_team = request(
            "POST",
            "/v1/sessions",
            Some(json!({"metadata": {"managed_agents_conversation": "c1", "team": "b"}})),
        );
        assert!(request_difference(&tagged("c1"), &other_team).is_some(), "the app's own metadata still counts");
    }

    #[test]
    fn ids_and_timestamps_do_not_count_but_values_do() {
        let recorded = request(
            "POST",
            "/v1/sessions/sesn_011CZa1b2c3/events",
            Some(json!({"id": "toolu_01ABCdef9", "at": "2026-12-01T10:00:00Z", "text": "42"})),
        );
        let same = request(
            "POST",
            "/v1/sessions/sesn_0999zz9y8x7/events",
            Some(json!({"id": "toolu_01XYZuvw7", "at": "2026-12-02T11:11:11Z", "text": "42"})),
        );
        assert_eq!(request_difference(&recorded, &same), None);
        let changed = request(
            "POST",
            "/v1/sessions/sesn_0999zz9y8x7/events",
            Some(json!({"id": "toolu_01XYZuvw7", "at": "x", "text": "41"})),
        );
        let difference = request_difference(&recorded, &changed).unwrap();
        assert_eq!(difference, r#"body /at: recorded "<time>", received "x""#);
        let elsewhere = request("POST", "/v1/sessions/sesn_0999zz9y8x7/stop", None);
        assert!(
            request_difference(&recorded, &elsewhere).unwrap().starts_with("path: recorded /v1/sessions/<id>/events")
        );
    }

    #[test]
    fn arrays_name_the_first_item_that_differs_and_missing_fields() {
        let recorded = json!({"events": [{"a": 1}, {"b": [1, 2]}]});
        let received = json!({"events": [{"a": 1}, {"b": [1, 3]}]});
        assert_eq!(json_difference(&recorded, &received, "").unwrap(), "/events/1/b/1: recorded 2, received 3");
        let fewer = json!({"events": [{"a": 1}]});
        assert_eq!(json_difference(&recorded, &fewer, "").unwrap(), "/events: recorded 2 items, received 1");
        assert_eq!(json_difference(&json!({"a": 1}), &json!({}), "").unwrap(), "/a: recorded 1, received nothing");
    }
}
