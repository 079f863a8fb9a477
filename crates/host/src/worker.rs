//! [`Worker`]: drains the durable inbox of a host's store — in as many processes, on as many machines, as share
//! the store — claiming ready conversations, running one request each, and giving them back.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use managed_agents_core::conversation::Lease;
use managed_agents_core::{Backoff, Error};
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::host::{Host, inbox_of};
use crate::queue::Processed;

/// How many conversations a worker drives at once by default.
pub const DEFAULT_CONCURRENCY: usize = 8;
/// The most conversations a worker can be set to drive at once.
pub const MAX_CONCURRENCY: usize = 4096;
/// How long an idle worker waits at most before it looks at the store again, by default (work enqueued in its
/// own process wakes it at once).
pub const DEFAULT_IDLE_POLL: Duration = Duration::from_millis(500);
/// How long a stopping worker lets its requests finish by default before it hands them back.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(30);
/// How many times a message is taken up by default before it fails without another try.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// The pauses of an idle worker between two looks at the store: from 10 ms, doubling up to its
/// [`WorkerSettings::idle_poll`], each shortened by up to a fifth (so idle workers do not ask in step).
const IDLE_BACKOFF: Backoff = Backoff::new(Duration::from_millis(10), Duration::from_secs(3600)).with_jitter(0.2);

/// What a [`Worker`] does, and how much of it at once. Every setting is checked by [`Worker::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerSettings {
    /// How many conversations it drives at once ([`DEFAULT_CONCURRENCY`]; from 1 to [`MAX_CONCURRENCY`]).
    pub concurrency: usize,
    /// The longest pause between two looks at the store while there is no work ([`DEFAULT_IDLE_POLL`]; from
    /// 1 ms to an hour). Work enqueued, or an approval answered, through a host of this process wakes it at once.
    pub idle_poll: Duration,
    /// How long a stopping worker lets the requests in flight finish ([`DEFAULT_SHUTDOWN_DEADLINE`]). The rest
    /// are dropped and their leases given back: another worker recovers them.
    pub shutdown_deadline: Duration,
    /// How many times a message may be taken up before it fails without another try ([`DEFAULT_MAX_ATTEMPTS`];
    /// at least 1): a message whose worker keeps dying on it does not take the fleet down with it.
    pub max_attempts: u32,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            idle_poll: DEFAULT_IDLE_POLL,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}

impl WorkerSettings {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With this many conversations at once.
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// With this longest idle pause.
    pub fn idle_poll(mut self, idle_poll: Duration) -> Self {
        self.idle_poll = idle_poll;
        self
    }

    /// With this shutdown deadline.
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// With this many attempts per message.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    fn check(&self) -> Result<(), Error> {
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return Err(Error::invalid_option("concurrency", format!("must be from 1 to {MAX_CONCURRENCY}")));
        }
        if !(Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&self.idle_poll) {
            return Err(Error::invalid_option("idle_poll", "must be from 1 ms to an hour"));
        }
        if Instant::now().checked_add(self.shutdown_deadline).is_none() {
            return Err(Error::invalid_option("shutdown_deadline", "must be representable"));
        }
        if self.max_attempts == 0 {
            return Err(Error::invalid_option("max_attempts", "must be at least 1"));
        }
        Ok(())
    }
}

/// What a worker did so far (its counters only grow). Also reported as `tracing` fields on each claim's span
/// (`claim`: `external_id`, `holder`, `message_id`, `attempt`) and event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Conversations claimed.
    pub claims: u64,
    /// Claims that picked up after a worker that died or lost its lease (a message taken or posted but not
    /// answered, or a record left running).
    pub recoveries: u64,
    /// Requests that ended well.
    pub answered: u64,
    /// Requests (or messages given up) that failed.
    pub failed: u64,
    /// Requests that stopped for approvals.
    pub waiting: u64,
    /// Requests whose lease was lost to another worker.
    pub leases_lost: u64,
    /// Requests dropped by a shutdown past its deadline (their conversations are recovered by another worker).
    pub handed_back: u64,
}

#[derive(Debug, Default)]
struct Counters {
    claims: AtomicU64,
    recoveries: AtomicU64,
    answered: AtomicU64,
    failed: AtomicU64,
    waiting: AtomicU64,
    leases_lost: AtomicU64,
    handed_back: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WorkerStats {
            claims: read(&self.claims),
            recoveries: read(&self.recoveries),
            answered: read(&self.answered),
            failed: read(&self.failed),
            waiting: read(&self.waiting),
            leases_lost: read(&self.leases_lost),
            handed_back: read(&self.handed_back),
        }
    }

    fn count(&self, outcome: &Result<Processed, Error>) {
        let counter = match outcome {
            Ok(Processed::Answered) => &self.answered,
            Ok(Processed::Waiting) => &self.waiting,
            Ok(Processed::LeaseLost) => &self.leases_lost,
            Ok(Processed::Nothing) => return,
            Ok(Processed::Failed) | Err(_) => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Drains the durable inbox of a host's store: claims conversations with work waiting — a pending message, a
/// conversation whose approvals were all answered, a record left `running` by a worker that died — up to its
/// concurrency, runs one request for each (the oldest message first, so no conversation starves behind a busy
/// one), and gives each back. Any number of workers, in any number of processes sharing the store, divide the
/// work between them; see the [crate documentation](crate#many-workers) for what happens after a crash.
///
/// ```
/// use std::sync::Arc;
/// use managed_agents_conformance::{Script, ScriptTurn, reference::RequestResponseReference};
/// use managed_agents_core::NoTools;
/// use managed_agents_core::conversation::MemorySessionStore;
/// use managed_agents_core::inbox::MessageState;
/// use managed_agents_host::{Host, Worker, WorkerSettings};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), managed_agents_core::Error> {
/// let provider = Arc::new(RequestResponseReference::new(Script::new().turn(ScriptTurn::text("Hello!"))));
/// let host = Host::builder(provider, MemorySessionStore::new(), NoTools).build()?;
/// // A web handler enqueues and answers at once …
/// let message = host.enqueue("thread-1", "Hi").await?;
/// // … a worker (here, in the same process) delivers it.
/// let worker = Worker::new(host.clone(), WorkerSettings::new())?;
/// assert_eq!(worker.run_once().await?, 1);
/// let done = host.wait(message.id).await?;
/// assert_eq!(done.state, MessageState::Answered);
/// assert_eq!(done.result.expect("its result").text, "Hello!");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Worker {
    host: Host,
    settings: WorkerSettings,
    counters: Arc<Counters>,
}

impl Worker {
    /// A worker draining `host`'s store under `settings` (checked here). The host's store must have an inbox.
    pub fn new(host: Host, settings: WorkerSettings) -> Result<Self, Error> {
        settings.check()?;
        inbox_of(&**host.store())?;
        Ok(Self { host, settings, counters: Arc::default() })
    }

    /// What it did so far.
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// Runs until `shutdown` completes: then takes no more work, lets the requests in flight finish within the
    /// [`WorkerSettings::shutdown_deadline`], drops the rest (their leases given back: another worker recovers
    /// them) and returns what it did. A store that cannot be reached is retried (logged), not an error.
    pub async fn run_until(&self, shutdown: impl Future<Output = ()>) -> WorkerStats {
        tokio::pin!(shutdown);
        let mut tasks = JoinSet::new();
        let mut work = self.host.signals().work();
        let mut idle = 0u32;
        loop {
            // Asked to stop: no more claims, whatever else arrived meanwhile.
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = std::future::ready(()) => {}
            }
            while let Some(done) = tasks.try_join_next() {
                self.counters.count(&done.unwrap_or_else(|failed| Err(Error::transport("worker task", failed))));
            }
            let free = self.settings.concurrency.saturating_sub(tasks.len());
            let mut claimed = 0;
            if free > 0 {
                work.mark_unchanged();
                let (leases, asked) = self.claim(free).await;
                // A stop asked for while the claim ran: what it took goes back untouched.
                let stopping = tokio::select! {
                    biased;
                    () = &mut shutdown => true,
                    () = std::future::ready(()) => false,
                };
                if stopping {
                    self.give_back(leases).await;
                    break;
                }
                claimed = self.start(&mut tasks, leases, asked).await;
            }
            if claimed > 0 && claimed == free {
                // Busy: look again at once (the top of the loop checks for a stop first).
                idle = 0;
                continue;
            }
            idle = if claimed > 0 { 0 } else { idle.saturating_add(1) };
            let pause = IDLE_BACKOFF.delay(idle.max(1), fastrand::f64()).min(self.settings.idle_poll);
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                _ = work.changed() => {}
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    self.counters.count(&done.unwrap_or_else(|failed| Err(Error::transport("worker task", failed))));
                }
                () = tokio::time::sleep(pause) => {}
            }
        }
        self.drain(tasks).await;
        self.stats()
    }

    /// Claims and runs, once, up to its concurrency of the conversations with work waiting; returns how many it
    /// ran. For a worker woken from outside (a webhook, a cron job) and for tests.
    pub async fn run_once(&self) -> Result<usize, Error> {
        let mut tasks = JoinSet::new();
        let asked = Instant::now();
        let host = &self.host;
        let leases =
            inbox_of(&**host.store())?.claim(host.holder(), host.lease_ttl(), self.settings.concurrency).await?;
        let claimed = self.start(&mut tasks, leases, asked).await;
        while let Some(done) = tasks.join_next().await {
            self.counters.count(&done.unwrap_or_else(|failed| Err(Error::transport("worker task", failed))));
        }
        Ok(claimed)
    }

    /// Claims up to `limit` conversations (none when the store cannot be reached: logged), and when it asked.
    async fn claim(&self, limit: usize) -> (Vec<Lease>, Instant) {
        let host = &self.host;
        let asked = Instant::now();
        let claimed = match inbox_of(&**host.store()) {
            Ok(inbox) => inbox.claim(host.holder(), host.lease_ttl(), limit).await,
            Err(error) => Err(error),
        };
        match claimed {
            Ok(leases) => (leases, asked),
            Err(error) => {
                tracing::warn!(holder = host.holder(), %error, "could not claim work");
                (Vec::new(), asked)
            }
        }
    }

    /// Gives claimed leases back without running anything.
    async fn give_back(&self, leases: Vec<Lease>) {
        for lease in leases {
            if let Err(error) = self.host.store().release(&lease).await {
                tracing::warn!(external_id = %lease.external_id, %error, "could not give a claim back");
            }
        }
    }

    /// Starts a task for each claimed lease (taken at `asked`); how many.
    async fn start(&self, tasks: &mut JoinSet<Result<Processed, Error>>, leases: Vec<Lease>, asked: Instant) -> usize {
        let host = &self.host;
        let mut started = 0;
        for lease in leases {
            let Some(held) = host.adopt(lease, asked).await else { continue };
            self.counters.claims.fetch_add(1, Ordering::Relaxed);
            let (host, counters, max_attempts) = (host.clone(), Arc::clone(&self.counters), self.settings.max_attempts);
            tasks.spawn(async move {
                let (outcome, recovery) = host.process(held, max_attempts).await;
                if recovery {
                    counters.recoveries.fetch_add(1, Ordering::Relaxed);
                }
                outcome
            });
            started += 1;
        }
        started
    }

    /// Lets `tasks` finish within the shutdown deadline; drops the rest.
    async fn drain(&self, mut tasks: JoinSet<Result<Processed, Error>>) {
        let deadline = tokio::time::sleep(self.settings.shutdown_deadline);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                done = tasks.join_next() => match done {
                    Some(done) => self.counters.count(
                        &done.unwrap_or_else(|failed| Err(Error::transport("worker task", failed))),
                    ),
                    None => return,
                },
                () = &mut deadline => break,
            }
        }
        let left = u64::try_from(tasks.len()).unwrap_or(u64::MAX);
        self.counters.handed_back.fetch_add(left, Ordering::Relaxed);
        tracing::warn!(holder = self.host.holder(), left, "shutdown deadline reached: handing requests back");
        // Dropping a request gives its lease back (or it expires): another worker recovers the conversation.
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}
