//! Workers that die: a real worker process drives a host conversation over a durable store against the Claude
//! Managed Agents emulator (in this process), and is killed with SIGKILL
//!
//! * (a) while its tool runs (the tool writes a marker, then blocks),
//! * (b) after the tool finished and its answer was recorded in the ledger, before it was posted (the worker's
//!   store writes a marker after `record`, then blocks),
//! * (c) while a call waits for approval (the worker's permission defers; its store writes a marker after
//!   storing the request, then blocks).
//!
//! A fresh worker process resumes each to its end ((c): after a third process approved the call through the
//! host). From the emulator's request log: every tool result is posted exactly once; (b) the tool did not run
//! again (runs are counted in a file); (c) the result posted is the one allowed after the restart.
//!
//! This binary is also the worker: run with `MANAGED_AGENTS_HOST_CRASH_ROLE` set, it plays that role instead
//! of running the tests. Tests are `<store>::<case>`; PostgreSQL ones are ignored, with the reason, without a
//! database.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::{Arguments, Completion, Trial};
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::conversation::{ConversationStatus, SessionStore};
use managed_agents_core::{AgentHandle, ToolResult, tool_fn};
use managed_agents_host::{BusyPolicy, Host};
use serde_json::json;
use support::{Kind, Place, Tapped, Taps, unique};

const ROLE_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_ROLE";
const CASE_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_CASE";
const STORE_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_STORE";
const SQLITE_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_SQLITE";
const DIR_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_DIR";
const URL_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_BASE_URL";
const AGENT_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_AGENT";
const ENVIRONMENT_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_ENVIRONMENT";
const ID_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_EXTERNAL_ID";
const CALL_ENV: &str = "MANAGED_AGENTS_HOST_CRASH_CALL_ID";
/// Marks what a worker prints for the test.
const MARK: &str = "crash-worker:";
/// The dying worker's lease lives this long: the next worker waits about this long for it.
const SHORT_TTL: Duration = Duration::from_millis(1500);
/// How long the test waits for a worker to reach the point where it is killed, or to finish.
const PATIENCE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// (a) killed while the tool runs.
    ToolRunning,
    /// (b) killed after the answer was recorded, before it was posted.
    RecordedNotPosted,
    /// (c) killed while the call waits for approval.
    AwaitingApproval,
}

impl Case {
    const ALL: [Case; 3] = [Case::ToolRunning, Case::RecordedNotPosted, Case::AwaitingApproval];

    fn name(self) -> &'static str {
        match self {
            Self::ToolRunning => "a_killed_while_the_tool_runs",
            Self::RecordedNotPosted => "b_killed_after_the_answer_was_recorded_before_it_was_posted",
            Self::AwaitingApproval => "c_killed_while_a_call_waits_for_approval",
        }
    }

    fn parse(name: &str) -> Self {
        Self::ALL.into_iter().find(|case| case.name() == name).expect("a known case")
    }

    /// The file the dying worker writes where it stops.
    fn marker(self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.reached", self.name()))
    }
}

fn main() -> std::process::ExitCode {
    if let Ok(role) = std::env::var(ROLE_ENV) {
        worker(&role);
        return std::process::ExitCode::SUCCESS;
    }
    let mut trials = Vec::new();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        for case in Case::ALL {
            trials.push(Trial::ignorable_test(format!("{}::{}", kind.label(), case.name()), move || {
                if let Some(reason) = kind.unavailable() {
                    return Ok(Completion::ignored_with(reason));
                }
                support::runtime().block_on(crash_and_resume(Place::new(kind), case));
                Ok(Completion::Completed)
            }));
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// Everything a worker needs to find the conversation.
struct World {
    place: Place,
    case: Case,
    base_url: String,
    agent: AgentHandle,
    external_id: String,
    call_id: String,
}

impl World {
    fn spawn(&self, role: &str) -> Worker {
        let exe = std::env::current_exe().expect("this test binary");
        let mut command = Command::new(exe);
        command
            .env(ROLE_ENV, role)
            .env(CASE_ENV, self.case.name())
            .env(STORE_ENV, self.place.kind.label())
            .env(SQLITE_ENV, self.place.sqlite_path())
            .env(DIR_ENV, self.place.dir.path())
            .env(URL_ENV, &self.base_url)
            .env(AGENT_ENV, &self.agent.agent_id)
            .env(ENVIRONMENT_ENV, self.agent.environment_id.as_deref().unwrap_or_default())
            .env(ID_ENV, &self.external_id)
            .env(CALL_ENV, &self.call_id)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("spawn a worker");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Worker { child, stdout: Some(stdout) }
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(runs_file(self.place.dir.path())).map(|text| text.lines().count()).unwrap_or(0)
    }
}

fn runs_file(dir: &Path) -> PathBuf {
    dir.join("tool-runs")
}

struct Worker {
    child: Child,
    stdout: Option<BufReader<std::process::ChildStdout>>,
}

impl Worker {
    /// Kills the worker with SIGKILL and reaps it.
    fn kill(mut self) {
        self.child.kill().expect("SIGKILL the worker");
        self.child.wait().expect("reap the worker");
    }

    /// Waits for the worker to end; its report (the line it marked), and whether it succeeded.
    async fn finish(mut self) -> String {
        let stdout = self.stdout.take().expect("stdout");
        let report = tokio::task::spawn_blocking(move || {
            let mut report = None;
            for line in stdout.lines() {
                let line = line.expect("read the worker's output");
                if let Some((_, message)) = line.split_once(MARK) {
                    report = Some(message.to_string());
                }
            }
            report
        });
        let report =
            tokio::time::timeout(PATIENCE, report).await.expect("the worker finished in time").expect("reader");
        let status = tokio::task::spawn_blocking(move || self.child.wait()).await.expect("waiter").expect("wait");
        assert!(status.success(), "the worker failed: {status}");
        report.expect("the worker reported")
    }
}

async fn crash_and_resume(place: Place, case: Case) {
    let call_id = support::call_id("toolu_work");
    let script = Script::new()
        .turn(ScriptTurn::tool_call(&call_id, "work", json!({"job": 7})))
        .turn(ScriptTurn::text("all done"));
    let emulator = ClaudeEmulator::start(script).await.expect("the emulator starts");
    let (agent_id, environment_id) = emulator.seed_agent();
    let world = World {
        place,
        case,
        base_url: emulator.base_url(),
        agent: AgentHandle { agent_id, environment_id: Some(environment_id) },
        external_id: unique("crash"),
        call_id: call_id.clone(),
    };

    // The first worker gets as far as the case says, and is killed there.
    let dying = world.spawn("dying");
    let marker = case.marker(world.place.dir.path());
    support::wait_until("the worker to reach the point where it dies", PATIENCE, || {
        let reached = marker.exists();
        async move { reached }
    })
    .await;
    let store = world.place.open().await;
    if case == Case::AwaitingApproval {
        let approvals = store.approvals(&world.external_id).await.expect("approvals");
        assert_eq!(approvals.len(), 1, "the approval request is stored before the worker dies");
    }
    dying.kill();
    let record = store.load(&world.external_id).await.expect("load").expect("stored");
    assert_eq!(record.status, ConversationStatus::Running, "a dead worker leaves its conversation running");
    assert!(record.session_id.is_some(), "the session id was stored when the session opened");
    assert!(emulator.log().tool_results().is_empty(), "nothing was posted before the worker died");
    let runs_before = world.runs();

    if case == Case::AwaitingApproval {
        // A person approves from yet another process.
        assert_eq!(world.spawn("approver").finish().await, "approved");
    }
    let report = world.spawn("resumer").finish().await;
    assert_eq!(report, "finished: all done");

    let posted = emulator.log().tool_results();
    assert_eq!(posted.len(), 1, "every tool result is posted exactly once: {posted:?}");
    match case {
        Case::ToolRunning => {
            assert_eq!(runs_before, 1, "the dying worker started the tool");
            assert_eq!(world.runs(), 2, "a tool whose run was cut short runs again (at least once)");
            assert_eq!(posted[0], ToolResult::ok(&call_id, "job 7 done by resumer"));
        }
        Case::RecordedNotPosted => {
            assert_eq!(world.runs(), 1, "the recorded answer is posted; the tool does not run again");
            assert_eq!(posted[0], ToolResult::ok(&call_id, "job 7 done by dying"), "the recorded answer");
        }
        Case::AwaitingApproval => {
            assert_eq!(runs_before, 0, "nothing ran before the approval");
            assert_eq!(world.runs(), 1);
            assert_eq!(
                posted[0],
                ToolResult::ok(&call_id, "job 7 done by resumer"),
                "the call allowed after the restart"
            );
        }
    }
    let record = store.load(&world.external_id).await.expect("load").expect("stored");
    assert_eq!(record.status, ConversationStatus::Idle);
    assert!(store.approvals(&world.external_id).await.expect("approvals").is_empty());
}

/// The worker side: `dying`, `approver` or `resumer`.
fn worker(role: &str) {
    let runtime = support::runtime();
    let case = Case::parse(&std::env::var(CASE_ENV).expect("case"));
    let kind = match std::env::var(STORE_ENV).expect("store").as_str() {
        "sqlite" => Kind::Sqlite,
        "postgres" => Kind::Postgres,
        other => panic!("no store {other}"),
    };
    let dir = PathBuf::from(std::env::var(DIR_ENV).expect("dir"));
    let external_id = std::env::var(ID_ENV).expect("external id");
    let call_id = std::env::var(CALL_ENV).expect("call id");
    let report = runtime.block_on(async {
        let store = match kind {
            Kind::Sqlite => support::open_sqlite(Path::new(&std::env::var(SQLITE_ENV).expect("path"))).await,
            _ => support::open_postgres().await,
        };
        let mut taps = Taps::default();
        if role == "dying" {
            match case {
                Case::ToolRunning => {}
                Case::RecordedNotPosted => taps.stall_after_record = Some(case.marker(&dir)),
                Case::AwaitingApproval => taps.stall_after_put_approval = Some(case.marker(&dir)),
            }
        }
        let host = worker_host(role, case, &dir, Tapped::new(store, taps));
        match role {
            "approver" => {
                host.approve(&external_id, &call_id).await.expect("approve");
                "approved".to_string()
            }
            "dying" => {
                let outcome = host.send(&external_id, "start the job").await;
                panic!("the dying worker was meant to stop before its request ended: {outcome:?}")
            }
            _ => {
                let result = host.resume(&external_id).await.expect("the conversation resumes to its end");
                format!("finished: {}", result.text)
            }
        }
    });
    println!("{MARK}{report}");
}

fn worker_host(role: &str, case: Case, dir: &Path, store: Tapped) -> Host {
    let provider = ClaudeManagedAgents::builder()
        .base_url(std::env::var(URL_ENV).expect("base url"))
        .api_key("test-key")
        .build()
        .expect("provider");
    let agent = AgentHandle {
        agent_id: std::env::var(AGENT_ENV).expect("agent"),
        environment_id: Some(std::env::var(ENVIRONMENT_ENV).expect("environment")),
    };
    let (runs, marker, who) = (runs_file(dir), case.marker(dir), role.to_string());
    let stall_in_tool = role == "dying" && case == Case::ToolRunning;
    let handler = tool_fn(move |_, input| {
        let (runs, marker, who) = (runs.clone(), marker.clone(), who.clone());
        async move {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&runs)?;
            writeln!(file, "{who}")?;
            file.sync_all()?;
            if stall_in_tool {
                std::fs::write(&marker, b"tool running")?;
                std::future::pending::<()>().await;
            }
            Ok(format!("job {} done by {who}", input["job"]))
        }
    });
    // The permission defers the call when the case is about approvals, in every worker: the resumer only runs
    // it because a person allowed it.
    let defer = case == Case::AwaitingApproval;
    let permission = permission_fn(move |_| async move { if defer { Decision::Defer } else { Decision::Allow } });
    Host::builder(Arc::new(provider), store, handler)
        .agent(agent)
        .permission(permission)
        .holder(format!("{role}-{}", std::process::id()))
        .lease_ttl(SHORT_TTL)
        .busy(BusyPolicy::Wait { max: PATIENCE })
        .build()
        .expect("host")
}
