//! Shell commands in a session's runtime (`InvokeAgentRuntimeCommand`), without the model.

use std::time::Duration;

use aws_sdk_bedrockagentcore::Client;
use aws_sdk_bedrockagentcore::types::{InvokeAgentRuntimeCommandRequestBody, InvokeAgentRuntimeCommandStreamOutput};
use managed_agents_core::Error;

use crate::wire::idle::IdleTimer;
use crate::wire::sdk_error::{self, Part};

/// The operation that runs a command.
const OPERATION: &str = "InvokeAgentRuntimeCommand";

/// What a command printed, and how it ended. A non-zero exit code is a result, not an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOutput {
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
    /// The exit code, when the runtime reported one.
    pub exit_code: Option<i32>,
}

/// Which stream a chunk of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Runs `command` in the runtime of `runtime_arn` for session `session_id` (server timeout `timeout_seconds`:
/// default 300, at most 3600). Each chunk of output is handed to `on_output` in order as it arrives; the whole
/// output comes back at the end. `idle` bounds the silence between chunks.
pub async fn run_command(
    client: &Client,
    runtime_arn: &str,
    session_id: &str,
    command: &str,
    timeout_seconds: Option<i32>,
    idle: Duration,
    mut on_output: impl FnMut(OutputStream, &str),
) -> Result<CommandOutput, Error> {
    let body = InvokeAgentRuntimeCommandRequestBody::builder()
        .command(command)
        .set_timeout(timeout_seconds)
        .build()
        .map_err(|e| Error::invalid_option("command", e.to_string()))?;
    let call =
        client.invoke_agent_runtime_command().agent_runtime_arn(runtime_arn).runtime_session_id(session_id).body(body);
    let output = match tokio::time::timeout(idle, call.send()).await {
        Err(_) => return Err(Error::response_timeout(idle)),
        Ok(sent) => sent.map_err(|error| never_retried(sdk_error::to_error(Part::Request(OPERATION), error)))?,
    };
    let mut stream = output.stream;
    let mut result = CommandOutput::default();
    let mut timer = IdleTimer::new(idle);
    loop {
        let next = match timer.run(stream.recv()).await {
            Err(_) => return Err(Error::stream_idle_timeout(idle)),
            Ok(Ok(next)) => next,
            Ok(Err(error)) => return Err(never_retried(sdk_error::to_error(Part::Stream, error))),
        };
        let Some(InvokeAgentRuntimeCommandStreamOutput::Chunk(chunk)) = next else {
            if next.is_some() {
                continue;
            }
            // The stream ended: without `contentStop` the command's fate is unknown.
            if result.exit_code.is_none() {
                return Err(Error::provider(
                    "agentcore",
                    Some("early_termination".into()),
                    "the command's output ended without an exit code",
                    false,
                ));
            }
            return Ok(result);
        };
        if let Some(delta) = &chunk.content_delta {
            if let Some(text) = &delta.stdout {
                on_output(OutputStream::Stdout, text);
                result.stdout.push_str(text);
            }
            if let Some(text) = &delta.stderr {
                on_output(OutputStream::Stderr, text);
                result.stderr.push_str(text);
            }
        }
        if let Some(stop) = &chunk.content_stop {
            result.exit_code = Some(stop.exit_code);
        }
    }
}

/// A failed command call as a provider error that is never retryable, whatever failed: the command may have run
/// (and a command need not be safe to run twice).
fn never_retried(error: Error) -> Error {
    match error {
        Error::Provider { kind, message, .. } => Error::provider("agentcore", kind, message.into_string(), false),
        Error::Transport { message, .. } => Error::provider("agentcore", None, message.into_string(), false),
        other => Error::provider("agentcore", None, other.to_string(), false),
    }
}
