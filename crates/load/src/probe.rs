//! The sessions' handler: answers every tool call at once and times, on the driver side, what the session loop
//! adds around it.
//!
//! * **dispatch**: from the last event before a tool call (the event that ends the turn) reaching the handler
//!   to the tool call starting — the session loop's own work: normalising the turn, the permission check,
//!   spawning the call.
//! * **round trip**: from a tool call returning to the next model event reaching the handler (echoes of our own
//!   `user.*` input skipped) — posting the result, the emulator's work, the wire both ways, and the loop.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use managed_agents_core::{Event, Handler, SessionInfo, ToolOutput, ToolUse};

use crate::measure::Samples;

/// Latencies gathered from every session.
#[derive(Debug, Default)]
pub struct Latencies {
    dispatch: Mutex<Samples>,
    round_trip: Mutex<Samples>,
}

impl Latencies {
    /// Room for `turns` samples of each kind, allocated now (so recording does not move the heap figures).
    pub fn with_capacity(turns: usize) -> Self {
        Self {
            dispatch: Mutex::new(Samples::with_capacity(turns)),
            round_trip: Mutex::new(Samples::with_capacity(turns)),
        }
    }

    /// The dispatch samples so far.
    pub fn dispatch(&self) -> Samples {
        self.dispatch.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The round-trip samples so far.
    pub fn round_trip(&self) -> Samples {
        self.round_trip.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// One session's handler (each session has its own, sharing the [`Latencies`]).
#[derive(Debug)]
pub struct Probe {
    clock: Mutex<Clock>,
    latencies: Arc<Latencies>,
}

#[derive(Debug, Default)]
struct Clock {
    last_event: Option<Instant>,
    returned: Option<Instant>,
}

impl Probe {
    /// A handler recording into `latencies`.
    pub fn new(latencies: Arc<Latencies>) -> Self {
        Self { clock: Mutex::new(Clock::default()), latencies }
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, Clock> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Handler for Probe {
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        let started = Instant::now();
        if let Some(last) = self.clock().last_event {
            let sample = started.saturating_duration_since(last);
            self.latencies.dispatch.lock().unwrap_or_else(PoisonError::into_inner).push(sample);
        }
        let output = format!("looked up {}", tool_use.id);
        self.clock().returned = Some(Instant::now());
        Ok(output)
    }

    fn handle_event(&self, event: &Event, _info: &SessionInfo) {
        let now = Instant::now();
        let mut clock = self.clock();
        clock.last_event = Some(now);
        if event.kind().is_some_and(|kind| kind.starts_with("user.")) {
            return;
        }
        if let Some(returned) = clock.returned.take() {
            drop(clock);
            let sample = now.saturating_duration_since(returned);
            self.latencies.round_trip.lock().unwrap_or_else(PoisonError::into_inner).push(sample);
        }
    }
}
