//! read, write and edit: view ranges, the size cap, write-then-read, and edit's matching rules.

use std::fs;

use managed_agents_toolset::{ToolCallResult, Toolset};
use serde_json::{Value, json};

struct Fixture {
    dir: tempfile::TempDir,
    toolset: Toolset,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("lines.txt"), "one\ntwo\nthree\nfour\n").unwrap();
        let toolset = Toolset::builder(dir.path()).max_file_bytes(1024).build().unwrap();
        Self { dir, toolset }
    }

    async fn call(&self, name: &str, input: Value) -> ToolCallResult {
        self.toolset.call(name, &input).await
    }

    async fn ok(&self, name: &str, input: Value) -> String {
        let result = self.call(name, input).await;
        assert!(!result.is_error, "{result:?}");
        result.text
    }

    async fn err(&self, name: &str, input: Value) -> String {
        let result = self.call(name, input).await;
        assert!(result.is_error, "{result:?}");
        result.text
    }

    fn contents(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name)).unwrap()
    }
}

#[tokio::test]
async fn read_returns_the_text_as_it_is() {
    let f = Fixture::new();
    assert_eq!(f.ok("read", json!({"file_path": "lines.txt"})).await, "one\ntwo\nthree\nfour\n");
    assert_eq!(f.ok("read", json!({"file_path": "lines.txt", "view_range": []})).await, "one\ntwo\nthree\nfour\n");
}

#[tokio::test]
async fn read_view_ranges_are_one_based_and_inclusive() {
    let f = Fixture::new();
    for (range, expected) in [
        (json!([2, 3]), "two\nthree"),
        (json!([1, 1]), "one"),
        (json!([3, 0]), "three\nfour\n"),
        (json!([3, -1]), "three\nfour\n"),
        (json!([4, 100]), "four\n"),
        (json!([0, 2]), "one\ntwo"),
        (json!([5, 2]), ""),
        (json!([50, 60]), ""),
    ] {
        let text = f.ok("read", json!({"file_path": "lines.txt", "view_range": range.clone()})).await;
        assert_eq!(text, expected, "view_range {range}");
    }
    assert_eq!(
        f.err("read", json!({"file_path": "lines.txt", "view_range": [1]})).await,
        "read: view_range must be [start_line, end_line]"
    );
    assert_eq!(
        f.err("read", json!({"file_path": "lines.txt", "view_range": [1, "2"]})).await,
        "Invalid arguments for function read: `view_range[1]`: expected an integer, got a string"
    );
}

#[tokio::test]
async fn large_files_are_refused_whole_and_read_in_ranges() {
    let f = Fixture::new();
    let mut big = String::new();
    for i in 1..=200 {
        big.push_str(&format!("line {i}\n"));
    }
    big.push_str(&"x".repeat(2000));
    big.push('\n');
    fs::write(f.dir.path().join("big.txt"), &big).unwrap();
    let size = big.len();
    assert_eq!(
        f.err("read", json!({"file_path": "big.txt"})).await,
        format!(
            "read: big.txt is {size} bytes, exceeds 1024-byte limit. Use the view_range parameter to read specific \
             line ranges, e.g. view_range: [1, 500]."
        )
    );
    assert_eq!(
        f.ok("read", json!({"file_path": "big.txt", "view_range": [10, 12]})).await,
        "line 10\nline 11\nline 12"
    );
    assert_eq!(
        f.err("read", json!({"file_path": "big.txt", "view_range": [1, 200]})).await,
        "read: view_range [1, 200] of big.txt exceeds 1024-byte limit. Narrow the view_range to read a smaller portion."
    );
    assert_eq!(
        f.err("read", json!({"file_path": "big.txt", "view_range": [201, 201]})).await,
        "read: line 201 of big.txt alone exceeds 1024-byte limit. The read tool cannot return part of a line, so \
         view_range cannot narrow this further."
    );
    assert_eq!(
        f.err("edit", json!({"file_path": "big.txt", "old_string": "line 1\n", "new_string": ""})).await,
        format!(
            "edit: big.txt is {size} bytes, exceeds 1024-byte limit. The edit tool loads the whole file and cannot \
             modify a file this large."
        )
    );
}

#[tokio::test]
async fn read_refuses_what_is_not_utf8_text() {
    let f = Fixture::new();
    fs::write(f.dir.path().join("bad.txt"), b"\xff\xfe nope").unwrap();
    fs::write(f.dir.path().join("pic.PNG"), b"\x89PNG").unwrap();
    fs::create_dir(f.dir.path().join("sub")).unwrap();
    assert_eq!(
        f.err("read", json!({"file_path": "bad.txt"})).await,
        "read: bad.txt: not valid UTF-8 text (binary files are only supported for image/PDF extensions)"
    );
    assert_eq!(f.err("read", json!({"file_path": "sub"})).await, "read: sub: not a regular file");
    assert_eq!(
        f.err("read", json!({"file_path": "pic.PNG", "view_range": [1, 2]})).await,
        "read: view_range is not supported for image/PDF files"
    );
    assert!(f.err("read", json!({"file_path": "pic.PNG"})).await.contains("image/PDF files cannot be returned"));
    assert_eq!(f.err("read", json!({})).await, "Invalid arguments for function read: `file_path`: field required");
}

#[tokio::test]
async fn write_creates_parents_and_replaces_contents() {
    let f = Fixture::new();
    assert_eq!(
        f.ok("write", json!({"file_path": "new/deep/file.txt", "content": "héllo\nworld"})).await,
        "wrote 11 bytes to new/deep/file.txt"
    );
    assert_eq!(f.ok("read", json!({"file_path": "new/deep/file.txt"})).await, "héllo\nworld");
    assert_eq!(f.ok("write", json!({"file_path": "lines.txt", "content": ""})).await, "wrote 0 bytes to lines.txt");
    assert_eq!(f.contents("lines.txt"), "");
    // Line endings are kept byte for byte.
    f.ok("write", json!({"file_path": "crlf.txt", "content": "a\r\nb\r\n"})).await;
    assert_eq!(fs::read(f.dir.path().join("crlf.txt")).unwrap(), b"a\r\nb\r\n");
    fs::create_dir(f.dir.path().join("adir")).unwrap();
    assert_eq!(f.err("write", json!({"file_path": "adir", "content": "x"})).await, "write: adir: is a directory");
    assert_eq!(
        f.err("write", json!({"file_path": "lines.txt/inner", "content": "x"})).await,
        "write: lines.txt/inner: file already exists"
    );
    let fifo = f.dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(f.err("write", json!({"file_path": "fifo", "content": "x"})).await, "write: fifo: not a regular file");
    assert_eq!(f.err("read", json!({"file_path": "fifo"})).await, "read: fifo: not a regular file");
    assert_eq!(
        f.err("write", json!({"file_path": "x.txt"})).await,
        "Invalid arguments for function write: `content`: field required"
    );
}

#[tokio::test]
async fn edit_needs_exactly_one_match_unless_replace_all() {
    let f = Fixture::new();
    fs::write(f.dir.path().join("dup.txt"), "dup and dup and dup\n").unwrap();
    assert_eq!(
        f.err("edit", json!({"file_path": "dup.txt", "old_string": "missing", "new_string": "x"})).await,
        "edit: old_string not found in dup.txt"
    );
    assert_eq!(
        f.err("edit", json!({"file_path": "dup.txt", "old_string": "dup", "new_string": "x"})).await,
        "edit: old_string appears 3 times in dup.txt (must be unique)"
    );
    assert_eq!(f.contents("dup.txt"), "dup and dup and dup\n");
    assert_eq!(
        f.ok("edit", json!({"file_path": "dup.txt", "old_string": "dup", "new_string": "x", "replace_all": true}))
            .await,
        "edited dup.txt (3 replacement(s))"
    );
    assert_eq!(f.contents("dup.txt"), "x and x and x\n");
    assert_eq!(
        f.ok("edit", json!({"file_path": "lines.txt", "old_string": "two\n", "new_string": "2\n"})).await,
        "edited lines.txt (1 replacement(s))"
    );
    assert_eq!(f.contents("lines.txt"), "one\n2\nthree\nfour\n");
    // `replace_all: false` is the default behaviour.
    assert_eq!(
        f.err("edit", json!({"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": false}))
            .await,
        "edit: old_string appears 3 times in dup.txt (must be unique)"
    );
    assert_eq!(
        f.err("edit", json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"})).await,
        "edit: nope.txt: no such file or directory"
    );
    fs::write(f.dir.path().join("bin.dat"), b"\xff\x00").unwrap();
    assert_eq!(
        f.err("edit", json!({"file_path": "bin.dat", "old_string": "a", "new_string": "b"})).await,
        "edit: bin.dat: not valid UTF-8 text (cannot edit binary files)"
    );
    assert_eq!(
        f.err("edit", json!({"file_path": "dup.txt", "old_string": "x"})).await,
        "Invalid arguments for function edit: `new_string`: field required"
    );
}
