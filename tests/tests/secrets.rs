//! Secrets stay out of everything the library prints: every `tracing` event and span at every level (ours,
//! hyper's and the AWS SDK's), and the `Debug` (`{:?}` and `{:#?}`) and `Display` of every configuration,
//! builder, provider, client, credentials, option, result, event, notification and error met during real
//! sessions on the three providers against their loopback emulators — successful runs, live sessions, HTTP
//! errors (401, 403, 500, 529), malformed frames, in-stream exceptions, stalls, refused connections,
//! provisioning, artifacts, runtime commands, and the `from_env` paths (in a child process, so the environment
//! of this one is never changed).
//!
//! One global subscriber (set once for the whole test binary) writes every event and every span's creation
//! and close, with all fields, into a shared buffer. Each test checks the whole buffer and everything it printed
//! for each secret and for every run of 12 consecutive characters of it, and checks that the capture is not
//! empty of what it should hold (TRACE lines, its emulators' addresses, its provider's lines), so it cannot pass
//! by capturing nothing. Lines logged by the emulators' own code (the servers' side, not the library's) go to a
//! buffer of their own and are not held against the library. With `MANAGED_AGENTS_SECRETS_DUMP=<dir>` each test
//! also writes what it checked there (`<test>.log`, `<test>.printed`), to read.
//!
//! What the AWS SDK prints at TRACE is in scope too: `aws-sigv4` logs the request it signs and the canonical
//! request, and `aws-smithy-runtime` the request it transmits; the versions in `Cargo.lock` redact the
//! `authorization` and `x-amz-security-token` values there, and credentials' `Debug` shows the access key id
//! only (the id is not a secret, so it is not looked for).

use std::collections::{BTreeMap, HashSet};
use std::fmt::{Debug, Display};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use aws_sdk_bedrockagentcore::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_agentcore::{BedrockAgentCore, BedrockAgentCoreBuilder, SessionStorageArtifacts, run_command};
use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions as ClaudeEmulatorOptions};
use managed_agents_claude::{ClaudeManagedAgents, ClaudeManagedAgentsBuilder, MAX_CONSECUTIVE_MALFORMED_FRAMES};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::HttpOptions;
use managed_agents_core::Secret;
use managed_agents_core::artifacts::Artifacts;
use managed_agents_core::http::{Method, StatusCode};
use managed_agents_core::{
    AgentSpec, EnvironmentSpec, Error, ModelConfig, NoTools, OpenRequest, Provider, RetryPolicy, Session,
    SessionOptions, SessionResult, ToolSchema, TurnInput, tool_fn, tool_fn_with_info,
};
use managed_agents_local::emulator::LocalEmulator;
use managed_agents_local::{ChatRequest, Local, LocalBuilder};
use serde_json::json;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;

// ---------------------------------------------------------------------------------------------------------------
// The secrets

/// The Claude API key.
const CLAUDE_KEY: &str = "sk-ant-SECRET-api03-Qm7vXc2LpR9tYw4ZkHd8NbF3sJe6GaU1";
/// The AWS secret access key.
const AWS_SECRET_KEY: &str = "wJalrXUtnFEMI/SECRETSECRET/Vq9Lx3Rz7TkP2mWc8Yd";
/// The AWS session token.
const AWS_SESSION_TOKEN: &str = "SESSIONTOKEN-SECRET-IQoJb3JpZ2luX2VjEHcaCXVzLWVhc3QtMSJGMEQCIBm4Tq7Kz";
/// The AWS access key id: not a secret (AWS prints it in credentials' `Debug`), so not looked for.
const AWS_ACCESS_KEY_ID: &str = "AKIASECRETSTESTKEYID";
/// The Local provider's API key.
const LOCAL_KEY: &str = "sk-local-SECRET-8fQ2wN7xZ4cV1bM6hJ3kL9pR";
/// A per-run Local API key (a run's `ModelConfig` credential: a gateway lane).
const LOCAL_RUN_KEY: &str = "sk-lane-SECRET-5tY8uI2oP4aS7dF1gH6jK3lZ";
/// The value of an extra header on Local's requests (a gateway's own key).
const LOCAL_HEADER_VALUE: &str = "gw-SECRET-header-Xk4Pq8Rm2Vn6Bt1Lz9Hc";

/// Every secret, by name.
const SECRETS: [(&str, &str); 6] = [
    ("Claude API key", CLAUDE_KEY),
    ("AWS secret access key", AWS_SECRET_KEY),
    ("AWS session token", AWS_SESSION_TOKEN),
    ("Local API key", LOCAL_KEY),
    ("Local per-run API key", LOCAL_RUN_KEY),
    ("Local extra header value", LOCAL_HEADER_VALUE),
];

/// Names a directory to write each test's capture and printed values into, for reading them.
const DUMP_DIR: &str = "MANAGED_AGENTS_SECRETS_DUMP";

/// The shortest run of a secret's characters that counts as a leak.
const WINDOW: usize = 12;

// ---------------------------------------------------------------------------------------------------------------
// The capture

/// A buffer the subscriber writes into.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;

    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// What the subscriber captured: the library's side (our crates, hyper, the AWS SDK …), the emulators' own, and
/// the secret [`the_check_finds_a_planted_secret`] plants (kept apart, so that no other test finds it).
struct Capture {
    library: Buffer,
    emulators: Buffer,
    planted: Buffer,
}

/// The target of the planted secret's event.
const PLANTED_TARGET: &str = "secrets::planted";

fn is_planted(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.target() == PLANTED_TARGET
}

/// The targets of the emulators' own code (the server side): what they log is not the library's output.
const EMULATOR_TARGETS: [&str; 4] = [
    "managed_agents_claude::emulator",
    "managed_agents_agentcore::emulator",
    "managed_agents_local::emulator",
    "managed_agents_core::http::server",
];

fn is_emulator(metadata: &tracing::Metadata<'_>) -> bool {
    EMULATOR_TARGETS.iter().any(|target| metadata.target().starts_with(target))
}

/// A formatting layer writing into `buffer`: every field, each span's creation and close (with its fields as
/// recorded by then), target, file, line and thread.
fn fmt_layer<S>(buffer: &Buffer) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(buffer.clone())
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .with_target(true)
        .with_file(true)
        .with_line_number(true)
        .with_thread_names(true)
}

/// The capture, installed as the global default subscriber on first use: every level, every field, each span's
/// creation and close, file, line and thread.
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture { library: Buffer::default(), emulators: Buffer::default(), planted: Buffer::default() };
        let subscriber = tracing_subscriber::registry()
            .with(LevelFilter::TRACE)
            .with(fmt_layer(&capture.library).with_filter(filter_fn(|m| !is_emulator(m) && !is_planted(m))))
            .with(fmt_layer(&capture.emulators).with_filter(filter_fn(is_emulator)))
            .with(fmt_layer(&capture.planted).with_filter(filter_fn(is_planted)));
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this binary");
        capture
    })
}

// ---------------------------------------------------------------------------------------------------------------
// What a test printed

/// Everything a test formatted, labelled.
#[derive(Default)]
struct Printed(Vec<(String, String)>);

impl Printed {
    /// `{:?}` and `{:#?}`.
    fn debug(&mut self, label: &str, value: &(impl Debug + ?Sized)) {
        self.0.push((format!("{label} {{:?}}"), format!("{value:?}")));
        self.0.push((format!("{label} {{:#?}}"), format!("{value:#?}")));
    }

    /// `{:?}`, `{:#?}`, `{}` and `{:#}`.
    fn both(&mut self, label: &str, value: &(impl Debug + Display + ?Sized)) {
        self.debug(label, value);
        self.0.push((format!("{label} {{}}"), format!("{value}")));
        self.0.push((format!("{label} {{:#}}"), format!("{value:#}")));
    }

    /// An error: its `Debug` and `Display`, those of every error in its source chain, and its partial result.
    fn error(&mut self, label: &str, error: &Error) {
        self.both(label, error);
        let mut source = std::error::Error::source(error);
        let mut depth = 0;
        while let Some(inner) = source {
            depth += 1;
            self.0.push((format!("{label} source {depth} {{}}"), format!("{inner}")));
            self.0.push((format!("{label} source {depth} {{:?}}"), format!("{inner:?}")));
            source = inner.source();
        }
        self.both(&format!("{label} root"), error.root());
        if let Some(partial) = error.partial_result() {
            self.result(&format!("{label} partial"), partial);
        }
    }

    /// A session result: `Debug`, its JSON, and each event's `Debug` and JSON.
    fn result(&mut self, label: &str, result: &SessionResult) {
        self.debug(label, result);
        self.0.push((format!("{label} JSON"), serde_json::to_string(result).expect("a result serialises")));
        for (index, event) in result.events.iter().enumerate() {
            self.debug(&format!("{label} event {index}"), event);
            self.0.push((format!("{label} event {index} JSON"), event.to_value().to_string()));
        }
    }

    /// A run's outcome; returns whether it succeeded.
    fn outcome(&mut self, label: &str, outcome: &Result<SessionResult, Error>) -> bool {
        match outcome {
            Ok(result) => {
                self.result(label, result);
                true
            }
            Err(error) => {
                self.error(label, error);
                false
            }
        }
    }

    /// Any `Result` whose error is ours.
    fn any<T: Debug>(&mut self, label: &str, outcome: &Result<T, Error>) {
        match outcome {
            Ok(value) => self.debug(label, value),
            Err(error) => self.error(label, error),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The check

/// Every run of [`WINDOW`] characters of each secret, with the secret's name.
fn windows() -> Vec<(&'static [u8], &'static str)> {
    let mut windows = Vec::new();
    for (name, secret) in SECRETS {
        for window in secret.as_bytes().windows(WINDOW) {
            windows.push((window, name));
        }
    }
    windows
}

/// Where `text` holds a secret, or a run of [`WINDOW`] characters of one: the secret's name and the line, with
/// each such run replaced by `<NAME>` (so that the report itself does not print the secret).
fn leaks(text: &str) -> Vec<(String, String)> {
    let windows = windows();
    let set: HashSet<&[u8]> = windows.iter().map(|(window, _)| *window).collect();
    let bytes = text.as_bytes();
    let mut found: BTreeMap<usize, String> = BTreeMap::new();
    if bytes.len() >= WINDOW {
        for start in 0..=bytes.len() - WINDOW {
            let candidate = &bytes[start..start + WINDOW];
            if set.contains(candidate) {
                let name = windows.iter().find(|(window, _)| *window == candidate).map_or("?", |(_, name)| name);
                let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                found.entry(line_start).or_insert_with(|| name.to_string());
            }
        }
    }
    found
        .into_iter()
        .map(|(line_start, name)| {
            let line = text[line_start..].split('\n').next().unwrap_or_default();
            (name, redact(line))
        })
        .collect()
}

/// `line` with every byte covered by a run of a secret replaced, cut to 400 bytes.
fn redact(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut covered = vec![false; bytes.len()];
    for (window, _) in windows() {
        if bytes.len() >= WINDOW {
            for start in 0..=bytes.len() - WINDOW {
                if &bytes[start..start + WINDOW] == window {
                    covered[start..start + WINDOW].iter_mut().for_each(|c| *c = true);
                }
            }
        }
    }
    let mut out = String::new();
    let mut hidden = false;
    for (index, ch) in line.char_indices() {
        if covered[index] {
            if !hidden {
                out.push_str("<SECRET>");
            }
            hidden = true;
        } else {
            out.push(ch);
            hidden = false;
        }
    }
    out.chars().take(400).collect()
}

/// A line the capture must hold: one line with every one of these parts (a thread name, a target, a message,
/// an address …), so that a test cannot pass by capturing nothing, or only another test's lines.
type Expected = Vec<Vec<String>>;

/// One expected line made of `parts`.
fn line(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|part| (*part).to_string()).collect()
}

/// Fails if the capture or anything `printed` holds a secret; checks that the capture holds every line of
/// `expected` (the non-secret parts: TRACE lines, emulator addresses, provider names, targets).
fn assert_clean(what: &str, printed: &Printed, expected: &Expected) {
    let library = capture().library.text();
    let emulators = capture().emulators.text();
    let lines = library.lines().count();
    let printed_bytes: usize = printed.0.iter().map(|(_, text)| text.len()).sum();
    println!(
        "{what}: {lines} captured lines ({} bytes), {} emulator lines, {} printed values ({printed_bytes} bytes)",
        library.len(),
        emulators.lines().count(),
        printed.0.len()
    );
    if let Some(dir) = std::env::var_os(DUMP_DIR) {
        // For a person to read what was checked (it holds no secret once this check passes).
        let dir = std::path::PathBuf::from(dir);
        let printed_text: String = printed.0.iter().map(|(label, text)| format!("=== {label}\n{text}\n")).collect();
        std::fs::write(dir.join(format!("{what}.log")), &library).expect("the capture is written");
        std::fs::write(dir.join(format!("{what}.printed")), printed_text).expect("the printed values are written");
    }
    for parts in expected {
        let found = library.lines().any(|line| parts.iter().all(|part| line.contains(part.as_str())));
        assert!(found, "{what}: no captured line holds all of {parts:?}");
    }
    let mut failures = Vec::new();
    for (secret, line) in leaks(&library) {
        failures.push(format!("tracing: the {secret} in: {line}"));
    }
    for (label, text) in &printed.0 {
        for (secret, line) in leaks(text) {
            failures.push(format!("{label}: the {secret} in: {line}"));
        }
    }
    for (secret, line) in leaks(&emulators) {
        // The emulators' own lines are theirs, not the library's: reported, not held against it.
        println!("{what}: note: an emulator logged the {secret}: {line}");
    }
    assert!(failures.is_empty(), "{what}: {} leak(s):\n{}", failures.len(), failures.join("\n"));
}

/// The capture's check of itself: a secret planted in a tracing event and in a printed value is found.
#[test]
fn the_check_finds_a_planted_secret() {
    capture();
    let planted = format!("prefix {}suffix", &CLAUDE_KEY[5..5 + WINDOW]);
    let found = leaks(&planted);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "Claude API key");
    assert!(!found[0].1.contains(&CLAUDE_KEY[5..5 + WINDOW]), "the report hides it: {}", found[0].1);
    assert!(leaks(&CLAUDE_KEY[..WINDOW - 1]).is_empty(), "fewer than WINDOW characters are not a leak");
    for (_, secret) in SECRETS {
        assert_eq!(leaks(&format!("x{}y", &secret[secret.len() - WINDOW..])).len(), 1, "the end of each secret");
    }
    // Through the subscriber, as a field of an event on another thread.
    let marker = "planted-marker-7f3a";
    std::thread::spawn(move || tracing::trace!(target: PLANTED_TARGET, key = AWS_SESSION_TOKEN, marker))
        .join()
        .expect("the planting thread");
    let planted = capture().planted.text();
    let line = planted.lines().find(|line| line.contains(marker)).expect("the planted event was captured");
    assert_eq!(leaks(line).len(), 1, "the planted token is found in the capture: {}", redact(line));
}

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces

/// A multi-threaded runtime for one test; dropping it ends every task the test's sessions and emulators spawned,
/// so that what they log while ending is in the capture before the check.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// Quick retries, so that the retried HTTP errors are retried (and logged) at once.
fn quick_retry() -> RetryPolicy {
    RetryPolicy::default()
        .with_max_retries(2)
        .with_initial(Duration::from_millis(5))
        .with_max(Duration::from_millis(20))
        .with_jitter(0.0)
}

/// The bound on every run here.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// A two-turn script: a tool call, then text.
fn tool_script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "lookup", json!({"city": "Oslo"})).with_usage(3, 1))
        .turn(ScriptTurn::text("done").with_usage(2, 1))
}

/// A one-turn script whose turn carries `fault`.
fn faulted(fault: Fault) -> Script {
    Script::new().turn(ScriptTurn::text("after the fault").with_fault(fault))
}

/// An HTTP error fault.
fn http_error(status: u16) -> Fault {
    Fault::HttpError { status, retry_after: Some(Duration::from_millis(10)) }
}

fn lookup() -> ToolSchema {
    ToolSchema::with_string_params("lookup", "Looks a city up", &["city"])
}

/// An agent on `model` (a catalog id the provider serves).
fn agent_spec(name: &str, model: &str) -> AgentSpec {
    AgentSpec::new(name, "You look cities up.").model(model).tool(lookup())
}

/// The authority (`127.0.0.1:port`) of a base URL, which the HTTP client logs when it connects.
fn authority(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split('/').next().unwrap_or(rest).to_string()
}

/// A refused address: nothing listens on port 1 of the loopback.
const REFUSED: &str = "http://127.0.0.1:1";

// ---------------------------------------------------------------------------------------------------------------
// Claude

fn claude_builder(url: &str) -> ClaudeManagedAgentsBuilder {
    ClaudeManagedAgents::builder().base_url(url).api_key(CLAUDE_KEY).retry(quick_retry())
}

/// An emulator playing `script` with `options`, a provider on it, and options naming its seeded agent.
async fn claude(
    script: Script,
    options: ClaudeEmulatorOptions,
) -> (ClaudeEmulator, ClaudeManagedAgents, SessionOptions) {
    let emulator = ClaudeEmulator::start_with(script, options).await.expect("the Claude emulator starts");
    let provider = claude_builder(&emulator.base_url()).build().expect("the Claude provider builds");
    let (agent, environment) = emulator.seed_agent();
    let options = SessionOptions::new().agent_id(agent).environment_id(environment).timeout(RUN_TIMEOUT);
    (emulator, provider, options)
}

async fn claude_sessions(printed: &mut Printed, expected: &mut Expected) {
    // Configuration: builders, the client, its configuration and the provider.
    printed.both("Secret", &Secret::new(CLAUDE_KEY));
    printed.debug("ClaudeManagedAgentsBuilder", &claude_builder("http://127.0.0.1:9"));
    let built = claude_builder("http://127.0.0.1:9").build().expect("the provider builds");
    let client = built.client();
    printed.debug("ClaudeClient", client);
    printed.debug("ClaudeConfig", client.config());
    printed.debug("ClaudeConfig.api_key", &client.config().api_key);
    let with_newline = ClaudeManagedAgents::builder().api_key(format!("{CLAUDE_KEY}\n")).build();
    assert!(matches!(with_newline, Err(Error::InvalidOption { option: "api_key", .. })), "{with_newline:?}");
    printed.any("ClaudeManagedAgents::build (key not a header value)", &with_newline);
    let bad_url = ClaudeManagedAgents::builder().api_key(CLAUDE_KEY).base_url("not a url").build();
    printed.any("ClaudeManagedAgents::build (bad base URL)", &bad_url);

    // A session with a tool call, on the seeded agent.
    let (emulator, provider, options) = claude(tool_script(), ClaudeEmulatorOptions::default()).await;
    expected.push(line(&["connecting to", &authority(&emulator.base_url())]));
    printed.debug("ClaudeManagedAgents", &provider);
    printed.debug("ClaudeProvisioner", provider.provisioner());
    let options = options.prompt("Weather in Oslo?").record_content(true);
    printed.debug("SessionOptions", &options);
    let handler = tool_fn(|_, input| async move { Ok(format!("sunny in {}", input["city"])) });
    let outcome = Session::run(&provider, handler, options).await;
    assert!(printed.outcome("Claude tool session", &outcome), "{outcome:?}");
    let session_id = outcome.as_ref().ok().and_then(|r| r.session_id.clone()).expect("a Claude session id");

    // Artifacts of that session.
    let artifacts = provider.artifacts(session_id);
    printed.debug("ClaudeArtifacts", &artifacts);
    printed.any("ClaudeArtifacts::put", &artifacts.put("note.txt", b"hello").await);
    printed.any("ClaudeArtifacts::list", &artifacts.list().await);
    printed.any("ClaudeArtifacts::fetch (missing)", &artifacts.fetch("missing.txt").await);

    // HTTP errors on the turn's post: 529 (certainly unprocessed: retried), 500 (a post that may have been
    // processed is not repeated blindly: only printed), 401 (not retried: the run fails with it).
    for (status, succeeds) in [(529, Some(true)), (500, None), (401, Some(false))] {
        let (_emulator, provider, options) =
            claude(faulted(http_error(status)), ClaudeEmulatorOptions::default()).await;
        let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
        let succeeded = printed.outcome(&format!("Claude HTTP {status}"), &outcome);
        if let Some(succeeds) = succeeds {
            assert_eq!(succeeded, succeeds, "HTTP {status}: {outcome:?}");
        }
        if status == 401 {
            let root = outcome.as_ref().map_err(Error::root);
            assert!(matches!(root, Err(Error::Http { status: 401, .. })), "{outcome:?}");
        }
    }

    // Refused requests outside a turn: session creation answered 401, then 500 (retried into failure).
    for status in [StatusCode::UNAUTHORIZED, StatusCode::INTERNAL_SERVER_ERROR] {
        let (emulator, provider, options) = claude(Script::new(), ClaudeEmulatorOptions::default()).await;
        emulator.fail_requests(Method::POST, "/v1/sessions", status, 10);
        let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
        assert!(!printed.outcome(&format!("Claude session create {status}"), &outcome));
    }

    // Malformed frames: one (skipped with a warning), then more in a row than the stream tolerates.
    let (_emulator, provider, options) = claude(faulted(Fault::MalformedFrame), ClaudeEmulatorOptions::default()).await;
    let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
    assert!(printed.outcome("Claude one malformed frame", &outcome), "{outcome:?}");
    let many = ClaudeEmulatorOptions::default().with_malformed_frames(MAX_CONSECUTIVE_MALFORMED_FRAMES as usize + 1);
    let (_emulator, provider, options) = claude(faulted(Fault::MalformedFrame), many).await;
    let outcome = Session::run(&provider, NoTools, options.prompt("go").reconnect_runs(false)).await;
    printed.outcome("Claude malformed frames", &outcome);

    // An error the service raises mid-stream.
    let exception = Fault::StreamException { kind: "overloaded_error".into(), message: "try later".into() };
    let (_emulator, provider, options) = claude(faulted(exception), ClaudeEmulatorOptions::default()).await;
    let outcome = Session::run(&provider, NoTools, options.prompt("go").reconnect_runs(false)).await;
    assert!(!printed.outcome("Claude stream exception", &outcome), "{outcome:?}");

    // A live session: a request, a follow-up, close.
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let (_emulator, provider, options) = claude(script, ClaudeEmulatorOptions::default()).await;
    let mut handle = Session::start(Arc::new(provider), NoTools, options.prompt("one")).await.expect("started");
    printed.debug("Claude SessionHandle", &handle);
    let first = handle.next_result().await;
    assert!(printed.outcome("Claude live result 1", &first), "{first:?}");
    handle.message("two").expect("a follow-up");
    let notification = handle.next_notification().await;
    printed.debug("Claude live notification", &notification);
    handle.close().await;

    // Provisioning: an agent and environment ensured, a session on them, teardown.
    let (_emulator, provider, _) =
        claude(Script::new().turn(ScriptTurn::text("provisioned")), Default::default()).await;
    let environment = EnvironmentSpec::new();
    let handle =
        provider.provision(&agent_spec("secrets_agent", "anthropic:claude-sonnet-4-6"), Some(&environment)).await;
    printed.any("Claude provision", &handle);
    let handle = handle.expect("provisioned on the emulator");
    let options = SessionOptions::new().agent(handle.clone()).prompt("go").timeout(RUN_TIMEOUT);
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(printed.outcome("Claude provisioned session", &outcome), "{outcome:?}");
    printed.any("Claude teardown", &provider.teardown(&handle).await);

    // A refused connection.
    let provider = claude_builder(REFUSED).build().expect("builds");
    let options = SessionOptions::new().agent_id("agent_x").environment_id("env_x").prompt("go");
    let outcome = Session::run(&provider, NoTools, options.timeout(RUN_TIMEOUT)).await;
    assert!(!printed.outcome("Claude refused connection", &outcome), "{outcome:?}");
}

#[test]
fn claude_sessions_print_no_secret() {
    capture();
    let mut printed = Printed::default();
    let thread = "claude_sessions_print_no_secret";
    let mut expected = vec![
        line(&[" TRACE ", thread, "hyper_util::client"]),
        line(&[" WARN ", thread, "gen_ai.provider.name=\"claude\"", "managed_agents_claude::wire::stream"]),
        line(&[" WARN ", thread, "managed_agents_core::http::client", "request failed; retrying"]),
        line(&[" INFO ", thread, "managed_agents_claude::provision", "provision: ensured"]),
    ];
    let runtime = runtime();
    runtime.block_on(claude_sessions(&mut printed, &mut expected));
    drop(runtime);
    assert_clean("Claude", &printed, &expected);
}

// ---------------------------------------------------------------------------------------------------------------
// AgentCore

/// The credentials: an access key id, the secret access key and a session token.
fn aws_credentials() -> Credentials {
    Credentials::new(AWS_ACCESS_KEY_ID, AWS_SECRET_KEY, Some(AWS_SESSION_TOKEN.to_string()), None, "secrets-test")
}

/// The data-plane SDK client on `endpoint` with [`aws_credentials`]: plain HTTP, no SDK retries.
fn agentcore_client(endpoint: &str) -> aws_sdk_bedrockagentcore::Client {
    let config = aws_sdk_bedrockagentcore::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(aws_credentials())
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_bedrockagentcore::Client::from_conf(config)
}

/// The control-plane SDK client on `endpoint`, configured like [`agentcore_client`].
fn agentcore_control_client(endpoint: &str) -> aws_sdk_bedrockagentcorecontrol::Client {
    use aws_sdk_bedrockagentcorecontrol::config as control;
    let config = control::Builder::new()
        .behavior_version(control::BehaviorVersion::latest())
        .region(control::Region::new("us-east-1"))
        .credentials_provider(aws_credentials())
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .retry_config(control::retry::RetryConfig::disabled())
        .build();
    aws_sdk_bedrockagentcorecontrol::Client::from_conf(config)
}

fn agentcore_builder(endpoint: &str) -> BedrockAgentCoreBuilder {
    BedrockAgentCore::builder()
        .client(agentcore_client(endpoint))
        .control_client(agentcore_control_client(endpoint))
        .retry(quick_retry())
        .provisioning(AgentCoreEmulator::provision_settings())
}

/// An emulator playing `script`, a provider on it with our credentials, and options naming its harness.
async fn agentcore(script: Script) -> (AgentCoreEmulator, BedrockAgentCore, SessionOptions) {
    let emulator = AgentCoreEmulator::start(script).await.expect("the AgentCore emulator starts");
    let provider = agentcore_builder(&emulator.base_url()).build().expect("the AgentCore provider builds");
    let options = SessionOptions::new().agent_id(emulator.harness_arn()).timeout(RUN_TIMEOUT);
    (emulator, provider, options)
}

async fn agentcore_sessions(printed: &mut Printed, expected: &mut Expected) {
    // Configuration: the credentials, SDK configurations and clients (the AWS SDK's types), ours.
    let credentials = aws_credentials();
    printed.debug("aws Credentials", &credentials);
    printed.debug("aws SharedCredentialsProvider", &SharedCredentialsProvider::new(credentials.clone()));
    let client = agentcore_client("http://127.0.0.1:9");
    printed.debug("aws Client", &client);
    printed.debug("aws Config", client.config());
    printed.debug("aws control Client", &agentcore_control_client("http://127.0.0.1:9"));
    let sdk_config = |endpoint: &str| {
        aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(aws_credentials()))
            .endpoint_url(endpoint)
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .build()
    };
    printed.debug("aws SdkConfig", &sdk_config("http://127.0.0.1:9"));
    printed.debug("BedrockAgentCoreBuilder", &agentcore_builder("http://127.0.0.1:9"));
    let no_region = aws_sdk_bedrockagentcore::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .credentials_provider(aws_credentials())
        .build();
    let no_region = BedrockAgentCore::builder().client(aws_sdk_bedrockagentcore::Client::from_conf(no_region)).build();
    assert!(matches!(no_region, Err(Error::InvalidOption { option: "region", .. })), "{no_region:?}");
    printed.any("BedrockAgentCore::build (no region)", &no_region);

    // A session with a tool call.
    let (emulator, provider, options) = agentcore(tool_script()).await;
    expected.push(line(&["connecting to", &authority(&emulator.base_url())]));
    printed.debug("BedrockAgentCore", &provider);
    printed.debug("ProvisionSettings", provider.provisioning());
    let options = options.prompt("Weather in Oslo?").record_content(true);
    let handler = tool_fn(|_, input| async move { Ok(format!("sunny in {}", input["city"])) });
    let outcome = Session::run(&provider, handler, options).await;
    assert!(printed.outcome("AgentCore tool session", &outcome), "{outcome:?}");
    let requests = emulator.requests();
    assert!(!requests.is_empty() && requests.iter().all(|r| r.signed), "every call was signed with our credentials");

    // HTTP errors: 500, 429 and 401 (the emulator answers it as an internal error) are retried, 403 is not.
    // What the emulator makes of a 401 (an internal error, today) is its business: that run is only printed.
    for (status, succeeds) in [(500, Some(true)), (429, Some(true)), (401, None), (403, Some(false))] {
        let (_emulator, provider, options) = agentcore(faulted(http_error(status))).await;
        let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
        let succeeded = printed.outcome(&format!("AgentCore HTTP {status}"), &outcome);
        if let Some(succeeds) = succeeds {
            assert_eq!(succeeded, succeeds, "HTTP {status}: {outcome:?}");
        }
    }

    // A frame with a broken CRC, and an exception frame.
    let (_emulator, provider, options) = agentcore(faulted(Fault::MalformedFrame)).await;
    let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
    printed.outcome("AgentCore malformed frame", &outcome);
    let exception = Fault::StreamException { kind: "validationException".into(), message: "bad input".into() };
    let (_emulator, provider, options) = agentcore(faulted(exception)).await;
    let outcome = Session::run(&provider, NoTools, options.prompt("go")).await;
    assert!(!printed.outcome("AgentCore stream exception", &outcome), "{outcome:?}");

    // A live session.
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let (_emulator, provider, options) = agentcore(script).await;
    let mut handle = Session::start(Arc::new(provider), NoTools, options.prompt("one")).await.expect("started");
    printed.debug("AgentCore SessionHandle", &handle);
    let first = handle.next_result().await;
    assert!(printed.outcome("AgentCore live result 1", &first), "{first:?}");
    handle.message("two").expect("a follow-up");
    printed.debug("AgentCore live notification", &handle.next_notification().await);
    handle.close().await;

    // Provisioning a harness, a session on it, teardown; runtime commands and session-storage artifacts.
    let (emulator, provider, _) = agentcore(Script::new().turn(ScriptTurn::text("provisioned"))).await;
    let handle =
        provider.provision(&agent_spec("secrets_harness", "bedrock:anthropic.claude-sonnet-4-6-v1:0"), None).await;
    printed.any("AgentCore provision", &handle);
    let handle = handle.expect("provisioned on the emulator");
    let options = SessionOptions::new().agent(handle.clone()).prompt("go").timeout(RUN_TIMEOUT);
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(printed.outcome("AgentCore provisioned session", &outcome), "{outcome:?}");
    printed.any("AgentCore teardown", &provider.teardown(&handle).await);
    let session = managed_agents_agentcore::new_session_id();
    let runtime_arn = "arn:aws:bedrock-agentcore:us-east-1:000000000000:runtime/emulated";
    let output = run_command(provider.client(), runtime_arn, &session, "echo hi", None, RUN_TIMEOUT, |_, _| {}).await;
    printed.any("run_command", &output);
    let artifacts = SessionStorageArtifacts::new(&provider, emulator.harness_arn(), session);
    printed.debug("SessionStorageArtifacts", &artifacts);
    printed.any("SessionStorageArtifacts::put", &artifacts.put("note.txt", b"hello").await);
    printed.any("SessionStorageArtifacts::list", &artifacts.list().await);
    printed.any("SessionStorageArtifacts::fetch (missing)", &artifacts.fetch("missing.txt").await);

    // A provider built from an SDK configuration (the shared-config path).
    let emulator = AgentCoreEmulator::start(Script::new().turn(ScriptTurn::text("via SdkConfig"))).await.expect("up");
    let provider = BedrockAgentCore::builder()
        .sdk_config(&sdk_config(&emulator.base_url()))
        .retry(quick_retry())
        .build()
        .expect("builds from an SdkConfig");
    printed.debug("BedrockAgentCore (SdkConfig)", &provider);
    let options = SessionOptions::new().agent_id(emulator.harness_arn()).prompt("go").timeout(RUN_TIMEOUT);
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(printed.outcome("AgentCore SdkConfig session", &outcome), "{outcome:?}");

    // A refused connection.
    let provider = agentcore_builder(REFUSED).build().expect("builds");
    let options = SessionOptions::new().agent_id(emulator.harness_arn()).prompt("go").timeout(RUN_TIMEOUT);
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(!printed.outcome("AgentCore refused connection", &outcome), "{outcome:?}");
}

#[test]
fn agentcore_sessions_print_no_secret() {
    capture();
    let mut printed = Printed::default();
    let thread = "agentcore_sessions_print_no_secret";
    let mut expected = vec![
        line(&[" TRACE ", thread, "aws_sigv4::http_request::sign", "signing request"]),
        line(&[" TRACE ", thread, "aws_smithy_runtime::client::orchestrator", "transmitting request"]),
        line(&[" WARN ", thread, "gen_ai.provider.name=\"agentcore\"", "managed_agents_agentcore::provider"]),
        line(&[" INFO ", thread, "managed_agents_agentcore::provision", "harness provisioned"]),
    ];
    let runtime = runtime();
    runtime.block_on(agentcore_sessions(&mut printed, &mut expected));
    drop(runtime);
    assert_clean("AgentCore", &printed, &expected);
}

// ---------------------------------------------------------------------------------------------------------------
// Local

fn local_builder(url: &str) -> LocalBuilder {
    Local::builder()
        .base_url(url)
        .api_key(LOCAL_KEY)
        .header("x-gateway-key", LOCAL_HEADER_VALUE)
        .model("emulated")
        .tool(lookup())
        .retry(quick_retry())
}

async fn local(script: Script) -> (LocalEmulator, Local) {
    let emulator = LocalEmulator::start(script).await.expect("the chat emulator starts");
    let provider = local_builder(&emulator.base_url()).build().expect("the Local provider builds");
    (emulator, provider)
}

/// Whether the emulator received `header: value` on some request (compared, never printed).
fn received(emulator: &LocalEmulator, header: &str, value: &str) -> bool {
    emulator
        .request_headers()
        .iter()
        .any(|headers| headers.get(header).is_some_and(|v| v.as_bytes() == value.as_bytes()))
}

async fn local_sessions(printed: &mut Printed, expected: &mut Expected) {
    // Configuration: the builder, the chat client's configuration, the request type, the provider.
    printed.debug("LocalBuilder", &local_builder("http://127.0.0.1:9"));
    // The chat client's configuration and the client are private: the provider holds (and prints) them.
    let configured = local_builder("http://127.0.0.1:9").http_options(HttpOptions::new());
    printed.any("LocalBuilder::build (chat client configured)", &configured.clone().build());
    let bad = configured.header("x-other", format!("{LOCAL_HEADER_VALUE}\n"));
    printed.any("LocalBuilder::build (header value invalid)", &bad.build());
    printed.debug("ChatRequest", &ChatRequest::new("emulated", vec![json!({"role": "user", "content": "hi"})]));
    let with_newline = Local::builder().model("m").api_key(format!("{LOCAL_KEY}\n")).build();
    assert!(matches!(with_newline, Err(Error::InvalidOption { .. })), "{with_newline:?}");
    printed.any("Local::build (key not a header value)", &with_newline);

    // Sessions with a tool call, streamed and not.
    for stream in [true, false] {
        let emulator = LocalEmulator::start(tool_script()).await.expect("the chat emulator starts");
        expected.push(line(&["connecting to", &authority(&emulator.base_url())]));
        let provider = local_builder(&emulator.base_url()).stream(stream).build().expect("builds");
        printed.debug("Local", &provider);
        let handler = tool_fn(|_, input| async move { Ok(format!("sunny in {}", input["city"])) });
        let options = SessionOptions::new().prompt("Weather in Oslo?").record_content(true).timeout(RUN_TIMEOUT);
        let outcome = Session::run(&provider, handler, options).await;
        assert!(printed.outcome(&format!("Local tool session (stream {stream})"), &outcome), "{outcome:?}");
        assert!(received(&emulator, "authorization", &format!("Bearer {LOCAL_KEY}")), "the key was sent");
        assert!(received(&emulator, "x-gateway-key", LOCAL_HEADER_VALUE), "the extra header was sent");
    }

    // A per-run key (a gateway lane), and a per-run key that is not a header value. The request a provider is
    // opened with carries it among its options; the handler sees the session's information.
    let script =
        Script::new().turn(ScriptTurn::tool_call("call_1", "lookup", json!({}))).turn(ScriptTurn::text("lane"));
    let (emulator, provider) = local(script).await;
    let options = SessionOptions::new()
        .model_config(ModelConfig::new().credential(LOCAL_RUN_KEY).metadata("lane", "search"))
        .metadata("team", "search")
        .prompt("go")
        .timeout(RUN_TIMEOUT);
    printed.debug("SessionOptions (per-run key)", &options);
    let mut open = OpenRequest::default();
    open.model_config = ModelConfig::new().credential(LOCAL_RUN_KEY).destination(emulator.base_url());
    printed.debug("OpenRequest (per-run key)", &open);
    printed.debug("TurnInput", &TurnInput::Kickoff { prompt: "go".into(), outcome: None });
    let infos = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&infos);
    let handler = tool_fn_with_info(move |call, info| {
        seen.lock().unwrap_or_else(PoisonError::into_inner).push((
            format!("{call:?}"),
            format!("{info:?}"),
            format!("{info:#?}"),
        ));
        async { Ok("looked up".to_string()) }
    });
    let outcome = Session::run(&provider, handler, options).await;
    for (index, (call, info, pretty)) in infos.lock().unwrap_or_else(PoisonError::into_inner).iter().enumerate() {
        printed.0.push((format!("ToolUse {index} {{:?}}"), call.clone()));
        printed.0.push((format!("SessionInfo {index} {{:?}}"), info.clone()));
        printed.0.push((format!("SessionInfo {index} {{:#?}}"), pretty.clone()));
    }
    assert!(
        !infos.lock().unwrap_or_else(PoisonError::into_inner).is_empty(),
        "the handler saw its session: {outcome:?}"
    );
    assert!(printed.outcome("Local per-run key", &outcome), "{outcome:?}");
    assert!(received(&emulator, "authorization", &format!("Bearer {LOCAL_RUN_KEY}")), "the per-run key was sent");
    let options =
        SessionOptions::new().model_config(ModelConfig::new().credential(format!("{LOCAL_RUN_KEY}\n"))).prompt("go");
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(!printed.outcome("Local per-run key not a header value", &outcome), "{outcome:?}");

    // HTTP errors: 500 and 429 retried, 401 not.
    for (status, must_succeed) in [(500, true), (429, true), (401, false)] {
        let (_emulator, provider) = local(faulted(http_error(status))).await;
        let outcome = Session::run(&provider, NoTools, SessionOptions::new().prompt("go")).await;
        let succeeded = printed.outcome(&format!("Local HTTP {status}"), &outcome);
        assert_eq!(succeeded, must_succeed, "HTTP {status}: {outcome:?}");
    }

    // A chunk that is not JSON; a stall past the response timeout.
    let (_emulator, provider) = local(faulted(Fault::MalformedFrame)).await;
    let outcome = Session::run(&provider, NoTools, SessionOptions::new().prompt("go")).await;
    printed.outcome("Local malformed chunk", &outcome);
    let emulator = LocalEmulator::start(faulted(Fault::Stall { duration: Duration::from_secs(60) })).await.expect("up");
    let provider = local_builder(&emulator.base_url())
        .request_timeout(Duration::from_millis(200))
        .idle_timeout(Duration::from_millis(200))
        .retry(RetryPolicy::none())
        .build()
        .expect("builds");
    let outcome = Session::run(&provider, NoTools, SessionOptions::new().prompt("go").timeout(RUN_TIMEOUT)).await;
    assert!(!printed.outcome("Local stall", &outcome), "{outcome:?}");

    // A live session.
    let script = Script::new().turn(ScriptTurn::text("first")).turn(ScriptTurn::text("second"));
    let (_emulator, provider) = local(script).await;
    let options = SessionOptions::new().prompt("one").timeout(RUN_TIMEOUT);
    let mut handle = Session::start(Arc::new(provider), NoTools, options).await.expect("started");
    printed.debug("Local SessionHandle", &handle);
    let first = handle.next_result().await;
    assert!(printed.outcome("Local live result 1", &first), "{first:?}");
    handle.message("two").expect("a follow-up");
    printed.debug("Local live notification", &handle.next_notification().await);
    handle.close().await;

    // Provisioning (the in-process registry), a session on the agent, teardown.
    let (_emulator, provider) = local(Script::new().turn(ScriptTurn::text("provisioned"))).await;
    let handle = provider.provision(&agent_spec("secrets_local", "openai:gpt-4.1"), None).await;
    printed.any("Local provision", &handle);
    let handle = handle.expect("provisioned");
    let options = SessionOptions::new().agent(handle.clone()).prompt("go").timeout(RUN_TIMEOUT);
    let outcome = Session::run(&provider, NoTools, options).await;
    assert!(printed.outcome("Local provisioned session", &outcome), "{outcome:?}");
    printed.any("Local teardown", &provider.teardown(&handle).await);

    // A refused connection.
    let provider = local_builder(REFUSED).build().expect("builds");
    let outcome = Session::run(&provider, NoTools, SessionOptions::new().prompt("go").timeout(RUN_TIMEOUT)).await;
    assert!(!printed.outcome("Local refused connection", &outcome), "{outcome:?}");
}

#[test]
fn local_sessions_print_no_secret() {
    capture();
    let mut printed = Printed::default();
    let thread = "local_sessions_print_no_secret";
    let mut expected = vec![
        line(&[" TRACE ", thread, "hyper_util::client"]),
        line(&[" WARN ", thread, "gen_ai.provider.name=\"local\"", "managed_agents_core::http::client"]),
    ];
    let runtime = runtime();
    runtime.block_on(local_sessions(&mut printed, &mut expected));
    drop(runtime);
    assert_clean("Local", &printed, &expected);
}

// ---------------------------------------------------------------------------------------------------------------
// The `from_env` paths, in a child process

/// Set in the child's environment: the child runs only when it is set.
const CHILD: &str = "MANAGED_AGENTS_SECRETS_CHILD";
/// The Claude agent the child runs on.
const CHILD_CLAUDE_AGENT: &str = "MANAGED_AGENTS_SECRETS_CLAUDE_AGENT";
/// The Claude environment the child runs in.
const CHILD_CLAUDE_ENVIRONMENT: &str = "MANAGED_AGENTS_SECRETS_CLAUDE_ENVIRONMENT";
/// The AgentCore harness the child runs on.
const CHILD_HARNESS: &str = "MANAGED_AGENTS_SECRETS_HARNESS";
/// What the child prints once it has run and checked everything.
const CHILD_DONE: &str = "from_env child: every provider ran from the environment and printed no secret";

/// Runs this binary's [`from_env_child`] in a child process whose environment holds the secrets (as
/// `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` …) and points at three
/// emulators served from this process; the child runs a session on each provider built by `from_env` and checks
/// its own capture; this test checks the child succeeded and printed no secret either.
#[test]
fn from_env_paths_print_no_secret() {
    capture();
    let runtime = runtime();
    let text = || Script::new().turn(ScriptTurn::text("from the environment"));
    let (claude, agentcore, local) = runtime.block_on(async {
        (
            ClaudeEmulator::start(text()).await.expect("Claude emulator"),
            AgentCoreEmulator::start(text()).await.expect("AgentCore emulator"),
            LocalEmulator::start(text()).await.expect("chat emulator"),
        )
    });
    let (agent, environment) = claude.seed_agent();
    let mut command = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    command.args(["from_env_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if ["AWS_", "ANTHROPIC_", "OPENAI_", "AGENTCORE_"].iter().any(|prefix| name.starts_with(prefix)) {
            command.env_remove(name);
        }
    }
    command
        .env(CHILD, "1")
        .env(CHILD_CLAUDE_AGENT, agent)
        .env(CHILD_CLAUDE_ENVIRONMENT, environment)
        .env(CHILD_HARNESS, agentcore.harness_arn())
        .env("ANTHROPIC_API_KEY", CLAUDE_KEY)
        .env("ANTHROPIC_BASE_URL", claude.base_url())
        .env("OPENAI_API_KEY", LOCAL_KEY)
        .env("OPENAI_BASE_URL", local.base_url())
        .env("OPENAI_MODEL", "emulated")
        .env("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
        .env("AWS_SESSION_TOKEN", AWS_SESSION_TOKEN)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", agentcore.base_url())
        .env("AWS_CONFIG_FILE", "/nonexistent/managed-agents-secrets/config")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/managed-agents-secrets/credentials")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    // The emulators are served by the runtime's workers while this thread waits for the child.
    let output = command.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut printed = Printed::default();
    printed.0.push(("child stdout".into(), stdout.to_string()));
    printed.0.push(("child stderr".into(), stderr.to_string()));
    let leaked: Vec<_> = leaks(&stdout).into_iter().chain(leaks(&stderr)).collect();
    assert!(leaked.is_empty(), "the child printed a secret: {leaked:?}");
    assert!(
        output.status.success(),
        "the child failed ({}):\n{}\n{}",
        output.status,
        redact_all(&stdout),
        redact_all(&stderr)
    );
    assert!(stdout.contains(CHILD_DONE), "the child ran its checks:\n{}", redact_all(&stdout));
    assert_eq!(claude.log().inputs().len(), 1, "the child's Claude session reached the emulator");
    assert_eq!(agentcore.requests().len(), 1, "the child's AgentCore session reached the emulator");
    assert!(agentcore.requests().iter().all(|r| r.signed), "signed with the environment's credentials");
    assert!(received(&local, "authorization", &format!("Bearer {LOCAL_KEY}")), "the child used OPENAI_API_KEY");
    drop((claude, agentcore, local));
    drop(runtime);
    assert_clean("from_env (parent)", &printed, &Vec::new());
}

/// `text` with every line that holds a secret redacted.
fn redact_all(text: &str) -> String {
    text.lines().map(redact).collect::<Vec<_>>().join("\n")
}

/// The child of [`from_env_paths_print_no_secret`]: builds each provider (and its builder, and Claude's client)
/// from the environment, runs a session on each, and checks its own capture and printed values.
#[test]
#[ignore = "run by from_env_paths_print_no_secret in a child process, with the secrets in its environment"]
fn from_env_child() {
    if std::env::var_os(CHILD).is_none() {
        println!("skipped: from_env_child runs only as the child of from_env_paths_print_no_secret");
        return;
    }
    capture();
    let env = |name: &str| std::env::var(name).expect("set by the parent");
    let mut printed = Printed::default();
    let runtime = runtime();
    runtime.block_on(async {
        // Claude.
        printed.debug("ClaudeManagedAgentsBuilder::from_env", &ClaudeManagedAgentsBuilder::from_env());
        let provider = ClaudeManagedAgents::from_env();
        printed.any("ClaudeManagedAgents::from_env", &provider);
        let provider = provider.expect("Claude from the environment");
        let options = SessionOptions::new()
            .agent_id(env(CHILD_CLAUDE_AGENT))
            .environment_id(env(CHILD_CLAUDE_ENVIRONMENT))
            .prompt("go")
            .timeout(RUN_TIMEOUT);
        let outcome = Session::run(&provider, NoTools, options).await;
        assert!(printed.outcome("Claude from_env session", &outcome), "{outcome:?}");

        // Local.
        printed.debug("LocalBuilder::from_env", &LocalBuilder::from_env());
        let provider = Local::from_env();
        printed.any("Local::from_env", &provider);
        let provider = provider.expect("Local from the environment");
        let outcome = Session::run(&provider, NoTools, SessionOptions::new().prompt("go").timeout(RUN_TIMEOUT)).await;
        assert!(printed.outcome("Local from_env session", &outcome), "{outcome:?}");

        // AgentCore, on the standard AWS chain (the environment's credentials and endpoint).
        printed.debug("BedrockAgentCoreBuilder::from_env", &BedrockAgentCoreBuilder::from_env().await);
        let loaded = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .load()
            .await;
        printed.debug("aws SdkConfig (from the environment)", &loaded);
        let provider = BedrockAgentCore::from_env().await;
        printed.any("BedrockAgentCore::from_env", &provider);
        let provider = provider.expect("AgentCore from the environment");
        printed.debug("aws Config (from the environment)", provider.client().config());
        let options = SessionOptions::new().agent_id(env(CHILD_HARNESS)).prompt("go").timeout(RUN_TIMEOUT);
        let outcome = Session::run(&provider, NoTools, options).await;
        assert!(printed.outcome("AgentCore from_env session", &outcome), "{outcome:?}");
    });
    drop(runtime);
    let expected = vec![
        line(&[" TRACE ", "aws_sigv4::http_request::sign", "signing request"]),
        line(&["aws_config", "loaded credentials", "Environment"]),
        line(&["gen_ai.provider.name=\"claude\"", "connecting to", &authority(&env("ANTHROPIC_BASE_URL"))]),
        line(&["gen_ai.provider.name=\"local\"", "connecting to", &authority(&env("OPENAI_BASE_URL"))]),
        line(&["gen_ai.provider.name=\"agentcore\"", "connecting to", &authority(&env("AWS_ENDPOINT_URL"))]),
    ];
    assert_clean("from_env (child)", &printed, &expected);
    println!("{CHILD_DONE}");
}
