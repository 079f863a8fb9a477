//! The Claude Managed Agents wire (private; the fuzz targets reach it under `--cfg fuzzing`): the HTTP API
//! ([`ClaudeClient`](client::ClaudeClient), its files endpoints in `files`, a session's threads in `threads`),
//! the event vocabulary ([`events`]: the events we send, how the ones we receive fold into a turn;
//! [`thread_events`]: a multi-agent session's threads), the live event stream's SSE decoding (`stream`) and the
//! API's timestamps (`timestamp`); the model value it takes (`model`), a session's agent reference with a run's
//! overrides (`overrides`), the host's permission verdicts on tool calls (`permissions`) and live text previews
//! (`previews`).

pub(crate) mod client;
pub mod events;
pub(crate) mod files;
pub(crate) mod model;
pub(crate) mod overrides;
pub(crate) mod permissions;
pub(crate) mod previews;
pub(crate) mod skills;
pub(crate) mod stream;
pub mod thread_events;
pub(crate) mod threads;
pub(crate) mod timestamp;
pub mod vocabulary;
pub(crate) mod work;

/// The most bytes of network input an error keeps (`Error::Malformed::raw`).
pub(crate) const MAX_RAW_BYTES: usize = 4096;

/// At most [`MAX_RAW_BYTES`] of `bytes`, lossily decoded: what an error keeps of network input (never the
/// whole body, which can be megabytes of model output).
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_RAW_BYTES)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt(b"short"), "short");
        assert_eq!(excerpt(&vec![b'x'; MAX_RAW_BYTES * 3]).len(), MAX_RAW_BYTES);
    }
}
