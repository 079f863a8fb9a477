//! Delivering a turn's frames with its faults applied: the wire-agnostic half of fault injection, which every
//! emulator (ours and a third party's) builds on so that a [`Fault`] means the same thing on every wire.

use std::time::Duration;

use crate::script::Fault;

/// How a response carrying one turn ends, once its faults are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum End {
    /// Normally: the wire's own end of a complete turn follows the frames.
    Complete,
    /// The connection breaks (the response body fails, with no clean end): [`Fault::DropStreamAfter`] and
    /// [`Fault::RedeliverAfter`].
    Break,
    /// The body ends cleanly with no end-of-turn marker: [`Fault::CloseStreamAfter`].
    Close,
    /// The wire's end-of-response marker (e.g. a chat stream's `data: [DONE]`) follows, though the turn never
    /// ended: [`Fault::TruncateTurn`].
    Truncated,
}

impl End {
    /// Whether the response stops short of the turn (the emulator must serve the turn again next time, or keep
    /// the undelivered rest in the session's history).
    pub fn is_cut(self) -> bool {
        self != End::Complete
    }
}

/// What an emulator writes for one turn: the frames in order, how the response ends, and what the session's next
/// stream must re-send first.
///
/// Built by [`Delivery::plan`] from the turn's frames (already encoded for the wire, one per event) and its
/// faults. The rules, the same on every wire:
///
/// * [`Fault::Stall`]: nothing is written for [`Delivery::stall`] before the first frame.
/// * [`Fault::DuplicateEvents`]: every frame is written twice in a row.
/// * [`Fault::MalformedFrame`]: the emulator's undecodable frames follow the turn's first frame (or come alone
///   when the turn is cut before its first).
/// * [`Fault::DropStreamAfter`], [`Fault::CloseStreamAfter`], [`Fault::RedeliverAfter`], [`Fault::TruncateTurn`]
///   with `events: n`: only the first `n` frames are written, then the response ends as [`Delivery::end`] says;
///   [`Delivery::held_back`] keeps the rest (a streaming emulator keeps them in the session's history). An `n`
///   past the last frame writes them all, then still ends that way.
/// * [`Fault::RedeliverAfter`]: [`Delivery::redeliver`] holds the frames written, for the session's next stream
///   to send before anything new.
///
/// ```
/// use managed_agents_conformance::{Delivery, End, Fault};
///
/// let faults = [Fault::DuplicateEvents, Fault::DropStreamAfter { events: 2 }];
/// let delivery = Delivery::plan(vec!["a", "b", "c"], &faults, || vec!["%bad%"]);
/// assert_eq!(delivery.frames, ["a", "a", "b", "b"]);
/// assert_eq!(delivery.end, End::Break);
/// assert_eq!(delivery.held_back, ["c"]);
///
/// let delivery = Delivery::plan(vec!["a", "b"], &[Fault::MalformedFrame], || vec!["%bad%"]);
/// assert_eq!(delivery.frames, ["a", "%bad%", "b"]);
/// assert_eq!(delivery.end, End::Complete);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery<F> {
    /// How long to send nothing before the first frame.
    pub stall: Option<Duration>,
    /// The frames to write, in order.
    pub frames: Vec<F>,
    /// How the response ends after them.
    pub end: End,
    /// The turn's frames left unwritten by a cut.
    pub held_back: Vec<F>,
    /// Frames the session's next stream must send first.
    pub redeliver: Vec<F>,
}

impl<F: Clone> Delivery<F> {
    /// The delivery of `frames` under `faults`; `malformed` builds the wire's undecodable frames, called only
    /// when the turn has [`Fault::MalformedFrame`].
    pub fn plan(frames: Vec<F>, faults: &[Fault], malformed: impl FnOnce() -> Vec<F>) -> Self {
        let (cut, end) = cut_of(faults);
        let mut written = frames;
        let held_back = match cut {
            Some(n) if n < written.len() => written.split_off(n),
            _ => Vec::new(),
        };
        let redeliver =
            if faults.iter().any(|f| matches!(f, Fault::RedeliverAfter { .. })) { written.clone() } else { Vec::new() };
        let copies = if faults.contains(&Fault::DuplicateEvents) { 2 } else { 1 };
        let mut out = Vec::with_capacity(written.len() * copies + 1);
        let mut bad = if faults.contains(&Fault::MalformedFrame) { malformed() } else { Vec::new() };
        if written.is_empty() {
            out.append(&mut bad);
        }
        for (index, frame) in written.into_iter().enumerate() {
            for _ in 1..copies {
                out.push(frame.clone());
            }
            out.push(frame);
            if index == 0 {
                out.append(&mut bad);
            }
        }
        let stall = faults.iter().find_map(|f| match f {
            Fault::Stall { duration } => Some(*duration),
            _ => None,
        });
        Self { stall, frames: out, end, held_back, redeliver }
    }

    /// Like [`Delivery::plan`], for a wire that answers each turn with a response of its own (request/response):
    /// a cut at or past the last frame cuts before it instead, so a cut response always lacks the turn's end and
    /// the client can tell (a streaming wire keeps the position as given: its turn lives on in the history).
    pub fn plan_per_turn(frames: Vec<F>, faults: &[Fault], malformed: impl FnOnce() -> Vec<F>) -> Self {
        let last = frames.len().saturating_sub(1);
        let clamped: Vec<Fault> = faults
            .iter()
            .map(|fault| match *fault {
                Fault::DropStreamAfter { events } => Fault::DropStreamAfter { events: events.min(last) },
                Fault::CloseStreamAfter { events } => Fault::CloseStreamAfter { events: events.min(last) },
                Fault::RedeliverAfter { events } => Fault::RedeliverAfter { events: events.min(last) },
                Fault::TruncateTurn { events } => Fault::TruncateTurn { events: events.min(last) },
                ref other => other.clone(),
            })
            .collect();
        Self::plan(frames, &clamped, malformed)
    }
}

/// The first cutting fault among `faults`: after how many frames, and how the response then ends.
fn cut_of(faults: &[Fault]) -> (Option<usize>, End) {
    faults
        .iter()
        .find_map(|f| match f {
            Fault::DropStreamAfter { events } | Fault::RedeliverAfter { events } => Some((Some(*events), End::Break)),
            Fault::CloseStreamAfter { events } => Some((Some(*events), End::Close)),
            Fault::TruncateTurn { events } => Some((Some(*events), End::Truncated)),
            _ => None,
        })
        .unwrap_or((None, End::Complete))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad() -> Vec<&'static str> {
        vec!["bad"]
    }

    #[test]
    fn without_faults_every_frame_goes_out_once_and_the_turn_completes() {
        let delivery = Delivery::plan(vec![1, 2, 3], &[], || vec![0]);
        assert_eq!((delivery.frames, delivery.end, delivery.stall), (vec![1, 2, 3], End::Complete, None));
        assert!(delivery.held_back.is_empty() && delivery.redeliver.is_empty());
    }

    #[test]
    fn each_cut_ends_its_own_way_after_the_frames_it_allows() {
        let frames = || vec!["a", "b", "c"];
        for (fault, end) in [
            (Fault::DropStreamAfter { events: 1 }, End::Break),
            (Fault::CloseStreamAfter { events: 1 }, End::Close),
            (Fault::TruncateTurn { events: 1 }, End::Truncated),
            (Fault::RedeliverAfter { events: 1 }, End::Break),
        ] {
            let delivery = Delivery::plan(frames(), std::slice::from_ref(&fault), bad);
            assert_eq!(delivery.frames, ["a"], "{fault:?}");
            assert_eq!(delivery.held_back, ["b", "c"], "{fault:?}");
            assert_eq!(delivery.end, end, "{fault:?}");
            assert!(end.is_cut());
        }
    }

    #[test]
    fn a_cut_past_the_last_frame_writes_them_all_and_still_cuts() {
        let delivery = Delivery::plan(vec!["a", "b"], &[Fault::CloseStreamAfter { events: 9 }], bad);
        assert_eq!((delivery.frames, delivery.end), (vec!["a", "b"], End::Close));
        assert!(delivery.held_back.is_empty());
    }

    #[test]
    fn a_per_turn_cut_always_loses_the_last_frame() {
        let delivery = Delivery::plan_per_turn(vec!["a", "b", "c"], &[Fault::TruncateTurn { events: 7 }], bad);
        assert_eq!((delivery.frames, delivery.held_back, delivery.end), (vec!["a", "b"], vec!["c"], End::Truncated));
    }

    #[test]
    fn a_redelivery_keeps_what_was_written_for_the_next_stream() {
        let faults = [Fault::RedeliverAfter { events: 2 }, Fault::DuplicateEvents];
        let delivery = Delivery::plan(vec!["a", "b", "c"], &faults, bad);
        assert_eq!(delivery.frames, ["a", "a", "b", "b"]);
        assert_eq!(delivery.redeliver, ["a", "b"], "each event once: the duplicate is not part of the turn");
    }

    #[test]
    fn malformed_frames_follow_the_first_frame_or_stand_alone_before_a_cut_at_zero() {
        let delivery = Delivery::plan(vec!["a", "b"], &[Fault::MalformedFrame], || vec!["x", "y"]);
        assert_eq!(delivery.frames, ["a", "x", "y", "b"]);
        let faults = [Fault::MalformedFrame, Fault::DropStreamAfter { events: 0 }];
        let delivery = Delivery::plan(vec!["a", "b"], &faults, bad);
        assert_eq!(delivery.frames, ["bad"]);
    }

    #[test]
    fn a_stall_is_reported_and_the_malformed_builder_is_only_called_when_needed() {
        let stall = Duration::from_millis(40);
        let delivery = Delivery::plan(vec![1], &[Fault::Stall { duration: stall }], || panic!("not malformed"));
        assert_eq!(delivery.stall, Some(stall));
    }
}
