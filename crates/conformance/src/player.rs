//! Handing out scripted turns to an emulator's sessions: one script shared by all of them, or one per session.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use crate::log::RecordedInput;
use crate::script::{Script, ScriptTurn};

/// Builds the script of one session (see [`Scripts::per_session`]).
type Factory = Arc<dyn Fn(&ScriptContext<'_>) -> Script + Send + Sync>;

/// The turns an emulator plays: one [`Script`] for the whole emulator, or a fresh one for each session.
///
/// Every emulator of this workspace takes `impl Into<Scripts>`, so a plain [`Script`] still works where one
/// scripted conversation is all a test needs. With several sessions at once, a shared script hands its turns to
/// whichever session asks first (two sessions consume each other's turns); [`Scripts::per_session`] gives each
/// session its own.
///
/// ```
/// use managed_agents_conformance::{ScriptPlayer, RecordedInput, Script, ScriptTurn, Scripts};
/// use serde_json::json;
///
/// // Each session calls a tool once, then answers with the prompt it was given.
/// let scripts = Scripts::per_session(|session| {
///     let prompt = match session.first_input {
///         Some(RecordedInput::Kickoff { prompt: Some(prompt), .. } | RecordedInput::Message(prompt)) => prompt.clone(),
///         _ => String::new(),
///     };
///     Script::new()
///         .turn(ScriptTurn::tool_call("call-1", "lookup", json!({"session": session.session_id})))
///         .turn(ScriptTurn::text(format!("done: {prompt}")))
/// });
/// let mut player = ScriptPlayer::new(scripts);
/// let hello = RecordedInput::Message("hello".into());
/// assert_eq!(player.take("a", Some(&hello)).unwrap().tool_calls[0].input, json!({"session": "a"}));
/// assert_eq!(player.take("b", None).unwrap().tool_calls[0].input, json!({"session": "b"}));
/// assert_eq!(player.take("a", None).unwrap().text, ["done: hello"]);
/// assert!(player.take("a", None).is_none(), "session a has played its two turns");
/// assert_eq!(player.served("a"), 2);
/// ```
#[derive(Clone)]
pub struct Scripts(Source);

#[derive(Clone)]
enum Source {
    Shared(Script),
    PerSession(Factory),
}

impl Scripts {
    /// One script whose turns go to whichever session asks next.
    pub fn shared(script: Script) -> Self {
        Self(Source::Shared(script))
    }

    /// A fresh script for each session, built by `factory` when the session asks for its first turn (so it can
    /// depend on the session's id and its first input).
    pub fn per_session<F>(factory: F) -> Self
    where
        F: Fn(&ScriptContext<'_>) -> Script + Send + Sync + 'static,
    {
        Self(Source::PerSession(Arc::new(factory)))
    }

    /// Whether each session gets a script of its own.
    pub fn is_per_session(&self) -> bool {
        matches!(self.0, Source::PerSession(_))
    }

    /// The script every session shares; `None` for [`Scripts::per_session`] (which a backend gets only when it
    /// declares [`per_session_scripts`](crate::BackendCapabilities::per_session_scripts)).
    pub fn into_shared(self) -> Option<Script> {
        match self.0 {
            Source::Shared(script) => Some(script),
            Source::PerSession(_) => None,
        }
    }
}

impl From<Script> for Scripts {
    fn from(script: Script) -> Self {
        Self::shared(script)
    }
}

impl fmt::Debug for Scripts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::Shared(script) => f.debug_tuple("Scripts::Shared").field(&script.turns.len()).finish(),
            Source::PerSession(_) => f.write_str("Scripts::PerSession"),
        }
    }
}

/// What a per-session script factory knows about the session it builds for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ScriptContext<'a> {
    /// The emulator's key for the session: its session id where the wire has one, else a key the emulator
    /// derives from the conversation (its documentation says which).
    pub session_id: &'a str,
    /// The input that asked for the session's first turn, when the emulator passed it.
    pub first_input: Option<&'a RecordedInput>,
    /// How many sessions got a script before this one.
    pub index: usize,
}

impl<'a> ScriptContext<'a> {
    /// The text of the session's first input when it is a kickoff with a prompt or a message; `None` otherwise.
    pub fn prompt(&self) -> Option<&'a str> {
        match self.first_input? {
            RecordedInput::Kickoff { prompt: Some(prompt), .. } | RecordedInput::Message(prompt) => Some(prompt),
            _ => None,
        }
    }
}

/// Hands out scripted turns to sessions: the piece of an emulator that decides which turn an input plays.
///
/// Each input that asks the model for a turn (a kickoff, a message, a complete set of tool results) takes the
/// session's next turn with [`ScriptPlayer::take`]; an emulator that must look at the turn before committing to it
/// (to refuse the request with an injected HTTP error, say) uses [`ScriptPlayer::peek`] first. `None` means the
/// script has run out: an unexpected model call, which the emulator reports loudly with [`ScriptPlayer::served`].
pub struct ScriptPlayer {
    scripts: Scripts,
    shared: VecDeque<ScriptTurn>,
    shared_served: usize,
    sessions: HashMap<String, SessionTurns>,
    started: usize,
    /// The sessions whose turn due next has already met its faults.
    fired: HashSet<String>,
}

#[derive(Default)]
struct SessionTurns {
    turns: VecDeque<ScriptTurn>,
    served: usize,
}

impl ScriptPlayer {
    /// A player for `scripts`.
    pub fn new(scripts: impl Into<Scripts>) -> Self {
        let scripts = scripts.into();
        let shared = match &scripts.0 {
            Source::Shared(script) => script.turns.iter().cloned().collect(),
            Source::PerSession(_) => VecDeque::new(),
        };
        Self { scripts, shared, shared_served: 0, sessions: HashMap::new(), started: 0, fired: HashSet::new() }
    }

    /// The turn `session_id`'s next input will play, without taking it. `first_input` is passed to a per-session
    /// factory when this is the session's first turn (and ignored otherwise).
    pub fn peek(&mut self, session_id: &str, first_input: Option<&RecordedInput>) -> Option<&ScriptTurn> {
        if self.start(session_id, first_input) {
            self.sessions.get(session_id).and_then(|session| session.turns.front())
        } else {
            self.shared.front()
        }
    }

    /// Takes the turn `session_id`'s input plays; `None` when its script has run out. The next turn's faults are
    /// due again (see [`ScriptPlayer::faults_due`]).
    pub fn take(&mut self, session_id: &str, first_input: Option<&RecordedInput>) -> Option<ScriptTurn> {
        self.fired.remove(session_id);
        if self.start(session_id, first_input) {
            let session = self.sessions.get_mut(session_id)?;
            let turn = session.turns.pop_front()?;
            session.served += 1;
            Some(turn)
        } else {
            let turn = self.shared.pop_front()?;
            self.shared_served += 1;
            Some(turn)
        }
    }

    /// Takes `session_id`'s next turn only if the session has taken exactly `served` turns so far: how a response
    /// that was held back (a stall) claims its turn when it is finally written, unless a retry took the turn
    /// meanwhile. `None` when it had.
    pub fn take_at(
        &mut self,
        session_id: &str,
        served: usize,
        first_input: Option<&RecordedInput>,
    ) -> Option<ScriptTurn> {
        if self.served(session_id) != served {
            return None;
        }
        self.take(session_id, first_input)
    }

    /// How many turns `session_id` has taken (with a shared script: how many all sessions have taken).
    pub fn served(&self, session_id: &str) -> usize {
        match self.scripts.0 {
            Source::Shared(_) => self.shared_served,
            Source::PerSession(_) => self.sessions.get(session_id).map_or(0, |session| session.served),
        }
    }

    /// How many turns are left for `session_id` (with a shared script: for everyone). A session that has not
    /// started yet is counted as having none, as its script is built only when it starts.
    pub fn remaining(&self, session_id: &str) -> usize {
        match self.scripts.0 {
            Source::Shared(_) => self.shared.len(),
            Source::PerSession(_) => self.sessions.get(session_id).map_or(0, |session| session.turns.len()),
        }
    }

    /// Whether the faults of `session_id`'s next turn are still to fire. A turn's faults fire once: the first
    /// request that reaches the turn meets them (an HTTP error, a cut response, a bad frame, a stall) and the
    /// emulator says so with [`ScriptPlayer::fault_fired`]; a retry of the same turn is then served whole, until
    /// [`ScriptPlayer::take`] moves on to the next turn. (That is how a retrying client gets through: a fault that
    /// fired on every attempt could never be recovered from.)
    pub fn faults_due(&self, session_id: &str) -> bool {
        !self.fired.contains(session_id)
    }

    /// Records that `session_id`'s next turn has met its faults (see [`ScriptPlayer::faults_due`]).
    pub fn fault_fired(&mut self, session_id: &str) {
        self.fired.insert(session_id.to_string());
    }

    /// Forgets a session's script (when the emulator deletes the session), so a long-running emulator's memory
    /// does not grow with the sessions it has served.
    pub fn forget(&mut self, session_id: &str) {
        self.sessions.remove(session_id);
        self.fired.remove(session_id);
    }

    /// Builds `session_id`'s script if it has none yet; false for a shared script.
    fn start(&mut self, session_id: &str, first_input: Option<&RecordedInput>) -> bool {
        let Source::PerSession(factory) = &self.scripts.0 else { return false };
        if !self.sessions.contains_key(session_id) {
            let context = ScriptContext { session_id, first_input, index: self.started };
            let script = factory(&context);
            self.started += 1;
            self.sessions.insert(session_id.to_string(), SessionTurns { turns: script.turns.into(), served: 0 });
        }
        true
    }
}

impl fmt::Debug for ScriptPlayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptPlayer")
            .field("scripts", &self.scripts)
            .field("shared_left", &self.shared.len())
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_turns(tag: &str) -> Script {
        Script::new().turn(ScriptTurn::text(format!("{tag} 1"))).turn(ScriptTurn::text(format!("{tag} 2")))
    }

    #[test]
    fn a_shared_script_hands_its_turns_to_whoever_asks() {
        let mut player = ScriptPlayer::new(two_turns("shared"));
        assert_eq!(player.take("a", None).unwrap().text, ["shared 1"]);
        assert_eq!(player.take("b", None).unwrap().text, ["shared 2"]);
        assert!(player.take("a", None).is_none());
        assert_eq!(player.served("b"), 2, "a shared script counts every session's turns");
    }

    #[test]
    fn each_session_plays_its_own_script_from_the_start() {
        let mut player = ScriptPlayer::new(Scripts::per_session(|session| two_turns(session.session_id)));
        assert_eq!(player.peek("a", None).unwrap().text, ["a 1"]);
        assert_eq!(player.take("b", None).unwrap().text, ["b 1"]);
        assert_eq!(player.take("a", None).unwrap().text, ["a 1"], "peeking took nothing");
        assert_eq!(player.take("a", None).unwrap().text, ["a 2"]);
        assert!(player.take("a", None).is_none());
        assert_eq!(player.take("b", None).unwrap().text, ["b 2"]);
        assert_eq!((player.served("a"), player.served("b"), player.remaining("b")), (2, 2, 0));
    }

    #[test]
    fn the_factory_sees_the_first_input_and_the_order_sessions_started_in() {
        let mut player = ScriptPlayer::new(Scripts::per_session(|session| {
            let first = match session.first_input {
                Some(RecordedInput::Message(text)) => text.clone(),
                _ => "none".to_string(),
            };
            Script::new().turn(ScriptTurn::text(format!("{}:{first}", session.index)))
        }));
        let hello = RecordedInput::Message("hello".into());
        assert_eq!(player.take("x", Some(&hello)).unwrap().text, ["0:hello"]);
        assert_eq!(player.take("y", None).unwrap().text, ["1:none"]);
    }

    #[test]
    fn the_context_names_the_prompt_of_a_kickoff_or_a_message() {
        let prompt = |input: Option<RecordedInput>| {
            let context = ScriptContext { session_id: "s", first_input: input.as_ref(), index: 0 };
            context.prompt().map(str::to_string)
        };
        let kickoff = RecordedInput::Kickoff { prompt: Some("go".into()), outcome: None };
        assert_eq!(prompt(Some(kickoff)), Some("go".into()));
        assert_eq!(prompt(Some(RecordedInput::Message("more".into()))), Some("more".into()));
        assert_eq!(prompt(Some(RecordedInput::Kickoff { prompt: None, outcome: None })), None);
        assert_eq!(prompt(Some(RecordedInput::Interrupt)), None);
        assert_eq!(prompt(None), None);
    }

    #[test]
    fn a_turns_faults_fire_once_until_the_turn_is_taken() {
        let mut player = ScriptPlayer::new(Scripts::per_session(|session| two_turns(session.session_id)));
        assert!(player.faults_due("a"));
        player.fault_fired("a");
        assert!(!player.faults_due("a"), "a retry of the same turn is served whole");
        assert!(player.faults_due("b"), "each session's turn has its own faults");
        player.take("a", None);
        assert!(player.faults_due("a"), "the next turn's faults are due");
    }

    #[test]
    fn a_held_back_response_claims_its_turn_only_if_no_retry_took_it() {
        let mut player = ScriptPlayer::new(Scripts::per_session(|session| two_turns(session.session_id)));
        let served = player.served("a");
        assert_eq!(player.take("a", None).unwrap().text, ["a 1"], "a retry takes the turn first");
        assert!(player.take_at("a", served, None).is_none(), "the stalled response finds it taken");
        assert_eq!(player.take_at("a", 1, None).unwrap().text, ["a 2"]);
    }

    #[test]
    fn a_forgotten_session_starts_over_with_a_new_script() {
        let mut player = ScriptPlayer::new(Scripts::per_session(|session| two_turns(&session.index.to_string())));
        player.take("a", None);
        player.forget("a");
        assert_eq!(player.served("a"), 0);
        assert_eq!(player.take("a", None).unwrap().text, ["1 1"]);
    }
}
