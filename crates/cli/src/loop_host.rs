//! Picks the loop host: from `--provider`, else from the environment, else the bundled emulator.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::recording::Recorder;
use managed_agents_core::{AgentHandle, BoxError, Provider, ToolSchema};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{Local, LocalBuilder};

use crate::args::{Options, ProviderName};
use crate::outcome::{Hinted, UsageError};

/// How many turns the default emulator script answers before it runs out.
const DEFAULT_SCRIPT_TURNS: usize = 100;

/// What the emulator says when no `--script` is given.
const DEFAULT_REPLY: &str = "(This is the bundled emulator: it plays a script, not a model. Pass --script FILE to \
                             choose what it says, or set OPENAI_BASE_URL, ANTHROPIC_API_KEY or \
                             AGENTCORE_HARNESS_ARN for a real one.)";

/// The loop host of a run, and what keeps it alive.
pub struct Host {
    /// Which kind it is.
    pub kind: ProviderName,
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The agent to run (hosted providers), if any.
    pub agent: Option<AgentHandle>,
    /// What the user is told about it.
    pub description: String,
    /// Whether this is a bundled emulator rather than a real host.
    pub emulated: bool,
    /// Where its address came from (an environment variable), for errors that name it.
    pub address_from: Option<&'static str>,
    /// What records the run (`--record FILE`), if anything.
    pub recorder: Option<Recorder>,
    /// The replay's verdict (`managed-agents replay`): the requests matched, or the divergence in words.
    pub replayed: Option<Box<dyn Fn() -> Result<usize, String> + Send + Sync>>,
    /// The conversation file of a replay (not the user's), removed when the host goes.
    pub scratch: Option<std::path::PathBuf>,
    /// The emulator server, kept alive for the run.
    _emulator: Option<Box<dyn Any + Send>>,
}

impl Host {
    /// A real loop host.
    fn real(
        kind: ProviderName,
        provider: impl Provider + 'static,
        agent: Option<AgentHandle>,
        description: String,
        address_from: Option<&'static str>,
    ) -> Self {
        let provider = Arc::new(provider);
        Self {
            kind,
            provider,
            agent,
            description,
            emulated: false,
            address_from,
            recorder: None,
            replayed: None,
            scratch: None,
            _emulator: None,
        }
    }

    /// A bundled emulator's host; `emulator` is kept alive with it.
    fn emulated(
        kind: ProviderName,
        provider: impl Provider + 'static,
        agent: Option<AgentHandle>,
        description: String,
        emulator: impl Any + Send,
    ) -> Self {
        let (provider, emulator) = (Arc::new(provider), Some(Box::new(emulator) as Box<dyn Any + Send>));
        Self {
            kind,
            provider,
            agent,
            description,
            emulated: true,
            address_from: None,
            recorder: None,
            replayed: None,
            scratch: None,
            _emulator: emulator,
        }
    }

    /// A replay's host: `replay` is kept alive with it and asked for its verdict at the end.
    pub fn replaying(
        kind: ProviderName,
        provider: impl Provider + 'static,
        agent: Option<AgentHandle>,
        description: String,
        replay: Arc<dyn crate::recordings::Verdict>,
    ) -> Self {
        let verdict = Arc::clone(&replay);
        let mut host = Self::emulated(kind, provider, agent, description, replay);
        // A replay stands for the real loop host, not the bundled emulator.
        host.emulated = false;
        host.replayed = Some(Box::new(move || verdict.verdict()));
        let name = format!("managed-agents-replay-{}-{:08x}.sqlite3", std::process::id(), fastrand::u32(..));
        host.scratch = Some(std::env::temp_dir().join(name));
        host
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(path) = &self.scratch {
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

/// `builder` recording into `recorder`, when there is one.
fn recorded<B>(builder: B, recorder: Option<&Recorder>, attach: impl FnOnce(B, Recorder) -> B) -> B {
    match recorder {
        Some(recorder) => attach(builder, recorder.clone()),
        None => builder,
    }
}

/// The provider kind the options and the environment ask for, and whether it comes from the environment (a
/// real host) or not (an emulator).
fn chosen(options: &Options) -> (ProviderName, bool) {
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
    match options.provider {
        Some(ProviderName::Emulator) => (ProviderName::Local, false),
        Some(name) => (name, options.script.is_none()),
        None if set("ANTHROPIC_API_KEY") => (ProviderName::Claude, options.script.is_none()),
        None if set("AGENTCORE_HARNESS_ARN") => (ProviderName::Agentcore, options.script.is_none()),
        None if set("OPENAI_BASE_URL") => (ProviderName::Local, options.script.is_none()),
        None => (ProviderName::Local, false),
    }
}

/// Reads a script file: a usage error when it is missing, malformed or has no turns.
pub fn load_script(path: &Path) -> Result<Script, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("cannot read the script {}: {error}", path.display())))?;
    let script: Script =
        serde_json::from_str(&text).map_err(|error| UsageError(format!("bad script {}: {error}", path.display())))?;
    if script.turns.is_empty() {
        return Err(UsageError(format!("the script {} has no turns: give it at least one", path.display())));
    }
    Ok(script)
}

/// The script the emulator plays: the file's (read before anything starts), or a default that explains itself.
pub fn script(options: &Options) -> Result<Script, UsageError> {
    match &options.script {
        Some(path) => load_script(path),
        None => {
            Ok((0..DEFAULT_SCRIPT_TURNS).fold(Script::new(), |script, _| script.turn(ScriptTurn::text(DEFAULT_REPLY))))
        }
    }
}

/// Builds the loop host the options ask for, with `tools` declared to it where the provider takes declarations
/// (Local; hosted agents declare their tools when they are provisioned).
pub async fn build(options: &Options, script: Script, tools: &[ToolSchema]) -> Result<Host, BoxError> {
    let (kind, real) = chosen(options);
    let source = format!(
        "managed-agents {} (`--record`), {} the {} wire",
        env!("CARGO_PKG_VERSION"),
        if real { "on" } else { "emulating" },
        crate::recordings::wire(kind)
    );
    let recorder = options.record.as_ref().map(|_| Recorder::new(crate::recordings::wire(kind)).source(source));
    let mut host = built(options, script, tools, kind, real, recorder.as_ref()).await?;
    host.recorder = recorder;
    Ok(host)
}

async fn built(
    options: &Options,
    script: Script,
    tools: &[ToolSchema],
    kind: ProviderName,
    real: bool,
    recorder: Option<&Recorder>,
) -> Result<Host, BoxError> {
    match (kind, real) {
        (ProviderName::Local | ProviderName::Emulator, true) => {
            let base_url = env_value("OPENAI_BASE_URL").ok_or_else(|| {
                UsageError(
                    "the local loop needs an endpoint: set OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1)".into(),
                )
            })?;
            let Some(model) = options.model.clone().or_else(|| env_value("OPENAI_MODEL")) else {
                return Err(UsageError(
                    "no model given for the local loop: pass --model NAME (or set OPENAI_MODEL, or `model` in the \
                     config file)"
                        .into(),
                )
                .into());
            };
            let mut builder = Local::builder().base_url(base_url).model(model);
            if let Some(key) = env_value("OPENAI_API_KEY") {
                builder = builder.api_key(key);
            }
            let provider =
                recorded(local(builder, tools), recorder, LocalBuilder::recorder).build().map_err(|error| Hinted {
                    hint: "check OPENAI_BASE_URL (an http(s) URL) and --model".into(),
                    error: Box::new(error),
                })?;
            let description = format!("the local loop with model `{}`", provider.model());
            Ok(Host::real(ProviderName::Local, provider, None, description, Some("OPENAI_BASE_URL")))
        }
        (ProviderName::Local | ProviderName::Emulator, false) => {
            let emulator = LocalEmulator::start(script).await?;
            let model = options.model.clone().unwrap_or_else(|| "emulated".into());
            let builder = Local::builder().base_url(emulator.base_url()).model(model);
            let provider = recorded(local(builder, tools), recorder, LocalBuilder::recorder).build()?;
            let description = format!("the local loop against the bundled emulator at {}", emulator.base_url());
            Ok(Host::emulated(ProviderName::Local, provider, None, description, emulator))
        }
        (ProviderName::Claude, real) => claude(options, script, real, recorder).await,
        (ProviderName::Agentcore, real) => agentcore(options, script, real, recorder).await,
    }
}

/// The value of environment variable `name`, when it is set and not blank.
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// A Local builder with the tools of the run.
pub fn local(builder: LocalBuilder, tools: &[ToolSchema]) -> LocalBuilder {
    tools.iter().cloned().fold(builder, LocalBuilder::tool)
}

#[cfg(feature = "claude")]
async fn claude(options: &Options, script: Script, real: bool, recorder: Option<&Recorder>) -> Result<Host, BoxError> {
    use managed_agents_claude::ClaudeManagedAgentsBuilder;
    use managed_agents_claude::emulator::ClaudeEmulator;

    if real {
        let provider = crate::agents::claude_from_env(recorder.cloned())?;
        let (Some(agent_id), Some(environment_id)) = (options.agent_id.clone(), options.environment_id.clone()) else {
            return Err(Hinted {
                error: Box::new(UsageError(
                    "Claude needs an agent: pass --agent-id and --environment-id (or set CLAUDE_AGENT_ID and \
                     CLAUDE_ENVIRONMENT_ID, or `agent_id` / `environment_id` in the config file)"
                        .into(),
                )),
                hint: "no agent yet? `managed-agents agents create NAME --model claude-sonnet-4-5` makes one".into(),
            }
            .into());
        };
        let description = format!("Claude Managed Agents, agent {agent_id}");
        let agent = Some(AgentHandle { agent_id, environment_id: Some(environment_id) });
        let from = env_value("ANTHROPIC_BASE_URL").is_some().then_some("ANTHROPIC_BASE_URL");
        return Ok(Host::real(ProviderName::Claude, provider, agent, description, from));
    }
    let emulator = ClaudeEmulator::start(script).await?;
    let (agent_id, environment_id) = emulator.seed_agent();
    let provider = recorded(emulator.provider_builder(), recorder, ClaudeManagedAgentsBuilder::recorder).build()?;
    let description = format!("the bundled Claude Managed Agents emulator at {}", emulator.base_url());
    let agent = Some(AgentHandle { agent_id, environment_id: Some(environment_id) });
    Ok(Host::emulated(ProviderName::Claude, provider, agent, description, emulator))
}

#[cfg(not(feature = "claude"))]
async fn claude(_: &Options, _: Script, _: bool, _: Option<&Recorder>) -> Result<Host, BoxError> {
    Err(UsageError("this build has no Claude provider (build with the `claude` feature)".into()).into())
}

#[cfg(feature = "agentcore")]
async fn agentcore(
    _options: &Options,
    script: Script,
    real: bool,
    recorder: Option<&Recorder>,
) -> Result<Host, BoxError> {
    use managed_agents_agentcore::BedrockAgentCoreBuilder;
    use managed_agents_agentcore::emulator::AgentCoreEmulator;

    if real {
        let arn = env_value("AGENTCORE_HARNESS_ARN")
            .ok_or_else(|| UsageError("Bedrock AgentCore needs a harness: set AGENTCORE_HARNESS_ARN".into()))?;
        let provider =
            recorded(BedrockAgentCoreBuilder::from_env().await, recorder, BedrockAgentCoreBuilder::recorder).build()?;
        let description = format!("Bedrock AgentCore, harness {arn}");
        let agent = Some(AgentHandle { agent_id: arn, environment_id: None });
        return Ok(Host::real(ProviderName::Agentcore, provider, agent, description, Some("AGENTCORE_HARNESS_ARN")));
    }
    let emulator = AgentCoreEmulator::start(script).await?;
    let description = format!("the bundled Bedrock AgentCore emulator at {}", emulator.base_url());
    let agent = Some(AgentHandle { agent_id: emulator.harness_arn(), environment_id: None });
    let provider = recorded(emulator.provider_builder(), recorder, BedrockAgentCoreBuilder::recorder).build()?;
    Ok(Host::emulated(ProviderName::Agentcore, provider, agent, description, emulator))
}

#[cfg(not(feature = "agentcore"))]
async fn agentcore(_: &Options, _: Script, _: bool, _: Option<&Recorder>) -> Result<Host, BoxError> {
    Err(UsageError("this build has no Bedrock AgentCore provider (build with the `agentcore` feature)".into()).into())
}
