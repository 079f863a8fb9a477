//! What a command tells its caller: the exit code, the summary line, errors in words (each naming what to
//! change), and — with `--json` — exactly one JSON object on stdout for every outcome, in the shape of
//! `schema/outcome.schema.json`:
//!
//! ```json
//! {"ok": true, "exit_code": 0, "session": "20261202-0612-3f9a", "result": {…the session result…}, "error": null}
//! {"ok": false, "exit_code": 64, "session": null, "result": null, "error": {"kind": "usage", "message": "…", "hint": "…"}}
//! ```

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use managed_agents_core::{Error, SessionResult, TerminalReason};
use serde::Serialize;

/// Exit code: the request completed.
pub const EXIT_COMPLETED: u8 = 0;
/// Exit code: the request failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: the request stopped before completing (max turns, halted, timed out, …).
pub const EXIT_STOPPED: u8 = 2;
/// Exit code: the command line (or a file it names) is wrong.
pub const EXIT_USAGE: u8 = 64;
/// Exit code: interrupted with Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// A mistake in how the command was called: exits with [`EXIT_USAGE`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for UsageError {}

/// An error with what the user can do about it (the flag or variable to change).
#[derive(Debug)]
pub struct Hinted {
    /// The error.
    pub error: Box<dyn StdError + Send + Sync>,
    /// What to do.
    pub hint: String,
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl StdError for Hinted {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.error.source()
    }
}

/// An MCP server could not be set up.
#[derive(Debug)]
pub struct McpError(pub Box<dyn StdError + Send + Sync>);

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for McpError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

/// What kind of failure, in `--json`'s `error.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The command line, a file it names, or a setting the provider refuses.
    Usage,
    /// An MCP server could not be started or reached.
    Mcp,
    /// The loop host could not be reached.
    Connection,
    /// The loop host answered with an error.
    Provider,
    /// A time limit passed.
    Timeout,
    /// The request stopped before completing (max turns, a guard).
    Stopped,
    /// The user interrupted it.
    Interrupted,
    /// The conversation store.
    Store,
    /// Anything else.
    Failed,
}

/// A failure, as `--json`'s `error` and the `error:` line show it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// What kind.
    pub kind: Kind,
    /// What happened, with its causes.
    pub message: String,
    /// What to change, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The HTTP status the loop host answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl Failure {
    /// The failure of `error`.
    pub fn of(error: &(dyn StdError + 'static)) -> Self {
        let hint = error.downcast_ref::<Hinted>().map(|hinted| hinted.hint.clone());
        let inner: &(dyn StdError + 'static) = match error.downcast_ref::<Hinted>() {
            Some(hinted) => &*hinted.error,
            None => error,
        };
        let (mcp, inner): (bool, &(dyn StdError + 'static)) = match inner.downcast_ref::<McpError>() {
            Some(McpError(error)) => (true, &**error),
            None => (false, inner),
        };
        let (kind, status, message) = match inner.downcast_ref::<Error>() {
            Some(error) => {
                let (kind, status) = classify(error);
                (kind, status, words(error))
            }
            None if inner.downcast_ref::<UsageError>().is_some() => (Kind::Usage, None, error_chain(inner)),
            None => (Kind::Failed, None, error_chain(inner)),
        };
        // An MCP server's setting that is wrong stays a usage error; anything else about it is an MCP failure.
        let kind = if mcp && kind != Kind::Usage { Kind::Mcp } else { kind };
        Self { kind, message, hint, status }
    }

    /// The exit code it calls for.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::Usage => EXIT_USAGE,
            Kind::Stopped | Kind::Timeout => EXIT_STOPPED,
            Kind::Interrupted => EXIT_INTERRUPTED,
            _ => EXIT_FAILED,
        }
    }
}

/// A library error in words: what went wrong, without the library's framing (`turn failed:`, `invalid option
/// `x`:`, `transport error:`) where the message says it better.
fn words(error: &Error) -> String {
    match error {
        Error::Turn { source, .. } => words(source),
        Error::InvalidOption { reason, .. } => reason.clone(),
        Error::Connect { message, .. } | Error::Transport { message, .. }
            if message.as_str().starts_with("MCP server") =>
        {
            message.as_str().to_string()
        }
        Error::Connect { message, .. } if message.as_str().contains("://") => {
            format!("cannot connect to {}", message.as_str())
        }
        other => error_chain(other),
    }
}

/// The kind (and HTTP status) of a library error.
fn classify(error: &Error) -> (Kind, Option<u16>) {
    match error {
        Error::InvalidOption { .. }
        | Error::OutcomeUnsupported { .. }
        | Error::UnsupportedModel { .. }
        | Error::DataPlaneUnsupported { .. }
        | Error::Unsupported { .. }
        | Error::InvalidSpec { .. } => (Kind::Usage, None),
        Error::Connect { .. } | Error::Transport { .. } | Error::StreamClosed => (Kind::Connection, None),
        Error::Http { status, .. } => (Kind::Provider, Some(*status)),
        Error::ResponseTimeout { .. } | Error::StreamIdleTimeout { .. } | Error::TimedOut { .. } => {
            (Kind::Timeout, None)
        }
        Error::Halted { .. } | Error::MaxTurnsExceeded { .. } => (Kind::Stopped, None),
        Error::Store { .. } | Error::Busy { .. } | Error::LeaseLost { .. } => (Kind::Store, None),
        Error::Turn { source, .. } => classify(source),
        _ => (Kind::Failed, None),
    }
}

/// One line: the error, then each of its causes as `: cause` (each said once).
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // Errors often repeat their source's text in their own; say each thing once.
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.replace('\n', " ")
}

/// One request's outcome, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct JsonOutcome<'a> {
    /// Whether the request completed.
    pub ok: bool,
    /// The exit code it calls for.
    pub exit_code: u8,
    /// The conversation's id (for `--resume`), once there is one.
    pub session: Option<&'a str>,
    /// The session result, when the request ran.
    pub result: Option<&'a SessionResult>,
    /// What went wrong, when something did.
    pub error: Option<Failure>,
}

/// Prints `value` as one line of JSON on stdout.
pub fn print_json(value: &impl Serialize) {
    match serde_json::to_string(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("error: cannot encode the output as JSON: {error}"),
    }
}

/// Reports a failure before (or outside) any request: the `error:` line and its hint on stderr, the JSON
/// object on stdout with `json`. Returns the exit code.
pub fn fail(error: &(dyn StdError + 'static), json: bool, session: Option<&str>) -> u8 {
    let failure = Failure::of(error);
    eprintln!("error: {}", failure.message);
    if let Some(hint) = &failure.hint {
        eprintln!("  hint: {hint}");
    }
    let exit_code = failure.exit_code();
    if json {
        print_json(&JsonOutcome { ok: false, exit_code, session, result: None, error: Some(failure) });
    }
    exit_code
}

/// Reports a run the user quit with Ctrl-C (while starting, or with a second press during a request): the JSON
/// object with `json`. Returns [`EXIT_INTERRUPTED`].
pub fn interrupted(json: bool, session: Option<&str>) -> u8 {
    if json {
        let error = Failure { kind: Kind::Interrupted, message: "quit with Ctrl-C".into(), hint: None, status: None };
        print_json(&JsonOutcome { ok: false, exit_code: EXIT_INTERRUPTED, session, result: None, error: Some(error) });
    }
    EXIT_INTERRUPTED
}

/// The summary line of a request: how it ended, turns, tokens, tools, time, and the conversation's id.
pub fn summary(result: &SessionResult, elapsed: Duration, session: Option<&str>) -> String {
    let tools = result.custom_tool_uses.len() + result.server_tool_uses.len();
    let session = session.map(|id| format!(" · session {id}")).unwrap_or_default();
    format!(
        "[{} · {} turn{} · {} in / {} out tokens · {} tool call{} · {:.1}s{session}]",
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
        TerminalReason::Interrupted => "interrupted",
        TerminalReason::Error => "failed",
        _ => "stopped",
    }
}

/// The exit code of a session result.
fn result_code(result: &SessionResult) -> u8 {
    match result.terminal_reason {
        TerminalReason::Completed => EXIT_COMPLETED,
        TerminalReason::Interrupted => EXIT_INTERRUPTED,
        TerminalReason::Error => EXIT_FAILED,
        _ => EXIT_STOPPED,
    }
}

/// Why a request stopped, in words, when it did not complete: `--max-turns`, the guard, the timeout.
fn stopped_because(error: &Error) -> Option<String> {
    match error {
        Error::MaxTurnsExceeded { max_turns, .. } => {
            Some(format!("it needed more than {max_turns} turn{} (raise --max-turns)", plural(u64::from(*max_turns))))
        }
        Error::Halted { reason, .. } => Some(format!("a guard halted it: {reason}")),
        Error::TimedOut { after, .. } => Some(format!("it ran out of time after {after:?} (raise --timeout)")),
        _ => None,
    }
}

/// Reports a request's outcome: the summary line (and a failure's error) on stderr, the JSON object on stdout
/// with `json`. Returns its exit code.
pub fn request(outcome: &Result<SessionResult, Error>, elapsed: Duration, json: bool, session: Option<&str>) -> u8 {
    let (result, failure, stopped) = match outcome {
        Ok(result) => (Some(result), None, None),
        Err(error) => {
            let mut failure = Failure::of(error);
            let stopped = stopped_because(error);
            match &stopped {
                // A stop is not an error: the summary line says how the request ended, and why.
                Some(why) => failure.message.clone_from(why),
                None => eprintln!("error: {}", failure.message),
            }
            if let Some(hint) = &failure.hint {
                eprintln!("  hint: {hint}");
            }
            (error.partial_result(), Some(failure), stopped)
        }
    };
    let exit_code = match (result, &failure) {
        (Some(result), _) if result.terminal_reason != TerminalReason::Error => result_code(result),
        (_, Some(failure)) => failure.exit_code(),
        (Some(result), None) => result_code(result),
        (None, None) => EXIT_FAILED,
    };
    if let Some(result) = result {
        let why = stopped.map(|why| format!(": {why}")).unwrap_or_default();
        eprintln!("{}{why}", summary(result, elapsed, session));
    }
    if json {
        // A result that did not complete carries a failure saying why, as every outcome that is not ok does.
        let failure = failure.or_else(|| match result.map(|result| result.terminal_reason) {
            Some(TerminalReason::Completed) | None => None,
            Some(TerminalReason::Interrupted) => Some(Failure {
                kind: Kind::Interrupted,
                message: "interrupted with Ctrl-C".into(),
                hint: None,
                status: None,
            }),
            Some(reason) => {
                Some(Failure { kind: Kind::Stopped, message: reason_text(reason).into(), hint: None, status: None })
            }
        });
        print_json(&JsonOutcome { ok: exit_code == EXIT_COMPLETED, exit_code, session, result, error: failure });
    }
    exit_code
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
        assert!(line.contains(": connection refused"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn failures_have_kinds_and_exit_codes() {
        let usage = Failure::of(&UsageError("bad".into()));
        assert_eq!((usage.kind, usage.exit_code()), (Kind::Usage, EXIT_USAGE));
        let connect = Failure::of(&Error::connect("x", std::io::Error::other("refused")));
        assert_eq!((connect.kind, connect.exit_code()), (Kind::Connection, EXIT_FAILED));
        let hinted = Hinted { error: Box::new(Error::http(401, "no", None)), hint: "set ANTHROPIC_API_KEY".into() };
        let failure = Failure::of(&hinted);
        assert_eq!(
            (failure.kind, failure.status, failure.hint.as_deref()),
            (Kind::Provider, Some(401), Some("set ANTHROPIC_API_KEY"))
        );
    }

    #[test]
    fn exit_codes_follow_the_terminal_reason() {
        let completed = SessionResult::empty(Terminal::EndTurn, TerminalReason::Completed, None);
        assert_eq!(result_code(&completed), EXIT_COMPLETED);
        let max = SessionResult::empty(Terminal::Terminated, TerminalReason::MaxTurns, None);
        assert_eq!(result_code(&max), EXIT_STOPPED);
        let interrupted = SessionResult::empty(Terminal::Terminated, TerminalReason::Interrupted, None);
        assert_eq!(result_code(&interrupted), EXIT_INTERRUPTED);
    }
}
