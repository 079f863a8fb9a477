//! How an emulated control-plane resource (a harness, a harness endpoint) moves through its statuses: a
//! transitional status (`CREATING`, `UPDATING`, `DELETING`) ends when its [`Transition`] is due, in `READY` (or,
//! for `DELETING`, by vanishing) unless the resource was told to end in another status.

use std::time::{Duration, Instant};

/// When a resource leaves a transitional status (`CREATING`, `UPDATING`, `DELETING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transition {
    /// After this many status polls of it have answered with the transitional status (0: at the first).
    AfterPolls(u32),
    /// Once this much time has passed since it entered the status.
    After(Duration),
    /// Never: it stays in the status (a stuck resource).
    Never,
}

impl Transition {
    fn due(self, polls: u32, since: Instant) -> bool {
        match self {
            Self::AfterPolls(n) => polls >= n,
            Self::After(after) => since.elapsed() >= after,
            Self::Never => false,
        }
    }
}

/// Where one resource is in its current status. The status itself lives in the resource's public snapshot.
#[derive(Debug)]
pub(super) struct Progress {
    /// Status polls answered with the current status.
    polls: u32,
    since: Instant,
    /// What the transitional status ends in instead of `READY` (or, for `DELETING`, instead of vanishing): a
    /// status and its failure reason.
    ends_in: Option<(String, Option<String>)>,
}

impl Progress {
    /// A resource that has just entered its status and will end it in `ends_in` (when given).
    pub(super) fn new(ends_in: Option<(String, Option<String>)>) -> Self {
        Self { polls: 0, since: Instant::now(), ends_in }
    }

    /// Moves `status` to `next` (e.g. `DELETING` after a delete), forgetting what the old status was to end in.
    pub(super) fn enter(&mut self, status: &mut String, next: &str) {
        if status != next {
            *status = next.to_string();
            self.ends_in = None;
            self.polls = 0;
            self.since = Instant::now();
        }
    }

    /// Answers one status poll: `status` moves on when its transition is due. `false` when the resource is gone.
    pub(super) fn poll(&mut self, status: &mut String, ready_after: Transition, gone_after: Transition) -> bool {
        let next = match status.as_str() {
            "CREATING" | "UPDATING" if ready_after.due(self.polls, self.since) => {
                Some(self.ends_in.as_ref().map_or("READY", |(status, _)| status.as_str()).to_string())
            }
            "DELETING" if gone_after.due(self.polls, self.since) => {
                self.ends_in.as_ref().map(|(status, _)| status.clone())
            }
            _ => Some(status.clone()),
        };
        let Some(next) = next else { return false };
        if next != *status {
            *status = next;
            self.polls = 0;
            self.since = Instant::now();
        }
        self.polls = self.polls.saturating_add(1);
        true
    }

    /// The failure reason to show with `status`: the one it was told to end in, once it is there.
    pub(super) fn failure_reason(&self, status: &str) -> Option<&str> {
        match &self.ends_in {
            Some((ends_in, Some(reason))) if ends_in == status => Some(reason),
            _ => None,
        }
    }
}
