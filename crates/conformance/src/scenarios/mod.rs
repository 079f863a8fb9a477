//! The scenarios: one `pub async fn` per behaviour, each taking a [`Backend`].
//!
//! A scenario returns [`Verdict::Passed`], returns [`Verdict::Skipped`] with the reason when the backend lacks a
//! capability it needs, and panics (failing its test) when the provider misbehaves. [`ALL`] lists every scenario
//! with its requirement and [`run`] runs one by name; the [`Suite`](crate::Suite) runs them all, one test each.
//!
//! They come in groups (all reached here, as `scenarios::<name>`):
//!
//! * the session loop over one run — talking, tool calls, how a run ends, streamed text, usage, options,
//!   outcomes (`plain_end_turn` … `outcome_rejected_when_unsupported`);
//! * live sessions — follow-ups, queued messages, raw events, interrupts, timeouts and cancellation, concurrent
//!   sessions (`follow_up_message` … `concurrent_sessions_stay_apart`);
//! * broken and repeated delivery, and getting back into a session — split batches, duplicates, dropped streams,
//!   resume, transcripts (`split_requires_action_recovery` … `transcript_reattach`);
//! * approvals — the permission hook, deferred calls, the tool ledger, confirmations (`approval_allow` …
//!   `confirmation_default_defers`);
//! * a run's model configuration — data planes, catalog ids, the runtime model, per-run destinations
//!   (`model_config_refused_without_data_plane` … `per_run_destination_stays_apart`);
//! * the fault matrix ([`crate::faults`]): `fault_<case>_live` and `fault_<case>_sync` for every
//!   [`FaultCase`].

mod approvals;
mod basic;
mod faults;
mod helpers;
mod live;
mod models;
mod reconnect;
mod requirements;
mod verdict;

pub use verdict::{Requirement, ScenarioInfo, Verdict};

use self::faults::RunMode;
use crate::backend::Backend;
use crate::fault_case::FaultCase;

/// Generates, from the registry, the public path of every scenario, the fault matrix's scenarios, [`ALL`] and
/// [`run`].
macro_rules! registry {
    (
        plain { $($module:ident::$name:ident: $requires:ident),* $(,)? }
        faults { $($(#[$doc:meta])* $case:ident($case_name:ident, $lacks:literal): $live:ident, $sync:ident;)* }
    ) => {
        $(pub use $module::$name;)*

        $(
            #[doc = concat!(
                "The fault matrix's [`", stringify!($case), "`](FaultCase::", stringify!($case),
                ") case on a live session (see [`crate::faults`])."
            )]
            pub async fn $live<B: Backend>(backend: &B) -> Verdict {
                faults::run_case(backend, FaultCase::$case, RunMode::Live).await
            }

            #[doc = concat!(
                "The fault matrix's [`", stringify!($case), "`](FaultCase::", stringify!($case),
                ") case on a synchronous run (see [`crate::faults`])."
            )]
            pub async fn $sync<B: Backend>(backend: &B) -> Verdict {
                faults::run_case(backend, FaultCase::$case, RunMode::Sync).await
            }
        )*

        /// Every scenario of the suite, in the order the [`Suite`](crate::Suite) lists them.
        pub const ALL: &[ScenarioInfo] = &[
            $(ScenarioInfo { name: stringify!($name), requires: requirements::$requires },)*
            $(
                ScenarioInfo { name: stringify!($live), requires: |c| requirements::needs_fault(c, FaultCase::$case) },
                ScenarioInfo { name: stringify!($sync), requires: |c| requirements::needs_fault(c, FaultCase::$case) },
            )*
        ];

        /// Runs the scenario called `name` against `backend`; `None` when no scenario has that name.
        pub async fn run<B: Backend>(name: &str, backend: &B) -> Option<Verdict> {
            match name {
                $(stringify!($name) => Some($module::$name(backend).await),)*
                $(
                    stringify!($live) => Some($live(backend).await),
                    stringify!($sync) => Some($sync(backend).await),
                )*
                _ => None,
            }
        }
    };
}

crate::__for_each_scenario!([registry]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_listed_once() {
        let mut names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a scenario is listed twice");
    }

    #[test]
    fn the_fault_scenarios_are_every_case_live_then_sync() {
        let listed: Vec<&str> = ALL.iter().map(|s| s.name).filter(|name| name.starts_with("fault_")).collect();
        let expected: Vec<String> = FaultCase::ALL
            .iter()
            .flat_map(|case| ["live", "sync"].map(|mode| format!("fault_{}_{mode}", case.name())))
            .collect();
        assert_eq!(listed, expected);
    }
}
