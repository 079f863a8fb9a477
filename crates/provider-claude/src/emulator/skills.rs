//! Skills: versions a test puts in ([`ClaudeEmulator::insert_skill`](super::ClaudeEmulator::insert_skill)), each
//! with its archive, served as the API serves them — a version's record (`latest` resolving to the newest) and its
//! content.

use managed_agents_core::http::server::{ResponseBody, json_response};
use managed_agents_core::http::{Bytes, Response, StatusCode};
use serde_json::json;

use crate::emulator::replies::not_found;
use crate::emulator::state::State;

/// One version of a skill.
pub(super) struct SkillVersion {
    pub(super) skill_id: String,
    pub(super) version: String,
    pub(super) name: String,
    pub(super) archive: Bytes,
}

/// The version `version` (or the newest, for `latest`) of `skill_id`.
fn find<'a>(state: &'a State, skill_id: &str, version: &str) -> Option<&'a SkillVersion> {
    let versions = state.skills.iter().filter(|v| v.skill_id == skill_id);
    if version == "latest" { versions.last() } else { versions.filter(|v| v.version == version).last() }
}

/// `GET /v1/skills/{id}/versions/{version}`.
pub(super) fn get_version(state: &State, skill_id: &str, version: &str) -> Response<ResponseBody> {
    match find(state, skill_id, version) {
        Some(found) => json_response(
            StatusCode::OK,
            &json!({"type": "skill_version", "id": found.version, "skill_id": found.skill_id,
                "version": found.version, "name": found.name, "created_at": "2026-12-01T00:00:00Z"}),
        ),
        None => not_found("skill version"),
    }
}

/// `GET /v1/skills/{id}/versions/{version}/content`.
pub(super) fn content(state: &State, skill_id: &str, version: &str) -> Response<ResponseBody> {
    match find(state, skill_id, version) {
        Some(found) => Response::new(ResponseBody::full(found.archive.clone())),
        None => not_found("skill version"),
    }
}
