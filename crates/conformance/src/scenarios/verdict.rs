//! What a scenario returns, and what the registry knows about each.

use crate::backend::BackendCapabilities;

/// How a scenario ended (a failing scenario panics instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Every assertion held.
    Passed,
    /// The backend lacks what the scenario needs.
    Skipped(&'static str),
}

/// Says why a backend with these capabilities cannot run a scenario, or `None` when it can.
pub type Requirement = fn(&BackendCapabilities) -> Option<&'static str>;

/// A scenario's name and requirement.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ScenarioInfo {
    /// The scenario's function name (and test name).
    pub name: &'static str,
    /// What it needs.
    pub requires: Requirement,
}
