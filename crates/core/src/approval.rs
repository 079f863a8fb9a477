//! Tool approvals: one permission hook, asked before a custom tool runs and before a host-side tool that asks
//! for confirmation is allowed.
//!
//! A [`Permission`] answers each [`ApprovalRequest`] with a [`Decision`]: allow, deny (the model gets the
//! reason as the tool's error result, or as the confirmation's deny message), or defer to a person. A deferred
//! request surfaces on a live session as [`Notification::ApprovalRequested`](crate::Notification) and waits for
//! [`SessionHandle::approve`](crate::SessionHandle::approve) or
//! [`SessionHandle::deny`](crate::SessionHandle::deny); a synchronous run, having no one to ask, ends with
//! [`Error::ApprovalRequired`](crate::Error::ApprovalRequired) once the turn's other calls are done (their
//! results are kept in the tool ledger, if one is set). `managed-agents-host` stores deferred requests, so the
//! answer may come from another process, after a restart.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{SessionInfo, ToolKind, ToolUse};

/// What the permission hook is asked about: one tool call, and the session it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call. Its [`ToolUse::kind`] says whether a custom tool would run here ([`ToolKind::Custom`]) or a
    /// host-side tool would run on the loop host ([`ToolKind::Confirmation`]).
    pub tool_use: ToolUse,
    /// The provider's name.
    pub provider: String,
    /// The provider-side session id.
    pub session_id: Option<String>,
    /// User metadata given with the session options.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

impl ApprovalRequest {
    /// The request for `tool_use` in the session `info` describes.
    pub fn new(tool_use: ToolUse, info: &SessionInfo) -> Self {
        Self {
            tool_use,
            provider: info.provider.clone(),
            session_id: info.session_id.clone(),
            metadata: info.metadata.clone(),
        }
    }

    /// The call's id, which an answer names.
    pub fn tool_use_id(&self) -> &str {
        &self.tool_use.id
    }

    /// Whether the call is a host-side tool waiting for confirmation.
    pub fn is_confirmation(&self) -> bool {
        self.tool_use.kind == ToolKind::Confirmation
    }
}

/// The permission hook's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// Run the tool (or confirm the host-side call).
    Allow,
    /// Do not run it; the model is told so, with `message` when given.
    Deny {
        /// Why, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Ask a person: the call waits for an answer given through the session handle (or the host).
    Defer,
}

impl Decision {
    /// A denial with a reason for the model.
    pub fn deny(message: impl Into<String>) -> Self {
        Self::Deny { message: Some(message.into()) }
    }

    /// Whether this is an answer (allow or deny) rather than a deferral.
    pub fn is_final(&self) -> bool {
        !matches!(self, Self::Defer)
    }
}

/// The text a custom tool's error result carries when the call was denied without a message.
pub const DENIED_WITHOUT_REASON: &str = "the user denied this tool call";

/// The permission hook: decides, for each tool call, whether it may run.
///
/// It is called once per call (a call answered from the tool ledger is not asked about again), concurrently for
/// the calls of one turn. The default, [`DefaultPermission`], allows custom tools and defers host-side calls
/// that ask for confirmation: whoever configured a host tool as "always ask" wants a person asked.
#[async_trait]
pub trait Permission: Send + Sync + 'static {
    /// The decision for one call.
    async fn decide(&self, request: &ApprovalRequest) -> Decision;
}

#[async_trait]
impl<P: Permission + ?Sized> Permission for Arc<P> {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        (**self).decide(request).await
    }
}

/// Allows custom tools; defers host-side calls that ask for confirmation. The sessions' default.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultPermission;

#[async_trait]
impl Permission for DefaultPermission {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        if request.is_confirmation() { Decision::Defer } else { Decision::Allow }
    }
}

/// Allows every call, host-side confirmations included.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

#[async_trait]
impl Permission for AllowAll {
    async fn decide(&self, _: &ApprovalRequest) -> Decision {
        Decision::Allow
    }
}

/// A permission hook made of a closure. See [`permission_fn`].
#[derive(Clone)]
pub struct PermissionFn<F>(F);

/// Wraps a closure `|request: ApprovalRequest| async move { … }` as a [`Permission`].
///
/// ```
/// use managed_agents_core::approval::{Decision, permission_fn};
/// let permission = permission_fn(|request| async move {
///     match request.tool_use.name.as_str() {
///         "delete_file" => Decision::Defer,
///         "format_disk" => Decision::deny("never"),
///         _ => Decision::Allow,
///     }
/// });
/// # let _ = permission;
/// ```
pub fn permission_fn<F, Fut>(f: F) -> PermissionFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    PermissionFn(f)
}

#[async_trait]
impl<F, Fut> Permission for PermissionFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        (self.0)(request.clone()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(kind: ToolKind) -> ApprovalRequest {
        let mut tool_use = ToolUse::new("t1", "web_fetch", json!({"url": "https://example.com"}));
        tool_use.kind = kind;
        ApprovalRequest::new(tool_use, &SessionInfo::new("claude", Some("sesn_1".into()), Map::new()))
    }

    #[tokio::test]
    async fn the_default_allows_custom_tools_and_defers_confirmations() {
        assert_eq!(DefaultPermission.decide(&request(ToolKind::Custom)).await, Decision::Allow);
        assert_eq!(DefaultPermission.decide(&request(ToolKind::Confirmation)).await, Decision::Defer);
        assert_eq!(AllowAll.decide(&request(ToolKind::Confirmation)).await, Decision::Allow);
    }

    #[test]
    fn requests_and_decisions_survive_a_round_trip_through_json() {
        let original = request(ToolKind::Confirmation);
        let encoded = serde_json::to_value(&original).unwrap();
        assert_eq!(encoded["tool_use"]["kind"], "confirmation");
        assert_eq!(serde_json::from_value::<ApprovalRequest>(encoded).unwrap(), original);
        for decision in [Decision::Allow, Decision::deny("no"), Decision::Deny { message: None }, Decision::Defer] {
            let encoded = serde_json::to_value(&decision).unwrap();
            assert_eq!(serde_json::from_value::<Decision>(encoded).unwrap(), decision);
        }
        assert_eq!(serde_json::to_value(Decision::deny("no")).unwrap(), json!({"decision": "deny", "message": "no"}));
    }
}
