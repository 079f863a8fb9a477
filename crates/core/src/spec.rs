//! Provider-neutral definitions of agents and environments, and handles to provisioned ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ToolSchema;

/// A provider-neutral agent definition: the input to provisioning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// The agent's name (providers may add a digest suffix to keep names unique per definition).
    pub name: String,
    /// The system prompt.
    pub system_prompt: String,
    /// The model: a catalog id such as `"anthropic:claude-sonnet-4-6"` or a bare wire id.
    #[serde(default)]
    pub model: Option<String>,
    /// Custom tools the agent may call (run locally through the handler).
    #[serde(default)]
    pub tools: Vec<ToolSchema>,
    /// A custom tool the model must call before the session counts as complete.
    #[serde(default)]
    pub terminal_tool: Option<String>,
    /// Free-form description.
    #[serde(default)]
    pub description: Option<String>,
    /// Provider metadata (string pairs).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

impl AgentSpec {
    /// An agent with a name and system prompt, and nothing else.
    pub fn new(name: impl Into<String>, system_prompt: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            system_prompt: system_prompt.into(),
            model: None,
            tools: Vec::new(),
            terminal_tool: None,
            description: None,
            metadata: BTreeMap::new(),
        }
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: ToolSchema) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }
}

/// Network access of a sandbox environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Networking {
    /// Any host may be reached.
    #[default]
    Unrestricted,
    /// Only the listed hosts may be reached.
    Limited {
        /// Hosts the sandbox may reach.
        #[serde(default)]
        allowed_hosts: Vec<String>,
    },
}

/// A provider-neutral definition of the sandbox the loop host runs the agent in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentSpec {
    /// The environment's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Network access.
    #[serde(default)]
    pub networking: Networking,
    /// Packages to install, by package manager (e.g. `"pip" → ["pandas"]`).
    #[serde(default)]
    pub packages: BTreeMap<String, Vec<String>>,
    /// Provider-specific configuration passed through verbatim.
    #[serde(default)]
    pub config: Option<Value>,
}

/// A handle to a provisioned agent; its id can be lifted into session options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentHandle {
    /// The provider's agent id (a Claude `agent_…` id, an AgentCore harness ARN …).
    pub agent_id: String,
    /// The environment provisioned with it, if any.
    #[serde(default)]
    pub environment_id: Option<String>,
}

/// A handle to a provisioned environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentHandle {
    /// The provider's environment id.
    pub environment_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn specs_round_trip() {
        let spec = AgentSpec::new("a", "be helpful")
            .model("anthropic:claude-sonnet-4-6")
            .tool(ToolSchema::with_string_params("t", "d", &["x"]));
        let back: AgentSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
        assert_eq!(back, spec);
        let env = EnvironmentSpec {
            name: Some("e".into()),
            networking: Networking::Limited { allowed_hosts: vec!["example.com".into()] },
            ..EnvironmentSpec::default()
        };
        let value = serde_json::to_value(&env).unwrap();
        assert_eq!(value["networking"], json!({"type": "limited", "allowed_hosts": ["example.com"]}));
        assert_eq!(serde_json::from_value::<EnvironmentSpec>(value).unwrap(), env);
        let handle = AgentHandle { agent_id: "agent_1".into(), environment_id: Some("env_1".into()) };
        assert_eq!(serde_json::from_value::<AgentHandle>(serde_json::to_value(&handle).unwrap()).unwrap(), handle);
    }
}
