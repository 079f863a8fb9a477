//! How a host is configured: the builder (and [`Host::builder`]), the lease limits, the default holder name.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::approval::{DefaultPermission, Permission};
use managed_agents_core::conversation::SessionStore;
use managed_agents_core::{AgentHandle, Error, Handler, Provider, SessionOptions};

use crate::host::Host;
use crate::lease::{BusyPolicy, Locks};
use crate::state::HostState;

/// The default lease time to live: 30 s, renewed every 10 s while a request runs.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);
/// The shortest lease time to live a host accepts (renewals come every third of it).
pub const MIN_LEASE_TTL: Duration = Duration::from_millis(300);
/// The longest lease time to live a host accepts: a day (a dead worker would hold its conversations that long).
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(86_400);
/// Configures a [`Host`]; made by [`Host::builder`]. It never reads the environment; [`HostBuilder::build`]
/// checks every setting.
pub struct HostBuilder {
    provider: Arc<dyn Provider>,
    store: Arc<dyn SessionStore>,
    handler: Arc<dyn Handler>,
    agent: Option<AgentHandle>,
    options: SessionOptions,
    permission: Arc<dyn Permission>,
    holder: Option<String>,
    lease_ttl: Duration,
    busy: BusyPolicy,
    keep_attached: Option<Duration>,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("provider", &self.provider.name())
            .field("agent", &self.agent)
            .field("options", &self.options)
            .field("holder", &self.holder)
            .field("lease_ttl", &self.lease_ttl)
            .field("busy", &self.busy)
            .field("keep_attached", &self.keep_attached)
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A builder for a host running conversations on `provider`, keeping them in `store`, with `handler`
    /// running the custom tools.
    pub fn builder(provider: Arc<dyn Provider>, store: impl SessionStore, handler: impl Handler) -> HostBuilder {
        HostBuilder::new(provider, Arc::new(store), Arc::new(handler))
    }
}

impl HostBuilder {
    fn new(provider: Arc<dyn Provider>, store: Arc<dyn SessionStore>, handler: Arc<dyn Handler>) -> Self {
        Self {
            provider,
            store,
            handler,
            agent: None,
            options: SessionOptions::new(),
            permission: Arc::new(DefaultPermission),
            holder: None,
            lease_ttl: DEFAULT_LEASE_TTL,
            busy: BusyPolicy::default(),
            keep_attached: None,
        }
    }

    /// The agent every conversation runs (its ids are used unless the session options name others).
    pub fn agent(mut self, agent: AgentHandle) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The template of every request's session options: timeouts, limits, turn guard, agent and environment
    /// ids … The host sets the prompt, the session to reattach (id or transcript), the tool ledger (the store)
    /// and the permission hook (see [`HostBuilder::permission`]) on each request's copy.
    pub fn session_options(mut self, options: SessionOptions) -> Self {
        self.options = options;
        self
    }

    /// Decides each tool call a stored answer does not cover (default:
    /// [`DefaultPermission`]). A [`Decision::Defer`](managed_agents_core::approval::Decision::Defer) is stored
    /// for a person to answer with [`Host::approve`] or [`Host::deny`], from any process.
    pub fn permission(mut self, permission: impl Permission) -> Self {
        self.permission = Arc::new(permission);
        self
    }

    /// This worker's name in leases (default: `<hostname>-<pid>-<random>`). Two hosts with the same name are
    /// one worker to the store: give every process its own.
    pub fn holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = Some(holder.into());
        self
    }

    /// How long a lease lasts unless renewed (default 30 s, from [`MIN_LEASE_TTL`] to [`MAX_LEASE_TTL`]). It is renewed every
    /// third of it while a request runs; a worker that dies holds a conversation for at most this long.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// What a sender does when another worker drives the conversation (default: wait up to 60 s).
    pub fn busy(mut self, policy: BusyPolicy) -> Self {
        self.busy = policy;
        self
    }

    /// Keeps each conversation's live session attached between messages, holding its lease, and detaches it
    /// (status [`Detached`](managed_agents_core::conversation::ConversationStatus::Detached), lease given back)
    /// after `idle` without a message; the next message reattaches. Default: off — every message reattaches and
    /// the lease is held only while a request runs. While attached, other workers' messages for the
    /// conversation wait (or are refused) as for a running request. A call the permission hook defers detaches
    /// the conversation at once. Has no effect on providers that leave the conversation to the client (Local):
    /// those reopen from the transcript for each message anyway.
    pub fn keep_attached(mut self, idle: Duration) -> Self {
        self.keep_attached = Some(idle);
        self
    }

    /// Checks the settings and builds the host.
    pub fn build(self) -> Result<Host, Error> {
        if !(MIN_LEASE_TTL..=MAX_LEASE_TTL).contains(&self.lease_ttl) {
            return Err(Error::invalid_option(
                "lease_ttl",
                format!("must be from {MIN_LEASE_TTL:?} to {MAX_LEASE_TTL:?}"),
            ));
        }
        if let BusyPolicy::Wait { max } = self.busy
            && max.is_zero()
        {
            return Err(Error::invalid_option("busy", "a wait must be longer than zero (or use FailFast)"));
        }
        if self
            .keep_attached
            .is_some_and(|idle| idle.is_zero() || tokio::time::Instant::now().checked_add(idle).is_none())
        {
            return Err(Error::invalid_option(
                "keep_attached",
                "the idle time must be longer than zero and representable",
            ));
        }
        let holder = match self.holder {
            Some(holder) if holder.trim().is_empty() => {
                return Err(Error::invalid_option("holder", "a holder must be named"));
            }
            Some(holder) => holder,
            None => default_holder(),
        };
        self.options.check(&*self.provider)?;
        Ok(Host::from_state(HostState {
            provider: self.provider,
            store: self.store,
            handler: self.handler,
            agent: self.agent,
            options: self.options,
            permission: self.permission,
            holder,
            lease_ttl: self.lease_ttl,
            busy: self.busy,
            keep_attached: self.keep_attached,
            locks: Locks::default(),
            attachments: Default::default(),
            signals: Default::default(),
        }))
    }
}

/// `<hostname>-<pid>-<random>`: unique per process, readable in the store. The host name comes from the kernel
/// (`/proc/sys/kernel/hostname`, then `/etc/hostname`), never from the environment.
pub fn default_holder() -> String {
    let hostname = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "host".to_string());
    format!("{hostname}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

#[cfg(test)]
mod tests {
    use super::*;
    use managed_agents_conformance::Script;
    use managed_agents_conformance::reference::RequestResponseReference;
    use managed_agents_core::NoTools;
    use managed_agents_core::conversation::MemorySessionStore;

    fn builder() -> HostBuilder {
        let provider = Arc::new(RequestResponseReference::new(Script::new()));
        Host::builder(provider, MemorySessionStore::new(), NoTools)
    }

    fn rejected(builder: HostBuilder) -> &'static str {
        match builder.build() {
            Err(Error::InvalidOption { option, .. }) => option,
            other => panic!("expected an invalid option, got {other:?}"),
        }
    }

    #[test]
    fn every_setting_is_checked_by_build() {
        assert_eq!(rejected(builder().lease_ttl(Duration::from_millis(1))), "lease_ttl");
        assert_eq!(rejected(builder().lease_ttl(Duration::MAX)), "lease_ttl");
        assert_eq!(rejected(builder().holder("  ")), "holder");
        assert_eq!(rejected(builder().busy(BusyPolicy::Wait { max: Duration::ZERO })), "busy");
        assert_eq!(rejected(builder().keep_attached(Duration::ZERO)), "keep_attached");
        assert_eq!(rejected(builder().keep_attached(Duration::MAX)), "keep_attached");
        assert_eq!(rejected(builder().session_options(SessionOptions::new().max_turns(0))), "max_turns");
        let host = builder().holder("worker-1").busy(BusyPolicy::Wait { max: Duration::MAX }).build().expect("valid");
        assert_eq!(host.holder(), "worker-1");
        assert!(builder().lease_ttl(MAX_LEASE_TTL).keep_attached(Duration::from_secs(3600)).build().is_ok());
    }

    #[test]
    fn default_holders_differ_per_host_instance() {
        let (a, b) = (default_holder(), default_holder());
        assert_ne!(a, b);
        assert!(a.contains(&format!("-{}-", std::process::id())), "{a}");
    }
}
