//! # managed-agents-local
//!
//! The local provider for [managed-agents](https://crates.io/crates/managed-agents): an in-process loop over any
//! OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, llama.cpp …), with an emulator.
//!
//! **Status: not implemented yet.** This crate is a placeholder so the workspace and the umbrella crate's
//! `local` feature build; it exports nothing. Until it lands, run sessions against the reference providers of
//! `managed-agents-conformance` or implement [`managed_agents_core::Provider`] yourself.
