//! The console's error answers: a status and `{"error": {"code", "message"}}`, from the library's errors.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use managed_agents_core::Error;
use serde_json::json;

/// An error answer.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Problem {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl From<Error> for Problem {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match &error {
            Error::NotFound { .. } => Self::not_found(message),
            Error::Busy { .. } => Self::new(StatusCode::CONFLICT, "busy", message),
            Error::ConversationClosed { .. } => Self::new(StatusCode::CONFLICT, "closed", message),
            Error::InvalidOption { .. } => Self::bad_request(message),
            Error::Store { .. } => {
                tracing::warn!(%error, "the console's store failed");
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "store", message)
            }
            _ => Self::internal(message),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}
