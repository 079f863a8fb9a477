//! [`ClaudeProvisioner`]: ensure, tag, resolve, prune — content-addressed agents and environments (see the
//! [room's docs](crate::provision)).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use managed_agents_core::provision::{Digest, NamePolicy, ProvisionStore, update};
use managed_agents_core::{AgentSpec, EnvironmentSpec, Error};
use serde_json::{Value, json};

use crate::provision::agent::ClaudeAgent;
use crate::provision::bodies::environment_config;
use crate::provision::bootstrap::Bootstrap;
use crate::provision::provisioned::{Origin, Provisioned, PruneFailure, PruneReport, ResourceKind, version_digest};
use crate::wire::client::ClaudeClient;
use crate::wire::excerpt;

/// Content-addressed provisioning of agents and environments on Claude Managed Agents (see the [room's
/// docs](crate::provision)). Cheap to clone; share one store between the processes that provision the same things.
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

fn string_field<'a>(record: &'a Value, key: &str) -> Option<&'a str> {
    record.get(key).and_then(Value::as_str)
}

fn is_live(record: &Value) -> bool {
    record.get("archived_at").is_none_or(Value::is_null)
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
        self.ensure_claude_agent(&ClaudeAgent::new(spec.clone()), base).await
    }

    /// The agent for a Claude definition (a spec with Claude-only fields, such as a coordinator's roster),
    /// named `<base>_<digest8>` after [`ClaudeAgent::digest`] (base: `base`, else the spec's name), ensured as
    /// [`ClaudeProvisioner::ensure_agent`] ensures a spec (which is this with no Claude field). The agents a
    /// roster names are not provisioned here: ensure them first and roster their ids.
    pub async fn ensure_claude_agent(&self, agent: &ClaudeAgent, base: Option<&str>) -> Result<Provisioned, Error> {
        agent.validate()?;
        let base = base.unwrap_or(&agent.spec.name);
        let digest = agent.digest();
        let name = Self::name_for(ResourceKind::Agent, base, &digest)?;
        let body = agent.body(&name)?;
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
