//! The harness lifecycle on the AgentCore control plane (`aws-sdk-bedrockagentcorecontrol`): provision a harness
//! for an [`AgentSpec`](managed_agents_core::AgentSpec) (create, or adopt the one that already carries its
//! content-addressed name), wait until it and the endpoint its sessions invoke are `READY`, and tear it down again.
//!
//! * Names are content-addressed: a harness is named `<prefix>_<name>_<digest8>` under
//!   [`NamePolicy::AGENTCORE`](managed_agents_core::provision::NamePolicy::AGENTCORE) (the digest is the spec's,
//!   or with an environment the digest of both digests), so a harness of that name *is* this definition, and
//!   adopting one (after a `ConflictException`) is safe. [`ProvisionedHarness::name`] is the name it got.
//! * A harness and its endpoints have statuses of their own, and an endpoint gets ready after its harness (minutes
//!   after, live): once the harness is `READY`, the call waits for the endpoint sessions invoke — the provider's
//!   qualifier ([`BedrockAgentCoreBuilder::qualifier`](crate::BedrockAgentCoreBuilder::qualifier), checked against
//!   the service's endpoint name rule when the provider is built), or [`DEFAULT_ENDPOINT_NAME`]
//!   (`GetHarnessEndpoint`). An endpoint not found yet is waited for; its errors name the resource
//!   `"harness endpoint"` and the id `<harness id>/endpoints/<name>`, and a failed one's reason says how long the
//!   call had waited. [`ProvisionedHarness::endpoint`] is the endpoint waited for.
//! * Every wait of one call (the harness's, its endpoint's, a delete-wait) shares **one** wall-clock budget
//!   ([`ProvisionSettings::budget`]); each request of the call is bounded by what is left of it (and by
//!   [`ProvisionSettings::request_timeout`]).
//! * Every status is classified (an endpoint's as the harness status of the same name): `READY` ends the wait,
//!   `CREATING` / `UPDATING` keep it going, `DELETING`, the `*_FAILED` statuses and statuses this SDK does not know
//!   end it with an error. An answer without the status it should carry is [`Error::Malformed`] at once (the SDK
//!   would read it as the status `"no value was set"`).
//! * A harness the call created is deleted again (best effort, under [`ProvisionSettings::rollback_timeout`]) when a
//!   later step fails, or when the call's future is dropped; an adopted harness never is.
//! * Each poll is a `tracing` debug event (`harness_id`, `endpoint` for an endpoint poll, `phase`, `status`,
//!   `poll`, `elapsed_ms`); each outcome an info or warn event. A call that unwinds (its future dropped, a panic)
//!   logs a warning saying so.
//!
//! Use it through [`Provider::provision`](managed_agents_core::Provider::provision) /
//! [`Provider::teardown`](managed_agents_core::Provider::teardown) on
//! [`BedrockAgentCore`](crate::BedrockAgentCore), or
//! [`BedrockAgentCore::provision_harness`](crate::BedrockAgentCore::provision_harness) for the details of what
//! happened.
//!
//! API-key credential providers of the token vault ([`ApiKeyCredentialProvider`], its key a
//! [`Secret`](managed_agents_core::Secret)) are created, put, read and deleted by the methods of
//! [`BedrockAgentCore`](crate::BedrockAgentCore), and put by provisioning itself when
//! [`ProvisionSettings::credential_providers`] lists them.
//!
//! The files: `settings` (the knobs), `credentials` (the token vault's API-key credential providers), `naming`
//! (names, ids, tokens, the endpoint name rule), `status` (what a status means), `request` (the `CreateHarness`
//! body of a spec), `call` (one call's budget and bounded requests), `wait` (its status polls), `listing` (its
//! listing), `member` (whether an answer named a member at all, which the SDK does not tell), `rollback`
//! (deleting what it created when it cannot finish) and `lifecycle` (provision, teardown, list).
//!
//! After a `ConflictException`, the listing must be able to name the holder: a page without its `harnesses`
//! member (which the SDK reads as an empty list) is [`Error::Malformed`] at once, while a valid empty listing
//! means the holder went away and the create is sent again.
//!
//! [`Error::Malformed`]: managed_agents_core::Error::Malformed

mod call;
pub(crate) mod credentials;
pub(crate) mod lifecycle;
mod listing;
mod member;
pub(crate) mod naming;
mod request;
mod rollback;
pub(crate) mod settings;
mod status;
mod wait;

pub use credentials::{ApiKeyCredentialProvider, CredentialProvider, MAX_CREDENTIAL_PROVIDER_NAME_LEN, Stored};
pub use lifecycle::{Provenance, ProvisionedHarness};
pub use naming::{DEFAULT_ENDPOINT_NAME, MAX_ENDPOINT_NAME_LEN};
pub use settings::{
    DEFAULT_CONTROL_REQUEST_TIMEOUT, DEFAULT_MAX_POLL_INTERVAL, DEFAULT_POLL_INTERVAL, DEFAULT_PROVISION_BUDGET,
    DEFAULT_ROLLBACK_TIMEOUT, ProvisionSettings,
};
