//! `bash`: one persistent `/bin/bash` per toolset, in its own process group.
//!
//! The shell starts at the first call, in the working directory, and keeps its state (current directory,
//! variables, functions, background jobs) from call to call. Each command runs as
//! `{ <command>\n} </dev/null 2>&1` followed by a `printf` of a per-call marker and `$?`, so the output ends at
//! the marker and the exit status follows it; the command's stdin is `/dev/null`, so a program that reads
//! stdin gets end-of-file instead of waiting.
//!
//! A command that runs past its timeout has its whole process group killed (the shell and everything it
//! started that did not leave the group); so does a call whose future is dropped mid-command. The session is
//! then over: every later command is refused until the model passes `restart: true`.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::Duration;

use rustix::process::{Pid, Signal};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::Mutex;

use crate::ToolCallResult;
use crate::args::Args;

/// Put before the output of a command that printed more than the cap (only the end is kept).
pub(crate) const TRUNCATION_MARKER: &str = "[output truncated]\n";

/// ANSI escape sequences (colours, cursor moves), removed from the output.
static ANSI: LazyLock<regex::bytes::Regex> =
    LazyLock::new(|| regex::bytes::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").expect("a valid pattern"));

/// How long closing waits for the killed shell to be reaped.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// What the shell is started with.
#[derive(Debug, Clone)]
pub(crate) struct BashConfig {
    pub(crate) workdir: PathBuf,
    pub(crate) default_timeout: Duration,
    pub(crate) max_output_bytes: usize,
    pub(crate) env: EnvPolicy,
}

/// The environment of the shell: the process's own (at the time the shell starts) or nothing, less the
/// removed names, plus the added pairs.
#[derive(Clone, Default)]
pub(crate) struct EnvPolicy {
    pub(crate) clear: bool,
    pub(crate) remove: Vec<OsString>,
    pub(crate) set: Vec<(OsString, OsString)>,
}

/// The names only: a value added for the shell may be a secret.
impl std::fmt::Debug for EnvPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvPolicy")
            .field("clear", &self.clear)
            .field("remove", &self.remove)
            .field("set", &self.set.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .finish()
    }
}

/// Every variable whose name starts with this is withheld from the shell (the worker's API key, environment
/// key, work secret, session and work ids, …).
pub(crate) const SCRUBBED_PREFIX: &str = "ANTHROPIC_";

impl EnvPolicy {
    fn variables(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = if self.clear {
            Vec::new()
        } else {
            std::env::vars_os()
                .filter(|(name, _)| !name.as_encoded_bytes().starts_with(SCRUBBED_PREFIX.as_bytes()))
                .filter(|(name, _)| !self.remove.contains(name))
                .collect()
        };
        for (name, value) in &self.set {
            vars.retain(|(existing, _)| existing != name);
            vars.push((name.clone(), value.clone()));
        }
        vars
    }
}

/// The input of `bash`.
pub(crate) struct BashArgs {
    command: Option<String>,
    restart: bool,
    timeout: Option<Duration>,
}

impl BashArgs {
    pub(crate) fn parse(input: &Value) -> Result<Self, String> {
        let args = Args::new("bash", input)?;
        let timeout = match args.opt_int("timeout_ms")? {
            None | Some(0) => None,
            Some(ms) if ms < 0 => return Err(args.rejected("timeout_ms", "must not be negative")),
            Some(ms) => Some(Duration::from_millis(ms.unsigned_abs())),
        };
        Ok(Self {
            command: args.opt_string("command")?.map(str::to_owned),
            restart: args.opt_bool("restart")?.unwrap_or(false),
            timeout,
        })
    }
}

enum State {
    /// No shell yet (or it was closed): the next command starts one.
    Idle,
    Running(Box<Session>),
    /// The shell timed out, was interrupted or exited: commands are refused until a restart.
    Terminated,
}

/// The bash tool of one toolset.
pub(crate) struct Bash {
    config: BashConfig,
    state: Mutex<State>,
}

/// Ends the session if a command's future is dropped before the command finished: its output would otherwise
/// be read by the next call.
struct InFlight<'a> {
    state: &'a mut State,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            *self.state = State::Terminated;
        }
    }
}

impl Bash {
    pub(crate) fn new(config: BashConfig) -> Self {
        Self { config, state: Mutex::new(State::Idle) }
    }

    /// Runs one `bash` call. Calls take turns: one shell runs one command at a time.
    pub(crate) async fn call(&self, args: BashArgs) -> ToolCallResult {
        let mut state = self.state.lock().await;
        if args.restart {
            if let State::Running(session) = std::mem::replace(&mut *state, State::Idle) {
                session.close().await;
            }
            return match Session::spawn(&self.config) {
                Ok(session) => {
                    *state = State::Running(Box::new(session));
                    ToolCallResult::ok("bash session restarted")
                }
                Err(e) => ToolCallResult::error(format!("bash: cannot start /bin/bash: {e}")),
            };
        }
        let Some(command) = args.command.filter(|command| !command.is_empty()) else {
            return ToolCallResult::error("bash: command is required");
        };
        if matches!(*state, State::Idle) {
            match Session::spawn(&self.config) {
                Ok(session) => *state = State::Running(Box::new(session)),
                Err(e) => return ToolCallResult::error(format!("bash: cannot start /bin/bash: {e}")),
            }
        }
        let timeout = args.timeout.unwrap_or(self.config.default_timeout);
        let mut flight = InFlight { state: &mut state, done: false };
        let State::Running(session) = &mut *flight.state else {
            flight.done = true;
            return ToolCallResult::error("bash: bash session terminated; restart required");
        };
        let outcome = tokio::time::timeout(timeout, session.exec(&command, self.config.max_output_bytes)).await;
        let result = match outcome {
            Ok(Ok(Exec::Finished { output, code })) => {
                flight.done = true;
                ToolCallResult { text: output, is_error: code != 0 }
            }
            Ok(Ok(Exec::ShellGone { output })) => {
                // The shell exited (`exit`, or it was killed): what it printed is the result, as a failure.
                ToolCallResult::error(output)
            }
            Ok(Err(_)) => ToolCallResult::error("bash: bash session terminated; restart required"),
            Err(_) => ToolCallResult::error(format!("bash: bash command timed out after {}s", seconds(timeout))),
        };
        if !flight.done {
            if let State::Running(session) = std::mem::replace(flight.state, State::Terminated) {
                session.close().await;
            }
            flight.done = true;
        }
        result
    }

    /// Kills the shell's process group, if a shell is running; the next command starts a new shell.
    pub(crate) async fn close(&self) {
        let mut state = self.state.lock().await;
        if let State::Running(session) = std::mem::replace(&mut *state, State::Idle) {
            session.close().await;
        }
        *state = State::Idle;
    }
}

/// A duration in seconds the way Python prints a float (`120.0`, `1.5`).
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 { format!("{secs:.1}") } else { format!("{secs}") }
}

enum Exec {
    /// The marker arrived: the output before it and the exit status after it (-1 when unreadable).
    Finished { output: String, code: i64 },
    /// The shell's output ended before the marker.
    ShellGone { output: String },
}

/// A running shell.
struct Session {
    child: Child,
    stdin: ChildStdin,
    output: pipe::Receiver,
    /// The shell's pid, which is also its process group's id.
    group: Option<Pid>,
}

impl Session {
    fn spawn(config: &BashConfig) -> io::Result<Self> {
        // stdout and stderr are one pipe, so the shell's own messages (a syntax error) are in the output too.
        let (reader, writer) = io::pipe()?;
        let mut command = Command::new("/bin/bash");
        command
            .args(["--noprofile", "--norc"])
            .current_dir(&config.workdir)
            .env_clear()
            .envs(config.env.variables())
            .env("PS1", "")
            .env("PS2", "")
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(writer.try_clone()?)
            .stderr(writer)
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        // The command holds the write end until it is dropped; the output ends only once no copy is left here.
        drop(command);
        let stdin = child.stdin.take().ok_or_else(|| io::Error::other("the shell has no stdin"))?;
        let output = pipe::Receiver::from_owned_fd(reader.into())?;
        let group = child.id().and_then(|pid| i32::try_from(pid).ok()).filter(|&pid| pid > 1).and_then(Pid::from_raw);
        tracing::debug!(pid = ?group, "started the bash session");
        Ok(Self { child, stdin, output, group })
    }

    /// Runs `command`, keeping at most the last `cap` bytes of its output.
    async fn exec(&mut self, command: &str, cap: usize) -> io::Result<Exec> {
        let marker = format!("__ANT_CMD_{:032x}_DONE__", fastrand::u128(..));
        // The marker is written split by an empty quoted string, so only printf's output holds it whole.
        let split = format!("{}''{}", &marker[..8], &marker[8..]);
        let wrapped = format!("{{ {command}\n}} </dev/null 2>&1; printf '\\n{split}%d\\n' $?\n");
        self.stdin.write_all(wrapped.as_bytes()).await?;
        self.stdin.flush().await?;

        let marker = marker.as_bytes();
        // Room for the kept output, the marker and the status line after it.
        let keep = cap.saturating_add(marker.len() + 32);
        let mut buf: Vec<u8> = Vec::new();
        let mut dropped = false;
        let mut chunk = vec![0u8; 8192];
        let found = loop {
            let n = self.output.read(&mut chunk).await?;
            if n == 0 {
                break None;
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > keep {
                buf.drain(..buf.len() - keep);
                dropped = true;
            }
            // Only the newly read bytes (and a marker's length before them) can complete the marker.
            let window = buf.len().saturating_sub(n + marker.len() + 32);
            if let Some(at) = rfind(&buf[window..], marker).map(|at| at + window)
                && buf[at + marker.len()..].contains(&b'\n')
            {
                break Some(at);
            }
        };
        let Some(at) = found else {
            let text = clean(&buf);
            return Ok(Exec::ShellGone { output: text.trim().to_owned() });
        };
        let status = String::from_utf8_lossy(&buf[at + marker.len()..]);
        let code = status.trim().lines().next().and_then(|line| line.trim().parse::<i64>().ok()).unwrap_or(-1);
        // The newline before the marker is the wrapper's, not the command's.
        let mut body = buf[..at].strip_suffix(b"\n").unwrap_or(&buf[..at]);
        if body.len() > cap {
            body = &body[body.len() - cap..];
            dropped = true;
        }
        let text = clean(body);
        let text = text.trim_end_matches('\n');
        let output = if dropped { format!("{TRUNCATION_MARKER}{text}") } else { text.to_owned() };
        Ok(Exec::Finished { output, code })
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            // Fails with ESRCH when the group is already gone, which is what is wanted.
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }

    /// Kills the process group and waits (briefly) for the shell to be reaped.
    async fn close(mut self: Box<Self>) {
        self.kill_group();
        let _ = self.stdin.shutdown().await;
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(CLOSE_WAIT, self.child.wait()).await;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The shell itself is killed by `kill_on_drop`; this takes its background jobs with it.
        self.kill_group();
    }
}

/// The output as text: invalid UTF-8 replaced, ANSI escapes removed.
fn clean(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&ANSI.replace_all(bytes, &b""[..])).into_owned()
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > haystack.len() {
        return None;
    }
    (0..=haystack.len() - needle.len()).rev().find(|&at| &haystack[at..at + needle.len()] == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_print_like_python_floats() {
        assert_eq!(seconds(Duration::from_secs(120)), "120.0");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
        assert_eq!(seconds(Duration::from_millis(100)), "0.1");
    }

    #[test]
    fn ansi_escapes_are_removed() {
        assert_eq!(clean(b"\x1b[31mred\x1b[0m plain"), "red plain");
    }

    #[test]
    fn rfind_finds_the_last() {
        assert_eq!(rfind(b"abcabc", b"bc"), Some(4));
        assert_eq!(rfind(b"ab", b"abc"), None);
    }

    #[test]
    fn scrubbed_and_removed_names_are_left_out() {
        let policy =
            EnvPolicy { clear: true, remove: vec![], set: vec![("A".into(), "1".into()), ("A".into(), "2".into())] };
        assert_eq!(policy.variables(), vec![(OsString::from("A"), OsString::from("2"))]);
    }
}
