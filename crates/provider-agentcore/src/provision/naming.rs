//! Names and ids: the content-addressed harness name of a spec, the endpoint name rule, the id an ARN carries, a
//! fresh client token.

use managed_agents_core::provision::{Digest, NamePolicy};
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error};
use serde_json::json;

/// The content digest a harness name carries: the agent spec's digest alone, or, with an environment, the digest
/// of both digests (so one agent in two environments gets two harnesses).
pub(crate) fn harness_digest(spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> Digest {
    match environment {
        None => spec.digest(),
        Some(environment) => {
            Digest::of_json(&json!({"agent": spec.digest().hex(), "environment": environment.digest().hex()}))
        }
    }
}

/// The harness name of `spec` (in `environment`): `<prefix>_<name>_<digest8>` (the prefix when given) under
/// [`NamePolicy::AGENTCORE`] (at most 40 characters, `[A-Za-z][A-Za-z0-9_]*`).
pub(crate) fn harness_name(
    spec: &AgentSpec,
    environment: Option<&EnvironmentSpec>,
    prefix: Option<&str>,
) -> Result<String, Error> {
    let base = match prefix.filter(|p| !p.is_empty()) {
        Some(prefix) => format!("{prefix}_{}", spec.name),
        None => spec.name.clone(),
    };
    NamePolicy::AGENTCORE.compose(&base, &harness_digest(spec, environment))
}

/// The harness endpoint `InvokeHarness` reaches without a qualifier, and so the one provisioning waits for unless
/// the provider has a qualifier of its own.
pub const DEFAULT_ENDPOINT_NAME: &str = "DEFAULT";

/// The longest harness endpoint name (the service's own rule; a harness name has at most 40 characters).
pub const MAX_ENDPOINT_NAME_LEN: usize = 48;

/// Checks a harness endpoint name (the qualifier) against the service's rule: 1 to 48 characters,
/// `[a-zA-Z][a-zA-Z0-9_]*`. A name outside it can never be found, and provisioning reads an endpoint that is not
/// found as one not created yet, so the wait would spend its whole budget and roll back a harness that is fine:
/// the name is refused before anything is sent ([`Error::InvalidOption`], `qualifier`).
pub(crate) fn validate_endpoint_name(name: &str) -> Result<(), Error> {
    let invalid = |reason: String| Err(Error::invalid_option("qualifier", reason));
    if !(1..=MAX_ENDPOINT_NAME_LEN).contains(&name.len()) {
        return invalid(format!(
            "an endpoint name has 1 to {MAX_ENDPOINT_NAME_LEN} characters; `{name}` has {}",
            name.len()
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return invalid(format!("an endpoint name starts with a letter: `{name}`"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return invalid(format!("an endpoint name has only letters, digits and `_`: `{name}`"));
    }
    Ok(())
}

/// The harness id an ARN names (`arn:…:harness/<id>`), if it is a harness ARN.
pub(crate) fn harness_id_from_arn(arn: &str) -> Option<&str> {
    let (_, id) = arn.rsplit_once(":harness/")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// A fresh idempotency token (a random UUID v4): a `CreateHarness` sent again with it cannot create twice.
pub(super) fn client_token() -> String {
    let bits = fastrand::u128(..);
    let hex = format!("{:032x}", (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62));
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use managed_agents_core::ToolSchema;

    use super::*;

    /// Upstream's `@spec_bedrock`: a named spec with one tool and a Bedrock model.
    fn spec() -> AgentSpec {
        AgentSpec::new("harness", "be helpful").model("anthropic.claude-sonnet-4").tool(ToolSchema::new(
            "t",
            "a tool",
            json!({"type": "object"}),
        ))
    }

    /// bedrock_agent_core_test.exs: "harness_name/2's digest is byte-identical to ReqManagedAgents.Agent.Spec.digest/1
    /// for a spec with no environment fields". By decision: the digest is the spec's own (`AgentSpec::digest`, over
    /// canonical JSON), not upstream's Erlang-term hash, so the names differ from upstream's; the name's suffix is
    /// the spec digest, and an empty base becomes `a`.
    #[test]
    fn the_name_carries_the_spec_digest() {
        let spec = spec();
        let name = harness_name(&spec, None, None).expect("name");
        assert_eq!(name, format!("harness_{}", spec.digest().short()));
        let mut unnamed = spec.clone();
        unnamed.name = String::new();
        assert_eq!(harness_name(&unnamed, None, None).expect("name"), format!("a_{}", spec.digest().short()));
    }

    /// bedrock_agent_core_test.exs: ":endpoint_name validation" — "the pattern is the endpoint's own: 48
    /// characters, not the harness name's 40" and "a name that does not start with a letter … rejected" (a
    /// non-string cannot be given here).
    #[test]
    fn the_endpoint_name_rule_is_the_services() {
        validate_endpoint_name(DEFAULT_ENDPOINT_NAME).unwrap();
        validate_endpoint_name(&format!("e{}", "a".repeat(47))).unwrap();
        validate_endpoint_name("canary_2").unwrap();
        for bad in
            [format!("e{}", "a".repeat(48)), "1prod".into(), "_prod".into(), String::new(), "Defualt endpoint!".into()]
        {
            let error = validate_endpoint_name(&bad).unwrap_err();
            assert!(matches!(error, Error::InvalidOption { option: "qualifier", .. }), "{bad}: {error:?}");
        }
    }

    /// bedrock_agent_core_test.exs: "two specs differing only in name produce different harness names".
    #[test]
    fn specs_differing_only_in_name_get_different_names() {
        let a = AgentSpec::new("rma-live-bedrock-harness", "p");
        let b = AgentSpec::new("rma-live-bedrock-reattach", "p");
        assert_ne!(
            harness_name(&a, None, Some("rma_live")).unwrap(),
            harness_name(&b, None, Some("rma_live")).unwrap()
        );
    }

    fn aws_name(name: &str) -> bool {
        (1..=40).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    /// bedrock_agent_core_test.exs: "harness names satisfy the AWS charset and length constraint".
    #[test]
    fn names_satisfy_the_aws_rule() {
        let spec = AgentSpec::new("rma-live-bedrock-harness", "p");
        let name = harness_name(&spec, None, Some("rma_live")).unwrap();
        assert!(aws_name(&name), "{name}");
    }

    /// bedrock_agent_core_test.exs: "a nil prefix still produces a valid name".
    #[test]
    fn no_prefix_still_gives_a_valid_name() {
        assert!(aws_name(&harness_name(&AgentSpec::new("orchestrated-agent", "p"), None, None).unwrap()));
    }

    /// bedrock_agent_core_test.exs: "a spec with no name at all still produces a valid name".
    #[test]
    fn no_name_still_gives_a_valid_name() {
        assert!(aws_name(&harness_name(&AgentSpec::new("", "p"), None, None).unwrap()));
    }

    /// bedrock_agent_core_test.exs: "harness_name/3 env-arg is nil-default and byte-identical to the 2-arg env-less
    /// name".
    #[test]
    fn no_environment_is_the_environmentless_name() {
        let spec = AgentSpec::new("x", "x");
        assert_eq!(harness_name(&spec, None, Some("t")).unwrap(), format!("t_x_{}", spec.digest().short()));
    }

    /// bedrock_agent_core_test.exs: "harness_name/3 folds the Environment.Spec digest in — different environments →
    /// different names (#70/#72)".
    #[test]
    fn environments_fold_into_the_name() {
        let spec = AgentSpec::new("x", "x");
        let a = EnvironmentSpec::new().config(json!({"environment": {"a": 1}}));
        let b = EnvironmentSpec::new().config(json!({"environment": {"b": 2}}));
        let envless = harness_name(&spec, None, Some("t")).unwrap();
        let (with_a, with_b) =
            (harness_name(&spec, Some(&a), Some("t")).unwrap(), harness_name(&spec, Some(&b), Some("t")).unwrap());
        assert_ne!(with_a, envless);
        assert_ne!(with_a, with_b);
    }

    /// bedrock_agent_core_test.exs: "harness_name/3 ignores the environment name (name excluded from the digest)".
    #[test]
    fn the_environment_name_is_not_in_the_name() {
        let spec = AgentSpec::new("x", "x");
        let one = EnvironmentSpec::new().name("one").config(json!({"environment": {"a": 1}}));
        let two = EnvironmentSpec::new().name("two").config(json!({"environment": {"a": 1}}));
        assert_eq!(harness_name(&spec, Some(&one), None).unwrap(), harness_name(&spec, Some(&two), None).unwrap());
    }
}
