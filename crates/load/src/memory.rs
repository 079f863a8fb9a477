//! The `memory` mode: heap per parked live Claude session, from the counting allocator, broken down.
//!
//! Each part is measured with a fresh provider (so no connection pool carries over) as what a batch of N adds,
//! divided by N:
//!
//! * **provider connection**: N `Provider::open` calls, each stream read up to `Connected`, no session loop;
//! * **parked session**: N live sessions parked after their tool turns, under the default event retention
//!   (`All`), under `EventRetention::None`, and with a small seen-ids window;
//! * **result kept by the caller**: the `SessionResult` each parking request handed over, when kept.
//!
//! At most [`AT_ONCE`] connections open (or sessions run up to parking) at a time, so the HTTP pool holds few idle
//! connections besides each session's stream; the sockets per session are printed to show it. The session loop's
//! own share (task, machine, channels, handle, handler) is the parked session less the connection.

use managed_agents_core::HttpOptions;
use std::sync::Arc;

use managed_agents_core::{EventRetention, OpenConnection, OpenRequest, Provider, SessionOptions, StreamItem};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::alloc::LARGE_CLASSES;
use crate::args::ProviderKind;
use crate::child::EmulatorChild;
use crate::fleet::{Parked, close_all, park};
use crate::measure::open_fds;
use crate::probe::Latencies;
use crate::report::{self, Table};
use crate::script::TOOL_TURNS;
use crate::target::target;

/// Connections opened (or sessions between start and parking) at once; the rest wait.
const AT_ONCE: usize = 64;
/// The longest wait for one step's sockets to close before the next step.
const SETTLE_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);
/// The small seen-ids window compared with the default.
const SMALL_WINDOW: usize = 64;
/// The target for a parked session, retained events excluded.
const TARGET_BYTES: f64 = 16.0 * 1024.0;

/// What the process holds now: heap bytes, the part in large blocks, allocations, open sockets and files.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    bytes: usize,
    large: usize,
    classes: [usize; LARGE_CLASSES.len()],
    allocations: usize,
    fds: usize,
}

impl Snapshot {
    fn now() -> Self {
        Self {
            bytes: crate::ALLOC.live_bytes(),
            large: crate::ALLOC.live_large_bytes(),
            classes: crate::ALLOC.live_large_blocks(),
            allocations: crate::ALLOC.live_allocations(),
            fds: open_fds(),
        }
    }

    /// What each of `count` items added since `before`.
    fn per_item_since(self, before: Snapshot, count: usize) -> Share {
        let per = |now: usize, then: usize| (now as f64 - then as f64) / count.max(1) as f64;
        Share {
            bytes: per(self.bytes, before.bytes),
            large: per(self.large, before.large),
            classes: std::array::from_fn(|i| per(self.classes[i], before.classes[i])),
            allocations: per(self.allocations, before.allocations),
            fds: per(self.fds, before.fds),
        }
    }
}

/// One part's cost per session.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    bytes: f64,
    large: f64,
    classes: [f64; LARGE_CLASSES.len()],
    allocations: f64,
    fds: f64,
}

impl Share {
    fn minus(self, other: Share) -> Share {
        Share {
            bytes: self.bytes - other.bytes,
            large: self.large - other.large,
            classes: std::array::from_fn(|i| self.classes[i] - other.classes[i]),
            allocations: self.allocations - other.allocations,
            fds: self.fds - other.fds,
        }
    }

    fn json(self) -> Value {
        json!({"bytes": self.bytes, "large_bytes": self.large, "large_blocks": self.classes,
               "allocations": self.allocations, "fds": self.fds})
    }

    /// The large blocks per session, by size class (classes with fewer than 0.05 per session left out).
    fn blocks(self) -> String {
        let classes: Vec<String> = LARGE_CLASSES
            .iter()
            .zip(self.classes)
            .filter(|(_, count)| count.abs() >= 0.05)
            .map(|(name, count)| format!("{count:.2} × {name}"))
            .collect();
        if classes.is_empty() { "–".into() } else { classes.join(", ") }
    }
}

/// Measures the breakdown over `sessions` sessions and prints it.
pub async fn memory(sessions: usize, http: HttpOptions, tls: bool) -> Result<(), String> {
    crate::measure::raise_fd_limit().map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    let emulator = EmulatorChild::start(ProviderKind::Claude, None, tls).await?;
    let latencies = Arc::new(Latencies::with_capacity(4 * sessions * TOOL_TURNS));
    let idle = open_fds();

    let connection = connections(&emulator, http, sessions).await?;
    settle(idle).await?;
    let (all, kept_result) = parked(&emulator, http, sessions, &latencies, |o| o, true).await?;
    settle(idle).await?;
    let none =
        parked(&emulator, http, sessions, &latencies, |o| o.event_retention(EventRetention::None), false).await?.0;
    settle(idle).await?;
    let small = parked(&emulator, http, sessions, &latencies, |o| o.seen_window(SMALL_WINDOW), false).await?.0;
    drop(emulator);

    let session_loop = none.minus(connection);
    let mut table = Table::new([
        "part (Claude, live, parked after 3 tool turns)",
        "heap / session",
        "in blocks ≥ 4 KiB (count × size)",
        "allocations / session",
        "sockets / session",
    ]);
    let mut row = |name: &str, share: Share| {
        table.row([
            name.to_string(),
            report::kib(share.bytes),
            format!("{} ({})", report::kib(share.large), share.blocks()),
            format!("{:.1}", share.allocations),
            format!("{:.2}", share.fds),
        ]);
    };
    row("parked session, default retention (All)", all);
    row("parked session, EventRetention::None", none);
    row(&format!("parked session, seen_window({SMALL_WINDOW})"), small);
    row("  provider connection (open + stream connected, no loop)", connection);
    row("  session loop: task, machine, channels, handle, handler (None − connection)", session_loop);
    row("  retained events while parked (All − None)", all.minus(none));
    row(&format!("  seen-ids window share (All − window {SMALL_WINDOW})"), all.minus(small));
    row("SessionResult of the parking request, if the caller keeps it", kept_result);
    let verdict = if none.bytes <= TARGET_BYTES { "within" } else { "over" };
    println!(
        "target: ≤ 16 KiB per parked session excluding retained events — {verdict} ({}); HTTP {:?}{}; at most \
         {AT_ONCE} connections opening / sessions parking at once",
        report::kib(none.bytes),
        http.version,
        if tls { " over TLS" } else { "" }
    );
    report::print(
        &table,
        "memory",
        json!({
            "provider": "claude", "http": format!("{:?}", http.version), "sessions": sessions, "at_once": AT_ONCE, "small_window": SMALL_WINDOW,
            "parked_all": all.json(), "parked_none": none.json(), "parked_small_window": small.json(),
            "connection": connection.json(), "session_loop": session_loop.json(), "kept_result": kept_result.json(),
            "target_bytes": TARGET_BYTES, "within_target": none.bytes <= TARGET_BYTES,
        }),
    );
    Ok(())
}

/// Waits until the sockets of the previous step are closed (their connection tasks ended, so their memory is
/// freed) before the next step takes its baseline: polls every 10 ms, gives up after 30 s.
async fn settle(idle_fds: usize) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + SETTLE_WITHIN;
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(10));
    loop {
        ticks.tick().await;
        let open = open_fds();
        if open <= idle_fds {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("{} sockets still open {SETTLE_WITHIN:?} after their step ended", open - idle_fds));
        }
    }
}

/// What an open provider connection whose stream is up costs, with no session loop.
async fn connections(emulator: &EmulatorChild, http: HttpOptions, count: usize) -> Result<Share, String> {
    let target = target(ProviderKind::Claude, emulator, http).await.map_err(|e| e.to_string())?;
    let mut request = OpenRequest::default();
    request.agent_id = Some(emulator.value("AGENT_ID").map_err(|e| e.to_string())?.to_string());
    request.environment_id = Some(emulator.value("ENVIRONMENT_ID").map_err(|e| e.to_string())?.to_string());
    let before = Snapshot::now();
    let mut open = Vec::with_capacity(count);
    let mut opening = JoinSet::new();
    for index in 0..count {
        if opening.len() == AT_ONCE
            && let Some(joined) = opening.join_next().await
        {
            open.push(joined.map_err(|e| e.to_string())??);
        }
        let (provider, request) = (Arc::clone(&target.provider), request.clone());
        opening
            .spawn(async move { connect(&*provider, request).await.map_err(|e| format!("connection {index}: {e}")) });
    }
    while let Some(joined) = opening.join_next().await {
        open.push(joined.map_err(|e| e.to_string())??);
    }
    let per_connection = Snapshot::now().per_item_since(before, count);
    drop(open);
    Ok(per_connection)
}

/// Opens a connection and, when it streams, reads up to `Connected`.
async fn connect(provider: &dyn Provider, request: OpenRequest) -> Result<OpenConnection, String> {
    let mut connection = provider.open(request).await.map_err(|e| e.to_string())?;
    if let OpenConnection::Streaming(stream) = &mut connection {
        loop {
            match stream.next_item().await {
                StreamItem::Connected => break,
                StreamItem::Event(_) => continue,
                StreamItem::Failed(error) => return Err(error.to_string()),
                other => return Err(format!("the stream ended before it connected: {other:?}")),
            }
        }
    }
    Ok(connection)
}

/// What a parked session with `options` costs, and (when `keep_results`) the `SessionResult` of its parking
/// request kept by the caller.
async fn parked(
    emulator: &EmulatorChild,
    http: HttpOptions,
    count: usize,
    latencies: &Arc<Latencies>,
    options: impl Fn(SessionOptions) -> SessionOptions,
    keep_results: bool,
) -> Result<(Share, Share), String> {
    let target = target(ProviderKind::Claude, emulator, http).await.map_err(|e| e.to_string())?;
    let before = Snapshot::now();
    let Parked { sessions, failures } = park(&target, count, Some(AT_ONCE), latencies, options).await;
    if let Some(failure) = failures.first() {
        return Err(format!("{} sessions did not park; first: {failure}", failures.len()));
    }
    let with_results = Snapshot::now();
    let (handles, results): (Vec<_>, Vec<_>) = sessions.into_iter().unzip();
    drop(results);
    let without_results = Snapshot::now();
    let per_session = without_results.per_item_since(before, count);
    let per_result = if keep_results { with_results.per_item_since(without_results, count) } else { Share::default() };
    close_all(handles).await;
    Ok((per_session, per_result))
}
