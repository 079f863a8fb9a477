//! A skill's versions (`/v1/skills/{id}/versions/…`): the record of one (an alias such as `latest` resolved)
//! and its files as one archive.

use managed_agents_core::Error;
use managed_agents_core::http::{Bytes, Method, Replay, read_body};
use serde_json::Value;

use crate::wire::client::{Beta, Body, ClaudeClient, encode};

fn version_path(skill_id: &str, version: &str) -> String {
    format!("/v1/skills/{}/versions/{}", encode(skill_id), encode(version))
}

impl ClaudeClient {
    /// `GET /v1/skills/{skill_id}/versions/{version}`: one version's record (`version` may be `latest`).
    pub async fn get_skill_version(&self, skill_id: &str, version: &str) -> Result<Value, Error> {
        self.get(&version_path(skill_id, version), &[]).await
    }

    /// `GET /v1/skills/{skill_id}/versions/{version}/content`: the version's files as one archive (zip or tar),
    /// at most `limit` bytes.
    pub async fn download_skill_version(&self, skill_id: &str, version: &str, limit: u64) -> Result<Bytes, Error> {
        let path = format!("{}/content", version_path(skill_id, version));
        let response = self.send(Method::GET, &path, Body::None, Beta::ManagedAgents, Replay::Always).await?;
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        read_body(response.into_body(), limit, self.config().http.request_timeout).await
    }
}
