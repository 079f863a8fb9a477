//! [`EmulatorOptions`]: how the emulator frames SSE, pages lists, treats uploads, cuts live previews,
//! delivers webhooks and leases self-hosted work.

use std::time::Duration;

use managed_agents_core::Secret;
use managed_agents_core::http::server::ServerOptions;

#[cfg(doc)]
use managed_agents_conformance::Fault;

/// How the emulator frames and pages. Build with [`EmulatorOptions::default`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EmulatorOptions {
    /// End SSE lines with CRLF instead of LF.
    pub crlf: bool,
    /// Send a `: ping` comment before every event.
    pub heartbeats: bool,
    /// The most items one page of a list (events, agents, environments, sessions) returns, whatever `limit`
    /// asks.
    pub page_size: usize,
    /// A newly opened stream first re-sends the session's whole history (events the client already has).
    pub replay_history: bool,
    /// How many undecodable frames in a row a [`Fault::MalformedFrame`] sends (default 1). They follow the
    /// turn's first event, so they arrive mid-turn; they alternate between broken JSON and JSON that is not an
    /// object.
    pub malformed_frames: usize,
    /// Whether uploaded files can be downloaded (default `true`). The real service answers `downloadable: false`
    /// for uploads and refuses their content; `false` here does the same.
    pub uploads_downloadable: bool,
    /// How many characters each live-preview fragment (`event_delta`) of a message carries, on streams that ask
    /// for previews; `0` (the default): one fragment per chunk of the scripted text.
    pub preview_chars: usize,
    /// Where to deliver signed webhooks each time a session goes idle (default: nowhere); see
    /// [`EmulatorOptions::with_webhooks`].
    pub webhooks: Option<WebhookEndpoint>,
    /// How long a self-hosted environment's work item stays leased to its worker without a heartbeat (or, before
    /// the first, since its ack) before it is queued again; default [`DEFAULT_WORK_LEASE_TTL`]. A heartbeat's
    /// `ttl_seconds` reports it in whole seconds (rounded up).
    pub work_lease_ttl: Duration,
    /// How the server serves: plain HTTP/1.1 and h2c (the default), or TLS with a certificate made at start
    /// ([`ClaudeEmulator::certificate_der`](super::ClaudeEmulator::certificate_der)), with a stream limit.
    pub server: ServerOptions,
}

/// The service's default work-item lease TTL (300 s), as the official SDK's session runner states it (its
/// `SEND_RETRY_WINDOW`).
pub const DEFAULT_WORK_LEASE_TTL: Duration = Duration::from_secs(300);

/// A webhook endpoint the emulator delivers to: its URL and its `whsec_` signing secret (never printed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WebhookEndpoint {
    /// The absolute `http` or `https` URL each delivery is POSTed to.
    pub url: String,
    /// The endpoint's signing secret (`whsec_` and base64), as [`crate::webhooks::WebhookVerifier::new`] takes it.
    pub secret: Secret,
}

impl WebhookEndpoint {
    /// The endpoint at `url` signing with `secret`.
    pub fn new(url: impl Into<String>, secret: impl Into<Secret>) -> Self {
        Self { url: url.into(), secret: secret.into() }
    }
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        Self {
            crlf: false,
            heartbeats: false,
            page_size: 100,
            replay_history: false,
            malformed_frames: 1,
            uploads_downloadable: true,
            preview_chars: 0,
            webhooks: None,
            work_lease_ttl: DEFAULT_WORK_LEASE_TTL,
            server: ServerOptions::default(),
        }
    }
}

impl EmulatorOptions {
    /// With CRLF line ends (or LF).
    #[must_use]
    pub fn with_crlf(mut self, crlf: bool) -> Self {
        self.crlf = crlf;
        self
    }

    /// With (or without) a `: ping` comment before every event.
    #[must_use]
    pub fn with_heartbeats(mut self, heartbeats: bool) -> Self {
        self.heartbeats = heartbeats;
        self
    }

    /// With at most `page_size` items per page of a list.
    #[must_use]
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// With (or without) new streams re-sending the session's whole history first.
    #[must_use]
    pub fn with_replay_history(mut self, replay_history: bool) -> Self {
        self.replay_history = replay_history;
        self
    }

    /// With `count` undecodable frames in a row per [`Fault::MalformedFrame`].
    #[must_use]
    pub fn with_malformed_frames(mut self, count: usize) -> Self {
        self.malformed_frames = count;
        self
    }

    /// With uploads downloadable (the default) or, as on the real service, not.
    #[must_use]
    pub fn with_uploads_downloadable(mut self, downloadable: bool) -> Self {
        self.uploads_downloadable = downloadable;
        self
    }

    /// With live-preview fragments of `chars` characters (`0`: one per chunk of the scripted text).
    #[must_use]
    pub fn with_preview_chars(mut self, chars: usize) -> Self {
        self.preview_chars = chars;
        self
    }

    /// With signed webhooks: each time a session goes idle (the emulator emits `session.status_idle`), one
    /// `session.status_idled` event is POSTed to `url` in the background, signed the Standard Webhooks way with
    /// `secret` (`whsec_` and base64), as the service does. A delivery never delays the session's stream; a
    /// failed one is logged and recorded ([`ClaudeEmulator::webhook_deliveries`]). The emulator refuses to start
    /// (`InvalidInput`) with a secret that is not a signing secret or a URL that is not absolute `http(s)`.
    ///
    /// [`ClaudeEmulator::webhook_deliveries`]: crate::emulator::ClaudeEmulator::webhook_deliveries
    #[must_use]
    pub fn with_webhooks(mut self, url: impl Into<String>, secret: impl Into<Secret>) -> Self {
        self.webhooks = Some(WebhookEndpoint::new(url, secret));
        self
    }

    /// With self-hosted work leases of `ttl` (see [`EmulatorOptions::work_lease_ttl`]); tests use a second or
    /// two to see a silent worker lose its item.
    #[must_use]
    pub fn with_work_lease_ttl(mut self, ttl: Duration) -> Self {
        self.work_lease_ttl = ttl;
        self
    }

    /// Serving as `server` says (see [`EmulatorOptions::server`]).
    #[must_use]
    pub fn with_server(mut self, server: ServerOptions) -> Self {
        self.server = server;
        self
    }
}

/// Text inside every undecodable frame the emulator sends, so tests can check it never reaches an error's
/// `Display`.
pub const MALFORMED_FRAME_MARKER: &str = "raw-frame-content";
