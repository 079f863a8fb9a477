//! The soak's fault plan: which scripted turn of which session carries which fault, drawn from a seeded random
//! generator keyed by (seed, provider, session index), so one session's faults can be replayed alone.

use std::fmt;
use std::time::Duration;

use managed_agents_agentcore::emulator::AgentCoreBackend;
use managed_agents_claude::emulator::ClaudeBackend;
use managed_agents_conformance::{Backend, BackendCapabilities, Fault, FaultCase, FaultOutcome};
use managed_agents_local::emulator::LocalBackend;

use crate::args::ProviderKind;

/// A small deterministic generator (SplitMix64): the same state gives the same numbers on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of one session: its numbers depend on the seed, the provider and the session index only.
    pub fn for_session(seed: u64, provider: ProviderKind, index: usize) -> Self {
        let tag = provider
            .name()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
        let mut rng = Self(seed ^ tag.rotate_left(17));
        let mixed = rng.next_u64() ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Self(mixed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform number in `0..bound` (`bound` at least 1).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// The kinds of fault the soak injects: the fault-matrix cases a backend declares, a stall well under the idle
/// timeout, and a split `requires_action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A case of the conformance fault matrix, as the provider's backend declares it.
    Case(FaultCase),
    /// `Stall` well under the idle timeout (the matrix's stall goes past it; this one must always be survived).
    ShortStall,
    /// `SplitRequiresAction` (on a turn of two calls; backends with `split_requires_action`).
    Split,
}

impl FaultKind {
    /// Where it sorts in the table: the matrix's order, then the soak's own kinds.
    fn rank(self) -> usize {
        match self {
            Self::Case(case) => case.index(),
            Self::ShortStall => FaultCase::ALL.len(),
            Self::Split => FaultCase::ALL.len() + 1,
        }
    }

    /// Its short name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Case(case) => case.name(),
            Self::ShortStall => "short_stall",
            Self::Split => "split",
        }
    }

    /// The kinds `provider`'s emulator injects in the soak: every matrix case its conformance backend declares
    /// but the long stall, plus a short stall, plus a split where the backend plays one.
    pub fn for_provider(provider: ProviderKind) -> Vec<Self> {
        let declared = declared(provider);
        let mut kinds: Vec<Self> = FaultCase::ALL
            .into_iter()
            .filter(|&case| case != FaultCase::Stall && declared.fault(case).is_some())
            .map(Self::Case)
            .collect();
        kinds.push(Self::ShortStall);
        if declared.split_requires_action {
            kinds.push(Self::Split);
        }
        kinds
    }

    /// What the provider promises when this fault hits: [`FaultOutcome::Surfaces`] means a run may fail, with
    /// an error naming the fault ([`FaultCase::is_named_by`]); the soak's own kinds are always survived.
    pub fn outcome(self, provider: ProviderKind) -> FaultOutcome {
        match self {
            Self::Case(case) => declared(provider).fault(case).unwrap_or(FaultOutcome::Recovers),
            Self::ShortStall | Self::Split => FaultOutcome::Recovers,
        }
    }

    /// The conformance fault, with its parameters drawn from `rng`.
    fn fault(self, rng: &mut Rng) -> Fault {
        let retry_after = Some(Duration::from_millis(10 + rng.below(31)));
        let events = rng.below(5) as usize;
        match self {
            Self::Case(FaultCase::StreamDrop) => Fault::DropStreamAfter { events },
            Self::Case(FaultCase::CleanClose) => Fault::CloseStreamAfter { events },
            Self::Case(FaultCase::Redelivery) => Fault::RedeliverAfter { events },
            Self::Case(FaultCase::TruncatedTurn) => Fault::TruncateTurn { events },
            Self::Case(FaultCase::DuplicateEvents) => Fault::DuplicateEvents,
            Self::Case(FaultCase::Http429) => Fault::HttpError { status: 429, retry_after },
            Self::Case(FaultCase::Http500) => Fault::HttpError { status: 500, retry_after },
            Self::Case(FaultCase::Http529) => Fault::HttpError { status: 529, retry_after },
            Self::Case(FaultCase::MalformedFrame) => Fault::MalformedFrame,
            Self::Split => Fault::SplitRequiresAction,
            // `FaultCase` is non-exhaustive: a case this driver does not know yet plays as a short stall.
            Self::ShortStall | Self::Case(_) => Fault::Stall { duration: Duration::from_millis(20 + rng.below(81)) },
        }
    }
}

/// The capabilities `provider`'s conformance backend declares (the default configuration: Local streams).
pub fn declared(provider: ProviderKind) -> BackendCapabilities {
    match provider {
        ProviderKind::Claude => ClaudeBackend::default().capabilities(),
        ProviderKind::Local => LocalBackend::streaming().capabilities(),
        ProviderKind::AgentCore => AgentCoreBackend::default().capabilities(),
    }
}

impl PartialOrd for FaultKind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FaultKind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One planned fault: on which turn, of which kind, and the conformance fault itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The turn (from 0) that carries it.
    pub turn: usize,
    /// Its kind.
    pub kind: FaultKind,
    /// What the emulator injects.
    pub fault: Fault,
}

/// The faults of one session: each of its `turns` turns carries a fault with probability `rate`, of a kind drawn
/// uniformly from the provider's list (a split only on a turn of several calls; `calls(turn)` says how many).
pub fn plan(
    seed: u64,
    provider: ProviderKind,
    index: usize,
    turns: usize,
    rate: f64,
    calls: impl Fn(usize) -> usize,
) -> Vec<Planned> {
    let mut rng = Rng::for_session(seed, provider, index);
    let kinds = FaultKind::for_provider(provider);
    let mut planned = Vec::new();
    for turn in 0..turns {
        // Both draws happen on every turn, so one turn's outcome does not shift the next turn's numbers.
        let (hit, pick) = (rng.unit(), rng.below(kinds.len() as u64) as usize);
        if hit >= rate {
            continue;
        }
        let mut kind = kinds[pick];
        if kind == FaultKind::Split && calls(turn) < 2 {
            // A split needs two calls to split: the turn gets a short stall instead.
            kind = FaultKind::ShortStall;
        }
        planned.push(Planned { turn, kind, fault: kind.fault(&mut rng) });
    }
    planned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_another() {
        let one = |seed| plan(seed, ProviderKind::Claude, 7, 200, 0.2, |_| 2);
        assert_eq!(one(42), one(42));
        assert_ne!(one(42), one(43));
        assert_ne!(one(42), plan(42, ProviderKind::Local, 7, 200, 0.2, |_| 2), "the provider is part of the key");
        assert_ne!(one(42), plan(42, ProviderKind::Claude, 8, 200, 0.2, |_| 2), "so is the session index");
    }

    #[test]
    fn the_rate_is_about_the_share_of_turns_with_a_fault() {
        let faults: usize = (0..1000).map(|i| plan(1, ProviderKind::AgentCore, i, 10, 0.05, |_| 1).len()).sum();
        assert!((400..600).contains(&faults), "{faults} faults in 10,000 turns at 5 %");
        assert!(plan(1, ProviderKind::Claude, 0, 50, 0.0, |_| 1).is_empty());
        assert_eq!(plan(1, ProviderKind::Claude, 0, 50, 1.0, |_| 1).len(), 50);
    }

    #[test]
    fn kinds_stay_within_the_providers_list_and_splits_need_two_calls() {
        for provider in [ProviderKind::Claude, ProviderKind::Local, ProviderKind::AgentCore] {
            for planned in plan(9, provider, 3, 500, 1.0, |turn| 1 + turn % 2) {
                assert!(FaultKind::for_provider(provider).contains(&planned.kind), "{planned:?}");
                if planned.kind == FaultKind::Split {
                    assert_eq!(planned.turn % 2, 1, "a split only on a turn of two calls");
                }
            }
        }
    }
}
