//! Provider-neutral definitions of agents and environments, and handles to provisioned ones.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::provision::Digest;
use crate::{Error, ToolSchema};

/// A provider-neutral agent definition: the input to provisioning.
///
/// Build it with [`AgentSpec::new`] and the chained setters; [`AgentSpec::validate`] says what a loop host
/// would refuse, and [`AgentSpec::digest`] identifies the definition (everything but the name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
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

    /// Adds several tools (a [`Toolbox`](crate::tools::Toolbox)'s `schemas()`, say).
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolSchema>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the model.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the tool the model must call before the session counts as complete (it must be one of the tools).
    pub fn terminal_tool(mut self, name: impl Into<String>) -> Self {
        self.terminal_tool = Some(name.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds a metadata pair.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Checks what every loop host would refuse: an empty name or system prompt, a tool name outside
    /// `[A-Za-z0-9_-]{1,64}` or used twice, an input schema that is not an object, a terminal tool that is not
    /// one of the tools.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason: String| Err(Error::invalid_spec("agent spec", reason));
        if self.name.trim().is_empty() {
            return invalid("the name is empty".into());
        }
        if self.name.chars().any(char::is_control) {
            return invalid("the name contains control characters".into());
        }
        if self.system_prompt.trim().is_empty() {
            return invalid("the system prompt is empty".into());
        }
        crate::tool::check_tools(&self.tools).or_else(invalid)?;
        if let Some(terminal) = &self.terminal_tool
            && !self.tools.iter().any(|tool| tool.name == *terminal)
        {
            return invalid(format!("the terminal tool `{terminal}` is not one of the agent's tools"));
        }
        Ok(())
    }

    /// The definition's digest: everything but the name, canonically encoded. Two specs that differ only in
    /// their name (or in the order of their metadata) have the same digest.
    pub fn digest(&self) -> Digest {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(object) = value.as_object_mut() {
            object.remove("name");
        }
        Digest::of_json(&value)
    }
}

/// Network access of a sandbox environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
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

/// A language runtime to install in an environment (e.g. `python` `3.12`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Runtime {
    /// The language (`python`, `node`, `elixir` …): ASCII letters, digits, `_` and `-`.
    pub lang: String,
    /// The version: `[0-9A-Za-z.+-]+` (it reaches a shell command).
    pub version: String,
}

impl Runtime {
    /// A runtime; [`EnvironmentSpec::validate`] checks it.
    pub fn new(lang: impl Into<String>, version: impl Into<String>) -> Self {
        Self { lang: lang.into(), version: version.into() }
    }

    fn validate(&self) -> Result<(), Error> {
        let lang_ok =
            !self.lang.is_empty() && self.lang.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let version_ok = !self.version.is_empty()
            && self.version.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-'));
        if lang_ok && version_ok {
            Ok(())
        } else {
            Err(Error::invalid_spec(
                "environment spec",
                format!("runtime `{}@{}` must be [A-Za-z0-9_-]+ @ [0-9A-Za-z.+-]+", self.lang, self.version),
            ))
        }
    }
}

/// A provider-neutral definition of the sandbox the loop host runs the agent in.
///
/// [`EnvironmentSpec::validate`] checks it; [`EnvironmentSpec::digest`] identifies it (everything but the name).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct EnvironmentSpec {
    /// The environment's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Language runtimes to install.
    #[serde(default)]
    pub runtimes: Vec<Runtime>,
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

impl EnvironmentSpec {
    /// An environment with no name, unrestricted networking and nothing to install.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a runtime.
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtimes.push(runtime);
        self
    }

    /// Sets the network access.
    pub fn networking(mut self, networking: Networking) -> Self {
        self.networking = networking;
        self
    }

    /// Adds packages for a package manager (`"pip"`, `"npm"` …).
    pub fn packages(
        mut self,
        manager: impl Into<String>,
        packages: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.packages.entry(manager.into()).or_default().extend(packages.into_iter().map(Into::into));
        self
    }

    /// Sets the provider-specific configuration, passed through verbatim.
    pub fn config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Checks the runtimes (their versions reach a shell), package names and allowed hosts (non-empty, no
    /// whitespace) and that `config`, when given, is an object.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason: String| Err(Error::invalid_spec("environment spec", reason));
        for runtime in &self.runtimes {
            runtime.validate()?;
        }
        let blank = |text: &str| text.is_empty() || text.chars().any(char::is_whitespace);
        for (manager, packages) in &self.packages {
            if blank(manager) || packages.iter().any(|p| blank(p)) {
                return invalid(format!("the `{manager}` packages hold an empty or blank-containing name"));
            }
        }
        if let Networking::Limited { allowed_hosts } = &self.networking
            && allowed_hosts.iter().any(|h| blank(h))
        {
            return invalid("an allowed host is empty or contains blanks".into());
        }
        if self.config.as_ref().is_some_and(|config| !config.is_object()) {
            return invalid("the provider configuration is not an object".into());
        }
        Ok(())
    }

    /// The definition's digest: everything but the name, canonically encoded. What says nothing counts as
    /// absent: an empty `config` object is no config, a package manager with no packages is none.
    pub fn digest(&self) -> Digest {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(object) = value.as_object_mut() {
            object.remove("name");
            if object.get("config").is_some_and(|c| c.is_null() || c.as_object().is_some_and(|o| o.is_empty())) {
                object.remove("config");
            }
            if let Some(packages) = object.get_mut("packages").and_then(Value::as_object_mut) {
                packages.retain(|_, list| list.as_array().is_some_and(|l| !l.is_empty()));
            }
        }
        Digest::of_json(&value)
    }
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
        let env = EnvironmentSpec::new()
            .name("e")
            .networking(Networking::Limited { allowed_hosts: vec!["example.com".into()] });
        let value = serde_json::to_value(&env).unwrap();
        assert_eq!(value["networking"], json!({"type": "limited", "allowed_hosts": ["example.com"]}));
        assert_eq!(serde_json::from_value::<EnvironmentSpec>(value).unwrap(), env);
        let handle = AgentHandle { agent_id: "agent_1".into(), environment_id: Some("env_1".into()) };
        assert_eq!(serde_json::from_value::<AgentHandle>(serde_json::to_value(&handle).unwrap()).unwrap(), handle);
    }

    #[test]
    fn validation_names_what_a_loop_host_would_refuse() {
        let tool = |name: &str| ToolSchema::new(name, "d", json!({"type": "object"}));
        assert!(AgentSpec::new("a", "p").tool(tool("lookup")).terminal_tool("lookup").validate().is_ok());
        for bad in [
            AgentSpec::new(" ", "p"),
            AgentSpec::new("a", ""),
            AgentSpec::new("a", "p").tool(tool("has space")),
            AgentSpec::new("a", "p").tool(tool("x")).tool(tool("x")),
            AgentSpec::new("a", "p").tool(ToolSchema::new("x", "d", json!("string"))),
            AgentSpec::new("a", "p").terminal_tool("finish"),
        ] {
            assert!(matches!(bad.validate(), Err(Error::InvalidSpec { what: "agent spec", .. })), "{bad:?}");
        }
        assert!(EnvironmentSpec::new().runtime(Runtime::new("python", "3.12")).validate().is_ok());
        for bad in [
            EnvironmentSpec::new().runtime(Runtime::new("python", "3.12; rm -rf /")),
            EnvironmentSpec::new().packages("pip", ["pandas", ""]),
            EnvironmentSpec::new().config(json!([1])),
        ] {
            assert!(matches!(bad.validate(), Err(Error::InvalidSpec { .. })), "{bad:?}");
        }
    }

    #[test]
    fn digests_ignore_the_name_and_follow_everything_else() {
        let spec = AgentSpec::new("a", "be helpful").metadata("team", "x").metadata("cost", "y");
        let renamed = AgentSpec { name: "b".into(), ..spec.clone() };
        assert_eq!(spec.digest(), renamed.digest());
        assert_ne!(spec.digest(), AgentSpec::new("a", "be brief").digest());
        let env = EnvironmentSpec::new().name("one").packages("pip", ["pandas"]);
        assert_eq!(env.digest(), EnvironmentSpec::new().name("two").packages("pip", ["pandas"]).digest());
        assert_ne!(env.digest(), EnvironmentSpec::new().packages("pip", ["numpy"]).digest());
        // Stable across releases: changing the encoding renames every provisioned resource.
        assert_eq!(AgentSpec::new("a", "p").digest().short(), AgentSpec::new("z", "p").digest().short());
    }
}
