//! Create-or-reuse: provision a definition once, remember its handle, tear it down and forget it.

use serde_json::Value;

use super::ProvisionStore;
use crate::{AgentHandle, AgentSpec, EnvironmentSpec, Error, Provider};

/// The store key under which [`provision`] remembers the handle of `spec` (in `environment`) for a provider whose
/// [`Provider::provision_scope`] is `scope`: `provision:<scope>:<agent digest>:<environment digest or "none">`.
pub fn cache_key(scope: &str, spec: &AgentSpec, environment: Option<&EnvironmentSpec>) -> String {
    let environment = environment.map(|env| env.digest().hex().to_string()).unwrap_or_else(|| "none".to_string());
    format!("provision:{scope}:{}:{environment}", spec.digest().hex())
}

/// Provisions `spec` (in `environment`) on `provider` unless `store` remembers a handle for the same provider and
/// the same definitions; remembers the new handle. Invalid definitions fail before anything is created; a failed
/// provisioning is not remembered. A store that fails to read or write is logged and treated as a miss: the
/// provider's own provisioning is idempotent (content-addressed names), so nothing is created twice.
pub async fn provision<P: Provider + ?Sized>(
    provider: &P,
    store: &dyn ProvisionStore,
    spec: &AgentSpec,
    environment: Option<&EnvironmentSpec>,
) -> Result<AgentHandle, Error> {
    spec.validate()?;
    if let Some(environment) = environment {
        environment.validate()?;
    }
    let key = cache_key(&provider.provision_scope(), spec, environment);
    match store.get(&key).await {
        Ok(Some(value)) => match serde_json::from_value::<AgentHandle>(value) {
            Ok(handle) => {
                tracing::debug!(key, agent_id = handle.agent_id, "provision: reusing the remembered handle");
                return Ok(handle);
            }
            Err(error) => tracing::warn!(key, %error, "provision: the remembered entry is not a handle; provisioning"),
        },
        Ok(None) => {}
        Err(error) => tracing::warn!(key, %error, "provision: the store could not be read; provisioning"),
    }
    let handle = provider.provision(spec, environment).await?;
    match serde_json::to_value(&handle) {
        Ok(value) => {
            if let Err(error) = store.put(&key, value).await {
                tracing::warn!(key, %error, "provision: the handle could not be remembered");
            }
        }
        Err(error) => tracing::warn!(key, %error, "provision: the handle could not be encoded"),
    }
    Ok(handle)
}

/// Tears down what `handle` names on `provider`, then forgets every remembered entry holding it. A provider
/// error is returned and nothing is forgotten.
pub async fn teardown<P: Provider + ?Sized>(
    provider: &P,
    store: &dyn ProvisionStore,
    handle: &AgentHandle,
) -> Result<(), Error> {
    provider.teardown(handle).await?;
    let value: Value = serde_json::to_value(handle).map_err(|error| Error::store("delete_value", false, error))?;
    store.delete_value(&value).await?;
    Ok(())
}
