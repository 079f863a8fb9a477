//! The page: a static bundle in `assets/` (plain HTML, CSS and JavaScript, no build step), served with a
//! Content Security Policy that runs only its own script; the sign-in form; the security headers every answer
//! carries.

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

use crate::auth::Caller;
use crate::builder::Console;

const INDEX: &str = include_str!("../assets/index.html");
const LOGIN: &str = include_str!("../assets/login.html");
const SCRIPT: &str = include_str!("../assets/console.js");
const STYLE: &str = include_str!("../assets/console.css");

/// What the page may load and run: its own script and style, requests to its own origin, nothing inline.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; \
                      form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `GET /`: the page, with the browser session's CSRF token and the console's mode in its `<meta>` tags (hex
/// digits and a word: nothing that needs escaping).
pub(crate) async fn index(State(console): State<Console>, Extension(caller): Extension<Caller>) -> Response {
    let csrf = caller.csrf().unwrap_or_default();
    let mode = if console.is_read_only() { "read-only" } else { "read-write" };
    Html(INDEX.replace("{{csrf}}", csrf).replace("{{mode}}", mode)).into_response()
}

/// The sign-in form, with `error` (a fixed text of ours) when the last try failed.
pub(crate) fn login(error: Option<&'static str>) -> Html<String> {
    Html(LOGIN.replace("{{error}}", error.unwrap_or_default()))
}

/// `GET /login`.
pub(crate) async fn login_page() -> Html<String> {
    login(None)
}

/// `GET /assets/console.js`.
pub(crate) async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT).into_response()
}

/// `GET /assets/console.css`.
pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// Adds the security headers to every answer; only the static files may be kept (and revalidated): the page
/// holds its session's CSRF token, the API what the store holds.
pub(crate) async fn headers(request: Request, next: Next) -> Response {
    let asset = request.uri().path().starts_with("/assets/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    let cache = if asset { "no-cache" } else { "no-store" };
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}
