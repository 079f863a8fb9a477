//! Two OS processes on one database file: they lose no update, and they take turns under one conversation's
//! lease.
//!
//! Each test runs this test binary twice more as workers (`--exact` that test, with the role and the database
//! path in the environment). Each worker opens the store, says `ready` on stdout and waits for a line on stdin;
//! once both are ready the parent releases them together.
//!
//! * Writers append [`UPDATES`] entries each to one array with `update` (a read-modify-write over
//!   compare-and-swap); the parent checks that all of them are there, each writer's in its own order.
//! * Lease workers each drive one conversation [`TURNS`] times: take its lease (polling while the other holds
//!   it), load it, append a turn, save it under the lease, give the lease up. The parent checks that no turn was
//!   lost and that the two processes' holding times never overlapped.
//! * Ledger workers each record their own answer to the same [`CALLS`] tool calls, each in its own order, and
//!   report the answers the ledger returned. The parent checks that for every call both got one and the same answer —
//!   one of the two — and that it is the one recorded.
#![cfg(feature = "sqlite")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use managed_agents_core::conversation::{Conversation, SessionStore};
use managed_agents_core::ledger::{LedgerEntry, ToolLedger};
use managed_agents_core::provision::{ProvisionStore, update};
use managed_agents_core::{ToolResult, ToolUse};
use managed_agents_store::SqliteStore;
use serde_json::{Value, json};

const TEST_NAME: &str = "two_processes_writing_one_file_lose_no_update";
const LEASE_TEST_NAME: &str = "two_processes_take_turns_under_one_lease";
const LEDGER_TEST_NAME: &str = "two_processes_answering_one_call_record_one_answer";
const ROLE_ENV: &str = "MANAGED_AGENTS_STORE_TEST_WRITER";
const PATH_ENV: &str = "MANAGED_AGENTS_STORE_TEST_DB";
const KEY: &str = "tags:shared";
const UPDATES: usize = 200;
/// Marks what a writer prints for the parent (the test harness prints its own output around it).
const MARK: &str = "store-writer:";
/// How long a writer may take for all its updates before it gives up (a hang fails instead of blocking CI).
const WRITER_DEADLINE: Duration = Duration::from_secs(120);
/// How many turns each lease worker takes.
const TURNS: usize = 40;
/// The conversation the lease workers share.
const CONVERSATION: &str = "shared-conversation";
/// Marks a test's workers (the env var holds `<mark>:<role>`).
const LEASE_ROLE: &str = "lease";
/// Marks the ledger test's workers.
const LEDGER_ROLE: &str = "ledger";
/// How many calls both ledger workers answer.
const CALLS: usize = 200;
/// The ledger scope the ledger workers share.
const LEDGER_SESSION: &str = "local:shared-session";

#[test]
fn two_processes_take_turns_under_one_lease() {
    match (std::env::var(ROLE_ENV), std::env::var(PATH_ENV)) {
        (Ok(role), Ok(path)) => {
            // (A writer of the other test never runs this one: workers run one test, `--exact`.)
            if let Some(role) = role.strip_prefix("lease:") {
                lease_worker(role, &path);
            }
        }
        _ => lease_parent(),
    }
}

#[test]
fn two_processes_writing_one_file_lose_no_update() {
    match (std::env::var(ROLE_ENV), std::env::var(PATH_ENV)) {
        (Ok(role), Ok(path)) if !role.contains(':') => writer(&role, &path),
        (Ok(_), Ok(_)) => {} // another test's worker never runs this test (`--exact`): nothing to do
        _ => parent(),
    }
}

#[test]
fn two_processes_answering_one_call_record_one_answer() {
    match (std::env::var(ROLE_ENV), std::env::var(PATH_ENV)) {
        (Ok(role), Ok(path)) => {
            if let Some(role) = role.strip_prefix("ledger:") {
                ledger_worker(role, &path);
            }
        }
        _ => ledger_parent(),
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
        Self::spawn_for(TEST_NAME, role, role.to_string(), path)
    }

    /// Runs `test` in a new process of this binary, as worker `role` (`env_role` in the environment).
    fn spawn_for(test: &str, role: &'static str, env_role: String, path: &std::path::Path) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut child = Command::new(exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, env_role)
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

    /// Waits for this worker to end successfully; its report (what it said after `done `).
    fn finish(&mut self) -> String {
        let done = self.next_message();
        let status = self.child.wait().expect("wait for a worker");
        assert!(status.success(), "worker {} failed: {status}", self.role);
        let done = done.unwrap_or_else(|| panic!("worker {} ended without reporting", self.role));
        done.strip_prefix("done ").unwrap_or_else(|| panic!("worker {}: {done}", self.role)).to_string()
    }
}

/// Waits until every worker is ready, then lets them all go.
fn release_together(workers: &mut [Writer]) {
    for worker in workers.iter_mut() {
        assert_eq!(worker.next_message().as_deref(), Some("ready"), "worker {} did not get ready", worker.role);
    }
    for worker in workers.iter_mut() {
        writeln!(worker.stdin, "go").and_then(|()| worker.stdin.flush()).expect("release a worker");
    }
}

fn parent() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("shared.sqlite3");
    let mut writers = [Writer::spawn("a", &path), Writer::spawn("b", &path)];
    let started = Instant::now();
    release_together(&mut writers);
    let reports: Vec<String> = writers.iter_mut().map(Writer::finish).collect();
    let elapsed = started.elapsed();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
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

/// A worker's start: its runtime, the store opened, `ready` said, and `go` heard from the parent.
fn start_worker(path: &str) -> (tokio::runtime::Runtime, SqliteStore, std::io::StdoutLock<'static>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut out = std::io::stdout().lock();
    let store = runtime.block_on(SqliteStore::open(path)).expect("the worker opens the store");
    writeln!(out, "{MARK}ready").and_then(|()| out.flush()).expect("report ready");
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).expect("wait for go");
    assert_eq!(go.trim(), "go", "the parent went away");
    (runtime, store, out)
}

fn writer(role: &str, path: &str) {
    let (runtime, store, mut out) = start_worker(path);

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

/// Starts two lease workers on one file, releases them together, and checks their turns.
fn lease_parent() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("leases.sqlite3");
    let mut workers =
        ["a", "b"].map(|role| Writer::spawn_for(LEASE_TEST_NAME, role, format!("{LEASE_ROLE}:{role}"), &path));
    release_together(&mut workers);
    // Each worker reports the times (nanoseconds since the epoch, one clock for both) it held the lease.
    let mut held: Vec<(u128, u128, &str)> = Vec::new();
    for worker in &mut workers {
        let spans = worker.finish();
        let spans: Vec<(u128, u128)> = serde_json::from_str::<Vec<(String, String)>>(&spans)
            .expect("the worker's spans")
            .into_iter()
            .map(|(from, to)| (from.parse().expect("a time"), to.parse().expect("a time")))
            .collect();
        assert_eq!(spans.len(), TURNS, "worker {} took every turn", worker.role);
        held.extend(spans.into_iter().map(|(from, to)| (from, to, worker.role)));
    }
    held.sort();
    for pair in held.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two holders at once: {:?} and {:?}", pair[0], pair[1]);
    }
    let switches = held.windows(2).filter(|pair| pair[0].2 != pair[1].2).count();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let conversation = runtime.block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        store.load(CONVERSATION).await.expect("load").expect("the conversation")
    });
    assert_eq!(conversation.requests, 2 * TURNS as u64, "lost turns");
    let turns = conversation.transcript.expect("the transcript");
    assert_eq!(turns.len(), 2 * TURNS, "lost turns");
    for role in ["a", "b"] {
        let mine: Vec<u64> =
            turns.iter().filter(|turn| turn["role"] == role).map(|turn| turn["n"].as_u64().expect("n")).collect();
        assert_eq!(mine, (0..TURNS as u64).collect::<Vec<_>>(), "worker {role}'s turns, in its order");
    }
    eprintln!("two lease workers x {TURNS} turns: {switches} hand-overs between the processes");
}

fn nanos_now() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_nanos()
}

/// Takes [`TURNS`] turns on [`CONVERSATION`] under its lease, and reports when it held it.
fn lease_worker(role: &str, path: &str) {
    let (runtime, store, mut out) = start_worker(path);

    let spans = runtime.block_on(async {
        tokio::time::timeout(WRITER_DEADLINE, async {
            let mut spans = Vec::new();
            for n in 0..TURNS {
                // Poll for the lease while the other worker holds it (a long TTL: it never expires here).
                let lease = loop {
                    match store.acquire(CONVERSATION, role, Duration::from_secs(60)).await.expect("acquire") {
                        Some(lease) => break lease,
                        None => tokio::time::sleep(Duration::from_micros(200)).await,
                    }
                };
                let from = nanos_now();
                let mut conversation = store
                    .load(CONVERSATION)
                    .await
                    .expect("load")
                    .unwrap_or_else(|| Conversation::new(CONVERSATION, "local"));
                conversation.requests += 1;
                conversation.transcript.get_or_insert_with(Vec::new).push(json!({"role": role, "n": n}));
                store.save(&conversation, &lease).await.expect("save under the lease");
                let to = nanos_now();
                store.release(&lease).await.expect("release");
                spans.push((from.to_string(), to.to_string()));
                // Give the other worker a chance at the lease.
                tokio::task::yield_now().await;
            }
            spans
        })
        .await
        .expect("the worker finished in time")
    });
    let spans = serde_json::to_string(&spans).expect("json");
    writeln!(out, "{MARK}done {spans}").and_then(|()| out.flush()).expect("report done");
}

/// The `n`th call both ledger workers answer.
fn call(n: usize) -> ToolUse {
    ToolUse::new(format!("call-{n}"), "charge", json!({"cents": n}))
}

/// Starts two ledger workers on one file, releases them together, and checks the answers they got back.
fn ledger_parent() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("ledger.sqlite3");
    let mut workers =
        ["a", "b"].map(|role| Writer::spawn_for(LEDGER_TEST_NAME, role, format!("{LEDGER_ROLE}:{role}"), &path));
    release_together(&mut workers);
    let mut got: Vec<Vec<String>> = Vec::new();
    for worker in &mut workers {
        let answers: Vec<String> = serde_json::from_str(&worker.finish()).expect("the worker's answers");
        assert_eq!(answers.len(), CALLS, "worker {} answered every call", worker.role);
        got.push(answers);
    }

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let recorded: Vec<String> = runtime.block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        let mut recorded = Vec::new();
        for n in 0..CALLS {
            let call = call(n);
            let entry = store.recorded(LEDGER_SESSION, &call.id).await.expect("recorded").expect("an entry");
            assert!(entry.answers(&call), "{entry:?}");
            recorded.push(entry.result.text);
        }
        recorded
    });
    for n in 0..CALLS {
        let (a, b) = (&got[0][n], &got[1][n]);
        assert_eq!(a, b, "call {n}: both workers got the same answer back");
        assert!(*a == format!("a{n}") || *a == format!("b{n}"), "call {n}: one of theirs, got {a}");
        assert_eq!(*a, recorded[n], "call {n}: the answer returned is the one recorded");
    }
    let won_by_a = recorded.iter().filter(|text| text.starts_with('a')).count();
    // Not asserted (correctness does not depend on it), but all calls won by one worker would mean this run did
    // not exercise two writers at once.
    eprintln!("two ledger workers x {CALLS} calls: worker a's answer recorded for {won_by_a}, b's for the rest");
}

/// Records its own answer to each of the [`CALLS`] calls, and reports the answers the ledger returned.
fn ledger_worker(role: &str, path: &str) {
    let (runtime, store, mut out) = start_worker(path);

    let answers = runtime.block_on(async {
        tokio::time::timeout(WRITER_DEADLINE, async {
            let mut answers = vec![String::new(); CALLS];
            for step in 0..CALLS {
                // Worker a goes in call order, b in another (7919 is a prime not dividing CALLS): each gets to
                // some calls first.
                let n = if role == "a" { step } else { step * 7919 % CALLS };
                let call = call(n);
                let mine = LedgerEntry::new(&call, ToolResult::ok(&call.id, format!("{role}{n}")));
                let recorded = store.record(LEDGER_SESSION, &call.id, &mine).await.expect("record");
                answers[n] = recorded.result.text;
            }
            answers
        })
        .await
        .expect("the worker finished in time")
    });
    let answers = serde_json::to_string(&answers).expect("json");
    writeln!(out, "{MARK}done {answers}").and_then(|()| out.flush()).expect("report done");
}
