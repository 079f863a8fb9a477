//! The scaffold every emulator of this workspace stands on (feature `emulator`): a loopback server with the
//! emulator's state behind one lock and a log of every request ([`EmulatorServer`], [`Shared`]), the per-call
//! playback of a script with its faults ([`plan_call`]) and the streamed delivery of a turn ([`streamed`]). An
//! emulator supplies only its routes and its wire's encoding; its conformance [`Backend`](crate::Backend)
//! implements `capabilities` and `launch`.
//!
//! # Writing an emulator
//!
//! 1. **State.** One struct with what the wire keeps (sessions, records …) and, for a scripted wire, a
//!    [`ScriptPlayer`](crate::ScriptPlayer) and an [`InputLog`](crate::InputLog).
//! 2. **Routes.** One `async fn route(state: Shared<State>, request: ReceivedRequest) -> Response<ResponseBody>`
//!    matching method and path. Lock the state with [`Shared::lock`] for as short as possible, and never across
//!    an `.await`.
//! 3. **Playback.** Where one request plays one scripted turn (a request/response wire), [`plan_call`] peeks the
//!    turn, fires its faults on the first call only and plans the delivery of the frames your encoder makes; you
//!    answer [`Call::Spent`] and [`Call::Failed`] in your wire's error shape, and commit a delivered turn when
//!    its [`Settle`] says. [`streamed`] writes the delivery (stalls, cuts, breaks) as the response body. A wire
//!    that plays turns on its own schedule (an event stream fed by posted events) uses the player directly.
//! 4. **Start.** [`EmulatorServer::start`] with the state and the route; expose `start`, `start_with(options)`,
//!    `base_url` and `provider_builder()` on your emulator, like the bundled ones.
//! 5. **Backend.** `capabilities` says what your emulator injects and what your provider promises under each
//!    fault; `launch` starts an emulator playing the scripts and a provider pointed at it, with
//!    [`TEST_RETRY`] and the [`ProviderSettings`](crate::ProviderSettings).
//!
//! `crates/conformance/tests/toy_emulator.rs` is a whole example: a toy JSON-lines wire, its emulator, a
//! provider for it and the conformance suite run against both.

mod call;
mod server;

pub use call::{Call, Settle, plan_call, streamed};
pub use server::{EmulatorServer, LoggedRequest, Shared};

use std::time::Duration;

use managed_agents_core::RetryPolicy;

/// Retries in milliseconds (5 ms, doubling to at most 50 ms, three times), for a provider under test against an
/// emulator: the fault matrix's HTTP errors are retried without slowing the suite.
pub const TEST_RETRY: RetryPolicy =
    RetryPolicy::DEFAULT.with_initial(Duration::from_millis(5)).with_max(Duration::from_millis(50));
