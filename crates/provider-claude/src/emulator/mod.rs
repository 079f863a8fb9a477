//! A Claude Managed Agents server on loopback (feature `emulator`) that keeps agents, environments, sessions,
//! events, resources and files in memory, plays a conformance [`Script`] when user input arrives, streams events
//! over SSE the way the service does (ids, `session.status_idle` with stop reasons, `requires_action` naming
//! event ids, `span.model_request_end` with usage) and lists history in pages. It records every request.
//!
//! It answers the way the official `anthropic` Python SDK expects (checked with the SDK's strict response
//! validation by `tests/sdk/claude_sdk_check.py` against the `serve_claude_emulator` example): `x-api-key` or an
//! `Authorization: Bearer` token; agent, environment and session records with every field the SDK requires
//! (`created_at`, `updated_at`, `metadata`, the model as `{id, speed}`, a session's `usage` and `stats` …);
//! agent updates as new versions (409 on a stale `version`); `initial_events` on session creation; lists paged with `limit` / `page` / `next_page`
//! (sessions also `prev_page`), `include_archived`, `order` and `created_at[…]` filters; event lists filtered
//! by `types[]`, `order` and `created_at[gt|gte|lt|lte]` (against `processed_at`). Timestamps are RFC 3339 from
//! a clock that never repeats.
//!
//! Control plane: agent and environment names are unique per kind, archived ones included (a create with a
//! taken name is a `409`); archived records are listed with `archived_at` under `include_archived=true`;
//! [`ClaudeEmulator::insert_agent`] / [`ClaudeEmulator::insert_environment`] add records directly (live or
//! archived); files are listed newest first with the files API's own paging (`limit`, `after_id` / `before_id`,
//! `has_more`, `first_id`, `last_id`, and `scope_id` for a session's files), have metadata
//! (`GET /v1/files/{id}`) and are downloadable unless marked otherwise ([`ClaudeEmulator::set_downloadable`],
//! [`EmulatorOptions::with_uploads_downloadable`]); [`ClaudeEmulator::write_output`] adds a session-scoped file
//! as if the agent had written it under `/mnt/session/outputs/`. Session resources are paged like the other
//! lists; attaching a file that does not exist, or removing a resource that is not there, is a `404`. A session
//! created with a `budget` keeps it, and a scripted turn that stops with `budget_reached` is preceded by
//! `session.usage` (cumulative usage, `list_cost` at the cap, the budget), as the service reports a paused
//! session.
//! [`ClaudeEmulator::fail_requests`] answers chosen requests (an environment create, one archive …) with an
//! error status, for rollback and partial-failure tests.
//!
//! Host-side tool calls ([`ScriptToolCall::host`]) are played as the session's agent configures the tool: a
//! built-in tool (`bash`, `read`, `write`, `edit`, `glob`, `grep`, `web_fetch`, `web_search`) follows the agent
//! toolset's `permission_policy`, any other name is an MCP tool (`agent.mcp_tool_use`, `always_ask` unless its
//! toolset says otherwise). A call that asks is announced with `evaluated_permission: "ask"` and named in the
//! `requires_action` idle; a `user.tool_confirmation` is recorded ([`RecordedInput::Confirmation`]) and, allowed,
//! the tool's result follows (`agent.tool_result` / `agent.mcp_tool_result`), denied, an error result carrying
//! the deny message. An allowed call runs at once. A partial answer re-emits the idle naming the calls still
//! awaited. [`ClaudeEmulator::seed_agent`]'s agent asks before every built-in tool.
//!
//! Multi-agent sessions follow the session's agent too: an agent saved with a coordinator roster (`multiagent`)
//! has it checked and resolved as the service does (ids and `self` become versioned references, the advisor is
//! listed last; an unknown, archived or itself-coordinating agent is a `400`), and a session copies the rostered
//! agents' definitions. On such a session, a scripted turn that calls tools runs in a sub-agent's thread (the
//! roster's first agent): `session.thread_created`, the coordinator's `agent.thread_message_sent`, the
//! sub-agent's calls that need the client cross-posted with its `session_thread_id` (confirmations too, as its
//! permission policies say), its `session.thread_status_idle` and the session's `requires_action` idle; once
//! they are answered, the next turn opens with its report (`agent.thread_message_received`) and its `end_turn`
//! idle. An answer naming another thread than its call's is a `400`. `user.interrupt` with a
//! `session_thread_id` stops that thread alone (its calls closed with an error result) and the coordinator goes
//! on. Without one it stops the turn the session plays — stalling, emitting, or waiting on calls — with
//! `session.status_idle` and `end_turn`, as the service does; the interrupted turn is spent, so the next message
//! plays the script's next turn (an idle session ignores it). The threads endpoints list (the primary first, `statuses[]`), retrieve and archive threads (an idle one;
//! archiving terminates it) and serve each thread's own history and stream.
//!
//! A session's agent may be `{type: "agent_with_overrides", id, model?, system?, tools?, mcp_servers?, skills?}`:
//! the session's copy of the agent shows the overrides and playback follows its tools. The `auto` permission
//! policy is judged deterministically (see the `permissions` file: a call whose input has `"high_risk": true` is
//! denied and does not run, a read-only built-in tool is allowed, anything else asks with `reason_code:
//! "indeterminate"`), and every host-side call carries its `evaluation`. A session created with `resources`
//! (files, which must exist; memory stores) and `vault_ids` keeps them.
//!
//! Live previews: a stream opened with `event_deltas[]=agent.message` gets an `event_start` and one
//! `event_delta` per fragment before each buffered `agent.message` (a fragment per chunk of the scripted text, or
//! [`EmulatorOptions::preview_chars`] characters); the turn's faults count those frames on such streams, so a
//! `DropStreamAfter` can cut a preview. [`ClaudeEmulator::fail_next_model_request`] makes a model request fail
//! mid-preview (`span.model_request_end` with `is_error`, a `retrying` `session.error`) before its retry writes
//! the message. Previews never reach the history or the streams that did not ask.
//!
//! Webhooks: with [`EmulatorOptions::with_webhooks`], every `session.status_idle` the emulator emits (a turn's
//! end, an interrupt, a partial answer's renewed `requires_action`) is also announced to the endpoint as the
//! service does, in the background: a POST of `{"type": "event", "id": "event_<n>", "created_at", "data":
//! {"type": "session.status_idled", "id": <session>, "organization_id", "workspace_id"}}` signed the Standard
//! Webhooks way (`webhook-id`, `webhook-timestamp`, `webhook-signature`; [`crate::webhooks::WebhookVerifier`]
//! checks it). Each finished POST is recorded ([`ClaudeEmulator::webhook_deliveries`],
//! [`ClaudeEmulator::wait_for_webhook_deliveries`]); a failed one is logged, never retried.
//!
//! Self-hosted environments: an environment created with `config: {"type": "self_hosted"}` has a work queue
//! that a worker long-polls, as the service's (the official SDK's `Work` resource and `EnvironmentWorker` drive
//! it): `GET …/work/poll` (`block_ms` 1–999, `reclaim_older_than_ms`, the `Anthropic-Worker-ID` header; no work
//! is a `200` with a JSON `null`, which the SDK reads as `None`), `POST …/work/{id}/ack`, `…/heartbeat`
//! (`expected_last_heartbeat`, `NO_HEARTBEAT` first; a mismatch is a `412` carrying
//! `error.details.current_state`), `…/stop` (`{force}`; `409` once stopped), `GET`/`POST …/work/{id}`
//! (metadata), `GET …/work` (paged) and `GET …/work/stats`. A session created there queues a work item, and so
//! does its next message once its last item stopped; a poll's item carries a `secret` (URL-safe base64 of JSON
//! with a `sessions_token`). Leases last [`EmulatorOptions::work_lease_ttl`] past the ack or the last heartbeat;
//! a lapsed one puts the item back on the queue. [`ClaudeEmulator::environment_key`] gives the environment's
//! key: it and an item's sessions token are good only for that environment's (that item's) work endpoints and
//! its sessions' worker calls (retrieve, events list, stream and send); any other credential is the account's
//! and may do anything. In such a session a scripted host-side call of a built-in tool is the worker's to run:
//! it is announced and waited on (`requires_action`), answered with `user.tool_result` (after an allowing
//! `user.tool_confirmation` when it asked; a result the session does not await is a `400`), and the next turn
//! plays once every awaited call is answered. Results are checked against [`ScriptToolCall::expecting`]
//! ([`ClaudeEmulator::unexpected_tool_results`]); [`ClaudeEmulator::tool_result_events`] and
//! [`ClaudeEmulator::work_items`] show what a session received and its environment's items.
//!
//! Scripts: [`ClaudeEmulator::start`] takes a [`Script`] (or [`Scripts::shared`]), whose turns go to whichever
//! session asks next, or [`Scripts::per_session`], which builds a fresh script for each session (keyed by its
//! `sesn_…` id) when its first turn is asked for, given that id and the input that asked (the kickoff's
//! `user.message` or `user.define_outcome`). Concurrent sessions then never consume each other's turns, faults
//! apply per session (an `HttpError` refuses each session's post once), a spent script reports how many turns
//! that session played, and deleting a session drops its script. For example:
//!
//! ```
//! use managed_agents_conformance::{Script, ScriptTurn, Scripts};
//! use serde_json::json;
//!
//! // Each session looks its prompt up, then answers.
//! let scripts = Scripts::per_session(|session| {
//!     let prompt = session.prompt().unwrap_or_default();
//!     Script::new()
//!         .turn(ScriptTurn::tool_call("toolu_1", "lookup", json!({"q": prompt})))
//!         .turn(ScriptTurn::text(format!("found {prompt}")))
//! });
//! # let _ = managed_agents_claude::emulator::ClaudeEmulator::start(scripts);
//! ```
//!
//! Faults ([`Fault`]), delivered with the conformance kit's [`Delivery`]: `DropStreamAfter` (open streams break
//! after that many of the turn's events; the rest reach the history), `CloseStreamAfter` (they end cleanly
//! there), `RedeliverAfter` (they break there, and the next stream sends those events again first),
//! `DuplicateEvents`, `SplitRequiresAction` (one call named per idle), `HttpError` (the events post that would
//! start the turn is refused once, with `retry-after-ms`), `Stall` (the turn starts late), `MalformedFrame`
//! ([`EmulatorOptions::malformed_frames`] undecodable frames right after the turn's first event),
//! `StreamException` (an `event: error` frame instead of the turn). `TruncateTurn` does not apply: the wire has
//! no per-turn response. [`EmulatorOptions`] adds CRLF framing, comment heartbeats, a page size, and streams that
//! re-send the whole history when they open (so a reconnect sees every old event again).
//!
//! It stands on the conformance kit's emulator scaffold: [`EmulatorServer`] serves the route and logs every
//! request ([`ClaudeEmulator::requests`] is a typed view of that log), [`Shared`] holds the state. The scaffold's
//! per-call playback (`plan_call`, `Settle`, `streamed`) is not used: this wire does not answer a turn in the
//! response of the request that asked for it — a post of events starts the turn, which the emulator plays
//! later on every open event stream of the session (and into its history), so the turns are taken from the
//! player and delivered with [`Delivery::plan`] directly.
//!
//! The folder: `server` ([`ClaudeEmulator`]: start, inspection, seeding), `options` ([`EmulatorOptions`]),
//! `state` (what the emulator keeps), `routes` (the one route: credentials, headers, injected failures,
//! dispatch), `resources` (agents, environments, files, a session's resources), `roster` (coordinator
//! rosters), `sessions` (sessions, their streams and history, posted events), `threads` (multi-agent playback
//! and the threads endpoints), `overrides` (a session's agent reference), `permissions` (the host-side tools'
//! policies and verdicts), `previews` (live previews, a failed model request), `playback` (scripted turns as
//! events, delivered with their faults),
//! `replies` (errors and pages in the API's shapes), `records` (the records' shapes, the clock, queries),
//! `webhooks` (signed deliveries of idle sessions), `work` (self-hosted work queues and leases),
//! `work_endpoints` (their HTTP endpoints), `credentials` (what environment keys and sessions tokens may do),
//! `sandbox` (a self-hosted session's calls its worker answers) and `backend` ([`ClaudeBackend`]).

mod backend;
mod credentials;
mod options;
mod overrides;
mod permissions;
mod playback;
mod previews;
mod records;
mod replay;
mod replies;
mod resources;
mod roster;
mod routes;
mod sandbox;
mod server;
mod sessions;
mod skills;
mod state;
mod threads;
mod webhooks;
mod work;
mod work_endpoints;

pub use backend::ClaudeBackend;
pub use options::{DEFAULT_WORK_LEASE_TTL, EmulatorOptions, MALFORMED_FRAME_MARKER, WebhookEndpoint};
pub use replay::ClaudeReplay;
pub use server::{ClaudeEmulator, RecordedRequest};
pub use webhooks::WebhookDelivery;

#[cfg(doc)]
use managed_agents_conformance::emulator::{EmulatorServer, Shared};
#[cfg(doc)]
use managed_agents_conformance::{Delivery, Fault, RecordedInput, Script, ScriptToolCall, Scripts};
