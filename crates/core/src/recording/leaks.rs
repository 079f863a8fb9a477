//! The leak scan: after redaction, anything in a recording still shaped like a secret stops the write.

use serde_json::Value;

use super::RecordingError;
use super::format::{Body, EntryKind, Recording};

/// Headers whose long random-looking values are ids or digests, not secrets.
const NOT_SECRET_HEADERS: [&str; 15] = [
    "x-amzn-bedrock-agentcore-runtime-session-id",
    "x-amz-content-sha256",
    "x-amzn-trace-id",
    "x-amz-id-2",
    "x-amzn-requestid",
    "x-amz-request-id",
    "amz-sdk-invocation-id",
    "request-id",
    "x-request-id",
    "etag",
    "traceparent",
    "tracestate",
    "cf-ray",
    "content-security-policy",
    "user-agent",
];

/// Fails with [`RecordingError::Leak`] at the first value of `recording` shaped like a secret: an Anthropic or
/// OpenAI-style API key (`sk-ant-…`, `sk-…`), an AWS access key id (`AKIA…`, `ASIA…`), a bearer token, an AWS
/// signature, or a long high-entropy header value. The error names where, never the value.
pub fn scan(recording: &Recording) -> Result<(), RecordingError> {
    for entry in &recording.entries {
        let at = |what: String| format!("exchange {}, {what}", entry.exchange);
        match &entry.kind {
            EntryKind::Request(request) => {
                check_text(&request.uri, || at("the request's path or query".to_owned()))?;
                for (name, value) in &request.headers {
                    check_header(name, value, || at(format!("request header `{name}`")))?;
                }
                if let Some(body) = &request.body {
                    check_body(body, &|| at("the request body".to_owned()))?;
                }
            }
            EntryKind::Response(response) => {
                for (name, value) in &response.headers {
                    check_header(name, value, || at(format!("response header `{name}`")))?;
                }
            }
            EntryKind::Body(body) => check_body(body, &|| at("the response body".to_owned()))?,
            EntryKind::Sse(frame) => check_text(&frame.data, || at("an SSE frame's data".to_owned()))?,
            EntryKind::Message(message) => {
                if let Some(payload) = &message.payload {
                    check_body(payload, &|| at("an event-stream message's payload".to_owned()))?;
                }
            }
            EntryKind::End(_) => {}
        }
    }
    for (what, value) in [("app", &recording.header.app), ("result", &recording.header.result)] {
        if let Some(value) = value {
            check_json(value, &|| format!("the header's `{what}`"))?;
        }
    }
    Ok(())
}

fn leak(location: String, shape: &'static str) -> RecordingError {
    RecordingError::Leak { location, shape }
}

fn check_body(body: &Body, at: &dyn Fn() -> String) -> Result<(), RecordingError> {
    match body {
        Body::Json(json) => check_json(json, at),
        Body::Text(text) => check_text(text, at),
        Body::Base64(_) => Ok(()),
    }
}

fn check_json(json: &Value, at: &dyn Fn() -> String) -> Result<(), RecordingError> {
    match json {
        Value::String(text) => check_text(text, at),
        Value::Array(items) => items.iter().try_for_each(|item| check_json(item, at)),
        Value::Object(map) => map.iter().try_for_each(|(key, value)| {
            check_text(key, at)?;
            check_json(value, at)
        }),
        _ => Ok(()),
    }
}

fn check_header(name: &str, value: &str, at: impl Fn() -> String) -> Result<(), RecordingError> {
    check_text(value, &at)?;
    if !NOT_SECRET_HEADERS.contains(&name) && !value.contains("[redacted:") && high_entropy(value) {
        return Err(leak(at(), "a long high-entropy value"));
    }
    Ok(())
}

/// The shape of the first secret in `text`, if any.
pub(crate) fn secret_shape(text: &str) -> Option<&'static str> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let bytes = text.as_bytes();
    let run = |from: usize, accept: &dyn Fn(u8) -> bool| bytes[from..].iter().take_while(|b| accept(**b)).count();
    let boundary = |at: usize| at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
    for (at, _) in text.match_indices("sk-") {
        if !boundary(at) {
            continue;
        }
        let length = run(at + 3, &token);
        if text[at..].starts_with("sk-ant-") && length >= 20 {
            return Some("an Anthropic API key (sk-ant-…)");
        }
        if length >= 32 {
            return Some("an API key (sk-…)");
        }
    }
    for prefix in ["AKIA", "ASIA"] {
        for (at, _) in text.match_indices(prefix) {
            let length = run(at, &|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if boundary(at) && length == 20 {
                return Some("an AWS access key id (AKIA…/ASIA…)");
            }
        }
    }
    for (at, _) in text.match_indices("Bearer ") {
        if run(at + 7, &|b| token(b) || b == b'.' || b == b'~' || b == b'+' || b == b'/') >= 16 {
            return Some("a bearer token");
        }
    }
    if !super::redact::arn_accounts(text).is_empty() {
        return Some("an AWS account number in an ARN");
    }
    for marker in ["Signature=", "X-Amz-Signature="] {
        for (at, _) in text.match_indices(marker) {
            if run(at + marker.len(), &|b| b.is_ascii_hexdigit()) >= 64 {
                return Some("an AWS signature");
            }
        }
    }
    None
}

fn check_text(text: &str, at: impl Fn() -> String) -> Result<(), RecordingError> {
    match secret_shape(text) {
        Some(shape) => Err(leak(at(), shape)),
        None => Ok(()),
    }
}

/// At least 32 characters without a space, and more than 4.2 bits of Shannon entropy per character (above what
/// hex digests and UUIDs can reach).
fn high_entropy(value: &str) -> bool {
    if value.len() < 32 || value.contains(' ') {
        return false;
    }
    let mut counts = [0usize; 256];
    for byte in value.bytes() {
        counts[usize::from(byte)] += 1;
    }
    let length = value.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|count| **count > 0)
        .map(|count| {
            let p = *count as f64 / length;
            -p * p.log2()
        })
        .sum();
    entropy > 4.2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_of_secrets_are_found_and_ordinary_text_is_not() {
        for (text, shape) in [
            ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "an Anthropic API key (sk-ant-…)"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "an API key (sk-…)"),
            ("{\"blob\":\"ASIAABCDEFGHIJKLMNOP\"}", "an AWS access key id (AKIA…/ASIA…)"),
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id (AKIA…/ASIA…)"),
            ("Bearer eyJhbGciOiJIUzI1NiJ9.payload", "a bearer token"),
            ("arn:aws:iam::123456789012:role/R", "an AWS account number in an ARN"),
        ] {
            assert_eq!(secret_shape(text), Some(shape), "{text}");
        }
        for text in [
            "task-ant-farm",
            "Bearer [redacted:bearer-token]",
            "AKIAshort",
            "arn:aws:iam::000000000000:role/R",
            "anthropic.claude-sonnet-4-6",
            "Credential=[redacted:aws-access-key-id]/20261202/us-east-1/x/aws4_request",
        ] {
            assert_eq!(secret_shape(text), None, "{text}");
        }
        assert!(high_entropy("q8Zr2LmX0vT9bN4kW7pY1sD6fH3jG5cA"), "a random 32-character token");
        assert!(!high_entropy("3f2b8c1e9d4a4e6f8b7c1a2b3c4d5e6f0011"), "hex stays under the bar");
        assert!(!high_entropy("application/json; charset=utf-8"), "short or spaced values are not tokens");
    }
}
