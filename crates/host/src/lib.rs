//! # managed-agents-host
//!
//! Durable conversations for [managed-agents](https://crates.io/crates/managed-agents): a [`Host`] runs the
//! next request of a conversation keyed by **your** id (a chat thread, an issue number), in whichever process
//! the message arrives, one request at a time per conversation, and picks up after a worker that died.
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//! use managed_agents_core::conversation::{ConversationStatus, MemorySessionStore};
//! use managed_agents_core::tool_fn;
//! use managed_agents_host::Host;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), managed_agents_core::Error> {
//! let script = Script::new()
//!     .turn(ScriptTurn::tool_call("c1", "add", json!({"a": 2, "b": 3})))
//!     .turn(ScriptTurn::text("2 + 3 = 5"))
//!     .turn(ScriptTurn::text("You asked about 2 + 3."));
//! let provider = Arc::new(RequestResponseReference::new(script));
//! let add = tool_fn(|_, input| async move {
//!     Ok((input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)).to_string())
//! });
//! // `MemorySessionStore` keeps everything in this process; `managed-agents-store` has SQLite and PostgreSQL.
//! let host = Host::builder(provider, MemorySessionStore::new(), add).build()?;
//!
//! assert_eq!(host.send("thread-42", "What is 2 + 3?").await?.text, "2 + 3 = 5");
//! // The same external id continues the same conversation.
//! assert_eq!(host.send("thread-42", "What did I ask?").await?.text, "You asked about 2 + 3.");
//! let record = host.conversation("thread-42").await?.expect("stored");
//! assert_eq!((record.status, record.requests), (ConversationStatus::Idle, 2));
//! # Ok(())
//! # }
//! ```
//!
//! ## One request
//!
//! [`Host::send`] takes the conversation's **lease** in the store (waiting for, or refusing with
//! [`Error::Busy`](managed_agents_core::Error::Busy), a conversation another worker drives — see
//! [`BusyPolicy`]), loads its record and runs exactly one request with
//! [`Session::run`](managed_agents_core::Session::run):
//!
//! * a new conversation opens a new session, and its session id is saved the moment it is opened;
//! * an existing one reattaches: by session id on providers that keep the conversation (Claude, AgentCore), by
//!   its stored transcript on providers that leave it to the client (Local: capability `transcript`);
//! * the store is the session's [tool ledger](managed_agents_core::ledger) and the host's permission hook
//!   decides each tool call (below);
//! * the record says [`ConversationStatus::Running`](managed_agents_core::conversation::ConversationStatus)
//!   while the request runs, then what came of it (session id, transcript, status, last error, request count);
//!   every write is fenced by the lease.
//!
//! The lease is renewed every third of its time to live ([`HostBuilder::lease_ttl`], 30 s by default) while
//! the request runs. A renewal that finds the lease taken stops the request with
//! [`Error::LeaseLost`](managed_agents_core::Error::LeaseLost): the worker that took it drives the
//! conversation now, and this one's writes would be refused anyway. So does a lease that reaches the end of its
//! time to live without a successful renewal (a store that hangs or cannot be reached), counted from the moment
//! the lease was asked for: by then another worker may have taken the conversation over.
//!
//! ## A worker that dies
//!
//! Its lease expires after at most its time to live; the record still says `Running`. The next
//! [`Host::send`] or [`Host::resume`], in any process, takes the lease and reattaches by session id: the
//! provider recovers the calls the session still waits on, and each is answered **from the ledger** when its
//! answer was recorded (the tool does not run again), else run. So a tool runs again only when the worker died
//! *during* its run: tools are run **at least once**, and each sees a stable idempotency key,
//! [`ToolUse::id`](managed_agents_core::ToolUse), the same on every retry. Each answer is posted once.
//!
//! A client-held conversation (Local) is saved when a request ends well (or stops for approvals): the request a
//! dead worker was running is lost, and so is a request that failed (a turn limit, a guard, a timeout — its
//! transcript may end in calls it never answered); the conversation continues from the transcript before.
//!
//! ## Approvals
//!
//! The host's permission hook ([`HostBuilder::permission`], default
//! [`DefaultPermission`](managed_agents_core::approval::DefaultPermission)) decides each call that has no
//! stored answer. When it defers, the request is stored ([`Host::pending_approvals`]) and the run ends with
//! [`Error::ApprovalRequired`](managed_agents_core::Error::ApprovalRequired); the conversation waits
//! (`AwaitingApproval`). A person answers from any process — [`Host::approve`], [`Host::deny`] (no lease
//! needed) — and [`Host::resume`] (or the next message) runs the waiting calls with those answers. An approval is
//! handed to a session only until its answer is in the ledger: the request after that forgets it, so an answer
//! is never posted to a loop host that has moved on.
//!
//! ## Keeping conversations attached
//!
//! With [`HostBuilder::keep_attached`], a conversation's live session stays open between messages while this
//! host holds its lease (renewed), and is detached — closed, status `Detached`, lease given back — after the
//! given idle time; the next message, from any process, reattaches. [`Host::is_attached`] says whether this
//! host holds one right now.
//!
//! ## Model configuration
//!
//! A request may choose its model configuration ([`Host::send_with`] / [`Host::resume_with`] with
//! [`RequestOptions::model_config`]): the model, and — on providers with a
//! [`DataPlane`](managed_agents_core::DataPlane) — the credential and destination its requests use.
//!
//! * The conversation **stores** the configuration without its credential
//!   ([`Conversation::model_config`](managed_agents_core::conversation::Conversation::model_config)): the first
//!   request's, then each later request's model, destination and metadata replace the stored ones they name.
//!   A request that names none runs with the stored configuration — also in another process, or after a restart.
//! * The **credential** is never stored: a request uses its own, else the one in the host's
//!   [`HostBuilder::session_options`] template, else the provider's. A destination the conversation stored is
//!   reached only with the request's own credential: a request without one is refused (name the destination
//!   again to send the provider's own key there), so no key the host holds goes to an address an earlier request
//!   chose.
//! * The host's template fills whatever the conversation leaves unset, and is not stored.
//! * A configuration the provider cannot take (a credential on a provider without a data plane, a model it
//!   cannot serve: [`SessionOptions::check`](managed_agents_core::SessionOptions::check)) is refused before
//!   anything is sent or saved: a new conversation is not created, an existing one is left as it was.
//! * An attached conversation ([`HostBuilder::keep_attached`]) keeps its live session for a message whose
//!   configuration runs the same (credential included); any other reattaches with the new one.
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
//! use managed_agents_core::conversation::MemorySessionStore;
//! use managed_agents_core::{Error, ModelConfig, NoTools};
//! use managed_agents_host::{Host, RequestOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! let provider = Arc::new(RequestResponseReference::new(Script::new().turn(ScriptTurn::text("hi"))));
//! let host = Host::builder(provider, MemorySessionStore::new(), NoTools).build()?;
//! // The reference provider has no data plane: a run cannot bring its own credential, and nothing is stored.
//! let tenant = RequestOptions::new().model_config(ModelConfig::new().credential("sk-tenant"));
//! let refused = host.send_with("thread-7", "Hello", tenant).await.unwrap_err();
//! assert!(matches!(refused, Error::DataPlaneUnsupported { setting: "credential", .. }));
//! assert!(host.conversation("thread-7").await?.is_none());
//! # Ok(())
//! # }
//! ```
//!
//! ## Many workers
//!
//! [`Host::send`] runs a request while its caller waits. [`Host::enqueue`] instead commits the message to the
//! store's durable inbox ([`SessionStore::inbox`]) and returns; a [`Worker`] — in any process sharing the
//! store — delivers it, and [`Host::wait`] (or [`Host::message`]) tells what came of it. A worker claims
//! conversations with work waiting ([`Inbox::claim`]: the store's lease rows, `FOR UPDATE SKIP LOCKED` on
//! PostgreSQL), up to its concurrency, and runs one request for each: the conversation's oldest message not yet
//! final, delivered exactly once, in order; or a resume. Ready means:
//!
//! * a message **pending**: delivered (a new conversation is created by its first message, with the message's
//!   metadata);
//! * a message **taken** by a worker that died before the loop host's answer: the provider is asked whether the
//!   session holds it ([`Provider::user_messages`]); if so it is treated as posted, else posted again (at least
//!   once: the only case that can repeat a message, and only on providers that cannot tell);
//! * a message **posted** (the loop host accepted it) whose worker died: the conversation is resumed — calls
//!   answered from the tool ledger, never posted twice — and the message answered with the resumed request's
//!   result (or, when the loop host had already answered it, marked answered without one);
//! * a conversation whose **approvals were all answered** (in any process: [`Host::approve`] wakes this process's
//!   workers at once, others see it at their next look): resumed; messages enqueued meanwhile wait behind it;
//! * a record left **running** by a request whose worker died (also a [`Host::send`]'s): resumed; a session the
//!   dead worker created but did not save is found again by its tag ([`SESSION_TAG`],
//!   [`Provider::find_sessions`]) rather than left behind;
//! * a conversation **woken** from outside — [`Host::wake_session`] for a webhook that says its session went
//!   idle — resumed.
//!
//! A message taken up [`WorkerSettings::max_attempts`] times fails without another try.
//! [`Worker::run_until`] stops taking work when its future completes and lets the requests in flight finish
//! within [`WorkerSettings::shutdown_deadline`]; the rest are dropped and their leases given back.
//!
//! [`SessionStore::inbox`]: managed_agents_core::conversation::SessionStore::inbox
//! [`Inbox::claim`]: managed_agents_core::inbox::Inbox::claim
//! [`Provider::user_messages`]: managed_agents_core::Provider::user_messages
//! [`Provider::find_sessions`]: managed_agents_core::Provider::find_sessions
//!
//! ## Lookup and management
//!
//! [`Host::conversation`], [`Host::list`] (by status, provider, metadata given with [`Host::send_with`]),
//! [`Host::terminate`] and [`Host::delete`] (which also drops the transcript, the pending approvals and the
//! journal), the last two under the lease.
//!
//! ## The journal, and operators
//!
//! Each request writes what happens to its conversation's journal, when the store keeps one
//! ([`SessionStore::journal`](managed_agents_core::conversation::SessionStore::journal)): the message, each turn's
//! text and usage, each call with its arguments the first time it is decided, each answer as recorded, the
//! approvals asked and answered, and how the request ended — for people to read or follow live
//! (`managed-agents-console`). It is never read back by the host, and a write that fails never fails a request.
//! An [`Operator`] answers approvals, enqueues messages and ends conversations from any process without a
//! provider ([`Host::operator`] gives one that wakes this host's workers at once).

mod attachments;
mod host;
mod journal;
mod lease;
mod live;
mod opened;
mod operator;
mod permission;
mod posting;
mod queue;
mod request;
mod settings;
mod state;
mod worker;

pub use host::{Host, SESSION_TAG, conversation_tag};
pub use lease::{BusyPolicy, DEFAULT_BUSY_WAIT};
pub use operator::Operator;
pub use queue::Wake;
pub use request::RequestOptions;
pub use settings::{DEFAULT_LEASE_TTL, HostBuilder, MAX_LEASE_TTL, MIN_LEASE_TTL, default_holder};
pub use worker::{
    DEFAULT_CONCURRENCY, DEFAULT_IDLE_POLL, DEFAULT_MAX_ATTEMPTS, DEFAULT_SHUTDOWN_DEADLINE, MAX_CONCURRENCY, Worker,
    WorkerSettings, WorkerStats,
};
