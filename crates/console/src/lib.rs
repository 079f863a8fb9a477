//! # managed-agents-console
//!
//! An operator console for [managed-agents](https://crates.io/crates/managed-agents) hosts: every conversation
//! of a store, each one's timeline followed live, and the tool calls that wait for a person — answered from a
//! browser. `managed-agents serve` runs it on its own; [`Console::router`] is an [axum](https://docs.rs/axum)
//! `Router` a web application mounts.
//!
//! It works on the host crate's stores (SQLite, PostgreSQL, or any [`SessionStore`] with an inbox and a
//! journal) through an [`Operator`]: it never runs a conversation itself. An approval answered here is picked up
//! by the workers ([`managed_agents_host::Worker`]) that run the conversations, in this process or another.
//!
//! ```
//! use std::sync::Arc;
//! use managed_agents_console::Console;
//! use managed_agents_core::conversation::MemorySessionStore;
//! use managed_agents_host::Operator;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let operator = Operator::new(Arc::new(MemorySessionStore::new()));
//! let console = Console::builder(operator, "a-long-random-token").read_only(false).build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! println!("the console is at http://{}/", listener.local_addr()?);
//! # let router = console.router(); drop(listener); drop(router);
//! // axum::serve(listener, console.router()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Safe by default
//!
//! * **Every request is authenticated** with the console's token, compared in constant time: API clients send
//!   `Authorization: Bearer <token>`; a browser signs in once at `/login` and gets a session cookie (`HttpOnly`,
//!   `SameSite=Strict`).
//! * **Cross-site requests are refused**: a request that changes something with the cookie must carry the
//!   session's CSRF token in `X-CSRF-Token`, and any `Origin` it sends must be the console's own.
//! * **What a conversation holds is shown as text**: the page builds its elements with `textContent` only and is
//!   served with a Content Security Policy that allows no inline script, so a tool result holding `<script>` is
//!   displayed, never run.
//! * **Secrets never show**: stores never keep a credential; the token is never echoed; transcripts are not
//!   served.
//! * **Read-only mode** ([`ConsoleBuilder::read_only`]) refuses every change.
//! * `managed-agents serve` binds to `127.0.0.1` unless told otherwise.
//!
//! ## The JSON API
//!
//! Described by the OpenAPI document [`OPENAPI`] (`openapi.json` in the crate), which the tests check against
//! the server:
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /api/info` | whether the console is read-only, and what the store keeps |
//! | `GET /api/conversations` | conversations, filtered by `status`, `provider`, `metadata.KEY`, paged by `cursor` |
//! | `GET /api/conversations/{id}` | one conversation: its record, waiting approvals, inbox messages, newest journal entries |
//! | `GET /api/conversations/{id}/journal` | its journal entries after or before an entry number |
//! | `GET /api/conversations/{id}/events` | its journal and record live, as server-sent events (resumes from `Last-Event-ID`) |
//! | `GET /api/approvals` | every call waiting for a person |
//! | `POST /api/conversations/{id}/approvals/{tool_use_id}` | allow or deny a waiting call |
//! | `POST /api/conversations/{id}/messages` | enqueue a message for the conversation |
//! | `POST /api/conversations/{id}/terminate` | end the conversation |
//!
//! [`SessionStore`]: managed_agents_core::conversation::SessionStore
//! [`Operator`]: managed_agents_host::Operator

mod api;
mod auth;
mod builder;
mod feed;
mod page;
mod problem;
mod views;

pub use builder::{Console, ConsoleBuilder, DEFAULT_FEED_POLL, MIN_TOKEN_LENGTH, TOKEN_ENV};

/// The OpenAPI 3.1 description of the JSON API.
pub const OPENAPI: &str = include_str!("../openapi.json");
