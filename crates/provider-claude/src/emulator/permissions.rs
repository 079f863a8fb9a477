//! How a session's agent configures a host-side tool call, and the verdict its permission policy reaches:
//! `always_allow` runs it, `always_ask` holds it for the client's confirmation, and `auto` judges the call.
//!
//! The emulator's `auto` judgement is deterministic, so scripts can reach every verdict: a call whose input
//! has `"high_risk": true` is denied (`reason_code: "high_risk"`: it does not run, an error result follows); a
//! read-only built-in tool (`read`, `glob`, `grep`, `web_fetch`, `web_search`) is allowed; anything else is held
//! for the client's approval with `reason_code: "indeterminate"`.

use managed_agents_conformance::ScriptToolCall;
use serde_json::{Value, json};

use crate::emulator::playback::host_tool_result;

/// The tools of the built-in toolset (`agent_toolset_20260401`).
pub(super) const BUILT_IN_TOOLS: [&str; 8] =
    ["bash", "read", "write", "edit", "glob", "grep", "web_fetch", "web_search"];

/// The built-in tools the `auto` judgement finds safe.
const READ_ONLY_TOOLS: [&str; 5] = ["read", "glob", "grep", "web_fetch", "web_search"];

/// What the policy decided for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// It runs at once.
    Allow,
    /// It waits for a `user.tool_confirmation`.
    Ask,
    /// It does not run; the reason code says why.
    Deny(String),
}

/// How an agent's tools configure one host-side call, and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HostTool {
    /// The MCP server it belongs to; `None` for a built-in tool.
    pub(super) mcp_server: Option<String>,
    /// The verdict.
    pub(super) verdict: Verdict,
    /// The event's `evaluation`: the policy that decided, and under `auto` its judgement.
    pub(super) evaluation: Value,
}

impl HostTool {
    /// The event's `evaluated_permission`.
    pub(super) fn evaluated_permission(&self) -> &'static str {
        match self.verdict {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny(_) => "deny",
        }
    }
}

/// How `tools` (an agent's tool list) configure `call`: a built-in tool follows the agent toolset's config for
/// it, else the toolset's default (`always_allow` without a toolset); any other name is an MCP tool of the first
/// MCP toolset, which follows that toolset's config (`always_ask` by default). An unknown policy asks.
pub(super) fn host_tool(tools: &Value, call: &ScriptToolCall) -> HostTool {
    let name = call.name.as_str();
    let built_in = BUILT_IN_TOOLS.contains(&name);
    let kind = if built_in { "agent_toolset_20260401" } else { "mcp_toolset" };
    let toolset = tools.as_array().into_iter().flatten().find(|tool| tool["type"] == kind);
    let policy = toolset.and_then(|toolset| {
        let configured = toolset["configs"].as_array().into_iter().flatten().find(|config| config["name"] == name);
        configured.unwrap_or(&toolset["default_config"])["permission_policy"]["type"].as_str()
    });
    let policy = policy.unwrap_or(if built_in { "always_allow" } else { "always_ask" });
    let (verdict, evaluation) = match policy {
        "always_allow" => (Verdict::Allow, json!({"type": "always_allow"})),
        "auto" => {
            let verdict = if call.input["high_risk"] == json!(true) {
                Verdict::Deny("high_risk".into())
            } else if READ_ONLY_TOOLS.contains(&name) {
                Verdict::Allow
            } else {
                Verdict::Ask
            };
            let judgement = match &verdict {
                Verdict::Allow => json!({"type": "allow"}),
                Verdict::Ask => json!({"type": "ask", "reason_code": "indeterminate"}),
                Verdict::Deny(reason) => json!({"type": "deny", "reason_code": reason}),
            };
            (verdict, json!({"type": "auto", "evaluated_permission": judgement}))
        }
        _ => (Verdict::Ask, json!({"type": "always_ask"})),
    };
    let mcp_server =
        (!built_in).then(|| toolset.and_then(|t| t["mcp_server_name"].as_str()).unwrap_or("mcp").to_string());
    HostTool { mcp_server, verdict, evaluation }
}

/// The error result the service appends for a call its policy denied (the call never ran).
pub(super) fn refusal(call: &ScriptToolCall, mcp: bool, reason: &str) -> Value {
    let mut result = host_tool_result(call, mcp, None);
    result["content"] = json!([{"type": "text", "text": format!("refused by the permission policy ({reason})")}]);
    result["is_error"] = json!(true);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, input: Value) -> ScriptToolCall {
        ScriptToolCall::host("c1", name, input)
    }

    #[test]
    fn host_tools_follow_the_permission_policies() {
        let tools = json!([
            {"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "always_allow"}},
             "configs": [{"name": "bash", "permission_policy": {"type": "always_ask"}}]},
            {"type": "mcp_toolset", "mcp_server_name": "github"},
        ]);
        let bash = host_tool(&tools, &call("bash", json!({})));
        assert_eq!((bash.mcp_server.as_deref(), bash.verdict == Verdict::Ask), (None, true), "configured to ask");
        assert_eq!(bash.evaluation, json!({"type": "always_ask"}));
        assert_eq!(host_tool(&tools, &call("read", json!({}))).verdict, Verdict::Allow, "the toolset default");
        let mcp = host_tool(&tools, &call("create_issue", json!({})));
        assert_eq!((mcp.mcp_server.as_deref(), mcp.verdict == Verdict::Ask), (Some("github"), true));
        let grep = host_tool(&json!([]), &call("grep", json!({})));
        assert_eq!(grep.verdict, Verdict::Allow, "built-in tools are allowed without a toolset");
    }

    #[test]
    fn the_auto_policy_judges_each_call() {
        let tools =
            json!([{"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "auto"}}}]);
        let read = host_tool(&tools, &call("read", json!({"path": "/x"})));
        assert_eq!(read.verdict, Verdict::Allow);
        assert_eq!(read.evaluation, json!({"type": "auto", "evaluated_permission": {"type": "allow"}}));
        let bash = host_tool(&tools, &call("bash", json!({"command": "make"})));
        assert_eq!(
            (bash.evaluated_permission(), bash.evaluation["evaluated_permission"]["reason_code"].as_str()),
            ("ask", Some("indeterminate"))
        );
        let risky = host_tool(&tools, &call("read", json!({"high_risk": true})));
        assert_eq!(risky.verdict, Verdict::Deny("high_risk".into()));
        let refused = refusal(&call("read", json!({})), false, "high_risk");
        assert_eq!((refused["type"].as_str(), refused["is_error"].as_bool()), (Some("agent.tool_result"), Some(true)));
    }
}
