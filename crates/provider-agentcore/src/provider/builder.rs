//! [`BedrockAgentCoreBuilder`]: every setting of a [`BedrockAgentCore`], checked when it builds.

use std::fmt;
use std::time::Duration;

use aws_sdk_bedrockagentcore::Client;
use managed_agents_core::recording::Recorder;
use managed_agents_core::{Error, HttpOptions, HttpSettings, RetryPolicy, env_var};

use super::agentcore::BedrockAgentCore;
use super::recording::RecordingHttpClient;
use super::settings::{DEFAULT_HTTP_SETTINGS, Settings};
use crate::provision::naming::validate_endpoint_name;
use crate::provision::settings::ProvisionSettings;

/// Builds a [`BedrockAgentCore`]. [`BedrockAgentCore::builder`] never reads the environment;
/// [`BedrockAgentCoreBuilder::from_env`] starts from the standard AWS chain. Give it an SDK client
/// ([`client`](Self::client)) or an SDK configuration ([`sdk_config`](Self::sdk_config)); every other knob has
/// a default.
#[derive(Clone)]
pub struct BedrockAgentCoreBuilder {
    client: Option<Client>,
    control: Option<aws_sdk_bedrockagentcorecontrol::Client>,
    provisioning: ProvisionSettings,
    http: HttpSettings,
    /// Whether [`HttpSettings::options`] was set, and so is applied to the SDK clients.
    http_options_set: bool,
    qualifier: Option<String>,
    recorder: Option<Recorder>,
}

impl Default for BedrockAgentCoreBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Shows every setting, but of the SDK clients only whether they are set (their configuration holds the
/// credentials provider).
impl fmt::Debug for BedrockAgentCoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BedrockAgentCoreBuilder")
            .field("client", &self.client.as_ref().map(|_| "…"))
            .field("control_client", &self.control.as_ref().map(|_| "…"))
            .field("provisioning", &self.provisioning)
            .field("http", &self.http)
            .field("qualifier", &self.qualifier)
            .field("recorder", &self.recorder)
            .finish()
    }
}

impl BedrockAgentCore {
    /// A builder; it never reads the environment.
    pub fn builder() -> BedrockAgentCoreBuilder {
        BedrockAgentCoreBuilder::new()
    }

    /// A provider configured by the standard AWS chain (environment, profile, web identity, container, IMDS;
    /// region from `AWS_REGION` / the profile), so endpoints follow the region; TLS is rustls with ring. Fails
    /// with [`Error::InvalidOption`] (`region`) when the chain yields no region. For other settings, start from
    /// [`BedrockAgentCoreBuilder::from_env`].
    pub async fn from_env() -> Result<Self, Error> {
        BedrockAgentCoreBuilder::from_env().await.build()
    }
}

/// Our HTTPS client: rustls with ring (no aws-lc build).
fn https_client() -> aws_sdk_bedrockagentcore::config::SharedHttpClient {
    let tls =
        aws_smithy_http_client::tls::Provider::Rustls(aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring);
    aws_smithy_http_client::Builder::new().tls_provider(tls).build_https()
}

/// `timeouts` (the SDK's timeout configuration, if any) with `connect` as its connect timeout.
fn connect_timeout(
    timeouts: Option<&aws_smithy_types::timeout::TimeoutConfig>,
    connect: Duration,
) -> aws_smithy_types::timeout::TimeoutConfig {
    let builder = timeouts.map_or_else(aws_smithy_types::timeout::TimeoutConfig::builder, |t| t.to_builder());
    builder.connect_timeout(connect).build()
}

impl BedrockAgentCoreBuilder {
    /// An empty builder: nothing is read from the environment.
    pub fn new() -> Self {
        Self {
            client: None,
            control: None,
            provisioning: ProvisionSettings::default(),
            http: DEFAULT_HTTP_SETTINGS,
            http_options_set: false,
            qualifier: None,
            recorder: None,
        }
    }

    /// A builder whose clients (data and control plane) are configured by the standard AWS chain (see
    /// [`BedrockAgentCore::from_env`]), with the SDK's own retries off, and whose provisioning execution role is
    /// `AGENTCORE_EXECUTION_ROLE_ARN` when set.
    pub async fn from_env() -> Self {
        // Our own retries decide what is worth repeating; the SDK's would multiply them.
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(https_client())
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .load()
            .await;
        let builder = Self::new().sdk_config(&config);
        match env_var("AGENTCORE_EXECUTION_ROLE_ARN") {
            Some(role) => builder.provisioning(ProvisionSettings::default().with_execution_role_arn(role)),
            None => builder,
        }
    }

    /// The SDK client to call through, used as given: disable its retries (`RetryConfig::disabled()`), the
    /// provider retries what is worth retrying. Replaces an earlier [`sdk_config`](Self::sdk_config).
    #[must_use]
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Builds both SDK clients (data plane and control plane) from a shared AWS configuration (credentials,
    /// region, endpoint …), with the SDK's retries off, and rustls with ring when the configuration names no HTTP
    /// client. Replaces an earlier [`client`](Self::client) and [`control_client`](Self::control_client).
    #[must_use]
    pub fn sdk_config(mut self, config: &aws_config::SdkConfig) -> Self {
        let http = config.http_client().is_none().then(https_client);
        let mut data = aws_sdk_bedrockagentcore::config::Builder::from(config)
            .retry_config(aws_sdk_bedrockagentcore::config::retry::RetryConfig::disabled());
        let mut control = aws_sdk_bedrockagentcorecontrol::config::Builder::from(config)
            .retry_config(aws_sdk_bedrockagentcorecontrol::config::retry::RetryConfig::disabled());
        if let Some(http) = http {
            data = data.http_client(http.clone());
            control = control.http_client(http);
        }
        self.client = Some(Client::from_conf(data.build()));
        self.control = Some(aws_sdk_bedrockagentcorecontrol::Client::from_conf(control.build()));
        self
    }

    /// The control-plane SDK client harness provisioning calls (`CreateHarness`, `GetHarness`, `ListHarnesses`,
    /// `DeleteHarness`), used as given. Without one (and without [`sdk_config`](Self::sdk_config)) provisioning
    /// fails with [`Error::InvalidOption`] (`control_client`); sessions do not need it.
    #[must_use]
    pub fn control_client(mut self, client: aws_sdk_bedrockagentcorecontrol::Client) -> Self {
        self.control = Some(client);
        self
    }

    /// How harnesses are provisioned: execution role, one wall-clock budget per call, poll intervals, request
    /// and rollback timeouts, listing page size (checked with [`ProvisionSettings::validate`]).
    #[must_use]
    pub fn provisioning(mut self, settings: ProvisionSettings) -> Self {
        self.provisioning = settings;
        self
    }

    /// The longest wait for `InvokeHarness` to answer, up to its response head (default 300 s,
    /// [`DEFAULT_HTTP_SETTINGS`]; must not be zero). A timed-out call is retried like a connection failure.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.request_timeout(timeout);
        self
    }

    /// The longest silence on an event stream before the call counts as stalled (default 300 s,
    /// [`DEFAULT_HTTP_SETTINGS`]; must not be zero). The SDK applies none to `InvokeHarness`; this is not a wall
    /// clock.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.http = self.http.idle_timeout(timeout);
        self
    }

    /// Retries of one turn (default: 2 retries from 500 ms, [`DEFAULT_HTTP_SETTINGS`]; checked with
    /// [`RetryPolicy::validate`]): a stream cut short (no `messageStop`) and transient service errors
    /// (throttling, internal errors, connection failures). Validation errors and in-stream exceptions are never
    /// retried.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.http = self.http.retry(retry);
        self
    }

    /// How the SDK clients connect: [`HttpOptions::connect_timeout`] becomes the connect timeout of both SDK
    /// clients (their other timeouts stay). `max_idle_per_host` and `version` are not applied: the SDK's HTTP
    /// client keeps its own idle pool and HTTP version. Unset, the SDK keeps its own connect timeout.
    #[must_use]
    pub fn http_options(mut self, options: HttpOptions) -> Self {
        self.http = self.http.options(options);
        self.http_options_set = true;
        self
    }

    /// All the HTTP settings at once (default [`DEFAULT_HTTP_SETTINGS`]), as the setters above apply them (the
    /// options as [`http_options`](Self::http_options) does); checked by [`build`](Self::build).
    #[must_use]
    pub fn http_settings(mut self, settings: HttpSettings) -> Self {
        self.http = settings;
        self.http_options_set = true;
        self
    }

    /// The endpoint qualifier: the harness endpoint every invocation reaches, and the one provisioning waits for
    /// (default: none is sent, and the service uses
    /// [`DEFAULT_ENDPOINT_NAME`](crate::provision::DEFAULT_ENDPOINT_NAME)).
    /// Checked by [`build`](Self::build) against the service's endpoint name rule (1 to 48 characters,
    /// `[a-zA-Z][a-zA-Z0-9_]*`).
    #[must_use]
    pub fn qualifier(mut self, qualifier: impl Into<String>) -> Self {
        self.qualifier = Some(qualifier.into());
        self
    }

    /// Records every exchange of the data-plane client (`InvokeHarness` and the calls a session makes) into
    /// `recorder`, at the SDK's HTTP layer: the signed request as sent (its signature, access key id and
    /// session token redacted when the recording is kept) and each event-stream message as it arrived. For
    /// replaying the session offline through [`emulator::replay`](crate::emulator) or `managed-agents replay`.
    /// Off by default; recording never changes what the session does.
    #[must_use]
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Builds the provider. Fails with [`Error::InvalidOption`] without a client or SDK configuration
    /// (`client`), when the client has no region (`region`: requests could not be signed), with a zero timeout
    /// (`request_timeout`, `idle_timeout`), an invalid retry policy (`retry`) or connect timeout (`http_options`),
    /// a qualifier outside the endpoint name rule (`qualifier`), or invalid provisioning settings.
    pub fn build(self) -> Result<BedrockAgentCore, Error> {
        let client = self.client.ok_or_else(|| {
            Error::invalid_option("client", "no SDK client or configuration given (set one, or use from_env)")
        })?;
        if client.config().region().is_none() {
            return Err(Error::invalid_option(
                "region",
                "the SDK configuration has no region (set AWS_REGION, a profile region, or one on the config)",
            ));
        }
        self.http.validate()?;
        self.provisioning.validate()?;
        if let Some(qualifier) = &self.qualifier {
            validate_endpoint_name(qualifier)?;
        }
        let (mut client, mut control) = (client, self.control);
        if self.http_options_set {
            let connect = self.http.options.connect_timeout;
            let config = client.config();
            let timeouts = connect_timeout(config.timeout_config(), connect);
            client = Client::from_conf(config.to_builder().timeout_config(timeouts).build());
            control = control.map(|control| {
                let config = control.config();
                let timeouts = connect_timeout(config.timeout_config(), connect);
                aws_sdk_bedrockagentcorecontrol::Client::from_conf(config.to_builder().timeout_config(timeouts).build())
            });
        }
        if let Some(recorder) = self.recorder {
            let config = client.config();
            let inner = config.http_client().unwrap_or_else(https_client);
            client = Client::from_conf(
                config.to_builder().http_client(RecordingHttpClient::shared(inner, recorder)).build(),
            );
        }
        Ok(BedrockAgentCore {
            client,
            control,
            settings: Settings { http: self.http, qualifier: self.qualifier },
            provisioning: self.provisioning,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Client {
        let config = aws_sdk_bedrockagentcore::Config::builder()
            .behavior_version(aws_sdk_bedrockagentcore::config::BehaviorVersion::latest())
            .region(aws_sdk_bedrockagentcore::config::Region::new("us-east-1"))
            .build();
        Client::from_conf(config)
    }

    #[test]
    fn the_connect_timeout_reaches_the_sdk_only_when_set() {
        let untouched = BedrockAgentCore::builder().client(client()).build().unwrap();
        assert_eq!(untouched.client().config().timeout_config().and_then(|t| t.connect_timeout()), None);
        let options = HttpOptions::new().connect_timeout(Duration::from_millis(1500));
        let provider = BedrockAgentCore::builder().client(client()).http_options(options).build().unwrap();
        let timeouts = provider.client().config().timeout_config().cloned();
        assert_eq!(timeouts.and_then(|t| t.connect_timeout()), Some(Duration::from_millis(1500)));
        assert_eq!(provider.http_settings().options, options);
        let zero = BedrockAgentCore::builder().client(client()).http_options(options.connect_timeout(Duration::ZERO));
        assert!(matches!(zero.build(), Err(Error::InvalidOption { option: "http_options", .. })));
    }

    #[test]
    fn the_defaults_are_todays_and_the_builder_clones_and_hides_its_clients() {
        let builder = BedrockAgentCore::builder().client(client()).idle_timeout(Duration::from_secs(7));
        let provider = builder.clone().build().unwrap();
        assert_eq!(provider.http_settings(), DEFAULT_HTTP_SETTINGS.idle_timeout(Duration::from_secs(7)));
        let defaults = (DEFAULT_HTTP_SETTINGS.request_timeout, DEFAULT_HTTP_SETTINGS.retry.max_retries);
        assert_eq!(defaults, (Duration::from_secs(300), 2));
        let shown = format!("{builder:?}");
        assert!(shown.contains("client: Some(\"…\")") && !shown.contains("Region"), "{shown}");
    }
}
