//! A small fleet, as a team runs it: three worker processes share one store (SQLite, then PostgreSQL) and drain
//! 50 conversations of 3 messages each against the Claude Managed Agents emulator (in this process), while a
//! worker is killed with SIGKILL every second and started again.
//!
//! Checked from the emulator's log and the store: every message answered, once, in order; every tool result
//! posted exactly once; a tool run again only when the worker of its earlier run was killed or lost that lease (a
//! one-second lease on a loaded machine can lapse; each worker writes down the leases it lost), re-runs counted
//! and reported; no conversation left running.
//!
//! This binary is also the worker: run with `MANAGED_AGENTS_FLEET_ROLE=worker` it drains the store until killed.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Trial};
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptTurn, Scripts};
use managed_agents_core::conversation::{ConversationFilter, ConversationStatus, SessionStore};
use managed_agents_core::inbox::MessageState;
use managed_agents_core::{AgentHandle, tool_fn_with_info};
use managed_agents_host::{Host, Worker, WorkerSettings};
use serde_json::json;
use support::{Kind, Place};

const ROLE_ENV: &str = "MANAGED_AGENTS_FLEET_ROLE";
const STORE_ENV: &str = "MANAGED_AGENTS_FLEET_STORE";
const SQLITE_ENV: &str = "MANAGED_AGENTS_FLEET_SQLITE";
const SCHEMA_ENV: &str = "MANAGED_AGENTS_FLEET_SCHEMA";
const RUNS_ENV: &str = "MANAGED_AGENTS_FLEET_RUNS";
const URL_ENV: &str = "MANAGED_AGENTS_FLEET_BASE_URL";
const AGENT_ENV: &str = "MANAGED_AGENTS_FLEET_AGENT";
const ENVIRONMENT_ENV: &str = "MANAGED_AGENTS_FLEET_ENVIRONMENT";
/// The worker's lease time to live in milliseconds (default [`LEASE_TTL`]).
const TTL_ENV: &str = "MANAGED_AGENTS_FLEET_TTL_MS";
/// Set to `1`: the worker's tool never returns (the benchmark's recovery phase kills it so).
const HANG_ENV: &str = "MANAGED_AGENTS_FLEET_TOOL_HANGS";
/// The benchmark's size (`cargo xtask fleet`): conversations (default 10,000) and worker processes (default 8).
const BENCH_CONVERSATIONS_ENV: &str = "MANAGED_AGENTS_FLEET_BENCH_CONVERSATIONS";
const BENCH_WORKERS_ENV: &str = "MANAGED_AGENTS_FLEET_BENCH_WORKERS";

const WORKERS: usize = 3;
const CONVERSATIONS: usize = 50;
const MESSAGES: usize = 3;
/// A dead worker's conversations wait about this long for its leases to end.
const LEASE_TTL: Duration = Duration::from_millis(1000);
const KILL_EVERY: Duration = Duration::from_secs(1);
/// The whole run's bound (it takes seconds).
const PATIENCE: Duration = Duration::from_secs(240);

fn main() -> std::process::ExitCode {
    if std::env::var(ROLE_ENV).as_deref() == Ok("worker") {
        worker();
        return std::process::ExitCode::SUCCESS;
    }
    let trials = [Kind::Sqlite, Kind::Postgres]
        .into_iter()
        .map(|kind| {
            Trial::ignorable_test(format!("{}::a_fleet_with_a_worker_killed_every_second", kind.label()), move || {
                if let Some(reason) = kind.unavailable() {
                    return Ok(Completion::ignored_with(reason));
                }
                support::runtime().block_on(fleet(Place::isolated(kind)));
                Ok(Completion::Completed)
            })
        })
        .chain([Trial::test("bench::postgres", || {
            if let Some(reason) = Kind::Postgres.unavailable() {
                return Err(reason.into());
            }
            support::runtime().block_on(bench(Place::isolated(Kind::Postgres)));
            Ok(())
        })
        .with_ignored_flag(true)])
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// The tool-call id of message `n` (1-based) of the emulator's session `session`.
fn call_id(session: &str, n: usize) -> String {
    format!("toolu_{session}_{n}")
}

/// Each session: per message, a tool call, then an answer naming the message.
fn scripts() -> Scripts {
    Scripts::per_session(|context| {
        (1..=MESSAGES).fold(Script::new(), |script, n| {
            script
                .turn(ScriptTurn::tool_call(call_id(context.session_id, n), "work", json!({"n": n})))
                .turn(ScriptTurn::text(format!("answer {n}")))
        })
    })
}

struct Fleet {
    place: Place,
    runs: PathBuf,
    base_url: String,
    agent: AgentHandle,
}

impl Fleet {
    /// The emulator, the fleet's settings on `place`, its store, and the host the web side enqueues with.
    async fn start(place: Place) -> (ClaudeEmulator, Self, Arc<dyn SessionStore>, Host) {
        let emulator = ClaudeEmulator::start(scripts()).await.expect("the emulator starts");
        let (provider, agent) = support::claude_provider(&emulator);
        let runs = place.dir.path().join("tool-runs");
        let fleet = Self { base_url: emulator.base_url(), agent: agent.clone(), runs, place };
        let store = fleet.place.open().await;
        let web =
            Host::builder(provider, Arc::clone(&store), managed_agents_core::NoTools).agent(agent).build().unwrap();
        (emulator, fleet, store, web)
    }

    fn spawn(&self) -> Child {
        self.spawn_with(&[])
    }

    fn spawn_with(&self, env: &[(&str, String)]) -> Child {
        let exe = std::env::current_exe().expect("this test binary");
        let mut command = Command::new(exe);
        command
            .env(ROLE_ENV, "worker")
            .env(STORE_ENV, self.place.kind.label())
            .env(SQLITE_ENV, self.place.sqlite_path())
            .env(SCHEMA_ENV, self.place.schema().unwrap_or_default())
            .env(RUNS_ENV, &self.runs)
            .env(URL_ENV, &self.base_url)
            .env(AGENT_ENV, &self.agent.agent_id)
            .env(ENVIRONMENT_ENV, self.agent.environment_id.as_deref().unwrap_or_default())
            .envs(env.iter().map(|(key, value)| (*key, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        command.spawn().expect("spawn a worker")
    }
}

async fn fleet(place: Place) {
    let (emulator, fleet, _, web) = Fleet::start(place).await;

    // The web side enqueues everything up front, three messages per conversation.
    let ids: Vec<String> = (0..CONVERSATIONS).map(|n| format!("fleet-{n:02}")).collect();
    let mut queued = Vec::new();
    for n in 1..=MESSAGES {
        for id in &ids {
            queued.push(web.enqueue(id, format!("{id} message {n}")).await.expect("enqueue"));
        }
    }

    let mut workers: Vec<Child> = (0..WORKERS).map(|_| fleet.spawn()).collect();
    let started = Instant::now();
    let mut kills = 0usize;
    let mut killed = BTreeSet::new();
    let mut next_kill = Instant::now() + KILL_EVERY;
    loop {
        let stats = web.inbox_stats().await.expect("stats");
        if stats.pending == 0 && stats.in_flight == 0 {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "the fleet did not drain the inbox in {PATIENCE:?}: {stats:?}");
        if Instant::now() >= next_kill {
            let victim = fastrand::usize(..WORKERS);
            killed.insert(workers[victim].id());
            workers[victim].kill().expect("SIGKILL a worker");
            workers[victim].wait().expect("reap it");
            workers[victim] = fleet.spawn();
            kills += 1;
            next_kill += KILL_EVERY;
        }
        // Reading the store again, as a dashboard would; not a wait for the outcome.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let elapsed = started.elapsed();
    for mut worker in workers {
        worker.kill().expect("stop a worker");
        worker.wait().expect("reap it");
    }

    // Every message answered, with its own answer.
    let mut failed = Vec::new();
    for message in &queued {
        let done = web.message(message.id).await.expect("message").expect("stored");
        if done.state != MessageState::Answered {
            failed.push(format!("{}: {:?} {:?}", done.text, done.state, done.error));
        }
    }
    assert!(failed.is_empty(), "messages not answered: {failed:#?}");

    // In order, once each, per conversation (from the emulator's requests).
    let mut delivered: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (session, text) in support::posted_user_messages(&emulator) {
        delivered.entry(session).or_default().push(text);
    }
    let mut by_conversation: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for texts in delivered.values() {
        let conversation = texts[0].split(' ').next().expect("an id").to_string();
        by_conversation.entry(conversation).or_default().extend(texts.iter().cloned());
    }
    for id in &ids {
        let expected: Vec<String> = (1..=MESSAGES).map(|n| format!("{id} message {n}")).collect();
        assert_eq!(by_conversation.get(id), Some(&expected), "{id}: each message once, in order");
    }
    assert_eq!(delivered.len(), CONVERSATIONS, "one loop-host session per conversation: {:?}", delivered.keys());

    // Every tool result posted exactly once; a tool re-run only after a kill.
    let posted = emulator.log().tool_results();
    let unique: BTreeSet<&str> = posted.iter().map(|result| result.tool_use_id.as_str()).collect();
    assert_eq!((posted.len(), unique.len()), (CONVERSATIONS * MESSAGES, CONVERSATIONS * MESSAGES), "posted once");
    // Each run but a call's last was cut short by a kill: its worker is one that was killed.
    let mut runs: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut lost_a_lease = BTreeSet::new();
    for line in std::fs::read_to_string(&fleet.runs).unwrap_or_default().lines() {
        let (call, pid) = line.split_once(' ').expect("`call pid`");
        let pid: u32 = pid.parse().expect("a pid");
        match call {
            LOST_LEASE => lost_a_lease.insert(pid),
            call => {
                runs.entry(call.to_string()).or_default().push(pid);
                false
            }
        };
    }
    let mut reruns = 0;
    for (call, pids) in &runs {
        let (_, cut_short) = pids.split_last().expect("a run");
        reruns += cut_short.len();
        let unexplained: Vec<&u32> =
            cut_short.iter().filter(|pid| !killed.contains(pid) && !lost_a_lease.contains(pid)).collect();
        assert!(
            unexplained.is_empty(),
            "{call} ran again after runs by workers never killed that lost no lease: {unexplained:?}"
        );
    }
    assert_eq!(runs.len(), CONVERSATIONS * MESSAGES, "every call ran");

    let running = web.list(&ConversationFilter::new().status(ConversationStatus::Running)).await.expect("list");
    assert!(running.is_empty(), "left running: {running:?}");
    eprintln!(
        "fleet ({}): {} messages in {elapsed:.1?} with {kills} workers killed; {reruns} tool re-runs",
        fleet.place.kind.label(),
        queued.len()
    );
}

/// The worker side: drains the store until killed.
fn worker() {
    let runtime = support::runtime();
    runtime.block_on(async {
        let store = match std::env::var(STORE_ENV).expect("store").as_str() {
            "sqlite" => support::open_sqlite(Path::new(&std::env::var(SQLITE_ENV).expect("path"))).await,
            _ => support::open_postgres_schema(&std::env::var(SCHEMA_ENV).expect("schema")).await,
        };
        let provider = ClaudeManagedAgents::builder()
            .base_url(std::env::var(URL_ENV).expect("base url"))
            .api_key("test-key")
            .build()
            .expect("provider");
        let agent = AgentHandle {
            agent_id: std::env::var(AGENT_ENV).expect("agent"),
            environment_id: Some(std::env::var(ENVIRONMENT_ENV).expect("environment")),
        };
        let runs = PathBuf::from(std::env::var(RUNS_ENV).expect("runs file"));
        let hangs = std::env::var(HANG_ENV).as_deref() == Ok("1");
        let handler = tool_fn_with_info(move |call, _| {
            let runs = runs.clone();
            async move {
                if hangs {
                    std::future::pending::<()>().await;
                }
                use std::io::Write;
                // One line per run, written as it starts (in one append, so that no kill or other run tears
                // it): the call and the worker running it.
                let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&runs)?;
                file.write_all(format!("{} {}\n", call.id, std::process::id()).as_bytes())?;
                Ok(format!("work {} done", call.input["n"]))
            }
        });
        let ttl = std::env::var(TTL_ENV).ok().and_then(|ms| ms.parse().ok()).map_or(LEASE_TTL, Duration::from_millis);
        let host = Host::builder(Arc::new(provider), store, handler).agent(agent).lease_ttl(ttl).build().expect("host");
        let worker = Worker::new(host, WorkerSettings::new().idle_poll(Duration::from_millis(50))).expect("worker");
        let runs = PathBuf::from(std::env::var(RUNS_ENV).expect("runs file"));
        // Whenever this worker has lost a lease (a lapse under load, not a kill), the runs file says so.
        let note_lost_leases = async {
            let mut noted = 0;
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let lost = worker.stats().leases_lost;
                if lost > noted {
                    noted = lost;
                    use std::io::Write;
                    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&runs).expect("runs");
                    file.write_all(format!("{LOST_LEASE} {}\n", std::process::id()).as_bytes()).expect("noted");
                }
            }
        };
        tokio::select! {
            _ = worker.run_until(std::future::pending()) => {}
            () = note_lost_leases => {}
        }
    });
}

/// The first word of a runs-file line saying that the worker of its pid lost a lease.
const LOST_LEASE: &str = "lost-a-lease";

/// The benchmark (`cargo xtask fleet`; ignored in `cargo test`): [`BENCH_CONVERSATIONS_ENV`] conversations of one
/// message each (a tool call, then an answer) drained by [`BENCH_WORKERS_ENV`] worker processes on PostgreSQL.
/// Reports the throughput, the latency of the claim statement while the fleet drains (sampled by the driver:
/// claim one, give it back), and the recovery time after a kill: a worker holding 8 conversations whose tools
/// never return is killed, and the time until another worker has answered all 8 is measured (mostly the lease's
/// time to live, 5 s here). Prints a JSON line for `docs/performance.md`.
async fn bench(place: Place) {
    const BENCH_TTL: Duration = Duration::from_secs(5);
    let count = |name: &str, default: usize| std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    let (conversations, workers) = (count(BENCH_CONVERSATIONS_ENV, 10_000), count(BENCH_WORKERS_ENV, 8));
    let ttl = (TTL_ENV, BENCH_TTL.as_millis().to_string());
    // The emulator serves for as long as it is held.
    let (_emulator, fleet, store, web) = Fleet::start(place).await;

    let enqueue_started = Instant::now();
    for n in 0..conversations {
        web.enqueue(&format!("bench-{n:05}"), format!("bench-{n:05} message 1")).await.expect("enqueue");
    }
    let enqueue = enqueue_started.elapsed();

    let started = Instant::now();
    let mut fleet_workers: Vec<Child> = (0..workers).map(|_| fleet.spawn_with(std::slice::from_ref(&ttl))).collect();
    let inbox = store.inbox().expect("an inbox");
    let mut claim_latencies = Vec::new();
    loop {
        let stats = web.inbox_stats().await.expect("stats");
        if stats.pending == 0 && stats.in_flight == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(3600), "not drained in an hour: {stats:?}");
        // A claim as the workers make them, given back at once; then a pause (this is a sample, not a wait).
        let asked = Instant::now();
        let claimed = inbox.claim("bench-probe", Duration::from_secs(60), 1).await.expect("claim");
        claim_latencies.push(asked.elapsed());
        for lease in claimed {
            store.release(&lease).await.expect("give it back");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drained = started.elapsed();
    for worker in &mut fleet_workers {
        worker.kill().expect("stop a worker");
        worker.wait().expect("reap it");
    }
    claim_latencies.sort();
    let percentile = |p: usize| {
        let at = (claim_latencies.len() * p / 100).min(claim_latencies.len().saturating_sub(1));
        claim_latencies.get(at).copied().unwrap_or_default()
    };

    // Recovery: a worker takes 8 conversations, its tools hang, it is killed; a fresh worker finishes them.
    let mut hung = Vec::new();
    for n in 0..8 {
        hung.push(web.enqueue(&format!("recover-{n}"), format!("recover-{n} message 1")).await.expect("enqueue"));
    }
    let mut victim = fleet.spawn_with(&[ttl.clone(), (HANG_ENV, "1".into())]);
    loop {
        let stats = web.inbox_stats().await.expect("stats");
        if stats.pending == 0 && stats.in_flight == 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    victim.kill().expect("SIGKILL the worker");
    victim.wait().expect("reap it");
    let killed = Instant::now();
    let mut rescuer = fleet.spawn_with(std::slice::from_ref(&ttl));
    for message in &hung {
        let done = tokio::time::timeout(Duration::from_secs(120), web.wait(message.id)).await.expect("in time");
        assert_eq!(done.expect("wait").state, MessageState::Answered);
    }
    let recovery = killed.elapsed();
    rescuer.kill().expect("stop");
    rescuer.wait().expect("reap");

    let answered = web.inbox_stats().await.expect("stats").answered;
    assert_eq!(answered, u64::try_from(conversations + 8).unwrap_or(u64::MAX), "every message answered");
    let throughput = conversations as f64 / drained.as_secs_f64();
    let report = json!({
        "conversations": conversations, "workers": workers, "store": "postgres",
        "enqueue_s": enqueue.as_secs_f64(), "drain_s": drained.as_secs_f64(), "messages_per_s": throughput,
        "claim_p50_ms": percentile(50).as_secs_f64() * 1000.0, "claim_p99_ms": percentile(99).as_secs_f64() * 1000.0,
        "claim_samples": claim_latencies.len(),
        "lease_ttl_s": BENCH_TTL.as_secs_f64(), "recovery_s": recovery.as_secs_f64(),
    });
    println!("FLEET-BENCH {report}");
    eprintln!(
        "fleet bench: {conversations} conversations, {workers} workers on PostgreSQL: {throughput:.0} messages/s \
         ({drained:.1?}); claim p50 {:.1?} p99 {:.1?} ({} samples); recovery after a kill {recovery:.1?} \
         (lease {BENCH_TTL:?})",
        percentile(50),
        percentile(99),
        claim_latencies.len()
    );
}
