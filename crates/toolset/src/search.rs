//! `glob` and `grep`: finding files by name and by content under a confined directory.
//!
//! Both print absolute paths. `glob` lists matches newest first (by modification time), at most
//! [`GLOB_RESULT_LIMIT`]; `grep` prints `path:line:text` for each matching line, in walk order, capped at
//! [`GREP_OUTPUT_LIMIT`] characters. Neither follows a symlinked directory, and a match whose resolved path
//! leaves the searched directory is dropped.

use std::fs;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use walkdir::{DirEntry, WalkDir};

use crate::args::Args;
use crate::paths::{Roots, canonicalize, py_repr};

/// The most paths `glob` prints.
pub(crate) const GLOB_RESULT_LIMIT: usize = 200;
/// The most matches `glob` considers, and the most files `grep` reads, in one call.
pub(crate) const WALK_MAX_ENTRIES: usize = 50_000;
/// The most characters of `grep` output (its lines and their newlines).
pub(crate) const GREP_OUTPUT_LIMIT: usize = 100 * 1024;
/// Lines longer than this many bytes (newline included) are skipped by `grep`.
pub(crate) const GREP_MAX_LINE_LENGTH: usize = 2000;
/// How long one `grep` may search.
const GREP_DEADLINE: Duration = Duration::from_secs(30);
/// Files whose first this-many bytes hold a NUL are taken for binary and skipped by `grep`.
const BINARY_SNIFF_BYTES: u64 = 512;

/// The input of `glob` and of `grep`: a pattern and an optional directory.
pub(crate) struct SearchArgs {
    pattern: String,
    path: Option<String>,
}

impl SearchArgs {
    pub(crate) fn parse(tool: &'static str, input: &Value) -> Result<Self, String> {
        let args = Args::new(tool, input)?;
        Ok(Self { pattern: args.string("pattern")?.to_owned(), path: args.opt_string("path")?.map(str::to_owned) })
    }

    /// The directory to search: `path` resolved, or the working directory when it is absent or empty.
    fn root(&self, roots: &Roots, tool: &str) -> Result<PathBuf, String> {
        match self.path.as_deref() {
            Some(path) if !path.is_empty() => roots.resolve(path).map_err(|e| format!("{tool}: {e}")),
            _ => Ok(roots.workdir.clone()),
        }
    }
}

/// Runs `glob`.
pub(crate) fn glob(roots: &Roots, args: SearchArgs) -> Result<String, String> {
    let pattern = args.pattern.as_str();
    if Path::new(pattern).is_absolute() {
        return Err("glob: absolute pattern not permitted; pass a relative pattern (and optionally path)".into());
    }
    let parts: Vec<&str> = pattern.split('/').filter(|part| !part.is_empty() && *part != ".").collect();
    if parts.contains(&"..") {
        return Err("glob: '..' is not permitted in the pattern".into());
    }
    let root = args.root(roots, "glob")?;
    if parts.is_empty() {
        return Err(format!("glob: Unacceptable pattern: {}", py_repr(pattern)));
    }
    let pattern = Pattern::new(&parts)?;
    if !root.is_dir() {
        return Ok("no matches".into());
    }
    let mut walk = WalkDir::new(&root).follow_links(false).sort_by_file_name();
    if let Some(depth) = pattern.max_depth {
        walk = walk.max_depth(depth);
    }
    let mut matches: Vec<PathBuf> = Vec::new();
    for entry in walk.into_iter().filter_map(Result::ok) {
        let Ok(relative) = entry.path().strip_prefix(&root) else { continue };
        if pattern.is_match(relative, entry.file_type().is_dir()) {
            matches.push(entry.into_path());
            if matches.len() >= WALK_MAX_ENTRIES {
                break;
            }
        }
    }
    // A symlink named by the pattern must not make a result of a place outside the searched directory.
    matches.retain(|found| canonicalize(found).is_ok_and(|resolved| resolved.starts_with(&root)));
    if matches.is_empty() {
        return Ok("no matches".into());
    }
    let mut dated: Vec<(SystemTime, PathBuf)> = matches
        .into_iter()
        .map(|found| (fs::metadata(&found).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH), found))
        .collect();
    // Stable: files with the same time keep the walk's (name) order.
    dated.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    let lines: Vec<String> =
        dated.into_iter().take(GLOB_RESULT_LIMIT).map(|(_, found)| found.to_string_lossy().into_owned()).collect();
    Ok(lines.join("\n"))
}

/// A glob pattern split into components, compiled.
struct Pattern {
    matcher: GlobMatcher,
    /// When the last component is `**`: only directories match, and so does the directory the pattern ends
    /// in (`src/**` names `src` too; `**` names the searched directory itself).
    dirs_only: Option<Option<GlobMatcher>>,
    /// How deep the walk needs to go (`None`: every depth, the pattern has a `**`).
    max_depth: Option<usize>,
}

impl Pattern {
    fn new(parts: &[&str]) -> Result<Self, String> {
        // `**` is recursive only as a whole component; inside one it is a plain `*`.
        let parts: Vec<String> = parts
            .iter()
            .map(|part| if *part == "**" || !part.contains("**") { (*part).to_owned() } else { collapse_stars(part) })
            .collect();
        let recursive = parts.iter().any(|part| part == "**");
        let dirs_only = if parts.last().is_some_and(|last| last == "**") {
            Some(if parts.len() == 1 { None } else { Some(compile(&parts[..parts.len() - 1].join("/"))?) })
        } else {
            None
        };
        Ok(Self { matcher: compile(&parts.join("/"))?, dirs_only, max_depth: (!recursive).then_some(parts.len()) })
    }

    fn is_match(&self, relative: &Path, is_dir: bool) -> bool {
        match &self.dirs_only {
            None => !relative.as_os_str().is_empty() && self.matcher.is_match(relative),
            Some(_) if !is_dir => false,
            Some(None) => true,
            Some(Some(parent)) => {
                !relative.as_os_str().is_empty() && (self.matcher.is_match(relative) || parent.is_match(relative))
            }
        }
    }
}

fn collapse_stars(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for c in part.chars() {
        if !(c == '*' && out.ends_with('*')) {
            out.push(c);
        }
    }
    out
}

fn compile(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .allow_unclosed_class(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("glob: {e}"))
}

/// Runs `grep`.
pub(crate) fn grep(roots: &Roots, args: SearchArgs) -> Result<String, String> {
    let search = args.root(roots, "grep")?;
    let regex = regex::Regex::new(&args.pattern).map_err(|e| format!("grep: invalid regex: {e}"))?;
    let mut grep =
        Grep { regex, hits: Vec::new(), budget: GREP_OUTPUT_LIMIT, deadline: Instant::now() + GREP_DEADLINE };
    if search.is_file() {
        grep.scan(&search)?;
    } else {
        grep.walk(&search)?;
    }
    Ok(if grep.hits.is_empty() { "no matches".into() } else { grep.hits.join("\n") })
}

/// Whether a search goes on.
#[derive(PartialEq)]
enum Flow {
    Go,
    Stop,
}

struct Grep {
    regex: regex::Regex,
    hits: Vec<String>,
    /// Characters of output left.
    budget: usize,
    deadline: Instant,
}

impl Grep {
    fn timed_out(&self) -> Result<(), String> {
        if Instant::now() >= self.deadline {
            Err(format!("grep: timed out after {}s", GREP_DEADLINE.as_secs()))
        } else {
            Ok(())
        }
    }

    /// Records a hit; `Stop` (after the truncation marker) when the output is full.
    fn push(&mut self, line: String) -> Flow {
        let cost = line.chars().count() + 1;
        if cost > self.budget {
            self.budget = 0;
            self.hits.push(format!("[output truncated at {GREP_OUTPUT_LIMIT} bytes]"));
            return Flow::Stop;
        }
        self.budget -= cost;
        self.hits.push(line);
        Flow::Go
    }

    /// Searches the regular files under `dir`, the files of a directory before its subdirectories, skipping
    /// `.git`, `node_modules`, symlinks and anything that is not a regular file.
    fn walk(&mut self, dir: &Path) -> Result<(), String> {
        let walk = WalkDir::new(dir).follow_links(false).sort_by(|a, b| {
            a.file_type().is_dir().cmp(&b.file_type().is_dir()).then_with(|| a.file_name().cmp(b.file_name()))
        });
        let skipped = |entry: &DirEntry| {
            entry.depth() > 0
                && entry.file_type().is_dir()
                && matches!(entry.file_name().to_str(), Some(".git" | "node_modules"))
        };
        let mut seen = 0;
        for entry in walk.into_iter().filter_entry(|entry| !skipped(entry)).filter_map(Result::ok) {
            if !entry.file_type().is_file() {
                continue;
            }
            seen += 1;
            if seen > WALK_MAX_ENTRIES || self.scan(entry.path())? == Flow::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Searches one file. A file that cannot be read is passed over.
    fn scan(&mut self, path: &Path) -> Result<Flow, String> {
        self.timed_out()?;
        let Ok(mut file) = fs::File::open(path) else { return Ok(Flow::Go) };
        let mut head = Vec::new();
        if (&mut file).take(BINARY_SNIFF_BYTES).read_to_end(&mut head).is_err() || head.contains(&0) {
            return Ok(Flow::Go);
        }
        if file.rewind().is_err() {
            return Ok(Flow::Go);
        }
        let shown = path.to_string_lossy().into_owned();
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            let Ok(length) = read_line_capped(&mut reader, &mut line, GREP_MAX_LINE_LENGTH) else {
                return Ok(Flow::Go);
            };
            if length == 0 {
                return Ok(Flow::Go);
            }
            number += 1;
            if number.is_multiple_of(1024) {
                self.timed_out()?;
            }
            if length > GREP_MAX_LINE_LENGTH {
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            if self.regex.is_match(text) && self.push(format!("{shown}:{number}:{text}")) == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
    }
}

/// Reads one line (through its `\n`) into `line`, keeping at most `cap + 1` bytes of it, and returns its full
/// length; 0 at the end of the file. A line longer than the cap is consumed without being held in memory.
fn read_line_capped(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<usize> {
    line.clear();
    let mut length = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(length);
        }
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = (cap + 1).saturating_sub(line.len());
        line.extend_from_slice(&available[..taken.min(room)]);
        length += taken;
        reader.consume(taken);
        if done {
            return Ok(length);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_measured_not_held() {
        let text = format!("short\n{}\nlast", "x".repeat(5000));
        let mut reader = BufReader::with_capacity(64, text.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line_capped(&mut reader, &mut line, 10).unwrap(), 6);
        assert_eq!(line, b"short\n");
        assert_eq!(read_line_capped(&mut reader, &mut line, 10).unwrap(), 5001);
        assert_eq!(line.len(), 11);
        assert_eq!(read_line_capped(&mut reader, &mut line, 10).unwrap(), 4);
        assert_eq!(line, b"last");
        assert_eq!(read_line_capped(&mut reader, &mut line, 10).unwrap(), 0);
    }

    #[test]
    fn stars_inside_a_component_are_one_star() {
        assert_eq!(collapse_stars("a**b***"), "a*b*");
        let pattern = Pattern::new(&["src", "**"]).unwrap();
        assert!(pattern.is_match(Path::new("src"), true));
        assert!(pattern.is_match(Path::new("src/a/b"), true));
        assert!(!pattern.is_match(Path::new("src/a.rs"), false));
        let pattern = Pattern::new(&["**", "*.rs"]).unwrap();
        assert!(pattern.is_match(Path::new("a.rs"), false));
        assert!(pattern.is_match(Path::new("x/y/a.rs"), false));
        assert_eq!(pattern.max_depth, None);
        let pattern = Pattern::new(&["*.rs"]).unwrap();
        assert!(!pattern.is_match(Path::new("x/a.rs"), false));
        assert_eq!(pattern.max_depth, Some(1));
    }
}
