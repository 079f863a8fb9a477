//! Why an MCP tool call failed, as the error result the model gets.

use std::time::Duration;

use managed_agents_core::Error;

/// A call to an MCP tool that got no result from the tool. It becomes the call's error result (its `Display` is
/// the text the model reads); a host can downcast the error to tell the cases apart. A tool that ran and
/// reported `isError: true` is not one of these: its own text is the error result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The model's input was not a JSON object.
    #[error("MCP tool `{tool}`: the input must be a JSON object, got {got}")]
    InvalidInput {
        /// The tool's name on the server.
        tool: String,
        /// The kind of JSON the model sent.
        got: &'static str,
    },
    /// The server answered with a protocol error (unknown tool, invalid parameters, …).
    #[error("MCP server `{server}` refused the call to `{tool}`: {message} (error {code})")]
    Refused {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server stopped (or the connection dropped) during the call; the next call restarts or reconnects it.
    #[error("MCP server `{server}` stopped during the call to `{tool}`; it is restarted for the next call")]
    ServerStopped {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// The server did not answer in time.
    #[error("MCP server `{server}` did not answer the call to `{tool}` within {after:?}")]
    TimedOut {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The time limit.
        after: Duration,
    },
    /// The server could not be reached or restarted for the call.
    #[error("MCP server `{server}` is unavailable: {}", with_causes(source))]
    Unavailable {
        /// The server's name.
        server: String,
        /// Why (the last restart or reconnect attempt's error).
        #[source]
        source: Error,
    },
    /// Any other failure of the MCP session.
    #[error("MCP server `{server}`: the call to `{tool}` failed: {message}")]
    Failed {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// What went wrong.
        message: String,
    },
}

/// `error`'s text followed by each of its causes, `: `-separated (the model reads only this one line).
fn with_causes(error: &Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}
