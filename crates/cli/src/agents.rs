//! `managed-agents agents create|list|archive`: agents on Claude Managed Agents, so a new user with an API key
//! gets from nothing to a session without the console. `create` goes through provisioning: the agent and its
//! environment are named after a digest of their definition and remembered in the sessions file, so running
//! it again with the same settings finds them instead of making more.

#[cfg(feature = "claude")]
mod enabled {
    use std::sync::Arc;

    use managed_agents_claude::provision::{ClaudeAgent, self_hosted as self_hosted_environment};
    use managed_agents_claude::{ClaudeManagedAgents, ClaudeProvisioner};
    use managed_agents_core::recording::Recorder;
    use managed_agents_core::{AgentSpec, BoxError, EnvironmentSpec};
    use serde_json::{Value, json};

    use crate::args::AgentsAction;
    use crate::loop_host::env_value;
    use crate::outcome::{self, EXIT_COMPLETED, Hinted, UsageError};
    use crate::screen::Screen;

    /// The system prompt of an agent created without `--system`.
    const DEFAULT_SYSTEM: &str = "You are a helpful assistant.";

    /// The Claude provider of `ANTHROPIC_API_KEY` (and `ANTHROPIC_BASE_URL`), or an error saying what to set.
    pub fn claude_from_env(recorder: Option<Recorder>) -> Result<ClaudeManagedAgents, BoxError> {
        if env_value("ANTHROPIC_API_KEY").is_none() {
            return Err(UsageError("Claude needs an API key: set ANTHROPIC_API_KEY".into()).into());
        }
        let builder = managed_agents_claude::ClaudeManagedAgentsBuilder::from_env();
        let builder = match recorder {
            Some(recorder) => builder.recorder(recorder),
            None => builder,
        };
        builder.build().map_err(|error| {
            Hinted { error: Box::new(error), hint: "check ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL".into() }.into()
        })
    }

    /// Runs an `agents` subcommand; returns the exit code.
    pub async fn run(action: AgentsAction, json: bool, screen: &Arc<Screen>) -> Result<u8, BoxError> {
        let provider = claude_from_env(None)?;
        let client = provider.client().clone();
        match action {
            AgentsAction::Create { name, model, system, mcp, self_hosted } => {
                let options = crate::args::Options { mcp, ..Default::default() };
                let servers = crate::tools::plan(&options, &Default::default())?;
                let toolbox = crate::tools::toolbox(servers, screen).await?;
                let store = crate::conversations::open_store().await?;
                let provisioner = ClaudeProvisioner::new(client, Arc::new(store));
                let spec = AgentSpec::new(name.clone(), system.unwrap_or_else(|| DEFAULT_SYSTEM.into()))
                    .model(model)
                    .tools(toolbox.schemas());
                let mut environment = EnvironmentSpec::new().name(name.clone());
                let mut agent = ClaudeAgent::new(spec);
                if self_hosted {
                    environment = self_hosted_environment(environment);
                    agent = agent.builtin_toolset("always_allow");
                }
                screen.waiting("creating the environment…");
                let environment = provisioner.ensure_environment(&environment, None).await;
                screen.waiting("creating the agent…");
                let agent = match environment {
                    Ok(environment) => {
                        provisioner.ensure_claude_agent(&agent, None).await.map(|agent| (agent, environment))
                    }
                    Err(error) => Err(error),
                };
                screen.done_waiting();
                let (agent, environment) = agent?;
                if json {
                    outcome::print_json(
                        &json!({"agent_id": agent.id, "environment_id": environment.id, "name": agent.name}),
                    );
                } else {
                    println!("agent {} ({})", agent.id, agent.name);
                    println!("environment {}", environment.id);
                    eprintln!(
                        "Run it: managed-agents chat --agent-id {} --environment-id {} (or export CLAUDE_AGENT_ID and \
                         CLAUDE_ENVIRONMENT_ID)",
                        agent.id, environment.id
                    );
                    if self_hosted {
                        eprintln!(
                            "Its tools run where the worker runs: ANTHROPIC_ENVIRONMENT_KEY=… managed-agents worker \
                             --environment-id {} --workdir DIR",
                            environment.id
                        );
                    }
                }
            }
            AgentsAction::List { archived } => {
                let agents = client.list_all_agents(archived).await?;
                if json {
                    outcome::print_json(&Value::Array(agents));
                } else {
                    for agent in &agents {
                        let field = |key: &str| agent.get(key).and_then(Value::as_str).unwrap_or("").to_string();
                        let model = match agent.get("model") {
                            Some(Value::Object(model)) => model.get("id").and_then(Value::as_str).unwrap_or("").into(),
                            Some(Value::String(model)) => model.clone(),
                            _ => String::new(),
                        };
                        let state =
                            if agent.get("archived_at").is_some_and(|at| !at.is_null()) { " (archived)" } else { "" };
                        println!("{}\t{}\t{model}{state}", field("id"), field("name"));
                    }
                    if agents.is_empty() {
                        eprintln!("no agents yet: `managed-agents agents create NAME --model MODEL` makes one");
                    }
                }
            }
            AgentsAction::Archive { id } => {
                let archived = client.archive_agent(&id).await?;
                if json {
                    outcome::print_json(&archived);
                } else {
                    eprintln!("archived {id}");
                }
            }
        }
        Ok(EXIT_COMPLETED)
    }
}

#[cfg(feature = "claude")]
pub use enabled::{claude_from_env, run};

/// Without the `claude` feature there are no agents to manage.
#[cfg(not(feature = "claude"))]
pub async fn run(
    _: crate::args::AgentsAction,
    _: bool,
    _: &std::sync::Arc<crate::screen::Screen>,
) -> Result<u8, managed_agents_core::BoxError> {
    Err(crate::outcome::UsageError("this build has no Claude provider (build with the `claude` feature)".into()).into())
}
