//! Outcomes: a goal with a rubric the loop host grades its own work against.

use serde::{Deserialize, Serialize};

use crate::Error;

/// The largest `max_iterations` the Claude wire accepts for an outcome.
pub const MAX_OUTCOME_ITERATIONS: u32 = 20;

/// A goal and rubric sent at kickoff instead of a prompt, on providers with the outcome capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Outcome {
    /// What the agent should achieve.
    pub description: String,
    /// How the result is judged.
    pub rubric: String,
    /// How many grading iterations the loop host may run (1 ..= 20; the host's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
}

impl Outcome {
    /// Builds an outcome; the description and rubric must not be blank.
    pub fn new(description: impl Into<String>, rubric: impl Into<String>) -> Result<Self, Error> {
        let outcome = Self { description: description.into(), rubric: rubric.into(), max_iterations: None };
        outcome.validate()?;
        Ok(outcome)
    }

    /// Sets the iteration cap (validated by [`Outcome::validate`]).
    pub fn with_max_iterations(mut self, max_iterations: u32) -> Result<Self, Error> {
        self.max_iterations = Some(max_iterations);
        self.validate()?;
        Ok(self)
    }

    /// Checks the fields; the session loop calls this before opening anything.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason: &str| Err(Error::invalid_option("outcome", reason));
        if self.description.trim().is_empty() {
            return invalid("the description is empty");
        }
        if self.rubric.trim().is_empty() {
            return invalid("the rubric is empty");
        }
        match self.max_iterations {
            Some(n) if n == 0 || n > MAX_OUTCOME_ITERATIONS => invalid("max_iterations must be between 1 and 20"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_blank_fields_and_bad_iterations() {
        assert!(Outcome::new("", "r").is_err());
        assert!(Outcome::new("d", "  ").is_err());
        assert!(Outcome::new("d", "r").unwrap().with_max_iterations(0).is_err());
        assert!(Outcome::new("d", "r").unwrap().with_max_iterations(21).is_err());
        let ok = Outcome::new("d", "r").unwrap().with_max_iterations(3).unwrap();
        let back: Outcome = serde_json::from_str(&serde_json::to_string(&ok).unwrap()).unwrap();
        assert_eq!(back, ok);
    }
}
