//! Picks the loop host: from `--provider`, else from the environment, else the bundled emulator.

use std::any::Any;
use std::path::Path;
use std::sync::Arc;

use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{AgentHandle, BoxError, Provider, ToolSchema};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{Local, LocalBuilder};

use crate::args::{Options, ProviderName};
use crate::report::UsageError;

/// How many turns the default emulator script answers before it runs out.
const DEFAULT_SCRIPT_TURNS: usize = 100;

/// What the emulator says when no `--script` is given.
const DEFAULT_REPLY: &str = "(This is the bundled emulator: it plays a script, not a model. Pass --script FILE to \
                             choose what it says, or set OPENAI_BASE_URL, ANTHROPIC_API_KEY or \
                             AGENTCORE_HARNESS_ARN for a real one.)";

/// The loop host of a run, and what keeps it alive.
pub struct Host {
    /// The provider.
    pub provider: Arc<dyn Provider>,
    /// The agent to run (hosted providers), if any.
    pub agent: Option<AgentHandle>,
    /// What the user is told about it.
    pub description: String,
    /// Whether this is a bundled emulator rather than a real host.
    pub emulated: bool,
    /// The emulator server, kept alive for the run.
    _emulator: Option<Box<dyn Any + Send>>,
}

impl Host {
    /// A real loop host.
    fn real(provider: impl Provider + 'static, agent: Option<AgentHandle>, description: String) -> Self {
        Self { provider: Arc::new(provider), agent, description, emulated: false, _emulator: None }
    }

    /// A bundled emulator's host; `emulator` is kept alive with it.
    fn emulated(
        provider: impl Provider + 'static,
        agent: Option<AgentHandle>,
        description: String,
        emulator: impl Any + Send,
    ) -> Self {
        Self { provider: Arc::new(provider), agent, description, emulated: true, _emulator: Some(Box::new(emulator)) }
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

/// Reads a script file (a usage error when it is missing or malformed).
pub fn load_script(path: &Path) -> Result<Script, UsageError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("cannot read the script {}: {error}", path.display())))?;
    serde_json::from_str(&text).map_err(|error| UsageError(format!("bad script {}: {error}", path.display())))
}

/// The script the emulator plays: the file's, or a default that explains itself.
fn script(options: &Options) -> Result<Script, UsageError> {
    match &options.script {
        Some(path) => load_script(path),
        None => {
            Ok((0..DEFAULT_SCRIPT_TURNS).fold(Script::new(), |script, _| script.turn(ScriptTurn::text(DEFAULT_REPLY))))
        }
    }
}

/// Builds the loop host the options ask for, with `tools` declared to it where the provider takes declarations
/// (Local; hosted agents declare their tools when they are provisioned).
pub async fn build(options: &Options, tools: &[ToolSchema]) -> Result<Host, BoxError> {
    let (kind, real) = chosen(options);
    match (kind, real) {
        (ProviderName::Local | ProviderName::Emulator, true) => {
            let provider = local(LocalBuilder::from_env(), options, tools).build()?;
            let description = format!("the local loop with model `{}`", provider.model());
            Ok(Host::real(provider, None, description))
        }
        (ProviderName::Local | ProviderName::Emulator, false) => {
            let emulator = LocalEmulator::start(script(options)?).await?;
            let builder = Local::builder().base_url(emulator.base_url()).model("emulated");
            let provider = local(builder, options, tools).build()?;
            let description = format!("the local loop against the bundled emulator at {}", emulator.base_url());
            Ok(Host::emulated(provider, None, description, emulator))
        }
        (ProviderName::Claude, real) => claude(options, real).await,
        (ProviderName::Agentcore, real) => agentcore(options, real).await,
    }
}

/// A Local builder with the system prompt and tools of the run.
fn local(builder: LocalBuilder, options: &Options, tools: &[ToolSchema]) -> LocalBuilder {
    let builder = match &options.system {
        Some(system) => builder.system_prompt(system.clone()),
        None => builder,
    };
    let builder = match &options.model {
        Some(model) => builder.model(model.clone()),
        None => builder,
    };
    tools.iter().cloned().fold(builder, LocalBuilder::tool)
}

#[cfg(feature = "claude")]
async fn claude(options: &Options, real: bool) -> Result<Host, BoxError> {
    use managed_agents_claude::ClaudeManagedAgents;
    use managed_agents_claude::emulator::ClaudeEmulator;

    if real {
        let provider = ClaudeManagedAgents::from_env()?;
        let (Some(agent_id), Some(environment_id)) = (options.agent_id.clone(), options.environment_id.clone()) else {
            return Err(UsageError(
                "Claude needs an agent: pass --agent-id and --environment-id (or set CLAUDE_AGENT_ID and \
                 CLAUDE_ENVIRONMENT_ID)"
                    .into(),
            )
            .into());
        };
        let description = format!("Claude Managed Agents, agent {agent_id}");
        let agent = Some(AgentHandle { agent_id, environment_id: Some(environment_id) });
        return Ok(Host::real(provider, agent, description));
    }
    let emulator = ClaudeEmulator::start(script(options)?).await?;
    let (agent_id, environment_id) = emulator.seed_agent();
    let provider = emulator.provider_builder().build()?;
    let description = format!("the bundled Claude Managed Agents emulator at {}", emulator.base_url());
    let agent = Some(AgentHandle { agent_id, environment_id: Some(environment_id) });
    Ok(Host::emulated(provider, agent, description, emulator))
}

#[cfg(not(feature = "claude"))]
async fn claude(_: &Options, _: bool) -> Result<Host, BoxError> {
    Err(UsageError("this build has no Claude provider (build with the `claude` feature)".into()).into())
}

#[cfg(feature = "agentcore")]
async fn agentcore(options: &Options, real: bool) -> Result<Host, BoxError> {
    use managed_agents_agentcore::BedrockAgentCore;
    use managed_agents_agentcore::emulator::AgentCoreEmulator;

    if real {
        let arn = std::env::var("AGENTCORE_HARNESS_ARN")
            .ok()
            .filter(|arn| !arn.trim().is_empty())
            .ok_or_else(|| UsageError("Bedrock AgentCore needs a harness: set AGENTCORE_HARNESS_ARN".into()))?;
        let provider = BedrockAgentCore::from_env().await?;
        let description = format!("Bedrock AgentCore, harness {arn}");
        let agent = Some(AgentHandle { agent_id: arn, environment_id: None });
        return Ok(Host::real(provider, agent, description));
    }
    let emulator = AgentCoreEmulator::start(script(options)?).await?;
    let description = format!("the bundled Bedrock AgentCore emulator at {}", emulator.base_url());
    let agent = Some(AgentHandle { agent_id: emulator.harness_arn(), environment_id: None });
    let provider = emulator.provider_builder().build()?;
    Ok(Host::emulated(provider, agent, description, emulator))
}

#[cfg(not(feature = "agentcore"))]
async fn agentcore(_: &Options, _: bool) -> Result<Host, BoxError> {
    Err(UsageError("this build has no Bedrock AgentCore provider (build with the `agentcore` feature)".into()).into())
}
