//! [`EmulatorOptions`]: how the emulator streams (reasoning, server-side tools, cache usage, the block index
//! quirk, faults on every call).

/// How the emulator streams. Start from `EmulatorOptions::default()` and the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatorOptions {
    /// A turn's cutting faults (`DropStreamAfter`, `CloseStreamAfter`, `TruncateTurn`) and `MalformedFrame` meet
    /// every call of the turn, not just the first.
    pub truncate_every_call: bool,
    /// Every tool block uses content-block index 0.
    pub reuse_block_index: bool,
    /// Every call streams reasoning first: a reasoning text block (two text deltas, then a signature delta) and
    /// a `redactedContent` block (see [`reasoning_blocks`](super::reasoning_blocks)). A resume after a `tool_use`
    /// call must echo both, unchanged and before the `toolUse` blocks, or the call fails with an in-stream
    /// `validationException` naming the `messages` field.
    pub reasoning: bool,
    /// Every `metadata` usage also carries these prompt-cache token counts.
    pub cache_usage: Option<CacheUsage>,
    /// Every call streams a server-side tool call (`type: server_tool_use`, named [`SERVER_TOOL`]) and its
    /// `toolResult` block (a text part, a JSON part and `toolResultMetadata`) before the scripted content.
    pub server_tool_results: bool,
    /// A scripted in-stream `validationException` carries its `reason` (`FieldValidationFailed`), as the service
    /// model requires (default `true`); off, it carries only its `message`.
    pub validation_reason: bool,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        Self {
            truncate_every_call: false,
            reuse_block_index: false,
            reasoning: false,
            cache_usage: None,
            server_tool_results: false,
            validation_reason: true,
        }
    }
}

impl EmulatorOptions {
    /// With [`EmulatorOptions::truncate_every_call`] set.
    pub const fn with_truncate_every_call(mut self, on: bool) -> Self {
        self.truncate_every_call = on;
        self
    }

    /// With [`EmulatorOptions::reuse_block_index`] set.
    pub const fn with_reuse_block_index(mut self, on: bool) -> Self {
        self.reuse_block_index = on;
        self
    }

    /// With [`EmulatorOptions::reasoning`] set.
    pub const fn with_reasoning(mut self, on: bool) -> Self {
        self.reasoning = on;
        self
    }

    /// With [`EmulatorOptions::cache_usage`]: `read` cache-read and `write` cache-write input tokens.
    pub const fn with_cache_usage(mut self, read: u64, write: u64) -> Self {
        self.cache_usage = Some(CacheUsage { read_input_tokens: read, write_input_tokens: write });
        self
    }

    /// With [`EmulatorOptions::validation_reason`] set.
    pub const fn with_validation_reason(mut self, on: bool) -> Self {
        self.validation_reason = on;
        self
    }

    /// With [`EmulatorOptions::server_tool_results`] set.
    pub const fn with_server_tool_results(mut self, on: bool) -> Self {
        self.server_tool_results = on;
        self
    }
}

/// Prompt-cache token counts for the emulator's `metadata` events (see [`EmulatorOptions::with_cache_usage`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheUsage {
    /// `cacheReadInputTokens`.
    pub read_input_tokens: u64,
    /// `cacheWriteInputTokens`.
    pub write_input_tokens: u64,
}

/// The name of the server-side tool [`EmulatorOptions::server_tool_results`] streams.
pub const SERVER_TOOL: &str = "emulated_search";
