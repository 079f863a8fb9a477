//! The shell commands the artifacts run (see the [module documentation](super) for their shapes), and the
//! parsing of what they print.

use managed_agents_core::Error;
use managed_agents_core::artifacts::{Artifact, validate_artifact_name};

/// The exit code the commands use for "no such artifact" (`EX_NOINPUT` of `sysexits.h`).
pub(crate) const NOT_FOUND_EXIT: i32 = 66;

/// The prefix of the temporary files a put writes beside its artifact; listings leave them out.
pub const PARTIAL_PREFIX: &str = ".partial-";

/// `dir/name`, without doubling the slash of the root.
pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') { format!("{dir}{name}") } else { format!("{dir}/{name}") }
}

/// `text` as one single-quoted shell word: nothing inside is special, and a `'` becomes `'\''`.
pub(crate) fn shell_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        if c == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(c);
        }
    }
    quoted.push('\'');
    quoted
}

/// The put command for chunk `base64` (`first`: create the directory and the temporary file; `last`: rename it
/// into place).
pub(crate) fn put_command(dir: &str, temp: &str, path: &str, base64: &str, first: bool, last: bool) -> String {
    let (b64, temp_q) = (shell_quote(base64), shell_quote(temp));
    let mut command = if first {
        format!("mkdir -p {} && printf %s {b64} | base64 -d > {temp_q}", shell_quote(dir))
    } else {
        format!("printf %s {b64} | base64 -d >> {temp_q}")
    };
    if last {
        let path_q = shell_quote(path);
        command.push_str(&format!(" && [ ! -d {path_q} ] && mv -f {temp_q} {path_q}"));
    }
    command
}

/// The fetch command for `len` bytes from `offset`.
pub(crate) fn fetch_command(path: &str, offset: usize, len: usize) -> String {
    let path_q = shell_quote(path);
    let from = offset + 1;
    format!(
        "[ -f {path_q} ] || exit {NOT_FOUND_EXIT}; \
         stat -c '%i %s %Y' {path_q} && tail -c +{from} {path_q} | head -c {len} | base64"
    )
}

/// The list command for the mount.
pub(crate) fn list_command(mount: &str) -> String {
    let mount_q = shell_quote(mount);
    format!("[ -d {mount_q} ] || exit 0; find {mount_q} -type f -printf '%s\\t%P\\0'")
}

/// The delete command.
pub(crate) fn delete_command(path: &str) -> String {
    let path_q = shell_quote(path);
    format!("[ -f {path_q} ] || exit {NOT_FOUND_EXIT}; rm -f {path_q}")
}

/// Removes a put's temporary file.
pub(crate) fn cleanup_command(temp: &str) -> String {
    format!("rm -f {}", shell_quote(temp))
}

/// Output a command should not have printed, as an error that does not copy it.
pub(super) fn unexpected_output(operation: &'static str, detail: impl Into<String>) -> Error {
    Error::malformed(operation, detail, "")
}

/// What one fetch command printed: the file's identity (`inode size mtime`), its size and the chunk read.
pub(super) fn parse_fetch_output(stdout: &str) -> Result<(String, u64, Vec<u8>), Error> {
    let what = "artifact fetch output";
    let (identity, body) = stdout.split_once('\n').unwrap_or((stdout, ""));
    let identity = identity.trim();
    let mut fields = identity.split(' ');
    let size = match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(_), Some(size), Some(_), None) => size.parse::<u64>().ok(),
        _ => None,
    };
    let Some(size) = size else {
        return Err(unexpected_output(what, "the first line is not `<inode> <size> <mtime>`"));
    };
    let compact: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = aws_smithy_types::base64::decode(&compact)
        .map_err(|_| unexpected_output(what, format!("{} characters that are not base64", compact.len())))?;
    Ok((identity.to_string(), size, bytes))
}

/// What the list command printed: `<size>\t<relative path>\0` records, as artifacts whose id is their absolute
/// path.
pub(super) fn parse_listing(mount: &str, stdout: &str) -> Result<Vec<Artifact>, Error> {
    let mut found = Vec::new();
    for record in stdout.split('\0') {
        if record.trim().is_empty() {
            continue;
        }
        let Some((size, name)) = record.split_once('\t') else {
            return Err(unexpected_output("artifact listing", "a record is not `<size>\\t<path>`"));
        };
        let Ok(size) = size.trim().parse::<u64>() else {
            return Err(unexpected_output("artifact listing", "a record's size is not a number"));
        };
        let partial = name.rsplit('/').next().is_some_and(|file| file.starts_with(PARTIAL_PREFIX));
        // Files an artifact name cannot reach (a control character in the name …) are not artifacts.
        if partial || validate_artifact_name(name).is_err() {
            continue;
        }
        found.push(Artifact::new(name).with_size(size).with_id(join(mount, name)));
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_every_character_literal() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn fetch_output_is_parsed_or_refused_without_its_contents() {
        let (identity, size, bytes) = parse_fetch_output("12 5 1700\naGVs\nbG8=\n").unwrap();
        assert_eq!((identity.as_str(), size, bytes.as_slice()), ("12 5 1700", 5, &b"hello"[..]));
        for garbage in ["", "\n", "12 x 1\n", "1 2\n", "1 2 3 4\n", "1 2 3\nnot*base64", "1 2 3\naGk"] {
            match parse_fetch_output(garbage) {
                Err(Error::Malformed { raw, .. }) => assert!(raw.is_empty(), "{garbage:?}"),
                other => panic!("{garbage:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn listings_skip_partials_and_unreachable_names_and_sort() {
        let listed =
            parse_listing("/m", &["5\tz.txt", "3\ta/.partial-00ff", "1\tbad\u{7}name", "2\ta/b.txt", ""].join("\0"))
                .unwrap();
        let seen: Vec<(&str, Option<u64>, Option<&str>)> =
            listed.iter().map(|a| (a.name.as_str(), a.size, a.id.as_deref())).collect();
        assert_eq!(seen, [("a/b.txt", Some(2), Some("/m/a/b.txt")), ("z.txt", Some(5), Some("/m/z.txt"))]);
        assert!(parse_listing("/m", "").unwrap().is_empty());
        assert!(matches!(parse_listing("/m", "no tab\0"), Err(Error::Malformed { .. })));
        assert!(matches!(parse_listing("/m", "x\tname\0"), Err(Error::Malformed { .. })));
    }
}
