//! The model rule: which value a model id (a catalog id `"provider:model_id"` or a bare wire id) puts in the
//! `model` field of a chat-completions request.
//!
//! Upstream's Local provider declares no translation of its own, so a catalog id reaches its chat function as
//! given (its tests send `"test:model"` and see `"test:model"`); its default chat function, pointed at an
//! OpenAI-compatible base URL, sends what follows an `openai:` prefix and takes a bare id as OpenAI's. The
//! built-in client here is that OpenAI-compatible client, so the rule is: `openai:` is stripped, every other id
//! goes on whole, and no id is refused. Other prefixes cannot be told from wire ids that hold a colon
//! themselves — Ollama's `qwen3:8b`, `llama3.1:8b-instruct` — and a gateway's model names are its own.

/// The catalog whose prefix names the chat-completions wire itself.
const OPENAI: &str = "openai:";

/// The wire's model value for `id`: without an `openai:` prefix, otherwise as given.
pub(crate) fn wire_model(id: &str) -> &str {
    match id.strip_prefix(OPENAI) {
        Some(model) if !model.trim().is_empty() => model,
        _ => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_openai_catalog_is_stripped() {
        assert_eq!(wire_model("openai:gpt-4.1"), "gpt-4.1");
        assert_eq!(wire_model("gpt-4.1"), "gpt-4.1");
        assert_eq!(wire_model("qwen3:8b"), "qwen3:8b", "an Ollama tag is no catalog");
        assert_eq!(wire_model("openai:qwen3:8b"), "qwen3:8b", "only the first colon is the catalog's");
        assert_eq!(wire_model("anthropic:claude-sonnet-4-6"), "anthropic:claude-sonnet-4-6");
        assert_eq!(wire_model("test:model"), "test:model");
        assert_eq!(wire_model("openai:"), "openai:", "no model after the prefix: sent as given");
        assert_eq!(wire_model("OpenAI:gpt-4.1"), "OpenAI:gpt-4.1", "catalog prefixes are lowercase");
    }
}
