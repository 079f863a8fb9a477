//! The emulator's state: what every route shares behind the scaffold's one lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use managed_agents_conformance::{InputLog, ScriptPlayer, Scripts};
use serde_json::Value;
use tokio::sync::Notify;

use super::control::ControlState;
use super::options::EmulatorOptions;
use super::shell::RuntimeFs;
use super::vault::Vault;

/// Everything the routes share: the script and what it has played, the control plane, the runtime sessions'
/// files.
pub(super) struct State {
    pub(super) options: EmulatorOptions,
    pub(super) player: ScriptPlayer,
    /// The runtime sessions that have played a turn (their next text is a message, not a kickoff).
    pub(super) sessions: HashSet<String>,
    /// Per session: the reasoning blocks the next resume must echo (as request JSON).
    pub(super) reasoning_echo: HashMap<String, Vec<Value>>,
    pub(super) log: InputLog,
    /// Holds every call's `messageStop` until notified (see `AgentCoreEmulator::gate_message_stop`).
    pub(super) gate: Option<Arc<Notify>>,
    pub(super) control: ControlState,
    /// The token vault's credential providers.
    pub(super) vault: Vault,
    /// Per runtime (its ARN as the path carries it) and session id: the session's files.
    pub(super) runtime_files: HashMap<(String, String), RuntimeFs>,
    /// Injected command failures: how many commands still run first, then the exit code and stderr of each.
    pub(super) failing_commands: (usize, VecDeque<(i32, String)>),
    /// Every runtime command received, in order.
    pub(super) commands: Vec<String>,
}

impl State {
    /// A fresh state playing `scripts` with `options`.
    pub(super) fn new(scripts: Scripts, options: EmulatorOptions) -> Self {
        Self {
            options,
            player: ScriptPlayer::new(scripts),
            sessions: HashSet::new(),
            reasoning_echo: HashMap::new(),
            log: InputLog::new(),
            gate: None,
            control: ControlState::default(),
            vault: Vault::default(),
            runtime_files: HashMap::new(),
            failing_commands: (0, VecDeque::new()),
            commands: Vec::new(),
        }
    }
}
