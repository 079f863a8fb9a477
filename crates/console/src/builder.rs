//! [`Console`] and its builder: the settings, and the router they make.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use managed_agents_core::{Error, Secret};
use managed_agents_host::Operator;

use crate::auth::Sessions;

/// The environment variable [`ConsoleBuilder::from_env`] reads the token from.
pub const TOKEN_ENV: &str = "MANAGED_AGENTS_CONSOLE_TOKEN";

/// The shortest token a console accepts: a token is all that guards the conversations.
pub const MIN_TOKEN_LENGTH: usize = 16;

/// How often a live feed looks for new entries, by default (writes from other processes are seen this late).
pub const DEFAULT_FEED_POLL: Duration = Duration::from_millis(500);

/// The shortest and longest feed poll [`ConsoleBuilder::feed_poll`] keeps (others are brought within).
const FEED_POLL_RANGE: (Duration, Duration) = (Duration::from_millis(20), Duration::from_secs(60));

/// The operator console: its settings and the signed-in browser sessions. Cheap to clone.
#[derive(Clone)]
pub struct Console {
    pub(crate) inner: Arc<ConsoleState>,
}

pub(crate) struct ConsoleState {
    pub(crate) operator: Operator,
    pub(crate) token: Secret,
    pub(crate) read_only: bool,
    pub(crate) feed_poll: Duration,
    pub(crate) sessions: Sessions,
    /// Set by [`Console::shutdown`]: every live feed ends.
    pub(crate) shutdown: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("operator", &self.inner.operator)
            .field("token", &self.inner.token)
            .field("read_only", &self.inner.read_only)
            .field("feed_poll", &self.inner.feed_poll)
            .finish_non_exhaustive()
    }
}

impl Console {
    /// A builder for a console on `operator`'s store, guarded by `token` (at least [`MIN_TOKEN_LENGTH`]
    /// characters). Never reads the environment; [`ConsoleBuilder::from_env`] does.
    pub fn builder(operator: Operator, token: impl Into<String>) -> ConsoleBuilder {
        ConsoleBuilder {
            operator,
            token: Some(Secret::new(token.into())),
            read_only: false,
            feed_poll: DEFAULT_FEED_POLL,
        }
    }

    /// The console's routes: the page at `/`, the sign-in at `/login`, the JSON API under `/api`. Mount it at
    /// the root of a router of its own origin (its cookie and its CSRF checks are per origin).
    pub fn router(&self) -> Router {
        crate::api::routes(self.clone())
    }

    /// Ends every live feed (their event streams close) and every feed opened after: a server's graceful shutdown
    /// then need not wait for the browsers that follow a conversation (their pages reconnect to a server that
    /// is still, or again, running). The other routes keep answering.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Whether the console refuses every change.
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }
}

/// Settings of a [`Console`].
#[derive(Debug)]
#[must_use]
pub struct ConsoleBuilder {
    operator: Operator,
    token: Option<Secret>,
    read_only: bool,
    feed_poll: Duration,
}

impl ConsoleBuilder {
    /// A builder whose token comes from [`TOKEN_ENV`] (the build fails without one).
    pub fn from_env(operator: Operator) -> Self {
        let token = std::env::var(TOKEN_ENV).ok().filter(|token| !token.is_empty()).map(Secret::new);
        Self { operator, token, read_only: false, feed_poll: DEFAULT_FEED_POLL }
    }

    /// Refuse every change (approvals, messages, terminations): a console to look with. Off by default.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// How often a live feed looks for new entries ([`DEFAULT_FEED_POLL`]; kept between 20 ms and a minute).
    pub fn feed_poll(mut self, every: Duration) -> Self {
        self.feed_poll = every.clamp(FEED_POLL_RANGE.0, FEED_POLL_RANGE.1);
        self
    }

    /// The console. [`Error::InvalidOption`] for a missing or short token, or a store without a journal (there
    /// would be no timeline to show).
    pub fn build(self) -> Result<Console, Error> {
        let token = self.token.ok_or_else(|| {
            Error::invalid_option("token", format!("a console needs a token (give one, or set {TOKEN_ENV})"))
        })?;
        if token.expose().chars().count() < MIN_TOKEN_LENGTH {
            return Err(Error::invalid_option("token", format!("must be at least {MIN_TOKEN_LENGTH} characters")));
        }
        if self.operator.store().journal().is_none() {
            return Err(Error::invalid_option("store", "keeps no journal (SessionStore::journal): nothing to show"));
        }
        let state = ConsoleState {
            operator: self.operator,
            token,
            read_only: self.read_only,
            feed_poll: self.feed_poll,
            sessions: Sessions::default(),
            shutdown: tokio::sync::watch::Sender::new(false),
        };
        Ok(Console { inner: Arc::new(state) })
    }
}

#[cfg(test)]
mod tests {
    use managed_agents_core::conversation::MemorySessionStore;

    use super::*;

    fn operator() -> Operator {
        Operator::new(Arc::new(MemorySessionStore::new()))
    }

    #[test]
    fn the_token_never_shows_and_a_short_one_is_refused() {
        let console = Console::builder(operator(), "a-secret-console-token").build().expect("a console");
        let shown = format!("{console:?}");
        assert!(!shown.contains("a-secret-console-token"), "{shown}");
        let builder = format!("{:?}", Console::builder(operator(), "a-secret-console-token"));
        assert!(!builder.contains("a-secret-console-token"), "{builder}");
        let short = Console::builder(operator(), "short").build().unwrap_err();
        assert!(matches!(short, Error::InvalidOption { option: "token", .. }), "{short}");
    }

    #[test]
    fn the_feed_poll_is_kept_within_its_range() {
        let fast = Console::builder(operator(), "a-secret-console-token").feed_poll(Duration::ZERO).build().unwrap();
        assert_eq!(fast.inner.feed_poll, FEED_POLL_RANGE.0);
        let slow = Console::builder(operator(), "a-secret-console-token").feed_poll(Duration::MAX).build().unwrap();
        assert_eq!(slow.inner.feed_poll, FEED_POLL_RANGE.1);
    }
}
