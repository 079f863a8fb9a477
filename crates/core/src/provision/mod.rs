//! Provisioning: content-addressed identity for agent and environment definitions, provider name policies, the
//! store that remembers what was provisioned, and the create-or-reuse facade.
//!
//! * [`Digest`]: SHA-256 over a canonical JSON encoding of a definition (the name excluded), so the same
//!   definition always gets the same digest, whatever the field order or the process.
//! * [`NamePolicy`]: `<base>_<digest8>` under a provider's rules (length, characters), shortened with a hash
//!   suffix so two long bases never collide.
//! * [`ProvisionStore`]: where handles are remembered; [`MemoryStore`] in process, a durable SQLite one in
//!   `managed-agents-store`.
//! * [`provision`] / [`teardown`]: create-or-reuse, cached per (provider, agent digest, environment digest).
//!
//! Digests differ from the Elixir library's (it hashed the Erlang term encoding): names created by
//! `req_managed_agents` do not match ours. A migrating user either keeps using the old agent ids (pass them as
//! `agent_id`) or provisions afresh and tears the old ones down.

mod digest;
mod facade;
mod names;
mod store;

pub use digest::{Digest, canonical_json};
pub use facade::{cache_key, provision, teardown};
pub use names::{Charset, NamePolicy};
pub use store::{MemoryStore, ProvisionStore, update};
