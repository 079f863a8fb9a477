//! Who may use the console: the token (a bearer header, or a sign-in that starts a browser session), and the
//! checks that keep other sites from acting with a signed-in browser (CSRF token, same origin).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::builder::Console;
use crate::problem::Problem;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "managed_agents_console";
/// The header a browser's changes carry the session's CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// How long a browser session lasts.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The most browser sessions kept at once (the oldest goes first).
const MAX_SESSIONS: usize = 256;

/// The signed-in browser sessions: session id → its CSRF token and when it ends.
#[derive(Default)]
pub(crate) struct Sessions(Mutex<HashMap<String, BrowserSession>>);

#[derive(Clone)]
pub(crate) struct BrowserSession {
    /// The session id (the cookie's value).
    pub(crate) id: String,
    pub(crate) csrf: String,
    started: Instant,
}

impl Sessions {
    /// A new session; returns its id.
    pub(crate) fn start(&self) -> Result<String, Problem> {
        let id = random_hex()?;
        let session = BrowserSession { id: id.clone(), csrf: random_hex()?, started: Instant::now() };
        let mut sessions = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, session| session.started.elapsed() < SESSION_LIFETIME);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, session)| session.started).map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), session);
        Ok(id)
    }

    /// The live session `id` (compared in constant time with each one kept).
    fn find(&self, id: &str) -> Option<BrowserSession> {
        let sessions = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut found = None;
        for (known, session) in sessions.iter() {
            if same(known, id) && session.started.elapsed() < SESSION_LIFETIME {
                found = Some(session.clone());
            }
        }
        found
    }

    /// Whether session `id` is still signed in (not signed out, not expired).
    pub(crate) fn alive(&self, id: &str) -> bool {
        self.find(id).is_some()
    }

    fn end(&self, id: &str) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).retain(|known, _| !same(known, id));
    }
}

/// 32 random bytes from the operating system, in hex.
fn random_hex() -> Result<String, Problem> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| Problem::internal(format!("no randomness: {error}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether `a` and `b` are the same, in time that says nothing about where they differ (or their lengths: both
/// are hashed first).
pub(crate) fn same(a: &str, b: &str) -> bool {
    Sha256::digest(a.as_bytes()).ct_eq(&Sha256::digest(b.as_bytes())).into()
}

/// How a request proved who it is.
#[derive(Clone)]
pub(crate) enum Caller {
    /// `Authorization: Bearer <token>`: an API client, which no other site can make a browser send.
    Bearer,
    /// A signed-in browser.
    Browser(BrowserSession),
}

impl Caller {
    /// The browser session's id, if the caller is a browser.
    pub(crate) fn session_id(&self) -> Option<&str> {
        match self {
            Self::Bearer => None,
            Self::Browser(session) => Some(&session.id),
        }
    }

    /// The CSRF token the page embeds (a browser's), if any.
    pub(crate) fn csrf(&self) -> Option<&str> {
        match self {
            Self::Bearer => None,
            Self::Browser(session) => Some(&session.csrf),
        }
    }
}

/// The value of cookie `name` in `headers`.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// Who the request is from, when it proved it.
fn caller(console: &Console, headers: &HeaderMap) -> Option<Caller> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if let Some(token) = bearer {
        return same(token.trim(), console.inner.token.expose()).then_some(Caller::Bearer);
    }
    let session = cookie(headers, COOKIE)?;
    console.inner.sessions.find(session).map(Caller::Browser)
}

/// Whether a browser's request comes from the console's own pages. `Sec-Fetch-Site`, which every current
/// browser sends and no page can forge, decides when present (so a console behind a proxy that rewrites `Host`
/// works); else an `Origin` must name the host the request was sent to (`authority`: the `Host` header, or the
/// request's authority over HTTP/2). A request that sends neither passes: browsers send one of them on every
/// cross-site POST.
pub(crate) fn same_origin(headers: &HeaderMap, authority: Option<&str>) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.to_str(), Ok("same-origin" | "none"));
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let host = headers.get(header::HOST).and_then(|value| value.to_str().ok()).or(authority);
    let origin = origin.to_str().ok().and_then(|origin| origin.split_once("://").map(|(_, rest)| rest));
    matches!((origin, host), (Some(origin), Some(host)) if origin == host)
}

/// Every route but the sign-in and the static files: the caller must prove who it is, a browser's changes must
/// carry its CSRF token and come from the console's origin, and a read-only console refuses changes.
pub(crate) async fn guard(State(console): State<Console>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let Some(caller) = caller(&console, headers) else {
        let wants_page = request.uri().path() == "/" && request.method() == Method::GET;
        return if wants_page {
            Redirect::to("/login").into_response()
        } else {
            Problem::new(StatusCode::UNAUTHORIZED, "unauthorized", "sign in, or send Authorization: Bearer <token>")
                .into_response()
        };
    };
    let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
    if changes {
        if let Caller::Browser(session) = &caller {
            let sent = headers.get(CSRF_HEADER).and_then(|value| value.to_str().ok()).unwrap_or_default();
            let authority = request.uri().authority().map(|authority| authority.as_str());
            if !same(sent, &session.csrf) || !same_origin(headers, authority) {
                return Problem::new(StatusCode::FORBIDDEN, "csrf", "the request did not come from the console's page")
                    .into_response();
            }
        }
        if console.inner.read_only && request.uri().path() != "/logout" {
            return Problem::new(StatusCode::FORBIDDEN, "read_only", "this console is read-only").into_response();
        }
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

/// The sign-in form's fields.
#[derive(serde::Deserialize)]
pub(crate) struct SignIn {
    token: String,
}

/// `POST /login`: the token right, a session cookie and the page; wrong, the form again.
pub(crate) async fn sign_in(
    State(console): State<Console>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    axum::Form(form): axum::Form<SignIn>,
) -> Response {
    if !same_origin(&headers, uri.authority().map(|authority| authority.as_str())) {
        return Problem::new(StatusCode::FORBIDDEN, "csrf", "sign in from the console's own page").into_response();
    }
    if !same(form.token.trim(), console.inner.token.expose()) {
        tracing::warn!("a console sign-in with a wrong token");
        return (StatusCode::UNAUTHORIZED, crate::page::login(Some("That token is not the console's.")))
            .into_response();
    }
    let session = match console.inner.sessions.start() {
        Ok(session) => session,
        Err(problem) => return problem.into_response(),
    };
    let cookie =
        format!("{COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}", SESSION_LIFETIME.as_secs());
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// `POST /logout`: ends the browser's session.
pub(crate) async fn sign_out(State(console): State<Console>, headers: HeaderMap) -> Response {
    if let Some(session) = cookie(&headers, COOKIE) {
        console.inner.sessions.end(session);
    }
    let expired = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    ([(header::SET_COOKIE, expired)], Redirect::to("/login")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_equal_only_when_equal() {
        assert!(same("a-token-of-some-length", "a-token-of-some-length"));
        assert!(!same("a-token-of-some-length", "a-token-of-some-lengtH"));
        assert!(!same("a-token", "a-token-of-some-length"));
        assert!(!same("", "x"));
    }

    #[test]
    fn an_origin_must_be_the_host() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&headers, None), "no Origin: not a cross-site browser request");
        headers.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&headers, None));
        headers.insert(header::ORIGIN, "http://evil.test".parse().unwrap());
        assert!(!same_origin(&headers, None));
        headers.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        headers.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(!same_origin(&headers, None), "the browser's word decides");
        // Behind a proxy that rewrites Host, the browser's word is enough.
        headers.insert(header::ORIGIN, "https://console.example".parse().unwrap());
        headers.insert("sec-fetch-site", "same-origin".parse().unwrap());
        assert!(same_origin(&headers, None));
        // Over HTTP/2 there is no Host header: the request's authority counts.
        let mut h2 = HeaderMap::new();
        h2.insert(header::ORIGIN, "http://127.0.0.1:8080".parse().unwrap());
        assert!(same_origin(&h2, Some("127.0.0.1:8080")));
        assert!(!same_origin(&h2, Some("127.0.0.1:9090")));
        assert!(!same_origin(&h2, None));
    }
}
