//! Typed tools and the toolbox that routes to them.
//!
//! A [`Tool`] has a name, a description, a typed argument struct (`serde::Deserialize + schemars::JsonSchema`)
//! and an async call. The JSON Schema the model sees is derived from the argument type, once; arguments the model
//! got wrong become an error result naming the field, so the model can correct itself.
//!
//! A [`Toolbox`] is one [`Handler`] over many tools — typed tools, closures, and any
//! [`DynTool`] (MCP tools from `managed-agents-mcp` are `DynTool`s): it routes each call by name, refuses
//! duplicate names when it is built, applies per-tool timeouts, gives the [`ToolSchema`]s to provisioning
//! ([`AgentSpec`](crate::AgentSpec)) and to Local, and marks the tools that must be approved first
//! ([`Toolbox::permission`]).
//!
//! ```
//! use managed_agents_core::tools::{Tool, ToolValue, Toolbox};
//! use managed_agents_core::{BoxError, SessionInfo, async_trait};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! /// The weather in a city.
//! struct Weather;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WeatherArgs {
//!     /// The city, e.g. "Oslo".
//!     city: String,
//! }
//!
//! #[async_trait]
//! impl Tool for Weather {
//!     type Args = WeatherArgs;
//!     fn name(&self) -> &str {
//!         "get_weather"
//!     }
//!     fn description(&self) -> &str {
//!         "The current weather in a city"
//!     }
//!     async fn call(&self, args: WeatherArgs, _: &SessionInfo) -> Result<ToolValue, BoxError> {
//!         Ok(format!("sunny in {}", args.city).into())
//!     }
//! }
//!
//! let toolbox = Toolbox::builder().tool(Weather).build()?;
//! let schema = &toolbox.schemas()[0];
//! assert_eq!(schema.name, "get_weather");
//! assert_eq!(schema.input_schema["required"][0], "city");
//! # Ok::<(), managed_agents_core::Error>(())
//! ```

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::approval::{ApprovalRequest, Decision, Permission};
use crate::{BoxError, Error, Handler, SessionInfo, ToolOutput, ToolSchema, ToolUse};

/// What a tool returns: text, or a JSON value (sent to the model as its JSON text).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolValue {
    /// Text, sent as it is.
    Text(String),
    /// A JSON value, sent as its compact JSON text.
    Json(Value),
}

impl ToolValue {
    /// The text the loop host receives.
    pub fn into_text(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::Json(Value::String(text)) => text,
            Self::Json(value) => value.to_string(),
        }
    }
}

impl From<String> for ToolValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_string())
    }
}

impl From<Value> for ToolValue {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

/// A tool with typed arguments. Its input schema is derived from [`Tool::Args`].
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The arguments the model passes, decoded from its JSON input.
    type Args: DeserializeOwned + schemars::JsonSchema + Send;

    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// Runs the tool. `Err` becomes an error result whose text is the error's.
    async fn call(&self, args: Self::Args, info: &SessionInfo) -> Result<ToolValue, BoxError>;
}

/// A tool as the toolbox sees it: a schema and a call on raw JSON input. Object safe; every [`Tool`] is one
/// (through [`Typed`]), and so are the tools of other sources, such as MCP servers.
#[async_trait]
pub trait DynTool: Send + Sync + 'static {
    /// The declaration the model sees (name, description, input schema).
    fn schema(&self) -> ToolSchema;

    /// Runs the call `tool_use` (its `input` is the model's raw JSON).
    async fn call_json(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput;
}

/// A [`Tool`] as a [`DynTool`]: decodes the input into [`Tool::Args`] (an error result naming the field when
/// that fails) and calls it.
pub struct Typed<T: Tool> {
    tool: T,
    schema: Value,
}

impl<T: Tool> Typed<T> {
    /// Wraps `tool`, deriving its input schema from its argument type.
    pub fn new(tool: T) -> Self {
        Self { tool, schema: input_schema::<T::Args>() }
    }
}

#[async_trait]
impl<T: Tool> DynTool for Typed<T> {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(self.tool.name(), self.tool.description(), self.schema.clone())
    }

    async fn call_json(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        let args = decode_args::<T::Args>(&tool_use.input)?;
        Ok(self.tool.call(args, info).await?.into_text())
    }
}

/// The JSON Schema of an argument type, as the model gets it: the schema of an object, without the
/// `$schema` and `title` keys (providers take the object schema itself).
pub fn input_schema<A: schemars::JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(A).to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// Decodes the model's JSON input into `A`. The error names the field that did not fit (`city: invalid type:
/// integer 3, expected a string`), so the model can correct its call.
pub fn decode_args<A: DeserializeOwned>(input: &Value) -> Result<A, BoxError> {
    serde_path_to_error::deserialize::<_, A>(input).map_err(|error| {
        let path = error.path().to_string();
        let detail = error.into_inner().to_string();
        let message = if path == "." || path.is_empty() {
            format!("invalid arguments: {detail}")
        } else {
            format!("invalid arguments: `{path}`: {detail}")
        };
        message.into()
    })
}

/// A tool made of a closure over raw JSON input and a hand-written schema. See [`ToolboxBuilder::function`].
struct FunctionTool<F> {
    schema: ToolSchema,
    call: F,
}

#[async_trait]
impl<F, Fut> DynTool for FunctionTool<F>
where
    F: Fn(Value, SessionInfo) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    fn schema(&self) -> ToolSchema {
        self.schema.clone()
    }

    async fn call_json(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        (self.call)(tool_use.input.clone(), info.clone()).await
    }
}

/// How the toolbox treats one tool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolSettings {
    /// A time limit for each call; a call past it gets an error result.
    pub timeout: Option<Duration>,
    /// Whether each call must be approved by a person first (see [`Toolbox::permission`]).
    pub needs_approval: bool,
}

impl ToolSettings {
    /// No time limit, no approval.
    pub fn new() -> Self {
        Self::default()
    }

    /// With a time limit per call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With approval required before each call.
    pub fn needs_approval(mut self) -> Self {
        self.needs_approval = true;
        self
    }
}

struct Entry {
    tool: Arc<dyn DynTool>,
    schema: ToolSchema,
    settings: ToolSettings,
}

/// Builds a [`Toolbox`]. See [`Toolbox::builder`].
#[derive(Default)]
pub struct ToolboxBuilder {
    entries: Vec<Entry>,
}

impl ToolboxBuilder {
    /// Adds a typed tool.
    pub fn tool(self, tool: impl Tool) -> Self {
        self.tool_with(tool, ToolSettings::new())
    }

    /// Adds a typed tool with settings.
    pub fn tool_with(self, tool: impl Tool, settings: ToolSettings) -> Self {
        self.dyn_tool_with(Arc::new(Typed::new(tool)), settings)
    }

    /// Adds a tool made of a closure `|input: Value, info: SessionInfo| async move { … }` and a hand-written
    /// schema.
    pub fn function<F, Fut>(self, schema: ToolSchema, call: F) -> Self
    where
        F: Fn(Value, SessionInfo) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        self.dyn_tool(Arc::new(FunctionTool { schema, call }))
    }

    /// Adds any [`DynTool`] (an MCP tool, say).
    pub fn dyn_tool(self, tool: Arc<dyn DynTool>) -> Self {
        self.dyn_tool_with(tool, ToolSettings::new())
    }

    /// Adds any [`DynTool`] with settings.
    pub fn dyn_tool_with(mut self, tool: Arc<dyn DynTool>, settings: ToolSettings) -> Self {
        let schema = tool.schema();
        self.entries.push(Entry { tool, schema, settings });
        self
    }

    /// Adds several [`DynTool`]s (every tool of an MCP server, say).
    pub fn dyn_tools(self, tools: impl IntoIterator<Item = Arc<dyn DynTool>>) -> Self {
        tools.into_iter().fold(self, ToolboxBuilder::dyn_tool)
    }

    /// The toolbox. [`Error::InvalidSpec`] when two tools share a name, or a name is empty; a zero timeout is
    /// [`Error::InvalidOption`].
    pub fn build(self) -> Result<Toolbox, Error> {
        let mut tools = BTreeMap::new();
        let mut order = Vec::with_capacity(self.entries.len());
        for entry in self.entries {
            let name = entry.schema.name.clone();
            if name.trim().is_empty() {
                return Err(Error::invalid_spec("tool", "a tool needs a name"));
            }
            if entry.settings.timeout.is_some_and(|timeout| timeout.is_zero()) {
                return Err(Error::invalid_option("timeout", format!("tool `{name}`: must be longer than zero")));
            }
            if tools.contains_key(&name) {
                return Err(Error::invalid_spec("tool", format!("two tools are named `{name}`")));
            }
            order.push(name.clone());
            tools.insert(name, entry);
        }
        Ok(Toolbox { inner: Arc::new(Inner { tools, order }) })
    }
}

struct Inner {
    tools: BTreeMap<String, Entry>,
    /// Names in the order the tools were added.
    order: Vec<String>,
}

/// One [`Handler`] over many tools, routing each call by name. Cheap to clone.
#[derive(Clone)]
pub struct Toolbox {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox").field("tools", &self.inner.order).finish()
    }
}

impl Toolbox {
    /// An empty builder.
    pub fn builder() -> ToolboxBuilder {
        ToolboxBuilder::default()
    }

    /// The tools' declarations, in the order they were added: for an [`AgentSpec`](crate::AgentSpec), or a
    /// Local provider's tools.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.inner.order.iter().filter_map(|name| self.inner.tools.get(name)).map(|e| e.schema.clone()).collect()
    }

    /// The tools' names, in the order they were added.
    pub fn names(&self) -> &[String] {
        &self.inner.order
    }

    /// A permission hook that defers the calls of tools added with [`ToolSettings::needs_approval`] and asks
    /// `rest` about every other call.
    pub fn permission(&self, rest: impl Permission) -> ToolboxPermission {
        ToolboxPermission { toolbox: self.clone(), rest: Arc::new(rest) }
    }
}

#[async_trait]
impl Handler for Toolbox {
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, info: &SessionInfo) -> ToolOutput {
        let Some(entry) = self.inner.tools.get(&tool_use.name) else {
            let known = self.inner.order.join(", ");
            return Err(format!("no tool named `{}` (the tools are: {known})", tool_use.name).into());
        };
        let call = entry.tool.call_json(tool_use, info);
        match entry.settings.timeout {
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .unwrap_or_else(|_| Err(format!("tool `{}` timed out after {limit:?}", tool_use.name).into())),
            None => call.await,
        }
    }
}

/// The permission hook of a toolbox: see [`Toolbox::permission`].
pub struct ToolboxPermission {
    toolbox: Toolbox,
    rest: Arc<dyn Permission>,
}

#[async_trait]
impl Permission for ToolboxPermission {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let needs_approval =
            self.toolbox.inner.tools.get(&request.tool_use.name).is_some_and(|entry| entry.settings.needs_approval);
        if needs_approval && !request.is_confirmation() { Decision::Defer } else { self.rest.decide(request).await }
    }
}
