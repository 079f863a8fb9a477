//! The emulator child process: this same binary in `serve` mode.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::args::ProviderKind;
use crate::measure::{Resident, parse_status};

/// A running emulator child. Dropping it closes the child's standard input, which stops it, and waits for it.
#[derive(Debug)]
pub struct EmulatorChild {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    values: HashMap<String, String>,
}

impl EmulatorChild {
    /// Starts `provider`'s emulator (playing the long script of `long_events` events when given; over TLS when
    /// `tls`) and waits for it to announce itself.
    pub fn spawn(provider: ProviderKind, long_events: Option<u64>, tls: bool) -> io::Result<Self> {
        let mut args = vec!["serve".to_string(), "--provider".to_string(), provider.name().to_string()];
        if let Some(events) = long_events {
            args.extend(["--long-events".to_string(), events.to_string()]);
        }
        if tls {
            args.extend(["--tls".to_string(), "on".to_string()]);
        }
        Self::spawn_args(args)
    }

    /// Starts this binary with `args` (a serving mode) and waits for it to announce itself.
    pub fn spawn_args(args: Vec<String>) -> io::Result<Self> {
        let mut command = Command::new(std::env::current_exe()?);
        command.args(args);
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or_else(|| io::Error::other("the child has no stdout"))?;
        let mut stdout = BufReader::new(stdout);
        let values = read_announcement(&mut stdout)?;
        Ok(Self { child, stdin, stdout: Some(stdout), values })
    }

    /// [`EmulatorChild::spawn_args`] off the async threads.
    pub async fn start_with(args: Vec<String>) -> Result<Self, String> {
        tokio::task::spawn_blocking(move || Self::spawn_args(args))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot start the emulator child: {e}"))
    }

    /// Writes `request` as a line to the child and returns the rest of the first line it answers that starts
    /// with `prefix` (off the async threads; the child must answer, or this waits until it exits).
    pub async fn ask(&mut self, request: &str, prefix: &str) -> Result<String, String> {
        let (mut stdin, mut stdout) = match (self.stdin.take(), self.stdout.take()) {
            (Some(stdin), Some(stdout)) => (stdin, stdout),
            _ => return Err("the child's pipes are gone".into()),
        };
        let (request, prefix) = (request.to_string(), prefix.to_string());
        let (stdin, stdout, answer) = tokio::task::spawn_blocking(move || {
            let answer = (|| {
                writeln!(stdin, "{request}")?;
                stdin.flush()?;
                let mut line = String::new();
                loop {
                    line.clear();
                    if stdout.read_line(&mut line)? == 0 {
                        return Err(io::Error::other("the child exited without answering"));
                    }
                    if let Some(rest) = line.trim_end().strip_prefix(&prefix) {
                        return Ok(rest.to_string());
                    }
                }
            })();
            (stdin, stdout, answer)
        })
        .await
        .map_err(|e| e.to_string())?;
        self.stdin = Some(stdin);
        self.stdout = Some(stdout);
        answer.map_err(|e| format!("asking the emulator child: {e}"))
    }

    /// [`EmulatorChild::spawn`] off the async threads (it waits for the child's announcement).
    pub async fn start(provider: ProviderKind, long_events: Option<u64>, tls: bool) -> Result<Self, String> {
        tokio::task::spawn_blocking(move || Self::spawn(provider, long_events, tls))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot start the emulator child: {e}"))
    }

    /// A value the child announced, when it did (`CERTIFICATE` only over TLS).
    pub fn optional(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// A value the child announced (`BASE_URL`, `AGENT_ID`, `ENVIRONMENT_ID`).
    pub fn value(&self, key: &str) -> io::Result<&str> {
        self.values
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| io::Error::other(format!("the emulator child did not announce {key}")))
    }

    /// The child's resident memory (zero when `/proc` cannot tell).
    pub fn resident(&self) -> Resident {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        parse_status(&status)
    }
}

impl Drop for EmulatorChild {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Reads `KEY=VALUE` lines up to `READY`.
fn read_announcement(mut reader: impl BufRead) -> io::Result<HashMap<String, String>> {
    let mut values = HashMap::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line == "READY" {
            return Ok(values);
        }
        if let Some((key, value)) = line.split_once('=') {
            values.insert(key.to_string(), value.to_string());
        }
    }
    Err(io::Error::other("the emulator child exited before it was ready"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announcement_ends_at_ready() {
        let text = "BASE_URL=http://127.0.0.1:1\nAGENT_ID=agent_1\nREADY\nlater=ignored\n";
        let values = read_announcement(text.as_bytes()).unwrap();
        assert_eq!(values["BASE_URL"], "http://127.0.0.1:1");
        assert_eq!(values.len(), 2);
        assert!(read_announcement("BASE_URL=x\n".as_bytes()).is_err(), "no READY: the child died");
    }
}
