//! Multi-agent sessions: the threads a loop host runs beside the primary conversation, in a provider-neutral form.
//!
//! A provider that runs sub-agents (Claude's multi-agent sessions) reads its thread events into
//! [`ThreadUpdate`]s ([`Provider::thread_update`](crate::Provider::thread_update)). The raw events stay as they
//! are; the updates are additive. The session loop hands each update to the handler as a synthetic event
//! ([`Event::thread_update`](crate::Event::thread_update), type [`THREAD_UPDATE_TYPE`]) and folds them into
//! [`SessionResult::threads`](crate::SessionResult::threads) and
//! [`SessionResult::thread_messages`](crate::SessionResult::thread_messages).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `type` of the synthetic thread-update event the session loop emits to handlers (never stored in
/// [`SessionResult::events`](crate::SessionResult::events)).
pub const THREAD_UPDATE_TYPE: &str = "managed_agents.thread_update";

/// Where a thread stands, as the loop host last reported it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThreadStatus {
    /// Created, no status reported yet.
    Created,
    /// Working.
    Running,
    /// Waiting (its [`Thread::stop_reason`] says why).
    Idle,
    /// Hit a transient error; the host retries.
    Rescheduled,
    /// Ended for good.
    Terminated,
    /// A status this library does not know, verbatim.
    Other(String),
}

impl ThreadStatus {
    /// The status a wire name stands for (`"running"`, `"idle"`, `"rescheduled"`, `"terminated"`); others are kept
    /// as [`ThreadStatus::Other`].
    pub fn from_wire(name: &str) -> Self {
        match name {
            "created" => Self::Created,
            "running" => Self::Running,
            "idle" => Self::Idle,
            "rescheduled" => Self::Rescheduled,
            "terminated" => Self::Terminated,
            other => Self::Other(other.to_string()),
        }
    }
}

/// One thing a thread did, read from one raw event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "update", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThreadUpdate {
    /// A thread was started for a sub-agent.
    Created {
        /// The thread's id.
        thread_id: String,
        /// The agent it runs, when the host names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_name: Option<String>,
    },
    /// A thread's status changed.
    Status {
        /// The thread's id.
        thread_id: String,
        /// Its new status.
        status: ThreadStatus,
        /// Why it went idle, verbatim (for [`ThreadStatus::Idle`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<Value>,
        /// The agent it runs, when the host names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_name: Option<String>,
    },
    /// One thread sent another a message (a delegation, or a sub-agent's report).
    Message(ThreadMessage),
}

impl ThreadUpdate {
    /// The thread this update is about (for a message, the thread that reports it).
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            Self::Created { thread_id, .. } | Self::Status { thread_id, .. } => Some(thread_id),
            Self::Message(message) => message.thread_id.as_deref(),
        }
    }
}

/// A message between two threads of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThreadMessage {
    /// The thread whose stream reported the message (`None`: the primary thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Whether `thread_id` sent the message or received it.
    pub direction: MessageDirection,
    /// The other end (`None`: the primary thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_thread_id: Option<String>,
    /// The agent that wrote it, when the host names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// The message's text (its text blocks, joined).
    pub text: String,
}

impl ThreadMessage {
    /// A message `thread_id` sent to (or received from) `peer_thread_id`.
    pub fn new(
        thread_id: Option<String>,
        direction: MessageDirection,
        peer_thread_id: Option<String>,
        text: impl Into<String>,
    ) -> Self {
        Self { thread_id, direction, peer_thread_id, agent_name: None, text: text.into() }
    }

    /// With the writing agent's name.
    pub fn agent_name(mut self, agent_name: impl Into<String>) -> Self {
        self.agent_name = Some(agent_name.into());
        self
    }
}

/// Which way a [`ThreadMessage`] went, seen from the thread that reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MessageDirection {
    /// The reporting thread sent it.
    Sent,
    /// The reporting thread received it.
    Received,
}

/// One thread of a multi-agent session, as far as this request saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Thread {
    /// The thread's id (what a tool result or an interrupt names).
    pub thread_id: String,
    /// The agent it runs, when the host named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// Its last reported status.
    pub status: ThreadStatus,
    /// Why it last went idle, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<Value>,
}

impl Thread {
    /// A newly seen thread.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self { thread_id: thread_id.into(), agent_name: None, status: ThreadStatus::Created, stop_reason: None }
    }
}

/// Folds `update` into `threads` (in first-seen order) and `messages`.
pub(crate) fn fold(threads: &mut Vec<Thread>, messages: &mut Vec<ThreadMessage>, update: &ThreadUpdate) {
    let thread = |threads: &mut Vec<Thread>, id: &str| -> usize {
        match threads.iter().position(|thread| thread.thread_id == id) {
            Some(index) => index,
            None => {
                threads.push(Thread::new(id));
                threads.len() - 1
            }
        }
    };
    match update {
        ThreadUpdate::Created { thread_id, agent_name } => {
            let index = thread(threads, thread_id);
            if agent_name.is_some() {
                threads[index].agent_name.clone_from(agent_name);
            }
        }
        ThreadUpdate::Status { thread_id, status, stop_reason, agent_name } => {
            let index = thread(threads, thread_id);
            let entry = &mut threads[index];
            entry.status = status.clone();
            if *status == ThreadStatus::Idle {
                entry.stop_reason.clone_from(stop_reason);
            }
            if agent_name.is_some() {
                entry.agent_name.clone_from(agent_name);
            }
        }
        ThreadUpdate::Message(message) => messages.push(message.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn updates_fold_into_threads_in_first_seen_order() {
        let (mut threads, mut messages) = (Vec::new(), Vec::new());
        let updates = [
            ThreadUpdate::Created { thread_id: "t1".into(), agent_name: Some("researcher".into()) },
            ThreadUpdate::Status {
                thread_id: "t2".into(),
                status: ThreadStatus::Running,
                stop_reason: None,
                agent_name: None,
            },
            ThreadUpdate::Status {
                thread_id: "t1".into(),
                status: ThreadStatus::Idle,
                stop_reason: Some(json!({"type": "end_turn"})),
                agent_name: None,
            },
            ThreadUpdate::Message(
                ThreadMessage::new(Some("t1".into()), MessageDirection::Sent, None, "found it")
                    .agent_name("researcher"),
            ),
        ];
        for update in &updates {
            fold(&mut threads, &mut messages, update);
        }
        assert_eq!(threads.iter().map(|t| t.thread_id.as_str()).collect::<Vec<_>>(), ["t1", "t2"]);
        assert_eq!(threads[0].agent_name.as_deref(), Some("researcher"));
        assert_eq!(threads[0].status, ThreadStatus::Idle);
        assert_eq!(threads[0].stop_reason, Some(json!({"type": "end_turn"})));
        assert_eq!(threads[1].status, ThreadStatus::Running);
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].text, "found it");
        let wire = serde_json::to_value(&updates[3]).unwrap();
        assert_eq!(wire["update"], "message");
        assert_eq!(serde_json::from_value::<ThreadUpdate>(wire).unwrap(), updates[3]);
        assert_eq!(ThreadStatus::from_wire("paused"), ThreadStatus::Other("paused".into()));
    }
}
