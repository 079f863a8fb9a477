//! The official `anthropic` Python SDK against the emulator: runs `tests/sdk/claude_sdk_check.py` (every call it
//! makes must succeed and every response must pass the SDK's strict validation). Ignored by default: it needs a
//! Python with the SDK version pinned in `tests/sdk/requirements.txt`.
//!
//! ```text
//! python3 -m venv /tmp/sdkvenv && /tmp/sdkvenv/bin/pip install -r tests/sdk/requirements.txt
//! CLAUDE_SDK_PYTHON=/tmp/sdkvenv/bin/python cargo test -p managed-agents-claude --features emulator --test sdk -- --ignored
//! ```
//!
//! The scripts are the ones `examples/serve_claude_emulator.rs` plays (each session: a `get_weather` tool call,
//! then text).

use std::path::PathBuf;
use std::process::Command;

use managed_agents_claude::emulator::ClaudeEmulator;

/// The example, for its script: the SDK is checked against what the example serves.
#[path = "../examples/serve_claude_emulator.rs"]
#[allow(dead_code)] // the example's `main`
mod example;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs CLAUDE_SDK_PYTHON: a Python with the pinned `anthropic` SDK"]
async fn the_official_python_sdk_accepts_the_emulator() {
    let python = std::env::var("CLAUDE_SDK_PYTHON").expect("CLAUDE_SDK_PYTHON names a Python with the SDK");
    let check: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "..", "..", "tests", "sdk", "claude_sdk_check.py"].iter().collect();
    let emulator = ClaudeEmulator::start(example::scripts()).await.unwrap();
    let base_url = emulator.base_url();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python).arg(check).arg(base_url).env_remove("ANTHROPIC_API_KEY").output()
    })
    .await
    .unwrap()
    .expect("the Python interpreter runs");
    assert!(
        output.status.success(),
        "the SDK check failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
