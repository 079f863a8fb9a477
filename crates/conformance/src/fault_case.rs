//! The fault matrix's vocabulary: [`FaultCase`] (generated from the registry's `faults` list) and
//! [`FaultOutcome`].

use managed_agents_core::Error;

use crate::faults::{CUT_POSITIONS, HTTP_RETRY_AFTER, STALL};
use crate::script::Fault;

/// What a provider promises when a declared fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultOutcome {
    /// The session gets through it: every run completes.
    Recovers,
    /// The session reports it: a run completes or fails with a typed error naming the fault.
    Surfaces,
}

/// Defines [`FaultCase`] from the registry's `faults` list.
macro_rules! fault_cases {
    (
        plain { $($plain:tt)* }
        faults { $($(#[$doc:meta])* $case:ident($name:ident, $lacks:literal): $live:ident, $sync:ident;)* }
    ) => {
        /// A fault of the matrix (see [`crate::faults`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum FaultCase {
            $($(#[$doc])* $case,)*
        }

        impl FaultCase {
            /// Every case, in the order of [`FaultCase::index`].
            pub const ALL: [FaultCase; [$(stringify!($case)),*].len()] = [$(FaultCase::$case),*];

            /// The case's name in its scenarios' names (`fault_<name>_live`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(FaultCase::$case => stringify!($name),)*
                }
            }

            /// Why a backend that does not declare the case skips its scenarios.
            pub(crate) const fn skip_reason(self) -> &'static str {
                match self {
                    $(FaultCase::$case => concat!(
                        "the backend declares no ", $lacks, " (FaultCase::", stringify!($case), ")"
                    ),)*
                }
            }
        }
    };
}

crate::__for_each_scenario!([fault_cases]);

impl FaultCase {
    /// The faults that cut a turn's response short.
    pub const CUTS: [FaultCase; 4] =
        [FaultCase::StreamDrop, FaultCase::CleanClose, FaultCase::Redelivery, FaultCase::TruncatedTurn];

    /// The HTTP refusals.
    pub const HTTP: [FaultCase; 3] = [FaultCase::Http429, FaultCase::Http500, FaultCase::Http529];

    /// The case's place in [`FaultCase::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The positions the case is tried at in each turn.
    pub(crate) fn positions(self) -> usize {
        if FaultCase::CUTS.contains(&self) { CUT_POSITIONS } else { 1 }
    }

    /// The fault injected for the case at `position`.
    pub(crate) fn fault(self, position: usize) -> Fault {
        let refused = |status| Fault::HttpError { status, retry_after: Some(HTTP_RETRY_AFTER) };
        match self {
            FaultCase::StreamDrop => Fault::DropStreamAfter { events: position },
            FaultCase::CleanClose => Fault::CloseStreamAfter { events: position },
            FaultCase::DuplicateEvents => Fault::DuplicateEvents,
            FaultCase::Redelivery => Fault::RedeliverAfter { events: position },
            FaultCase::Http429 => refused(429),
            FaultCase::Http500 => refused(500),
            FaultCase::Http529 => refused(529),
            FaultCase::Stall => Fault::Stall { duration: STALL },
            FaultCase::MalformedFrame => Fault::MalformedFrame,
            FaultCase::TruncatedTurn => Fault::TruncateTurn { events: position },
        }
    }

    /// Whether `error` (the innermost error of a failed run) names the case's fault.
    pub fn is_named_by(self, error: &Error) -> bool {
        match (self, error.root()) {
            (FaultCase::Http429, Error::Http { status, .. }) => *status == 429,
            (FaultCase::Http500, Error::Http { status, .. }) => *status == 500,
            (FaultCase::Http529, Error::Http { status, .. }) => *status == 529,
            (FaultCase::Stall, Error::StreamIdleTimeout { .. } | Error::ResponseTimeout { .. }) => true,
            (FaultCase::MalformedFrame | FaultCase::TruncatedTurn, Error::Malformed { .. }) => true,
            (
                FaultCase::StreamDrop | FaultCase::CleanClose | FaultCase::Redelivery | FaultCase::TruncatedTurn,
                Error::StreamClosed | Error::Transport { .. },
            ) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::STALL_IDLE_TIMEOUT;

    #[test]
    fn every_case_sits_at_its_index_and_has_a_distinct_name() {
        for (index, case) in FaultCase::ALL.iter().enumerate() {
            assert_eq!(case.index(), index);
        }
        let names: std::collections::HashSet<_> = FaultCase::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), FaultCase::ALL.len());
    }

    #[test]
    fn an_error_names_only_its_own_fault() {
        let refused = Error::http(529, "overloaded", None);
        assert!(FaultCase::Http529.is_named_by(&refused));
        assert!(!FaultCase::Http429.is_named_by(&refused));
        assert!(!FaultCase::StreamDrop.is_named_by(&refused));
        let idle = Error::stream_idle_timeout(STALL_IDLE_TIMEOUT);
        assert!(FaultCase::Stall.is_named_by(&idle));
        assert!(!FaultCase::MalformedFrame.is_named_by(&idle));
        let bad = Error::malformed("SSE frame", "not JSON", "{");
        assert!(FaultCase::MalformedFrame.is_named_by(&bad));
        assert!(FaultCase::CleanClose.is_named_by(&Error::StreamClosed));
        assert!(!FaultCase::DuplicateEvents.is_named_by(&Error::StreamClosed));
    }

    #[test]
    fn an_undeclared_case_names_itself_in_its_skip_reason() {
        assert_eq!(FaultCase::StreamDrop.skip_reason(), "the backend declares no stream drop (FaultCase::StreamDrop)");
        for case in FaultCase::ALL {
            assert!(case.skip_reason().ends_with(&format!("(FaultCase::{case:?})")), "{}", case.skip_reason());
        }
    }
}
