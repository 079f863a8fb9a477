//! Provisioning: nothing server-side. An agent definition is registered on the provider (and its clones) under
//! `<name>_<digest8>`; a run whose `agent_id` is that handle's uses the definition's system prompt and tools.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use managed_agents_core::provision::NamePolicy;
use managed_agents_core::{AgentHandle, AgentSpec, Error};
use serde_json::Value;

use crate::wire::openai_tool;

/// What a provisioned agent brings to a run: its system prompt and tools (OpenAI shape).
#[derive(Debug)]
pub(crate) struct Profile {
    pub(crate) system_prompt: String,
    pub(crate) tools: Vec<Value>,
}

/// The agents provisioned on one provider and its clones, by agent id.
#[derive(Debug, Default)]
pub(crate) struct Agents(RwLock<HashMap<String, Arc<Profile>>>);

impl Agents {
    /// Registers `spec` (once validated) and returns its handle, named by [`NamePolicy::CLAUDE`] from the spec's
    /// name and digest: the same spec gets the same handle.
    pub(crate) fn register(&self, spec: &AgentSpec) -> Result<AgentHandle, Error> {
        spec.validate()?;
        let agent_id = NamePolicy::CLAUDE.compose(&spec.name, &spec.digest())?;
        let profile =
            Profile { system_prompt: spec.system_prompt.clone(), tools: spec.tools.iter().map(openai_tool).collect() };
        self.0.write().unwrap_or_else(PoisonError::into_inner).insert(agent_id.clone(), Arc::new(profile));
        Ok(AgentHandle { agent_id, environment_id: None })
    }

    /// The agent registered as `id`, if any.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Profile>> {
        self.0.read().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    /// Forgets the agent registered as `id`.
    pub(crate) fn forget(&self, id: &str) {
        self.0.write().unwrap_or_else(PoisonError::into_inner).remove(id);
    }
}
