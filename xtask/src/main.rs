//! Project automation (the cargo-xtask pattern): `cargo xtask ci` runs exactly what `.ci/run` gates on; the
//! other commands run one part of it, or the benchmarks.
//!
//! The gate checks what users build, not only the workspace with every feature on (features are unified across
//! a workspace build, which hides a crate that forgets to enable one):
//!
//! * **features**: each library crate alone, with no feature, each single feature and all (`cargo hack`), each
//!   crate's own tests with only its own dev-dependencies (`cargo test -p <crate>`), and each example of the
//!   umbrella with only the features it requires;
//! * **downstream**: the packages in `tests/downstream/`, outside the workspace, each depending on exactly what a
//!   user depends on and running a session against an emulator;
//! * **sdk**: each emulator served to the provider's official Python SDK (`tests/sdk/`).
//!
//! Every step prints the command it runs and how long it took; one target directory (`./target`) serves all.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod api;
mod msrv;
mod registry;

/// The library crates users depend on, in dependency order.
const LIBRARIES: &[&str] = &[
    "managed-agents-core",
    "managed-agents-toolset",
    "managed-agents-conformance",
    "managed-agents-local",
    "managed-agents-claude",
    "managed-agents-agentcore",
    "managed-agents",
    "managed-agents-store",
    "managed-agents-host",
    "managed-agents-console",
    "managed-agents-mcp",
    "managed-agents-cli", // the `managed-agents` binary: checked alone and per feature like the libraries
];

/// The library crates published for users (the binary crate has no library API), in publish order.
const PUBLISHED_LIBRARIES: &[&str] = &[
    "managed-agents-core",
    "managed-agents-toolset",
    "managed-agents-conformance",
    "managed-agents-local",
    "managed-agents-claude",
    "managed-agents-agentcore",
    "managed-agents-store",
    "managed-agents-host",
    "managed-agents-console",
    "managed-agents-mcp",
    "managed-agents",
];

/// The umbrella's examples and the features each requires (its `required-features` in
/// `crates/managed-agents/Cargo.toml`): each is checked with exactly those, so an example that needs more than it
/// declares fails here rather than for the user who runs it.
const EXAMPLES: &[(&str, &str)] =
    &[("quickstart", ""), ("claude", "claude,emulator"), ("agentcore", "agentcore,emulator"), ("host", "host,store")];

/// The providers whose emulators are checked against the official SDKs.
const SDK_CHECKS: &[SdkCheck] = &[
    SdkCheck {
        package: "managed-agents-claude",
        example: "serve_claude_emulator",
        script: "claude_sdk_check.py",
        args: &["BASE_URL"],
    },
    SdkCheck {
        package: "managed-agents-agentcore",
        example: "serve_agentcore_emulator",
        script: "agentcore_sdk_check.py",
        args: &["BASE_URL", "HARNESS_ARN"],
    },
];

/// Where the SDK checks' Python environment lives (inside the ignored target directory).
const SDK_VENV: &str = "target/sdk-venv";
/// The environment variable `.ci/run` sets to that environment's interpreter.
const SDK_PYTHON_VAR: &str = "MANAGED_AGENTS_SDK_PYTHON";
const SDK_REQUIREMENTS: &str = "tests/sdk/requirements.txt";
/// The directory of the SDK check scripts.
const SDK_DIR: &str = "tests/sdk";
/// Overrides [`SDK_DIR`] (to try the runner with stub scripts).
const SDK_DIR_VAR: &str = "MANAGED_AGENTS_SDK_DIR";

/// One emulator served by the example `example` of `package` (feature `emulator`), checked by `script` (in
/// `tests/sdk`).
///
/// The example prints `KEY=value` lines on stdout, one per entry of `args` in that order (`BASE_URL=…` first),
/// then serves until its stdin closes; the script gets the values as its arguments.
struct SdkCheck {
    package: &'static str,
    example: &'static str,
    script: &'static str,
    args: &'static [&'static str],
}

/// What a step does.
enum Action {
    /// A command, run from the workspace root.
    Run { program: String, args: Vec<String>, env: Vec<(&'static str, String)> },
    /// Copies the workspace's lockfile into a downstream package, so it resolves the same versions as the
    /// workspace (and reuses its build artifacts).
    SeedLockfile { package_dir: PathBuf },
    /// Serves an emulator and runs its SDK check against it.
    Sdk(&'static SdkCheck),
    /// A check written in Rust, here.
    Task { describe: String, run: Box<dyn Fn() -> Result<(), String>> },
}

struct Step {
    name: String,
    action: Action,
}

impl Step {
    fn cargo(name: impl Into<String>, args: &[&str]) -> Self {
        let args = args.iter().map(|a| a.to_string()).collect();
        Self { name: name.into(), action: Action::Run { program: cargo(), args, env: Vec::new() } }
    }

    fn task(
        name: impl Into<String>,
        describe: impl Into<String>,
        run: impl Fn() -> Result<(), String> + 'static,
    ) -> Self {
        Self { name: name.into(), action: Action::Task { describe: describe.into(), run: Box::new(run) } }
    }

    fn env(mut self, key: &'static str, value: impl Into<String>) -> Self {
        if let Action::Run { env, .. } = &mut self.action {
            env.push((key, value.into()));
        }
        self
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// The workspace root, wherever `cargo xtask` was called from.
fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// The shared target directory (absolute): `CARGO_TARGET_DIR` if set, else `<root>/target`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

fn basics() -> Vec<Step> {
    vec![
        Step::cargo("format", &["fmt", "--all", "--check"]),
        Step::cargo("lint", &["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"]),
        // The README's test command.
        Step::cargo("test (workspace, all features)", &["test", "--workspace", "--all-features"]),
    ]
}

/// Each library alone: no feature, each single feature, all features (`cargo hack --each-feature`); then its
/// tests with only its own dev-dependencies. `--each-feature`, not `--feature-powerset`: the AWS SDK is slow to
/// compile and the features are independent.
fn features() -> Vec<Step> {
    let mut steps = Vec::new();
    for library in LIBRARIES {
        // No `--no-dev-deps`: it rewrites the manifests while it runs. A `cargo check` of the library targets
        // does not activate dev-dependency features (resolver 2+), so the check sees only normal dependencies.
        steps.push(Step::cargo(format!("features: {library}"), &["hack", "check", "--each-feature", "-p", library]));
    }
    for library in LIBRARIES {
        steps.push(Step::cargo(format!("tests alone: {library}"), &["test", "-p", library]));
    }
    for (example, features) in EXAMPLES {
        let mut args = vec!["check", "-p", "managed-agents", "--example", example];
        if !features.is_empty() {
            args.extend(["--features", features]);
        }
        steps.push(Step::cargo(format!("example alone: {example}"), &args));
    }
    steps
}

/// The packages (directories with a `Cargo.toml`) in `dir` (relative to the root), sorted; none is an error.
fn packages_in(dir: &str) -> Result<Vec<PathBuf>, String> {
    let dir = root().join(dir);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut packages: Vec<PathBuf> =
        entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.join("Cargo.toml").is_file()).collect();
    packages.sort();
    if packages.is_empty() {
        return Err(format!("no package in {}", dir.display()));
    }
    Ok(packages)
}

/// The packages under `tests/downstream/`: each is checked as a user builds it (`cargo check`: normal
/// dependencies only), then its tests run (a session against an emulator). They share the workspace's target
/// directory and start from its lockfile.
fn downstream() -> Result<Vec<Step>, String> {
    let packages = packages_in("tests/downstream")?;
    let target = target_dir().display().to_string();
    let mut steps = Vec::new();
    for package in packages {
        let name = package.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let manifest = format!("tests/downstream/{name}/Cargo.toml");
        steps.push(Step::cargo(
            format!("downstream {name}: format"),
            &["fmt", "--manifest-path", &manifest, "--", "--check"],
        ));
        steps.push(Step {
            name: format!("downstream {name}: lockfile from the workspace"),
            action: Action::SeedLockfile { package_dir: package.clone() },
        });
        steps.push(
            Step::cargo(format!("downstream {name}: build as a user does"), &["check", "--manifest-path", &manifest])
                .env("CARGO_TARGET_DIR", target.clone()),
        );
        steps.push(
            Step::cargo(format!("downstream {name}: test"), &["test", "--manifest-path", &manifest])
                .env("CARGO_TARGET_DIR", target.clone()),
        );
    }
    Ok(steps)
}

fn sdk() -> Vec<Step> {
    SDK_CHECKS
        .iter()
        .map(|check| Step { name: format!("sdk: {}", check.package), action: Action::Sdk(check) })
        .collect()
}

fn fuzz_and_docs() -> Vec<Step> {
    vec![
        // The fuzz targets live outside the workspace (running them needs nightly); CI makes sure they compile as
        // `cargo fuzz` compiles them, with `--cfg fuzzing` (the wire modules they reach are public only then). That
        // flag changes every fingerprint, hence a target directory of its own; `check`, as linking proves nothing
        // more about the targets' code.
        Step::cargo("fuzz targets compile (--cfg fuzzing)", &["check", "--manifest-path", "fuzz/Cargo.toml"])
            .env("CARGO_TARGET_DIR", target_dir().join("fuzz").display().to_string())
            .env("RUSTFLAGS", "--cfg fuzzing"),
        // The benchmarks and the load driver run only on demand (`cargo xtask bench`, `cargo xtask load`); building
        // them here (in the dev profile, sharing the tests' artifacts) keeps them from rotting.
        Step::cargo(
            "benches and the load driver build",
            &["build", "--workspace", "--all-features", "--benches", "--bins"],
        ),
        // The soak's 30-second version, on the binary the step above built (a fixed seed: a failure replays).
        Step {
            name: "soak (500 sessions per provider, 5 % faults)".into(),
            action: Action::Run {
                program: target_dir().join("debug").join("managed-agents-load").display().to_string(),
                args: SOAK_CI.iter().map(|a| a.to_string()).collect(),
                env: Vec::new(),
            },
        },
        Step::cargo("docs", &["doc", "--workspace", "--all-features", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"),
    ]
}

/// The soak CI runs: 500 sessions × 10 turns on each provider's emulator, 5 % seeded faults.
const SOAK_CI: &[&str] = &["soak", "--sessions", "500", "--turns", "10", "--fault-rate", "0.05", "--seed", "20261130"];

/// The whole soak (`cargo xtask soak`), in release: 1,000 sessions × 10 turns per provider with 5 % faults and
/// a seed drawn from the clock (printed; `--seed N` replays it). Arguments after `soak` replace the defaults.
fn soak(args: &[String]) -> Vec<Step> {
    let passed: Vec<&str> =
        args.iter().skip_while(|a| *a != "soak").skip(1).filter(|a| *a != "--keep-going").map(String::as_str).collect();
    let mut cargo_args = vec!["run", "--release", "-p", "managed-agents-load", "--", "soak"];
    if passed.is_empty() {
        cargo_args.extend(["--sessions", "1000", "--turns", "10", "--fault-rate", "0.05"]);
    } else {
        cargo_args.extend(passed);
    }
    vec![Step::cargo("soak", &cargo_args)]
}

/// The work-queue benchmark (`cargo xtask fleet`): the host's fleet test binary in release, its ignored
/// `bench::postgres` trial — throughput, claim latency p50 / p99, recovery after a kill.
fn fleet() -> Vec<Step> {
    let args = ["test", "--release", "-p", "managed-agents-host", "--all-features", "--test", "fleet", "--"];
    let mut args = args.to_vec();
    args.extend(["--ignored", "--nocapture", "--exact", "bench::postgres"]);
    vec![Step::cargo("fleet benchmark", &args)]
}

fn bench() -> Vec<Step> {
    vec![
        Step::cargo("bench", &["bench", "--workspace", "--all-features"]),
        // The peer benchmark lives outside the workspace (so tests never build rig); it shares the target directory.
        Step::cargo("bench (Local vs rig)", &["bench", "--manifest-path", "benches/local-vs-rig/Cargo.toml"])
            .env("CARGO_TARGET_DIR", target_dir().display().to_string()),
    ]
}

/// The load driver (`crates/load`), built in release: the arguments after `load` are passed through (none: the
/// whole table — Claude at 1,000 and 10,000 sessions, Local and AgentCore at 1,000, memory, long session).
fn load(args: &[String]) -> Vec<Step> {
    let passed = args.iter().skip_while(|a| *a != "load").skip(1).filter(|a| *a != "--keep-going");
    let mut cargo_args = vec!["run", "--release", "-p", "managed-agents-load", "--"];
    cargo_args.extend(passed.map(String::as_str));
    vec![Step::cargo("load", &cargo_args)]
}

const API_DESCRIBE: &str = "RUSTC_BOOTSTRAP=1 cargo doc --no-deps --all-features (rustdoc JSON); public-api";

/// The public surface: each published library's API, regenerated and compared with `docs/api/`.
fn surface() -> Vec<Step> {
    vec![
        Step::task("public API unchanged (docs/api)", API_DESCRIBE, || api::run(false)),
        Step::task("msrv: dependencies within each crate's rust-version", "cargo metadata --all-features", msrv::check),
        Step::task(
            "semver-checks against the last release",
            "cargo semver-checks --baseline-rev <last v* tag>",
            semver,
        ),
    ]
}

/// `cargo semver-checks` against the last release (the newest `v*` tag): a change that breaks 0.1's users fails
/// unless the version says so. Before the first release there is no baseline, and the check starts with it
/// (docs/releasing.md).
fn semver() -> Result<(), String> {
    let tags = Command::new("git")
        .current_dir(root())
        .args(["tag", "--list", "v*", "--sort=-v:refname"])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let tags = String::from_utf8_lossy(&tags.stdout);
    let Some(release) = tags.lines().next().map(str::trim).filter(|t| !t.is_empty()) else {
        eprintln!("xtask: semver: no release tagged yet (v*): the check starts at the first release, 0.1.0");
        return Ok(());
    };
    let installed = Command::new(cargo())
        .args(["semver-checks", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("xtask: semver: installing cargo-semver-checks");
        run_quietly(&cargo(), &["install", "cargo-semver-checks", "--locked"])?;
    }
    let mut args = vec!["semver-checks", "--baseline-rev", release];
    for library in PUBLISHED_LIBRARIES {
        args.extend(["-p", library]);
    }
    run_quietly(&cargo(), &args)
}

fn describe(action: &Action) -> String {
    match action {
        Action::Run { program, args, env } => {
            let env: String = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
            let program = if program.ends_with("cargo") { "cargo" } else { program };
            format!("{env}{program} {}", args.join(" "))
        }
        Action::SeedLockfile { package_dir } => format!("cp Cargo.lock {}/", package_dir.display()),
        Action::Task { describe, .. } => describe.clone(),
        Action::Sdk(check) => format!(
            "cargo build -p {} --features emulator --example {}; serve it; python {} {}",
            check.package,
            check.example,
            sdk_dir().join(check.script).display(),
            check.args.join(" ")
        ),
    }
}

/// Runs `steps` in order, stopping at the first failure unless `keep_going`; prints each command and the time
/// each took.
fn run(steps: Vec<Step>, keep_going: bool) -> ExitCode {
    let total = steps.len();
    let started = Instant::now();
    let mut times: Vec<(String, Duration)> = Vec::new();
    let mut failed = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        eprintln!("\nxtask: [{}/{total}] {} — {}", n + 1, step.name, describe(&step.action));
        let step_started = Instant::now();
        let outcome = execute(&step.action);
        let took = step_started.elapsed();
        times.push((step.name.clone(), took));
        match outcome {
            Ok(()) => eprintln!("xtask: [{}/{total}] {} ok ({:.1} s)", n + 1, step.name, took.as_secs_f64()),
            Err(error) => {
                eprintln!("xtask: [{}/{total}] {} FAILED ({:.1} s): {error}", n + 1, step.name, took.as_secs_f64());
                failed.push(step.name.clone());
                if !keep_going {
                    break;
                }
            }
        }
    }
    eprintln!("\nxtask: step times");
    for (name, took) in &times {
        eprintln!("  {:>7.1} s  {name}", took.as_secs_f64());
    }
    eprintln!("  {:>7.1} s  total", started.elapsed().as_secs_f64());
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for name in &failed {
        eprintln!("xtask: FAILED: {name}");
    }
    ExitCode::FAILURE
}

fn execute(action: &Action) -> Result<(), String> {
    match action {
        Action::Run { program, args, env } => {
            if args.first().map(String::as_str) == Some("hack") {
                require_cargo_hack()?;
            }
            let status = Command::new(program)
                .current_dir(root())
                .args(args)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .status()
                .map_err(|e| format!("cannot run {program}: {e}"))?;
            if status.success() { Ok(()) } else { Err(format!("exited with {status}")) }
        }
        Action::SeedLockfile { package_dir } => {
            std::fs::copy(root().join("Cargo.lock"), package_dir.join("Cargo.lock"))
                .map(drop)
                .map_err(|e| format!("cannot copy the lockfile: {e}"))
        }
        Action::Sdk(check) => sdk_check(check),
        Action::Task { run, .. } => run(),
    }
}

fn require_cargo_hack() -> Result<(), String> {
    let found = Command::new(cargo())
        .args(["hack", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found { Ok(()) } else { Err("cargo-hack is missing: `cargo install cargo-hack --locked` (.ci/run does)".into()) }
}

/// The Python interpreter of the SDK checks: `$MANAGED_AGENTS_SDK_PYTHON` (set by `.ci/run`), else the one of
/// `target/sdk-venv`, created with the pinned requirements when it does not exist yet.
fn sdk_python() -> Result<PathBuf, String> {
    if let Some(python) = std::env::var_os(SDK_PYTHON_VAR).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(python));
    }
    let venv = root().join(SDK_VENV);
    let python = venv.join("bin/python");
    if python.is_file() {
        return Ok(python);
    }
    eprintln!("xtask: sdk: creating {} with {SDK_REQUIREMENTS}", venv.display());
    let venv_arg = venv.display().to_string();
    let python_arg = python.display().to_string();
    run_quietly("python3", &["-m", "venv", &venv_arg])?;
    run_quietly(&python_arg, &["-m", "pip", "install", "--quiet", "-r", SDK_REQUIREMENTS])?;
    Ok(python)
}

fn run_quietly(program: &str, args: &[&str]) -> Result<(), String> {
    let status = Command::new(program)
        .current_dir(root())
        .args(args)
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{program} {}` exited with {status}", args.join(" "))) }
}

/// How long an emulator may take to print its address once built, and to exit once its stdin closes.
const SERVE_TIMEOUT: Duration = Duration::from_secs(60);

fn sdk_dir() -> PathBuf {
    match std::env::var_os(SDK_DIR_VAR).filter(|d| !d.is_empty()) {
        Some(dir) => root().join(dir),
        None => root().join(SDK_DIR),
    }
}

fn sdk_check(check: &SdkCheck) -> Result<(), String> {
    let script = sdk_dir().join(check.script);
    if !script.is_file() {
        return Err(format!("{} is missing", script.display()));
    }
    let python = sdk_python()?;
    let build = ["build", "-p", check.package, "--features", "emulator", "--example", check.example];
    eprintln!("xtask: sdk: cargo {}", build.join(" "));
    run_quietly(&cargo(), &build)?;
    let binary = target_dir().join("debug/examples").join(check.example);
    eprintln!("xtask: sdk: serving {}", binary.display());
    let mut server = Command::new(&binary)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let outcome = serve_and_check(check, &python, &script, &mut server);
    // Closing stdin tells the example to stop; it must then exit cleanly.
    drop(server.stdin.take());
    let exited = wait_with_timeout(&mut server, SERVE_TIMEOUT);
    outcome?;
    match exited {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the emulator example exited with {status} after its stdin closed")),
        Err(error) => Err(error),
    }
}

fn serve_and_check(check: &SdkCheck, python: &Path, script: &Path, server: &mut Child) -> Result<(), String> {
    let stdout = server.stdout.take().ok_or("no stdout from the emulator example")?;
    // Read the address lines on a thread, so that an example that never prints cannot hang the gate; later
    // output is echoed.
    let (lines_tx, lines_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line.clone()).is_err() {
                println!("emulator: {line}");
            }
        }
    });
    let mut values = Vec::new();
    for key in check.args {
        let line = lines_rx
            .recv_timeout(SERVE_TIMEOUT)
            .map_err(|_| format!("the emulator example printed no `{key}=` line within {SERVE_TIMEOUT:?}"))?;
        let value = line
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
            .ok_or_else(|| format!("expected `{key}=…` from the emulator example, got `{line}`"))?;
        eprintln!("xtask: sdk: {key}={value}");
        values.push(value.to_string());
    }
    drop(lines_rx);
    eprintln!("xtask: sdk: {} {} {}", python.display(), script.display(), values.join(" "));
    let _ = std::io::stderr().flush();
    let status = Command::new(python)
        .current_dir(root())
        .arg(script)
        .args(&values)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if status.success() { Ok(()) } else { Err(format!("{} exited with {status}", script.display())) }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> Result<std::process::ExitStatus, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the emulator example did not exit within {timeout:?} of its stdin closing"));
            }
            Err(error) => return Err(format!("cannot wait for the emulator example: {error}")),
        }
    }
}

const USAGE: &str = "usage: cargo xtask <command> [--keep-going]
  ci          everything .ci/run gates on, in order: format, lint, workspace tests, features, downstream,
              package, registry, api, sdk, fuzz targets compile, benches and the load driver build, a 30-second
              soak, docs
  features    each library crate alone with no feature, each single feature and all (cargo hack), its tests
              with only its own dev-dependencies, and each example with only its required features
  downstream  the packages in tests/downstream (outside the workspace), as users build them
  sdk         each emulator against the provider's official Python SDK (tests/sdk)
  package     cargo package of every published crate, verified
  registry    package, then the packages of tests/registry: our crates by version only, resolved from the
              packed .crate files (and shown to resolve nowhere else), their tests run
  api         each published library's public API, regenerated from rustdoc JSON and compared with docs/api
              (`api --update` writes the listings)
  bench       the criterion benchmarks
  load [ARGS] the load driver in release (crates/load): `load --sessions 10000` runs 10,000 live Claude
              sessions; no ARGS runs the whole table (`load --help` lists its commands)
  fleet       the work-queue benchmark in release (crates/host/tests/fleet.rs): 10,000 conversations drained
              by 8 worker processes on the PostgreSQL at MANAGED_AGENTS_POSTGRES_URL (`.ci/postgres.sh start`
              prints one); MANAGED_AGENTS_FLEET_BENCH_CONVERSATIONS / _WORKERS change the size
  soak [ARGS] the soak in release: 1,000 sessions x 10 turns on each provider's emulator with 5 % seeded
              faults (ARGS replace those, e.g. `soak --seed 7 --provider claude`)
--keep-going runs every step even after one fails (and still fails at the end)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let keep_going = args.iter().any(|a| a == "--keep-going");
    let command = args.iter().find(|a| !a.starts_with("--")).map(String::as_str);
    let steps = match command {
        Some("ci") => {
            let downstream = match downstream() {
                Ok(steps) => steps,
                Err(error) => {
                    eprintln!("xtask: {error}");
                    return ExitCode::FAILURE;
                }
            };
            let registry = match registry::registry() {
                Ok(steps) => steps,
                Err(error) => {
                    eprintln!("xtask: {error}");
                    return ExitCode::FAILURE;
                }
            };
            let mut steps = basics();
            steps.extend(features());
            steps.extend(downstream);
            steps.extend(registry::package());
            steps.extend(registry);
            steps.extend(surface());
            steps.extend(sdk());
            steps.extend(fuzz_and_docs());
            steps
        }
        Some("features") => features(),
        Some("downstream") => match downstream() {
            Ok(steps) => steps,
            Err(error) => {
                eprintln!("xtask: {error}");
                return ExitCode::FAILURE;
            }
        },
        Some("sdk") => sdk(),
        Some("package") => registry::package(),
        Some("registry") => match registry::registry() {
            Ok(steps) => registry::package().into_iter().chain(steps).collect(),
            Err(error) => {
                eprintln!("xtask: {error}");
                return ExitCode::FAILURE;
            }
        },
        Some("api") if args.iter().any(|a| a == "--update") => {
            vec![Step::task("public API listings", API_DESCRIBE, || api::run(true))]
        }
        Some("api") => surface(),
        Some("msrv") => vec![Step::task("msrv", "cargo metadata --all-features", msrv::check)],
        Some("bench") => bench(),
        Some("load") => load(&args),
        Some("soak") => soak(&args),
        Some("fleet") => fleet(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    run(steps, keep_going)
}
