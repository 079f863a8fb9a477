//! An `InvokeHarness` server on loopback (feature `emulator`) that the real SDK client talks to: plain HTTP,
//! static test credentials, answers in `application/vnd.amazon.eventstream` frames (with `:message-type`,
//! `:event-type`, `:content-type` headers and CRCs) following a conformance
//! [`Script`](managed_agents_conformance::Script). It checks the resume contract — every `toolResult` must follow
//! an assistant message echoing its `toolUse` — and answers a broken one the way the service does, with a
//! `runtimeClientError` exception frame. It records every request.
//!
//! Faults ([`Fault`](managed_agents_conformance::Fault)), played with the conformance kit's emulator scaffold
//! ([`plan_call`](managed_agents_conformance::emulator::plan_call)), each on the turn's first call only (a
//! retry is served whole, unless [`EmulatorOptions::truncate_every_call`]): `HttpError` (the call fails with
//! that status, as the matching AWS error), `DropStreamAfter` (the body breaks after that many frames),
//! `CloseStreamAfter` and `TruncateTurn` (it ends cleanly there, without `messageStop`: the same thing on this
//! wire), `Stall` (nothing for a while; the turn counts as served only if the client still waits when it ends),
//! `MalformedFrame` (a copy of the first frame with a broken CRC after it), `StreamException` (an exception
//! frame instead of the turn). A cut never reaches `messageStop`. [`EmulatorOptions::reuse_block_index`] sends
//! every tool block at content-block index 0, as the live service was seen doing. [`EmulatorOptions`] also adds
//! reasoning (text with a signature, and redacted bytes — then a resume must echo them, or it fails with an
//! in-stream `validationException` naming the field), a server-side tool call with its `toolResult` block,
//! prompt-cache token counts in the usage, and `validationException`s without their `reason`
//! ([`EmulatorOptions::validation_reason`]). Requests are checked like the service checks them: the harness ARN
//! must follow the service's pattern and be [`HARNESS_ARN`] (or a `READY` harness of the control plane), the
//! runtime session id must follow its rule, and a `validationException` carries its `reason`.
//! `InvokeAgentRuntimeCommand` runs `echo ARGS` and `fail N` and, against an in-memory filesystem per runtime session, exactly the commands
//! [`SessionStorageArtifacts`](crate::SessionStorageArtifacts) sends (the module documentation of
//! [`artifacts`](crate::artifacts) lists them); [`AgentCoreEmulator::fail_commands`] makes commands fail and
//! [`AgentCoreEmulator::commands`] lists them.
//!
//! Scripts: [`AgentCoreEmulator::start`] takes a [`Script`](managed_agents_conformance::Script) (or
//! [`Scripts::shared`](managed_agents_conformance::Scripts::shared)), whose turns go to whichever call comes next,
//! or [`Scripts::per_session`](managed_agents_conformance::Scripts::per_session), which builds a fresh script for
//! each runtime session (the `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id` the client sends) on its first call,
//! given that id and the kickoff (see the `LocalEmulator` docs of the Local provider's emulator for an example).
//! Everything a turn does is then per session: an `HttpError` or a truncation meets each session's first call of the
//! turn, the reasoning a resume must echo is numbered by the session's own turns, and a spent script reports how many
//! turns that session played.
//!
//! The control plane the harness lifecycle calls is emulated too: `CreateHarness`, `GetHarness`,
//! `ListHarnesses` (paged) and `DeleteHarness`, with statuses that change over time ([`Transition`]) and
//! injectable paths — a name already taken ([`AgentCoreEmulator::seed_harness`] in any status, `DELETING`
//! included), a create that ends `CREATE_FAILED` ([`AgentCoreEmulator::fail_next_create`]), a harness stuck in
//! `CREATING` ([`Transition::Never`]), a drifted listing ([`AgentCoreEmulator::answer_lists_with`]). Each harness
//! has endpoints (`GetHarnessEndpoint`, `CreateHarnessEndpoint`, `ListHarnessEndpoints`, `DeleteHarnessEndpoint`):
//! a `DEFAULT` one from its creation, whose statuses move on polls of its own
//! ([`ControlOptions::endpoint_ready_after`]), which can end failed or in any status
//! ([`AgentCoreEmulator::next_endpoint_ends_in`]), fail its polls ([`AgentCoreEmulator::fail_endpoint_polls`]) or
//! drift ([`AgentCoreEmulator::next_endpoint_response`]); others are added with
//! [`AgentCoreEmulator::seed_endpoint`]. `InvokeHarness` accepts [`HARNESS_ARN`] and every `READY` harness whose
//! endpoint the call names (its `qualifier`, or `DEFAULT`) is `READY`. The token vault holds API-key credential
//! providers (create, get, update, delete, list; [`AgentCoreEmulator::credential_providers`],
//! [`AgentCoreEmulator::fail_vault_requests`]).
//!
//! The `serve_agentcore_emulator` example serves it to other languages' SDKs (`tests/sdk/agentcore_sdk_check.py`
//! drives it with boto3).
//!
//! The files: `server` ([`AgentCoreEmulator`], on the scaffold's
//! [`EmulatorServer`](managed_agents_conformance::emulator::EmulatorServer)), `routes`, the resources `control`
//! (the harnesses of the control plane) with `endpoints` (their endpoints) and `progress` (how both move through
//! their statuses), `vault` (the token vault) and `shell` with `runtime` (the runtime shell), `sessions`
//! (`InvokeHarness`), `playback` (a turn's frames), `encoding` (frames and AWS errors), `options`, `state` and
//! `backend` ([`AgentCoreBackend`]).

mod backend;
mod control;
mod encoding;
mod endpoints;
mod options;
mod playback;
mod progress;
mod replay;
mod routes;
mod runtime;
pub(crate) mod server;
mod sessions;
mod shell;
mod state;
mod vault;

pub use backend::AgentCoreBackend;
pub use control::{ControlOptions, ControlRequest, EXECUTION_ROLE_ARN, EmulatedHarness};
pub use encoding::frame;
pub use endpoints::EmulatedEndpoint;
pub use options::{CacheUsage, EmulatorOptions, SERVER_TOOL};
pub use playback::reasoning_blocks;
pub use progress::Transition;
pub use replay::AgentCoreReplay;
pub use server::{AgentCoreEmulator, InvokeRequest};
pub use sessions::{HARNESS_ARN, SESSION_HEADER, is_harness_arn};
pub use vault::EmulatedCredentialProvider;
