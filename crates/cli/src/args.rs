//! The command line: what each option means.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What `--help` ends with: the loop hosts picked from the environment and the exit codes.
const AFTER_HELP: &str = "\
Loop host (first that applies):
  --provider NAME           as named
  ANTHROPIC_API_KEY         Claude Managed Agents (with --agent-id/--environment-id or CLAUDE_AGENT_ID/CLAUDE_ENVIRONMENT_ID)
  AGENTCORE_HARNESS_ARN     Bedrock AgentCore (credentials and region from the AWS chain)
  OPENAI_BASE_URL           a local loop over that OpenAI-compatible endpoint (OPENAI_API_KEY, OPENAI_MODEL)
  none of these             the local loop against the bundled emulator (no credentials, no network)
With --script FILE the chosen provider's bundled emulator plays the scripted model instead.

Exit codes:
  0   the request completed
  1   it failed (an error: connection, provider, tool setup, …)
  2   it stopped before completing (max turns, halted by a guard, timed out, or another non-completed end)
  64  usage error (unknown option, missing argument, bad script file, a setting the provider refuses)
`chat` exits 0 when you quit; each request's end is in its summary line.";

/// Run an agent from the terminal, with your MCP servers as its tools.
#[derive(Debug, Parser)]
#[command(name = "managed-agents", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send one request and print the answer.
    #[command(after_help = AFTER_HELP)]
    Run {
        /// The request.
        prompt: String,
        /// Options shared with `chat`.
        #[command(flatten)]
        options: Options,
    },
    /// A live session: each line you type is a message. Ctrl-C interrupts the current turn (where the provider
    /// can); Ctrl-C at the prompt, a second Ctrl-C, or end of input (Ctrl-D) exits.
    #[command(after_help = AFTER_HELP)]
    Chat {
        /// Options shared with `run`.
        #[command(flatten)]
        options: Options,
    },
}

impl Command {
    /// The options of either subcommand.
    pub fn options(&self) -> &Options {
        match self {
            Self::Run { options, .. } | Self::Chat { options } => options,
        }
    }
}

/// The loop hosts `--provider` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderName {
    /// Claude Managed Agents (ANTHROPIC_API_KEY).
    Claude,
    /// Bedrock AgentCore (AGENTCORE_HARNESS_ARN and the AWS credential chain).
    Agentcore,
    /// A local loop over an OpenAI-compatible endpoint (OPENAI_BASE_URL).
    Local,
    /// The local loop against its bundled emulator (no credentials).
    Emulator,
}

/// The options of `run` and `chat`.
#[derive(Debug, Clone, Args)]
pub struct Options {
    /// The loop host; default: picked from the environment (see below).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderName>,

    /// A JSON file of turns the emulator plays as the model, e.g.
    /// {"turns": [{"tool_calls": [{"id": "c1", "name": "time__get_current_time", "input": {}}]}, {"text": "It is 9."}]}.
    /// Runs the chosen provider's bundled emulator: no credentials, no network.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,

    /// An MCP server to run as a child process over stdio, as one command line (repeatable), e.g.
    /// --mcp "python3 -m mcp_server_time". Its tools are offered to the model as `<server>__<tool>`.
    #[arg(long = "mcp", value_name = "COMMAND")]
    pub mcp: Vec<String>,

    /// An MCP server over streamable HTTP (repeatable).
    #[arg(long = "mcp-url", value_name = "URL")]
    pub mcp_url: Vec<String>,

    /// Allow every tool call without asking. Without it each call is shown and asked about (y/n); when input is
    /// not a terminal, calls are denied.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Print each request's result (the session result: text, turns, usage, tool calls, events) as one line of
    /// JSON on stdout; nothing else goes to stdout.
    #[arg(long)]
    pub json: bool,

    /// The Claude agent id (default: CLAUDE_AGENT_ID).
    #[arg(long, env = "CLAUDE_AGENT_ID", value_name = "ID", hide_env_values = true)]
    pub agent_id: Option<String>,

    /// The Claude environment id (default: CLAUDE_ENVIRONMENT_ID).
    #[arg(long, env = "CLAUDE_ENVIRONMENT_ID", value_name = "ID", hide_env_values = true)]
    pub environment_id: Option<String>,

    /// The model of the local loop (default: OPENAI_MODEL; Local provider only).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// The system prompt of the local loop (Local provider only).
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,

    /// The most turns one request may take (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,

    /// The most seconds one request may take (at least 1).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}
