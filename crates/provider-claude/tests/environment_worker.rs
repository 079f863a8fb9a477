//! The environment worker against the emulator's self-hosted environments: a session whose model uses every
//! built-in tool runs to its end with the application on one side and the worker on the other; a worker that
//! dies mid-call is replaced once its lease lapses (every result posted once); a stalled heartbeat ends the run
//! and leaves the item to the queue; a stop asked from outside ends it; a shutdown drains within its deadline or
//! abandons what still runs; a call that asks first runs once the application allows it.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_claude::environment::{
    EnvironmentWorker, EnvironmentWorkerBuilder, EnvironmentWorkerStats, WorkEnd, WorkReport,
};
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::approval::{AllowAll, Decision, permission_fn};
use managed_agents_core::http::server::{ServerOptions, ServerTls};
use managed_agents_core::http::{Method, StatusCode};
use managed_agents_core::{HttpOptions, NoTools, Session, SessionOptions, SessionResult};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A bash command that says it started, then waits until a file `go` exists in its working directory.
const HOLD: &str = "touch started; while [ ! -f go ]; do sleep 0.02; done; echo released";

struct Setup {
    emulator: ClaudeEmulator,
    app: Arc<ClaudeManagedAgents>,
    agent_id: String,
    environment_id: String,
    key: String,
}

impl Setup {
    /// An emulator playing `script` with leases of `ttl`, an agent whose built-in tools are allowed (`write`
    /// asks first when `ask_write`), and a self-hosted environment.
    async fn start(script: Script, ttl: Duration, ask_write: bool) -> Self {
        Self::start_with_skills(script, ttl, ask_write, json!([])).await
    }

    async fn start_with_skills(script: Script, ttl: Duration, ask_write: bool, skills: Value) -> Self {
        Self::start_on(script, ttl, ask_write, skills, ServerOptions::default()).await
    }

    /// Like [`Setup::start_with_skills`], the emulator serving as `server` says (the application and the worker
    /// trust its certificate over TLS).
    async fn start_on(script: Script, ttl: Duration, ask_write: bool, skills: Value, server: ServerOptions) -> Self {
        let options = EmulatorOptions::default().with_work_lease_ttl(ttl).with_server(server);
        let emulator = ClaudeEmulator::start_with(script, options).await.expect("emulator");
        let app = emulator.provider_builder().build().unwrap();
        let mut toolset = json!({"type": "agent_toolset_20260401",
            "default_config": {"permission_policy": {"type": "always_allow"}}});
        if ask_write {
            toolset["configs"] = json!([{"name": "write", "permission_policy": {"type": "always_ask"}}]);
        }
        let body = json!({"name": "worker-test", "model": "claude-sonnet-4-6", "tools": [toolset], "skills": skills});
        let agent = app.client().create_agent(body).await.unwrap();
        let environment = managed_agents_claude::provision::environment_config(
            &managed_agents_claude::provision::self_hosted(managed_agents_core::EnvironmentSpec::new()),
        );
        let environment =
            app.client().create_environment(json!({"name": "sandbox", "config": environment})).await.unwrap();
        let environment_id = environment["id"].as_str().unwrap().to_string();
        let key = emulator.environment_key(&environment_id).expect("a self-hosted environment has a key");
        Self { agent_id: agent["id"].as_str().unwrap().to_string(), environment_id, key, emulator, app: Arc::new(app) }
    }

    fn worker(&self, workdir: &Path) -> EnvironmentWorkerBuilder {
        let builder = EnvironmentWorker::builder(&self.environment_id, self.key.clone())
            .base_url(self.emulator.base_url())
            .workdir(workdir)
            .max_idle(Some(Duration::from_millis(300)))
            .idle_poll(Duration::from_millis(20));
        match self.emulator.http_client(&HttpOptions::new()) {
            Some(client) => builder.http_client(client),
            None => builder,
        }
    }

    /// Runs the application's request on a task of its own.
    fn run_app(&self, options: SessionOptions) -> JoinHandle<Result<SessionResult, managed_agents_core::Error>> {
        let app = self.app.clone();
        let options = options.agent_id(&self.agent_id).environment_id(&self.environment_id).prompt("go");
        tokio::spawn(async move { Session::run(&*app, NoTools, options).await })
    }

    /// The environment's one work item, once there is one.
    async fn item(&self) -> Value {
        eventually(|| self.emulator.work_items(&self.environment_id).into_iter().next()).await
    }

    /// Each `user.tool_result` of the session, by call id.
    fn result_ids(&self, session_id: &str) -> Vec<String> {
        let events = self.emulator.tool_result_events(session_id);
        events.iter().map(|e| e["tool_use_id"].as_str().unwrap().to_string()).collect()
    }
}

/// Runs `worker` on a task of its own until the returned sender fires (or is dropped).
fn serve_until_stopped(
    worker: &EnvironmentWorker,
) -> (oneshot::Sender<()>, JoinHandle<Result<EnvironmentWorkerStats, managed_agents_core::Error>>) {
    let (stop, stopped) = oneshot::channel::<()>();
    let worker = worker.clone();
    let serving = tokio::spawn(async move {
        worker
            .run_until(async {
                let _ = stopped.await;
            })
            .await
    });
    (stop, serving)
}

/// `builder` with its reports collected.
fn collecting(builder: EnvironmentWorkerBuilder) -> (EnvironmentWorkerBuilder, Arc<Mutex<Vec<WorkReport>>>) {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    (builder.on_report(move |report| sink.lock().unwrap().push(report.clone())), reports)
}

/// Waits (a bounded while) until `probe` finds something.
async fn eventually<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(found) = probe() {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the awaited state never came")
}

fn host(id: &str, name: &str, input: Value, expect: &str) -> ScriptToolCall {
    ScriptToolCall::host(id, name, input).expecting(expect)
}

fn every_tool_script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_calls([host(
            "toolu_write",
            "write",
            json!({"file_path": "notes/a.txt", "content": "hello world\nsecond line\n"}),
            "wrote",
        )]))
        .turn(ScriptTurn::tool_calls([
            host("toolu_read", "read", json!({"file_path": "notes/a.txt"}), "hello world"),
            host("toolu_glob", "glob", json!({"pattern": "**/*.txt"}), "a.txt"),
            host("toolu_grep", "grep", json!({"pattern": "second", "path": "notes"}), "second line"),
        ]))
        .turn(ScriptTurn::tool_calls([host(
            "toolu_edit",
            "edit",
            json!({"file_path": "notes/a.txt", "old_string": "world", "new_string": "there"}),
            "edited",
        )]))
        .turn(ScriptTurn::tool_calls([host(
            "toolu_bash",
            "bash",
            json!({"command": "cat notes/a.txt"}),
            "hello there",
        )]))
        .turn(ScriptTurn::text("done"))
}

#[tokio::test]
async fn a_session_using_every_built_in_tool_runs_to_its_end_between_the_application_and_the_worker() {
    let setup = Setup::start(every_tool_script(), Duration::from_secs(5), false).await;
    let workdir = tempfile::tempdir().unwrap();
    let (builder, reports) = collecting(setup.worker(workdir.path()));
    let worker = builder.build().unwrap();
    let (stop, serving) = serve_until_stopped(&worker);
    let result = setup.run_app(SessionOptions::new()).await.unwrap().expect("the application's request");
    assert_eq!(result.text, "done");
    assert_eq!(result.server_tool_uses.len(), 6, "the application saw the worker's calls");
    // Shutdown now: the item finishes within the deadline (its session idles past max_idle), and is stopped.
    stop.send(()).unwrap();
    let stats = serving.await.unwrap().expect("the worker ran");
    let reports = reports.lock().unwrap().clone();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].end, WorkEnd::Idle);
    assert_eq!(reports[0].tool_calls, 6);
    let session_id = reports[0].session_id.clone();
    assert!(setup.emulator.unexpected_tool_results().is_empty(), "{:?}", setup.emulator.unexpected_tool_results());
    let ids = setup.result_ids(&session_id);
    assert_eq!(ids, ["toolu_write", "toolu_read", "toolu_glob", "toolu_grep", "toolu_edit", "toolu_bash"]);
    assert_eq!(std::fs::read_to_string(workdir.path().join("notes/a.txt")).unwrap(), "hello there\nsecond line\n");
    let item = setup.item().await;
    assert_eq!(item["state"], "stopped");
    assert_eq!(stats, worker.stats());
    assert_eq!((stats.claimed, stats.finished, stats.tool_calls), (1, 1, 6));
}

fn hold_script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_calls([host("toolu_one", "bash", json!({"command": "echo one"}), "one")]))
        .turn(ScriptTurn::tool_calls([host("toolu_hold", "bash", json!({"command": HOLD}), "released")]))
        .turn(ScriptTurn::text("done"))
}

#[tokio::test]
async fn a_worker_serves_its_session_over_tls_with_the_client_it_is_given() {
    let server = ServerOptions::default().tls(Some(ServerTls::Http2AndHttp1));
    let setup = Setup::start_on(every_tool_script(), Duration::from_secs(5), false, json!([]), server).await;
    assert!(setup.emulator.base_url().starts_with("https://"));
    let workdir = tempfile::tempdir().unwrap();
    let (builder, reports) = collecting(setup.worker(workdir.path()));
    let worker = builder.build().unwrap();
    let (stop, serving) = serve_until_stopped(&worker);
    let result = setup.run_app(SessionOptions::new()).await.unwrap().expect("the application's request");
    assert_eq!((result.text.as_str(), result.server_tool_uses.len()), ("done", 6));
    stop.send(()).unwrap();
    serving.await.unwrap().expect("the worker ran");
    assert_eq!(reports.lock().unwrap().iter().map(|report| report.end.clone()).collect::<Vec<_>>(), [WorkEnd::Idle]);
}

#[tokio::test]
async fn a_worker_that_dies_mid_call_is_replaced_once_its_lease_lapses_and_each_result_is_posted_once() {
    let setup = Setup::start(hold_script(), Duration::from_secs(2), false).await;
    let app = setup.run_app(SessionOptions::new());
    let first_dir = tempfile::tempdir().unwrap();
    let first = setup.worker(first_dir.path()).build().unwrap();
    let dying = tokio::spawn(async move { first.run_until(std::future::pending()).await });
    // The first worker answered `echo one` and is inside the held call: it dies (its tasks and shell with it).
    eventually(|| first_dir.path().join("started").exists().then_some(())).await;
    dying.abort();
    let _ = dying.await;
    let second_dir = tempfile::tempdir().unwrap();
    std::fs::write(second_dir.path().join("go"), "").unwrap();
    let second = setup.worker(second_dir.path()).build().unwrap();
    // The item comes back when the dead worker's lease lapses; the second worker claims it and re-runs only the
    // call nobody answered.
    let report = loop {
        if let Some(report) = second.run_one().await.unwrap() {
            break report;
        }
    };
    let result = app.await.unwrap().expect("the application's request");
    assert_eq!(result.text, "done");
    assert_eq!(report.end, WorkEnd::Idle);
    assert_eq!(report.tool_calls, 1, "only the held call was run again");
    assert_eq!(setup.result_ids(&report.session_id), ["toolu_one", "toolu_hold"], "each result once");
    assert!(setup.emulator.unexpected_tool_results().is_empty(), "{:?}", setup.emulator.unexpected_tool_results());
}

/// A worker serving (`run_one`) a session whose one call is held (`HOLD`), from the moment the call started.
struct Holding {
    setup: Setup,
    serving: JoinHandle<Result<Option<WorkReport>, managed_agents_core::Error>>,
    work_id: String,
    _workdir: tempfile::TempDir,
}

impl Holding {
    async fn start(ttl: Duration) -> Self {
        let script = Script::new().turn(ScriptTurn::tool_calls([host(
            "toolu_hold",
            "bash",
            json!({"command": HOLD}),
            "released",
        )]));
        let setup = Setup::start(script, ttl, false).await;
        drop(setup.run_app(SessionOptions::new()));
        let workdir = tempfile::tempdir().unwrap();
        let worker = setup.worker(workdir.path()).build().unwrap();
        let serving = tokio::spawn(async move { worker.run_one().await });
        eventually(|| workdir.path().join("started").exists().then_some(())).await;
        let work_id = setup.item().await["id"].as_str().unwrap().to_string();
        Self { setup, serving, work_id, _workdir: workdir }
    }

    async fn report(self) -> (Setup, WorkReport) {
        let report = self.serving.await.unwrap().unwrap().expect("an item was served");
        (self.setup, report)
    }
}

#[tokio::test]
async fn a_stalled_heartbeat_ends_the_run_and_leaves_the_item_to_the_queue() {
    let holding = Holding::start(Duration::from_secs(2)).await;
    let path = format!("/v1/environments/{}/work/{}/heartbeat", holding.setup.environment_id, holding.work_id);
    holding.setup.emulator.fail_requests(Method::POST, &path, StatusCode::SERVICE_UNAVAILABLE, 1000);
    let (setup, report) = holding.report().await;
    assert_eq!(report.end, WorkEnd::LeaseLost);
    // Not stopped by the worker that lost it: the queue offers it again.
    let item = eventually(|| {
        let item = setup.emulator.work_items(&setup.environment_id).into_iter().next()?;
        (item["state"] == "queued").then_some(item)
    })
    .await;
    assert!(item["stopped_at"].is_null(), "{item}");
}

#[tokio::test]
async fn a_stop_asked_from_outside_ends_the_run() {
    let holding = Holding::start(Duration::from_secs(2)).await;
    let environment = holding.setup.environment_id.clone();
    holding.setup.app.client().stop_work(&environment, &holding.work_id, false).await.unwrap();
    let (setup, report) = holding.report().await;
    assert_eq!(report.end, WorkEnd::StopRequested);
    assert_eq!(setup.item().await["state"], "stopped");
}

#[tokio::test]
async fn a_shutdown_past_its_deadline_abandons_the_running_item_without_stopping_it() {
    let setup = Setup::start(
        Script::new().turn(ScriptTurn::tool_calls([host("toolu_hold", "bash", json!({"command": HOLD}), "released")])),
        Duration::from_secs(30),
        false,
    )
    .await;
    let _app = setup.run_app(SessionOptions::new());
    let workdir = tempfile::tempdir().unwrap();
    let (builder, reports) = collecting(setup.worker(workdir.path()).shutdown_deadline(Duration::from_millis(100)));
    let worker = builder.build().unwrap();
    let started = workdir.path().join("started");
    let stats = worker
        .run_until(async {
            eventually(|| started.exists().then_some(())).await;
        })
        .await
        .unwrap();
    assert_eq!(stats.released, 1);
    let reports = reports.lock().unwrap().clone();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].end, WorkEnd::Abandoned);
    let item = setup.item().await;
    assert_eq!(item["state"], "active", "left for another worker: {item}");
}

#[tokio::test]
async fn a_call_that_asks_first_runs_once_the_application_allows_it() {
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([host(
            "toolu_write",
            "write",
            json!({"file_path": "a.txt", "content": "x"}),
            "wrote",
        )]))
        .turn(ScriptTurn::text("done"));
    let setup = Setup::start(script, Duration::from_secs(5), true).await;
    let workdir = tempfile::tempdir().unwrap();
    let worker = setup.worker(workdir.path()).build().unwrap();
    let app = setup.run_app(SessionOptions::new().permission(AllowAll));
    let report = loop {
        if let Some(report) = worker.run_one().await.unwrap() {
            break report;
        }
    };
    let result = app.await.unwrap().expect("the application's request");
    assert_eq!(result.text, "done");
    assert_eq!(report.tool_calls, 1);
    assert_eq!(std::fs::read_to_string(workdir.path().join("a.txt")).unwrap(), "x");
    assert!(setup.emulator.unexpected_tool_results().is_empty(), "{:?}", setup.emulator.unexpected_tool_results());
}

/// A tar archive of `files`, wrapped in one directory as skill bundles are.
fn skill_archive(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, format!("pdf/{name}"), text.as_bytes()).unwrap();
    }
    builder.into_inner().unwrap()
}

#[tokio::test]
async fn the_agents_skills_are_in_the_working_directory_before_its_calls_run() {
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([host(
            "toolu_cat",
            "bash",
            json!({"command": "cat skills/pdf/SKILL.md"}),
            "# PDF skill",
        )]))
        .turn(ScriptTurn::text("done"));
    let skills = json!([{"type": "custom", "skill_id": "skill_pdf", "version": "latest"}]);
    let setup = Setup::start_with_skills(script, Duration::from_secs(5), false, skills).await;
    setup.emulator.insert_skill("skill_pdf", "pdf", skill_archive(&[("SKILL.md", "# old")]));
    setup.emulator.insert_skill("skill_pdf", "pdf", skill_archive(&[("SKILL.md", "# PDF skill"), ("run.sh", "x")]));
    let workdir = tempfile::tempdir().unwrap();
    let worker = setup.worker(workdir.path()).build().unwrap();
    let app = setup.run_app(SessionOptions::new());
    let report = loop {
        if let Some(report) = worker.run_one().await.unwrap() {
            break report;
        }
    };
    assert_eq!(app.await.unwrap().expect("the application's request").text, "done");
    assert_eq!(report.tool_calls, 1);
    assert!(setup.emulator.unexpected_tool_results().is_empty(), "{:?}", setup.emulator.unexpected_tool_results());
    // The call read the newest version, unwrapped (its expectation held); the skill goes with the item.
    assert!(!workdir.path().join("skills/pdf").exists(), "removed when the item ended");
}

/// A custom tool of the worker's own.
struct Lookup;

#[managed_agents_core::async_trait]
impl managed_agents_core::tools::Tool for Lookup {
    type Args = Value;

    fn name(&self) -> &str {
        "lookup"
    }

    fn description(&self) -> &str {
        "Looks a word up."
    }

    async fn call(
        &self,
        args: Value,
        _: &managed_agents_core::SessionInfo,
    ) -> Result<managed_agents_core::tools::ToolValue, managed_agents_core::BoxError> {
        Ok(format!("found {}", args["q"].as_str().unwrap_or_default()).into())
    }
}

#[tokio::test]
async fn the_workers_own_tools_and_permission_hook_apply_and_the_application_leaves_them_to_it() {
    let script = Script::new()
        .turn(ScriptTurn::tool_calls([
            ScriptToolCall::new("toolu_lookup", "lookup", json!({"q": "rust"})).expecting("found rust"),
            host("toolu_rm", "bash", json!({"command": "rm -rf notes"}), "not in this directory"),
        ]))
        .turn(ScriptTurn::text("done"));
    let setup = Setup::start(script, Duration::from_secs(5), false).await;
    let workdir = tempfile::tempdir().unwrap();
    std::fs::create_dir(workdir.path().join("notes")).unwrap();
    let worker = setup
        .worker(workdir.path())
        .tool(Lookup)
        .session_options(|options| {
            options.permission(permission_fn(|request| async move {
                match request.tool_use.input["command"].as_str() {
                    Some(command) if command.starts_with("rm ") => Decision::deny("not in this directory"),
                    _ => Decision::Allow,
                }
            }))
        })
        .build()
        .unwrap();
    // The application knows the worker answers `lookup`: its handler (none here) is not asked.
    let app = ClaudeManagedAgents::builder()
        .base_url(setup.emulator.base_url())
        .api_key("test-key")
        .worker_tools(["lookup"])
        .build()
        .unwrap();
    let options = SessionOptions::new().agent_id(&setup.agent_id).environment_id(&setup.environment_id).prompt("go");
    let running = tokio::spawn(async move { Session::run(&app, NoTools, options).await });
    let report = loop {
        if let Some(report) = worker.run_one().await.unwrap() {
            break report;
        }
    };
    assert_eq!(running.await.unwrap().expect("the application's request").text, "done");
    assert_eq!(report.tool_calls, 1, "the denied call did not run");
    assert!(workdir.path().join("notes").is_dir(), "the denied command did not run");
    assert!(setup.emulator.unexpected_tool_results().is_empty(), "{:?}", setup.emulator.unexpected_tool_results());
    let history = setup.emulator.history(&report.session_id);
    let custom: Vec<&Value> = history.iter().filter(|e| e["type"] == "user.custom_tool_result").collect();
    assert_eq!(custom.len(), 1, "answered once, by the worker: {custom:?}");
    let denied = setup.emulator.tool_result_events(&report.session_id);
    assert_eq!(denied[0]["is_error"], true);
}
