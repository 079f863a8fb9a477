//! What the emulators play: the load script of every session, and the long script of one long request.

use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn, Scripts};
use serde_json::json;

/// The custom tool every scripted call names.
pub const TOOL: &str = "lookup";
/// Tool turns before a load session parks.
pub const TOOL_TURNS: usize = 3;
/// Tool calls per turn of the long script: with the turn's own events and the echoed results, about 100 events.
pub const LONG_CALLS_PER_TURN: usize = 48;
/// Events one turn of the long script streams on Claude: `session.status_running`, `span.model_request_start`,
/// one `agent.message`, a `agent.custom_tool_use` per call, `session.status_idle`, and the echo of each
/// `user.custom_tool_result` posted back.
pub const LONG_EVENTS_PER_TURN: u64 = 3 + 2 * LONG_CALLS_PER_TURN as u64 + 1;

/// Each session's script: [`TOOL_TURNS`] turns of one custom call each (a small JSON input), a text turn that
/// ends the request (the session parks), and a text turn answering the follow-up message.
pub fn load_scripts() -> Scripts {
    Scripts::per_session(|session| load_script(session.index))
}

/// The load script of the `index`-th session (tool-use ids carry the index, so they are unique across sessions).
pub fn load_script(index: usize) -> Script {
    let calls = (1..=TOOL_TURNS).map(|step| {
        ScriptTurn::tool_call(format!("toolu_{index}_{step}"), TOOL, json!({"session": index, "step": step}))
    });
    calls
        .fold(Script::new(), Script::turn)
        .turn(ScriptTurn::text("Parked: all three lookups done."))
        .turn(ScriptTurn::text("Follow-up answered."))
}

/// How many turns [`long_script`] plays for `events` events (the last one, a text turn, ends the request).
pub fn long_turns(events: u64) -> u64 {
    events.div_ceil(LONG_EVENTS_PER_TURN)
}

/// One request streaming about `events` events: [`long_turns`] turns of [`LONG_CALLS_PER_TURN`] custom calls
/// each, then a text turn.
pub fn long_scripts(events: u64) -> Scripts {
    Scripts::per_session(move |_| long_script(events))
}

fn long_script(events: u64) -> Script {
    let turn = |t: u64| {
        let calls = (0..LONG_CALLS_PER_TURN)
            .map(|c| ScriptToolCall::new(format!("toolu_{t}_{c}"), TOOL, json!({"turn": t, "call": c})));
        ScriptTurn::tool_calls(calls).with_text(format!("Turn {t}: looking {LONG_CALLS_PER_TURN} things up."))
    };
    (0..long_turns(events)).map(turn).fold(Script::new(), Script::turn).turn(ScriptTurn::text("All turns done."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use managed_agents_conformance::{ScriptPlayer, ScriptStop};

    #[test]
    fn each_session_gets_three_tool_turns_then_two_text_turns() {
        let mut player = ScriptPlayer::new(load_scripts());
        for session in ["a", "b"] {
            for _ in 0..TOOL_TURNS {
                let turn = player.take(session, None).expect("a tool turn");
                assert_eq!((turn.tool_calls.len(), &turn.stop), (1, &ScriptStop::ToolUse));
            }
        }
        let first = player.take("a", None).expect("the parking turn");
        assert!(first.tool_calls.is_empty() && first.stop == ScriptStop::EndTurn);
        assert!(player.take("a", None).is_some_and(|turn| turn.tool_calls.is_empty()), "the follow-up turn");
        assert!(player.take("a", None).is_none(), "nothing more");
        assert_ne!(load_script(0).turns[0].tool_calls[0].id, load_script(1).turns[0].tool_calls[0].id);
    }

    #[test]
    fn the_long_script_has_enough_turns_for_its_events() {
        let script = long_script(1_000);
        assert_eq!(script.turns.len() as u64, long_turns(1_000) + 1);
        assert!(long_turns(1_000) * LONG_EVENTS_PER_TURN >= 1_000);
        assert_eq!(script.turns[0].tool_calls.len(), LONG_CALLS_PER_TURN);
        assert_eq!(LONG_EVENTS_PER_TURN, 100);
    }
}
