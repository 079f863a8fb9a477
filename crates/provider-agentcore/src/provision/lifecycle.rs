//! What [`BedrockAgentCore`] does on the control plane: provision the harness of a spec (create it, or adopt the
//! one holding its name) and wait until it is `READY`, tear one down, list them.

use std::time::Duration;

use aws_sdk_bedrockagentcorecontrol::Client as ControlClient;
use aws_sdk_bedrockagentcorecontrol::types::HarnessSummary;
use managed_agents_core::{AgentHandle, AgentSpec, EnvironmentSpec, Error};

use super::call::{Call, ControlFailure, RESOURCE, Wait, WaitBudget, bounded, control_failure, timed_out};
use super::credentials::CredentialProvider;
use super::naming::{DEFAULT_ENDPOINT_NAME, client_token, harness_name};
use super::request::{CreateParts, create_parts};
use super::rollback::{Rollback, unwind_cause};
use super::status::{HarnessStatusClass, classify};
use super::wait::Target;
use crate::provider::agentcore::BedrockAgentCore;

/// How many times one call may find its name taken by a harness that then vanished, before giving up.
const MAX_CREATE_ROUNDS: u32 = 4;

/// How a provisioned harness was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Provenance {
    /// This call created it.
    Created,
    /// It already existed under the content-addressed name (READY, CREATING or UPDATING) and was adopted.
    Adopted,
}

/// A harness [`BedrockAgentCore::provision_harness`] left `READY`, with its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionedHarness {
    /// The harness id.
    pub harness_id: String,
    /// The harness ARN (what `Session::run` takes as `agent_id`).
    pub arn: String,
    /// The harness name.
    pub name: String,
    /// The endpoint it waited for (the provider's qualifier, or [`DEFAULT_ENDPOINT_NAME`]): the one its sessions
    /// invoke.
    pub endpoint: String,
    /// The credential providers of [`ProvisionSettings::credential_providers`](super::ProvisionSettings), as the
    /// token vault holds them (their ARNs), in the settings' order.
    pub credential_providers: Vec<CredentialProvider>,
    /// Created or adopted.
    pub provenance: Provenance,
    /// Status polls made, over every wait of the call (the harness's and its endpoint's).
    pub polls: u32,
    /// Time the call took.
    pub elapsed: Duration,
}

impl ProvisionedHarness {
    /// The handle [`Provider::provision`](managed_agents_core::Provider::provision) returns: the ARN as `agent_id`.
    pub fn handle(&self) -> AgentHandle {
        AgentHandle { agent_id: self.arn.clone(), environment_id: None }
    }
}

impl BedrockAgentCore {
    /// Every harness of the account and region, following `nextToken` through every page (bounded by the
    /// provisioning budget). Needs the control-plane client. A page without its `harnesses` member counts as an
    /// empty one (as the SDK reads it); only provisioning's search for the holder of a taken name refuses it.
    pub async fn list_harnesses(&self) -> Result<Vec<HarnessSummary>, Error> {
        let client = control(self)?;
        let mut call = Call {
            client,
            settings: self.provisioning(),
            budget: WaitBudget::start(self.provisioning().budget),
            polls: 0,
        };
        Ok(call.list().await?.harnesses)
    }

    /// Provisions the harness of `spec` (in `environment`) and waits until it and the endpoint sessions will
    /// invoke are `READY`; see the [module documentation](crate::provision). Fails with [`Error::InvalidSpec`] /
    /// [`Error::InvalidOption`] before sending anything, [`Error::NameConflict`] when the name is held by a harness
    /// that cannot be adopted, [`Error::ProvisionFailed`] when the harness or its endpoint ends in a failed,
    /// deleting or unknown status, [`Error::ProvisionTimedOut`] when the budget runs out (resource
    /// `"harness endpoint"` when it ran out on the endpoint), and the service's own error otherwise.
    ///
    /// First, every credential provider of [`ProvisionSettings::credential_providers`](super::ProvisionSettings) is
    /// put in the token vault (created, or its key replaced), so that a model configuration can name it.
    ///
    /// What is sent: the spec's system prompt, its model id (as `bedrockModelConfig.modelId`), its tools (as
    /// `inline_function` tools, run locally by the session's handler) and, of the environment, only `config` —
    /// the service's `environment` JSON (`agentCoreRuntimeEnvironment` with `filesystemConfigurations` of
    /// `sessionStorage`, `lifecycleConfiguration`, `networkConfiguration.networkMode`; other members are refused
    /// with [`Error::InvalidSpec`]). The environment's runtimes, networking and packages change the digest, and so
    /// the name, only. `CreateHarness` is sent again with the same client token after a failure that may pass; a
    /// create cut short by the budget may still have created a harness: the next call adopts it by its name.
    pub async fn provision_harness(
        &self,
        spec: &AgentSpec,
        environment: Option<&EnvironmentSpec>,
    ) -> Result<ProvisionedHarness, Error> {
        let settings = self.provisioning();
        settings.validate()?;
        spec.validate()?;
        if let Some(environment) = environment {
            environment.validate()?;
        }
        let role = settings
            .execution_role_arn
            .as_deref()
            .map(str::trim)
            .filter(|arn| !arn.is_empty())
            .ok_or_else(|| {
                Error::invalid_option("execution_role_arn", "harness provisioning needs an execution role ARN")
            })?
            .to_string();
        let name = harness_name(spec, environment, settings.name_prefix.as_deref())?;
        let parts = create_parts(spec, environment)?;
        let client = control(self)?;
        let endpoint = self.qualifier().unwrap_or(DEFAULT_ENDPOINT_NAME);
        let mut call = Call { client, settings, budget: WaitBudget::start(settings.budget), polls: 0 };
        let unwinding = Unwinding { name: &name, armed: true };
        let result = async {
            let mut stored = Vec::with_capacity(settings.credential_providers.len());
            for provider in &settings.credential_providers {
                stored.push(call.put_credential_provider(provider).await?.0);
            }
            let mut provisioned = provision(&mut call, &name, &role, &parts, endpoint).await?;
            provisioned.credential_providers = stored;
            Ok(provisioned)
        }
        .await;
        unwinding.disarm();
        match &result {
            Ok(h) => {
                tracing::info!(harness_id = h.harness_id, name, provenance = ?h.provenance, polls = h.polls, "harness provisioned")
            }
            Err(error) => tracing::warn!(name, %error, "harness provisioning failed"),
        }
        result
    }

    /// Deletes the harness `harness_id` and waits until it is gone, under the provisioning budget. A harness
    /// that is already gone counts as torn down.
    pub async fn teardown_harness(&self, harness_id: &str) -> Result<(), Error> {
        let settings = self.provisioning();
        settings.validate()?;
        let client = control(self)?;
        let mut call = Call { client, settings, budget: WaitBudget::start(settings.budget), polls: 0 };
        let wait = Wait {
            resource: RESOURCE,
            phase: "deleting",
            id: Some(harness_id.to_string()),
            last_status: None,
            polls: 0,
        };
        let request = async {
            client.delete_harness().harness_id(harness_id).send().await.map_err(|e| control_failure("DeleteHarness", e))
        };
        match bounded(settings, &call.budget, &wait, request).await {
            Ok(_) => {}
            Err(ControlFailure::NotFound) => {
                tracing::info!(harness_id, "teardown: the harness is already gone");
                return Ok(());
            }
            // Already being deleted (or busy): wait for it to go all the same.
            Err(ControlFailure::Conflict(message)) => {
                tracing::info!(
                    harness_id,
                    message,
                    "teardown: DeleteHarness conflicted; waiting for the harness to go"
                );
            }
            Err(failure) => return Err(failure.into_error("DeleteHarness")),
        }
        call.wait_gone(harness_id, "deleting").await
    }
}

/// Logs a provision that unwinds before it returns (its future dropped, or a panic), whatever it had done.
struct Unwinding<'a> {
    name: &'a str,
    armed: bool,
}

impl Unwinding<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Unwinding<'_> {
    fn drop(&mut self) {
        if self.armed {
            tracing::warn!(name = self.name, cause = unwind_cause(), "harness provisioning unwound before it returned");
        }
    }
}

/// Waits until harness `id` is `READY`, then until its endpoint `endpoint` is: a harness is ready before its
/// endpoints are (the service provisions the `DEFAULT` endpoint on its own time), and a session invokes the
/// endpoint. A harness that never gets ready costs no endpoint poll.
async fn ready(call: &mut Call<'_>, id: &str, endpoint: &str) -> Result<(), Error> {
    call.wait_ready(Target::Harness(id)).await?;
    call.wait_ready(Target::Endpoint { harness_id: id, name: endpoint }).await
}

async fn provision(
    call: &mut Call<'_>,
    name: &str,
    role: &str,
    parts: &CreateParts,
    endpoint: &str,
) -> Result<ProvisionedHarness, Error> {
    for _ in 0..MAX_CREATE_ROUNDS {
        let created = create(call, name, role, parts).await;
        match created {
            Ok(output) => {
                let Some(harness) = output.harness().filter(|h| !h.harness_id().is_empty() && !h.arn().is_empty())
                else {
                    return Err(Error::malformed("CreateHarness response", "no harness id and ARN", ""));
                };
                let (id, arn) = (harness.harness_id().to_string(), harness.arn().to_string());
                tracing::info!(harness_id = id, name, "created harness");
                let mut rollback = Rollback {
                    client: call.client.clone(),
                    harness_id: Some(id.clone()),
                    timeout: call.settings.rollback_timeout,
                };
                match ready(call, &id, endpoint).await {
                    Ok(()) => {
                        rollback.disarm();
                        return Ok(done(call, Handover { harness_id: id, arn, name, endpoint }, Provenance::Created));
                    }
                    Err(error) => {
                        rollback.run().await;
                        return Err(error);
                    }
                }
            }
            Err(ControlFailure::Conflict(message)) => {
                tracing::info!(name, message, "harness name taken; looking for the harness that holds it");
                let listing = call.list().await?;
                if !listing.whole {
                    // An empty list is an answer (the holder went away); a listing without its list is none.
                    return Err(Error::malformed(
                        "ListHarnesses response",
                        "a page has no `harnesses` member, so the listing cannot name the harness holding the name",
                        "",
                    ));
                }
                let Some(holder) = listing.harnesses.into_iter().find(|h| h.harness_name() == name) else {
                    // It went away between the two calls: try the create again.
                    continue;
                };
                let id = holder.harness_id().to_string();
                match classify(holder.status()) {
                    class if class.adoptable() => {
                        tracing::info!(
                            harness_id = id,
                            name,
                            status = holder.status().as_str(),
                            "adopting the existing harness"
                        );
                        ready(call, &id, endpoint).await?;
                        let arn = holder.arn().to_string();
                        return Ok(done(call, Handover { harness_id: id, arn, name, endpoint }, Provenance::Adopted));
                    }
                    HarnessStatusClass::Deleting => {
                        tracing::info!(
                            harness_id = id,
                            name,
                            "the harness holding the name is being deleted; waiting for it to go"
                        );
                        call.wait_gone(&id, "waiting for the old harness to be deleted").await?;
                    }
                    _ => {
                        let reason = format!("a harness of this name ({id}) is {}", holder.status().as_str());
                        tracing::warn!(harness_id = id, name, reason, "cannot recover the harness name");
                        return Err(Error::name_conflict(RESOURCE, name, reason));
                    }
                }
            }
            Err(failure) => return Err(failure.into_error("CreateHarness")),
        }
    }
    Err(Error::name_conflict(
        RESOURCE,
        name,
        format!("CreateHarness kept conflicting after {MAX_CREATE_ROUNDS} attempts"),
    ))
}

/// `CreateHarness`, sent again with the same client token after a failure that may pass (throttling, 5xx, a
/// connection or response timeout) while the budget lasts.
async fn create(
    call: &mut Call<'_>,
    name: &str,
    role: &str,
    parts: &CreateParts,
) -> Result<aws_sdk_bedrockagentcorecontrol::operation::create_harness::CreateHarnessOutput, ControlFailure> {
    let token = client_token();
    let wait = Wait { resource: RESOURCE, phase: "creating", id: None, last_status: None, polls: 0 };
    let mut interval = call.settings.intervals().0;
    loop {
        let request = call
            .client
            .create_harness()
            .harness_name(name)
            .client_token(&token)
            .execution_role_arn(role)
            .set_system_prompt(Some(parts.system_prompt.clone()))
            .set_model(parts.model.clone())
            .set_tools(Some(parts.tools.clone()))
            .set_environment(parts.environment.clone())
            .send();
        let result = bounded(call.settings, &call.budget, &wait, async {
            request.await.map_err(|e| control_failure("CreateHarness", e))
        })
        .await;
        match result {
            Err(ControlFailure::Other(error))
                if error.is_retryable() && !matches!(error, Error::ProvisionTimedOut { .. }) =>
            {
                tracing::debug!(name, %error, "CreateHarness failed; sending it again with the same client token");
                if !call.pause(&mut interval).await {
                    return Err(ControlFailure::Other(timed_out(&call.budget, &wait)));
                }
            }
            other => return other,
        }
    }
}

/// What a provision hands over: the harness, its name, and the endpoint it waited for.
struct Handover<'a> {
    harness_id: String,
    arn: String,
    name: &'a str,
    endpoint: &'a str,
}

fn done(call: &Call<'_>, handover: Handover<'_>, provenance: Provenance) -> ProvisionedHarness {
    ProvisionedHarness {
        harness_id: handover.harness_id,
        arn: handover.arn,
        name: handover.name.to_string(),
        endpoint: handover.endpoint.to_string(),
        credential_providers: Vec::new(),
        provenance,
        polls: call.polls,
        elapsed: call.budget.elapsed(),
    }
}

/// The control-plane client provisioning calls, or why there is none.
pub(super) fn control(provider: &BedrockAgentCore) -> Result<&ControlClient, Error> {
    provider.control_client().ok_or_else(|| {
        Error::invalid_option(
            "control_client",
            "harness provisioning needs a control-plane client (set one, or build from an SDK configuration)",
        )
    })
}
