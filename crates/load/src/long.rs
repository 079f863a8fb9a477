//! The `long` mode: one live Claude session whose one request streams N events (tool turns of ~100 events
//! each), its heap sampled every 10,000 events, once per event retention.

use managed_agents_core::HttpOptions;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use managed_agents_core::{
    Event, EventRetention, Handler, Notification, Session, SessionInfo, TerminalReason, ToolOutput, ToolUse,
};
use serde_json::json;

use crate::args::{LONG_RETENTIONS, ProviderKind};
use crate::child::EmulatorChild;
use crate::report::{self, Table};
use crate::script::long_turns;
use crate::target::target;

/// Events between heap samples.
const SAMPLE_EVERY: u64 = 10_000;

/// Counts events and samples the heap every [`SAMPLE_EVERY`] of them; answers every tool call at once.
#[derive(Debug)]
struct Sampler {
    baseline: usize,
    state: Mutex<(u64, Vec<(u64, usize)>)>,
}

impl Sampler {
    fn new(baseline: usize, samples: usize) -> Self {
        Self { baseline, state: Mutex::new((0, Vec::with_capacity(samples))) }
    }

    fn samples(&self) -> (u64, Vec<(u64, usize)>) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[async_trait]
impl Handler for Sampler {
    async fn handle_tool_call_with_info(&self, _tool_use: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        Ok("ok".into())
    }

    fn handle_event(&self, _event: &Event, _info: &SessionInfo) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.0 += 1;
        if state.0.is_multiple_of(SAMPLE_EVERY) {
            let (count, growth) = (state.0, crate::ALLOC.live_bytes().saturating_sub(self.baseline));
            state.1.push((count, growth));
        }
    }
}

/// What one retention's run gave.
struct LongRun {
    retention: EventRetention,
    samples: Vec<(u64, usize)>,
    events: u64,
    kept: usize,
    dropped: u64,
    result_bytes: usize,
    elapsed: Duration,
}

/// Runs the long request once per retention and prints the growth table.
pub async fn long(events: u64, http: HttpOptions) -> Result<(), String> {
    let mut runs = Vec::new();
    for retention in LONG_RETENTIONS {
        runs.push(one(events, retention, http).await?);
    }
    let checkpoints: Vec<u64> = (1..=events / SAMPLE_EVERY).map(|k| k * SAMPLE_EVERY).collect();
    let mut header = vec!["retention".to_string()];
    header.extend(checkpoints.iter().map(|c| format!("{}k", c / 1000)));
    header.extend(["events seen".into(), "kept in result".into(), "result heap".into(), "time".into()]);
    let mut table = Table::new(header);
    for run in &runs {
        let mut cells = vec![format!("{:?}", run.retention)];
        for checkpoint in &checkpoints {
            let sample = run.samples.iter().find(|(count, _)| count == checkpoint);
            cells.push(sample.map_or_else(|| "–".into(), |(_, bytes)| report::size(*bytes as f64)));
        }
        cells.push(run.events.to_string());
        cells.push(format!("{} (+{} dropped)", run.kept, run.dropped));
        cells.push(report::size(run.result_bytes as f64));
        cells.push(report::duration(run.elapsed));
        table.row(cells);
    }
    println!("heap growth of one live Claude session since it started, sampled every {SAMPLE_EVERY} events:");
    let data: Vec<_> = runs
        .iter()
        .map(|run| {
            json!({"retention": format!("{:?}", run.retention), "samples": run.samples, "events": run.events,
                   "kept": run.kept, "dropped": run.dropped, "result_bytes": run.result_bytes,
                   "ms": run.elapsed.as_millis() as u64})
        })
        .collect();
    report::print(&table, "long", json!({"provider": "claude", "events": events, "runs": data}));
    Ok(())
}

/// One long request under `retention`, in a fresh emulator child.
async fn one(events: u64, retention: EventRetention, http: HttpOptions) -> Result<LongRun, String> {
    let emulator = EmulatorChild::start(ProviderKind::Claude, Some(events), false).await?;
    let target = target(ProviderKind::Claude, &emulator, http).await.map_err(|e| e.to_string())?;
    let turns = u32::try_from(long_turns(events) + 2).map_err(|_| "too many events".to_string())?;
    let options = target
        .options
        .clone()
        .prompt("Look everything up.")
        .max_turns(turns)
        .timeout(Duration::from_secs(3600))
        .event_retention(retention);
    let baseline = crate::ALLOC.live_bytes();
    let sampler = Arc::new(Sampler::new(baseline, (events / SAMPLE_EVERY) as usize + 16));
    let started = Instant::now();
    let mut handle =
        Session::start(Arc::clone(&target.provider), Arc::clone(&sampler), options).await.map_err(|e| e.to_string())?;
    let result = loop {
        match handle.next_notification().await {
            Some(Notification::Finished(result)) => break result,
            Some(Notification::Failed(error)) => return Err(format!("{retention:?}: {error}")),
            Some(_) => continue,
            None => return Err(format!("{retention:?}: the session ended")),
        }
    };
    let elapsed = started.elapsed();
    if result.terminal_reason != TerminalReason::Completed {
        return Err(format!("{retention:?}: ended {:?} after {} turns", result.terminal_reason, result.turns));
    }
    let with_result = crate::ALLOC.live_bytes();
    let (kept, dropped) = (result.events.len(), result.events_dropped);
    drop(result);
    let result_bytes = with_result.saturating_sub(crate::ALLOC.live_bytes());
    handle.close().await;
    let (events_seen, samples) = sampler.samples();
    Ok(LongRun { retention, samples, events: events_seen, kept, dropped, result_bytes, elapsed })
}
