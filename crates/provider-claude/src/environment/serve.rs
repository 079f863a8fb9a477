//! Serving one claimed item: its lease kept in the background, its session served through the session loop
//! with the worker's tools, until the session has stayed idle, terminated, or the lease ended; then the item is
//! stopped — unless it is no longer this worker's to stop, or serving failed (the queue then offers it again).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use managed_agents_core::ledger::MemoryLedger;
use managed_agents_core::tools::Toolbox;
use managed_agents_core::{Error, Notification, Session, SessionHandle, SessionOptions};
use managed_agents_toolset::Toolset;
use tokio::sync::watch;

use crate::ClaudeManagedAgents;
use crate::environment::activity::{Activity, Watched, note};
use crate::environment::item::WorkItem;
use crate::environment::lease::{Lease, LeaseEnd};
use crate::environment::{DEFAULT_TOOL_TIMEOUT, Inner, WorkEnd, WorkReport, skills};
use crate::wire::client::ClaudeClient;
use crate::wire::events::Client;

/// Serves `item` to its end; `abandon` resolving gives it up (shutdown past the deadline).
pub(crate) async fn serve(inner: &Inner, item: WorkItem, abandon: impl Future<Output = ()>) -> WorkReport {
    // The item's own token, when the poll gave one, carries its calls; else the environment's key.
    let client = match &item.sessions_token {
        Some(token) => inner.client.with_environment_key(token.clone()),
        None => inner.client.clone(),
    };
    let mut lease = Lease::keep(client.clone(), item.environment_id.clone(), item.id.clone());
    let calls = Arc::new(AtomicUsize::new(0));
    let end = tokio::select! {
        end = run(inner, &client, &item, &mut lease, calls.clone()) => end,
        () = abandon => WorkEnd::Abandoned,
    };
    // The lease may have ended while the session was being let go.
    let end = match lease.end() {
        Some(lost) if lost.lost() => WorkEnd::LeaseLost,
        _ => end,
    };
    lease.release();
    if !end.leaves_the_item() {
        stop_quietly(&client, &item).await;
    }
    let report =
        WorkReport { work_id: item.id, session_id: item.session_id, end, tool_calls: calls.load(Ordering::Relaxed) };
    tracing::info!(work_id = report.work_id, session_id = report.session_id, end = ?report.end,
        tool_calls = report.tool_calls, "finished with the work item");
    inner.stats.count(&report);
    report
}

/// Stops `item` now (`force`); one that stopped already (`409`) is fine, other failures are logged.
pub(crate) async fn stop_quietly(client: &ClaudeClient, item: &WorkItem) {
    match client.stop_work(&item.environment_id, &item.id, true).await {
        Ok(_) | Err(Error::Http { status: 409, .. }) => {}
        Err(error) => tracing::error!(work_id = item.id, %error, "could not stop the work item"),
    }
}

/// Serves the item's session until something ends it; a lease that ends while the session is being prepared
/// (its skills downloaded, say) ends it too.
async fn run(
    inner: &Inner,
    client: &ClaudeClient,
    item: &WorkItem,
    lease: &mut Lease,
    calls: Arc<AtomicUsize>,
) -> WorkEnd {
    if item.kind != "session" || item.session_id.is_empty() {
        tracing::debug!(work_id = item.id, kind = item.kind, "not a session's work item; stopping it");
        return WorkEnd::Skipped;
    }
    let attached = tokio::select! {
        attached = attach(inner, client, item, calls) => attached,
        end = lease.ended() => return WorkEnd::from(end),
    };
    match attached {
        Ok(Some(served)) => served.until_done(inner, lease).await,
        Ok(None) => WorkEnd::Skipped,
        Err(error) => {
            tracing::error!(work_id = item.id, %error, "could not serve the work item's session");
            WorkEnd::Failed(error.to_string())
        }
    }
}

impl From<LeaseEnd> for WorkEnd {
    fn from(end: LeaseEnd) -> Self {
        match end {
            LeaseEnd::StopRequested => Self::StopRequested,
            LeaseEnd::Lost | LeaseEnd::AssumedLost => Self::LeaseLost,
            LeaseEnd::Rejected => Self::HeartbeatRejected,
        }
    }
}

/// A session being served.
struct Served {
    client: ClaudeClient,
    session_id: String,
    handle: SessionHandle,
    activity: watch::Receiver<Activity>,
    activity_sender: watch::Sender<Activity>,
    toolset: Option<Toolset>,
    skills: Vec<PathBuf>,
}

/// Reads the session, prepares the tools and attaches the session loop; `None` for a session that had
/// terminated already (it takes no tool result).
async fn attach(
    inner: &Inner,
    client: &ClaudeClient,
    item: &WorkItem,
    calls: Arc<AtomicUsize>,
) -> Result<Option<Served>, Error> {
    let session = client.get_session(&item.session_id).await?;
    if session["status"] == "terminated" {
        tracing::info!(work_id = item.id, session_id = item.session_id, "the session had terminated");
        return Ok(None);
    }
    let skills = match inner.download_skills {
        true => skills::download(client, &session, &inner.workdir).await,
        false => Vec::new(),
    };
    let history = client.list_all_events(&item.session_id).await?;
    let toolset = match inner.builtin_tools {
        true => {
            let builder = Toolset::builder(&inner.workdir);
            let builder = match &inner.toolset {
                Some(configure) => configure(builder),
                None => builder,
            };
            Some(builder.build().map_err(|e| Error::invalid_option("toolset", e.to_string()))?)
        }
        false => None,
    };
    let mut tools = Toolbox::builder().dyn_tools(inner.custom_tools.iter().cloned());
    if let Some(toolset) = &toolset {
        tools = tools.dyn_tools(toolset.tools());
    }
    let tools = tools.build()?;
    let names = tools.names().to_vec();
    let (sender, activity) = watch::channel(Activity::of_history(&history));
    let handler = Watched { tools, activity: sender.clone(), calls };
    // The provider on the worker's side of the session: it answers the built-in calls it has the tools for (as
    // `ToolKind::Builtin` calls, posted as `user.tool_result`) and its own custom tools; the rest is the
    // application's.
    let provider = Arc::new(ClaudeManagedAgents::serving(client.clone(), Client::Worker { tools: names.into() }));
    // The worker drives no turns of its own: the application's limit on turns is the one that counts. A call
    // whose result could not be posted is answered again from this ledger, not run again.
    let options = SessionOptions::new()
        .session_id(&item.session_id)
        .tool_timeout(DEFAULT_TOOL_TIMEOUT)
        .max_turns(u32::MAX)
        .tool_ledger(MemoryLedger::new());
    let options = match &inner.session_options {
        Some(configure) => configure(options),
        None => options,
    };
    let handle = Session::start(provider, handler, options).await?;
    Ok(Some(Served {
        client: client.clone(),
        session_id: item.session_id.clone(),
        handle,
        activity,
        activity_sender: sender,
        toolset,
        skills,
    }))
}

impl Served {
    /// Waits for the end: the lease's, the session's termination, an idle longer than `max_idle`, or a request
    /// of the session that failed (the session would wait on an answer this loop no longer gives).
    async fn until_done(mut self, inner: &Inner, lease: &mut Lease) -> WorkEnd {
        let end = loop {
            let idle_until = match *self.activity.borrow_and_update() {
                Activity::Terminated => break WorkEnd::Terminated,
                Activity::IdleSince(since) => inner.max_idle.and_then(|idle| since.checked_add(idle)),
                Activity::Busy => None,
            };
            tokio::select! {
                end = lease.ended() => break WorkEnd::from(end),
                changed = self.activity.changed() => if changed.is_err() {
                    break WorkEnd::Failed("the session loop stopped".to_string());
                },
                () = sleep_until(idle_until), if idle_until.is_some() => break WorkEnd::Idle,
                notification = self.handle.next_notification() => match notification {
                    Some(Notification::Failed(error)) => {
                        tracing::warn!(session_id = self.session_id, %error, "a request of the session failed");
                        break WorkEnd::Failed(error.to_string());
                    }
                    Some(Notification::ApprovalRequested(request)) => {
                        tracing::warn!(tool_use_id = request.tool_use.id, "a tool call waits for a person's approval");
                    }
                    Some(Notification::Reconnecting { .. }) => self.reread_activity().await,
                    Some(_) => {}
                    None => break WorkEnd::Failed("the session loop stopped".to_string()),
                },
            }
        };
        self.handle.close().await;
        if let Some(toolset) = self.toolset {
            toolset.close().await;
        }
        skills::remove(&self.skills);
        end
    }

    /// The events missed while the stream was down never reach the handler: read the session's state from its
    /// history instead.
    async fn reread_activity(&self) {
        match self.client.list_all_events(&self.session_id).await {
            Ok(history) => note(&self.activity_sender, Activity::of_history(&history)),
            Err(error) => tracing::warn!(session_id = self.session_id, %error, "could not read the session's history"),
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
