//! What a run tells its caller: the exit code, the summary line, the JSON result, errors with their causes.

use std::error::Error as StdError;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use managed_agents_core::{Error, SessionResult, TerminalReason};

/// Exit code: the request completed.
pub const EXIT_COMPLETED: u8 = 0;
/// Exit code: the request failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: the request stopped before completing (max turns, halted, timed out, …).
pub const EXIT_STOPPED: u8 = 2;
/// Exit code: the command line (or a file it names) is wrong.
pub const EXIT_USAGE: u8 = 64;

/// A mistake in how the command was called: exits with [`EXIT_USAGE`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for UsageError {}

/// The exit code of a request's outcome.
pub fn exit_code(outcome: &Result<SessionResult, Error>) -> u8 {
    let reason = match outcome {
        Ok(result) => result.terminal_reason,
        Err(error) => match error.partial_result() {
            Some(partial) => partial.terminal_reason,
            None => TerminalReason::Error,
        },
    };
    match reason {
        TerminalReason::Completed => EXIT_COMPLETED,
        TerminalReason::Error => EXIT_FAILED,
        _ => EXIT_STOPPED,
    }
}

/// One line: the error, then each of its causes as `caused by: …`.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // Errors often repeat their source's text in their own; say each thing once.
        if !line.contains(&text) {
            line.push_str(": caused by: ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

/// Prints `error` on stderr as one line and returns the exit code it calls for.
pub fn fail(error: &(dyn StdError + 'static)) -> ExitCode {
    eprintln!("error: {}", error_chain(error));
    // A setting the provider refuses (from the command line or the environment) is a usage error too.
    let usage = error.downcast_ref::<UsageError>().is_some()
        || matches!(error.downcast_ref::<Error>(), Some(Error::InvalidOption { .. }));
    ExitCode::from(if usage { EXIT_USAGE } else { EXIT_FAILED })
}

/// The summary line of a request: how it ended, turns, tokens, tools, time.
pub fn summary(result: &SessionResult, elapsed: Duration) -> String {
    let tools = result.custom_tool_uses.len() + result.server_tool_uses.len();
    format!(
        "[{} · {} turn{} · {} in / {} out tokens · {} tool call{} · {:.1}s]",
        reason_text(result.terminal_reason),
        result.turns,
        plural(u64::from(result.turns)),
        result.usage.total_input_tokens(),
        result.usage.output_tokens,
        tools,
        plural(tools as u64),
        elapsed.as_secs_f64()
    )
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// A terminal reason in words.
pub fn reason_text(reason: TerminalReason) -> &'static str {
    match reason {
        TerminalReason::Completed => "completed",
        TerminalReason::MaxTurns => "stopped: max turns",
        TerminalReason::HaltedByGuard => "halted",
        TerminalReason::NoTerminalTool => "stopped: no terminal tool",
        TerminalReason::TimedOut => "timed out",
        TerminalReason::Error => "failed",
        TerminalReason::Interrupted => "interrupted",
        _ => "stopped",
    }
}

/// Reports a request's outcome: the JSON result on stdout (`json`), the summary line and any error on stderr.
/// Returns its exit code.
pub fn outcome(outcome: &Result<SessionResult, Error>, elapsed: Duration, json: bool) -> u8 {
    let result = match outcome {
        Ok(result) => Some(result),
        Err(error) => {
            eprintln!("error: {}", error_chain(error));
            error.partial_result()
        }
    };
    if let Some(result) = result {
        eprintln!("{}", summary(result, elapsed));
        if json {
            match serde_json::to_string(result) {
                Ok(text) => println!("{text}"),
                Err(error) => eprintln!("error: cannot encode the result as JSON: {error}"),
            }
        }
    }
    exit_code(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use managed_agents_core::Terminal;

    #[test]
    fn the_chain_names_each_cause_once() {
        let io = std::io::Error::other("connection refused");
        let error = Error::connect("cannot reach 127.0.0.1:9", io);
        let line = error_chain(&error);
        assert!(line.contains("caused by: connection refused"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn exit_codes_follow_the_terminal_reason() {
        let completed = SessionResult::empty(Terminal::EndTurn, TerminalReason::Completed, None);
        assert_eq!(exit_code(&Ok(completed)), EXIT_COMPLETED);
        let max = SessionResult::empty(Terminal::Terminated, TerminalReason::MaxTurns, None);
        assert_eq!(exit_code(&Ok(max.clone())), EXIT_STOPPED);
        let error = Error::max_turns_exceeded(1, max);
        assert_eq!(exit_code(&Err(error)), EXIT_STOPPED);
        assert_eq!(exit_code(&Err(Error::Closed)), EXIT_FAILED);
    }
}
