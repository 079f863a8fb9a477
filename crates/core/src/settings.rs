//! Helpers for providers' builders, so every provider reads and checks its settings the same way.

use std::time::Duration;

use crate::Error;

/// The environment variable `name`, with an unset, blank or non-UTF-8 value all counting as absent (a blank
/// `ANTHROPIC_API_KEY=` in a shell profile must not override a default). For `from_env` constructors; a
/// `builder()` never reads the environment.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Refuses a zero `duration` for the knob `option` (a zero timeout would fail every request).
pub fn nonzero(option: &'static str, duration: Duration) -> Result<Duration, Error> {
    if duration.is_zero() { Err(Error::invalid_option(option, "must be longer than zero")) } else { Ok(duration) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_refused_and_anything_else_kept() {
        assert!(matches!(
            nonzero("idle_timeout", Duration::ZERO),
            Err(Error::InvalidOption { option: "idle_timeout", .. })
        ));
        assert_eq!(nonzero("idle_timeout", Duration::MAX).unwrap(), Duration::MAX);
        assert_eq!(env_var("MANAGED_AGENTS_SURELY_UNSET_VARIABLE"), None);
    }
}
