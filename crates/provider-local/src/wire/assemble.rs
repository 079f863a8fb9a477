//! Assembling a streamed chat completion from its chunks.

use serde_json::{Map, Value, json};

/// One tool call being assembled from fragments.
#[derive(Debug, Default, Clone)]
struct PartialCall {
    id: Option<String>,
    index: Option<u64>,
    name: String,
    arguments: String,
}

/// Folds `chat.completion.chunk` objects into one assistant message.
///
/// Tool-call fragments are matched by call id first and by index second, so servers that omit `index`, repeat
/// the id on every fragment, or send arguments before the name still assemble correctly. A fragment with neither
/// continues the latest call.
#[derive(Debug, Default)]
pub struct ChunkAssembler {
    content: String,
    has_content: bool,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

impl ChunkAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds in one chunk.
    pub fn push(&mut self, chunk: &Value) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else { return };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else { return };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(text);
            self.has_content = true;
        }
        for fragment in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            self.push_fragment(fragment);
        }
    }

    fn push_fragment(&mut self, fragment: &Value) {
        let id = fragment.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let index = fragment.get("index").and_then(Value::as_u64);
        let names_a_call = fragment.pointer("/function/name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        // An index that disagrees with the slot's own means another call, even under a reused id.
        let same_index = |call: &PartialCall| index.is_none() || call.index.is_none() || call.index == index;
        let slot = match (id, index) {
            (Some(id), _) if self.calls.iter().any(|c| c.id.as_deref() == Some(id) && same_index(c)) => {
                self.calls.iter().rposition(|c| c.id.as_deref() == Some(id) && same_index(c))
            }
            (Some(_), Some(index)) => self.calls.iter().position(|c| c.index == Some(index) && c.id.is_none()),
            (Some(_), None) => None,
            (None, Some(index)) => self.calls.iter().rposition(|c| c.index == Some(index)),
            // Neither: a fragment continues the latest call, unless it names a tool and that call has a name.
            (None, None) => match self.calls.last() {
                Some(last) if names_a_call && !last.name.is_empty() => None,
                Some(_) => Some(self.calls.len() - 1),
                None => None,
            },
        };
        let slot = match slot {
            Some(slot) => slot,
            None => {
                self.calls.push(PartialCall { index, ..PartialCall::default() });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if call.id.is_none() {
            call.id = id.map(str::to_string);
        }
        if let Some(function) = fragment.get("function") {
            // Servers that repeat the whole name on every fragment must not get it twice.
            if let Some(name) = function.get("name").and_then(Value::as_str)
                && call.name != name
            {
                call.name.push_str(name);
            }
            match function.get("arguments") {
                Some(Value::String(part)) => call.arguments.push_str(part),
                Some(other @ Value::Object(_)) => call.arguments.push_str(&other.to_string()),
                _ => {}
            }
        }
    }

    /// Whether a finish reason arrived (a stream that ends with neither one nor `[DONE]` was cut short).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The assembled assistant message, the finish reason and the usage. Calls without an id get
    /// `call_<n>` (their position).
    pub fn finish(self) -> (Value, Option<String>, Option<Value>) {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert("content".into(), if self.has_content { json!(self.content) } else { Value::Null });
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .into_iter()
                .enumerate()
                .map(|(n, call)| {
                    json!({
                        "id": call.id.unwrap_or_else(|| format!("call_{n}")),
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        (Value::Object(message), self.finish_reason, self.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(chunks: &[Value]) -> Value {
        let mut assembler = ChunkAssembler::new();
        for chunk in chunks {
            assembler.push(chunk);
        }
        assembler.finish().0
    }

    fn delta(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta}]})
    }

    #[test]
    fn assembles_by_index_as_openai_sends() {
        let message = assemble(&[
            delta(json!({"role": "assistant"})),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"y\""}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\":1}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": ":2}"}}]})),
        ]);
        let calls = &message["tool_calls"];
        assert_eq!(calls[0]["id"], "a");
        assert_eq!(calls[0]["function"]["arguments"], "{\"x\":1}");
        assert_eq!(calls[1]["function"]["name"], "g");
        assert_eq!(calls[1]["function"]["arguments"], "{\"y\":2}");
    }

    #[test]
    fn assembles_without_index_and_with_repeated_ids() {
        // Ollama-style: no index; the id repeated on every fragment.
        let message = assemble(&[
            delta(json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]})),
            delta(json!({"tool_calls": [{"id": "a", "function": {"arguments": ":1}"}}]})),
            delta(json!({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]})),
        ]);
        assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{\"x\":1}");
        assert_eq!(message["tool_calls"][1]["id"], "b");
        // No id, no index: fragments continue the latest call; missing ids are synthesised.
        let message = assemble(&[
            delta(json!({"tool_calls": [{"function": {"name": "h", "arguments": "{\"z\":"}}]})),
            delta(json!({"tool_calls": [{"function": {"arguments": "3}"}}]})),
        ]);
        assert_eq!(message["tool_calls"][0]["id"], "call_0");
        assert_eq!(message["tool_calls"][0]["function"]["arguments"], "{\"z\":3}");
        // No id, no index, but each fragment a whole call: separate calls.
        let message = assemble(&[
            delta(json!({"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]})),
            delta(json!({"tool_calls": [{"function": {"name": "g", "arguments": "{}"}}]})),
        ]);
        assert_eq!(message["tool_calls"].as_array().unwrap().len(), 2);
        // One id reused across indexes: still two calls.
        let message = assemble(&[
            delta(json!({"tool_calls": [{"index": 0, "id": "same", "function": {"name": "f", "arguments": "{}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "same", "function": {"name": "g", "arguments": "{}"}}]})),
        ]);
        assert_eq!(message["tool_calls"][1]["function"]["name"], "g");
    }

    #[test]
    fn keeps_usage_from_the_final_empty_choices_chunk() {
        let mut assembler = ChunkAssembler::new();
        assembler.push(&json!({"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}));
        assembler.push(&json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}));
        let (message, finish, usage) = assembler.finish();
        assert_eq!(message["content"], "hi");
        assert_eq!(finish.as_deref(), Some("stop"));
        assert_eq!(usage.unwrap()["prompt_tokens"], 3);
    }
}
