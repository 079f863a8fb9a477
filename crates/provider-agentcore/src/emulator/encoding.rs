//! The wire's encoding: AWS event-stream frames (events, exceptions), AWS error responses, and the query values
//! of a request.

use aws_sdk_bedrockagentcore::primitives::event_stream::{Header, HeaderValue, Message};
use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use serde_json::{Value, json};

/// An AWS error response: the error type the status stands for (in `x-amzn-errortype`), and `message`.
pub(super) fn aws_error(status: u16, message: &str) -> Response<ResponseBody> {
    let kind = match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        409 => "ConflictException",
        429 => "ThrottlingException",
        _ => "InternalServerException",
    };
    let body = if kind == "ValidationException" {
        json!({"message": message, "reason": "FieldValidationFailed"})
    } else {
        json!({"message": message})
    };
    let mut response = json_response(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &body);
    if let Ok(value) = kind.parse() {
        response.headers_mut().insert("x-amzn-errortype", value);
    }
    response
}

/// One event-stream frame.
pub fn frame(message_type: &str, type_header: (&str, &str), payload: &Value) -> Bytes {
    let message = Message::new(Bytes::from(payload.to_string()))
        .add_header(Header::new(":message-type", HeaderValue::String(message_type.to_string().into())))
        .add_header(Header::new(type_header.0.to_string(), HeaderValue::String(type_header.1.to_string().into())))
        .add_header(Header::new(":content-type", HeaderValue::String("application/json".into())));
    let mut buffer = Vec::new();
    match aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer) {
        Ok(()) => Bytes::from(buffer),
        Err(_) => Bytes::new(),
    }
}

/// An `event` frame of `kind`.
pub(super) fn event(kind: &str, payload: Value) -> Bytes {
    frame("event", (":event-type", kind), &payload)
}

/// An `exception` frame of `kind` (a `validationException` with its required `reason`).
pub(super) fn exception(kind: &str, message: &str) -> Bytes {
    exception_with(kind, message, true)
}

/// An `exception` frame of `kind`; a `validationException` carries a `reason` when `reason` is set.
pub(super) fn exception_with(kind: &str, message: &str, reason: bool) -> Bytes {
    // The service model requires a `reason` on a validation exception.
    let payload = if kind == "validationException" && reason {
        json!({"message": message, "reason": "FieldValidationFailed"})
    } else {
        json!({"message": message})
    };
    frame("exception", (":exception-type", kind), &payload)
}

/// A `validationException` frame naming the fields at fault.
pub(super) fn validation_exception(message: &str, fields: &[(&str, &str)]) -> Bytes {
    let fields: Vec<Value> = fields.iter().map(|(name, why)| json!({"name": name, "message": why})).collect();
    frame(
        "exception",
        (":exception-type", "validationException"),
        &json!({"message": message, "reason": "FieldValidationFailed", "fieldList": fields}),
    )
}

/// The value of `key` in a URL query, percent-decoded (`None` when absent or not UTF-8).
pub(super) fn query_value(query: &str, key: &str) -> Option<String> {
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))?;
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes.get(at + 1..at + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[at], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                at += 3;
            }
            (b'+', _) => {
                decoded.push(b' ');
                at += 1;
            }
            (byte, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).ok()
}
