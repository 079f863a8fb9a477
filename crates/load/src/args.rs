//! The command line: `serve`, `run`, `memory`, `long`, or nothing for the whole table.

use std::fmt;
use std::str::FromStr;

use managed_agents_core::EventRetention;
use managed_agents_core::http::{HttpOptions, HttpVersion};

/// The usage text printed for `--help` and after a bad argument.
pub const USAGE: &str = "\
usage: managed-agents-load [COMMAND] [OPTIONS]

commands:
  (none)                      the whole table: run claude 1000 and 10000, local 1000, agentcore 1000, memory, long
  run [--provider P] [--sessions N] [--ramp K]
                              N live sessions (default claude, 1000): 3 tool turns each, park, one follow-up
                              message to all; --ramp K starts at most K sessions at once (default: all at once)
  memory [--sessions N]       heap per parked Claude session, broken down (default 1000)
  long [--events N]           one Claude request streaming N events (default 100000), heap sampled every 10000,
                              for each event retention (all, last 1000, none)
  serve --provider P [--long-events N]
                              the emulator child: prints KEY=VALUE lines, then READY; serves until stdin closes

  --http V                    with run, memory and long: how the driver's provider speaks to the emulator:
                              h1 (default, HTTP/1.1), h2 (h2c prior knowledge, one multiplexed connection)
  --max-idle N                with run, memory and long: idle connections kept per host (default 100; 0 keeps none)

  options may also come first without a command: `--sessions 10000` is `run --provider claude --sessions 10000`.
providers: claude, local, agentcore";

/// Which emulator and provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// Claude Managed Agents: one SSE stream per session, tool results posted.
    Claude,
    /// The local loop over the chat-completions emulator: one request per turn.
    Local,
    /// Bedrock AgentCore through the official SDK: one event stream per turn.
    AgentCore,
}

impl ProviderKind {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Local => "local",
            Self::AgentCore => "agentcore",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProviderKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "claude" => Ok(Self::Claude),
            "local" => Ok(Self::Local),
            "agentcore" => Ok(Self::AgentCore),
            other => Err(format!("unknown provider `{other}` (claude, local, agentcore)")),
        }
    }
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Every measurement, one after the other.
    All,
    /// Serve an emulator (the child process).
    Serve {
        /// Which emulator.
        provider: ProviderKind,
        /// Play the long script (one request of this many events) instead of the load script.
        long_events: Option<u64>,
    },
    /// Many concurrent live sessions.
    Run {
        /// Against which provider.
        provider: ProviderKind,
        /// How many sessions.
        sessions: usize,
        /// At most this many sessions starting at once (`None`: all at once).
        ramp: Option<usize>,
        /// How the provider speaks HTTP.
        http: HttpOptions,
    },
    /// Heap per parked session, broken down.
    Memory {
        /// How many sessions (and connections) to measure over.
        sessions: usize,
        /// How the provider speaks HTTP.
        http: HttpOptions,
    },
    /// One long request under each retention.
    Long {
        /// Events in the request.
        events: u64,
        /// How the provider speaks HTTP.
        http: HttpOptions,
    },
}

/// The retentions the `long` mode compares.
pub const LONG_RETENTIONS: [EventRetention; 3] =
    [EventRetention::All, EventRetention::Last(1000), EventRetention::None];

impl Command {
    /// Parses the arguments after the program name.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, String> {
        let mut args = args.into_iter().peekable();
        let command = match args.peek() {
            None => return Ok(Self::All),
            Some(first) if first.starts_with("--") => "run".to_string(),
            Some(_) => args.next().unwrap_or_default(),
        };
        let mut options = Options::default();
        while let Some(flag) = args.next() {
            if flag == "--help" || flag == "-h" {
                return Err(USAGE.to_string());
            }
            let value = args.next().ok_or_else(|| format!("`{flag}` needs a value"))?;
            options.set(&flag, &value)?;
        }
        match command.as_str() {
            "run" => Ok(Self::Run {
                provider: options.provider.unwrap_or(ProviderKind::Claude),
                sessions: options.sessions.unwrap_or(1000),
                ramp: options.ramp,
                http: options.http_options(),
            }),
            "memory" => Ok(Self::Memory { sessions: options.sessions.unwrap_or(1000), http: options.http_options() }),
            "long" => Ok(Self::Long { events: options.events.unwrap_or(100_000), http: options.http_options() }),
            "serve" => Ok(Self::Serve {
                provider: options.provider.ok_or("`serve` needs --provider")?,
                long_events: options.long_events,
            }),
            "help" => Err(USAGE.to_string()),
            other => Err(format!("unknown command `{other}`\n\n{USAGE}")),
        }
    }
}

#[derive(Default)]
struct Options {
    provider: Option<ProviderKind>,
    sessions: Option<usize>,
    ramp: Option<usize>,
    events: Option<u64>,
    long_events: Option<u64>,
    http: Option<HttpVersion>,
    max_idle: Option<usize>,
}

impl Options {
    /// The HTTP options the driver's providers are built with.
    fn http_options(&self) -> HttpOptions {
        let mut options = HttpOptions::new();
        if let Some(version) = self.http {
            options = options.version(version);
        }
        if let Some(max) = self.max_idle {
            options = options.max_idle_per_host(max);
        }
        options
    }

    fn set(&mut self, flag: &str, value: &str) -> Result<(), String> {
        fn positive<T: FromStr + PartialOrd + Default>(flag: &str, value: &str) -> Result<T, String> {
            match value.parse::<T>() {
                Ok(number) if number > T::default() => Ok(number),
                _ => Err(format!("`{flag}` takes a positive whole number, not `{value}`")),
            }
        }
        match flag {
            "--provider" => self.provider = Some(value.parse()?),
            "--sessions" => self.sessions = Some(positive(flag, value)?),
            "--ramp" => self.ramp = Some(positive(flag, value)?),
            "--events" => self.events = Some(positive(flag, value)?),
            "--long-events" => self.long_events = Some(positive(flag, value)?),
            "--http" => {
                self.http = Some(match value {
                    "h1" => HttpVersion::Http1Only,
                    "h2" => HttpVersion::Http2PriorKnowledge,
                    other => return Err(format!("`--http` takes h1 or h2, not `{other}`")),
                });
            }
            "--max-idle" => {
                self.max_idle =
                    Some(value.parse().map_err(|_| format!("`--max-idle` takes a whole number, not `{value}`"))?);
            }
            other => return Err(format!("unknown option `{other}`\n\n{USAGE}")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        Command::parse(args.iter().map(ToString::to_string))
    }

    #[test]
    fn no_arguments_is_the_whole_table() {
        assert_eq!(parse(&[]), Ok(Command::All));
    }

    #[test]
    fn bare_options_are_a_claude_run() {
        assert_eq!(
            parse(&["--sessions", "10000"]),
            Ok(Command::Run { provider: ProviderKind::Claude, sessions: 10_000, ramp: None, http: HttpOptions::new() })
        );
        assert_eq!(
            parse(&["run", "--provider", "agentcore", "--ramp", "50"]),
            Ok(Command::Run {
                provider: ProviderKind::AgentCore,
                sessions: 1000,
                ramp: Some(50),
                http: HttpOptions::new()
            })
        );
    }

    #[test]
    fn each_mode_has_its_defaults() {
        assert_eq!(parse(&["memory"]), Ok(Command::Memory { sessions: 1000, http: HttpOptions::new() }));
        assert_eq!(parse(&["long", "--events", "500"]), Ok(Command::Long { events: 500, http: HttpOptions::new() }));
        let h2 = HttpOptions::new().version(HttpVersion::Http2PriorKnowledge);
        assert_eq!(parse(&["memory", "--http", "h2"]), Ok(Command::Memory { sessions: 1000, http: h2 }));
        assert_eq!(
            parse(&["serve", "--provider", "local"]),
            Ok(Command::Serve { provider: ProviderKind::Local, long_events: None })
        );
    }

    #[test]
    fn bad_arguments_are_refused_with_a_reason() {
        assert!(parse(&["serve"]).unwrap_err().contains("--provider"));
        assert!(parse(&["run", "--sessions", "0"]).unwrap_err().contains("positive"));
        assert!(parse(&["run", "--sessions"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["run", "--provider", "openai"]).unwrap_err().contains("unknown provider"));
        assert!(parse(&["fly"]).unwrap_err().contains("unknown command"));
        assert!(parse(&["run", "--fast", "1"]).unwrap_err().contains("unknown option"));
        assert!(parse(&["run", "--http", "h3"]).unwrap_err().contains("h1 or h2"));
        assert!(parse(&["memory", "--max-idle", "-1"]).unwrap_err().contains("whole number"));
    }

    #[test]
    fn http_flags_pick_the_version_and_the_idle_bound() {
        let mut options = Options::default();
        assert_eq!(options.http_options(), HttpOptions::new());
        options.set("--http", "h2").unwrap();
        options.set("--max-idle", "0").unwrap();
        let chosen = options.http_options();
        assert_eq!((chosen.version, chosen.max_idle_per_host), (HttpVersion::Http2PriorKnowledge, 0));
    }
}
