//! Runtime session ids: AgentCore's rule, checked before anything is sent.

use managed_agents_core::Error;

/// The shortest runtime session id AgentCore accepts.
pub const MIN_SESSION_ID_LEN: usize = 33;
/// The longest runtime session id AgentCore accepts.
pub const MAX_SESSION_ID_LEN: usize = 100;

/// Checks a runtime session id: 33 to 100 characters, `[a-zA-Z0-9][a-zA-Z0-9-_]*`.
pub fn validate_session_id(id: &str) -> Result<(), Error> {
    let invalid = |reason: String| Err(Error::invalid_option("session_id", reason));
    if !(MIN_SESSION_ID_LEN..=MAX_SESSION_ID_LEN).contains(&id.len()) {
        return invalid(format!("an AgentCore runtime session id has 33 to 100 characters; this one has {}", id.len()));
    }
    let mut chars = id.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphanumeric()) {
        return invalid("an AgentCore runtime session id starts with a letter or a digit".into());
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return invalid("an AgentCore runtime session id has only letters, digits, `-` and `_`".into());
    }
    Ok(())
}

/// A fresh, valid runtime session id (`managed-agents-` and 32 random hex digits).
pub fn new_session_id() -> String {
    format!("managed-agents-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_rule() {
        validate_session_id(&new_session_id()).unwrap();
        assert_eq!(new_session_id().len(), 47);
        assert!(validate_session_id("short").is_err());
        assert!(validate_session_id(&"a".repeat(101)).is_err());
        assert!(validate_session_id(&format!("-{}", "a".repeat(40))).is_err());
        assert!(validate_session_id(&format!("a{}!", "b".repeat(40))).is_err());
        validate_session_id(&format!("A{}", "b-_9".repeat(10))).unwrap();
    }
}
