//! Provider name policies: `<base>_<digest8>`, within a provider's length and character rules.

use super::Digest;
use crate::Error;

/// Which characters a provider accepts in a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Charset {
    /// Anything (the base is kept as given).
    Permissive,
    /// ASCII letters, digits and `_`; every other character becomes `_`.
    AlphanumericUnderscore,
}

/// How a provider's resource names are composed from a base name and a definition's digest.
///
/// A name is `<base>_<digest8>`: the base made to fit the policy, then the first 8 hex characters of the
/// definition's [`Digest`], which are never cut. A base too long for the policy keeps its first bytes and gets
/// `_` and 6 hex characters of its own hash instead of the rest, so two long bases that share a prefix never
/// collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamePolicy {
    max_bytes: usize,
    charset: Charset,
    leading_letter: bool,
}

/// The digest suffix: `_` and 8 hex characters.
const SUFFIX_BYTES: usize = 9;
/// What a shortened base ends with: `_` and 6 hex characters of its hash.
const SHORTENED_TAIL_BYTES: usize = 7;

impl NamePolicy {
    /// Claude Managed Agents: up to 256 bytes, any characters.
    pub const CLAUDE: Self = Self { max_bytes: 256, charset: Charset::Permissive, leading_letter: false };
    /// Bedrock AgentCore harnesses: up to 40 characters, `[A-Za-z][A-Za-z0-9_]*`.
    pub const AGENTCORE: Self = Self { max_bytes: 40, charset: Charset::AlphanumericUnderscore, leading_letter: true };

    /// A policy of your own. It must leave room for a base of at least 3 bytes besides the shortening tail and the
    /// digest suffix ([`NamePolicy::compose`] says so otherwise).
    pub const fn new(max_bytes: usize, charset: Charset, leading_letter: bool) -> Self {
        Self { max_bytes, charset, leading_letter }
    }

    /// The longest name, in bytes.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// `<base>_<digest8>` under this policy.
    pub fn compose(&self, base: &str, digest: &Digest) -> Result<String, Error> {
        if self.max_bytes < SUFFIX_BYTES + SHORTENED_TAIL_BYTES + 3 {
            return Err(Error::invalid_spec(
                "name policy",
                format!("{} bytes leave no room for a base name and the digest", self.max_bytes),
            ));
        }
        let mut name = match self.charset {
            Charset::Permissive => base.to_string(),
            Charset::AlphanumericUnderscore => {
                base.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
            }
        };
        if self.leading_letter && !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            name.insert(0, 'a');
        }
        let budget = self.max_bytes - SUFFIX_BYTES;
        if name.len() > budget {
            let mut keep = budget - SHORTENED_TAIL_BYTES;
            while !name.is_char_boundary(keep) {
                keep -= 1;
            }
            name.truncate(keep);
            name.push('_');
            name.push_str(&Digest::of_bytes(base.as_bytes()).hex()[..6]);
        }
        name.push('_');
        name.push_str(digest.short());
        Ok(name)
    }

    /// Whether `name` kept `base` whole (it starts with `<base>_`): false when the policy had to change or
    /// shorten it.
    pub fn preserves_base(name: &str, base: &str) -> bool {
        name.strip_prefix(base).is_some_and(|rest| rest.starts_with('_'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn digest() -> Digest {
        Digest::of_json(&json!({}))
    }

    #[test]
    fn short_bases_are_kept_and_suffixed() {
        assert_eq!(NamePolicy::CLAUDE.compose("support-bot", &digest()).unwrap(), "support-bot_44136fa3");
        assert_eq!(NamePolicy::AGENTCORE.compose("support-bot", &digest()).unwrap(), "support_bot_44136fa3");
        assert_eq!(NamePolicy::AGENTCORE.compose("9lives", &digest()).unwrap(), "a9lives_44136fa3");
        assert_eq!(NamePolicy::AGENTCORE.compose("", &digest()).unwrap(), "a_44136fa3");
        assert!(NamePolicy::preserves_base("support-bot_44136fa3", "support-bot"));
        assert!(!NamePolicy::preserves_base("support_bot_44136fa3", "support-bot"));
    }

    #[test]
    fn long_bases_are_shortened_without_collisions_and_fit() {
        let a = "researcher_of_very_long_things_number_one";
        let b = "researcher_of_very_long_things_number_two";
        let (name_a, name_b) = (
            NamePolicy::AGENTCORE.compose(a, &digest()).unwrap(),
            NamePolicy::AGENTCORE.compose(b, &digest()).unwrap(),
        );
        assert_ne!(name_a, name_b);
        for name in [&name_a, &name_b] {
            assert_eq!(name.len(), 40, "{name}");
            assert!(name.ends_with("_44136fa3"), "{name}");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        }
        let long = "é".repeat(200);
        let name = NamePolicy::CLAUDE.compose(&long, &digest()).unwrap();
        assert!(name.len() <= 256 && name.ends_with("_44136fa3"), "{} bytes", name.len());
        assert!(!NamePolicy::preserves_base(&name, &long));
    }

    #[test]
    fn a_policy_too_small_is_refused() {
        let tiny = NamePolicy::new(12, Charset::Permissive, false);
        assert!(matches!(tiny.compose("x", &digest()), Err(Error::InvalidSpec { .. })));
    }
}
