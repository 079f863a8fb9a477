//! Self-hosted environments against the official `anthropic` Python SDK: (1) the SDK's `EnvironmentWorker`
//! claims a self-hosted session's work item from the Claude emulator, runs the agent's built-in tool calls in a
//! scratch directory, posts each result once, and stops the item once the session's last turn is over
//! (`tests/sdk/claude_sdk_environment_worker.py`); (2) our built-in toolset (`managed-agents-toolset`) and the
//! SDK's (`anthropic.lib.tools.agent_toolset`) give the same text and error flag for the same table of calls on
//! identical directories (`tests/sdk/toolset_cases.py`). Runs when `MANAGED_AGENTS_SDK_PYTHON` names a Python
//! with `tests/sdk/requirements.txt` (`.ci/run` sets it up); without it each test says so and checks nothing
//! (`MANAGED_AGENTS_REQUIRE_SDK=1` makes that a failure).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::http::{Bytes, HttpClient, Method, Request, RequestBody, read_body};
use managed_agents_toolset::Toolset;
use serde_json::{Value, json};

/// How long one SDK script may run before the test gives up on it (and kills it).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// The Python of `MANAGED_AGENTS_SDK_PYTHON`, or `None` (after saying so) when it is not set.
fn sdk_python() -> Option<OsString> {
    let python = std::env::var_os("MANAGED_AGENTS_SDK_PYTHON").filter(|python| !python.is_empty());
    if python.is_none() {
        assert!(std::env::var_os("MANAGED_AGENTS_REQUIRE_SDK").is_none(), "MANAGED_AGENTS_SDK_PYTHON is not set");
        eprintln!("skipped: MANAGED_AGENTS_SDK_PYTHON is not set");
    }
    python
}

/// Runs `tests/sdk/<script>` with `args`, `stdin` on its standard input; its output once it exited (it is killed
/// past [`SCRIPT_TIMEOUT`]). Panics unless it exited successfully.
async fn run_script(python: &OsString, script: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "sdk", script].iter().collect();
    let mut child = tokio::process::Command::new(python)
        .arg(path)
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python interpreter runs");
    {
        use tokio::io::AsyncWriteExt;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
    }
    let output = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within {SCRIPT_TIMEOUT:?}"))
        .unwrap();
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A scratch directory under Cargo's test temp directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path).unwrap();
        }
        std::fs::create_dir_all(&path).unwrap();
        Self(std::fs::canonicalize(&path).unwrap())
    }

    /// A new directory `name` inside, resolved.
    fn dir(&self, name: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Posts `body` to the emulator's `path` with the account's key; its status and JSON answer.
async fn post(emulator: &ClaudeEmulator, path: &str, body: &Value) -> (u16, Value) {
    let http = HttpClient::new(Duration::from_secs(5)).unwrap();
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("{}{path}", emulator.base_url()))
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "managed-agents-2026-04-01")
        .header("authorization", "Bearer test-key")
        .header("content-type", "application/json")
        .body(RequestBody::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = http.send(request, Duration::from_secs(10)).await.unwrap();
    let status = response.status().as_u16();
    let bytes = read_body(response.into_body(), 1 << 20, Duration::from_secs(10)).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_environment_worker_completes_a_session() {
    let Some(python) = sdk_python() else { return };
    let host =
        |id: &str, name: &str, input: Value, expected: &str| ScriptToolCall::host(id, name, input).expecting(expected);
    let first = [
        host(
            "toolu_write",
            "write",
            json!({"file_path": "notes/hello.txt", "content": "hello\nworld\n"}),
            "wrote 12 bytes to notes/hello.txt",
        ),
        host("toolu_read", "read", json!({"file_path": "notes/hello.txt"}), "hello\nworld\n"),
        host(
            "toolu_edit",
            "edit",
            json!({"file_path": "notes/hello.txt", "old_string": "world", "new_string": "there"}),
            "edited notes/hello.txt (1 replacement(s))",
        ),
        host("toolu_bash", "bash", json!({"command": "cat notes/hello.txt"}), "hello\nthere"),
    ];
    let second = [
        host("toolu_glob", "glob", json!({"pattern": "**/*.txt"}), "/notes/hello.txt"),
        host("toolu_grep", "grep", json!({"pattern": "the+re"}), "/notes/hello.txt:2:there"),
        host("toolu_fail", "bash", json!({"command": "ls missing-file"}), "missing-file"),
    ];
    let script = Script::new()
        .turn(ScriptTurn::tool_calls(first))
        .turn(ScriptTurn::tool_calls(second))
        .turn(ScriptTurn::text("all done"));
    let emulator = ClaudeEmulator::start(script).await.unwrap();

    let toolset = json!({"type": "agent_toolset_20260401",
        "default_config": {"permission_policy": {"type": "always_allow"}}});
    let agent = json!({"name": "sdk-worker", "model": "claude-sonnet-4-6", "tools": [toolset]});
    let (status, agent) = post(&emulator, "/v1/agents", &agent).await;
    assert_eq!(status, 200, "{agent}");
    let environment = json!({"name": "sdk-worker", "config": {"type": "self_hosted"}});
    let (status, environment) = post(&emulator, "/v1/environments", &environment).await;
    assert_eq!(status, 200, "{environment}");
    let environment = environment["id"].as_str().unwrap().to_string();
    let key = emulator.environment_key(&environment).expect("a self-hosted environment has a key");
    let session = json!({"agent": agent["id"], "environment_id": environment, "initial_events": [
        {"type": "user.message", "content": [{"type": "text", "text": "go"}]}]});
    let (status, session) = post(&emulator, "/v1/sessions", &session).await;
    assert_eq!(status, 200, "{session}");
    let session = session["id"].as_str().unwrap().to_string();

    let scratch = Scratch::new("sdk-worker");
    let workdir = scratch.dir("work");
    let base = emulator.base_url();
    run_script(
        &python,
        "claude_sdk_environment_worker.py",
        &[&base, &environment, &key, workdir.to_str().unwrap()],
        "",
    )
    .await;

    // Every call answered once, in order, each with what it expected; only the failing command is an error.
    let results = emulator.tool_result_events(&session);
    let answered: Vec<(&str, bool)> =
        results.iter().map(|e| (e["tool_use_id"].as_str().unwrap(), e["is_error"] == true)).collect();
    assert_eq!(
        answered,
        [
            ("toolu_write", false),
            ("toolu_read", false),
            ("toolu_edit", false),
            ("toolu_bash", false),
            ("toolu_glob", false),
            ("toolu_grep", false),
            ("toolu_fail", true),
        ],
        "{results:?}"
    );
    assert_eq!(emulator.unexpected_tool_results(), Vec::<String>::new());
    assert_eq!(std::fs::read_to_string(workdir.join("notes/hello.txt")).unwrap(), "hello\nthere\n");

    // The session played its last turn and ended it.
    let history = emulator.history(&session);
    let permissions: Vec<&str> = history
        .iter()
        .filter(|e| e["type"] == "agent.tool_use")
        .map(|e| e["evaluated_permission"].as_str().unwrap())
        .collect();
    assert_eq!(permissions, ["allow"; 7]);
    let message = history.iter().rfind(|e| e["type"] == "agent.message").expect("the last turn's message");
    assert_eq!(message["content"][0]["text"], "all done");
    let idle = history.iter().rfind(|e| e["type"] == "session.status_idle").unwrap();
    assert_eq!(idle["stop_reason"]["type"], "end_turn", "{idle}");

    let items = emulator.work_items(&environment);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["state"], "stopped");
}

/// A case of the toolset table: a label for failures, the tool and its input.
struct Case {
    label: &'static str,
    tool: &'static str,
    input: Value,
}

fn case(label: &'static str, tool: &'static str, input: Value) -> Case {
    Case { label, tool, input }
}

/// The calls both toolsets run, in order, on their own copy of [`fixture`] (the bash session carries over).
///
/// The toolset documents a few differences from the SDK's on purpose; the table leaves them out rather than
/// allowing them:
/// - `glob` orders files with the same modification time by name, the SDK in directory order: the fixture's
///   files and directories have distinct times.
/// - `grep` walks a directory's files by name (before its subdirectories), the SDK in `os.walk` (directory)
///   order: every pattern matches at most one file per directory.
/// - `grep` patterns are Rust `regex` syntax, the SDK's Python `re` (an invalid pattern's error wording
///   differs too): the patterns use only syntax both read alike.
/// - `read` refuses image and PDF files, which the SDK returns as base64 blocks: the fixture has none.
fn cases() -> Vec<Case> {
    vec![
        // read
        case("read a whole file", "read", json!({"file_path": "a.txt"})),
        case("read a nested file", "read", json!({"file_path": "docs/deep/deeper.md"})),
        case("read lines 2-3", "read", json!({"file_path": "b.txt", "view_range": [2, 3]})),
        case("read from line 3 to the end (-1)", "read", json!({"file_path": "b.txt", "view_range": [3, -1]})),
        case("read from line 4 to the end (0)", "read", json!({"file_path": "b.txt", "view_range": [4, 0]})),
        case("read lines past the end", "read", json!({"file_path": "b.txt", "view_range": [10, 12]})),
        case("read a one-number view_range", "read", json!({"file_path": "b.txt", "view_range": [2]})),
        case("read a missing file", "read", json!({"file_path": "missing.txt"})),
        case("read a directory", "read", json!({"file_path": "docs"})),
        case("read outside the workdir", "read", json!({"file_path": "../outside.txt"})),
        // glob (before anything writes: results are ordered by modification time)
        case("glob *.txt", "glob", json!({"pattern": "*.txt"})),
        case("glob **/*.md", "glob", json!({"pattern": "**/*.md"})),
        case("glob docs/* (a directory among the matches)", "glob", json!({"pattern": "docs/*"})),
        case("glob *.md under path docs", "glob", json!({"pattern": "*.md", "path": "docs"})),
        case("glob without a match", "glob", json!({"pattern": "*.nothing"})),
        case("glob an absolute pattern", "glob", json!({"pattern": "/etc/*"})),
        case("glob a pattern with ..", "glob", json!({"pattern": "../*"})),
        // grep
        case("grep a pattern in several files", "grep", json!({"pattern": "needle"})),
        case("grep a pattern with a class and repetition", "grep", json!({"pattern": "^needle [a-z]+$"})),
        case("grep under path docs", "grep", json!({"pattern": "needle", "path": "docs"})),
        case("grep one file", "grep", json!({"pattern": "red", "path": "c.txt"})),
        case("grep without a match", "grep", json!({"pattern": "zzz"})),
        // write
        case(
            "write a new file in new directories",
            "write",
            json!({"file_path": "new/dir/n.txt", "content": "héllo\nwörld"}),
        ),
        case("read the new file", "read", json!({"file_path": "new/dir/n.txt"})),
        case("write over a file", "write", json!({"file_path": "a.txt", "content": "replaced\n"})),
        case("read the replaced file", "read", json!({"file_path": "a.txt"})),
        // edit
        case(
            "edit a string found nowhere",
            "edit",
            json!({"file_path": "c.txt", "old_string": "purple", "new_string": "x"}),
        ),
        case(
            "edit a string found once",
            "edit",
            json!({"file_path": "c.txt", "old_string": "green", "new_string": "GREEN"}),
        ),
        case(
            "edit a string found three times",
            "edit",
            json!({"file_path": "c.txt", "old_string": "red", "new_string": "RED"}),
        ),
        case(
            "edit with replace_all",
            "edit",
            json!({"file_path": "c.txt", "old_string": "red", "new_string": "RED", "replace_all": true}),
        ),
        case("read the edited file", "read", json!({"file_path": "c.txt"})),
        case("edit a missing file", "edit", json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"})),
        // bash
        case("bash echo", "bash", json!({"command": "echo hello"})),
        case("bash a pipeline", "bash", json!({"command": "wc -l < b.txt"})),
        case("bash without output", "bash", json!({"command": "true"})),
        case("bash false", "bash", json!({"command": "false"})),
        case("bash ls of a missing file", "bash", json!({"command": "ls nonexistent"})),
        case("bash stdout and stderr, then a failure", "bash", json!({"command": "echo out; echo err >&2; (exit 3)"})),
        case("bash cd", "bash", json!({"command": "cd docs && pwd"})),
        case("bash keeps its directory", "bash", json!({"command": "pwd"})),
        case("bash past its timeout", "bash", json!({"command": "sleep 2", "timeout_ms": 300})),
        case("bash after a timeout", "bash", json!({"command": "echo after"})),
        case("bash restart", "bash", json!({"restart": true})),
        case("bash after the restart", "bash", json!({"command": "pwd"})),
        case("bash without a command", "bash", json!({})),
    ]
}

/// The fixture both toolsets work on: a few files with known lines and a nested directory, each file and
/// directory with its own modification time (so `glob`'s order is by time alone).
fn fixture(root: &Path) {
    let files: [(&str, &str, u64); 7] = [
        ("a.txt", "alpha\nneedle one\ngamma\n", 1),
        ("b.txt", "one\ntwo\nthree\nfour\nfive\n", 3),
        ("c.txt", "red green red blue red\n", 2),
        ("notes.md", "# Notes\nnothing to see\n", 4),
        ("docs/guide.md", "intro\nneedle two\n", 5),
        ("docs/deep/deeper.md", "needle three\nend\n", 0),
        ("docs/deep/data.txt", "plain\n", 6),
    ];
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let at = |hours: u64| base + Duration::from_secs(3600 * hours);
    for (name, text, hours) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(at(hours)).unwrap();
    }
    // Directories last: creating their entries moved their times.
    for (name, hours) in [("docs/deep", 8), ("docs", 7)] {
        std::fs::File::open(root.join(name)).unwrap().set_modified(at(hours)).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_toolset_and_the_sdks_give_the_same_results() {
    let Some(python) = sdk_python() else { return };
    let scratch = Scratch::new("toolset-cases");
    let (ours_dir, sdk_dir) = (scratch.dir("ours"), scratch.dir("sdk"));
    fixture(&ours_dir);
    fixture(&sdk_dir);
    let cases = cases();

    let input = json!({
        "workdir": sdk_dir,
        "cases": cases.iter().map(|c| json!({"tool": c.tool, "input": c.input})).collect::<Vec<_>>(),
    });
    let output = run_script(&python, "toolset_cases.py", &[], &input.to_string()).await;
    let sdk: Vec<Value> = serde_json::from_slice(&output.stdout).expect("the script's JSON");
    assert_eq!(sdk.len(), cases.len());

    let toolset = Toolset::builder(&ours_dir).build().unwrap();
    let mut ours = Vec::new();
    for case in &cases {
        ours.push(toolset.call(case.tool, &case.input).await);
    }
    toolset.close().await;

    // Both print absolute paths (glob, grep, pwd): each copy's directory reads as <workdir>.
    let placeholder = |text: &str, dir: &Path| text.replace(dir.to_str().unwrap(), "<workdir>");
    let mut mismatches = Vec::new();
    let mut table = Vec::new();
    for ((case, ours), sdk) in cases.iter().zip(&ours).zip(&sdk) {
        let ours = (placeholder(&ours.text, &ours_dir), ours.is_error);
        let sdk_text = sdk["text"].as_str().unwrap_or_else(|| panic!("{}: not a text result: {sdk}", case.label));
        let sdk = (placeholder(sdk_text, &sdk_dir), sdk["is_error"].as_bool().unwrap());
        table.push(format!("{}: {ours:?}", case.label));
        if ours != sdk {
            mismatches
                .push(format!("{} ({} {}):\n  ours: {ours:?}\n  sdk:  {sdk:?}", case.label, case.tool, case.input));
        }
    }
    assert!(mismatches.is_empty(), "{} of {} cases differ:\n{}", mismatches.len(), cases.len(), mismatches.join("\n"));

    // A few anchors, so that agreeing cannot mean both missed the fixture.
    let text = |label: &str| {
        let at = cases.iter().position(|c| c.label == label).unwrap();
        (placeholder(&ours[at].text, &ours_dir), ours[at].is_error)
    };
    assert_eq!(text("glob *.txt"), ("<workdir>/b.txt\n<workdir>/c.txt\n<workdir>/a.txt".into(), false), "{table:#?}");
    assert_eq!(
        text("grep a pattern in several files"),
        (
            "<workdir>/a.txt:2:needle one\n<workdir>/docs/guide.md:2:needle two\n<workdir>/docs/deep/deeper.md:1:needle three"
                .into(),
            false
        )
    );
    assert_eq!(text("read from line 3 to the end (-1)"), ("three\nfour\nfive\n".into(), false));
    assert_eq!(text("edit with replace_all"), ("edited c.txt (3 replacement(s))".into(), false));
    assert_eq!(text("bash past its timeout"), ("bash: bash command timed out after 0.3s".into(), true));
    assert_eq!(text("bash after the restart"), ("<workdir>".into(), false));
}
