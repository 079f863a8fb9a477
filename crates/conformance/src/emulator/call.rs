//! Per-call playback: one request plays the next scripted turn, with its faults ([`plan_call`]), and the
//! response streams it as planned ([`streamed`]).

use std::io;
use std::time::Duration;

use managed_agents_core::http::server::{Pacing, ResponseBody};
use managed_agents_core::http::{Bytes, HeaderValue, Response};

use crate::delivery::{Delivery, End};
use crate::log::RecordedInput;
use crate::player::ScriptPlayer;
use crate::script::{Fault, ScriptTurn};

/// What one model call is answered with (see [`plan_call`]).
// One per request, matched at once: boxing the turn would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
#[non_exhaustive]
pub enum Call<F> {
    /// The script has no turn left for this caller: answer "unexpected model call" in the wire's error shape.
    Spent {
        /// How many turns the caller was served.
        served: usize,
    },
    /// The turn's injected HTTP failure ([`Fault::HttpError`]), on the turn's first call only: a retry is
    /// served whole.
    Failed {
        /// The status to answer with.
        status: u16,
        /// The `retry-after` to send, when the fault has one.
        retry_after: Option<Duration>,
    },
    /// Deliver the turn.
    Deliver {
        /// The turn.
        turn: ScriptTurn,
        /// How many turns the caller was served before this one (the turn's number, from 0).
        number: usize,
        /// Its frames with its faults applied.
        delivery: Delivery<F>,
        /// When the turn counts as played.
        settle: Settle,
    },
}

/// When a delivered turn counts as played: taken from the player (e.g. with
/// [`ScriptPlayer::take_at`]) and its input logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Settle {
    /// Now, before answering.
    Now,
    /// When the stalled response is written, if the client still waits for it: commit it in the response's
    /// claim (a client that gave up retries, and the retry is served the turn whole).
    OnClaim,
    /// Never: the response is cut short or carries a broken frame, so the next call for the turn is served
    /// the turn again.
    Never,
}

/// Plans the answer to a model call from `key` (a session id, or whatever identifies a conversation on the wire),
/// whose request adds `input`: peeks `key`'s next turn, applies the turn's faults on its first call only (on
/// every call with `every_call`) and marks them fired, encodes it with `frames(turn, number)` and plans their
/// delivery, with `malformed(frames)` as the wire's undecodable frames (see [`Delivery::plan_per_turn`]).
///
/// The turn is not taken: commit it as [`Settle`] says.
pub fn plan_call<F: Clone>(
    player: &mut ScriptPlayer,
    key: &str,
    input: &RecordedInput,
    every_call: bool,
    frames: impl FnOnce(&ScriptTurn, usize) -> Vec<F>,
    malformed: impl FnOnce(&[F]) -> Vec<F>,
) -> Call<F> {
    let number = player.served(key);
    let Some(turn) = player.peek(key, Some(input)).cloned() else {
        return Call::Spent { served: number };
    };
    let due = player.faults_due(key);
    if let Some((status, retry_after)) = turn.http_error()
        && due
    {
        player.fault_fired(key);
        return Call::Failed { status, retry_after };
    }
    let faults: &[Fault] = if due || every_call { &turn.faults } else { &[] };
    if !faults.is_empty() {
        player.fault_fired(key);
    }
    let encoded = frames(&turn, number);
    let delivery = Delivery::plan_per_turn(encoded.clone(), faults, || malformed(&encoded));
    let settle = if delivery.end.is_cut() || faults.contains(&Fault::MalformedFrame) {
        Settle::Never
    } else if delivery.stall.is_some() {
        Settle::OnClaim
    } else {
        Settle::Now
    };
    Call::Deliver { turn, number, delivery, settle }
}

/// A response streaming `delivery`'s frames as `content_type`, paced as `pacing` says (its stall is set from the
/// delivery): then `done` for a complete or truncated turn, nothing for a clean close, and a body error
/// (connection reset) for a break.
pub fn streamed(
    delivery: Delivery<Bytes>,
    content_type: &'static str,
    done: Option<Bytes>,
    pacing: Pacing,
) -> Response<ResponseBody> {
    let tail = match delivery.end {
        End::Break => Some(Err(io::Error::new(io::ErrorKind::ConnectionReset, "injected drop"))),
        End::Close => None,
        _ => done.map(Ok),
    };
    let pacing = pacing.stall(delivery.stall);
    let mut response = Response::new(ResponseBody::paced(delivery.frames, tail, pacing));
    response.headers_mut().insert("content-type", HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{Script, ScriptTurn};

    fn frames(turn: &ScriptTurn, number: usize) -> Vec<String> {
        let mut out = vec![format!("start {number}")];
        out.extend(turn.text.iter().cloned());
        out.push("end".into());
        out
    }

    fn call(player: &mut ScriptPlayer) -> Call<String> {
        plan_call(player, "s", &RecordedInput::Message("hi".into()), false, frames, |_| vec!["%bad%".into()])
    }

    #[test]
    fn a_plain_turn_settles_now_and_a_spent_script_says_how_many_were_served() {
        let mut player = ScriptPlayer::new(Script::new().turn(ScriptTurn::text("hello")));
        let Call::Deliver { number, delivery, settle, .. } = call(&mut player) else { panic!("not delivered") };
        assert_eq!((number, settle), (0, Settle::Now));
        assert_eq!(delivery.frames, ["start 0", "hello", "end"]);
        assert!(player.take("s", None).is_some());
        assert!(matches!(call(&mut player), Call::Spent { served: 1 }));
    }

    #[test]
    fn an_http_failure_meets_the_first_call_only() {
        let turn = ScriptTurn::text("hello").with_fault(Fault::HttpError { status: 529, retry_after: None });
        let mut player = ScriptPlayer::new(Script::new().turn(turn));
        assert!(matches!(call(&mut player), Call::Failed { status: 529, retry_after: None }));
        assert!(matches!(call(&mut player), Call::Deliver { settle: Settle::Now, .. }));
    }

    #[test]
    fn cuts_and_broken_frames_never_settle_and_a_stall_settles_on_claim() {
        let cut = ScriptTurn::text("hello").with_fault(Fault::DropStreamAfter { events: 1 });
        let bad = ScriptTurn::text("hello").with_fault(Fault::MalformedFrame);
        let stall = ScriptTurn::text("hello").with_fault(Fault::Stall { duration: Duration::from_millis(1) });
        for (turn, expected) in [(cut, Settle::Never), (bad, Settle::Never), (stall, Settle::OnClaim)] {
            let mut player = ScriptPlayer::new(Script::new().turn(turn));
            let Call::Deliver { settle, .. } = call(&mut player) else { panic!("not delivered") };
            assert_eq!(settle, expected);
            // The retry is served whole.
            assert!(matches!(call(&mut player), Call::Deliver { settle: Settle::Now, .. }));
        }
    }

    #[test]
    fn every_call_applies_the_faults_again() {
        let turn = ScriptTurn::text("hello").with_fault(Fault::TruncateTurn { events: 1 });
        let mut player = ScriptPlayer::new(Script::new().turn(turn));
        let input = RecordedInput::Message("hi".into());
        for _ in 0..2 {
            let call = plan_call(&mut player, "s", &input, true, frames, |_| Vec::new());
            assert!(matches!(call, Call::Deliver { settle: Settle::Never, .. }));
        }
    }

    #[tokio::test]
    async fn a_break_ends_in_an_error_and_a_clean_close_without_the_done_marker() {
        use crate::emulator::{EmulatorServer, Shared};
        use managed_agents_core::http::server::ReceivedRequest;

        for (fault, ends_with_done, complete) in [
            (None, true, true),
            (Some(Fault::TruncateTurn { events: 1 }), true, true),
            (Some(Fault::CloseStreamAfter { events: 1 }), false, true),
            (Some(Fault::DropStreamAfter { events: 1 }), false, false),
        ] {
            let faults: Vec<Fault> = fault.clone().into_iter().collect();
            let server = EmulatorServer::start(faults, |faults: Shared<Vec<Fault>>, _: ReceivedRequest| async move {
                let faults = faults.lock().clone();
                let delivery = Delivery::plan_per_turn(vec![Bytes::from("a;"), Bytes::from("b;")], &faults, Vec::new);
                streamed(delivery, "text/event-stream", Some(Bytes::from("DONE")), Pacing::default())
            })
            .await
            .expect("server");
            let address = server.base_url().trim_start_matches("http://").to_string();
            let mut stream = tokio::net::TcpStream::connect(&address).await.expect("connect");
            let request = "GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
            tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes()).await.expect("write");
            let mut raw = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut raw).await;
            let raw = String::from_utf8_lossy(&raw);
            assert!(raw.contains("content-type: text/event-stream"), "{raw}");
            assert!(raw.contains("a;"), "{raw}");
            assert_eq!(raw.contains("DONE"), ends_with_done, "{fault:?}: {raw}");
            // A chunked body that ends cleanly has its last, empty chunk; a broken one does not.
            assert_eq!(raw.ends_with("0\r\n\r\n"), complete, "{fault:?}: {raw}");
        }
    }
}
