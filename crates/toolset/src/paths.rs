//! Path confinement: where the file tools may look and write.
//!
//! A path from the model is joined to the working directory when relative, `.` and `..` are folded as text,
//! and then every symlink on it is followed — the last component too, even when its target does not exist.
//! The tool works on that resolved path, and only when it lies inside the working directory or one of the
//! extra roots; a symlink that leads out is therefore refused rather than followed later. Components that do
//! not exist yet are kept as written, so a new file under new directories still resolves.

use std::io;
use std::path::{Component, Path, PathBuf};

/// How many symlinks a path may pass through while its missing tail is resolved by hand, before it counts as
/// a loop (the kernel's own limit for a single lookup is the same order).
const MAX_SYMLINK_HOPS: usize = 40;

/// The roots a toolset's file tools are confined to.
#[derive(Debug, Clone)]
pub(crate) struct Roots {
    /// The working directory, resolved when the toolset was built.
    pub(crate) workdir: PathBuf,
    /// Extra directories the tools may reach, the read-only roots among them (absolute; resolved again at
    /// each check).
    pub(crate) allowed: Vec<PathBuf>,
    /// Directories whose contents `write` and `edit` refuse to change (absolute; resolved at each check).
    pub(crate) read_only: Vec<PathBuf>,
}

impl Roots {
    /// Resolves the model's path `p`, or says why it is refused (the text follows `<tool>: `).
    pub(crate) fn resolve(&self, p: &str) -> Result<PathBuf, String> {
        if p.contains('\0') {
            return Err("embedded null byte".to_string());
        }
        let candidate = Path::new(p);
        let joined = if candidate.is_absolute() { candidate.to_path_buf() } else { self.workdir.join(candidate) };
        let full = canonicalize(&joined).map_err(|e| format!("path {}: {}", py_repr(p), fs_reason(&e)))?;
        if full.starts_with(&self.workdir) {
            return Ok(full);
        }
        let extra: Vec<PathBuf> =
            self.allowed.iter().map(|root| lenient(root)).filter(|root| !root.starts_with(&self.workdir)).collect();
        if extra.iter().any(|root| full.starts_with(root)) {
            return Ok(full);
        }
        // Only roots outside the working directory widen what the tools reach, and only they are mentioned.
        if extra.is_empty() {
            Err(format!("path {} is outside the session's working directory", py_repr(p)))
        } else {
            Err(format!(
                "path {} is outside the session's working directory and its other permitted directories",
                py_repr(p)
            ))
        }
    }

    /// Refuses a change to `target` (already resolved) under a read-only root.
    pub(crate) fn reject_read_only(&self, target: &Path, op: &str, file_path: &str) -> Result<(), String> {
        match self.read_only.iter().find(|root| target.starts_with(lenient(root))) {
            Some(root) => Err(format!("{op}: {file_path} is inside read-only directory {}", root.display())),
            None => Ok(()),
        }
    }
}

/// `path` with `.` and `..` folded as text (`a/../b` is `b` whatever `a` is) and repeated separators dropped.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

fn is_missing(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
}

fn symlink_loop() -> io::Error {
    io::Error::from_raw_os_error(rustix::io::Errno::LOOP.raw_os_error())
}

/// `path` (absolute) with `.`/`..` folded and every symlink followed, or the file system's error; never a
/// partly resolved path. Missing trailing components are kept as written; a dangling symlink met on the way
/// is read and followed by hand.
pub(crate) fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    let mut prefix = normalize(path);
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let mut hops = 0;
    loop {
        let unresolved = match std::fs::canonicalize(&prefix) {
            Ok(resolved) => {
                let mut full = resolved;
                full.extend(missing.iter().rev());
                return Ok(full);
            }
            Err(e) if is_missing(&e) => e,
            Err(e) => return Err(e),
        };
        let is_symlink = match std::fs::symlink_metadata(&prefix) {
            Ok(meta) => meta.file_type().is_symlink(),
            Err(e) => {
                let (Some(parent), Some(name)) = (prefix.parent(), prefix.file_name()) else { return Err(e) };
                if !is_missing(&e) {
                    return Err(e);
                }
                missing.push(name.to_os_string());
                prefix = parent.to_path_buf();
                continue;
            }
        };
        if !is_symlink {
            return Err(unresolved);
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err(symlink_loop());
        }
        let parent = match prefix.parent() {
            Some(parent) => std::fs::canonicalize(parent)?,
            None => PathBuf::from("/"),
        };
        let mut next = parent.join(std::fs::read_link(&prefix)?);
        next.extend(missing.drain(..).rev());
        prefix = normalize(&next);
    }
}

/// `path` resolved as far as it can be: a root the toolset was given, checked against as it resolves now.
pub(crate) fn lenient(path: &Path) -> PathBuf {
    canonicalize(path).unwrap_or_else(|_| normalize(path))
}

/// A file-system error as a short, host-independent phrase (no errno numbers, no host paths).
pub(crate) fn fs_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => return "no such file or directory".into(),
        io::ErrorKind::NotADirectory => return "not a directory".into(),
        io::ErrorKind::IsADirectory => return "is a directory".into(),
        io::ErrorKind::PermissionDenied => return "permission denied".into(),
        io::ErrorKind::AlreadyExists => return "file already exists".into(),
        _ => {}
    }
    if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        return "too many levels of symbolic links".into();
    }
    let text = e.to_string();
    // An OS error displays as `<strerror> (os error N)`: keep the words only.
    let words = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => text.as_str(),
    };
    if words.is_empty() { "i/o error".into() } else { words.to_lowercase() }
}

/// `<op>: <file_path>: <reason>`, the shape of every file-system failure a file tool reports.
pub(crate) fn fs_error(op: &str, file_path: &str, e: &io::Error) -> String {
    format!("{op}: {file_path}: {}", fs_reason(e))
}

/// `s` quoted the way Python's `repr` quotes a string, so refusals read the same as the reference toolset's.
pub(crate) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..=0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots_as_text() {
        assert_eq!(normalize(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("/a//b/")), PathBuf::from("/a/b"));
    }

    #[test]
    fn repr_quotes_like_python() {
        assert_eq!(py_repr("../x"), "'../x'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(py_repr("a\nb\\"), "'a\\nb\\\\'");
    }

    #[test]
    fn missing_tail_is_kept_and_dangling_links_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(canonicalize(&root.join("new/dir/file")).unwrap(), root.join("new/dir/file"));
        std::os::unix::fs::symlink("/nonexistent-target/x", root.join("dangling")).unwrap();
        assert_eq!(canonicalize(&root.join("dangling/y")).unwrap(), PathBuf::from("/nonexistent-target/x/y"));
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        let err = canonicalize(&root.join("loop")).unwrap_err();
        assert_eq!(fs_reason(&err), "too many levels of symbolic links");
    }

    #[test]
    fn reasons_are_short_phrases() {
        assert_eq!(fs_reason(&io::Error::from(io::ErrorKind::NotFound)), "no such file or directory");
        let eio = io::Error::from_raw_os_error(rustix::io::Errno::IO.raw_os_error());
        assert_eq!(fs_reason(&eio), "input/output error");
    }
}
