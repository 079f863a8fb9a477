//! The host's permission verdict on a built-in or MCP tool call: `evaluated_permission` (`"allow"`, `"ask"`,
//! `"deny"`) on `agent.tool_use` / `agent.mcp_tool_use`, and — under the `auto` permission policy, where the
//! service judges each call — the judgement's `reason_code` in `evaluation.evaluated_permission`.

use managed_agents_core::{Event, HostPermission};
use serde_json::Value;

/// The verdict `event` carries, with the `auto` judgement's reason code when there is one; `None` for an event
/// without `evaluated_permission`.
pub(crate) fn host_permission(event: &Event) -> Option<HostPermission> {
    let verdict = event.str_field("evaluated_permission")?;
    let evaluation = event.get("evaluation");
    let reason = evaluation
        .filter(|evaluation| evaluation.get("type").and_then(Value::as_str) == Some("auto"))
        .and_then(|evaluation| evaluation.get("evaluated_permission")?.get("reason_code")?.as_str())
        .map(str::to_string);
    Some(HostPermission::new(verdict, reason))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn permission(value: Value) -> Option<HostPermission> {
        host_permission(&Event::from_value(value).unwrap())
    }

    #[test]
    fn verdicts_and_auto_reasons_are_read() {
        let asked = permission(json!({"type": "agent.tool_use", "evaluated_permission": "ask",
            "evaluation": {"type": "auto", "evaluated_permission": {"type": "ask", "reason_code": "indeterminate"}}}));
        assert_eq!(asked, Some(HostPermission::new("ask", Some("indeterminate".into()))));
        let policy = permission(json!({"type": "agent.tool_use", "evaluated_permission": "ask",
            "evaluation": {"type": "always_ask"}}));
        assert_eq!(policy, Some(HostPermission::new("ask", None)));
        let allowed = permission(json!({"type": "agent.mcp_tool_use", "evaluated_permission": "allow",
            "evaluation": {"type": "auto", "evaluated_permission": {"type": "allow"}}}));
        assert_eq!(allowed, Some(HostPermission::new("allow", None)));
        assert_eq!(permission(json!({"type": "agent.tool_use"})), None);
    }
}
