//! `--record FILE`, `managed-agents replay FILE` and `managed-agents recording check FILE`.

use std::path::Path;
use std::sync::Arc;

use managed_agents_conformance::replay::{ReplayOptions, Timing};
use managed_agents_core::recording::{Recording, SchemaReport};
use managed_agents_core::{AgentHandle, BoxError, ToolSchema};
use serde_json::{Value, json};

use crate::args::{Options, ProviderName};
use crate::loop_host::{self, Host};
use crate::outcome::{EXIT_COMPLETED, EXIT_FAILED, UsageError};

/// The wire a provider kind records as.
pub fn wire(kind: ProviderName) -> &'static str {
    match kind {
        ProviderName::Claude => "claude",
        ProviderName::Agentcore => "agentcore",
        ProviderName::Local | ProviderName::Emulator => "local",
    }
}

/// What a replay says at the end: how many requests matched, or the divergence in words.
pub trait Verdict: Send + Sync {
    /// The verdict.
    fn verdict(&self) -> Result<usize, String>;
}

/// What the recording's header keeps of the run, for `replay` to run it again.
pub fn app(prompt: Option<&str>, host: &Host, model: Option<&str>) -> Value {
    let agent = host.agent.as_ref();
    json!({
        "prompt": prompt,
        "agent_id": agent.map(|agent| agent.agent_id.clone()),
        "environment_id": agent.and_then(|agent| agent.environment_id.clone()),
        "model": model,
    })
}

/// Writes what `host` recorded to `path` (redacted, scanned); an error says why nothing was written.
pub fn save(host: &Host, path: &Path, app: Value) -> Result<usize, BoxError> {
    let Some(recorder) = &host.recorder else { return Ok(0) };
    recorder.set_app(app);
    let recording = recorder.save(path)?;
    Ok(recording.entries.len())
}

/// Reads a recording: a usage error naming the file when it is not one.
pub fn open(path: &Path) -> Result<Recording, UsageError> {
    Recording::open(path).map_err(|error| UsageError(format!("{}: {error}", path.display())))
}

/// `managed-agents recording check FILE`.
pub fn check(path: &Path) -> Result<u8, BoxError> {
    let recording = open(path)?;
    println!("{}", schema(&recording)?);
    Ok(EXIT_COMPLETED)
}

fn schema(recording: &Recording) -> Result<SchemaReport, UsageError> {
    match recording.header.provider.as_str() {
        "local" => Ok(managed_agents_local::check_recording(recording)),
        #[cfg(feature = "claude")]
        "claude" => Ok(managed_agents_claude::check_recording(recording)),
        #[cfg(feature = "agentcore")]
        "agentcore" => Ok(managed_agents_agentcore::check_recording(recording)),
        other => Err(not_built(other)),
    }
}

fn not_built(wire: &str) -> UsageError {
    UsageError(format!("this build cannot replay or check the `{wire}` wire (build with its feature)"))
}

fn options_for(keep_timing: bool) -> ReplayOptions {
    ReplayOptions::new().timing(if keep_timing { Timing::Kept } else { Timing::Collapsed })
}

/// A replay of one of the wires this build has.
enum Replaying {
    Local(managed_agents_local::emulator::LocalReplay),
    #[cfg(feature = "claude")]
    Claude(managed_agents_claude::emulator::ClaudeReplay),
    #[cfg(feature = "agentcore")]
    Agentcore(managed_agents_agentcore::emulator::AgentCoreReplay),
}

impl Verdict for Replaying {
    fn verdict(&self) -> Result<usize, String> {
        let verdict = match self {
            Replaying::Local(replay) => replay.finish(),
            #[cfg(feature = "claude")]
            Replaying::Claude(replay) => replay.finish(),
            #[cfg(feature = "agentcore")]
            Replaying::Agentcore(replay) => replay.finish(),
        };
        verdict.map(|report| report.requests).map_err(|error| error.to_string())
    }
}

impl Replaying {
    async fn start(recording: Recording, keep_timing: bool) -> Result<Self, BoxError> {
        let options = options_for(keep_timing);
        Ok(match recording.header.provider.as_str() {
            "local" => Replaying::Local(managed_agents_local::emulator::LocalReplay::start(recording, options).await?),
            #[cfg(feature = "claude")]
            "claude" => {
                Replaying::Claude(managed_agents_claude::emulator::ClaudeReplay::start(recording, options).await?)
            }
            #[cfg(feature = "agentcore")]
            "agentcore" => Replaying::Agentcore(
                managed_agents_agentcore::emulator::AgentCoreReplay::start(recording, options).await?,
            ),
            other => return Err(not_built(other).into()),
        })
    }

    /// The variables that point an app at the replay.
    fn environment(&self, app: &Value) -> Vec<(&'static str, String)> {
        let text = |key: &str| app[key].as_str().map(str::to_owned);
        let mut variables = Vec::new();
        match self {
            Replaying::Local(replay) => {
                variables.push(("MANAGED_AGENTS_REPLAY_URL", replay.base_url()));
                variables.push(("OPENAI_BASE_URL", replay.base_url()));
                variables.push(("OPENAI_API_KEY", "replay".to_owned()));
                let model = text("model").or_else(|| replay.model().map(str::to_owned));
                variables.extend(model.map(|model| ("OPENAI_MODEL", model)));
            }
            #[cfg(feature = "claude")]
            Replaying::Claude(replay) => {
                variables.push(("MANAGED_AGENTS_REPLAY_URL", replay.base_url()));
                variables.push(("ANTHROPIC_BASE_URL", replay.base_url()));
                variables.push(("ANTHROPIC_API_KEY", "replay".to_owned()));
                variables.extend(text("agent_id").map(|id| ("CLAUDE_AGENT_ID", id)));
                variables.extend(text("environment_id").map(|id| ("CLAUDE_ENVIRONMENT_ID", id)));
            }
            #[cfg(feature = "agentcore")]
            Replaying::Agentcore(replay) => {
                variables.push(("MANAGED_AGENTS_REPLAY_URL", replay.base_url()));
                variables.push(("AWS_ENDPOINT_URL_BEDROCK_AGENTCORE", replay.base_url()));
                variables.push(("AWS_ACCESS_KEY_ID", "AKIDREPLAY".to_owned()));
                variables.push(("AWS_SECRET_ACCESS_KEY", "replay".to_owned()));
                variables.push(("AWS_REGION", "us-east-1".to_owned()));
                variables.extend(text("agent_id").map(|arn| ("AGENTCORE_HARNESS_ARN", arn)));
            }
        }
        variables
    }
}

/// The prompt of `replay FILE`: the one given, else the recorded one.
pub fn prompt(recording: &Recording, given: Option<String>) -> Result<String, UsageError> {
    let recorded = recording.header.app.as_ref().and_then(|app| app["prompt"].as_str()).map(str::to_owned);
    given
        .or(recorded)
        .ok_or_else(|| UsageError("the recording does not say which prompt ran: pass --prompt TEXT".into()))
}

/// The loop host of `replay FILE` without a command: the recording's wire, played by a replay server.
pub async fn host(
    recording: Recording,
    keep_timing: bool,
    options: &Options,
    tools: &[ToolSchema],
) -> Result<Host, BoxError> {
    let app = recording.header.app.clone().unwrap_or_default();
    let agent = app["agent_id"].as_str().map(|agent_id| AgentHandle {
        agent_id: agent_id.to_owned(),
        environment_id: app["environment_id"].as_str().map(str::to_owned),
    });
    let replay = Replaying::start(recording, keep_timing).await?;
    let description = |url: String| format!("a replay of the recording, served at {url}");
    Ok(match &replay {
        Replaying::Local(local) => {
            let recorded = app["model"].as_str().or(local.model()).map(str::to_owned);
            let model = options.model.clone().or(recorded);
            let builder = local.provider_builder(model.as_deref().unwrap_or("emulated"));
            let provider = loop_host::local(builder, tools).build()?;
            let url = local.base_url();
            Host::replaying(ProviderName::Local, provider, None, description(url), Arc::new(replay))
        }
        #[cfg(feature = "claude")]
        Replaying::Claude(claude) => {
            let provider = claude.provider_builder().build()?;
            let url = claude.base_url();
            Host::replaying(ProviderName::Claude, provider, agent, description(url), Arc::new(replay))
        }
        #[cfg(feature = "agentcore")]
        Replaying::Agentcore(agentcore) => {
            let provider = agentcore.provider_builder().build()?;
            let url = agentcore.base_url();
            Host::replaying(ProviderName::Agentcore, provider, agent, description(url), Arc::new(replay))
        }
    })
}

/// `managed-agents replay FILE -- COMMAND…`: runs the command against the replay, then says whether it matched.
pub async fn run_command(recording: Recording, keep_timing: bool, command: &[String]) -> Result<u8, BoxError> {
    let app = recording.header.app.clone().unwrap_or_default();
    let replay = Replaying::start(recording, keep_timing).await?;
    let (program, arguments) = command.split_first().ok_or_else(|| UsageError("no command given after --".into()))?;
    let mut child = tokio::process::Command::new(program);
    child.args(arguments).envs(replay.environment(&app));
    let status = child.status().await.map_err(|error| UsageError(format!("cannot run `{program}`: {error}")))?;
    report(&replay.verdict());
    if !status.success() {
        return Ok(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1).max(1));
    }
    Ok(if replay.verdict().is_ok() { EXIT_COMPLETED } else { EXIT_FAILED })
}

/// Says on stderr how a replay went.
pub fn report(verdict: &Result<usize, String>) {
    match verdict {
        Ok(1) => eprintln!("replay: every request matched the recording (1 request)"),
        Ok(requests) => eprintln!("replay: every request matched the recording ({requests} requests)"),
        Err(why) => eprintln!("replay: {why}"),
    }
}
