//! [`ClaudeAgent`]: a provider-neutral [`AgentSpec`] and the agent fields only Claude has (its [`Multiagent`]
//! roster), provisioned by [`ClaudeProvisioner::ensure_claude_agent`](crate::ClaudeProvisioner::ensure_claude_agent).

use managed_agents_core::provision::Digest;
use managed_agents_core::{AgentSpec, Error};
use serde_json::{Value, json};

use crate::provision::bodies::agent_body;
use crate::provision::roster::Multiagent;

/// A Claude agent definition: an [`AgentSpec`] plus the fields only Claude agents have. Its digest covers both,
/// so two definitions that differ only in a Claude field land on different agents; with no Claude field set it
/// is the spec's own digest, so a plain spec provisions the same agent either way.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ClaudeAgent {
    /// The provider-neutral definition.
    pub spec: AgentSpec,
    /// How the agent delegates to other agents in threads of its sessions (`multiagent`); `None`: it does not.
    pub multiagent: Option<Multiagent>,
    /// The built-in toolset (`bash`, `read`, `write`, `edit`, `glob`, `grep`) as the agent's `tools` list
    /// declares it (`{"type": "agent_toolset_20260401", …}`, verbatim); `None`: the agent has custom tools only.
    /// In a self-hosted environment these tools run on the environment's worker.
    pub toolset: Option<Value>,
}

/// The type of the built-in agent toolset this crate knows (`bash`, `read`, `write`, `edit`, `glob`, `grep`).
pub const AGENT_TOOLSET: &str = "agent_toolset_20260401";

impl From<AgentSpec> for ClaudeAgent {
    fn from(spec: AgentSpec) -> Self {
        Self::new(spec)
    }
}

impl ClaudeAgent {
    /// The definition `spec`, with no Claude-only field.
    pub fn new(spec: AgentSpec) -> Self {
        Self { spec, multiagent: None, toolset: None }
    }

    /// With the built-in toolset, every tool under the permission policy `policy` (`"always_allow"`, or
    /// `"always_ask"`: each call waits for the application's confirmation).
    pub fn builtin_toolset(self, policy: &str) -> Self {
        self.toolset(json!({"type": AGENT_TOOLSET, "default_config": {"permission_policy": {"type": policy}}}))
    }

    /// With the built-in toolset declared as `toolset` (its wire form, verbatim: per-tool `configs` and all).
    pub fn toolset(mut self, toolset: Value) -> Self {
        self.toolset = Some(toolset);
        self
    }

    /// With a multi-agent configuration (a coordinator's roster: [`Multiagent::coordinator`]).
    pub fn multiagent(mut self, multiagent: Multiagent) -> Self {
        self.multiagent = Some(multiagent);
        self
    }

    /// Checks the spec ([`AgentSpec::validate`]) and the roster ([`Multiagent::validate`]).
    pub fn validate(&self) -> Result<(), Error> {
        self.spec.validate()?;
        self.multiagent.as_ref().map_or(Ok(()), Multiagent::validate)
    }

    /// The definition's digest: the spec's ([`AgentSpec::digest`]) when no Claude-only field is set, else the
    /// digest of the spec's digest together with the Claude fields' wire form.
    pub fn digest(&self) -> Digest {
        let spec = self.spec.digest();
        if self.multiagent.is_none() && self.toolset.is_none() {
            return spec;
        }
        let mut fields = json!({"spec": spec.hex()});
        if let Some(multiagent) = &self.multiagent {
            fields["multiagent"] = multiagent.to_wire();
        }
        if let Some(toolset) = &self.toolset {
            fields["toolset"] = toolset.clone();
        }
        Digest::of_json(&fields)
    }

    /// The create-agent body under `name`: the spec's, with the Claude fields.
    pub(crate) fn body(&self, name: &str) -> Result<Value, Error> {
        let mut body = agent_body(&self.spec, name)?;
        if let Some(multiagent) = &self.multiagent {
            body["multiagent"] = multiagent.to_wire();
        }
        if let (Some(toolset), Some(tools)) = (&self.toolset, body["tools"].as_array_mut()) {
            tools.insert(0, toolset.clone());
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::roster::RosterEntry;

    #[test]
    fn the_built_in_toolset_is_declared_first_and_counts_in_the_digest() {
        let plain = ClaudeAgent::new(spec());
        let tooled = ClaudeAgent::new(spec()).builtin_toolset("always_allow");
        assert_ne!(tooled.digest(), plain.digest());
        assert_ne!(tooled.digest(), ClaudeAgent::new(spec()).builtin_toolset("always_ask").digest());
        let tools = tooled.body("lead_1").unwrap()["tools"].clone();
        assert_eq!(
            tools[0],
            json!({"type": AGENT_TOOLSET,
            "default_config": {"permission_policy": {"type": "always_allow"}}})
        );
    }

    fn spec() -> AgentSpec {
        AgentSpec::new("lead", "Delegate.").model("claude-opus-4-8")
    }

    #[test]
    fn the_roster_is_part_of_the_definition() {
        let plain = ClaudeAgent::new(spec());
        assert_eq!(plain.digest(), spec().digest(), "no Claude field: the spec's own digest");
        assert!(plain.body("lead_1").unwrap().get("multiagent").is_none());
        let own = plain.clone().multiagent(Multiagent::coordinator([RosterEntry::itself()]));
        let worker = plain.clone().multiagent(Multiagent::coordinator([RosterEntry::agent("agent_w")]));
        let pinned = plain.clone().multiagent(Multiagent::coordinator([RosterEntry::agent_version("agent_w", 2)]));
        let digests = [plain.digest(), own.digest(), worker.digest(), pinned.digest()];
        for (i, a) in digests.iter().enumerate() {
            for b in &digests[i + 1..] {
                assert_ne!(a, b, "rosters that differ land on different agents");
            }
        }
        assert_eq!(worker.digest(), worker.clone().digest(), "stable");
        let mut renamed = worker.clone();
        renamed.spec.name = "another".into();
        assert_eq!(renamed.digest(), worker.digest(), "the name is not part of the definition");
        assert_eq!(
            own.body("lead_1").unwrap()["multiagent"],
            json!({"type": "coordinator", "agents": [{"type": "self"}]})
        );
        let bad = plain.multiagent(Multiagent::coordinator([]));
        assert!(matches!(bad.validate(), Err(Error::InvalidSpec { what: "multiagent", .. })));
    }
}
