//! The provider room: [`BedrockAgentCore`](crate::BedrockAgentCore) and its
//! [`Provider`](managed_agents_core::Provider) implementation
//! (`agentcore`), its builder (`builder`) with the HTTP settings it starts from (`settings`), one session's
//! connection (`connection`) with its per-invocation overrides (`overrides`), and the runtime session ids it
//! opens them with (`session_id`).

pub(crate) mod agentcore;
pub(crate) mod builder;
mod connection;
mod overrides;
mod recording;
pub(crate) mod session_id;
pub(crate) mod settings;
