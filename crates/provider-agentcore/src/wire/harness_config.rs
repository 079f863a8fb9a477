//! What a harness is configured with and an invocation may override — its model, system prompt and inline
//! function tools — checked once, then built on either SDK crate's types: the control plane's for
//! `CreateHarness` ([`control`]), the data plane's for `InvokeHarness` ([`data`]). The two crates generate the same
//! shapes twice, so one macro builds both.
//!
//! A model is named by a model id (see [`native_model`]): a Bedrock model id (`"anthropic.claude-sonnet-4"`,
//! `"us.anthropic.claude-haiku-4-5-20251001-v1:0"`), a `bedrock:` catalog id, or the service's whole `model` JSON
//! as text — `{"bedrockModelConfig": {…}}` or `{"liteLlmModelConfig": {…}}` with every member the service takes
//! (`modelId`, `maxTokens`, `temperature`, `topP`, and `apiFormat` for Bedrock, `apiKeyArn` and `apiBase` for
//! LiteLLM, `additionalParams`), passed through whole. The other alternatives of the union
//! (`openAiModelConfig`, `geminiModelConfig`) are refused, as is every member this crate does not map.

use managed_agents_core::{Error, split_catalog_id};
use serde_json::{Value, json};

/// The catalog whose ids AgentCore serves.
const CATALOG: &str = "bedrock";

/// The wire value of model id `id`: the service's `model` JSON. A `bedrock:` catalog id and a bare model id become
/// `{"bedrockModelConfig": {"modelId": …}}` (a bare id as it is, colons included); JSON object text is the whole
/// configuration, checked; another catalog's id is [`Error::UnsupportedModel`]; a configuration this crate cannot
/// send is [`Error::InvalidOption`] (`model`).
pub(crate) fn native_model(id: &str) -> Result<Value, Error> {
    let id = id.trim();
    if id.starts_with('{') {
        let value: Value = serde_json::from_str(id)
            .map_err(|e| Error::invalid_option("model", format!("the model configuration is not JSON: {e}")))?;
        HarnessModel::from_value(&value).map_err(|reason| Error::invalid_option("model", reason))?;
        return Ok(value);
    }
    match split_catalog_id(id) {
        (Some(CATALOG), model) | (None, model) => Ok(json!({"bedrockModelConfig": {"modelId": model}})),
        (Some(_), _) => Err(Error::unsupported_model("agentcore", id)),
    }
}

/// A model configuration, checked: what [`native_model`] names, ready for either plane.
pub(crate) fn harness_model(id: &str) -> Result<HarnessModel, Error> {
    HarnessModel::from_value(&native_model(id)?).map_err(|reason| Error::invalid_option("model", reason))
}

/// Which alternative of the `model` union.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelKind {
    /// `bedrockModelConfig`.
    Bedrock,
    /// `liteLlmModelConfig`.
    LiteLlm,
}

/// One model configuration, every member checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HarnessModel {
    pub(crate) kind: ModelKind,
    pub(crate) model_id: String,
    pub(crate) max_tokens: Option<i32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) top_p: Option<f32>,
    /// Bedrock only: `converse_stream`, `chat_completions`, `responses` (or a newer one).
    pub(crate) api_format: Option<String>,
    /// LiteLLM only: the token vault credential provider holding the model provider's key.
    pub(crate) api_key_arn: Option<String>,
    /// LiteLLM only: the model provider's base URL.
    pub(crate) api_base: Option<String>,
    pub(crate) additional_params: Option<Value>,
}

impl HarnessModel {
    /// Reads the service's `model` JSON: one member naming the alternative, whose members this crate maps.
    fn from_value(value: &Value) -> Result<Self, String> {
        let object = value.as_object().ok_or("the model configuration must be a JSON object")?;
        let [(alternative, config)] = object.iter().collect::<Vec<_>>()[..] else {
            return Err(format!("the model configuration names one alternative, not {}", object.len()));
        };
        let kind = match alternative.as_str() {
            "bedrockModelConfig" => ModelKind::Bedrock,
            "liteLlmModelConfig" => ModelKind::LiteLlm,
            other @ ("openAiModelConfig" | "geminiModelConfig") => {
                return Err(format!(
                    "`{other}` is not supported by this crate (bedrockModelConfig, liteLlmModelConfig)"
                ));
            }
            other => return Err(format!("`{other}` is not a harness model configuration")),
        };
        let config = config.as_object().ok_or_else(|| format!("`{alternative}` must be an object"))?;
        let mut model = Self {
            kind,
            model_id: String::new(),
            max_tokens: None,
            temperature: None,
            top_p: None,
            api_format: None,
            api_key_arn: None,
            api_base: None,
            additional_params: None,
        };
        for (member, value) in config {
            model.set(member, value).map_err(|why| format!("`{alternative}.{member}` {why}"))?;
        }
        if model.model_id.trim().is_empty() {
            return Err(format!("`{alternative}.modelId` is required"));
        }
        Ok(model)
    }

    fn set(&mut self, member: &str, value: &Value) -> Result<(), &'static str> {
        let text = || value.as_str().map(str::to_string).ok_or("must be a string");
        let number = || value.as_f64().map(|n| n as f32).ok_or("must be a number");
        match (member, self.kind) {
            ("modelId", _) => self.model_id = text()?,
            ("maxTokens", _) => {
                let tokens = value.as_i64().and_then(|n| i32::try_from(n).ok()).filter(|n| *n > 0);
                self.max_tokens = Some(tokens.ok_or("must be a positive integer")?);
            }
            ("temperature", _) => self.temperature = Some(number()?),
            ("topP", _) => self.top_p = Some(number()?),
            ("additionalParams", _) => self.additional_params = Some(value.clone()),
            ("apiFormat", ModelKind::Bedrock) => self.api_format = Some(text()?),
            ("apiKeyArn", ModelKind::LiteLlm) => self.api_key_arn = Some(text()?),
            ("apiBase", ModelKind::LiteLlm) => self.api_base = Some(text()?),
            _ => return Err("is not a member this crate sends"),
        }
        Ok(())
    }
}

/// The builders of one SDK crate (`$krate`): the model union, the system prompt and inline function tools.
macro_rules! plane {
    ($(#[$doc:meta])* $module:ident, $krate:ident) => {
        $(#[$doc])*
        pub(crate) mod $module {
            use $krate::types::{
                HarnessBedrockApiFormat, HarnessBedrockModelConfig, HarnessInlineFunctionConfig,
                HarnessLiteLlmModelConfig, HarnessModelConfiguration, HarnessSystemContentBlock, HarnessTool,
                HarnessToolConfiguration, HarnessToolType,
            };
            use managed_agents_core::ToolSchema;

            use super::{HarnessModel, ModelKind};
            use crate::wire::convert::to_document;

            /// The `model` union of `model`.
            pub(crate) fn model(model: &HarnessModel) -> Result<HarnessModelConfiguration, String> {
                let params = model.additional_params.as_ref().map(to_document);
                Ok(match model.kind {
                    ModelKind::Bedrock => HarnessModelConfiguration::BedrockModelConfig(
                        HarnessBedrockModelConfig::builder()
                            .model_id(&model.model_id)
                            .set_max_tokens(model.max_tokens)
                            .set_temperature(model.temperature)
                            .set_top_p(model.top_p)
                            .set_api_format(model.api_format.as_deref().map(HarnessBedrockApiFormat::from))
                            .set_additional_params(params)
                            .build()
                            .map_err(|e| e.to_string())?,
                    ),
                    ModelKind::LiteLlm => HarnessModelConfiguration::LiteLlmModelConfig(
                        HarnessLiteLlmModelConfig::builder()
                            .model_id(&model.model_id)
                            .set_api_key_arn(model.api_key_arn.clone())
                            .set_api_base(model.api_base.clone())
                            .set_max_tokens(model.max_tokens)
                            .set_temperature(model.temperature)
                            .set_top_p(model.top_p)
                            .set_additional_params(params)
                            .build()
                            .map_err(|e| e.to_string())?,
                    ),
                })
            }

            /// A system prompt as its one text block.
            pub(crate) fn system_prompt(text: &str) -> Vec<HarnessSystemContentBlock> {
                vec![HarnessSystemContentBlock::Text(text.to_string())]
            }

            /// Custom tools as `inline_function` tools (run locally by the session's handler).
            pub(crate) fn tools(tools: &[ToolSchema]) -> Result<Vec<HarnessTool>, String> {
                tools
                    .iter()
                    .map(|tool| {
                        let config = HarnessInlineFunctionConfig::builder()
                            .description(tool.description.clone())
                            .input_schema(to_document(&tool.input_schema))
                            .build()
                            .map_err(|e| e.to_string())?;
                        HarnessTool::builder()
                            .r#type(HarnessToolType::InlineFunction)
                            .name(tool.name.clone())
                            .config(HarnessToolConfiguration::InlineFunction(config))
                            .build()
                            .map_err(|e| e.to_string())
                    })
                    .collect()
            }
        }
    };
}

plane!(
    /// On the control plane's types (`CreateHarness`).
    control,
    aws_sdk_bedrockagentcorecontrol
);
plane!(
    /// On the data plane's types (`InvokeHarness`'s overrides).
    data,
    aws_sdk_bedrockagentcore
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_bedrock_model_configs_and_other_catalogs_are_refused() {
        let bedrock = |id: &str| json!({"bedrockModelConfig": {"modelId": id}});
        assert_eq!(native_model("anthropic.claude-sonnet-4").unwrap(), bedrock("anthropic.claude-sonnet-4"));
        assert_eq!(
            native_model("bedrock:us.anthropic.claude-haiku-4-5").unwrap(),
            bedrock("us.anthropic.claude-haiku-4-5")
        );
        let colon = "anthropic.claude-3-5-sonnet-20240620-v1:0";
        assert_eq!(native_model(colon).unwrap(), bedrock(colon), "a bare id as it is");
        for other in ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"] {
            let error = native_model(other).unwrap_err();
            assert!(
                matches!(&error, Error::UnsupportedModel { provider, model, .. } if provider == "agentcore" && model == other),
                "{error:?}"
            );
        }
    }

    #[test]
    fn a_whole_configuration_passes_through_checked() {
        let lite = json!({"liteLlmModelConfig": {"modelId": "anthropic/claude-3-sonnet", "apiBase": "https://llm.example",
            "apiKeyArn": "arn:aws:acps:us-east-1:123456789012:token-vault/default/apikeycredentialprovider/gw",
            "maxTokens": 1024, "temperature": 0.5, "topP": 0.25, "additionalParams": {"seed": 7}}});
        assert_eq!(native_model(&lite.to_string()).unwrap(), lite);
        let model = harness_model(&lite.to_string()).unwrap();
        assert_eq!(
            (model.kind, model.max_tokens, model.api_base.as_deref()),
            (ModelKind::LiteLlm, Some(1024), Some("https://llm.example"))
        );
        let bedrock = json!({"bedrockModelConfig": {"modelId": "m", "apiFormat": "converse_stream", "maxTokens": 10}});
        assert_eq!(harness_model(&bedrock.to_string()).unwrap().api_format.as_deref(), Some("converse_stream"));
        for bad in [
            json!({"openAiModelConfig": {"modelId": "gpt", "apiKeyArn": "a"}}),
            json!({"bedrockModelConfig": {"modelId": "m", "apiBase": "https://x"}}),
            json!({"bedrockModelConfig": {"modelId": "m", "maxTokens": -1}}),
            json!({"bedrockModelConfig": {"maxTokens": 1}}),
            json!({"bedrockModelConfig": {"modelId": "m"}, "liteLlmModelConfig": {"modelId": "m"}}),
            json!({"somethingElse": {}}),
        ] {
            let error = native_model(&bad.to_string()).unwrap_err();
            assert!(matches!(error, Error::InvalidOption { option: "model", .. }), "{bad}: {error:?}");
        }
        assert!(matches!(native_model("{not json").unwrap_err(), Error::InvalidOption { option: "model", .. }));
    }
}
