//! Issue 8 (2): no value of any public knob makes the library panic. Each is validated (a typed error before
//! anything is opened) or saturates (`Duration::MAX` as a timeout means "no limit", say).

use std::time::Duration;

use managed_agents_conformance::reference::{RequestResponseReference, StreamingReference};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::{Error, ReconnectPolicy, RetryPolicy, Session, SessionOptions, tool_fn};
use proptest::prelude::*;
use serde_json::json;

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        Just(Duration::from_nanos(1)),
        (0u64..=u64::MAX, 0u32..1_000_000_000).prop_map(|(secs, nanos)| Duration::new(secs, nanos)),
        (1u64..5_000).prop_map(Duration::from_millis),
    ]
}

fn fraction() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(0.0),
        Just(1.0),
        any::<f64>(),
        0.0..=1.0,
    ]
}

fn script() -> Script {
    Script::new().turn(ScriptTurn::tool_call("call_1", "echo", json!({"x": 1}))).turn(ScriptTurn::text("done"))
}

/// The same script with the stream dropping in its first turn, so the reconnect policy's delays are computed and
/// slept on.
fn dropping_script() -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call("call_1", "echo", json!({"x": 1})).with_fault(Fault::DropStreamAfter { events: 1 }))
        .turn(ScriptTurn::text("done"))
}

#[derive(Debug, Clone)]
struct Knobs {
    timeout: Duration,
    max_turns: u32,
    max_reprompts: u32,
    tool_concurrency: usize,
    tool_timeout: Option<Duration>,
    seen_window: usize,
    reconnect: (Duration, Duration, f64, Option<u32>),
    streaming: bool,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        duration(),
        prop_oneof![Just(0u32), Just(1), Just(u32::MAX), any::<u32>()],
        any::<u32>(),
        prop_oneof![Just(0usize), Just(1), Just(usize::MAX), any::<usize>()],
        proptest::option::of(duration()),
        prop_oneof![Just(0usize), Just(1), Just(usize::MAX), 1usize..10_000],
        (duration(), duration(), fraction(), proptest::option::of(any::<u32>())),
        any::<bool>(),
    )
        .prop_map(
            |(timeout, max_turns, max_reprompts, tool_concurrency, tool_timeout, seen_window, reconnect, streaming)| {
                Knobs {
                    timeout,
                    max_turns,
                    max_reprompts,
                    tool_concurrency,
                    tool_timeout,
                    seen_window,
                    reconnect,
                    streaming,
                }
            },
        )
}

fn options(k: &Knobs) -> SessionOptions {
    let (initial, max, jitter, attempts) = k.reconnect;
    let mut options = SessionOptions::new()
        .prompt("go")
        .timeout(k.timeout)
        .max_turns(k.max_turns)
        .max_reprompts(k.max_reprompts)
        .tool_concurrency(k.tool_concurrency)
        .seen_window(k.seen_window)
        .reconnect_policy(
            ReconnectPolicy::default()
                .with_initial(initial)
                .with_max(max)
                .with_jitter(jitter)
                .with_max_attempts(attempts),
        );
    if let Some(timeout) = k.tool_timeout {
        options = options.tool_timeout(timeout);
    }
    options
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// A whole run under arbitrary options ends in a result or a typed error, never a panic. Streaming runs drop
    /// their stream once, so every reconnect knob is used. The clock is paused (it jumps to the next timer), so
    /// day-long delays take no time; a run still waiting after a virtual year passes.
    #[test]
    fn any_session_options_give_a_result_or_a_typed_error(k in knobs()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        let handler = tool_fn(|_, input| async move { Ok(input.to_string()) });
        let year = Duration::from_secs(365 * 24 * 3600);
        let outcome = runtime.block_on(async {
            let run = async {
                if k.streaming {
                    Session::run(&StreamingReference::new(dropping_script()), handler, options(&k)).await
                } else {
                    Session::run(&RequestResponseReference::new(script()), handler, options(&k)).await
                }
            };
            tokio::time::timeout(year, run).await
        });
        let Ok(outcome) = outcome else { return Ok(()) };
        match outcome {
            Ok(result) => prop_assert_eq!(result.text, "done"),
            Err(Error::InvalidOption { option, .. }) => {
                prop_assert!(["max_turns", "tool_concurrency", "timeout", "tool_timeout", "reconnect_policy",
                    "seen_window"].contains(&option), "{}", option);
            }
            Err(error) => prop_assert!(
                matches!(error, Error::TimedOut { .. } | Error::MaxTurnsExceeded { .. } | Error::Turn { .. }),
                "unexpected {:?}", error
            ),
        }
    }

    /// Retry delays for any policy and any attempt never panic and never exceed the policy's maximum.
    #[test]
    fn retry_delays_saturate(
        initial in duration(), max in duration(), jitter in fraction(), unit in fraction(),
        retry in any::<u32>(), after in proptest::option::of(duration()),
    ) {
        let policy = RetryPolicy::default().with_initial(initial).with_max(max).with_jitter(jitter);
        prop_assert!(policy.delay(retry, after, unit) <= max);
        let reconnect = ReconnectPolicy::default().with_initial(initial).with_max(max).with_jitter(jitter);
        prop_assert!(reconnect.delay(retry, unit) <= max);
    }
}

/// The regression of issue 8 (2): `timeout(Duration::MAX)`, a common way to say "no timeout", overflowed
/// `Instant + Duration` and panicked.
#[tokio::test]
async fn a_timeout_of_duration_max_means_no_limit() {
    let handler = tool_fn(|_, _| async move { Ok("1".to_string()) });
    let options = SessionOptions::new().timeout(Duration::MAX).tool_timeout(Duration::MAX).tool_concurrency(usize::MAX);
    let result = Session::run(&StreamingReference::new(script()), handler, options).await.unwrap();
    assert_eq!(result.text, "done");
}
