//! [`ProvisionSettings`]: how harness provisioning behaves, and its defaults.

use std::fmt;
use std::time::Duration;

use managed_agents_core::Error;

use super::credentials::ApiKeyCredentialProvider;

/// The default wall-clock budget of one provision or teardown call: 10 minutes.
pub const DEFAULT_PROVISION_BUDGET: Duration = Duration::from_secs(600);
/// The default first interval between two status polls.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The default longest interval between two status polls (the interval doubles up to it).
pub const DEFAULT_MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The default longest wait for one control-plane request (further bounded by the budget left).
pub const DEFAULT_CONTROL_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The default budget of a rollback delete, which runs after the call's own budget may have been spent.
pub const DEFAULT_ROLLBACK_TIMEOUT: Duration = Duration::from_secs(30);

/// How harness provisioning behaves; set through
/// [`BedrockAgentCoreBuilder::provisioning`](crate::BedrockAgentCoreBuilder::provisioning). Start from
/// `ProvisionSettings::default()` and the `with_*` methods.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProvisionSettings {
    /// The IAM role the harness runs as (`executionRoleArn`, required by `CreateHarness`). Provisioning fails with
    /// [`Error::InvalidOption`] (`execution_role_arn`) without one.
    pub execution_role_arn: Option<String>,
    /// Put before the spec's name in the harness name (`<prefix>_<name>_<digest8>`).
    pub name_prefix: Option<String>,
    /// The wall-clock budget of one provision or teardown call, shared by every wait and request of the call
    /// (default [`DEFAULT_PROVISION_BUDGET`]; must not be zero).
    pub budget: Duration,
    /// The first interval between two status polls (default [`DEFAULT_POLL_INTERVAL`]; must not be zero). It
    /// doubles after each poll up to [`max_poll_interval`](Self::max_poll_interval). Both are fitted to the
    /// budget: the first is at most a twelfth of it, the longest at most a quarter, so a short budget still polls
    /// several times.
    pub poll_interval: Duration,
    /// The longest interval between two status polls (default [`DEFAULT_MAX_POLL_INTERVAL`]; raised to
    /// `poll_interval` when smaller).
    pub max_poll_interval: Duration,
    /// The longest wait for one control-plane request (default [`DEFAULT_CONTROL_REQUEST_TIMEOUT`]; must not be
    /// zero); never more than what is left of the budget.
    pub request_timeout: Duration,
    /// The budget of the delete that rolls back a harness this call created (default
    /// [`DEFAULT_ROLLBACK_TIMEOUT`]; must not be zero). It is not taken from the call's budget, which may be spent.
    pub rollback_timeout: Duration,
    /// `maxResults` of each `ListHarnesses` page (1 to 100), or the service's default.
    pub page_size: Option<i32>,
    /// API-key credential providers provisioning puts in the token vault (creates, or replaces the key of the one
    /// of that name) before it creates the harness, e.g. the key a `liteLlmModelConfig.apiKeyArn` names. Their
    /// keys never print.
    pub credential_providers: Vec<ApiKeyCredentialProvider>,
}

impl Default for ProvisionSettings {
    fn default() -> Self {
        Self {
            execution_role_arn: None,
            name_prefix: None,
            budget: DEFAULT_PROVISION_BUDGET,
            poll_interval: DEFAULT_POLL_INTERVAL,
            max_poll_interval: DEFAULT_MAX_POLL_INTERVAL,
            request_timeout: DEFAULT_CONTROL_REQUEST_TIMEOUT,
            rollback_timeout: DEFAULT_ROLLBACK_TIMEOUT,
            page_size: None,
            credential_providers: Vec::new(),
        }
    }
}

impl fmt::Debug for ProvisionSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProvisionSettings")
            .field("execution_role_arn", &self.execution_role_arn)
            .field("name_prefix", &self.name_prefix)
            .field("budget", &self.budget)
            .field("poll_interval", &self.poll_interval)
            .field("max_poll_interval", &self.max_poll_interval)
            .field("request_timeout", &self.request_timeout)
            .field("rollback_timeout", &self.rollback_timeout)
            .field("page_size", &self.page_size)
            .field("credential_providers", &self.credential_providers)
            .finish()
    }
}

impl ProvisionSettings {
    /// With [`ProvisionSettings::execution_role_arn`].
    #[must_use]
    pub fn with_execution_role_arn(mut self, arn: impl Into<String>) -> Self {
        self.execution_role_arn = Some(arn.into());
        self
    }

    /// With [`ProvisionSettings::name_prefix`].
    #[must_use]
    pub fn with_name_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.name_prefix = Some(prefix.into());
        self
    }

    /// With [`ProvisionSettings::budget`].
    #[must_use]
    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.budget = budget;
        self
    }

    /// With [`ProvisionSettings::poll_interval`] and [`ProvisionSettings::max_poll_interval`].
    #[must_use]
    pub fn with_poll_interval(mut self, first: Duration, max: Duration) -> Self {
        self.poll_interval = first;
        self.max_poll_interval = max;
        self
    }

    /// With [`ProvisionSettings::request_timeout`].
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// With [`ProvisionSettings::rollback_timeout`].
    #[must_use]
    pub fn with_rollback_timeout(mut self, timeout: Duration) -> Self {
        self.rollback_timeout = timeout;
        self
    }

    /// With [`ProvisionSettings::page_size`].
    #[must_use]
    pub fn with_page_size(mut self, page_size: i32) -> Self {
        self.page_size = Some(page_size);
        self
    }

    /// With one more of [`ProvisionSettings::credential_providers`].
    #[must_use]
    pub fn with_api_key_credential_provider(mut self, provider: ApiKeyCredentialProvider) -> Self {
        self.credential_providers.push(provider);
        self
    }

    /// Checks every value: [`Error::InvalidOption`] for a zero budget, poll interval or timeout, a page size
    /// outside 1 to 100, a blank execution role, or a credential provider whose name is outside the service's rule
    /// or whose key is blank (`credential_provider`).
    pub fn validate(&self) -> Result<(), Error> {
        for (option, value) in [
            ("provision_budget", self.budget),
            ("poll_interval", self.poll_interval),
            ("control_request_timeout", self.request_timeout),
            ("rollback_timeout", self.rollback_timeout),
        ] {
            if value.is_zero() {
                return Err(Error::invalid_option(option, "must be longer than zero"));
            }
        }
        if let Some(size) = self.page_size
            && !(1..=100).contains(&size)
        {
            return Err(Error::invalid_option("page_size", "must be between 1 and 100"));
        }
        if self.execution_role_arn.as_deref().is_some_and(|arn| arn.trim().is_empty()) {
            return Err(Error::invalid_option("execution_role_arn", "must not be blank"));
        }
        for provider in &self.credential_providers {
            provider.validate()?;
        }
        Ok(())
    }

    /// The first poll interval and its cap, fitted to the budget: at most a twelfth of it (a quarter for the
    /// cap), so a budget shorter than the configured cadence still polls more than once; never below 1 ms.
    pub(super) fn intervals(&self) -> (Duration, Duration) {
        let floor = Duration::from_millis(1);
        let first = self.poll_interval.min(self.budget / 12).max(floor);
        let max = self.max_poll_interval.max(self.poll_interval).min(self.budget / 4).max(first);
        (first, max)
    }
}
