//! Parity with upstream `test/req_managed_agents/provisioner/name_test.exs` (V-16, V-17): provider resource
//! names `<base>_<digest8>` under a per-provider policy (D-38).
//!
//! Upstream's `Name.compose/3` took the 8-character digest; [`NamePolicy::compose`] takes the whole [`Digest`]
//! and appends its first 8 hex characters, so these tests use a digest whose short form is upstream's
//! `38ca3140`.

use managed_agents_core::Error;
use managed_agents_core::provision::{Charset, Digest, NamePolicy};

const AC: NamePolicy = NamePolicy::AGENTCORE;

/// A digest whose first 8 hex characters are `38ca3140`.
fn digest() -> Digest {
    Digest::parse(&format!("38ca3140{}", "0".repeat(56))).unwrap()
}

fn compose(base: &str, policy: NamePolicy) -> String {
    policy.compose(base, &digest()).unwrap()
}

/// `[A-Za-z][A-Za-z0-9_]*`, the AgentCore charset with a leading letter.
fn agentcore_shaped(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `provisioner/name_test.exs`: "composes base and digest".
#[test]
fn composes_base_and_digest() {
    assert_eq!(compose("rma-live-bedrock-harness", AC), "rma_live_bedrock_harness_38ca3140");
}

/// `provisioner/name_test.exs`: "sanitizes to the policy charset and guarantees a leading letter".
#[test]
fn sanitizes_to_the_charset_with_a_leading_letter() {
    let name = compose("9-live.agent", AC);
    assert!(agentcore_shaped(&name), "{name}");
    assert!(name.ends_with("_38ca3140"), "{name}");
}

/// `provisioner/name_test.exs`: "fills the policy limit exactly when the base must be truncated".
///
/// 24 bytes of base, `_`, 6 hex of the base's hash, `_`, the 8-character digest: 40 bytes.
#[test]
fn a_truncated_base_fills_the_limit_exactly() {
    let name = compose(&"verylongsegment".repeat(8), AC);
    assert_eq!(name.len(), 40, "{name}");
    assert!(agentcore_shaped(&name), "{name}");
    assert!(name.starts_with(&"verylongsegment".repeat(2)[..24]), "the first 24 bytes are kept: {name}");
}

/// `provisioner/name_test.exs`: "bases sharing a long common prefix stay distinct after truncation".
#[test]
fn long_bases_sharing_a_prefix_stay_distinct() {
    let a = compose(&format!("{}harness", "a".repeat(30)), AC);
    let b = compose(&format!("{}reattach", "a".repeat(30)), AC);
    assert_ne!(a, b);
}

/// `provisioner/name_test.exs`: "the content digest survives truncation intact".
#[test]
fn the_digest_survives_truncation() {
    assert!(compose(&"z".repeat(90), AC).ends_with("_38ca3140"));
}

/// `provisioner/name_test.exs`: "CMA policy leaves ordinary names untouched".
#[test]
fn the_claude_policy_keeps_ordinary_names() {
    let name = compose("rma-v02-rtc", NamePolicy::CLAUDE);
    assert_eq!(name, "rma-v02-rtc_38ca3140");
    assert!(NamePolicy::preserves_base(&name, "rma-v02-rtc"));
}

/// `provisioner/name_test.exs` › policy validation: "a hand-built policy too small for a digest is rejected by
/// name, not by binary_part".
///
/// A typed [`Error::InvalidSpec`] naming the policy, where upstream raised `ArgumentError`.
#[test]
fn a_policy_too_small_is_refused_by_name() {
    let tiny = NamePolicy::new(10, Charset::AlphanumericUnderscore, true);
    match tiny.compose("anything", &digest()) {
        Err(Error::InvalidSpec { what, reason, .. }) => {
            assert_eq!(what, "name policy");
            assert!(reason.contains("10 bytes"), "{reason}");
        }
        other => panic!("expected InvalidSpec, got {other:?}"),
    }
}

/// `provisioner/name_test.exs` › policy validation: "the smallest usable limit composes rather than raising".
///
/// By decision (proposed with this port, extending D-38): upstream's smallest usable policy was 17 bytes (a
/// 1-byte base, `_`, 6 hex, `_`, 8 hex); ours is 19, leaving a shortened base at least 3 bytes of itself
/// (`NamePolicy::new` documents it). A 17-byte policy is refused; a 19-byte one fills its limit exactly.
#[test]
fn the_smallest_usable_limit_is_nineteen_bytes() {
    let seventeen = NamePolicy::new(17, Charset::AlphanumericUnderscore, true);
    assert!(matches!(seventeen.compose(&"a".repeat(40), &digest()), Err(Error::InvalidSpec { .. })));
    let eighteen = NamePolicy::new(18, Charset::AlphanumericUnderscore, true);
    assert!(matches!(eighteen.compose(&"a".repeat(40), &digest()), Err(Error::InvalidSpec { .. })));
    let smallest = NamePolicy::new(19, Charset::AlphanumericUnderscore, true);
    let name = smallest.compose(&"a".repeat(40), &digest()).unwrap();
    assert_eq!(name.len(), 19, "{name}");
    assert!(name.starts_with("aaa_"), "{name}");
    assert!(name.ends_with("_38ca3140"), "{name}");
}

/// `provisioner/name_test.exs` › policy validation: "both shipped policies are usable".
#[test]
fn both_shipped_policies_are_usable() {
    for policy in [NamePolicy::AGENTCORE, NamePolicy::CLAUDE] {
        assert!(policy.compose("base", &digest()).is_ok(), "{policy:?}");
    }
    assert_eq!(NamePolicy::AGENTCORE.max_bytes(), 40);
    assert_eq!(NamePolicy::CLAUDE.max_bytes(), 256);
}

/// `provisioner/name_test.exs` › at the fit boundary: "a base of exactly the budget is kept whole".
///
/// The AgentCore budget for a base is 40 − 8 − 1 = 31 bytes.
#[test]
fn a_base_of_exactly_the_budget_is_kept_whole() {
    let base = "a".repeat(31);
    let name = compose(&base, AC);
    assert_eq!(name, format!("{base}_38ca3140"));
    assert_eq!(name.len(), 40);
}

/// `provisioner/name_test.exs` › at the fit boundary: "a base one byte over the budget is hashed and still
/// fits".
#[test]
fn a_base_one_byte_over_is_hashed_and_fits() {
    let base = "a".repeat(32);
    let name = compose(&base, AC);
    assert_ne!(name, format!("{base}_38ca3140"));
    assert_eq!(name.len(), 40);
    assert!(agentcore_shaped(&name), "{name}");
    assert!(name.ends_with("_38ca3140"), "{name}");
    assert!(!NamePolicy::preserves_base(&name, &base));
}

/// `provisioner/name_test.exs` › at the fit boundary: "bases at 31 and 32 do not collapse onto each other".
#[test]
fn bases_at_the_boundary_stay_distinct() {
    assert_ne!(compose(&"a".repeat(31), AC), compose(&"a".repeat(32), AC));
}

/// `provisioner/name_test.exs`: "a truncated multi-byte base stays valid UTF-8 and inside the byte budget".
///
/// Under the permissive Claude policy, a base of `a` and 200 `é` puts the byte budget in the middle of a
/// two-byte character; the name is a `String` (valid UTF-8 by construction), within 256 bytes, and keeps its
/// digest.
#[test]
fn a_truncated_multibyte_base_stays_within_budget() {
    let base = format!("a{}", "é".repeat(200));
    assert!(!base.is_char_boundary(240), "the base must straddle the cut");
    let name = compose(&base, NamePolicy::CLAUDE);
    assert!(name.len() <= 256, "{} bytes", name.len());
    assert!(name.ends_with("_38ca3140"), "{name}");
    assert!(std::str::from_utf8(name.as_bytes()).is_ok());
    assert!(name.starts_with("aé"), "{name}");
}
