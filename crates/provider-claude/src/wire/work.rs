//! A self-hosted environment's work queue (`/v1/environments/{id}/work/…`): the calls an environment worker
//! makes to claim a session's work item, keep its lease, and let it go. Authenticate the client with the
//! environment's key ([`ClaudeClient::with_environment_key`]); every call returns the server's JSON verbatim.

use managed_agents_core::Error;
use managed_agents_core::http::{HeaderValue, Method, Replay};
use serde_json::{Value, json};

use crate::wire::client::{Beta, Body, ClaudeClient, encode, query_string};

/// The `expected_last_heartbeat` of a lease's first heartbeat (the item has none yet).
#[cfg_attr(not(feature = "worker"), allow(dead_code))]
pub const NO_HEARTBEAT: &str = "NO_HEARTBEAT";

/// The longest wait a poll may ask the server to hold an empty queue open, in milliseconds (the API takes 1–999).
pub const MAX_POLL_BLOCK_MS: u32 = 999;

/// `/v1/environments/{id}/work`, the id percent-encoded.
fn work_path(environment_id: &str) -> String {
    format!("/v1/environments/{}/work", encode(environment_id))
}

/// `/v1/environments/{id}/work/{work_id}`.
fn item_path(environment_id: &str, work_id: &str) -> String {
    format!("{}/{}", work_path(environment_id), encode(work_id))
}

impl ClaudeClient {
    /// `GET /v1/environments/{id}/work/poll`: claims the oldest queued work item, waiting up to `block_ms` (at
    /// most 999 ms; `None` returns at once) for one to arrive. `None` when the queue stayed empty.
    /// Items polled but not acknowledged for `reclaim_older_than_ms` (the server's default is 5 s) are offered
    /// again. `worker_id` names this worker in the queue's statistics. A claim is never repeated once it may have
    /// been processed (a second claim would hide the first item until it is reclaimed).
    pub async fn poll_work(
        &self,
        environment_id: &str,
        block_ms: Option<u32>,
        reclaim_older_than_ms: Option<u64>,
        worker_id: &str,
    ) -> Result<Option<Value>, Error> {
        let mut query = Vec::new();
        if let Some(block_ms) = block_ms {
            query.push(("block_ms", block_ms.clamp(1, MAX_POLL_BLOCK_MS).to_string()));
        }
        if let Some(older) = reclaim_older_than_ms {
            query.push(("reclaim_older_than_ms", older.to_string()));
        }
        let path = format!("{}/poll{}", work_path(environment_id), query_string(&query));
        let worker = HeaderValue::try_from(worker_id)
            .map_err(|_| Error::invalid_option("worker_id", "not a valid header value"))?;
        let item = self
            .json_with_header(Method::GET, &path, Body::None, ("anthropic-worker-id", worker), Replay::IfUnprocessed)
            .await?;
        Ok(Some(item).filter(|item| item.is_object()))
    }

    /// `POST /v1/environments/{id}/work/{work_id}/ack`: takes a polled item off the queue (`queued` → `starting`).
    pub async fn ack_work(&self, environment_id: &str, work_id: &str) -> Result<Value, Error> {
        let path = format!("{}/ack", item_path(environment_id, work_id));
        self.json(Method::POST, &path, Body::None, Beta::ManagedAgents, Replay::IfUnprocessed).await
    }

    /// `POST /v1/environments/{id}/work/{work_id}/heartbeat`: extends the item's lease. `expected_last_heartbeat`
    /// is `NO_HEARTBEAT` for the first beat, then the `last_heartbeat` the server returned last; a mismatch is a
    /// `412` (another worker holds the lease). Never repeated once it may have been processed: a repeat would
    /// read as a lost lease.
    pub async fn heartbeat_work(
        &self,
        environment_id: &str,
        work_id: &str,
        expected_last_heartbeat: &str,
        desired_ttl_seconds: Option<u64>,
    ) -> Result<Value, Error> {
        let mut query = vec![("expected_last_heartbeat", expected_last_heartbeat.to_string())];
        if let Some(ttl) = desired_ttl_seconds {
            query.push(("desired_ttl_seconds", ttl.to_string()));
        }
        let path = format!("{}/heartbeat{}", item_path(environment_id, work_id), query_string(&query));
        self.json(Method::POST, &path, Body::None, Beta::ManagedAgents, Replay::IfUnprocessed).await
    }

    /// `GET /v1/environments/{id}/work/{work_id}`.
    pub async fn get_work(&self, environment_id: &str, work_id: &str) -> Result<Value, Error> {
        self.get(&item_path(environment_id, work_id), &[]).await
    }

    /// `POST /v1/environments/{id}/work/{work_id}` with `{"metadata": metadata}` (a null or empty value deletes
    /// its key).
    pub async fn update_work(&self, environment_id: &str, work_id: &str, metadata: Value) -> Result<Value, Error> {
        self.post(&item_path(environment_id, work_id), json!({ "metadata": metadata })).await
    }

    /// `GET /v1/environments/{id}/work` with query parameters (`limit`, `page`): one page of work items.
    pub async fn list_work(&self, environment_id: &str, query: &[(&str, String)]) -> Result<Value, Error> {
        self.get(&work_path(environment_id), query).await
    }

    /// `GET /v1/environments/{id}/work/stats`: the queue's depth, items polled but not acknowledged, the oldest
    /// queued item's time and the workers polling.
    pub async fn work_stats(&self, environment_id: &str) -> Result<Value, Error> {
        self.get(&format!("{}/stats", work_path(environment_id)), &[]).await
    }

    /// `POST /v1/environments/{id}/work/{work_id}/stop` with `{"force": force}`: a graceful stop asks the item's
    /// worker to finish (`stopping`), a forced one ends it now (`stopped`). A `409` means it had stopped already.
    pub async fn stop_work(&self, environment_id: &str, work_id: &str, force: bool) -> Result<Value, Error> {
        let path = format!("{}/stop", item_path(environment_id, work_id));
        self.json(Method::POST, &path, Body::Json(json!({ "force": force })), Beta::ManagedAgents, Replay::Safe).await
    }
}
