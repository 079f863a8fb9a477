//! The `soak` mode: many sessions of many turns against each provider's emulator with seeded random faults,
//! then the checks — every scripted tool call answered exactly once (from the emulator's input log) and run once
//! (from the handler), no duplicate in a session's results, every failed session explained by a fault its
//! provider declares as surfacing (and named by the error), no task left on the driver's runtime once the
//! provider is gone and no growth between rounds while it lives, live heap and resident memory flat after
//! warm-up — and a table.
//!
//! The faults are the fault-matrix cases each provider's conformance backend declares
//! ([`BackendCapabilities::fault`](managed_agents_conformance::BackendCapabilities::fault)), with short
//! `retry-after`s and cut positions within the first few events, plus a stall far under the idle timeout and,
//! where the backend plays one, a split `requires_action`. A case declared [`FaultOutcome::Surfaces`] may fail
//! its session; one declared [`FaultOutcome::Recovers`] may not.
//!
//! Each session plays a script of its own ([`Scripts::per_session`]), found by the index its prompt carries, so
//! sessions never take each other's turns and the fault plan of session `i` depends only on (seed, provider,
//! `i`): `--session i` replays it alone. Even sessions are live ([`Session::start`], a follow-up message after
//! each text turn), odd ones synchronous ([`Session::run`], one request of every turn).
//!
//! The emulator runs in a child process (`soak-serve`): its tasks and memory are not the driver's, and its input
//! log comes back over the child's standard output when the driver asks.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use managed_agents_agentcore::BedrockAgentCore;
use managed_agents_agentcore::emulator::{AgentCoreEmulator, HARNESS_ARN};
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{
    FaultCase, FaultOutcome, InputLog, RecordedInput, Script, ScriptToolCall, ScriptTurn, Scripts,
};
use managed_agents_core::{
    Handler, Notification, Provider, ReconnectPolicy, RetryPolicy, Session, SessionInfo, SessionOptions, SessionResult,
    TerminalReason, ToolOutput, ToolUse,
};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::args::ProviderKind;
use crate::child::EmulatorChild;
use crate::faults::{FaultKind, Planned, plan};
use crate::measure::Resident;
use crate::report::{self, Table};

/// The custom tool every scripted call names.
const TOOL: &str = "probe";
/// Every fourth turn of a live session is a text turn that ends its request (the last turn always is).
const LIVE_REQUEST_TURNS: usize = 4;
/// The providers' retry and reconnect backoff: short, so faults cost milliseconds.
const BACKOFF_INITIAL: Duration = Duration::from_millis(5);
/// The longest backoff (also the cap on a server's `retry-after`).
const BACKOFF_MAX: Duration = Duration::from_millis(100);
/// The idle timeout of every provider: far above any injected stall.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The time limit of each request (a hang shows as a failure, not as a soak that never ends).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the driver waits for its runtime's task count to come back to the baseline after the provider is
/// dropped (connection tasks end when they notice their pool is gone).
const SETTLE: Duration = Duration::from_secs(10);
/// The least growth of the between-round task count tolerated (see `ProviderReport::tasks_flat`).
const TASK_SLACK: f64 = 8.0;
/// The live heap counts as flat when the late rounds stay within this many bytes of the post-warm-up figure.
const HEAP_SLACK: u64 = 2 * 1024 * 1024;
/// Resident memory counts as flat when the late rounds stay within this share of the post-warm-up figure …
const RSS_SHARE: f64 = 0.10;
/// … or within this many bytes of it, whichever is larger.
const RSS_SLACK: u64 = 4 * 1024 * 1024;

/// What the soak runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakConfig {
    /// The providers, in order.
    pub providers: Vec<ProviderKind>,
    /// Sessions per provider.
    pub sessions: usize,
    /// Model turns per session.
    pub turns: usize,
    /// The share of turns that carry a fault.
    pub fault_rate: f64,
    /// The seed of the fault plan.
    pub seed: u64,
    /// Sessions per round (all of a round run at once; memory and tasks are sampled between rounds).
    pub round: usize,
    /// Run only this session index (a replay).
    pub only: Option<usize>,
}

// ---------------------------------------------------------------------------------------------------------
// The script of a session.

/// Whether session `index` is live (even) or a synchronous run (odd).
fn is_live(index: usize) -> bool {
    index.is_multiple_of(2)
}

/// Whether turn `turn` of a session is a text turn (it ends a request).
fn is_text_turn(live: bool, turn: usize, turns: usize) -> bool {
    turn + 1 == turns || (live && (turn + 1).is_multiple_of(LIVE_REQUEST_TURNS))
}

/// How many tool calls a tool turn makes: two on every third turn, one otherwise.
fn calls_in(turn: usize) -> usize {
    if turn % 3 == 1 { 2 } else { 1 }
}

/// The id of call `call` of turn `turn` of session `index` (unique across sessions; it names the session).
fn call_id(index: usize, turn: usize, call: usize) -> String {
    format!("s{index}_t{turn}_c{call}")
}

/// The session index a call id names.
fn index_of_call(id: &str) -> Option<usize> {
    id.strip_prefix('s')?.split('_').next()?.parse().ok()
}

/// The prompt of session `index`.
fn prompt(index: usize) -> String {
    format!("Soak session {index}: begin.")
}

/// The follow-up message of a live session after its text turn `turn`.
fn follow_up(index: usize, turn: usize) -> String {
    format!("Soak session {index}: go on after turn {turn}.")
}

/// The session index a prompt or follow-up message names.
fn index_of_text(text: &str) -> Option<usize> {
    text.strip_prefix("Soak session ")?.split(':').next()?.parse().ok()
}

/// The text of text turn `turn` of session `index`.
fn text_of(index: usize, turn: usize) -> String {
    format!("Session {index}: turn {turn} done.")
}

/// The tool calls session `index` is scripted to make, with the turn of each.
fn scripted_calls(index: usize, turns: usize) -> Vec<(usize, String)> {
    let live = is_live(index);
    (0..turns)
        .filter(|&turn| !is_text_turn(live, turn, turns))
        .flat_map(|turn| (0..calls_in(turn)).map(move |call| (turn, call_id(index, turn, call))))
        .collect()
}

/// The fault plan of session `index`.
fn session_plan(config: &SoakConfig, provider: ProviderKind, index: usize) -> Vec<Planned> {
    let live = is_live(index);
    let turns = config.turns;
    let calls = |turn| if is_text_turn(live, turn, turns) { 0 } else { calls_in(turn) };
    plan(config.seed, provider, index, turns, config.fault_rate, calls)
}

/// The script of session `index`: tool turns, text turns where a request ends, and the planned faults.
fn session_script(config: &SoakConfig, provider: ProviderKind, index: usize) -> Script {
    let live = is_live(index);
    let planned = session_plan(config, provider, index);
    let mut script = Script::new();
    for turn in 0..config.turns {
        let mut scripted = if is_text_turn(live, turn, config.turns) {
            ScriptTurn::text(text_of(index, turn))
        } else {
            let calls = (0..calls_in(turn))
                .map(|call| ScriptToolCall::new(call_id(index, turn, call), TOOL, json!({"turn": turn, "call": call})));
            ScriptTurn::tool_calls(calls)
        };
        for fault in planned.iter().filter(|p| p.turn == turn) {
            scripted = scripted.with_fault(fault.fault.clone());
        }
        script = script.turn(scripted);
    }
    script
}

// ---------------------------------------------------------------------------------------------------------
// The emulator child.

/// Serves `provider`'s emulator playing the soak scripts; prints `KEY=VALUE` lines and `READY`, then answers
/// each `LOG` line on its standard input with one `SOAK_LOG {json}` line (the inputs received so far), until its
/// standard input closes.
pub async fn serve(provider: ProviderKind, config: SoakConfig) -> io::Result<()> {
    crate::measure::raise_fd_limit()?;
    let factory_config = config.clone();
    let scripts = Scripts::per_session(move |session| match session.prompt().and_then(index_of_text) {
        Some(index) => session_script(&factory_config, provider, index),
        None => Script::new(),
    });
    // The request counter holds the emulator: it serves until the counter is dropped, when stdin closes.
    let (lines, log, requests): (Vec<(&str, String)>, InputLog, RequestCount) = match provider {
        ProviderKind::Claude => {
            let emulator = ClaudeEmulator::start(scripts).await?;
            let (agent, environment) = emulator.seed_agent();
            let lines = vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", agent), ("ENVIRONMENT_ID", environment)];
            (lines, emulator.log(), Box::new(move || emulator.requests().len()))
        }
        ProviderKind::Local => {
            let emulator = LocalEmulator::start(scripts).await?;
            (vec![("BASE_URL", emulator.base_url())], emulator.log(), Box::new(move || emulator.requests().len()))
        }
        ProviderKind::AgentCore => {
            let emulator = AgentCoreEmulator::start(scripts).await?;
            let lines = vec![("BASE_URL", emulator.base_url()), ("AGENT_ID", HARNESS_ARN.to_string())];
            (lines, emulator.log(), Box::new(move || emulator.requests().len()))
        }
    };
    {
        let mut stdout = io::stdout().lock();
        for (key, value) in lines {
            writeln!(stdout, "{key}={value}")?;
        }
        writeln!(stdout, "READY")?;
        stdout.flush()?;
    }
    let log_line = move || format!("SOAK_LOG {}", json!({"inputs": encode_log(&log), "requests": requests()}));
    tokio::task::spawn_blocking(move || -> io::Result<()> {
        for line in io::stdin().lock().lines() {
            if line? == "LOG" {
                let mut stdout = io::stdout().lock();
                writeln!(stdout, "{}", log_line())?;
                stdout.flush()?;
            }
        }
        Ok(())
    })
    .await
    .map_err(io::Error::other)?
}

/// How many HTTP requests the emulator has received (the closure owns the emulator).
type RequestCount = Box<dyn Fn() -> usize + Send>;

/// The input log as JSON: `{"kickoff": prompt}`, `{"message": text}`, `{"results": [ids]}` or `{"other": …}`.
fn encode_log(log: &InputLog) -> Vec<Value> {
    log.inputs()
        .into_iter()
        .map(|input| match input {
            RecordedInput::Kickoff { prompt, .. } => json!({"kickoff": prompt}),
            RecordedInput::Message(text) => json!({"message": text}),
            RecordedInput::ToolResults(results) => {
                json!({"results": results.iter().map(|r| r.tool_use_id.clone()).collect::<Vec<_>>()})
            }
            other => json!({"other": format!("{other:?}")}),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------------
// The driver.

/// The sessions' handler: answers every call at once and counts how often each call id ran.
#[derive(Debug, Clone, Default)]
struct Tools {
    runs: Arc<Mutex<HashMap<String, u32>>>,
}

#[async_trait]
impl Handler for Tools {
    async fn handle_tool_call_with_info(&self, tool_use: &ToolUse, _info: &SessionInfo) -> ToolOutput {
        *self.runs.lock().unwrap_or_else(PoisonError::into_inner).entry(tool_use.id.clone()).or_default() += 1;
        Ok(format!("{} answered", tool_use.id))
    }
}

/// How one session went.
#[derive(Debug)]
struct Outcome {
    index: usize,
    /// `Err` with what went wrong.
    result: Result<(), String>,
    /// Reconnects seen (reported by its results and, live, by its notifications).
    reconnects: u32,
    /// Duplicates found in its results (a tool call or an event id twice in one request's record).
    result_duplicates: usize,
    /// The fault-matrix cases its error names (empty when it did not fail).
    named: Vec<FaultCase>,
    /// Scripted calls its handler never ran (before where it stopped) and ran more than once.
    runs_lost: usize,
    /// See `runs_lost`.
    runs_doubled: usize,
}

/// The provider of a soak run, with short backoffs and timeouts.
async fn build_provider(
    kind: ProviderKind,
    child: &EmulatorChild,
) -> Result<(Arc<dyn Provider>, SessionOptions), String> {
    let value = |key: &str| child.value(key).map(str::to_string).map_err(|e| e.to_string());
    let retry = RetryPolicy::default().with_max_retries(4).with_initial(BACKOFF_INITIAL).with_max(BACKOFF_MAX);
    let base_url = value("BASE_URL")?;
    let built: (Arc<dyn Provider>, SessionOptions) = match kind {
        ProviderKind::Claude => {
            let provider = ClaudeManagedAgents::builder()
                .base_url(base_url)
                .api_key("soak-test-key")
                .retry(retry)
                .idle_timeout(IDLE_TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            let options = SessionOptions::new().agent_id(value("AGENT_ID")?).environment_id(value("ENVIRONMENT_ID")?);
            (Arc::new(provider), options)
        }
        ProviderKind::Local => {
            let provider = Local::builder()
                .base_url(base_url)
                .model("emulated")
                .retry(retry)
                .idle_timeout(IDLE_TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            (Arc::new(provider), SessionOptions::new())
        }
        ProviderKind::AgentCore => {
            let config = aws_config::defaults(BehaviorVersion::latest())
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("AKIDSOAKTEST", "soak-test-secret", None, None, "soak"))
                .endpoint_url(base_url)
                .http_client(aws_smithy_http_client::Builder::new().build_http())
                .load()
                .await;
            let provider = BedrockAgentCore::builder()
                .sdk_config(&config)
                .retry(retry)
                .idle_timeout(IDLE_TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            (Arc::new(provider), SessionOptions::new().agent_id(value("AGENT_ID")?))
        }
    };
    let reconnect =
        ReconnectPolicy::default().with_initial(BACKOFF_INITIAL).with_max(BACKOFF_MAX).with_max_attempts(Some(8));
    Ok((built.0, built.1.reconnect_policy(reconnect).timeout(REQUEST_TIMEOUT)))
}

/// Duplicates in one request's record: tool calls with the same id, events with the same id.
fn duplicates_in(result: &SessionResult) -> usize {
    let mut seen = std::collections::HashSet::new();
    let calls = result.custom_tool_uses.iter().filter(|call| !seen.insert(call.id.clone())).count();
    let mut seen = std::collections::HashSet::new();
    let events = result.events.iter().filter_map(|event| event.id()).filter(|id| !seen.insert(id.to_string())).count();
    calls + events
}

/// Checks a request's result: completed, `turns` turns, the scripted text.
fn check(result: &SessionResult, turns: usize, text: &str) -> Result<(), String> {
    if result.terminal_reason != TerminalReason::Completed {
        return Err(format!("ended {:?}", result.terminal_reason));
    }
    if result.turns as usize != turns || result.text != text {
        return Err(format!("{} turns and text {:?} (expected {turns} turns and {text:?})", result.turns, result.text));
    }
    Ok(())
}

/// Runs session `index` to its end.
async fn run_session(
    provider: Arc<dyn Provider>,
    options: SessionOptions,
    index: usize,
    turns: usize,
    splits: Vec<usize>,
) -> Outcome {
    // Each session counts its own runs, so the soak's bookkeeping does not grow with the sessions it has run.
    let tools = Tools::default();
    let mut outcome = drive_session(provider, options, tools.clone(), index, turns, splits).await;
    let runs = std::mem::take(&mut *tools.runs.lock().unwrap_or_else(PoisonError::into_inner));
    let ran = |id: &str| runs.get(id).copied().unwrap_or(0);
    (outcome.runs_lost, outcome.runs_doubled) =
        lost_and_doubled(&scripted_calls(index, turns), ran, outcome.result.is_err());
    outcome
}

/// Runs session `index` to its end with `tools` as its handler.
async fn drive_session(
    provider: Arc<dyn Provider>,
    options: SessionOptions,
    tools: Tools,
    index: usize,
    turns: usize,
    splits: Vec<usize>,
) -> Outcome {
    // A split `requires_action` reaches the session as two idles, which it counts as two turns.
    let expected = |from: usize, to: usize| to - from + splits.iter().filter(|&&t| (from..to).contains(&t)).count();
    let mut outcome = Outcome {
        index,
        result: Ok(()),
        reconnects: 0,
        result_duplicates: 0,
        named: Vec::new(),
        runs_lost: 0,
        runs_doubled: 0,
    };
    let naming = |error: &managed_agents_core::Error| -> Vec<FaultCase> {
        FaultCase::ALL.into_iter().filter(|case| case.is_named_by(error)).collect()
    };
    let options = options.prompt(prompt(index));
    if !is_live(index) {
        outcome.result = match Session::run(&*provider, tools, options).await {
            Ok(result) => {
                outcome.reconnects += result.reconnects;
                outcome.result_duplicates += duplicates_in(&result);
                check(&result, expected(0, turns), &text_of(index, turns - 1))
            }
            Err(error) => {
                outcome.named = naming(&error);
                Err(error.to_string())
            }
        };
        return outcome;
    }
    let mut handle = match Session::start(provider, tools, options).await {
        Ok(handle) => handle,
        Err(error) => {
            outcome.named = naming(&error);
            outcome.result = Err(format!("start: {error}"));
            return outcome;
        }
    };
    let notified = AtomicU32::new(0);
    let mut first = 0;
    for turn in (0..turns).filter(|&turn| is_text_turn(true, turn, turns)) {
        if first > 0
            && let Err(error) = handle.message(follow_up(index, first - 1))
        {
            outcome.result = Err(format!("message: {error}"));
            break;
        }
        let result = loop {
            match handle.next_notification().await {
                Some(Notification::Finished(result)) => break Ok(result),
                Some(Notification::Failed(error)) => {
                    outcome.named = naming(&error);
                    break Err(error.to_string());
                }
                Some(Notification::Reconnecting { .. }) => {
                    notified.fetch_add(1, Ordering::Relaxed);
                }
                Some(_) => {}
                None => break Err("the session ended".to_string()),
            }
        };
        match result {
            Ok(result) => {
                outcome.reconnects += result.reconnects;
                outcome.result_duplicates += duplicates_in(&result);
                if let Err(problem) = check(&result, expected(first, turn + 1), &text_of(index, turn)) {
                    outcome.result = Err(format!("request ending at turn {turn}: {problem}"));
                    break;
                }
            }
            Err(error) => {
                outcome.result = Err(error);
                break;
            }
        }
        first = turn + 1;
    }
    // The results count reconnects per request; the notifications count every one, between requests too.
    outcome.reconnects = outcome.reconnects.max(notified.load(Ordering::Relaxed));
    handle.close().await;
    outcome
}

/// What the emulator received, per session.
#[derive(Debug, Default)]
struct Received {
    /// Tool results per call id.
    results: HashMap<String, u32>,
    /// Inputs (kickoff, messages, result sets) per session: the turns each session started.
    inputs: HashMap<usize, usize>,
    /// Results naming no session of the soak.
    strays: usize,
    /// HTTP requests the emulator received.
    requests: u64,
}

fn decode_received(line: &str) -> Result<Received, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("the child's log is not JSON: {e}"))?;
    let mut received = Received { requests: value["requests"].as_u64().unwrap_or(0), ..Received::default() };
    for input in value["inputs"].as_array().into_iter().flatten() {
        let text = input.get("kickoff").or_else(|| input.get("message")).and_then(Value::as_str);
        if let Some(index) = text.and_then(index_of_text) {
            *received.inputs.entry(index).or_default() += 1;
        }
        if let Some(ids) = input.get("results").and_then(Value::as_array) {
            let mut sessions = Vec::new();
            for id in ids.iter().filter_map(Value::as_str) {
                *received.results.entry(id.to_string()).or_default() += 1;
                match index_of_call(id) {
                    Some(index) => sessions.push(index),
                    None => received.strays += 1,
                }
            }
            sessions.dedup();
            for index in sessions {
                *received.inputs.entry(index).or_default() += 1;
            }
        }
    }
    Ok(received)
}

/// Lost and doubled answers of one session, given how often each id was answered. A failed session may stop
/// early: only calls after the last one answered may be missing.
fn lost_and_doubled(calls: &[(usize, String)], answered: impl Fn(&str) -> u32, failed: bool) -> (usize, usize) {
    let doubled = calls.iter().filter(|(_, id)| answered(id) > 1).count();
    let last_turn = calls.iter().filter(|(_, id)| answered(id) > 0).map(|(turn, _)| *turn).max();
    let lost = calls
        .iter()
        .filter(|(turn, id)| {
            let may_miss = failed && last_turn.is_none_or(|last| *turn > last);
            answered(id) == 0 && !may_miss
        })
        .count();
    (lost, doubled)
}

/// The soak's figures for one provider.
#[derive(Debug, Default)]
struct ProviderReport {
    provider: String,
    sessions: usize,
    live: usize,
    turns: usize,
    tool_results: u64,
    faults: BTreeMap<FaultKind, usize>,
    reconnects: u64,
    requests: u64,
    inputs: usize,
    completed: usize,
    expected_failures: BTreeMap<FaultKind, usize>,
    unexpected: Vec<(usize, String)>,
    lost: usize,
    doubled: usize,
    runs_lost: usize,
    runs_doubled: usize,
    result_duplicates: usize,
    strays: usize,
    tasks_before: usize,
    tasks_after: usize,
    tasks_per_round: Vec<usize>,
    rss_per_round: Vec<u64>,
    heap_per_round: Vec<u64>,
    warmup_rounds: usize,
    round: usize,
    wall: Duration,
}

impl ProviderReport {
    /// A figure sampled per round: its value at the end of warm-up and its largest in the late rounds (the last
    /// quarter, at least one).
    fn window(&self, rounds: &[u64]) -> (u64, u64) {
        if rounds.is_empty() {
            return (0, 0);
        }
        let warm = rounds[self.warmup_rounds.clamp(1, rounds.len()) - 1];
        let late = rounds.len() - (rounds.len() / 4).max(1);
        (warm, rounds[late..].iter().copied().max().unwrap_or(warm))
    }

    /// The RSS after warm-up and the largest of the late rounds.
    fn rss_window(&self) -> (u64, u64) {
        self.window(&self.rss_per_round)
    }

    /// The live heap after warm-up and the largest of the late rounds.
    fn heap_window(&self) -> (u64, u64) {
        self.window(&self.heap_per_round)
    }

    /// Whether the live heap stays within [`HEAP_SLACK`] of its post-warm-up figure (it is exact, not paged: a
    /// stricter check than RSS).
    fn heap_flat(&self) -> bool {
        let (warm, late) = self.heap_window();
        late <= warm + HEAP_SLACK
    }

    fn rss_flat(&self) -> bool {
        let (warm, late) = self.rss_window();
        late <= warm + RSS_SLACK.max((warm as f64 * RSS_SHARE) as u64)
    }

    /// The task count between rounds (provider alive, no session running): the mean over the rounds right
    /// after warm-up (the first quarter of the rest) and over the last quarter.
    fn tasks_window(&self) -> (f64, f64) {
        let rounds = &self.tasks_per_round;
        if rounds.is_empty() {
            return (0.0, 0.0);
        }
        let after = &rounds[self.warmup_rounds.min(rounds.len() - 1)..];
        let quarter = (after.len() / 4).max(1);
        let mean = |window: &[usize]| window.iter().sum::<usize>() as f64 / window.len() as f64;
        (mean(&after[..quarter]), mean(&after[after.len() - quarter..]))
    }

    /// Whether the task count between rounds stays put as sessions accumulate on one provider: pooled
    /// connections (one task each) come and go with the load, so the late mean may exceed the early one by at
    /// most half a round's sessions (at least [`TASK_SLACK`]); one task leaked per session would add a whole
    /// round's worth every round.
    fn tasks_flat(&self) -> bool {
        let (early, late) = self.tasks_window();
        late <= early + (self.round as f64 / 2.0).max(TASK_SLACK)
    }

    fn failures(&self) -> Vec<String> {
        let mut failures = Vec::new();
        if self.lost + self.doubled + self.runs_lost + self.runs_doubled + self.strays > 0 {
            failures.push(format!(
                "{}: {} lost and {} doubled tool results, {} lost and {} doubled tool runs, {} stray results",
                self.provider, self.lost, self.doubled, self.runs_lost, self.runs_doubled, self.strays
            ));
        }
        if self.result_duplicates > 0 {
            failures.push(format!("{}: {} duplicates in session results", self.provider, self.result_duplicates));
        }
        if !self.unexpected.is_empty() {
            failures.push(format!("{}: {} sessions failed unexpectedly", self.provider, self.unexpected.len()));
        }
        if self.tasks_after > self.tasks_before {
            failures.push(format!(
                "{}: {} tasks alive after the provider was dropped, {} before",
                self.provider, self.tasks_after, self.tasks_before
            ));
        }
        if !self.tasks_flat() {
            failures.push(format!("{}: tasks between rounds grew: {:?}", self.provider, self.tasks_per_round));
        }
        if !self.heap_flat() {
            let (warm, late) = self.heap_window();
            failures.push(format!(
                "{}: live heap grew from {} after warm-up to {} (allowed: {})",
                self.provider,
                report::mib(warm),
                report::mib(late),
                report::mib(HEAP_SLACK)
            ));
        }
        if !self.rss_flat() {
            let (warm, late) = self.rss_window();
            failures.push(format!(
                "{}: RSS grew from {} after warm-up to {} (allowed: {:.0} % or {})",
                self.provider,
                report::mib(warm),
                report::mib(late),
                RSS_SHARE * 100.0,
                report::mib(RSS_SLACK)
            ));
        }
        failures
    }
}

/// Runs the soak for one provider.
async fn soak_provider(config: &SoakConfig, kind: ProviderKind) -> Result<ProviderReport, String> {
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();
    let started = Instant::now();
    let mut child = EmulatorChild::start_with(soak_serve_args(config, kind)).await?;
    let (provider, options) = build_provider(kind, &child).await?;
    let indices: Vec<usize> = match config.only {
        Some(index) => vec![index],
        None => (0..config.sessions).collect(),
    };
    let mut report = ProviderReport {
        provider: kind.name().to_string(),
        sessions: indices.len(),
        live: indices.iter().filter(|&&i| is_live(i)).count(),
        round: config.round,
        tasks_before,
        ..ProviderReport::default()
    };
    let rounds: Vec<&[usize]> = indices.chunks(config.round.max(1)).collect();
    // Warm-up: the first quarter of the rounds (at least one), while pools and allocator arenas fill.
    report.warmup_rounds = (rounds.len() / 4).max(1).min(rounds.len().saturating_sub(1)).max(1);
    // Everything the rounds record is allocated up front, so the heap figures show the sessions' memory only.
    let mut outcomes = Vec::with_capacity(indices.len());
    report.rss_per_round.reserve(rounds.len());
    report.heap_per_round.reserve(rounds.len());
    report.tasks_per_round.reserve(rounds.len());
    for round in rounds {
        let mut running = JoinSet::new();
        for &index in round {
            let splits = session_plan(config, kind, index)
                .iter()
                .filter(|p| p.kind == FaultKind::Split)
                .map(|p| p.turn)
                .collect();
            let session = run_session(Arc::clone(&provider), options.clone(), index, config.turns, splits);
            running.spawn(session);
        }
        while let Some(joined) = running.join_next().await {
            outcomes.push(joined.map_err(|e| format!("a session task failed: {e}"))?);
        }
        report.rss_per_round.push(Resident::now().rss);
        report.heap_per_round.push(crate::ALLOC.live_bytes() as u64);
        report.tasks_per_round.push(metrics.num_alive_tasks());
    }
    drop(options);
    drop(provider);
    // Connection tasks end once they notice their pool is gone: wait for that, bounded.
    let settle_until = Instant::now() + SETTLE;
    while metrics.num_alive_tasks() > tasks_before && Instant::now() < settle_until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    report.tasks_after = metrics.num_alive_tasks();
    let line = child.ask("LOG", "SOAK_LOG ").await?;
    let received = decode_received(&line)?;
    drop(child);
    report.wall = started.elapsed();
    tally(config, kind, &mut report, &outcomes, &received);
    Ok(report)
}

/// Fills in the report from the sessions' outcomes, what the emulator received and what the handler ran.
fn tally(
    config: &SoakConfig,
    kind: ProviderKind,
    report: &mut ProviderReport,
    outcomes: &[Outcome],
    received: &Received,
) {
    report.requests = received.requests;
    report.inputs = received.inputs.values().sum();
    report.strays = received.strays;
    report.tool_results = received.results.values().map(|&n| u64::from(n)).sum();
    for outcome in outcomes {
        let index = outcome.index;
        let planned = session_plan(config, kind, index);
        let started = received.inputs.get(&index).copied().unwrap_or(0);
        // Turns the session reached: those whose input arrived, and the one it was waiting on when it failed.
        let reached = if outcome.result.is_ok() { config.turns } else { (started + 1).min(config.turns) };
        report.turns += if outcome.result.is_ok() { config.turns } else { started.min(config.turns) };
        for fault in planned.iter().filter(|p| p.turn < reached) {
            *report.faults.entry(fault.kind).or_default() += 1;
        }
        report.reconnects += u64::from(outcome.reconnects);
        report.result_duplicates += outcome.result_duplicates;
        let calls = scripted_calls(index, config.turns);
        let failed = outcome.result.is_err();
        let answered = |id: &str| received.results.get(id).copied().unwrap_or(0);
        let (lost, doubled) = lost_and_doubled(&calls, answered, failed);
        let (runs_lost, runs_doubled) = (outcome.runs_lost, outcome.runs_doubled);
        report.lost += lost;
        report.doubled += doubled;
        report.runs_lost += runs_lost;
        report.runs_doubled += runs_doubled;
        match &outcome.result {
            Ok(()) => report.completed += 1,
            Err(error) => {
                // Expected: a fault the provider declares as surfacing hit the session, and the error names it.
                let fatal = planned.iter().find(|p| {
                    p.turn < reached
                        && p.kind.outcome(kind) == FaultOutcome::Surfaces
                        && matches!(p.kind, FaultKind::Case(case) if outcome.named.contains(&case))
                });
                match fatal {
                    Some(fault) => *report.expected_failures.entry(fault.kind).or_default() += 1,
                    None => {
                        let faults: Vec<String> =
                            planned.iter().map(|p| format!("turn {} {}", p.turn, p.kind)).collect();
                        let live = if is_live(index) { "live" } else { "sync" };
                        let plan = if faults.is_empty() { "none".to_string() } else { faults.join(", ") };
                        report.unexpected.push((index, format!("{error} ({live}; faults: {plan})")));
                    }
                }
            }
        }
        if lost + doubled + runs_lost + runs_doubled > 0 {
            report.unexpected.push((
                index,
                format!("{lost} lost, {doubled} doubled results; {runs_lost} lost, {runs_doubled} doubled runs"),
            ));
        }
    }
}

/// The child's command line for `kind`.
fn soak_serve_args(config: &SoakConfig, kind: ProviderKind) -> Vec<String> {
    [
        "soak-serve",
        "--provider",
        kind.name(),
        "--seed",
        &config.seed.to_string(),
        "--fault-rate",
        &config.fault_rate.to_string(),
        "--turns",
        &config.turns.to_string(),
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

/// The command that replays session `index` of `provider` alone.
fn replay_command(config: &SoakConfig, provider: &str, index: usize) -> String {
    format!(
        "cargo run --release -p managed-agents-load -- soak --provider {provider} --seed {} --fault-rate {} --turns {} --session {index}",
        config.seed, config.fault_rate, config.turns
    )
}

/// Runs the soak on every provider of `config`, prints the table, and fails when a check fails.
pub async fn soak(config: SoakConfig) -> Result<(), String> {
    println!(
        "soak: seed {} ({} sessions x {} turns per provider, fault rate {}, rounds of {}) — replay with --seed {}",
        config.seed, config.sessions, config.turns, config.fault_rate, config.round, config.seed
    );
    crate::measure::raise_fd_limit().map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    let started = Instant::now();
    let mut reports = Vec::new();
    for &kind in &config.providers {
        let report = soak_provider(&config, kind).await?;
        println!("{}: done in {}", kind, report::duration(report.wall));
        reports.push(report);
    }
    let wall = started.elapsed();
    let mut table = Table::new([
        "provider",
        "sessions (live / sync)",
        "turns",
        "tool results",
        "faults injected",
        "reconnects",
        "HTTP requests / inputs taken",
        "completed",
        "failed (why)",
        "lost / doubled results",
        "lost / doubled runs",
        "tasks before / between rounds / after",
        "RSS warm-up → end (max late)",
        "heap warm-up → end (max late)",
        "wall",
    ]);
    let mut failures = Vec::new();
    for r in &reports {
        let faults = if r.faults.is_empty() {
            "none".to_string()
        } else {
            r.faults.iter().map(|(kind, n)| format!("{kind} {n}")).collect::<Vec<_>>().join(", ")
        };
        let mut why: Vec<String> =
            r.expected_failures.iter().map(|(kind, n)| format!("{n} expected ({kind})")).collect();
        if !r.unexpected.is_empty() {
            why.push(format!("{} unexpected", r.unexpected.len()));
        }
        let failed = r.sessions - r.completed;
        let (warm, late) = r.rss_window();
        let tasks_between = match (r.tasks_per_round.iter().min(), r.tasks_per_round.iter().max()) {
            (Some(min), Some(max)) if min != max => format!("{min}–{max}"),
            (Some(min), _) => min.to_string(),
            _ => "–".to_string(),
        };
        table.row([
            r.provider.clone(),
            format!("{} ({} / {})", r.sessions, r.live, r.sessions - r.live),
            r.turns.to_string(),
            r.tool_results.to_string(),
            faults,
            r.reconnects.to_string(),
            format!("{} / {}", r.requests, r.inputs),
            r.completed.to_string(),
            if failed == 0 { "0".to_string() } else { format!("{failed}: {}", why.join(", ")) },
            format!("{} / {}", r.lost, r.doubled),
            format!("{} / {}", r.runs_lost, r.runs_doubled),
            format!("{} / {tasks_between} / {}", r.tasks_before, r.tasks_after),
            format!(
                "{} → {} ({})",
                report::mib(warm),
                report::mib(r.rss_per_round.last().copied().unwrap_or(0)),
                report::mib(late)
            ),
            {
                let (warm, late) = r.heap_window();
                let end = r.heap_per_round.last().copied().unwrap_or(0);
                let size = |bytes: u64| report::size(bytes as f64);
                format!("{} → {} ({})", size(warm), size(end), size(late))
            },
            report::duration(r.wall),
        ]);
        failures.extend(r.failures());
    }
    let warmup = reports.first().map_or(0, |r| r.warmup_rounds);
    println!(
        "\nchecks: every scripted tool call answered exactly once (emulator input log) and run once (handler), \
         a failed session's answers complete up to where it stopped; no duplicate call or event id in a session's \
         results; every failure expected by its fault's kind; tasks on the driver's runtime back to the baseline \
         once the provider is dropped, and the task count between rounds (provider alive, sessions closed) no \
         higher in the last quarter of the rounds than in the first quarter after warm-up ({warmup} round(s)) by \
         more than half a round (at least {TASK_SLACK}); RSS of the last quarter of the rounds within {:.0} % \
         or {} of the RSS after warm-up, and their live heap within {}",
        RSS_SHARE * 100.0,
        report::mib(RSS_SLACK),
        report::mib(HEAP_SLACK)
    );
    let data = json!({
        "seed": config.seed, "sessions": config.sessions, "turns": config.turns, "fault_rate": config.fault_rate,
        "wall_ms": wall.as_millis() as u64, "failures": failures,
        "providers": reports.iter().map(|r| json!({
            "provider": r.provider, "sessions": r.sessions, "live": r.live, "turns": r.turns,
            "tool_results": r.tool_results,
            "faults": r.faults.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "reconnects": r.reconnects, "requests": r.requests, "inputs": r.inputs, "completed": r.completed,
            "expected_failures": r.expected_failures.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "unexpected_failures": r.unexpected.len(), "lost": r.lost, "doubled": r.doubled,
            "runs_lost": r.runs_lost, "runs_doubled": r.runs_doubled, "result_duplicates": r.result_duplicates,
            "tasks_before": r.tasks_before, "tasks_after": r.tasks_after, "tasks_per_round": r.tasks_per_round,
            "rss_per_round": r.rss_per_round, "heap_per_round": r.heap_per_round, "rss_flat": r.rss_flat(), "heap_flat": r.heap_flat(), "tasks_flat": r.tasks_flat(),
            "wall_ms": r.wall.as_millis() as u64,
        })).collect::<Vec<_>>(),
    });
    report::print(&table, "soak", data);
    println!("total wall time {}", report::duration(wall));
    for r in &reports {
        for (index, error) in r.unexpected.iter().take(10) {
            eprintln!(
                "{} session {index} failed: {error}\n  replay: {}",
                r.provider,
                replay_command(&config, &r.provider, *index)
            );
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("soak checks failed (seed {}):\n  {}", config.seed, failures.join("\n  ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SoakConfig {
        SoakConfig {
            providers: vec![ProviderKind::Claude],
            sessions: 4,
            turns: 10,
            fault_rate: 0.5,
            seed: 3,
            round: 2,
            only: None,
        }
    }

    #[test]
    fn a_session_script_has_its_turns_calls_and_faults() {
        let config = config();
        let live = session_script(&config, ProviderKind::Claude, 0);
        assert_eq!(live.turns.len(), 10);
        let texts: Vec<usize> = (0..10).filter(|&t| live.turns[t].tool_calls.is_empty()).collect();
        assert_eq!(texts, [3, 7, 9], "a live session's requests end every fourth turn and at the last");
        let sync = session_script(&config, ProviderKind::Claude, 1);
        assert_eq!((0..10).filter(|&t| sync.turns[t].tool_calls.is_empty()).count(), 1, "one request");
        assert_eq!(sync.turns[1].tool_calls.len(), 2);
        let faults: usize = live.turns.iter().map(|t| t.faults.len()).sum();
        assert_eq!(faults, session_plan(&config, ProviderKind::Claude, 0).len());
        assert_eq!(scripted_calls(1, 10).len(), 9 + 3);
    }

    #[test]
    fn ids_and_texts_name_their_session() {
        assert_eq!(index_of_call(&call_id(17, 3, 1)), Some(17));
        assert_eq!(index_of_text(&prompt(42)), Some(42));
        assert_eq!(index_of_text(&follow_up(5, 3)), Some(5));
        assert_eq!(index_of_text("hello"), None);
    }

    #[test]
    fn lost_and_doubled_answers_are_counted_and_a_failure_may_stop_early() {
        let calls = scripted_calls(1, 4);
        let ids: Vec<&str> = calls.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids, ["s1_t0_c0", "s1_t1_c0", "s1_t1_c1", "s1_t2_c0"]);
        let once = |_: &str| 1;
        assert_eq!(lost_and_doubled(&calls, once, false), (0, 0));
        let first_twice = |id: &str| u32::from(id == "s1_t0_c0") * 2;
        assert_eq!(lost_and_doubled(&calls, first_twice, false), (3, 1));
        assert_eq!(lost_and_doubled(&calls, first_twice, true), (0, 1), "a failed session stopped after turn 0");
        let gap = |id: &str| u32::from(id != "s1_t1_c1");
        assert_eq!(lost_and_doubled(&calls, gap, true), (1, 0), "a hole before the last answer is lost");
    }

    #[test]
    fn the_childs_log_decodes_into_tallies() {
        let line = json!({"requests": 9, "inputs": [
            {"kickoff": prompt(0)}, {"results": ["s0_t0_c0"]}, {"results": ["s0_t0_c0", "x"]}, {"message": follow_up(0, 3)}
        ]})
        .to_string();
        let received = decode_received(&line).unwrap();
        assert_eq!((received.requests, received.strays), (9, 1));
        assert_eq!(received.results["s0_t0_c0"], 2);
        assert_eq!(received.inputs[&0], 4);
    }
}
