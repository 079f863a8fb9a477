//! Token usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Token usage, summed over the turns of one request.
///
/// `input_tokens` counts uncached input only; cache reads and writes are reported separately (as Anthropic and
/// Bedrock do). Every provider usage object is kept verbatim in `raw`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// The provider's own usage objects, in arrival order.
    #[serde(default)]
    pub raw: Vec<Value>,
}

impl Usage {
    /// Usage of the given input and output token counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self { input_tokens, output_tokens, ..Self::default() }
    }

    /// Adds `other` to `self` (token counts summed, raw objects appended).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self.cache_read_input_tokens.saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens =
            self.cache_creation_input_tokens.saturating_add(other.cache_creation_input_tokens);
        self.raw.extend(other.raw.iter().cloned());
    }

    /// All input tokens, cached or not (what OpenTelemetry's `gen_ai.usage.input_tokens` means).
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.cache_read_input_tokens).saturating_add(self.cache_creation_input_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn add_sums_and_keeps_raw() {
        let mut total = Usage::new(1, 2);
        let mut turn = Usage::new(10, 20);
        turn.cache_read_input_tokens = 5;
        turn.raw.push(json!({"input_tokens": 10}));
        total.add(&turn);
        assert_eq!((total.input_tokens, total.output_tokens, total.cache_read_input_tokens), (11, 22, 5));
        assert_eq!(total.total_input_tokens(), 16);
        assert_eq!(total.raw, vec![json!({"input_tokens": 10})]);
        let back: Usage = serde_json::from_value(serde_json::to_value(&total).unwrap()).unwrap();
        assert_eq!(back, total);
    }
}
