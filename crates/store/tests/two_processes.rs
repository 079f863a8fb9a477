//! Two OS processes writing one database file at once lose no update.
//!
//! The test runs this test binary twice more as writers (`--exact` this test, with the role and the database
//! path in the environment). Each writer opens the store, says `ready` on stdout and waits for a line on stdin;
//! once both are ready the parent releases them together. Each then appends [`UPDATES`] entries to one array with
//! `update` (a read-modify-write over compare-and-swap). The parent checks that all of them are there, each
//! writer's in its own order.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use managed_agents_core::provision::{ProvisionStore, update};
use managed_agents_store::SqliteStore;
use serde_json::{Value, json};

const TEST_NAME: &str = "two_processes_writing_one_file_lose_no_update";
const ROLE_ENV: &str = "MANAGED_AGENTS_STORE_TEST_WRITER";
const PATH_ENV: &str = "MANAGED_AGENTS_STORE_TEST_DB";
const KEY: &str = "tags:shared";
const UPDATES: usize = 200;
/// Marks what a writer prints for the parent (the test harness prints its own output around it).
const MARK: &str = "store-writer:";
/// How long a writer may take for all its updates before it gives up (a hang fails instead of blocking CI).
const WRITER_DEADLINE: Duration = Duration::from_secs(120);

#[test]
fn two_processes_writing_one_file_lose_no_update() {
    match (std::env::var(ROLE_ENV), std::env::var(PATH_ENV)) {
        (Ok(role), Ok(path)) => writer(&role, &path),
        _ => parent(),
    }
}

struct Writer {
    role: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Writer {
    fn spawn(role: &'static str, path: &std::path::Path) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .env(PATH_ENV, path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn a writer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Self { role, child, stdin, stdout }
    }

    /// The next line this writer addressed to the parent, without the mark; `None` at end of output.
    fn next_message(&mut self) -> Option<String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).expect("read a writer's output") == 0 {
                return None;
            }
            // The harness may have started the line (`test … ... `) before the writer's message.
            if let Some((_, message)) = line.trim_end().split_once(MARK) {
                return Some(message.to_string());
            }
        }
    }
}

fn parent() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("shared.sqlite3");
    let mut writers = [Writer::spawn("a", &path), Writer::spawn("b", &path)];
    for writer in &mut writers {
        assert_eq!(writer.next_message().as_deref(), Some("ready"), "writer {} did not get ready", writer.role);
    }
    let started = Instant::now();
    for writer in &mut writers {
        writeln!(writer.stdin, "go").and_then(|()| writer.stdin.flush()).expect("release a writer");
    }
    let mut reports = Vec::new();
    for writer in &mut writers {
        let done = writer.next_message();
        let status = writer.child.wait().expect("wait for a writer");
        assert!(status.success(), "writer {} failed: {status}", writer.role);
        let done = done.unwrap_or_else(|| panic!("writer {} ended without reporting", writer.role));
        reports
            .push(done.strip_prefix("done ").unwrap_or_else(|| panic!("writer {}: {done}", writer.role)).to_string());
    }
    let elapsed = started.elapsed();

    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let entries = runtime.block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        store.get(KEY).await.expect("get").expect("the array exists")
    });
    let entries: Vec<&str> =
        entries.as_array().expect("an array").iter().map(|entry| entry.as_str().expect("a string")).collect();
    assert_eq!(entries.len(), 2 * UPDATES, "lost updates");
    for role in ["a", "b"] {
        let mine: Vec<&str> = entries.iter().copied().filter(|entry| entry.starts_with(role)).collect();
        let expected: Vec<String> = (0..UPDATES).map(|n| format!("{role}{n}")).collect();
        assert_eq!(mine, expected, "writer {role}'s entries, in its order");
    }
    // How interleaved the two were (not asserted: correctness does not depend on it, but a value of 1 would
    // mean this run did not exercise concurrent writers).
    let switches = entries.windows(2).filter(|pair| pair[0].as_bytes()[0] != pair[1].as_bytes()[0]).count();
    eprintln!(
        "two writers x {UPDATES} updates in {elapsed:?}: {switches} switches between writers; compare-and-swap \
         retries and most attempts of one update: {reports:?}"
    );
}

fn writer(role: &str, path: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let mut out = std::io::stdout().lock();
    let store = runtime.block_on(SqliteStore::open(path)).expect("the writer opens the store");
    writeln!(out, "{MARK}ready").and_then(|()| out.flush()).expect("report ready");
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).expect("wait for go");
    assert_eq!(go.trim(), "go", "the parent went away");

    let mut calls = 0usize;
    let mut most_calls = 0usize;
    runtime.block_on(async {
        tokio::time::timeout(WRITER_DEADLINE, async {
            for n in 0..UPDATES {
                let entry = format!("{role}{n}");
                let mut these = 0usize;
                update(&store, KEY, |current| {
                    these += 1;
                    let mut entries = current.cloned().unwrap_or_else(|| json!([]));
                    entries.as_array_mut().expect("an array").push(Value::String(entry.clone()));
                    Some(entries)
                })
                .await
                .expect("update");
                calls += these;
                most_calls = most_calls.max(these);
            }
        })
        .await
        .expect("the writer finished in time")
    });
    writeln!(out, "{MARK}done retries={} most={most_calls}", calls - UPDATES)
        .and_then(|()| out.flush())
        .expect("report done");
}
