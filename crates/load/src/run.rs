//! The `run` mode: N concurrent live sessions, each doing its tool turns and parking, then a follow-up message
//! to all of them.

use managed_agents_core::HttpOptions;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use crate::args::ProviderKind;
use crate::child::EmulatorChild;
use crate::fleet::{close_all, follow_up, park};
use crate::measure::{FdWatch, Resident, Samples, ephemeral_ports, open_fds};
use crate::probe::Latencies;
use crate::report::{self, Table};
use crate::script::TOOL_TURNS;
use crate::target::target;

/// Sockets kept for everything but the sessions' connections (the runtime, stdio, the emulator pipes …).
const SPARE_FDS: u64 = 256;

/// The ramp a run needs when none is asked for: none while two sockets per session fit under the open-file
/// limit, else as many sessions in flight as leave room for one more socket each beside every session's own.
///
/// Why two: hyper's HTTP/1 pool opens a connection per request in flight, so a session whose event stream holds
/// one connection needs a second for each post (kickoff, tool results, messages) — all N at once when every
/// session posts together — and the pool keeps them afterwards (idle, 90 s). Both ends count when the emulator
/// shares the process, which is why it runs in a child with its own limit.
pub fn auto_ramp(sessions: usize, fd_limit: u64) -> Result<Option<usize>, String> {
    let sessions_u64 = sessions as u64;
    if 2 * sessions_u64 + SPARE_FDS <= fd_limit {
        return Ok(None);
    }
    if sessions_u64 + 2 * SPARE_FDS > fd_limit {
        return Err(format!(
            "{sessions} sessions need at least {sessions} sockets (one event stream each) besides {SPARE_FDS} spare, over \
             the open-file limit {fd_limit}: raise the hard limit (ulimit -Hn) or run fewer sessions"
        ));
    }
    Ok(Some(((fd_limit - sessions_u64 - SPARE_FDS) / 2) as usize))
}

/// Runs `sessions` live sessions against `provider`'s emulator and prints the row; `Err` unless every session
/// parked and answered its follow-up as scripted.
pub async fn run(
    provider: ProviderKind,
    sessions: usize,
    ramp: Option<usize>,
    http: HttpOptions,
    tls: bool,
) -> Result<(), String> {
    let fd_limit = crate::measure::raise_fd_limit().map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    let (ramp, why) = match ramp {
        Some(ramp) => (Some(ramp), "as asked"),
        None => (auto_ramp(sessions, fd_limit)?, "chosen so sockets stay under the open-file limit"),
    };
    let mut emulator = EmulatorChild::start(provider, None, tls).await?;
    let target = target(provider, &emulator, http).await.map_err(|e| format!("cannot build the provider: {e}"))?;
    let latencies = Arc::new(Latencies::with_capacity(sessions * TOOL_TURNS));

    let before = (crate::ALLOC.live_bytes(), Resident::now(), open_fds());
    let fd_watch = FdWatch::start();
    let started = Instant::now();
    let parked = park(&target, sessions, ramp, &latencies, |options| options).await;
    let park_time = started.elapsed();
    let mut failures = parked.failures;
    // The results that parked the sessions are dropped first: what is measured is what a parked session holds.
    let handles: Vec<_> = parked.sessions.into_iter().map(|(handle, _)| handle).collect();
    let at_park = (crate::ALLOC.live_bytes(), Resident::now(), open_fds());
    // The connections the emulator accepted up to here (the driver's own count is in its open files).
    let connections = emulator.ask("CONNECTIONS", "CONNECTIONS=").await.unwrap_or_else(|_| "–".to_string());

    let follow_up_started = Instant::now();
    let (answered, follow_up_failures) = follow_up(handles, ramp).await;
    let follow_up_time = follow_up_started.elapsed();
    failures.extend(follow_up_failures);
    let end = Resident::now();
    let (fds_end, fds_peak) = (open_fds(), fd_watch.peak());
    drop(fd_watch);
    let completed = answered.len();
    close_all(answered).await;
    let child_peak = emulator.resident().peak;
    drop(emulator);

    let per_session = |now: usize, then: usize| (now as f64 - then as f64) / sessions as f64;
    let heap_per_session = per_session(at_park.0, before.0);
    let rss_per_session = per_session(at_park.1.rss as usize, before.1.rss as usize);
    let (dispatch, round_trip) = (latencies.dispatch(), latencies.round_trip());
    let pair = |samples: &Samples| {
        if samples.is_empty() {
            return "–".to_string();
        }
        format!("{} / {}", report::duration(samples.percentile(50.0)), report::duration(samples.percentile(99.0)))
    };
    let mut table = Table::new([
        "provider",
        "sessions",
        "completed",
        "start → all parked",
        "follow-up → all done",
        "peak RSS",
        "RSS / parked",
        "heap / parked",
        "fds parked / peak",
        "connections",
        "dispatch p50 / p99",
        "round trip p50 / p99 (incl. emulator + wire)",
    ]);
    table.row([
        provider.name().to_string(),
        sessions.to_string(),
        completed.to_string(),
        report::duration(park_time),
        report::duration(follow_up_time),
        report::mib(end.peak),
        report::kib(rss_per_session),
        report::kib(heap_per_session),
        format!("{} / {fds_peak}", at_park.2),
        connections.clone(),
        pair(&dispatch),
        pair(&round_trip),
    ]);
    let ramp_text = ramp.map_or_else(
        || "all at once".to_string(),
        |k| format!("at most {k} sessions in flight at once (start to parking, message to answer), {why}"),
    );
    let ports = ephemeral_ports().map_or_else(|| "unknown".to_string(), |(low, high)| format!("{low}–{high}"));
    println!(
        "HTTP {:?}{}; sessions started {ramp_text}; open-file limit {fd_limit}; ephemeral ports {ports}; fds after \
         the follow-up {fds_end}; emulator child (not counted above): peak RSS {}",
        http.version,
        if tls { " over TLS" } else { "" },
        report::mib(child_peak)
    );
    let percentiles = |samples: &Samples| {
        json!({"p50": report::micros(samples.percentile(50.0)), "p99": report::micros(samples.percentile(99.0)),
               "n": samples.len()})
    };
    report::print(
        &table,
        "run",
        json!({
            "provider": provider.name(), "sessions": sessions, "ramp": ramp, "completed": completed,
            "http": format!("{:?}", http.version), "tls": tls, "connections": connections,
            "failures": failures.len(), "park_ms": park_time.as_millis() as u64,
            "follow_up_ms": follow_up_time.as_millis() as u64, "peak_rss": end.peak, "rss_before": before.1.rss,
            "rss_parked": at_park.1.rss, "rss_per_parked": rss_per_session, "heap_before": before.0,
            "heap_parked": at_park.0, "heap_per_parked": heap_per_session, "fds_before": before.2,
            "fds_parked": at_park.2, "fds_peak": fds_peak, "fds_end": fds_end, "fd_limit": fd_limit, "child_peak_rss": child_peak,
            "dispatch_us": percentiles(&dispatch), "round_trip_us": percentiles(&round_trip),
        }),
    );
    for failure in failures.iter().take(10) {
        eprintln!("failed: {failure}");
    }
    if completed == sessions {
        Ok(())
    } else {
        Err(format!("{completed} of {sessions} sessions completed ({} failures)", failures.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_is_chosen_only_when_two_sockets_per_session_do_not_fit() {
        assert_eq!(auto_ramp(1_000, 20_000), Ok(None));
        assert_eq!(auto_ramp(9_872, 20_000), Ok(None));
        assert_eq!(auto_ramp(10_000, 20_000), Ok(Some(4_872)));
        assert!(auto_ramp(19_800, 20_000).unwrap_err().contains("open-file limit"));
    }
}
