//! `managed-agents`: run an agent from the terminal — one request (`run`) or a live chat (`chat`) — on Claude
//! Managed Agents, Bedrock AgentCore, a local OpenAI-compatible loop, or the bundled emulators, with MCP servers
//! as its tools and approvals asked at the terminal. `managed-agents --help` explains each option and the exit
//! codes.

mod approve;
mod args;
mod chat;
mod host;
mod input;
mod report;
mod screen;
mod terminal;
mod tools;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use clap::error::ErrorKind;
use managed_agents_core::approval::AllowAll;
use managed_agents_core::{BoxError, Session, SessionOptions};

use crate::approve::TerminalPermission;
use crate::args::{Cli, Command, Options};
use crate::input::Input;
use crate::screen::Screen;
use crate::terminal::Terminal;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            let usage = !matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
            return ExitCode::from(if usage { report::EXIT_USAGE } else { report::EXIT_COMPLETED });
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return report::fail(&error),
    };
    let outcome = runtime.block_on(run(cli.command));
    // Tool servers and reader threads are not waited for.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(error) => report::fail(&*error),
    }
}

/// Runs the command; returns its exit code.
async fn run(command: Command) -> Result<u8, BoxError> {
    let options = command.options().clone();
    let screen = Arc::new(Screen::new(options.json));
    let toolbox = tools::toolbox(&options).await?;
    let host = host::build(&options, &toolbox.schemas()).await?;
    screen.note(&format!("loop host: {}", host.description));
    if host.emulated && options.script.is_none() && options.provider.is_none() {
        screen.note(
            "(no provider is configured — set ANTHROPIC_API_KEY, AGENTCORE_HARNESS_ARN or OPENAI_BASE_URL, or pass \
             --provider; the emulator answers with a fixed reply)",
        );
    }
    if !toolbox.names().is_empty() {
        screen.note(&format!("tools: {}", toolbox.names().join(", ")));
    }
    let interactive = std::io::stdin().is_terminal();
    // Stdin is read for chat messages, and for approvals when someone can answer them.
    let asks = interactive && !options.yes;
    let input = (asks || matches!(command, Command::Chat { .. })).then(|| Arc::new(Input::spawn()));
    let session_options = session_options(&options, &host, &screen, interactive.then(|| input.clone()).flatten());
    let handler = Terminal::new(toolbox, Arc::clone(&screen));
    match command {
        Command::Run { prompt, .. } => {
            let started = Instant::now();
            let outcome = Session::run(&*host.provider, handler, session_options.prompt(prompt)).await;
            screen.line_break();
            Ok(report::outcome(&outcome, started.elapsed(), options.json))
        }
        Command::Chat { .. } => {
            let input = input.unwrap_or_else(|| Arc::new(Input::spawn()));
            let chat = chat::Chat { provider: Arc::clone(&host.provider), input, screen, json: options.json };
            chat.run(handler, session_options).await?;
            Ok(report::EXIT_COMPLETED)
        }
    }
}

/// The session options of the command line: the agent, limits, live text, and the approval hook.
fn session_options(
    options: &Options,
    host: &host::Host,
    screen: &Arc<Screen>,
    input: Option<Arc<Input>>,
) -> SessionOptions {
    // Text streams as it is written: Claude sends live previews only when asked; other hosts stream anyway.
    let mut session = SessionOptions::new().live_text(true);
    if let Some(agent) = &host.agent {
        session = session.agent(agent.clone());
    }
    if let Some(max_turns) = options.max_turns {
        session = session.max_turns(max_turns);
    }
    if let Some(seconds) = options.timeout {
        session = session.timeout(Duration::from_secs(seconds));
    }
    if options.yes {
        session.permission(AllowAll)
    } else {
        session.permission(TerminalPermission::new(Arc::clone(screen), input))
    }
}
