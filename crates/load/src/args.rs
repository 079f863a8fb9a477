//! The command line: `serve`, `run`, `memory`, `long`, or nothing for the whole table.

use std::fmt;
use std::str::FromStr;

use managed_agents_core::EventRetention;
use managed_agents_core::{HttpOptions, HttpVersion};

use crate::soak::SoakConfig;

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
  soak [--provider P] [--sessions N] [--turns T] [--fault-rate R] [--seed S] [--round K] [--session I]
                              N sessions (default 1000) of T model turns (default 10) per provider (default all
                              three), a share R of turns (default 0.05) carrying a seeded random fault, K sessions
                              at once per round (default 50); checks every tool result arrives exactly once, no
                              task leaks, RSS flat after warm-up; --session I replays one session of the plan
  serve --provider P [--long-events N] [--tls on]
                              the emulator child: prints KEY=VALUE lines, then READY; serves until stdin closes,
                              answering a CONNECTIONS line with the connections it accepted; --tls on serves TLS
                              (HTTP/2 and HTTP/1.1 by ALPN) with a certificate it announces as CERTIFICATE
  soak-serve --provider P --seed S --fault-rate R --turns T
                              the soak's emulator child; answers a LOG line with its input log

  --http V                    with run, memory and long: how the driver's provider speaks to the emulator:
                              h1 (default, HTTP/1.1), h2 (h2c prior knowledge, pooled HTTP/2 connections);
                              with run and memory also tls-h1 (TLS, HTTP/1.1 only) and tls-h2 (TLS, the client's
                              default: HTTP/2 by ALPN, pooled)
  --max-idle N                with run, memory and long: idle connections kept per host (default 100; 0 keeps none)
  --max-streams N             with run, memory and long: streams per HTTP/2 connection at most (default 100)

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
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Every measurement, one after the other.
    All,
    /// Serve an emulator (the child process).
    Serve {
        /// Which emulator.
        provider: ProviderKind,
        /// Play the long script (one request of this many events) instead of the load script.
        long_events: Option<u64>,
        /// Serve TLS (HTTP/2 and HTTP/1.1 by ALPN) with a certificate made at start.
        tls: bool,
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
        /// Over TLS.
        tls: bool,
    },
    /// Heap per parked session, broken down.
    Memory {
        /// How many sessions (and connections) to measure over.
        sessions: usize,
        /// How the provider speaks HTTP.
        http: HttpOptions,
        /// Over TLS.
        tls: bool,
    },
    /// Sessions with seeded random faults, checked for lost or doubled tool results, leaked tasks and growth.
    Soak(SoakConfig),
    /// Serve an emulator playing the soak's scripts (the soak's child).
    SoakServe {
        /// Which emulator.
        provider: ProviderKind,
        /// The soak's settings (seed, fault rate, turns) the scripts are built from.
        config: SoakConfig,
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
                tls: options.tls,
            }),
            "memory" => Ok(Self::Memory {
                sessions: options.sessions.unwrap_or(1000),
                http: options.http_options(),
                tls: options.tls,
            }),
            "long" if options.tls => Err("`long` runs over plain HTTP: --http h1 or h2".to_string()),
            "long" => Ok(Self::Long { events: options.events.unwrap_or(100_000), http: options.http_options() }),
            "soak" | "soak-serve" => {
                let config = SoakConfig {
                    providers: options.provider.map_or_else(
                        || vec![ProviderKind::Claude, ProviderKind::Local, ProviderKind::AgentCore],
                        |p| vec![p],
                    ),
                    sessions: options.sessions.unwrap_or(1000),
                    turns: options.turns.unwrap_or(10),
                    fault_rate: options.fault_rate.unwrap_or(0.05),
                    seed: options.seed.unwrap_or_else(clock_seed),
                    round: options.round.unwrap_or(50),
                    only: options.session,
                };
                if command == "soak" {
                    Ok(Self::Soak(config))
                } else {
                    Ok(Self::SoakServe { provider: options.provider.ok_or("`soak-serve` needs --provider")?, config })
                }
            }
            "serve" => Ok(Self::Serve {
                provider: options.provider.ok_or("`serve` needs --provider")?,
                long_events: options.long_events,
                tls: options.serve_tls,
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
    tls: bool,
    serve_tls: bool,
    max_idle: Option<usize>,
    max_streams: Option<usize>,
    turns: Option<usize>,
    fault_rate: Option<f64>,
    seed: Option<u64>,
    round: Option<usize>,
    session: Option<usize>,
}

/// A seed from the clock, for a soak run without `--seed` (it is printed, so the run can be repeated).
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_007)
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
        if let Some(max) = self.max_streams {
            options = options.max_streams_per_connection(max);
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
                let (version, tls) = match value {
                    "h1" => (HttpVersion::Http1Only, false),
                    "h2" => (HttpVersion::Http2PriorKnowledge, false),
                    "tls-h1" => (HttpVersion::Http1Only, true),
                    "tls-h2" => (HttpVersion::Auto, true),
                    other => return Err(format!("`--http` takes h1, h2, tls-h1 or tls-h2, not `{other}`")),
                };
                (self.http, self.tls) = (Some(version), tls);
            }
            "--tls" => {
                self.serve_tls = match value {
                    "on" => true,
                    "off" => false,
                    other => return Err(format!("`--tls` takes on or off, not `{other}`")),
                };
            }
            "--turns" => self.turns = Some(positive(flag, value)?),
            "--max-streams" => self.max_streams = Some(positive(flag, value)?),
            "--round" => self.round = Some(positive(flag, value)?),
            "--seed" => {
                self.seed = Some(value.parse().map_err(|_| format!("`--seed` takes a whole number, not `{value}`"))?)
            }
            "--session" => {
                self.session =
                    Some(value.parse().map_err(|_| format!("`--session` takes a whole number, not `{value}`"))?);
            }
            "--fault-rate" => match value.parse::<f64>() {
                Ok(rate) if (0.0..=1.0).contains(&rate) => self.fault_rate = Some(rate),
                _ => return Err(format!("`--fault-rate` takes a share between 0 and 1, not `{value}`")),
            },
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
            Ok(Command::Run {
                provider: ProviderKind::Claude,
                sessions: 10_000,
                ramp: None,
                http: HttpOptions::new(),
                tls: false
            })
        );
        assert_eq!(
            parse(&["run", "--provider", "agentcore", "--ramp", "50"]),
            Ok(Command::Run {
                provider: ProviderKind::AgentCore,
                sessions: 1000,
                ramp: Some(50),
                http: HttpOptions::new(),
                tls: false
            })
        );
    }

    #[test]
    fn each_mode_has_its_defaults() {
        assert_eq!(parse(&["memory"]), Ok(Command::Memory { sessions: 1000, http: HttpOptions::new(), tls: false }));
        assert_eq!(parse(&["long", "--events", "500"]), Ok(Command::Long { events: 500, http: HttpOptions::new() }));
        let h2 = HttpOptions::new().version(HttpVersion::Http2PriorKnowledge);
        assert_eq!(parse(&["memory", "--http", "h2"]), Ok(Command::Memory { sessions: 1000, http: h2, tls: false }));
        let tls = HttpOptions::new().version(HttpVersion::Auto);
        assert_eq!(
            parse(&["memory", "--http", "tls-h2"]),
            Ok(Command::Memory { sessions: 1000, http: tls, tls: true })
        );
        assert!(parse(&["long", "--http", "tls-h1"]).unwrap_err().contains("plain HTTP"));
        assert_eq!(
            parse(&["serve", "--provider", "local"]),
            Ok(Command::Serve { provider: ProviderKind::Local, long_events: None, tls: false })
        );
        assert_eq!(
            parse(&["serve", "--provider", "claude", "--tls", "on"]),
            Ok(Command::Serve { provider: ProviderKind::Claude, long_events: None, tls: true })
        );
    }

    #[test]
    fn soak_takes_its_plan_from_the_flags() {
        let Ok(Command::Soak(config)) = parse(&["soak", "--seed", "7", "--sessions", "20", "--fault-rate", "0.5"])
        else {
            panic!("a soak command");
        };
        assert_eq!((config.seed, config.sessions, config.turns, config.round), (7, 20, 10, 50));
        assert_eq!((config.fault_rate, config.providers.len(), config.only), (0.5, 3, None));
        let Ok(Command::SoakServe { provider, config }) =
            parse(&["soak-serve", "--provider", "local", "--seed", "7", "--session", "3"])
        else {
            panic!("a soak child");
        };
        assert_eq!((provider, config.seed, config.only), (ProviderKind::Local, 7, Some(3)));
        assert!(parse(&["soak", "--fault-rate", "2"]).unwrap_err().contains("between 0 and 1"));
        assert!(parse(&["soak-serve"]).unwrap_err().contains("--provider"));
    }

    #[test]
    fn bad_arguments_are_refused_with_a_reason() {
        assert!(parse(&["serve"]).unwrap_err().contains("--provider"));
        assert!(parse(&["run", "--sessions", "0"]).unwrap_err().contains("positive"));
        assert!(parse(&["run", "--sessions"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["run", "--provider", "openai"]).unwrap_err().contains("unknown provider"));
        assert!(parse(&["fly"]).unwrap_err().contains("unknown command"));
        assert!(parse(&["run", "--fast", "1"]).unwrap_err().contains("unknown option"));
        assert!(parse(&["run", "--http", "h3"]).unwrap_err().contains("h1, h2, tls-h1 or tls-h2"));
        assert!(parse(&["memory", "--max-idle", "-1"]).unwrap_err().contains("whole number"));
    }

    #[test]
    fn http_flags_pick_the_version_and_the_idle_bound() {
        let mut options = Options::default();
        assert_eq!(options.http_options(), HttpOptions::new());
        options.set("--http", "h2").unwrap();
        options.set("--max-idle", "0").unwrap();
        options.set("--max-streams", "250").unwrap();
        let chosen = options.http_options();
        assert_eq!((chosen.version, chosen.max_idle_per_host), (HttpVersion::Http2PriorKnowledge, 0));
        assert_eq!(chosen.max_streams_per_connection, 250);
        assert!(options.set("--max-streams", "0").unwrap_err().contains("positive"));
    }
}
