//! `managed-agents`: run an agent from the terminal — one request (`run`) or a live chat (`chat`) — on Claude
//! Managed Agents, Bedrock AgentCore, a local OpenAI-compatible loop, or the bundled emulators, with MCP servers
//! as its tools and approvals asked at the terminal; every conversation is kept and can be continued
//! (`--continue`, `--resume ID`, `sessions`). `managed-agents --help` explains each option and the exit codes.

mod agents;
mod approve;
mod args;
mod chat;
mod config;
mod conversations;
mod input;
mod loop_host;
mod mcp_config;
mod outcome;
mod prompt;
mod recordings;
mod requests;
mod retries;
mod screen;
mod serve;
mod signals;
mod terminal;
mod tools;
mod worker;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use clap::error::ErrorKind;
use managed_agents_core::BoxError;

use crate::args::{Cli, Command, ConfigAction, Options, Output, ProviderName, RecordingAction};
use crate::input::Input;
use crate::outcome::{EXIT_COMPLETED, EXIT_USAGE, UsageError};
use crate::requests::{Parts, Requests, Sent};
use crate::screen::Screen;
use crate::signals::CtrlC;
use crate::terminal::Terminal;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return ExitCode::from(usage_error(&error)),
    };
    let json = cli.command.json();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return ExitCode::from(outcome::fail(&error, json, None)),
    };
    let code = runtime.block_on(async {
        match dispatch(cli.command).await {
            Ok(code) => code,
            Err(error) => outcome::fail(&*error, json, None),
        }
    });
    // Tool servers and reader threads are not waited for.
    runtime.shutdown_background();
    ExitCode::from(code)
}

/// Reports a command line clap refused (help and version are not errors); with `--json` (or `--output …`)
/// somewhere in the arguments, as the JSON outcome too.
fn usage_error(error: &clap::Error) -> u8 {
    let _ = error.print();
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return EXIT_COMPLETED;
    }
    // `args_os`: an argument that is not UTF-8 (clap refused it) must not panic here.
    let args: Vec<String> = std::env::args_os().skip(1).map(|arg| arg.to_string_lossy().into_owned()).collect();
    let wants_json = args
        .iter()
        .any(|arg| arg == "--json" || arg.starts_with("--output=json") || arg.starts_with("--output=stream-json"))
        || args.windows(2).any(|pair| pair[0] == "--output" && pair[1] != "text");
    if wants_json {
        let message = error.kind().as_str().map_or_else(|| "the command line is wrong".to_string(), str::to_string);
        let detail = error.render().to_string();
        let first = detail.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        let text = if first.is_empty() { message } else { first };
        outcome::print_json(&outcome::JsonOutcome {
            ok: false,
            exit_code: EXIT_USAGE,
            session: None,
            result: None,
            error: Some(outcome::Failure {
                kind: outcome::Kind::Usage,
                message: text,
                hint: Some("`managed-agents --help` lists the commands and options".into()),
                status: None,
            }),
        });
    }
    EXIT_USAGE
}

/// Runs the command; returns its exit code.
async fn dispatch(command: Command) -> Result<u8, BoxError> {
    match command {
        Command::Run { prompt, prompt_file, options } => {
            // The prompt is read (and an empty one refused) before anything starts.
            let prompt = prompt::read(prompt.as_deref(), prompt_file.as_deref())?;
            conversation(options, Some(prompt), None).await
        }
        Command::Chat { options } => conversation(options, None, None).await,
        Command::Replay { file, prompt, keep_timing, options, command } => {
            let recording = recordings::open(&file)?;
            if !command.is_empty() {
                return recordings::run_command(recording, keep_timing, &command).await;
            }
            let prompt = recordings::prompt(&recording, prompt)?;
            conversation(options, Some(prompt), Some((recording, keep_timing))).await
        }
        Command::Recording { action: RecordingAction::Check { file } } => recordings::check(&file),
        Command::Sessions { action, json } => conversations::run(action, json).await,
        Command::Config { action } => {
            match action {
                ConfigAction::Path => match config::path() {
                    Some(path) => println!("{}", path.display()),
                    None => {
                        return Err(UsageError(format!(
                            "there is no configuration directory: set {}",
                            config::CONFIG_ENV
                        ))
                        .into());
                    }
                },
                ConfigAction::Example => print!("{}", config::EXAMPLE),
            }
            Ok(EXIT_COMPLETED)
        }
        Command::Agents { action, json } => {
            let screen = Arc::new(Screen::new(if json { Output::Json } else { Output::Text }));
            agents::run(action, json, &screen).await
        }
        Command::Worker { environment_id, workdir, concurrency, max_idle, shutdown_deadline, once, json } => {
            let settings = worker::Settings { environment_id, workdir, concurrency, max_idle, shutdown_deadline };
            worker::run(settings, once, json).await
        }
        Command::Serve { bind, store, read_only } => serve::run(serve::Settings { bind, store, read_only }).await,
    }
}

/// A recording to replay instead of calling the loop host, and whether to keep its timing.
type Replay = (managed_agents_core::recording::Recording, bool);

/// `run` (with its prompt) or `chat` (without): set up (Ctrl-C meanwhile quits with 130), then the requests;
/// with `replay`, against a replay of the recording.
async fn conversation(options: Options, prompt: Option<String>, replay: Option<Replay>) -> Result<u8, BoxError> {
    let config = config::load()?;
    let options = config.fill(options);
    let script = loop_host::script(&options)?;
    let servers = tools::plan(&options, &config.mcp_servers)?;
    let ctrl_c = CtrlC::install();
    let screen = Arc::new(Screen::new(options.output()));
    let json = options.output() != Output::Text;
    retries::show_on(&screen);
    let chat = prompt.is_none();
    let set_up = set_up(&options, script, servers, &screen, &ctrl_c, chat, replay);
    let (mut requests, input) = tokio::select! {
        ready = set_up => ready?,
        () = ctrl_c.next() => {
            screen.done_waiting();
            screen.note("(interrupted while starting)");
            return Ok(outcome::interrupted(json, None));
        }
    };
    let address_from = requests.address_from();
    let sent = prompt.clone();
    let code = match prompt {
        Some(prompt) => match requests.send(prompt).await {
            Sent::Ended(code) => code,
            Sent::Quit => outcome::interrupted(json, requests.kept_id()),
        },
        None => {
            let input = input.unwrap_or_else(|| Arc::new(Input::spawn()));
            chat::run(&mut requests, &input, &screen, &ctrl_c).await
        }
    };
    if code == outcome::EXIT_FAILED
        && let Some(variable) = address_from
    {
        screen.note(&format!("  (the loop host's address comes from {variable})"));
    }
    Ok(after_the_run(&requests, &options, sent.as_deref(), code, &screen))
}

/// The recording written (`--record`) and the replay's verdict said; a failure of either makes the run fail.
fn after_the_run(requests: &Requests, options: &Options, prompt: Option<&str>, code: u8, screen: &Screen) -> u8 {
    let host = requests.loop_host();
    let mut code = code;
    if let Some(path) = &options.record {
        let app = recordings::app(prompt, host, options.model.as_deref());
        match recordings::save(host, path, app) {
            Ok(entries) => screen.note(&format!("recorded {entries} entries to {}", path.display())),
            Err(error) => {
                screen.note(&format!("error: the recording was not written: {error}"));
                code = code.max(outcome::EXIT_FAILED);
            }
        }
    }
    if let Some(verdict) = &host.replayed {
        let verdict = verdict();
        recordings::report(&verdict);
        if verdict.is_err() {
            code = code.max(outcome::EXIT_FAILED);
        }
    }
    code
}

/// Everything before the first request: the MCP servers started (the spinner says which is awaited), the loop
/// host built, the conversation picked. Returns the requests and, when someone can answer questions or chat, the
/// terminal's lines.
async fn set_up(
    options: &Options,
    script: managed_agents_conformance::Script,
    servers: Vec<(String, managed_agents_mcp::Transport)>,
    screen: &Arc<Screen>,
    ctrl_c: &CtrlC,
    chat: bool,
    replay: Option<Replay>,
) -> Result<(Requests, Option<Arc<Input>>), BoxError> {
    let toolbox = tools::toolbox(servers, screen).await?;
    let loop_host = match replay {
        Some((recording, keep_timing)) => recordings::host(recording, keep_timing, options, &toolbox.schemas()).await?,
        None => loop_host::build(options, script, &toolbox.schemas()).await?,
    };
    screen.note(&format!("loop host: {}", loop_host.description));
    for warning in warnings(options, loop_host.kind) {
        screen.note(&format!("warning: {warning}"));
    }
    if loop_host.emulated && options.script.is_none() && options.provider.is_none() {
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
    // A question nobody sees (stderr redirected) is not asked: the call is denied instead.
    let interactive = interactive && std::io::stderr().is_terminal();
    let asks = interactive && !options.yes;
    let input = (asks || chat).then(|| Arc::new(Input::spawn()));
    let handler = Terminal::new(toolbox, Arc::clone(screen));
    let parts = Parts {
        loop_host,
        handler,
        input: interactive.then(|| input.clone()).flatten(),
        screen: Arc::clone(screen),
        ctrl_c: ctrl_c.clone(),
    };
    let requests = Requests::open(options, parts).await?;
    if !requests.is_new() {
        screen.note(&format!("continuing conversation {}", requests.id()));
    }
    Ok((requests, input))
}

/// Settings given that the run does not use: each is said, not silently dropped.
fn warnings(options: &Options, kind: ProviderName) -> Vec<&'static str> {
    let mut warnings = Vec::new();
    if kind != ProviderName::Claude {
        if options.agent_id.is_some() {
            warnings.push("--agent-id (or CLAUDE_AGENT_ID) applies to Claude only; it is not used");
        }
        if options.environment_id.is_some() {
            warnings.push("--environment-id (or CLAUDE_ENVIRONMENT_ID) applies to Claude only; it is not used");
        }
    }
    if options.mcp_token.is_some() && options.mcp_url.is_empty() {
        warnings.push("--mcp-token is sent to --mcp-url servers only, and none is given");
    }
    warnings
}
