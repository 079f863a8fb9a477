//! How this provider's builder reads and checks its settings, the same way as every provider (issue 20 folds
//! these into the one settings type shared by the providers).

use std::time::Duration;

use managed_agents_core::Error;

/// The environment variable `name`; unset, blank or non-UTF-8 all count as absent. For `from_env` only.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Refuses a zero `duration` for the knob `option` (a zero timeout would fail every request).
pub(crate) fn nonzero(option: &'static str, duration: Duration) -> Result<Duration, Error> {
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
