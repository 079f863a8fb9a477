//! The `CreateHarness` request of a spec: its system prompt, model (passed through whole), tools and environment,
//! checked before anything is sent.

use aws_sdk_bedrockagentcorecontrol::types::{
    FilesystemConfiguration, HarnessAgentCoreRuntimeEnvironmentRequest, HarnessEnvironmentProviderRequest,
    HarnessModelConfiguration, HarnessSystemContentBlock, HarnessTool, LifecycleConfiguration, NetworkConfiguration,
    NetworkMode, SessionStorageConfiguration,
};
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error};
use serde_json::Value;

use crate::wire::harness_config::{control, harness_model};

/// The `CreateHarness` contents of a spec, checked before anything is sent.
pub(super) struct CreateParts {
    pub(super) system_prompt: Vec<HarnessSystemContentBlock>,
    pub(super) model: Option<HarnessModelConfiguration>,
    pub(super) tools: Vec<HarnessTool>,
    pub(super) environment: Option<HarnessEnvironmentProviderRequest>,
}

fn build_error(what: &'static str) -> impl Fn(aws_smithy_types::error::operation::BuildError) -> Error {
    move |error| Error::invalid_spec(what, error.to_string())
}

/// The parts of `spec` (in `environment`). The model goes through the provider's model translation
/// ([`native_model`](crate::wire::harness_config::native_model)): another catalog's id is
/// [`Error::UnsupportedModel`], a configuration this crate cannot send [`Error::InvalidSpec`].
pub(super) fn create_parts(spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Result<CreateParts, Error> {
    let invalid = |reason: String| Error::invalid_spec("agent spec", reason);
    let tools = control::tools(&spec.tools).map_err(invalid)?;
    let model = match spec.model.as_deref() {
        None => None,
        Some(id) => {
            let model = harness_model(id).map_err(|error| match error {
                Error::InvalidOption { reason, .. } => invalid(format!("model: {reason}")),
                other => other,
            })?;
            Some(control::model(&model).map_err(invalid)?)
        }
    };
    let environment = match environment.and_then(|e| e.config.as_ref()) {
        None => None,
        Some(config) => environment_request(config)?,
    };
    Ok(CreateParts { system_prompt: control::system_prompt(&spec.system_prompt), model, tools, environment })
}

/// `EnvironmentSpec::config` as the harness `environment`: the service's JSON shape
/// (`{"agentCoreRuntimeEnvironment": {"filesystemConfigurations": [{"sessionStorage": {"mountPath": …}}],
/// "lifecycleConfiguration": {…}, "networkConfiguration": {"networkMode": …}}}`). Members this crate does not map
/// are refused with [`Error::InvalidSpec`] rather than dropped.
fn environment_request(config: &Value) -> Result<Option<HarnessEnvironmentProviderRequest>, Error> {
    let invalid = |reason: String| Error::invalid_spec("environment spec", reason);
    let object = config.as_object().ok_or_else(|| invalid("`config` must be a JSON object".into()))?;
    if object.is_empty() {
        return Ok(None);
    }
    let mut runtime = None;
    for (key, value) in object {
        match key.as_str() {
            "agentCoreRuntimeEnvironment" => runtime = Some(value),
            other => return Err(invalid(format!("unsupported AgentCore environment member `{other}`"))),
        }
    }
    let Some(runtime) = runtime.and_then(Value::as_object) else {
        return Err(invalid("`agentCoreRuntimeEnvironment` must be an object".into()));
    };
    let mut request = HarnessAgentCoreRuntimeEnvironmentRequest::builder();
    let int = |value: &Value, name: &str| -> Result<i32, Error> {
        value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| invalid(format!("`{name}` must be an integer")))
    };
    for (key, value) in runtime {
        match key.as_str() {
            "filesystemConfigurations" => {
                let list =
                    value.as_array().ok_or_else(|| invalid("`filesystemConfigurations` must be a list".into()))?;
                for item in list {
                    let Some(path) = item.pointer("/sessionStorage/mountPath").and_then(Value::as_str) else {
                        return Err(invalid("only `sessionStorage.mountPath` file systems are supported".into()));
                    };
                    let storage = SessionStorageConfiguration::builder()
                        .mount_path(path)
                        .build()
                        .map_err(build_error("environment spec"))?;
                    request = request.filesystem_configurations(FilesystemConfiguration::SessionStorage(storage));
                }
            }
            "lifecycleConfiguration" => {
                let mut lifecycle = LifecycleConfiguration::builder();
                let members =
                    value.as_object().ok_or_else(|| invalid("`lifecycleConfiguration` must be an object".into()))?;
                for (name, value) in members {
                    lifecycle = match name.as_str() {
                        "idleRuntimeSessionTimeout" => lifecycle.idle_runtime_session_timeout(int(value, name)?),
                        "maxLifetime" => lifecycle.max_lifetime(int(value, name)?),
                        other => return Err(invalid(format!("unsupported lifecycle member `{other}`"))),
                    };
                }
                request = request.lifecycle_configuration(lifecycle.build());
            }
            "networkConfiguration" => {
                let mode = value
                    .get("networkMode")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("`networkConfiguration.networkMode` must be a string".into()))?;
                if value.as_object().is_some_and(|o| o.len() > 1) {
                    return Err(invalid("only `networkConfiguration.networkMode` is supported".into()));
                }
                let network = NetworkConfiguration::builder()
                    .network_mode(NetworkMode::from(mode))
                    .build()
                    .map_err(build_error("environment spec"))?;
                request = request.network_configuration(network);
            }
            other => return Err(invalid(format!("unsupported runtime environment member `{other}`"))),
        }
    }
    Ok(Some(HarnessEnvironmentProviderRequest::AgentCoreRuntimeEnvironment(request.build())))
}
