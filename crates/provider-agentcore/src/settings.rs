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
