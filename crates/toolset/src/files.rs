//! `read`, `write` and `edit`: whole-file text tools on confined paths.
//!
//! Files are UTF-8 and are read and written byte for byte (no newline translation). `read` returns the text
//! as it is — no line numbers — or the lines `[start_line, end_line]` of `view_range`. A file above the size
//! cap is refused whole; with a `view_range` it is streamed and the cap applies to the selected lines.

use std::fs;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::args::Args;
use crate::paths::{Roots, fs_error};

/// Extensions of the files the reference toolset returns as image/PDF blocks instead of text.
const BINARY_EXTENSIONS: [&str; 6] = ["png", "jpg", "jpeg", "gif", "webp", "pdf"];

/// How much of a large file a streamed `view_range` read takes at a time.
const STREAM_CHUNK_BYTES: usize = 64 * 1024;

/// The input of `read`.
pub(crate) struct ReadArgs {
    file_path: String,
    view_range: Option<Vec<i64>>,
}

impl ReadArgs {
    pub(crate) fn parse(input: &Value) -> Result<Self, String> {
        let args = Args::new("read", input)?;
        Ok(Self { file_path: args.string("file_path")?.to_owned(), view_range: args.opt_int_list("view_range")? })
    }
}

/// The input of `write`.
pub(crate) struct WriteArgs {
    file_path: String,
    content: String,
}

impl WriteArgs {
    pub(crate) fn parse(input: &Value) -> Result<Self, String> {
        let args = Args::new("write", input)?;
        Ok(Self { file_path: args.string("file_path")?.to_owned(), content: args.string("content")?.to_owned() })
    }
}

/// The input of `edit`.
pub(crate) struct EditArgs {
    file_path: String,
    old_string: String,
    new_string: String,
    replace_all: bool,
}

impl EditArgs {
    pub(crate) fn parse(input: &Value) -> Result<Self, String> {
        let args = Args::new("edit", input)?;
        Ok(Self {
            file_path: args.string("file_path")?.to_owned(),
            old_string: args.string("old_string")?.to_owned(),
            new_string: args.string("new_string")?.to_owned(),
            replace_all: args.opt_bool("replace_all")?.unwrap_or(false),
        })
    }
}

fn is_binary_media(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| BINARY_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()))
}

/// Runs `read`.
pub(crate) fn read(roots: &Roots, max_file_bytes: u64, args: ReadArgs) -> Result<String, String> {
    let file_path = args.file_path.as_str();
    let target = roots.resolve(file_path).map_err(|e| format!("read: {e}"))?;
    // An empty list is the same as none.
    let view = match args.view_range.as_deref() {
        None | Some([]) => None,
        Some(&[start, end]) => Some((start, end)),
        Some(_) => return Err("read: view_range must be [start_line, end_line]".into()),
    };
    let meta = fs::metadata(&target).map_err(|e| fs_error("read", file_path, &e))?;
    if !meta.is_file() {
        return Err(format!("read: {file_path}: not a regular file"));
    }
    if is_binary_media(&target) {
        if view.is_some() {
            return Err("read: view_range is not supported for image/PDF files".into());
        }
        return Err(format!(
            "read: {file_path}: image/PDF files cannot be returned by this runner (its tool results are text only)"
        ));
    }
    let size = meta.len();
    if size > max_file_bytes {
        let Some((start, end)) = view else {
            return Err(format!(
                "read: {file_path} is {size} bytes, exceeds {max_file_bytes}-byte limit. Use the view_range \
                 parameter to read specific line ranges, e.g. view_range: [1, 500]."
            ));
        };
        return read_line_range(&target, file_path, start, end, max_file_bytes);
    }
    let bytes = fs::read(&target).map_err(|e| fs_error("read", file_path, &e))?;
    let text = String::from_utf8(bytes).map_err(|_| not_utf8(file_path))?;
    let Some((start, end)) = view else { return Ok(text) };
    let lines: Vec<&str> = text.split('\n').collect();
    let first = usize::try_from(start.saturating_sub(1).max(0)).unwrap_or(usize::MAX).min(lines.len());
    let last = if end > 0 { usize::try_from(end).unwrap_or(usize::MAX).min(lines.len()) } else { lines.len() };
    Ok(if first < last { lines[first..last].join("\n") } else { String::new() })
}

fn not_utf8(file_path: &str) -> String {
    format!("read: {file_path}: not valid UTF-8 text (binary files are only supported for image/PDF extensions)")
}

/// Lines `[start, end]` (1-based, inclusive; `end <= 0` is the end of the file) of a file too large to load,
/// streamed, with the selected bytes capped at `limit`.
fn read_line_range(target: &Path, file_path: &str, start: i64, end: i64, limit: u64) -> Result<String, String> {
    let mut lines = LineRange::new(start, end);
    if lines.is_empty() {
        return Ok(String::new());
    }
    let mut file = fs::File::open(target).map_err(|e| fs_error("read", file_path, &e))?;
    let mut chunk = vec![0; STREAM_CHUNK_BYTES];
    while !lines.is_collected() {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fs_error("read", file_path, &e)),
        };
        lines.collect_from(&chunk[..n]);
        if lines.collected.len() as u64 > limit {
            return Err(if lines.end - lines.start == 1 {
                format!(
                    "read: line {} of {file_path} alone exceeds {limit}-byte limit. The read tool cannot return \
                     part of a line, so view_range cannot narrow this further.",
                    lines.start + 1
                )
            } else {
                format!(
                    "read: view_range [{start}, {end}] of {file_path} exceeds {limit}-byte limit. Narrow the \
                     view_range to read a smaller portion."
                )
            });
        }
    }
    String::from_utf8(lines.collected).map_err(|_| not_utf8(file_path))
}

/// The bytes of lines `start..end` (0-based, end exclusive) gathered from consecutive chunks of a file.
struct LineRange {
    start: u64,
    end: u64,
    /// The 0-based number of the line the next byte belongs to.
    line: u64,
    collected: Vec<u8>,
}

impl LineRange {
    fn new(start_line: i64, end_line: i64) -> Self {
        let start = u64::try_from(start_line.saturating_sub(1)).unwrap_or(0);
        let end = if end_line > 0 { end_line.unsigned_abs() } else { u64::MAX };
        Self { start, end, line: 0, collected: Vec::new() }
    }

    fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    fn is_collected(&self) -> bool {
        self.line >= self.end
    }

    fn collect_from(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while !rest.is_empty() && !self.is_collected() {
            let newline = rest.iter().position(|&b| b == b'\n');
            let line = &rest[..newline.unwrap_or(rest.len())];
            if self.line >= self.start {
                self.collected.extend_from_slice(line);
                // The newline ending the last selected line is not part of the result.
                if newline.is_some() && self.line + 1 < self.end {
                    self.collected.push(b'\n');
                }
            }
            let Some(at) = newline else { break };
            self.line += 1;
            rest = &rest[at + 1..];
        }
    }
}

/// Runs `write`.
pub(crate) fn write(roots: &Roots, args: WriteArgs) -> Result<String, String> {
    let file_path = args.file_path.as_str();
    let target = roots.resolve(file_path).map_err(|e| format!("write: {e}"))?;
    roots.reject_read_only(&target, "write", file_path)?;
    // Opening a FIFO for writing would wait for a reader forever.
    if fs::metadata(&target).is_ok_and(|meta| !meta.is_file() && !meta.is_dir()) {
        return Err(format!("write: {file_path}: not a regular file"));
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(|e| fs_error("write", file_path, &e))?;
    }
    fs::write(&target, args.content.as_bytes()).map_err(|e| fs_error("write", file_path, &e))?;
    // The count is of characters, as the reference toolset counts them.
    Ok(format!("wrote {} bytes to {file_path}", args.content.chars().count()))
}

/// Runs `edit`.
pub(crate) fn edit(roots: &Roots, max_file_bytes: u64, args: EditArgs) -> Result<String, String> {
    let file_path = args.file_path.as_str();
    let target = roots.resolve(file_path).map_err(|e| format!("edit: {e}"))?;
    roots.reject_read_only(&target, "edit", file_path)?;
    let meta = fs::metadata(&target).map_err(|e| fs_error("edit", file_path, &e))?;
    if !meta.is_file() {
        return Err(format!("edit: {file_path}: not a regular file"));
    }
    if meta.len() > max_file_bytes {
        return Err(format!(
            "edit: {file_path} is {} bytes, exceeds {max_file_bytes}-byte limit. The edit tool loads the whole \
             file and cannot modify a file this large.",
            meta.len()
        ));
    }
    let bytes = fs::read(&target).map_err(|e| fs_error("edit", file_path, &e))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("edit: {file_path}: not valid UTF-8 text (cannot edit binary files)"))?;
    let count = text.matches(args.old_string.as_str()).count();
    if count == 0 {
        return Err(format!("edit: old_string not found in {file_path}"));
    }
    if !args.replace_all && count > 1 {
        return Err(format!("edit: old_string appears {count} times in {file_path} (must be unique)"));
    }
    let updated = if args.replace_all {
        text.replace(&args.old_string, &args.new_string)
    } else {
        text.replacen(&args.old_string, &args.new_string, 1)
    };
    fs::write(&target, updated.as_bytes()).map_err(|e| fs_error("edit", file_path, &e))?;
    Ok(format!("edited {file_path} ({} replacement(s))", if args.replace_all { count } else { 1 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str, start: i64, end: i64, chunk: usize) -> String {
        let mut range = LineRange::new(start, end);
        if range.is_empty() {
            return String::new();
        }
        for piece in text.as_bytes().chunks(chunk) {
            if range.is_collected() {
                break;
            }
            range.collect_from(piece);
        }
        String::from_utf8(range.collected).unwrap()
    }

    #[test]
    fn streamed_ranges_match_the_split_ranges() {
        let text = "one\ntwo\nthree\nfour\n";
        for chunk in [1, 2, 3, 64] {
            assert_eq!(collect(text, 2, 3, chunk), "two\nthree");
            assert_eq!(collect(text, 1, 0, chunk), text);
            assert_eq!(collect(text, 4, 9, chunk), "four\n");
            assert_eq!(collect(text, 3, 2, chunk), "");
            assert_eq!(collect(text, -5, 1, chunk), "one");
        }
    }
}
