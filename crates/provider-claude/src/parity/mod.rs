//! The upstream library's tests of the Claude wire (`claude_managed_agents_test.exs`, `event_test.exs`,
//! `consolidate_test.exs`), ported. They sit inside the crate, not under `tests/`, because they check the wire
//! module (`wire::events`), which is private: wire helpers are no public API.

mod claude_managed_agents;
mod consolidate;
mod event;
