//! Opening one MCP session over a [`Transport`]: spawning the child or reaching the URL, and the handshake.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use managed_agents_core::Error;
use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use crate::failure;
use crate::stderr::StderrLines;
use crate::transport::{Http, Stdio, Transport};

/// A live MCP session.
pub(crate) type Session = RunningService<RoleClient, Listener>;

/// A live session and, over stdio, the id of the server's process.
pub(crate) struct Opened {
    pub(crate) session: Session,
    pub(crate) pid: Option<u32>,
}

/// Our side of an MCP session: it answers the server's `notifications/tools/list_changed` by calling
/// `on_tools_changed` (which must not wait on the session: the notification is handled on its loop).
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) on_tools_changed: Arc<dyn Fn() + Send + Sync>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        (self.on_tools_changed)();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }
}

/// Opens a session with the server `name` over `transport`; a stdio server's standard error goes to `stderr`
/// when given (inherited otherwise).
pub(crate) async fn open(
    name: &str,
    transport: &Transport,
    listener: Listener,
    stderr: Option<&StderrLines>,
) -> Result<Opened, Error> {
    match transport {
        Transport::Stdio(stdio) => open_stdio(name, stdio, listener, stderr).await,
        Transport::Http(http) => open_http(name, http, listener).await,
    }
}

async fn open_stdio(
    name: &str,
    stdio: &Stdio,
    listener: Listener,
    stderr: Option<&StderrLines>,
) -> Result<Opened, Error> {
    let mut command = tokio::process::Command::new(&stdio.program);
    command.args(&stdio.args).envs(&stdio.env).kill_on_drop(true);
    if let Some(cwd) = &stdio.cwd {
        command.current_dir(cwd);
    }
    // A process group of its own: the terminal's Ctrl-C (SIGINT) and Ctrl-\ reach our group, not the server.
    #[cfg(unix)]
    command.process_group(0);
    let mut builder = TokioChildProcess::builder(command);
    if stderr.is_some() {
        builder = builder.stderr(std::process::Stdio::piped());
    }
    let (child, piped) = builder.spawn().map_err(|error| failure::not_started(name, stdio, &error))?;
    if let (Some(lines), Some(piped)) = (stderr, piped) {
        lines.forward(piped);
    }
    let pid = child.id();
    let session = listener.serve(child).await.map_err(|error| failure::stdio_handshake(name, stdio, &error))?;
    Ok(Opened { session, pid })
}

async fn open_http(name: &str, http: &Http, listener: Listener) -> Result<Opened, Error> {
    failure::check_url(name, &http.url)?;
    let mut headers = HashMap::new();
    for (key, value) in &http.headers {
        let key = http::HeaderName::try_from(key.as_str()).map_err(|_| {
            Error::invalid_option("headers", format!("MCP server `{name}`: `{key}` is not a header name"))
        })?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|_| {
            Error::invalid_option("headers", format!("MCP server `{name}`: the value of `{key}` is not a header value"))
        })?;
        headers.insert(key, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str()).custom_headers(headers);
    config.retry_config = Arc::new(FewResumes);
    if let Some(token) = &http.bearer_token {
        config = config.auth_header(token.as_str());
    }
    let transport = StreamableHttpClientTransport::with_client(http_client(name)?, config);
    let session = listener.serve(transport).await.map_err(|error| failure::http_handshake(name, &http.url, &error))?;
    Ok(Opened { session, pid: None })
}

/// How often an interrupted response stream is resumed before the call fails: a few times, quickly. (rmcp's
/// default resumes forever, so a call to a server that died would wait for its time limit.) The session is then
/// reconnected for the next call under the server's [`RestartPolicy`](crate::RestartPolicy).
#[derive(Debug)]
struct FewResumes;

impl SseRetryPolicy for FewResumes {
    fn retry(&self, tries: usize) -> Option<Duration> {
        (tries < 3).then(|| Duration::from_millis(100 << tries))
    }
}

/// A reqwest client whose TLS is rustls with the `ring` provider and the Mozilla roots (as the rest of the
/// workspace), so no second crypto library is built.
fn http_client(name: &str) -> Result<reqwest::Client, Error> {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|error| Error::transport(format!("MCP server `{name}`: TLS configuration"), error))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|error| Error::transport(format!("MCP server `{name}`: HTTP client"), error))
}
