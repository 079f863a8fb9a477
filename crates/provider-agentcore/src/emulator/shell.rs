//! The emulator's runtime commands (`InvokeAgentRuntimeCommand`): an in-memory filesystem per runtime session and
//! an interpreter for exactly the commands [`SessionStorageArtifacts`](crate::SessionStorageArtifacts) sends (see
//! [`crate::artifacts`]) — not a shell.
//!
//! A command is split into words the way `sh` splits them (single quotes, backslash escapes, the operators `&&`,
//! `||`, `;`, `|`, `>`, `>>`) and into pipelines joined by `&&`, `||` and `;`, evaluated as `sh` does. Each pipeline
//! must have one of these shapes (`Q` a quoted word, `N` a number), anything else exits 127:
//!
//! | pipeline | does |
//! |---|---|
//! | `mkdir -p Q` | creates the directory and its parents |
//! | `printf %s Q \| base64 -d > Q` (or `>>`) | decodes the base64 into (onto the end of) a file |
//! | `[ -f Q ]`, `[ -d Q ]`, `[ ! -d Q ]` | tests a path |
//! | `mv -f Q Q` | renames a file (into a directory when the target is one) |
//! | `rm -f Q` | removes a file |
//! | `exit N` | ends the command |
//! | `stat -c '%i %s %Y' Q` | prints the file's inode, size and modification time |
//! | `tail -c +N Q \| head -c N \| base64` | prints part of a file as base64, in lines of 76 characters |
//! | `find Q -type f -printf '%s\t%P\0'` | prints every file below a directory, in no particular order |
//!
//! Errors go to stderr with the exit codes GNU coreutils and `dash` use. Every session starts with the directory
//! [`DEFAULT_MOUNT_PATH`].

use std::collections::{BTreeMap, BTreeSet};

use crate::artifacts::session_storage::DEFAULT_MOUNT_PATH;

/// One runtime session's files.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeFs {
    files: BTreeMap<String, File>,
    dirs: BTreeSet<String>,
    next_inode: u64,
    clock: u64,
}

#[derive(Debug, Clone)]
struct File {
    bytes: Vec<u8>,
    inode: u64,
    mtime: u64,
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) code: i32,
}

impl Outcome {
    fn ok() -> Self {
        Self::default()
    }

    fn fail(code: i32, stderr: String) -> Self {
        Self { stdout: String::new(), stderr: format!("{stderr}\n"), code }
    }
}

impl Default for RuntimeFs {
    fn default() -> Self {
        let mut fs = Self { files: BTreeMap::new(), dirs: BTreeSet::new(), next_inode: 100, clock: 1_700_000_000 };
        fs.mkdir_p(DEFAULT_MOUNT_PATH).ok();
        fs
    }
}

/// A word of a command: literal text, or text with quoting (always a value for the command).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word { text: String, quoted: bool },
    Op(&'static str),
}

/// Splits a command into words and operators, as `sh` would.
fn tokenize(command: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = command.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let op = match c {
            '&' | '|' | '>' => {
                chars.next();
                if chars.peek() == Some(&c) {
                    chars.next();
                    Some(match c {
                        '&' => "&&",
                        '|' => "||",
                        _ => ">>",
                    })
                } else if c == '&' {
                    return Err("background jobs are not emulated".into());
                } else {
                    Some(if c == '|' { "|" } else { ">" })
                }
            }
            ';' => {
                chars.next();
                Some(";")
            }
            '<' | '(' | ')' | '`' | '$' | '"' => return Err(format!("`{c}` is not emulated")),
            _ => None,
        };
        if let Some(op) = op {
            tokens.push(Token::Op(op));
            continue;
        }
        let (mut text, mut quoted) = (String::new(), false);
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || matches!(c, '&' | '|' | '>' | ';' | '<') {
                break;
            }
            chars.next();
            match c {
                '\'' => {
                    quoted = true;
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(inner) => text.push(inner),
                            None => return Err("unterminated quote".into()),
                        }
                    }
                }
                '\\' => {
                    quoted = true;
                    text.push(chars.next().ok_or("a backslash ends the command")?);
                }
                '(' | ')' | '`' | '$' | '"' => return Err(format!("`{c}` is not emulated")),
                _ => text.push(c),
            }
        }
        tokens.push(Token::Word { text, quoted });
    }
    Ok(tokens)
}

/// A pipeline's shape (`Q` for each quoted word, `N` for each number, other words and `|`, `>`, `>>` as they are)
/// and its values, in order.
fn shape(tokens: &[Token]) -> (String, Vec<String>) {
    let mut parts = Vec::new();
    let mut values = Vec::new();
    for token in tokens {
        match token {
            Token::Op(op) => parts.push((*op).to_string()),
            Token::Word { text, quoted: true } => {
                parts.push("Q".into());
                values.push(text.clone());
            }
            Token::Word { text, quoted: false } => {
                let digits = text.strip_prefix('+').unwrap_or(text);
                if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                    parts.push("N".into());
                    values.push(text.clone());
                } else {
                    parts.push(text.clone());
                }
            }
        }
    }
    (parts.join(" "), values)
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// GNU `base64` output: lines of 76 characters, each ended by a newline.
fn wrapped_base64(bytes: &[u8]) -> String {
    let encoded = aws_smithy_types::base64::encode(bytes);
    let mut out = String::with_capacity(encoded.len() + encoded.len() / 76 + 1);
    for line in encoded.as_bytes().chunks(76) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out
}

impl RuntimeFs {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn mkdir_p(&mut self, dir: &str) -> Result<(), Outcome> {
        if !dir.starts_with('/') {
            return Err(Outcome::fail(
                1,
                format!("mkdir: cannot create directory '{dir}': relative paths not emulated"),
            ));
        }
        let mut at = String::new();
        self.dirs.insert("/".into());
        for segment in dir.split('/').filter(|s| !s.is_empty()) {
            at.push('/');
            at.push_str(segment);
            if self.files.contains_key(&at) {
                let why = if at == dir { "File exists" } else { "Not a directory" };
                return Err(Outcome::fail(1, format!("mkdir: cannot create directory '{at}': {why}")));
            }
            self.dirs.insert(at.clone());
        }
        Ok(())
    }

    fn write(&mut self, path: &str, bytes: Vec<u8>, append: bool) -> Outcome {
        if self.dirs.contains(path) {
            return Outcome::fail(2, format!("sh: 1: cannot create {path}: Is a directory"));
        }
        if !self.dirs.contains(parent(path)) {
            return Outcome::fail(2, format!("sh: 1: cannot create {path}: Directory nonexistent"));
        }
        let mtime = self.tick();
        if let Some(file) = self.files.get_mut(path) {
            if !append {
                file.bytes.clear();
            }
            file.bytes.extend_from_slice(&bytes);
            file.mtime = mtime;
        } else {
            self.next_inode += 1;
            self.files.insert(path.to_string(), File { bytes, inode: self.next_inode, mtime });
        }
        Outcome::ok()
    }

    fn rename(&mut self, from: &str, to: &str) -> Outcome {
        let Some(file) = self.files.remove(from) else {
            return Outcome::fail(1, format!("mv: cannot stat '{from}': No such file or directory"));
        };
        let target = if self.dirs.contains(to) {
            format!("{}/{}", to.trim_end_matches('/'), from.rsplit('/').next().unwrap_or(from))
        } else {
            to.to_string()
        };
        if !self.dirs.contains(parent(&target)) {
            self.files.insert(from.to_string(), file);
            return Outcome::fail(1, format!("mv: cannot move '{from}' to '{to}': No such file or directory"));
        }
        self.files.insert(target, file);
        Outcome::ok()
    }

    /// Runs one pipeline; `true` when it ends the command (`exit`).
    fn pipeline(&mut self, tokens: &[Token]) -> (Outcome, bool) {
        let (shape, v) = shape(tokens);
        let outcome = match (shape.as_str(), v.as_slice()) {
            ("mkdir -p Q", [dir]) => self.mkdir_p(dir).map_or_else(|e| e, |()| Outcome::ok()),
            ("printf %s Q | base64 -d > Q" | "printf %s Q | base64 -d >> Q", [encoded, path]) => {
                match aws_smithy_types::base64::decode(encoded) {
                    Ok(bytes) => self.write(path, bytes, shape.ends_with(">> Q")),
                    Err(_) => Outcome::fail(1, "base64: invalid input".into()),
                }
            }
            ("[ -f Q ]", [path]) => Outcome { code: i32::from(!self.files.contains_key(path)), ..Outcome::ok() },
            ("[ -d Q ]", [path]) => Outcome { code: i32::from(!self.dirs.contains(path)), ..Outcome::ok() },
            ("[ ! -d Q ]", [path]) => Outcome { code: i32::from(self.dirs.contains(path)), ..Outcome::ok() },
            ("mv -f Q Q", [from, to]) => self.rename(from, to),
            ("rm -f Q", [path]) => {
                if self.dirs.contains(path) {
                    Outcome::fail(1, format!("rm: cannot remove '{path}': Is a directory"))
                } else {
                    self.files.remove(path);
                    Outcome::ok()
                }
            }
            ("exit N", [code]) => return (Outcome { code: code.parse().unwrap_or(2), ..Outcome::ok() }, true),
            ("stat -c Q Q", [format, path]) if format == "%i %s %Y" => match self.files.get(path) {
                Some(file) => {
                    Outcome { stdout: format!("{} {} {}\n", file.inode, file.bytes.len(), file.mtime), ..Outcome::ok() }
                }
                None if self.dirs.contains(path) => Outcome::fail(1, "stat: directories are not emulated".into()),
                None => Outcome::fail(1, format!("stat: cannot statx '{path}': No such file or directory")),
            },
            ("tail -c N Q | head -c N | base64", [from, path, len]) if from.starts_with('+') => {
                let start = from[1..].parse::<usize>().unwrap_or(1).saturating_sub(1);
                let len = len.parse::<usize>().unwrap_or(0);
                match self.files.get(path) {
                    Some(file) => {
                        let bytes = file.bytes.get(start..).unwrap_or_default();
                        let bytes = &bytes[..len.min(bytes.len())];
                        Outcome { stdout: wrapped_base64(bytes), ..Outcome::ok() }
                    }
                    // `base64` of nothing succeeds: the pipeline's status is the last command's.
                    None => Outcome {
                        stderr: format!("tail: cannot open '{path}' for reading: No such file or directory\n"),
                        ..Outcome::ok()
                    },
                }
            }
            ("find Q -type f -printf Q", [dir, format]) if format == "%s\\t%P\\0" => {
                if self.dirs.contains(dir.as_str()) {
                    let prefix = if dir.ends_with('/') { dir.clone() } else { format!("{dir}/") };
                    // Directory order is not name order: the reverse makes a client sort for itself.
                    let stdout = self
                        .files
                        .iter()
                        .rev()
                        .filter_map(|(path, file)| Some((path.strip_prefix(&prefix)?, file)))
                        .map(|(relative, file)| format!("{}\t{relative}\0", file.bytes.len()))
                        .collect();
                    Outcome { stdout, ..Outcome::ok() }
                } else {
                    Outcome::fail(1, format!("find: '{dir}': No such file or directory"))
                }
            }
            _ => Outcome::fail(127, format!("emulator: `{shape}` is not an emulated command")),
        };
        (outcome, false)
    }

    /// Runs `command`: pipelines joined by `&&`, `||` and `;`, as `sh` does.
    pub(crate) fn run(&mut self, command: &str) -> Outcome {
        let tokens = match tokenize(command) {
            Ok(tokens) => tokens,
            Err(why) => return Outcome::fail(2, format!("emulator: {why}")),
        };
        // Each pipeline with the operator that joins it to the next.
        let mut segments = Vec::new();
        let mut start = 0;
        for (at, token) in tokens.iter().enumerate() {
            if let Token::Op(op @ ("&&" | "||" | ";")) = token {
                segments.push((&tokens[start..at], *op));
                start = at + 1;
            }
        }
        segments.push((&tokens[start..], ";"));
        let mut total = Outcome::ok();
        let (mut before, mut status) = (";", 0);
        for (segment, after) in segments {
            let skip = (before == "&&" && status != 0) || (before == "||" && status == 0);
            if !skip && !segment.is_empty() {
                let (outcome, exit) = self.pipeline(segment);
                total.stdout.push_str(&outcome.stdout);
                total.stderr.push_str(&outcome.stderr);
                status = outcome.code;
                if exit {
                    break;
                }
            }
            before = after;
        }
        total.code = status;
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_sh_quoting() {
        let tokens = tokenize(r"rm -f '/mnt/it'\''s here' && exit 3").unwrap();
        assert_eq!(shape(&tokens[..3]), ("rm -f Q".to_string(), vec!["/mnt/it's here".to_string()]));
        assert_eq!(tokens[3], Token::Op("&&"));
        assert!(tokenize("echo 'open").is_err());
        assert!(tokenize("echo $(id)").is_err());
    }

    #[test]
    fn lists_run_like_sh() {
        let mut fs = RuntimeFs::default();
        assert_eq!(fs.run("[ -f '/mnt/data/x' ] || exit 66; rm -f '/mnt/data/x'").code, 66);
        assert_eq!(fs.run("mkdir -p '/mnt/data/a' && printf %s 'aGk=' | base64 -d > '/mnt/data/a/x'").code, 0);
        assert_eq!(fs.run("[ -f '/mnt/data/a/x' ] || exit 66; rm -f '/mnt/data/a/x'").code, 0);
        assert_eq!(fs.run("[ -d '/nowhere' ] || exit 0; find '/nowhere' -type f -printf '%s\\t%P\\0'").code, 0);
        assert_eq!(fs.run("cat /etc/passwd").code, 127);
    }

    /// The emulator against a real `sh` (with GNU coreutils and findutils), command by command, over the
    /// commands `SessionStorageArtifacts` builds: the same exit codes and output (the inode and time `stat`
    /// prints aside, and `find`'s order).
    #[cfg(unix)]
    #[test]
    fn the_emulated_commands_match_a_real_shell() {
        use crate::artifacts::shell::{cleanup_command, delete_command, fetch_command, list_command, put_command};
        let probe = std::process::Command::new("sh")
            .args(["-c", "command -v base64 && command -v find && stat -c %s / && find / -maxdepth 0 -printf ''"])
            .output();
        if !probe.is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: no sh with GNU coreutils and findutils here");
            return;
        }
        let root = std::env::temp_dir().join(format!("ma-shell-{:016x}", fastrand::u64(..)));
        std::fs::create_dir_all(&root).unwrap();
        let mount = root.join("mnt data").to_string_lossy().into_owned();
        let mut fs = RuntimeFs::default();
        let real = |command: &str| {
            let out = std::process::Command::new("sh").args(["-c", command]).output().expect("sh runs");
            Outcome {
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                code: out.status.code().unwrap_or(-1),
            }
        };
        // Compares what matters: exit code, stdout (sizes only from `stat`, `find` records in any order).
        let normal = |outcome: &Outcome| {
            let mut stdout = outcome.stdout.clone();
            if let Some((first, rest)) = stdout.split_once('\n')
                && first.split(' ').count() == 3
            {
                stdout = format!("{}\n{rest}", first.split(' ').nth(1).unwrap_or_default());
            }
            let mut records: Vec<&str> = stdout.split('\0').collect();
            records.sort_unstable();
            (outcome.code, records.join("\0"), outcome.stderr.is_empty())
        };
        let dir = format!("{mount}/it's a dir ü");
        let (one, two) = (format!("{dir}/one 'q'.bin"), format!("{mount}/two.bin"));
        let temp = |n: u8| format!("{dir}/.partial-{n:016x}");
        let long: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let b64 = |bytes: &[u8]| aws_smithy_types::base64::encode(bytes);
        let mut commands = vec![
            format!("mkdir -p {}", crate::artifacts::shell::shell_quote(&mount)),
            list_command(&mount),
            list_command(&format!("{mount}/missing")),
            put_command(&dir, &temp(1), &one, &b64(&long[..300]), true, false),
            put_command(&dir, &temp(1), &one, &b64(&long[300..600]), false, false),
            put_command(&dir, &temp(1), &one, &b64(&long[600..]), false, true),
            put_command(&mount, &format!("{mount}/.partial-2"), &two, "", true, true),
            list_command(&mount),
            fetch_command(&one, 0, 1000),
            fetch_command(&one, 999, 10),
            fetch_command(&one, 1000, 10),
            fetch_command(&two, 0, 10),
            fetch_command(&format!("{mount}/none"), 0, 10),
            put_command(&one, &format!("{one}/.partial-3"), &format!("{one}/x"), "eA==", true, true),
            put_command(&mount, &temp(4), &dir, "eA==", true, true),
            cleanup_command(&temp(4)),
            put_command(&dir, &temp(5), &one, "not base64!", true, true),
            cleanup_command(&temp(5)),
            delete_command(&one),
            delete_command(&one),
            delete_command(&dir),
            list_command(&mount),
        ];
        commands.push(fetch_command(&two, 0, 0));
        for command in &commands {
            let (want, got) = (real(command), fs.run(command));
            assert_eq!(normal(&got), normal(&want), "{command}\nsh: {want:?}\nemulator: {got:?}");
        }
        std::fs::remove_dir_all(&root).ok();
    }
}
