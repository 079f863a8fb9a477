//! Tool names as the providers accept them: `^[a-zA-Z0-9_-]{1,64}$`, made from a prefix and the server's name
//! for the tool, deterministically.

/// The longest tool name Claude and OpenAI accept.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// The characters a provider accepts in a tool name; any other becomes `_`.
fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// A 64-bit FNV-1a hash: small, stable across builds and platforms (unlike `std`'s hasher).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The name the model sees for the server's tool `remote`: `prefix` + `remote`, with every character a provider
/// refuses replaced by `_`. A name longer than [`MAX_NAME_LEN`] is cut and ends with `_` and 8 hex digits of a
/// hash of the whole unsanitized name, so two long names that share their beginning stay apart.
pub(crate) fn tool_name(prefix: &str, remote: &str) -> String {
    let full = format!("{prefix}{remote}");
    let name = sanitize(&full);
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let suffix = format!("_{:08x}", fnv1a(&full) as u32);
    // Sanitized names are ASCII, so any byte index is a character boundary.
    format!("{}{suffix}", &name[..MAX_NAME_LEN - suffix.len()])
}

/// The default prefix for a server named `server`: `<server>__`.
pub(crate) fn default_prefix(server: &str) -> String {
    format!("{server}__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_name_is_prefixed_as_it_is() {
        assert_eq!(tool_name("time__", "get_current_time"), "time__get_current_time");
    }

    #[test]
    fn characters_providers_refuse_become_underscores() {
        assert_eq!(tool_name("my server.", "files/read é"), "my_server_files_read__");
    }

    #[test]
    fn a_long_name_is_cut_to_64_with_a_stable_hash() {
        let a = tool_name("p__", &"x".repeat(100));
        let b = tool_name("p__", &format!("{}y", "x".repeat(99)));
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_eq!(b.len(), MAX_NAME_LEN);
        assert_ne!(a, b, "names that share their first 64 characters stay apart");
        assert_eq!(a, tool_name("p__", &"x".repeat(100)), "the same input gives the same name");
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}
