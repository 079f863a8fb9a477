//! The per-invocation overrides a session opens with. Each goes on every `InvokeHarness` call of the session and
//! replaces the harness's own setting for that call only; all are checked when the session opens, before
//! anything is sent.
//!
//! | from the `OpenRequest` | on the wire |
//! |---|---|
//! | the model (`SessionOptions::model` / `model_config`) | `model` (see [`native_model`](crate::wire::harness_config::native_model)) |
//! | `SessionOptions::system_prompt` | `systemPrompt` |
//! | `SessionOptions::tools` | `tools` (as `inline_function` tools) |
//! | provider option `allowed_tools` (a list of strings) | `allowedTools` |
//! | provider options `timeout_seconds`, `max_iterations`, `max_tokens` (positive integers) | `timeoutSeconds`, `maxIterations`, `maxTokens` |
//! | provider option `actor_id` (a string) | `actorId` (the memory actor) |
//! | provider option `runtime_user_id` (a string) | the `X-Amzn-Bedrock-AgentCore-Runtime-User-Id` header |

use aws_sdk_bedrockagentcore::operation::invoke_harness::builders::InvokeHarnessFluentBuilder;
use aws_sdk_bedrockagentcore::types::{HarnessModelConfiguration, HarnessSystemContentBlock, HarnessTool};
use managed_agents_core::{Error, OpenRequest};
use serde_json::Value;

use crate::wire::harness_config::{data, harness_model};

/// The overrides of one session, on the data plane's types.
#[derive(Debug, Clone, Default)]
pub(super) struct Overrides {
    model: Option<HarnessModelConfiguration>,
    system_prompt: Option<Vec<HarnessSystemContentBlock>>,
    tools: Option<Vec<HarnessTool>>,
    allowed_tools: Option<Vec<String>>,
    timeout_seconds: Option<i32>,
    max_iterations: Option<i32>,
    max_tokens: Option<i32>,
    actor_id: Option<String>,
    runtime_user_id: Option<String>,
}

impl Overrides {
    /// The overrides `request` asks for (see the module documentation); [`Error::InvalidOption`] for one that
    /// cannot be sent, [`Error::UnsupportedModel`] for a model of another catalog.
    pub(super) fn from_request(request: &OpenRequest) -> Result<Self, Error> {
        let integer = |key: &'static str| -> Result<Option<i32>, Error> {
            match request.option(key) {
                None => Ok(None),
                Some(value) => value
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .filter(|n| *n > 0)
                    .map(Some)
                    .ok_or_else(|| Error::invalid_option(key, "must be a positive integer")),
            }
        };
        let string = |key: &'static str| -> Result<Option<String>, Error> {
            match request.option(key) {
                None => Ok(None),
                Some(Value::String(text)) if !text.trim().is_empty() => Ok(Some(text.clone())),
                Some(_) => Err(Error::invalid_option(key, "must be a non-empty string")),
            }
        };
        let allowed_tools = match request.option("allowed_tools") {
            None => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| Error::invalid_option("allowed_tools", "must be a list of strings"))?,
            ),
            Some(_) => return Err(Error::invalid_option("allowed_tools", "must be a list of strings")),
        };
        let model = match request.model() {
            None => None,
            Some(id) => {
                let model = harness_model(id)?;
                Some(data::model(&model).map_err(|reason| Error::invalid_option("model", reason))?)
            }
        };
        let tools = match &request.tools {
            None => None,
            Some(tools) => Some(data::tools(tools).map_err(|reason| Error::invalid_option("tools", reason))?),
        };
        Ok(Self {
            model,
            system_prompt: request.system.as_deref().map(data::system_prompt),
            tools,
            allowed_tools,
            timeout_seconds: integer("timeout_seconds")?,
            max_iterations: integer("max_iterations")?,
            max_tokens: integer("max_tokens")?,
            actor_id: string("actor_id")?,
            runtime_user_id: string("runtime_user_id")?,
        })
    }

    /// `call` with every override set.
    pub(super) fn apply(&self, call: InvokeHarnessFluentBuilder) -> InvokeHarnessFluentBuilder {
        call.set_model(self.model.clone())
            .set_system_prompt(self.system_prompt.clone())
            .set_tools(self.tools.clone())
            .set_allowed_tools(self.allowed_tools.clone())
            .set_timeout_seconds(self.timeout_seconds)
            .set_max_iterations(self.max_iterations)
            .set_max_tokens(self.max_tokens)
            .set_actor_id(self.actor_id.clone())
            .set_runtime_user_id(self.runtime_user_id.clone())
    }
}
