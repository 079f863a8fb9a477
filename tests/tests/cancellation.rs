//! Cancellation ends every task a session spawned: dropping a `Session::run` future, a run's timeout, and closing
//! or dropping a live handle — while a tool runs, while the provider waits out a retry backoff, while a live
//! session is parked or waits to reconnect.
//!
//! Proved by counting the tasks alive on the test's runtime (`RuntimeMetrics::num_alive_tasks`), not by sleeping:
//! each emulator runs on a runtime of its own on a thread of its own, so the test's runtime holds only the
//! session's tasks (the driver of a live session, tool tasks, and the HTTP clients' connection tasks). Each test
//! takes the count before it builds the provider, checks that the session's tasks were counted while it ran, then
//! cancels, drops the provider and waits (bounded) for the count to come back to where it started.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{Fault, InputLog, Script, ScriptTurn};
use managed_agents_core::{
    Error, Handler, Notification, Provider, ReconnectPolicy, RetryPolicy, Session, SessionHandle, SessionOptions,
    ToolOutput, tool_fn,
};
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How long anything awaited here may take before the test fails (the wait is on an event, never a fixed sleep).
const PATIENCE: Duration = Duration::from_secs(10);

/// A backoff no test waits out: a cancelled session must not be found still sleeping in it.
const LONG: Duration = Duration::from_secs(600);

/// The timeout of the runs meant to time out: ample for a turn on loopback on a busy machine.
const RUN_TIMEOUT: Duration = Duration::from_secs(3);

// ---------------------------------------------------------------------------------------------------------------
// Counting tasks

/// Tasks alive on the current runtime.
fn alive() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// Waits until no more than `baseline` tasks are alive on this runtime, polling every millisecond up to
/// [`PATIENCE`]; fails with the counts if they never come back. Returns the count that was reached.
async fn settles_to(baseline: usize, what: &str) -> usize {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let now = alive();
        if now <= baseline {
            println!("{what}: {now} tasks alive after cancelling (baseline {baseline})");
            return now;
        }
        if Instant::now() >= deadline {
            panic!("{what}: {now} tasks still alive {PATIENCE:?} after cancelling; baseline {baseline}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Drops the provider a synchronous run borrowed (with its HTTP client's pool of idle connections, which
/// outlive a run by design), then waits for the count to come back to `baseline`.
async fn provider_dropped(provider: Arc<dyn Provider>, baseline: usize, what: &str) {
    drop(provider);
    settles_to(baseline, what).await;
}

/// Checks the session's tasks were counted while it ran, so that a count back at the baseline means something.
fn counted_while_running(baseline: usize, what: &str) -> usize {
    let during = alive();
    println!("{what}: {during} tasks alive while running (baseline {baseline})");
    assert!(during > baseline, "{what}: the session's tasks are not counted ({during} alive, baseline {baseline})");
    during
}

// ---------------------------------------------------------------------------------------------------------------
// Emulators on a runtime of their own

/// An emulator kept running on its own thread and runtime until dropped.
struct Remote {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts an emulator with `start` on a new thread running its own runtime, and hands back what `info` takes
/// from it (URLs, logs, a provider built on its clients).
fn on_own_runtime<E, I, Fut>(
    start: impl FnOnce() -> Fut + Send + 'static,
    info: impl FnOnce(&E) -> I + Send + 'static,
) -> (I, Remote)
where
    Fut: Future<Output = std::io::Result<E>>,
    E: 'static,
    I: Send + 'static,
{
    let (info_tx, info_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("emulator runtime");
        runtime.block_on(async move {
            let emulator = start().await.expect("emulator");
            let _ = info_tx.send(info(&emulator));
            let _ = stopped.await;
        });
    });
    let info = info_rx.recv_timeout(PATIENCE).expect("the emulator started");
    (info, Remote { stop: Some(stop), thread: Some(thread) })
}

// ---------------------------------------------------------------------------------------------------------------
// Providers

/// The providers under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Backend {
    StreamingReference,
    RequestResponseReference,
    Local,
    Claude,
    AgentCore,
}

/// A provider ready to run a script, and what is needed to look at what it did.
struct Setup {
    provider: Arc<dyn Provider>,
    options: SessionOptions,
    log: InputLog,
    /// Model requests the backend received (refused ones included), where the emulator records them.
    model_requests: Option<Box<dyn Fn() -> usize + Send + Sync>>,
    /// The emulator; dropped last.
    remote: Option<Remote>,
}

impl Setup {
    /// `provider` with default options and nothing else to look at.
    fn new(provider: impl Provider + 'static, log: InputLog) -> Self {
        Self { provider: Arc::new(provider), options: SessionOptions::new(), log, model_requests: None, remote: None }
    }
}

async fn setup(backend: Backend, script: Script, retry: RetryPolicy) -> Setup {
    match backend {
        Backend::StreamingReference => {
            let provider = StreamingReference::new(script);
            let log = provider.log();
            Setup::new(provider, log)
        }
        Backend::RequestResponseReference => {
            let provider = RequestResponseReference::new(script);
            let log = provider.log();
            Setup::new(provider, log)
        }
        Backend::Local => {
            let ((url, log), remote) =
                on_own_runtime(move || LocalEmulator::start(script), |emulator| (emulator.base_url(), emulator.log()));
            let local = Local::builder().base_url(url).model("emulated").retry(retry).build().expect("local");
            Setup { remote: Some(remote), ..Setup::new(local, log) }
        }
        Backend::Claude => {
            let ((url, log, (agent, environment), emulator), remote) = on_own_runtime(
                move || async move { ClaudeEmulator::start(script).await.map(Arc::new) },
                |emulator: &Arc<ClaudeEmulator>| {
                    (emulator.base_url(), emulator.log(), emulator.seed_agent(), Arc::clone(emulator))
                },
            );
            let provider =
                ClaudeManagedAgents::builder().base_url(url).api_key("k").retry(retry).build().expect("claude");
            let model_requests = move || {
                let requests = emulator.requests();
                requests.iter().filter(|r| r.method == "POST" && r.path.ends_with("/events")).count()
            };
            Setup {
                options: SessionOptions::new().agent_id(agent).environment_id(environment),
                model_requests: Some(Box::new(model_requests)),
                remote: Some(remote),
                ..Setup::new(provider, log)
            }
        }
        Backend::AgentCore => {
            let ((provider, log, arn, emulator), remote) = on_own_runtime(
                move || async move { AgentCoreEmulator::start(script).await.map(Arc::new) },
                move |emulator: &Arc<AgentCoreEmulator>| {
                    let provider = emulator.provider_builder().retry(retry).build().expect("agentcore");
                    (provider, emulator.log(), emulator.harness_arn(), Arc::clone(emulator))
                },
            );
            Setup {
                options: SessionOptions::new().agent_id(arn),
                model_requests: Some(Box::new(move || emulator.requests().len())),
                remote: Some(remote),
                ..Setup::new(provider, log)
            }
        }
    }
}

/// The quick retries every test but the backoff one uses (none of them meets a retryable failure).
fn quick_retry() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_retries(2)
        .with_initial(Duration::from_millis(5))
        .with_max(Duration::from_millis(20))
}

// ---------------------------------------------------------------------------------------------------------------
// A tool that never returns

/// Counts the tool futures dropped (cancelled) so far.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A handler whose every tool call signals that it started, then never returns; and the number of its tool
/// futures that were dropped.
fn stuck_tools() -> (impl Handler, mpsc::UnboundedReceiver<()>, Arc<AtomicUsize>) {
    let (started, started_rx) = mpsc::unbounded_channel();
    let dropped = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&dropped);
    let handler = tool_fn(move |_name, _input| {
        let started = started.clone();
        let guard = DropCount(Arc::clone(&counter));
        async move {
            let _guard = guard;
            let _ = started.send(());
            std::future::pending::<ToolOutput>().await
        }
    });
    (handler, started_rx, dropped)
}

async fn tool_started(started: &mut mpsc::UnboundedReceiver<()>) {
    tokio::time::timeout(PATIENCE, started.recv()).await.expect("the tool started in time").expect("a tool call");
}

fn tool_script() -> Script {
    Script::new().turn(ScriptTurn::tool_call("call_1", "wait", json!({}))).turn(ScriptTurn::text("never reached"))
}

// ---------------------------------------------------------------------------------------------------------------
// The cases

/// Dropping a `Session::run` future while its tool runs ends the tool task and every other task of the run.
async fn drop_run_during_tool(backend: Backend) {
    let what = format!("{backend:?}: run dropped during a tool");
    let baseline = alive();
    let Setup { provider, options, remote, .. } = setup(backend, tool_script(), quick_retry()).await;
    let (handler, mut started, dropped) = stuck_tools();
    {
        let run = Session::run(&*provider, handler, options.prompt("go").timeout(LONG));
        tokio::pin!(run);
        tokio::select! {
            result = &mut run => panic!("{what}: the run ended: {result:?}"),
            () = tool_started(&mut started) => {}
        }
        counted_while_running(baseline, &what);
    }
    provider_dropped(provider, baseline, &what).await;
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "{what}: the tool future was dropped");
    drop(remote);
}

/// A run whose timeout elapses while its tool runs fails `TimedOut` and ends every task it spawned.
async fn timeout_during_tool(backend: Backend) {
    let what = format!("{backend:?}: timeout during a tool");
    let baseline = alive();
    let Setup { provider, options, remote, .. } = setup(backend, tool_script(), quick_retry()).await;
    let (handler, mut started, dropped) = stuck_tools();
    let run = Session::run(&*provider, handler, options.prompt("go").timeout(RUN_TIMEOUT));
    // The sampler runs in the test's own task (no task of its own), beside the run.
    let sample = async {
        tool_started(&mut started).await;
        counted_while_running(baseline, &what)
    };
    let (result, _) = tokio::join!(run, sample);
    assert!(matches!(result, Err(Error::TimedOut { .. })), "{what}: {result:?}");
    provider_dropped(provider, baseline, &what).await;
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "{what}: the tool future was dropped");
    drop(remote);
}

/// A run whose timeout elapses while the provider waits out a retry backoff (the backend answered 529 with a
/// long `retry-after`) fails `TimedOut` and ends every task it spawned.
async fn timeout_during_backoff(backend: Backend) {
    let what = format!("{backend:?}: timeout during a retry backoff");
    if matches!(backend, Backend::StreamingReference | Backend::RequestResponseReference) {
        println!("skipped: {what}: the reference providers do not play Fault::HttpError and never retry");
        return;
    }
    let baseline = alive();
    let overloaded = Fault::HttpError { status: 529, retry_after: Some(LONG) };
    let script = Script::new().turn(ScriptTurn::text("never reached").with_fault(overloaded));
    // AgentCore's emulator sends no `retry-after`: its backoff is the policy's, made as long.
    let retry = RetryPolicy::default().with_max_retries(3).with_initial(LONG).with_max(LONG).with_jitter(0.0);
    let Setup { provider, options, log, model_requests, remote } = setup(backend, script, retry).await;
    let run = Session::run(&*provider, managed_agents_core::NoTools, options.prompt("go").timeout(RUN_TIMEOUT));
    // Where the emulator records requests, the count is sampled once the refused one has arrived.
    let sample = async {
        let Some(model_requests) = &model_requests else { return };
        let deadline = Instant::now() + PATIENCE;
        while model_requests() == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        counted_while_running(baseline, &what);
    };
    let (result, ()) = tokio::join!(run, sample);
    // The emulator refuses the turn's first request only, so a retry would have been served at once: timing out
    // with no turn played means the run was waiting out the backoff.
    assert!(matches!(result, Err(Error::TimedOut { .. })), "{what}: {result:?}");
    assert!(log.inputs().is_empty(), "{what}: no turn was played");
    if let Some(model_requests) = &model_requests {
        // The one refused request and no retry.
        assert_eq!(model_requests(), 1, "{what}: model requests");
    }
    provider_dropped(provider, baseline, &what).await;
    drop(remote);
}

/// How a live handle is ended.
#[derive(Debug, Clone, Copy)]
enum End {
    Close,
    Drop,
}

async fn end(handle: SessionHandle, how: End) {
    match how {
        End::Close => handle.close().await,
        End::Drop => drop(handle),
    }
}

/// Closing (or dropping) a live handle parked after its request ends the session's task and everything under
/// it (the stream reader of a streaming provider included).
async fn end_parked(backend: Backend, how: End) {
    let what = format!("{backend:?}: {how:?} a parked handle");
    let baseline = alive();
    let script = Script::new().turn(ScriptTurn::text("parked"));
    let Setup { provider, options, remote, .. } = setup(backend, script, quick_retry()).await;
    let mut handle = Session::start(provider, managed_agents_core::NoTools, options.prompt("go").timeout(LONG))
        .await
        .expect("start");
    let result = tokio::time::timeout(PATIENCE, handle.next_result()).await.expect("a result in time");
    assert_eq!(result.expect("the request finished").text, "parked", "{what}");
    counted_while_running(baseline, &what);
    end(handle, how).await;
    settles_to(baseline, &what).await;
    drop(remote);
}

/// Closing (or dropping) a live handle while its tool runs ends the tool task and the session's.
async fn end_during_tool(backend: Backend, how: End) {
    let what = format!("{backend:?}: {how:?} a handle during a tool");
    let baseline = alive();
    let Setup { provider, options, remote, .. } = setup(backend, tool_script(), quick_retry()).await;
    let (handler, mut started, dropped) = stuck_tools();
    let handle = Session::start(provider, handler, options.prompt("go").timeout(LONG)).await.expect("start");
    tool_started(&mut started).await;
    counted_while_running(baseline, &what);
    end(handle, how).await;
    settles_to(baseline, &what).await;
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "{what}: the tool future was dropped");
    drop(remote);
}

/// The count before the setup, and a streaming provider whose stream drops after the turn's first event, with
/// options (prompt included) that wait [`LONG`] before reconnecting; `None` (a printed skip) for a
/// request/response provider, which has no event stream to reconnect.
async fn dropping_stream(backend: Backend, what: &str) -> Option<(usize, Setup)> {
    if !matches!(backend, Backend::StreamingReference | Backend::Claude) {
        println!("skipped: {what}: a request/response provider has no event stream to reconnect");
        return None;
    }
    let baseline = alive();
    let script =
        Script::new().turn(ScriptTurn::chunks(["a", "b", "c"]).with_fault(Fault::DropStreamAfter { events: 1 }));
    let setup = setup(backend, script, quick_retry()).await;
    let reconnect = ReconnectPolicy::default().with_initial(LONG).with_max(LONG).with_jitter(0.0);
    let options = setup.options.clone().prompt("go").reconnect_policy(reconnect);
    Some((baseline, Setup { options, ..setup }))
}

/// Closing (or dropping) a live handle while it waits to reconnect after its stream dropped ends the wait and
/// the session's task (streaming providers: the others have no stream to reconnect).
async fn end_during_reconnect_wait(backend: Backend, how: End) {
    let what = format!("{backend:?}: {how:?} a handle waiting to reconnect");
    let Some((baseline, Setup { provider, options, remote, .. })) = dropping_stream(backend, &what).await else {
        return;
    };
    let options = options.timeout(LONG);
    let mut handle = Session::start(provider, managed_agents_core::NoTools, options).await.expect("start");
    match tokio::time::timeout(PATIENCE, handle.next_notification()).await.expect("a notification in time") {
        Some(Notification::Reconnecting { delay, .. }) => assert_eq!(delay, LONG, "{what}"),
        Some(Notification::Finished(result)) => panic!("{what}: finished without a drop: {:?}", result.text),
        other => panic!("{what}: unexpected {other:?}"),
    }
    counted_while_running(baseline, &what);
    end(handle, how).await;
    settles_to(baseline, &what).await;
    drop(remote);
}

/// Signals each event the session reports to its handler.
struct EventSignal(mpsc::UnboundedSender<()>);

impl Handler for EventSignal {
    fn handle_event(&self, _event: &managed_agents_core::Event, _info: &managed_agents_core::SessionInfo) {
        let _ = self.0.send(());
    }
}

/// A run whose timeout elapses while it waits to reconnect after its stream dropped fails `TimedOut` and ends
/// every task it spawned (streaming providers: the others have no stream to reconnect).
async fn timeout_during_reconnect_wait(backend: Backend) {
    let what = format!("{backend:?}: timeout during a reconnect wait");
    let Some((baseline, Setup { provider, options, log, remote, .. })) = dropping_stream(backend, &what).await else {
        return;
    };
    let options = options.timeout(RUN_TIMEOUT);
    let (events, mut seen) = mpsc::unbounded_channel();
    let run = Session::run(&*provider, EventSignal(events), options);
    let sample = async {
        tokio::time::timeout(PATIENCE, seen.recv()).await.expect("an event in time").expect("an event");
        if backend == Backend::StreamingReference {
            // In memory and with no tool to run, a synchronous run spawns nothing: there is nothing to count.
            println!("{what}: {} tasks alive while running (baseline {baseline})", alive());
        } else {
            counted_while_running(baseline, &what);
        }
    };
    let (result, ()) = tokio::join!(run, sample);
    // A reconnect would have been served the rest of the turn at once: timing out means the run was waiting.
    assert!(matches!(result, Err(Error::TimedOut { .. })), "{what}: {result:?}");
    assert_eq!(log.inputs().len(), 1, "{what}: the kickoff only");
    provider_dropped(provider, baseline, &what).await;
    drop(remote);
}

// ---------------------------------------------------------------------------------------------------------------
// One named test per case and provider

/// One test per `name => case`, each on a multi-threaded runtime of its own.
macro_rules! tests {
    ($($name:ident => $case:expr;)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $case.await;
        }
    )*};
}

/// The cases, one module of tests per provider.
macro_rules! cases {
    ($($module:ident => $backend:expr;)*) => {$(
        mod $module {
            use super::*;

            tests! {
                dropping_run_during_tool_ends_every_task => drop_run_during_tool($backend);
                timeout_during_tool_ends_every_task => timeout_during_tool($backend);
                timeout_during_retry_backoff_ends_every_task => timeout_during_backoff($backend);
                timeout_during_reconnect_wait_ends_every_task => timeout_during_reconnect_wait($backend);
                closing_parked_handle_ends_every_task => end_parked($backend, End::Close);
                dropping_parked_handle_ends_every_task => end_parked($backend, End::Drop);
                closing_handle_during_tool_ends_every_task => end_during_tool($backend, End::Close);
                dropping_handle_during_tool_ends_every_task => end_during_tool($backend, End::Drop);
                closing_handle_during_reconnect_wait_ends_every_task => end_during_reconnect_wait($backend, End::Close);
                dropping_handle_during_reconnect_wait_ends_every_task => end_during_reconnect_wait($backend, End::Drop);
            }
        }
    )*};
}

cases! {
    streaming_reference => Backend::StreamingReference;
    request_response_reference => Backend::RequestResponseReference;
    local => Backend::Local;
    claude => Backend::Claude;
    agentcore => Backend::AgentCore;
}
