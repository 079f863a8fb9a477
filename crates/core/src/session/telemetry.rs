//! The session's `invoke_agent` span: its OpenTelemetry GenAI fields, and what a session records on it. (Each
//! tool call's `execute_tool` span is opened where the call runs, in `session::tools`.)

use tracing::field::Empty;

use crate::{Error, SessionResult};

/// The span a session runs in, its fields filled in as the session goes.
pub(crate) fn invoke_agent_span(provider: &str) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.provider.name" = provider,
        "gen_ai.conversation.id" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "managed_agents.turns" = Empty,
        "managed_agents.terminal_reason" = Empty,
        "error.type" = Empty,
    )
}

/// The provider-side session id, once known.
pub(crate) fn record_conversation(session_id: &str) {
    tracing::Span::current().record("gen_ai.conversation.id", session_id);
}

/// A request's result: its usage, turns and why it ended.
pub(crate) fn record_finished(result: &SessionResult) {
    let span = tracing::Span::current();
    span.record("gen_ai.usage.input_tokens", result.usage.total_input_tokens());
    span.record("gen_ai.usage.output_tokens", result.usage.output_tokens);
    span.record("managed_agents.turns", result.turns);
    span.record("managed_agents.terminal_reason", format!("{:?}", result.terminal_reason).as_str());
}

/// A request's failure, as its kind.
pub(crate) fn record_failed(error: &Error) {
    tracing::Span::current().record("error.type", error_kind(error));
}

/// The `error.type` of a failure.
fn error_kind(error: &Error) -> &'static str {
    match error.root() {
        Error::Halted { .. } => "halted",
        Error::MaxTurnsExceeded { .. } => "max_turns_exceeded",
        Error::UnresolvedRequiresAction { .. } => "unresolved_requires_action",
        Error::ApprovalRequired { .. } => "approval_required",
        Error::TimedOut { .. } => "timeout",
        Error::Http { .. } => "http_error",
        Error::Connect { .. } | Error::Transport { .. } => "transport_error",
        Error::ResponseTimeout { .. } => "response_timeout",
        Error::StreamIdleTimeout { .. } => "stream_idle_timeout",
        Error::StreamClosed => "stream_closed",
        Error::Malformed { .. } => "malformed",
        Error::Provider { .. } => "provider_error",
        _ => "error",
    }
}
