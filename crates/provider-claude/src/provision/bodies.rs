//! The create bodies a definition becomes: an agent's ([`agent_body`]) and an environment's `config`
//! ([`environment_config`]).

use managed_agents_core::{AgentSpec, EnvironmentSpec, Error, Networking};
use serde_json::{Map, Value, json};

use crate::provision::bootstrap::allow_mise_hosts;
use crate::wire::model::native_model;
use crate::wire::overrides::custom_tool;

/// The create-agent body for `spec` under `name`: the wire's model id ([`native_model`]: a model of another
/// catalog than `anthropic:` is an [`Error::UnsupportedModel`], before anything is sent), system prompt, custom
/// tools, description and metadata when given.
pub(crate) fn agent_body(spec: &AgentSpec, name: &str) -> Result<Value, Error> {
    let model = spec
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| Error::invalid_spec("agent spec", "it names no model"))?;
    let model = native_model(model)?;
    let tools: Vec<Value> = spec.tools.iter().map(custom_tool).collect();
    let mut body = json!({"name": name, "model": model, "system": spec.system_prompt, "tools": tools});
    if let Some(description) = &spec.description {
        body["description"] = json!(description);
    }
    if !spec.metadata.is_empty() {
        body["metadata"] = json!(spec.metadata);
    }
    Ok(body)
}

/// `spec` as a self-hosted environment (`config: {"type": "self_hosted"}`): the agent loop stays on Anthropic's side
/// and the built-in tools run where its worker runs (`environment::EnvironmentWorker`, feature `worker`). The config is part of the spec's digest, so a self-hosted environment is never confused with a
/// cloud one of the same name. Its networking and packages are the worker machine's own business: they are not
/// sent.
pub fn self_hosted(spec: EnvironmentSpec) -> EnvironmentSpec {
    spec.config(json!({"type": SELF_HOSTED}))
}

/// The `config.type` of a self-hosted environment.
pub const SELF_HOSTED: &str = "self_hosted";

/// The environment `config` for `spec`: its `config` verbatim when given; otherwise a cloud environment with the
/// spec's networking and packages. Runtimes never reach the wire, but when there are some and the networking is
/// limited, the hosts their bootstrap needs are allowed ([`MISE_HOSTS`](crate::provision::MISE_HOSTS)).
pub fn environment_config(spec: &EnvironmentSpec) -> Value {
    let mut config = wire_config(spec);
    if !spec.runtimes.is_empty() {
        allow_mise_hosts(&mut config);
    }
    config
}

fn wire_config(spec: &EnvironmentSpec) -> Value {
    if let Some(config) = &spec.config {
        return config.clone();
    }
    let networking = match &spec.networking {
        Networking::Unrestricted => json!({"type": "unrestricted"}),
        Networking::Limited { allowed_hosts } => json!({"type": "limited", "allowed_hosts": allowed_hosts}),
        // A networking mode this provider does not know yet must not open the network: no host is allowed.
        _ => json!({"type": "limited", "allowed_hosts": []}),
    };
    let mut config = json!({"type": "cloud", "networking": networking});
    if !spec.packages.is_empty() {
        let mut packages = Map::new();
        packages.insert("type".into(), json!("packages"));
        for (manager, names) in &spec.packages {
            packages.insert(manager.clone(), json!(names));
        }
        config["packages"] = Value::Object(packages);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_hosted_environment_sends_its_type_and_digests_apart_from_a_cloud_one() {
        let cloud = EnvironmentSpec::new().name("tools");
        let hosted = self_hosted(cloud.clone());
        assert_eq!(environment_config(&hosted), json!({"type": "self_hosted"}));
        assert_ne!(hosted.digest(), cloud.digest());
    }

    #[test]
    fn the_environment_config_follows_the_spec() {
        let spec = EnvironmentSpec::new()
            .networking(Networking::Limited { allowed_hosts: vec!["pypi.org".into()] })
            .packages("pip", ["pandas"]);
        assert_eq!(
            environment_config(&spec),
            json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["pypi.org"]},
                   "packages": {"type": "packages", "pip": ["pandas"]}})
        );
        let verbatim = EnvironmentSpec::new().config(json!({"type": "self_hosted"}));
        assert_eq!(environment_config(&verbatim), json!({"type": "self_hosted"}));
    }
}
