//! What the clones of a [`Host`](crate::Host) share: its settings, checked by
//! [`HostBuilder::build`](crate::HostBuilder::build), and the per-conversation locks and attachments of this
//! process.

use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::approval::Permission;
use managed_agents_core::conversation::SessionStore;
use managed_agents_core::{AgentHandle, Handler, Provider, SessionOptions};

use crate::attachments::Attachments;
use crate::lease::{BusyPolicy, Locks};
use crate::queue::Signals;

/// A host's settings and this process's bookkeeping, behind the `Arc` every clone of the host holds.
pub(crate) struct HostState {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) agent: Option<AgentHandle>,
    pub(crate) options: SessionOptions,
    pub(crate) permission: Arc<dyn Permission>,
    pub(crate) holder: String,
    pub(crate) lease_ttl: Duration,
    pub(crate) busy: BusyPolicy,
    pub(crate) keep_attached: Option<Duration>,
    pub(crate) locks: Locks,
    pub(crate) attachments: Attachments,
    pub(crate) signals: Arc<Signals>,
}
