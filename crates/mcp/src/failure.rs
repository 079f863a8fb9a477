//! Why a server could not be started or reached, in words for people: rmcp's errors name Rust types
//! (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`), so the cause under them is found and told
//! instead, and none of them is kept as a source.

use std::error::Error as StdError;

use managed_agents_core::{Error, cause_in_words, redacted_url};
use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::transport::Stdio;

/// Checks `url` before anything is sent: an absolute `http` or `https` URL with a host. The option is `url`.
pub(crate) fn check_url(name: &str, url: &str) -> Result<(), Error> {
    match url.parse::<http::Uri>() {
        Ok(uri) if matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|h| !h.is_empty()) => {
            Ok(())
        }
        _ => Err(Error::invalid_option(
            "url",
            format!("MCP server `{name}`: `{}` is not an http(s) URL", redacted_url(url)),
        )),
    }
}

/// The program of `stdio` could not be started.
pub(crate) fn not_started(name: &str, stdio: &Stdio, error: &std::io::Error) -> Error {
    let hint = match error.kind() {
        std::io::ErrorKind::NotFound => " (is it installed and on PATH?)",
        std::io::ErrorKind::PermissionDenied => " (is it executable?)",
        _ => "",
    };
    Error::transport_message(format!(
        "MCP server `{name}`: could not start `{}`: {}{hint}",
        stdio.command_line(),
        cause_in_words(error)
    ))
}

/// The stdio server started but did not complete the handshake.
pub(crate) fn stdio_handshake(name: &str, stdio: &Stdio, error: &ClientInitializeError) -> Error {
    let what = match error {
        ClientInitializeError::ConnectionClosed(_) => "it exited before the MCP handshake".to_string(),
        ClientInitializeError::TransportError { error, .. } if io_kind(&*error.error).is_some_and(closed) => {
            "it exited before the MCP handshake".to_string()
        }
        other => handshake_failure(other),
    };
    Error::transport_message(format!("MCP server `{name}` (`{}`): {what}", stdio.command_line()))
}

/// The HTTP server could not be reached, or did not complete the handshake.
pub(crate) fn http_handshake(name: &str, url: &str, error: &ClientInitializeError) -> Error {
    let url = redacted_url(url);
    if let ClientInitializeError::TransportError { error, .. } = error
        && let Some(request) = reqwest_error(&*error.error)
    {
        let cause = cause_in_words(request);
        return if request.is_connect() {
            Error::connect_message(format!("MCP server `{name}`: could not connect to {url}: {cause}"))
        } else if request.is_timeout() {
            Error::transport_message(format!("MCP server `{name}`: {url} did not answer in time: {cause}"))
        } else {
            Error::transport_message(format!("MCP server `{name}`: the request to {url} failed: {cause}"))
        };
    }
    Error::transport_message(format!("MCP server `{name}` ({url}): {}", handshake_failure(error)))
}

/// What went wrong in a handshake that was not lost to a closed connection.
fn handshake_failure(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::JsonRpcError(data) => format!("the server refused the MCP handshake: {}", data.message),
        ClientInitializeError::ExpectedInitResponse(_) | ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered the MCP handshake with something else than its initialize result".to_string()
        }
        ClientInitializeError::ConnectionClosed(_) => "the connection closed during the MCP handshake".to_string(),
        ClientInitializeError::TransportError { error, .. } => {
            format!("the MCP handshake failed: {}", transport_failure(&*error.error))
        }
        other => format!("the MCP handshake failed: {}", cause_in_words(other)),
    }
}

/// Why a request of a live session failed, in words (for [`ServiceError`]s that are not the server's own
/// answer).
pub(crate) fn service_failure(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(transport) => transport_failure(&*transport.error),
        ServiceError::TransportClosed => "the connection closed".to_string(),
        ServiceError::Cancelled { .. } => "the request was cancelled".to_string(),
        other => cause_in_words(other),
    }
}

/// The cause of a transport's error in words: of the reqwest error under it for HTTP.
fn transport_failure(error: &(dyn StdError + 'static)) -> String {
    reqwest_error(error).map_or_else(|| cause_in_words(error), |request| cause_in_words(request))
}

/// The reqwest error under an HTTP transport's error: rmcp wraps it in `StreamableHttpError::Client` without
/// making it the source.
fn reqwest_error<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a reqwest::Error> {
    let mut current = Some(error);
    while let Some(cause) = current {
        if let Some(request) = cause.downcast_ref::<reqwest::Error>() {
            return Some(request);
        }
        if let Some(StreamableHttpError::Client(request)) = cause.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(request);
        }
        current = cause.source();
    }
    None
}

/// The kind of the first I/O error in `error`'s chain.
fn io_kind(error: &(dyn StdError + 'static)) -> Option<std::io::ErrorKind> {
    let mut current = Some(error);
    while let Some(cause) = current {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        current = cause.source();
    }
    None
}

/// Whether an I/O error of `kind` means the other end went away.
fn closed(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
    )
}
