//! The playback of one model call: the conversation's next turn, with its faults, as a streamed or a whole
//! completion. The turn counts as played (taken from the player, its input logged) only when a response carries
//! it whole, and a stalled one only if the client still waits when it is written — or once the client has
//! moved on: a stalled turn its client left (an interrupt, a time limit) is played by the same request sent
//! again (a retry), but spent, unlogged, by a later request of the conversation that carries more messages.

use managed_agents_conformance::emulator::{Call, Settle, Shared, plan_call, streamed};
use managed_agents_conformance::{InputLog, ScriptPlayer, ScriptTurn, Scripts};
use managed_agents_core::http::server::{Pacing, ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use std::collections::HashMap;

use serde_json::{Value, json};

use crate::emulator::encode::{MALFORMED, StreamEnd, completion, error_response, sse_frames};
use crate::emulator::sessions::{conversation_key, decode_input};

/// The emulator's state.
pub(super) struct State {
    player: ScriptPlayer,
    /// How many completions were served, all conversations together (it numbers their ids).
    completions: usize,
    pub(super) log: InputLog,
    /// How streamed completions end.
    stream_end: StreamEnd,
    /// Per conversation, the stalled turn last offered: its number and how many messages its request carried.
    stalled: HashMap<String, (usize, usize)>,
}

impl State {
    pub(super) fn new(scripts: Scripts, stream_end: StreamEnd) -> Self {
        let player = ScriptPlayer::new(scripts);
        Self { player, completions: 0, log: InputLog::new(), stream_end, stalled: HashMap::new() }
    }

    /// Spends the stalled turn of conversation `key` that its client left unclaimed, when this request (of
    /// `messages` messages) carries more than the one it stalled for: the client moved on without it.
    fn spend_left_stall(&mut self, key: &str, messages: usize) {
        let Some(&(number, asked)) = self.stalled.get(key) else { return };
        if messages > asked {
            self.stalled.remove(key);
            self.player.take_at(key, number, None);
        }
    }
}

/// Answers a chat request the route accepted with its conversation's next turn.
pub(super) async fn complete(state: Shared<State>, body: Value) -> Response<ResponseBody> {
    let key = conversation_key(&body);
    let input = decode_input(&body);
    let model = body.get("model").cloned().unwrap_or(json!("emulated"));
    let stream = body.get("stream") == Some(&Value::Bool(true));
    let include_usage = body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true));
    let messages = body.get("messages").and_then(Value::as_array).map_or(0, Vec::len);
    let (call, id, end) = {
        let mut guard = state.lock();
        guard.spend_left_stall(&key, messages);
        let State { player, completions, stream_end, stalled, .. } = &mut *guard;
        let end = *stream_end;
        let id = format!("chatcmpl-emulated-{}", *completions + 1);
        // A whole completion has no frames to cut: only a stall applies to it.
        let frames = |turn: &ScriptTurn, _: usize| {
            if stream { sse_frames(turn, &id, &model, include_usage, end) } else { Vec::new() }
        };
        let call = plan_call(player, &key, &input, false, frames, |_| vec![Bytes::from_static(MALFORMED)]);
        if let Call::Deliver { number, delivery, .. } = &call
            && delivery.stall.is_some()
        {
            stalled.insert(key.clone(), (*number, messages));
        }
        (call, id, end)
    };
    let (turn, number, delivery, settle) = match call {
        Call::Deliver { turn, number, delivery, settle } => (turn, number, delivery, settle),
        Call::Spent { served } => {
            let message = format!("unexpected model call: the script has only {served} turns");
            return error_response(StatusCode::BAD_REQUEST, &message);
        }
        Call::Failed { status, retry_after } => return failure(status, retry_after.map(|after| after.as_millis())),
        _ => return error_response(StatusCode::INTERNAL_SERVER_ERROR, "a call the emulator cannot answer"),
    };
    // Claims the turn, unless a retry took it meanwhile (while this response stalled).
    let claim = move || {
        let mut state = state.lock();
        if state.player.take_at(&key, number, Some(&input)).is_none() {
            return false;
        }
        state.log.record(input);
        state.completions += 1;
        true
    };
    if stream {
        let pacing = match settle {
            Settle::Now => {
                claim();
                Pacing::default()
            }
            Settle::OnClaim => Pacing::default().claim(Some(Box::new(claim))),
            _ => Pacing::default(),
        };
        return streamed(delivery, "text/event-stream", end.done(), pacing);
    }
    if let Some(stall) = delivery.stall {
        tokio::time::sleep(stall).await;
    }
    if !claim() {
        return error_response(StatusCode::CONFLICT, "a retry was served this turn while the response stalled");
    }
    json_response(StatusCode::OK, &completion(&turn, &id, &model))
}

/// An injected failure: `status`, with `retry-after-ms` when the fault has a delay.
fn failure(status: u16, retry_after_ms: Option<u128>) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = error_response(status, "injected failure");
    if let Some(value) = retry_after_ms.and_then(|ms| ms.to_string().parse().ok()) {
        response.headers_mut().insert("retry-after-ms", value);
    }
    response
}
