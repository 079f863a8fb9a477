//! One conversation's requests, run through the host crate (so each is kept and can be continued), with
//! Ctrl-C answered while they run: the first press interrupts the turn where the loop host can (and says so
//! where it cannot), the second quits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use managed_agents_core::conversation::SessionStore;
use managed_agents_core::{BoxError, Interrupter, ModelConfig, SessionOptions};
use managed_agents_host::{Host, RequestOptions};

use crate::approve::TerminalPermission;
use crate::args::{Options, Output, ProviderName};
use crate::conversations::{self, TITLE};
use crate::input::Input;
use crate::loop_host;
use crate::outcome::{self, Hinted, UsageError};
use crate::screen::Screen;
use crate::signals::CtrlC;
use crate::terminal::{THINKING, Terminal};

/// How long the conversation's lease lives without renewal: a run that was killed holds it at most this long.
const LEASE_TTL: Duration = Duration::from_secs(10);

/// How a request's wait ended.
pub enum Sent {
    /// The request ended; its exit code.
    Ended(u8),
    /// The user pressed Ctrl-C twice: quit.
    Quit,
}

/// A conversation and what its requests need.
pub struct Requests {
    host: Host,
    id: String,
    new: bool,
    screen: Arc<Screen>,
    ctrl_c: CtrlC,
    /// The provider's name, and whether it can interrupt a turn.
    provider: String,
    can_interrupt: bool,
    /// The model configuration of each request (hosted agents' `--model`).
    model_config: ModelConfig,
    /// The loop host, kept alive (a bundled emulator serves while it lives).
    loop_host: loop_host::Host,
}

/// What [`Requests::open`] needs besides the options.
pub struct Parts {
    /// The loop host.
    pub loop_host: loop_host::Host,
    /// The tools' handler.
    pub handler: Terminal,
    /// The terminal's lines, when someone can answer questions.
    pub input: Option<Arc<Input>>,
    /// Where output goes.
    pub screen: Arc<Screen>,
    /// Ctrl-C.
    pub ctrl_c: CtrlC,
}

impl Requests {
    /// The conversation the options pick (new, `--continue`, `--resume ID`) on the loop host of `parts`.
    pub async fn open(options: &Options, parts: Parts) -> Result<Self, BoxError> {
        let Parts { loop_host, handler, input, screen, ctrl_c } = parts;
        let provider = Arc::clone(&loop_host.provider);
        let capabilities = provider.capabilities();
        let name = provider.name().to_string();
        if options.system.is_some() && !capabilities.runtime_overrides {
            return Err(Hinted {
                error: Box::new(UsageError(format!(
                    "--system does not apply to {name}: the agent's own system prompt is used"
                ))),
                hint: "give the agent its system prompt when it is created (`managed-agents agents create NAME \
                       --model MODEL --system TEXT`)"
                    .into(),
            }
            .into());
        }
        if options.model.is_some() && !capabilities.runtime_model && loop_host.kind != ProviderName::Local {
            return Err(UsageError(format!("--model does not apply to {name}: the agent's own model is used")).into());
        }
        // A replay keeps nothing: its conversation (and its tool ledger, which would answer the replayed calls
        // from the recorded run) lives in a file of its own, removed when the replay ends.
        let store = match &loop_host.scratch {
            Some(path) => managed_agents_store::SqliteStore::open(path).await?,
            None => conversations::open_store().await?,
        };
        let (id, new) = conversations::pick(&store, options, &name).await?;
        let permission = TerminalPermission::new(Arc::clone(&screen), input, ctrl_c.clone(), &options.allow);
        let mut builder =
            Host::builder(provider, store, handler).session_options(session_options(options)).lease_ttl(LEASE_TTL);
        builder = if options.yes {
            builder.permission(managed_agents_core::approval::AllowAll)
        } else {
            builder.permission(permission)
        };
        if let Some(agent) = loop_host.agent.clone() {
            builder = builder.agent(agent);
        }
        let model_config = match (&options.model, loop_host.kind) {
            (Some(model), kind) if kind != ProviderName::Local => ModelConfig::new().model(model.clone()),
            _ => ModelConfig::new(),
        };
        let host = builder.build()?;
        Ok(Self {
            host,
            id,
            new,
            screen,
            ctrl_c,
            provider: name,
            can_interrupt: capabilities.interrupt,
            model_config,
            loop_host,
        })
    }

    /// The conversation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the conversation has not been kept yet (no request of it ran).
    pub fn is_new(&self) -> bool {
        self.new
    }

    /// The conversation's id once it is kept.
    pub fn kept_id(&self) -> Option<&str> {
        (!self.new).then_some(self.id.as_str())
    }

    /// The environment variable the loop host's address came from, if any.
    pub fn loop_host(&self) -> &loop_host::Host {
        &self.loop_host
    }

    /// Where the loop host's address came from, for errors that name it.
    pub fn address_from(&self) -> Option<&'static str> {
        self.loop_host.address_from
    }

    /// Sends `message` and waits for the request to end, answering Ctrl-C; reports its outcome.
    pub async fn send(&mut self, message: String) -> Sent {
        let interrupter = Interrupter::new();
        let mut request =
            RequestOptions::new().model_config(self.model_config.clone()).interrupter(interrupter.clone());
        if self.new {
            request = request.metadata(TITLE, conversations::title(&message));
        }
        self.ctrl_c.forget().await;
        self.screen.waiting(THINKING);
        let started = Instant::now();
        let outcome = {
            let send = self.host.send_with(&self.id, message, request);
            tokio::pin!(send);
            let mut pressed = false;
            loop {
                tokio::select! {
                    outcome = &mut send => break outcome,
                    () = self.ctrl_c.next() => {
                        if pressed {
                            self.screen.done_waiting();
                            self.screen.note("(quitting)");
                            return Sent::Quit;
                        }
                        pressed = true;
                        if self.can_interrupt {
                            self.screen.note("(interrupting the turn; Ctrl-C again quits)");
                            interrupter.interrupt();
                        } else {
                            let name = &self.provider;
                            self.screen.note(&format!("({name} cannot interrupt a turn; Ctrl-C again quits)"));
                        }
                    }
                }
            }
        };
        self.screen.done_waiting();
        self.screen.line_break();
        // The conversation exists once a request opened it (a request refused before that leaves none).
        let store: &dyn SessionStore = &**self.host.store();
        let kept = matches!(store.load(&self.id).await, Ok(Some(_)));
        if kept {
            self.new = false;
        }
        let json = self.screen.output() != Output::Text;
        Sent::Ended(outcome::request(&outcome, started.elapsed(), json, kept.then_some(self.id.as_str())))
    }
}

/// The session options every request of the command line gets: live text, limits, the system prompt.
fn session_options(options: &Options) -> SessionOptions {
    // Text streams as it is written: Claude sends live previews only when asked; other hosts stream anyway.
    let mut session = SessionOptions::new().live_text(true);
    if let Some(max_turns) = options.max_turns {
        session = session.max_turns(max_turns);
    }
    if let Some(seconds) = options.timeout {
        session = session.timeout(Duration::from_secs(seconds));
    }
    if let Some(system) = &options.system {
        session = session.system_prompt(system.clone());
    }
    session
}
