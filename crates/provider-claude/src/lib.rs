//! # managed-agents-claude
//!
//! The Claude Managed Agents provider for [managed-agents](https://crates.io/crates/managed-agents): a streaming
//! loop host over Anthropic's Managed Agents API (SSE events, custom tool results posted back), with reconnect,
//! files and an emulator.
//!
//! **Status: not implemented yet.** This crate is a placeholder so the workspace and the umbrella crate's
//! `claude` feature build; it exports nothing. Until it lands, run sessions against the reference providers of
//! `managed-agents-conformance` or implement [`managed_agents_core::Provider`] yourself.
