//! # managed-agents-agentcore
//!
//! The Amazon Bedrock AgentCore harness provider for [managed-agents](https://crates.io/crates/managed-agents):
//! a request/response loop host over `InvokeHarness` (AWS event-stream), built on the official AWS SDK, with an
//! emulator.
//!
//! **Status: not implemented yet.** This crate is a placeholder so the workspace and the umbrella crate's
//! `agentcore` feature build; it exports nothing. Until it lands, run sessions against the reference providers
//! of `managed-agents-conformance` or implement [`managed_agents_core::Provider`] yourself.
