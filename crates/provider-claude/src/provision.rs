//! Agents and environments as content-addressed images: [`ClaudeProvisioner`].
//!
//! A definition ([`AgentSpec`], [`EnvironmentSpec`]) is provisioned under the name `<base>_<digest8>`, where the
//! digest covers everything but the name ([`AgentSpec::digest`]): the same definition always lands on the same
//! resource, a changed one on a new resource next to the old ones (an *image* per version). The base is the
//! spec's name (or one given explicitly); names follow [`NamePolicy::CLAUDE`], and a base too long to keep whole
//! is refused rather than shortened, because [`ClaudeProvisioner::prune`] recognises versions by their exact
//! `<base>_` prefix.
//!
//! * **ensure** ([`ClaudeProvisioner::ensure_agent`], [`ClaudeProvisioner::ensure_environment`]): the store
//!   remembers the resource → reused, no request; otherwise created; a `409` (the name exists: created by another
//!   process, or before this store existed) → every page of the list is searched for the name, and a live
//!   resource of that name is adopted; an archived one is an [`Error::NameConflict`] (archived resources cannot be
//!   revived, and their names stay taken).
//! * **tag / resolve**: `tag(kind, base, "prod", digest)` names a version; `resolve(kind, "base:prod")` returns
//!   it. Tags are written with [`update`] (compare-and-swap), so two processes tagging at once lose nothing.
//! * **prune**: keeps the newest `keep` live versions of a base plus every tagged one, archives the rest oldest
//!   first, and forgets them in the store; it goes on after a failure and reports each one.
//!
//! ## Store keys
//!
//! | key | value |
//! |---|---|
//! | `claude:agent:<base>:<digest8>` | `{"kind":"agent","id","name","base","digest"}` |
//! | `claude:environment:<base>:<digest8>` | the same, `"kind":"environment"` |
//! | `claude:agent-tags:<base>` | `{"<tag>": "<digest8>", …}` |
//! | `claude:environment-tags:<base>` | the same, for environments |
//!
//! One key per provider-side name (the name is `<base>_<digest8>`), so the key both caches the handle and indexes
//! the digest (upstream kept those apart). Pruning also removes the facade's entries (`provision:…`,
//! [`managed_agents_core::provision::provision`]) whose `agent_id` or `environment_id` is the archived resource.
//!
//! Runtimes of an [`EnvironmentSpec`] count in its digest and never reach the wire: the ensured environment
//! carries a [`Bootstrap`] (script and system-prompt instructions, recomputed on every call, never stored), and a
//! limited network lets the script's hosts through ([`crate::bootstrap`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use managed_agents_core::provision::{Digest, NamePolicy, ProvisionStore, update};
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error, Networking};
use serde_json::{Map, Value, json};

use crate::bootstrap::{Bootstrap, allow_mise_hosts};
use crate::wire::client::ClaudeClient;
use crate::wire::excerpt;

/// Which kind of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResourceKind {
    /// A Managed Agents agent (`agent_…`).
    Agent,
    /// A Managed Agents environment (`env_…`).
    Environment,
}

impl ResourceKind {
    /// `"agent"` or `"environment"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Environment => "environment",
        }
    }

    /// The store key remembering the version `<base>_<digest8>`.
    pub fn store_key(self, base: &str, digest8: &str) -> String {
        format!("claude:{}:{base}:{digest8}", self.as_str())
    }

    /// The store key of a base's tags.
    pub fn tags_key(self, base: &str) -> String {
        format!("claude:{}-tags:{base}", self.as_str())
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "agent" => Some(Self::Agent),
            "environment" => Some(Self::Environment),
            _ => None,
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an ensure call came by its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Origin {
    /// This call created it.
    Created,
    /// The name was taken (`409`) by a live resource, which this call adopted.
    Adopted,
    /// The store remembered it (no request was made); also what [`ClaudeProvisioner::resolve`] returns.
    #[default]
    Stored,
}

/// A provisioned agent or environment: one version of a base.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Provisioned {
    /// Agent or environment.
    pub kind: ResourceKind,
    /// The service's id (`agent_…`, `env_…`).
    pub id: String,
    /// The name it was provisioned under: `<base>_<digest>`.
    pub name: String,
    /// The base name.
    pub base: String,
    /// The first 8 hex characters of the definition's digest.
    pub digest: String,
    /// How this call came by it (not stored).
    pub origin: Origin,
    /// For an environment with runtimes, how to install them (recomputed by every
    /// [`ClaudeProvisioner::ensure_environment`], never stored; `None` from [`ClaudeProvisioner::resolve`]).
    pub bootstrap: Option<Bootstrap>,
}

impl Provisioned {
    /// What the store keeps (everything but the origin).
    pub fn to_value(&self) -> Value {
        json!({"kind": self.kind.as_str(), "id": self.id, "name": self.name, "base": self.base, "digest": self.digest})
    }

    /// Reads what [`Provisioned::to_value`] wrote; `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Self> {
        let field = |key: &str| value.get(key).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_string);
        Some(Self {
            kind: ResourceKind::parse(value.get("kind")?.as_str()?)?,
            id: field("id")?,
            name: field("name")?,
            base: value.get("base")?.as_str()?.to_string(),
            digest: field("digest").filter(|d| is_digest8(d))?,
            origin: Origin::Stored,
            bootstrap: None,
        })
    }
}

/// What [`ClaudeProvisioner::prune`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
#[must_use = "a prune can fail part-way: check `failed`"]
pub struct PruneReport {
    /// Names archived, oldest first.
    pub archived: Vec<String>,
    /// Names kept (the newest `keep`, then the tagged ones), newest first.
    pub kept: Vec<String>,
    /// Versions that could not be archived, with why (they stay live and remembered).
    pub failed: Vec<PruneFailure>,
}

impl PruneReport {
    /// Whether every version meant to be archived was.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }
}

/// A version [`ClaudeProvisioner::prune`] failed to archive.
#[derive(Debug)]
#[non_exhaustive]
pub struct PruneFailure {
    /// Its name.
    pub name: String,
    /// Its id.
    pub id: String,
    /// Why archiving failed.
    pub error: Error,
}

/// Content-addressed provisioning of agents and environments on Claude Managed Agents (see the [module
/// docs](self)). Cheap to clone; share one store between the processes that provision the same things.
#[derive(Clone)]
pub struct ClaudeProvisioner {
    client: ClaudeClient,
    store: Arc<dyn ProvisionStore>,
}

impl fmt::Debug for ClaudeProvisioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaudeProvisioner").field("client", &self.client).finish_non_exhaustive()
    }
}

/// The default base of an environment whose spec has no name.
pub const DEFAULT_ENVIRONMENT_BASE: &str = "env";

fn is_digest8(text: &str) -> bool {
    text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The model id the wire wants: a catalog id's `provider:` prefix is dropped.
pub(crate) fn bare_model(model: &str) -> &str {
    model.rsplit_once(':').map_or(model, |(_, bare)| bare)
}

/// The create-agent body for `spec` under `name`: bare model id, system prompt, custom tools, description and
/// metadata when given.
pub(crate) fn agent_body(spec: &AgentSpec, name: &str) -> Result<Value, Error> {
    let model = spec
        .model
        .as_deref()
        .map(bare_model)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| Error::invalid_spec("agent spec", "it names no model"))?;
    let tools: Vec<Value> = spec
        .tools
        .iter()
        .map(
            |t| json!({"type": "custom", "name": t.name, "description": t.description, "input_schema": t.input_schema}),
        )
        .collect();
    let mut body = json!({"name": name, "model": model, "system": spec.system_prompt, "tools": tools});
    if let Some(description) = &spec.description {
        body["description"] = json!(description);
    }
    if !spec.metadata.is_empty() {
        body["metadata"] = json!(spec.metadata);
    }
    Ok(body)
}

/// The environment `config` for `spec`: its `config` verbatim when given; otherwise a cloud environment with the
/// spec's networking and packages. Runtimes never reach the wire, but when there are some and the networking is
/// limited, the hosts their bootstrap needs are allowed ([`crate::bootstrap::MISE_HOSTS`]).
pub fn environment_config(spec: &EnvironmentSpec) -> Value {
    let mut config = wire_config(spec);
    if !spec.runtimes.is_empty() {
        allow_mise_hosts(&mut config);
    }
    config
}

fn wire_config(spec: &EnvironmentSpec) -> Value {
    if let Some(config) = &spec.config {
        return config.clone();
    }
    let networking = match &spec.networking {
        Networking::Unrestricted => json!({"type": "unrestricted"}),
        Networking::Limited { allowed_hosts } => json!({"type": "limited", "allowed_hosts": allowed_hosts}),
        // A networking mode this provider does not know yet must not open the network: no host is allowed.
        _ => json!({"type": "limited", "allowed_hosts": []}),
    };
    let mut config = json!({"type": "cloud", "networking": networking});
    if !spec.packages.is_empty() {
        let mut packages = Map::new();
        packages.insert("type".into(), json!("packages"));
        for (manager, names) in &spec.packages {
            packages.insert(manager.clone(), json!(names));
        }
        config["packages"] = Value::Object(packages);
    }
    config
}

fn string_field<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Value::as_str)
}

fn is_live(record: &Value) -> bool {
    record.get("archived_at").is_none_or(Value::is_null)
}

/// The digest of `name` when it is exactly `<base>_` + 8 lowercase hex characters.
fn version_digest<'a>(name: &'a str, base: &str) -> Option<&'a str> {
    name.strip_prefix(base)?.strip_prefix('_').filter(|digest| is_digest8(digest))
}

impl ClaudeProvisioner {
    /// A provisioner creating through `client` and remembering in `store`.
    pub fn new(client: ClaudeClient, store: Arc<dyn ProvisionStore>) -> Self {
        Self { client, store }
    }

    /// The client.
    pub fn client(&self) -> &ClaudeClient {
        &self.client
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ProvisionStore> {
        &self.store
    }

    /// The name `base` and `digest` compose to; refuses a base that is empty or too long to keep whole.
    pub fn name_for(kind: ResourceKind, base: &str, digest: &Digest) -> Result<String, Error> {
        if base.is_empty() {
            return Err(Error::invalid_spec("name", format!("the {kind} base name is empty")));
        }
        let name = NamePolicy::CLAUDE.compose(base, digest)?;
        if !NamePolicy::preserves_base(&name, base) {
            return Err(Error::invalid_spec(
                "name",
                format!(
                    "the {kind} base name is {} bytes; at most {} fit before the digest suffix",
                    base.len(),
                    NamePolicy::CLAUDE.max_bytes() - 9
                ),
            ));
        }
        Ok(name)
    }

    /// The environment for `spec`, named `<base>_<digest8>` (base: `base`, else the spec's name, else
    /// [`DEFAULT_ENVIRONMENT_BASE`]): remembered → reused; else created; a `409` → the live environment of that
    /// name is adopted (every page of the list is searched); an archived one → [`Error::NameConflict`]. On every
    /// path the result carries the [`Bootstrap`] of the spec's runtimes, if any.
    pub async fn ensure_environment(&self, spec: &EnvironmentSpec, base: Option<&str>) -> Result<Provisioned, Error> {
        spec.validate()?;
        let bootstrap = Bootstrap::for_runtimes(&spec.runtimes)?;
        let base = base.or(spec.name.as_deref()).unwrap_or(DEFAULT_ENVIRONMENT_BASE);
        let digest = spec.digest();
        let name = Self::name_for(ResourceKind::Environment, base, &digest)?;
        let body = json!({"name": name, "config": environment_config(spec)});
        let mut ensured = self.ensure(ResourceKind::Environment, base, &digest, name, body).await?;
        ensured.bootstrap = bootstrap;
        Ok(ensured)
    }

    /// The agent for `spec`, named `<base>_<digest8>` under [`NamePolicy::CLAUDE`] (base: `base`, else the
    /// spec's name); a base too long to keep whole is an [`Error::InvalidSpec`] and nothing is created. Reuse,
    /// `409` adoption and conflicts as for [`ClaudeProvisioner::ensure_environment`].
    pub async fn ensure_agent(&self, spec: &AgentSpec, base: Option<&str>) -> Result<Provisioned, Error> {
        spec.validate()?;
        let base = base.unwrap_or(&spec.name);
        let digest = spec.digest();
        let name = Self::name_for(ResourceKind::Agent, base, &digest)?;
        let body = agent_body(spec, &name)?;
        self.ensure(ResourceKind::Agent, base, &digest, name, body).await
    }

    async fn ensure(
        &self,
        kind: ResourceKind,
        base: &str,
        digest: &Digest,
        name: String,
        body: Value,
    ) -> Result<Provisioned, Error> {
        let key = kind.store_key(base, digest.short());
        match self.store.get(&key).await {
            Ok(Some(value)) => match Provisioned::from_value(&value) {
                Some(found) if found.kind == kind && found.name == name => {
                    tracing::debug!(key, id = found.id, "provision: reusing the remembered {kind}");
                    return Ok(found);
                }
                _ => tracing::warn!(key, "provision: the remembered entry has an unexpected shape; provisioning"),
            },
            Ok(None) => {}
            Err(error) => tracing::warn!(key, %error, "provision: the store could not be read; provisioning"),
        }
        let created = match kind {
            ResourceKind::Agent => self.client.create_agent(body).await,
            ResourceKind::Environment => self.client.create_environment(body).await,
        };
        let (id, origin) = match created {
            Ok(record) => (id_of(&record, kind)?, Origin::Created),
            Err(Error::Http { status: 409, .. }) => (self.adopt(kind, &name).await?, Origin::Adopted),
            Err(error) => return Err(error),
        };
        tracing::info!(kind = kind.as_str(), id, name, ?origin, "provision: ensured");
        let digest = digest.short().to_string();
        let found = Provisioned { kind, id, name, base: base.to_string(), digest, origin, bootstrap: None };
        if let Err(error) = self.store.put(&key, found.to_value()).await {
            tracing::warn!(key, %error, "provision: the {kind} could not be remembered");
        }
        Ok(found)
    }

    /// After a `409`: the id of the live resource called `name`, searched through every page (archived ones
    /// included, to say why the name is taken).
    async fn adopt(&self, kind: ResourceKind, name: &str) -> Result<String, Error> {
        let listed = self.list(kind, true).await?;
        let named: Vec<&Value> = listed.iter().filter(|r| string_field(r, "name") == Some(name)).collect();
        if let Some(live) = named.iter().find(|r| is_live(r)) {
            return id_of(live, kind);
        }
        let reason = match named.first() {
            Some(archived) => format!(
                "it belongs to the archived {kind} {} (archived resources cannot be revived; change the base name)",
                string_field(archived, "id").unwrap_or("(no id)")
            ),
            None => format!("the service answered 409 but no {kind} of that name is listed"),
        };
        Err(Error::name_conflict(kind.as_str(), name, reason))
    }

    async fn list(&self, kind: ResourceKind, include_archived: bool) -> Result<Vec<Value>, Error> {
        match kind {
            ResourceKind::Agent => self.client.list_all_agents(include_archived).await,
            ResourceKind::Environment => self.client.list_all_environments(include_archived).await,
        }
    }

    /// Names the version `digest` (8 or 64 hex characters, or a [`Provisioned::digest`]) of `base` `tag`,
    /// replacing what the tag named before. Safe against concurrent writers (compare-and-swap). The digest need
    /// not be remembered (yet): [`ClaudeProvisioner::resolve`] says when it is not.
    pub async fn tag(&self, kind: ResourceKind, base: &str, tag: &str, digest: &str) -> Result<(), Error> {
        if tag.is_empty() || tag.chars().any(char::is_control) {
            return Err(Error::invalid_spec("tag", "a tag must be non-empty, without control characters"));
        }
        if base.contains(':') {
            return Err(Error::invalid_spec("tag", "a tagged base cannot contain `:` (`<base>:<tag>` splits there)"));
        }
        let digest = digest.to_ascii_lowercase();
        let short = match digest.len() {
            8 | 64 if digest.bytes().all(|b| b.is_ascii_hexdigit()) => digest[..8].to_string(),
            _ => return Err(Error::invalid_spec("tag", "a digest is 8 or 64 hex characters")),
        };
        update(self.store.as_ref(), &kind.tags_key(base), |current| {
            let mut tags = current.and_then(Value::as_object).cloned().unwrap_or_default();
            tags.insert(tag.to_string(), json!(short));
            Some(Value::Object(tags))
        })
        .await?;
        Ok(())
    }

    /// The tags of `base`: tag → digest8.
    pub async fn tags(&self, kind: ResourceKind, base: &str) -> Result<BTreeMap<String, String>, Error> {
        let value = self.store.get(&kind.tags_key(base)).await?;
        Ok(value
            .as_ref()
            .and_then(Value::as_object)
            .map(|tags| {
                tags.iter().filter_map(|(tag, digest)| Some((tag.clone(), digest.as_str()?.to_string()))).collect()
            })
            .unwrap_or_default())
    }

    /// The version `reference` (`"<base>:<tag>"`, split at the first colon) names. An unknown tag, or a tag whose
    /// version this store no longer remembers (pruned, or provisioned through another store), is an
    /// [`Error::InvalidSpec`] saying which.
    pub async fn resolve(&self, kind: ResourceKind, reference: &str) -> Result<Provisioned, Error> {
        let Some((base, tag)) = reference.split_once(':') else {
            return Err(Error::invalid_spec("tag reference", format!("`{reference}` is not `<base>:<tag>`")));
        };
        let tags = self.tags(kind, base).await?;
        let Some(digest) = tags.get(tag) else {
            return Err(Error::invalid_spec("tag reference", format!("no {kind} of base `{base}` is tagged `{tag}`")));
        };
        let value = self.store.get(&kind.store_key(base, digest)).await?;
        value.as_ref().and_then(Provisioned::from_value).filter(|found| found.kind == kind).ok_or_else(|| {
            Error::invalid_spec(
                "tag reference",
                format!("`{reference}` names digest {digest}, which this store does not track (pruned?)"),
            )
        })
    }

    /// Keeps the newest `keep` (at least 1) live versions of `base` (resources named exactly `<base>_` + 8
    /// lowercase hex characters) and every tagged one, and archives the others, oldest first, following every
    /// page of the list. Each archived version is forgotten in the store (its key, and facade entries naming
    /// it). A failure to archive one version does not stop the others: the report lists each failure.
    pub async fn prune(&self, kind: ResourceKind, base: &str, keep: usize) -> Result<PruneReport, Error> {
        if keep == 0 {
            return Err(Error::invalid_option("keep", "prune keeps at least the newest version (keep ≥ 1)"));
        }
        let tagged: Vec<String> = self.tags(kind, base).await?.into_values().collect();
        let mut versions: Vec<(String, String, String, String)> = self
            .list(kind, false)
            .await?
            .iter()
            .filter(|record| is_live(record))
            .filter_map(|record| {
                let name = string_field(record, "name")?;
                let digest = version_digest(name, base)?;
                let id = string_field(record, "id")?;
                let created = string_field(record, "created_at").unwrap_or_default();
                Some((created.to_string(), id.to_string(), name.to_string(), digest.to_string()))
            })
            .collect();
        // Newest first (RFC 3339 timestamps of one service compare as strings; the id breaks ties).
        versions.sort_by(|a, b| (&b.0, &b.1).cmp(&(&a.0, &a.1)));
        let mut report = PruneReport::default();
        let mut doomed = Vec::new();
        for (index, (_, id, name, digest)) in versions.into_iter().enumerate() {
            if index < keep || tagged.contains(&digest) {
                report.kept.push(name);
            } else {
                doomed.push((id, name, digest));
            }
        }
        for (id, name, digest) in doomed.into_iter().rev() {
            let archived = match kind {
                ResourceKind::Agent => self.client.archive_agent(&id).await,
                ResourceKind::Environment => self.client.archive_environment(&id).await,
            };
            match archived {
                Ok(_) => {
                    tracing::info!(kind = kind.as_str(), id, name, "prune: archived");
                    self.forget(kind, base, &digest, &id).await;
                    report.archived.push(name);
                }
                Err(error) => {
                    tracing::warn!(kind = kind.as_str(), id, name, %error, "prune: could not archive");
                    report.failed.push(PruneFailure { name, id, error });
                }
            }
        }
        Ok(report)
    }

    /// Forgets every remembered version whose id is `id` (after it was archived elsewhere, e.g. by a teardown).
    /// Failures are logged.
    pub async fn forget_id(&self, kind: ResourceKind, id: &str) {
        let prefix = format!("claude:{}:", kind.as_str());
        let keys = match self.store.keys(&prefix).await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "provision: could not list the remembered {kind}s");
                return;
            }
        };
        for key in keys {
            if let Ok(Some(value)) = self.store.get(&key).await
                && value.get("id").and_then(Value::as_str) == Some(id)
                && let Err(error) = self.store.compare_and_swap(&key, Some(&value), None).await
            {
                tracing::warn!(key, %error, "provision: could not forget an archived {kind}");
            }
        }
    }

    /// Forgets an archived version: its key, and the facade's entries naming its id. Failures are logged: the
    /// resource is archived either way, and a stale entry only costs a failed session open.
    async fn forget(&self, kind: ResourceKind, base: &str, digest: &str, id: &str) {
        let key = kind.store_key(base, digest);
        if let Err(error) = self.store.delete(&key).await {
            tracing::warn!(key, %error, "prune: could not forget the archived version");
        }
        let field = match kind {
            ResourceKind::Agent => "agent_id",
            ResourceKind::Environment => "environment_id",
        };
        let keys = match self.store.keys("provision:").await {
            Ok(keys) => keys,
            Err(error) => {
                tracing::warn!(%error, "prune: could not list the facade's entries");
                return;
            }
        };
        for key in keys {
            if let Ok(Some(value)) = self.store.get(&key).await
                && value.get(field).and_then(Value::as_str) == Some(id)
                && let Err(error) = self.store.compare_and_swap(&key, Some(&value), None).await
            {
                tracing::warn!(key, %error, "prune: could not forget a facade entry");
            }
        }
    }
}

fn id_of(record: &Value, kind: ResourceKind) -> Result<String, Error> {
    string_field(record, "id")
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| Error::malformed(kind.as_str(), "no `id`", excerpt(record.to_string().as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_exactly_base_and_eight_hex() {
        assert_eq!(version_digest("d_aaaaaaaa", "d"), Some("aaaaaaaa"));
        assert_eq!(version_digest("d_d_aaaaaaaa", "d"), None);
        assert_eq!(version_digest("data_analysis_abc12345", "data"), None);
        assert_eq!(version_digest("d_AAAAAAAA", "d"), None);
        assert_eq!(version_digest("d_aaaaaaaaa", "d"), None);
    }

    #[test]
    fn stored_values_round_trip_and_foreign_shapes_are_refused() {
        let found = Provisioned {
            kind: ResourceKind::Agent,
            id: "agent_1".into(),
            name: "a_0123abcd".into(),
            base: "a".into(),
            digest: "0123abcd".into(),
            origin: Origin::Created,
            bootstrap: None,
        };
        let back = Provisioned::from_value(&found.to_value()).unwrap();
        assert_eq!(back, Provisioned { origin: Origin::Stored, ..found });
        assert_eq!(Provisioned::from_value(&json!({"environment_id": "env_partial"})), None);
        assert_eq!(Provisioned::from_value(&json!({"kind": "agent", "id": "x", "name": "n", "base": "b"})), None);
    }

    #[test]
    fn the_environment_config_follows_the_spec() {
        let spec = EnvironmentSpec::new()
            .networking(Networking::Limited { allowed_hosts: vec!["pypi.org".into()] })
            .packages("pip", ["pandas"]);
        assert_eq!(
            environment_config(&spec),
            json!({"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["pypi.org"]},
                   "packages": {"type": "packages", "pip": ["pandas"]}})
        );
        let verbatim = EnvironmentSpec::new().config(json!({"type": "self_hosted"}));
        assert_eq!(environment_config(&verbatim), json!({"type": "self_hosted"}));
    }
}
