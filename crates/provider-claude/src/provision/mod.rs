//! Agents and environments as content-addressed images: [`ClaudeProvisioner`].
//!
//! A definition ([`AgentSpec`], [`EnvironmentSpec`]) is provisioned under the name `<base>_<digest8>`, where the
//! digest covers everything but the name ([`AgentSpec::digest`]): the same definition always lands on the same
//! resource, a changed one on a new resource next to the old ones (an *image* per version). The base is the
//! spec's name (or one given explicitly); names follow [`NamePolicy::CLAUDE`], and a base too long to keep whole
//! is refused rather than shortened, because [`ClaudeProvisioner::prune`] recognises versions by their exact
//! `<base>_` prefix.
//!
//! * **ensure** ([`ClaudeProvisioner::ensure_agent`], [`ClaudeProvisioner::ensure_environment`]): the store
//!   remembers the resource → reused, no request; otherwise created; a `409` (the name exists: created by another
//!   process, or before this store existed) → every page of the list is searched for the name, and a live
//!   resource of that name is adopted; an archived one is an [`Error::NameConflict`] (archived resources cannot be
//!   revived, and their names stay taken).
//! * **tag / resolve**: `tag(kind, base, "prod", digest)` names a version; `resolve(kind, "base:prod")` returns
//!   it. Tags are written with [`update`] (compare-and-swap), so two processes tagging at once lose nothing.
//! * **prune**: keeps the newest `keep` live versions of a base plus every tagged one, archives the rest oldest
//!   first, and forgets them in the store; it goes on after a failure and reports each one.
//!
//! ## Store keys
//!
//! | key | value |
//! |---|---|
//! | `claude:agent:<base>:<digest8>` | `{"kind":"agent","id","name","base","digest"}` |
//! | `claude:environment:<base>:<digest8>` | the same, `"kind":"environment"` |
//! | `claude:agent-tags:<base>` | `{"<tag>": "<digest8>", …}` |
//! | `claude:environment-tags:<base>` | the same, for environments |
//!
//! One key per provider-side name (the name is `<base>_<digest8>`), so the key both caches the handle and indexes
//! the digest (upstream kept those apart). Pruning also removes the facade's entries (`provision:…`,
//! [`managed_agents_core::provision::provision`]) whose `agent_id` or `environment_id` is the archived resource.
//!
//! Runtimes of an [`EnvironmentSpec`] count in its digest and never reach the wire: the ensured environment
//! carries a [`Bootstrap`] (script and system-prompt instructions, recomputed on every call, never stored), and a
//! limited network lets the script's hosts through ([`MISE_HOSTS`]).
//!
//! Fields only Claude agents have — a coordinator's multi-agent roster ([`Multiagent`]) — are not part of the
//! provider-neutral [`AgentSpec`]: a [`ClaudeAgent`] carries the spec and them, and
//! [`ClaudeProvisioner::ensure_claude_agent`] provisions it (its digest covers the roster, so two definitions
//! differing only in their rosters are two agents; with no roster it is the spec's digest).
//!
//! The room's files: `provisioner` ([`ClaudeProvisioner`]), `provisioned` (what it hands out and reports:
//! [`ResourceKind`], [`Origin`], [`Provisioned`], [`PruneReport`]), `agent` ([`ClaudeAgent`]), `roster`
//! ([`Multiagent`], [`RosterEntry`]), `bodies` (the create bodies a definition becomes, [`environment_config`])
//! and `bootstrap` ([`Bootstrap`]: the runtimes' install script).

pub(crate) mod agent;
pub(crate) mod bodies;
pub(crate) mod bootstrap;
pub(crate) mod provisioned;
pub(crate) mod provisioner;
pub(crate) mod roster;

pub use agent::{AGENT_TOOLSET, ClaudeAgent};
pub use bodies::{SELF_HOSTED, environment_config, self_hosted};
pub use bootstrap::{BASHRC_MARKER, Bootstrap, MISE_HOSTS};
pub use provisioned::{Origin, Provisioned, PruneFailure, PruneReport, ResourceKind};
pub use provisioner::{ClaudeProvisioner, DEFAULT_ENVIRONMENT_BASE};
pub use roster::{MAX_ROSTER_ENTRIES, Multiagent, RosterEntry};

#[cfg(doc)]
use managed_agents_core::provision::{NamePolicy, update};
#[cfg(doc)]
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error};
