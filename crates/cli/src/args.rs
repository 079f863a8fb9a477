//! The command line: what each option means.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What `--help` ends with: the loop hosts picked from the environment, the files, and the exit codes.
const AFTER_HELP: &str = "\
Loop host (first that applies):
  --provider NAME           as named (or `provider` in the config file)
  ANTHROPIC_API_KEY         Claude Managed Agents (with --agent-id/--environment-id or CLAUDE_AGENT_ID/CLAUDE_ENVIRONMENT_ID)
  AGENTCORE_HARNESS_ARN     Bedrock AgentCore (credentials and region from the AWS chain)
  OPENAI_BASE_URL           a local loop over that OpenAI-compatible endpoint (OPENAI_API_KEY, OPENAI_MODEL)
  none of these             the local loop against the bundled emulator (no credentials, no network)
With --script FILE the chosen provider's bundled emulator plays the scripted model instead.

Files:
  config      `managed-agents config path` shows it (MANAGED_AGENTS_CONFIG overrides it)
  sessions    every run is kept in an SQLite file (MANAGED_AGENTS_DB overrides it); `managed-agents sessions list`

Exit codes:
  0    the request completed
  1    it failed (an error: connection, provider, tool setup, …)
  2    it stopped before completing (max turns, halted by a guard, timed out, or another non-completed end)
  64   usage error (unknown option, missing argument, empty prompt, bad script or config file, a setting the
       provider refuses)
  130  interrupted (Ctrl-C)
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
    /// Send one request and print the answer. The prompt is the argument, or stdin when it is piped (or the
    /// argument is `-`), or the file of --prompt-file.
    #[command(after_help = AFTER_HELP)]
    Run {
        /// The request (`-`: read it from stdin).
        prompt: Option<String>,
        /// Read the request from this file.
        #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
        prompt_file: Option<PathBuf>,
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
    /// The conversations kept so far (each run is one; `--continue` and `--resume ID` go on with one).
    Sessions {
        /// What to do with them.
        #[command(subcommand)]
        action: SessionsAction,
        /// Print JSON on stdout.
        #[arg(long, global = true)]
        json: bool,
    },
    /// The configuration file.
    Config {
        /// What to show.
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Replay a recording (made with `run --record FILE`, or by a provider's `recorder`) instead of calling the
    /// loop host: offline, checking that every request matches the recorded one. Without a COMMAND, runs the
    /// recorded prompt (or PROMPT) with the tools given here; with `-- COMMAND…`, runs your own app with the
    /// provider's variables pointed at the replay (ANTHROPIC_BASE_URL, OPENAI_BASE_URL or
    /// AWS_ENDPOINT_URL_BEDROCK_AGENTCORE, and MANAGED_AGENTS_REPLAY_URL). Exits 1 when the run diverged.
    Replay {
        /// The recording.
        file: PathBuf,
        /// The request to send (default: the one the recording says it ran).
        #[arg(long, value_name = "TEXT")]
        prompt: Option<String>,
        /// Keep the recorded delays (default: as fast as the recording's order allows).
        #[arg(long)]
        keep_timing: bool,
        /// Options shared with `run` (tools, approvals, output).
        #[command(flatten)]
        options: Options,
        /// Your app, run against the replay.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Recordings: `check FILE` reports what in a recording our wire vocabulary does not know.
    Recording {
        /// What to do.
        #[command(subcommand)]
        action: RecordingAction,
    },
    /// Agents on Claude Managed Agents (needs ANTHROPIC_API_KEY): create one, list them, archive one.
    Agents {
        /// What to do.
        #[command(subcommand)]
        action: AgentsAction,
        /// Print JSON on stdout.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Serve a self-hosted Claude environment: claim its sessions' work and run their tools (bash, read, write,
    /// edit, glob, grep) on this machine, confined to --workdir. The environment's key comes from
    /// ANTHROPIC_ENVIRONMENT_KEY only (never a flag: it would show in the process list) and never reaches the
    /// tools. SIGTERM or Ctrl-C stops claiming and lets running sessions finish within --shutdown-deadline.
    Worker {
        /// The environment to serve.
        #[arg(long, env = "ANTHROPIC_ENVIRONMENT_ID", value_name = "ID")]
        environment_id: String,
        /// The directory the tools work in.
        #[arg(long, default_value = ".", value_name = "DIR")]
        workdir: PathBuf,
        /// How many sessions to serve at once.
        #[arg(long, default_value_t = 1, value_name = "N")]
        concurrency: usize,
        /// Seconds a session may stay idle after its turn before its work is let go (0: until it terminates).
        #[arg(long, default_value_t = 60, value_name = "SECONDS")]
        max_idle: u64,
        /// Seconds running sessions get to finish after SIGTERM or Ctrl-C.
        #[arg(long, default_value_t = 30, value_name = "SECONDS")]
        shutdown_deadline: u64,
        /// Serve at most one work item, then exit (for a worker woken by a webhook).
        #[arg(long)]
        once: bool,
        /// Print one JSON object per work item on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Serve the operator console: the conversations of a store, each one's timeline live, and the tool calls
    /// waiting for approval, in a browser and as a JSON API. Sign in with MANAGED_AGENTS_CONSOLE_TOKEN (from the
    /// environment only). The workers that run the conversations pick the answers up.
    Serve {
        /// Where to listen (loopback unless told otherwise).
        #[arg(long, default_value = "127.0.0.1:7878", value_name = "ADDRESS")]
        bind: std::net::SocketAddr,
        /// The store: a postgres:// URL or an SQLite file (default: MANAGED_AGENTS_DB, the file `run` keeps).
        #[arg(long, value_name = "URL_OR_FILE")]
        store: Option<String>,
        /// Refuse every change: no approvals, messages or terminations.
        #[arg(long)]
        read_only: bool,
    },
}

/// `managed-agents sessions …`.
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// The conversations, most recent last.
    List,
    /// One conversation: its record and its transcript (when this machine holds it).
    Show {
        /// The id the summary line showed.
        id: String,
    },
    /// Forgets a conversation here (the loop host's own session is left as it is).
    Delete {
        /// The id the summary line showed.
        id: String,
    },
}

/// `managed-agents recording …`.
#[derive(Debug, Subcommand)]
pub enum RecordingAction {
    /// Checks a recording against the wire vocabulary we know: event types, fields on known events and required
    /// fields that are missing are reported (the exit code is 0 either way; 1 when the file is not a recording).
    Check {
        /// The recording.
        file: PathBuf,
    },
}

/// `managed-agents config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Where the configuration file is read from (it need not exist).
    Path,
    /// An example configuration file, with every setting.
    Example,
}

/// `managed-agents agents …`.
#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Creates an agent and an environment for it (or finds the ones created before from the same settings) and
    /// prints their ids.
    Create {
        /// The agent's name.
        name: String,
        /// Its model, e.g. claude-sonnet-4-5.
        #[arg(long, value_name = "NAME")]
        model: String,
        /// Its system prompt.
        #[arg(long, value_name = "TEXT")]
        system: Option<String>,
        /// MCP servers whose tools the agent gets as custom tools (run on this machine), as for `run --mcp`.
        #[arg(long = "mcp", value_name = "COMMAND")]
        mcp: Vec<String>,
        /// A self-hosted environment, and the built-in toolset (bash, read, write, edit, glob, grep) on the agent:
        /// its tools run where `managed-agents worker` runs.
        #[arg(long)]
        self_hosted: bool,
    },
    /// The agents of the account.
    List {
        /// Archived agents too.
        #[arg(long)]
        archived: bool,
    },
    /// Archives an agent: it takes no new sessions.
    Archive {
        /// The agent id (`agent_…`).
        id: String,
    },
}

impl Command {
    /// Whether the command prints JSON on stdout.
    pub fn json(&self) -> bool {
        match self {
            Self::Run { options, .. } | Self::Chat { options } | Self::Replay { options, .. } => {
                options.output() != Output::Text
            }
            Self::Sessions { json, .. } | Self::Agents { json, .. } | Self::Worker { json, .. } => *json,
            Self::Config { .. } | Self::Recording { .. } | Self::Serve { .. } => false,
        }
    }
}

/// The loop hosts `--provider` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// What goes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// The answer's text as it streams (the default).
    Text,
    /// One JSON object per request, when it ends (the shape is in the README).
    Json,
    /// Each event as one line of JSON while the request runs, then the request's JSON object.
    StreamJson,
}

/// The options of `run` and `chat`.
#[derive(Debug, Clone, Default, Args)]
pub struct Options {
    /// The loop host; default: the config file's `provider`, else picked from the environment (see below).
    #[arg(long, value_enum)]
    pub provider: Option<ProviderName>,

    /// A JSON file of turns the emulator plays as the model, e.g.
    /// {"turns": [{"tool_calls": [{"id": "c1", "name": "time__get_current_time", "input": {}}]}, {"text": "It is 9."}]}.
    /// Runs the chosen provider's bundled emulator: no credentials, no network.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,

    /// Record every exchange with the loop host into FILE (JSON lines, secrets redacted; written when the run
    /// ends), for `managed-agents replay FILE` later.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,

    /// An MCP server to run as a child process over stdio, as one command line (repeatable), e.g.
    /// --mcp "python3 -m mcp_server_time". Its tools are offered to the model as `<server>__<tool>`.
    #[arg(long = "mcp", value_name = "COMMAND")]
    pub mcp: Vec<String>,

    /// An MCP server over streamable HTTP, as `URL` or `NAME=URL` (repeatable).
    #[arg(long = "mcp-url", value_name = "URL")]
    pub mcp_url: Vec<String>,

    /// The bearer token sent to the --mcp-url servers (default: MANAGED_AGENTS_MCP_TOKEN).
    #[arg(long, env = "MANAGED_AGENTS_MCP_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    pub mcp_token: Option<String>,

    /// A JSON file of MCP servers in the `mcpServers` format other MCP clients use:
    /// {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "env": {}}, "docs": {"url": "https://…", "headers": {}}}}.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    /// Allow every tool call without asking. Without it each call is shown and asked about (y: yes, n: no,
    /// a: always this tool); when input is not a terminal, calls are denied.
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Allow this tool's calls without asking (repeatable), e.g. --allow time__get_current_time.
    #[arg(long, value_name = "TOOL")]
    pub allow: Vec<String>,

    /// Print each request's outcome as one JSON object on stdout (the same as --output json); nothing else goes
    /// to stdout.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,

    /// What stdout gets: the streamed text, one JSON object per request, or each event as a line of JSON then
    /// the request's object.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output: Option<Output>,

    /// Go on with the most recent conversation.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub continue_last: bool,

    /// Go on with the conversation of this id (the summary line shows it; `managed-agents sessions list`).
    #[arg(long, short = 'r', value_name = "ID")]
    pub resume: Option<String>,

    /// The Claude agent id (default: CLAUDE_AGENT_ID).
    #[arg(long, env = "CLAUDE_AGENT_ID", value_name = "ID", hide_env_values = true)]
    pub agent_id: Option<String>,

    /// The Claude environment id (default: CLAUDE_ENVIRONMENT_ID).
    #[arg(long, env = "CLAUDE_ENVIRONMENT_ID", value_name = "ID", hide_env_values = true)]
    pub environment_id: Option<String>,

    /// The model (default: the config file's `model`, else OPENAI_MODEL on the local loop, else the agent's own).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// The system prompt (default: the config file's `system`; on hosted agents, the agent's own).
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,

    /// The most turns one request may take (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,

    /// The most seconds one request may take (at least 1).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
}

impl Options {
    /// What stdout gets.
    pub fn output(&self) -> Output {
        match (self.json, self.output) {
            (true, _) => Output::Json,
            (false, Some(output)) => output,
            (false, None) => Output::Text,
        }
    }
}
