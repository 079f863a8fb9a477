//! Failures told in words for people: the cause at the bottom of an error chain without the Rust type names
//! libraries put in their messages, and a URL without the parts that may hold secrets.

use std::error::Error as StdError;

/// What went wrong at the bottom of `error`'s chain, in words: the innermost cause whose text names no Rust type
/// (no `<` and no `path::Type`), with an operating-system error's number dropped (`connection refused`, not
/// `Connection refused (os error 111)`). A [`std::io::Error`] that wraps another error is looked through. When no
/// cause reads like words, `"an unexpected error"`.
pub fn cause_in_words(error: &(dyn StdError + 'static)) -> String {
    let mut words = None;
    let mut current = Some(error);
    while let Some(cause) = current {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.get_ref() {
                Some(inner) => {
                    current = Some(inner);
                    continue;
                }
                None => {
                    words = Some(without_os_error_number(&io.to_string()).to_string());
                    break;
                }
            }
        }
        let text = cause.to_string();
        if !text.trim().is_empty() && !names_a_rust_type(&text) {
            words = Some(text);
        }
        current = cause.source();
    }
    words.map_or_else(|| "an unexpected error".to_string(), |text| lowercase_first(text.trim()))
}

/// `url` for messages and logs: `scheme://host[:port]/path`, without user information (`user:password@`), query
/// string or fragment, which may hold secrets. Text that is not an absolute URL loses only its query and fragment.
pub fn redacted_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    format!("{scheme}://{host}{path}")
}

/// Whether `text` holds a Rust type: a generic (`<`) or a path such as `rmcp::transport` (an IPv6 address's
/// `[::1]` is not one).
fn names_a_rust_type(text: &str) -> bool {
    text.contains('<')
        || text.match_indices("::").any(|(at, _)| {
            text[..at].chars().next_back().is_some_and(|before| before.is_alphanumeric() || before == '_')
        })
}

/// `text` without a trailing ` (os error N)`.
fn without_os_error_number(text: &str) -> &str {
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => text,
    }
}

/// `text` with its first letter in lower case, unless it starts an acronym (`TLS`, `DNS`).
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), second) if first.is_uppercase() && !second.is_some_and(char::is_uppercase) => {
            first.to_lowercase().chain(text[first.len_utf8()..].chars()).collect()
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;

    #[derive(Debug)]
    struct Wrapper(&'static str, Option<Box<dyn StdError + Send + Sync>>);

    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.1.as_deref().map(|source| source as &(dyn StdError + 'static))
        }
    }

    #[test]
    fn the_innermost_cause_is_told_without_type_names_or_error_numbers() {
        let os = std::io::Error::from_raw_os_error(111);
        assert!(os.to_string().contains("(os error 111)"), "{os}");
        let chain = Wrapper(
            "Transport [rmcp::Worker<Client>] error",
            Some(Box::new(Wrapper("tcp connect error", Some(Box::new(os))))),
        );
        assert_eq!(cause_in_words(&chain), "connection refused");
        let inner = std::io::Error::other(Wrapper("invalid peer certificate: UnknownIssuer", None));
        let chain = Wrapper("client error (Connect)", Some(Box::new(inner)));
        assert_eq!(cause_in_words(&chain), "invalid peer certificate: UnknownIssuer");
        let rusty = Wrapper("outer words", Some(Box::new(Wrapper("Error<reqwest::Error>", None))));
        assert_eq!(cause_in_words(&rusty), "outer words");
        assert_eq!(cause_in_words(&Wrapper("core::fmt::Error", None)), "an unexpected error");
        assert_eq!(cause_in_words(&Wrapper("TLS handshake failed", None)), "TLS handshake failed");
        assert_eq!(cause_in_words(&Wrapper("no route to [::1]:9", None)), "no route to [::1]:9");
    }

    #[test]
    fn urls_lose_their_user_information_query_and_fragment() {
        assert_eq!(redacted_url("https://user:pw@example.com:8443/v1/x?key=secret#f"), "https://example.com:8443/v1/x");
        assert_eq!(redacted_url("http://127.0.0.1:9?token=1"), "http://127.0.0.1:9");
        assert_eq!(redacted_url("http://[::1]:9/mcp"), "http://[::1]:9/mcp");
        assert_eq!(redacted_url("notaurl?x=1"), "notaurl");
    }
}
