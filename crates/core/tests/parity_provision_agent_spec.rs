//! Parity with upstream `test/req_managed_agents/agent/spec_test.exs` (V-1, V-3): the agent definition that
//! provisioning takes, and its content digest.
//!
//! Upstream coerced an Elixir map into `%Agent.Spec{}` with `new/1`; here a spec is built with
//! [`AgentSpec::new`] and its setters, or deserialized from JSON (the shape a map coerces from), and
//! [`AgentSpec::validate`] is the check. Upstream's `model_config` is our `model`.

use managed_agents_core::{AgentSpec, Error, ToolSchema};
use serde_json::json;

/// The upstream `@attrs`, in our field names.
fn attrs() -> serde_json::Value {
    json!({
        "name": "analyst",
        "system_prompt": "You analyze.",
        "tools": [{"name": "lookup", "description": "d", "input_schema": {"type": "object"}}],
        "terminal_tool": "submit",
        "model": "claude-opus-4-8",
    })
}

/// `agent/spec_test.exs`: "new/1 coerces a map, defaulting optional fields".
///
/// The map deserializes with every field kept, and a map with only the required fields gets no tools and no
/// terminal tool. Stricter than upstream at validation (not at construction): upstream's `@attrs` name a
/// terminal tool (`submit`) that is not one of the tools, which [`AgentSpec::validate`] refuses before anything
/// is provisioned; with the terminal tool among the tools it passes.
#[test]
fn a_map_deserializes_into_a_spec_with_defaults() {
    let spec: AgentSpec = serde_json::from_value(attrs()).unwrap();
    assert_eq!(spec.name, "analyst");
    assert_eq!(spec.system_prompt, "You analyze.");
    assert_eq!(spec.terminal_tool.as_deref(), Some("submit"));
    assert_eq!(spec.model.as_deref(), Some("claude-opus-4-8"));
    assert_eq!(spec.tools.len(), 1);
    assert_eq!(spec.tools[0].name, "lookup");

    let minimal: AgentSpec = serde_json::from_value(json!({"name": "a", "system_prompt": "s", "model": "m"})).unwrap();
    assert_eq!(minimal.terminal_tool, None);
    assert!(minimal.tools.is_empty());
    assert_eq!(minimal, AgentSpec::new("a", "s").model("m"), "the builder gives the same defaults");
    minimal.validate().unwrap();

    assert!(matches!(spec.validate(), Err(Error::InvalidSpec { what: "agent spec", .. })));
    let mut with_terminal = spec.clone();
    with_terminal.terminal_tool = Some("lookup".into());
    with_terminal.validate().unwrap();
}

/// `agent/spec_test.exs`: "new/1 passes an existing %Spec{} through, rejects non-maps and missing required
/// fields".
///
/// An existing spec is a value (a clone is equal; validating it changes nothing); a map without its system
/// prompt, and a JSON string, do not deserialize into a spec. An empty name or system prompt (what a present but
/// blank field gives) is refused by `validate`.
#[test]
fn an_existing_spec_passes_and_incomplete_input_is_refused() {
    let spec = AgentSpec::new("analyst", "You analyze.").model("claude-opus-4-8");
    spec.validate().unwrap();
    assert_eq!(spec.clone(), spec);
    let back: AgentSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
    assert_eq!(back, spec);

    assert!(serde_json::from_value::<AgentSpec>(json!({"name": "a"})).is_err(), "system_prompt is required");
    assert!(serde_json::from_value::<AgentSpec>(json!("nope")).is_err(), "not a map");
    for blank in [AgentSpec::new("", "s"), AgentSpec::new("a", "  ")] {
        assert!(matches!(blank.validate(), Err(Error::InvalidSpec { what: "agent spec", .. })), "{blank:?}");
    }
}

/// `agent/spec_test.exs`: "digest/1 is 8 lowercase hex, content-addressed and name-independent".
///
/// Our [`AgentSpec::digest`] is the full SHA-256 (64 lowercase hex) of the canonical JSON encoding; its
/// `short()` is the 8 hex characters upstream's `digest/1` returned. The values differ from upstream's (D-37:
/// canonical JSON, not the Erlang term encoding); the properties are the same.
#[test]
fn the_digest_is_eight_lowercase_hex_content_addressed_and_name_independent() {
    let a: AgentSpec = serde_json::from_value(attrs()).unwrap();
    let mut b = a.clone();
    b.name = "different_name".into();
    let mut c = a.clone();
    c.system_prompt = "changed".into();

    let short = a.digest().short().to_string();
    assert_eq!(short.len(), 8);
    assert!(short.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')), "{short}");
    assert_eq!(a.digest().hex().len(), 64);
    assert!(a.digest().hex().starts_with(&short));
    assert_eq!(a.digest(), b.digest(), "name must not affect the digest");
    assert_ne!(a.digest(), c.digest(), "content must affect the digest");
    // Every other field is content too.
    let with_tool = a.clone().tool(ToolSchema::new("extra", "d", json!({"type": "object"})));
    assert_ne!(a.digest(), with_tool.digest());
    assert_ne!(a.digest(), a.clone().model("claude-sonnet-4-6").digest());
}
