//! The whole conformance suite against the canned provider, as a third party checks theirs.

use std::sync::Arc;

use downstream_custom_provider::{Canned, Reply, Stop};
use managed_agents_conformance::{
    Backend, BackendCapabilities, Harness, InputLog, ProviderSettings, RecordedInput, ScriptStop, ScriptTurn, Scripts,
    async_trait,
};
use managed_agents_core::{Mode, SessionOptions, TurnInput};

/// A script turn in the canned provider's own terms.
fn reply(turn: &ScriptTurn) -> Reply {
    Reply {
        text: turn.text.clone(),
        tool_calls: turn.tool_calls.iter().map(|c| (c.id.clone(), c.name.clone(), c.input.clone())).collect(),
        stop: match &turn.stop {
            ScriptStop::EndTurn => Stop::EndTurn,
            ScriptStop::ToolUse => Stop::ToolUse,
            ScriptStop::Terminated { reason } => Stop::Terminated(reason.clone()),
            // A stop this provider does not know yet ends the turn plainly.
            _ => Stop::EndTurn,
        },
        usage: turn.usage.map(|u| (u.input_tokens, u.output_tokens)),
    }
}

fn recorded(input: &TurnInput) -> Option<RecordedInput> {
    match input {
        TurnInput::Kickoff { prompt, .. } => {
            Some(RecordedInput::Kickoff { prompt: Some(prompt.clone()), outcome: None })
        }
        TurnInput::Message { text } => Some(RecordedInput::Message(text.clone())),
        TurnInput::ToolResults { results, .. } => Some(RecordedInput::ToolResults(results.clone())),
        _ => None,
    }
}

struct CannedBackend;

#[async_trait]
impl Backend for CannedBackend {
    type Provider = Canned;

    fn capabilities(&self) -> BackendCapabilities {
        BackendCapabilities::new(Mode::RequestResponse).with_provider(Canned::CAPABILITIES)
    }

    async fn launch(&self, scripts: Scripts, _: &ProviderSettings) -> Harness<Canned> {
        let script = scripts.into_shared().expect("no per-session scripts declared");
        let log = InputLog::new();
        let recorder = log.clone();
        let provider = Canned::new(script.turns.iter().map(reply)).observe(move |input| {
            if let Some(input) = recorded(input) {
                recorder.record(input);
            }
        });
        Harness::new(Arc::new(provider), SessionOptions::new(), log)
    }
}

/// One test per scenario (`canned::<scenario>`); what the provider cannot do shows as ignored, with the reason.
fn main() -> std::process::ExitCode {
    managed_agents_conformance::Suite::new().backend("canned", CannedBackend).run()
}
