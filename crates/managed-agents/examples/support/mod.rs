//! What the examples share: the closing summary and the exit code.

use std::error::Error;
use std::process::ExitCode;

use managed_agents::SessionResult;

/// Prints how a session ended.
pub fn print_summary(result: &SessionResult) {
    println!("\n-- session result --");
    println!("terminal:        {:?} ({:?})", result.terminal, result.terminal_reason);
    println!("session id:      {}", result.session_id.as_deref().unwrap_or("-"));
    println!("turns:           {}", result.turns);
    println!("tool calls:      {}", result.custom_tool_uses.len());
    println!("usage:           {} input / {} output tokens", result.usage.input_tokens, result.usage.output_tokens);
    println!("raw events kept: {}", result.events.len());
}

/// Success, or the error and its causes on stderr and a failing exit code.
pub fn exit_code(outcome: Result<(), Box<dyn Error>>) -> ExitCode {
    let Err(error) = outcome else { return ExitCode::SUCCESS };
    eprintln!("\nerror: {error}");
    let mut source = error.source();
    while let Some(cause) = source {
        eprintln!("  caused by: {cause}");
        source = cause.source();
    }
    ExitCode::FAILURE
}
