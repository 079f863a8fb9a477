//! End-to-end runs of the `managed-agents` binary against the bundled emulators, with scripts from
//! `tests/scripts/` and the MCP server of `tests/servers/`. Each test keeps its conversations and configuration
//! in a directory of its own.

mod agents;
mod json;
mod recordings;
mod run;
mod serve;
mod sessions;
mod settings;
mod support;
mod worker;
