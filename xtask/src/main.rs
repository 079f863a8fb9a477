//! Project automation (the cargo-xtask pattern): `cargo xtask ci` runs exactly what `.ci/run` gates on;
//! `cargo xtask bench` runs the benchmarks.

use std::process::{Command, ExitCode};

/// One step: a description and the cargo arguments, with extra environment.
struct Step {
    what: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

/// The gate, in order. The test step is the README's test command.
const CI: &[Step] = &[
    Step { what: "format", args: &["fmt", "--all", "--check"], env: &[] },
    Step {
        what: "lint",
        args: &["clippy", "--workspace", "--all-targets", "--all-features", "--", "-D", "warnings"],
        env: &[],
    },
    Step { what: "test", args: &["test", "--workspace", "--all-features"], env: &[] },
    // The fuzz targets live outside the workspace (running them needs nightly); CI makes sure they build.
    Step {
        what: "fuzz targets build",
        args: &["build", "--manifest-path", "fuzz/Cargo.toml"],
        env: &[("CARGO_TARGET_DIR", "target")],
    },
    Step {
        what: "docs",
        args: &["doc", "--workspace", "--all-features", "--no-deps"],
        env: &[("RUSTDOCFLAGS", "-D warnings")],
    },
];

const BENCH: &[Step] = &[
    Step { what: "bench", args: &["bench", "--workspace", "--all-features"], env: &[] },
    // The peer benchmark lives outside the workspace (so tests never build rig); it shares the target directory.
    Step {
        what: "bench (Local vs rig)",
        args: &["bench", "--manifest-path", "benches/local-vs-rig/Cargo.toml"],
        env: &[("CARGO_TARGET_DIR", "target")],
    },
];

fn run(steps: &[Step]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    // Every step runs from the workspace root, wherever `cargo xtask` was called from.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(std::path::Path::new("."));
    for step in steps {
        eprintln!("xtask: {} — cargo {}", step.what, step.args.join(" "));
        let status = Command::new(&cargo).current_dir(root).args(step.args).envs(step.env.iter().copied()).status();
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask: {} failed ({status})", step.what);
                return ExitCode::FAILURE;
            }
            Err(error) => {
                eprintln!("xtask: cannot run cargo: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("ci") => run(CI),
        Some("bench") => run(BENCH),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|bench>\n  ci     format, lint, test and doc checks (what .ci/run gates on)\n  bench  the criterion benchmarks"
            );
            ExitCode::FAILURE
        }
    }
}
