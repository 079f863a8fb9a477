//! Path confinement: escapes by `..`, by absolute paths and by symlinks are refused; extra roots widen the
//! reach; read-only roots refuse changes.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use managed_agents_toolset::{ToolCallResult, Toolset};
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    work: std::path::PathBuf,
    outside: std::path::PathBuf,
}

/// `<tmp>/work` (the working directory) and `<tmp>/outside/secret.txt`.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let work = root.join("work");
    let outside = root.join("outside");
    fs::create_dir_all(&work).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    fs::write(work.join("inside.txt"), "inside\n").unwrap();
    Fixture { _dir: dir, work, outside }
}

async fn call(toolset: &Toolset, name: &str, input: Value) -> ToolCallResult {
    toolset.call(name, &input).await
}

fn refused(result: &ToolCallResult, expected: &str) {
    assert!(result.is_error, "expected a refusal, got {result:?}");
    assert_eq!(result.text, expected);
}

#[tokio::test]
async fn dot_dot_escapes_are_refused_by_every_file_tool() {
    let f = fixture();
    let toolset = Toolset::new(&f.work).unwrap();
    let outside = "../outside/secret.txt";
    let message = "path '../outside/secret.txt' is outside the session's working directory";
    refused(&call(&toolset, "read", json!({"file_path": outside})).await, &format!("read: {message}"));
    refused(
        &call(&toolset, "write", json!({"file_path": outside, "content": "x"})).await,
        &format!("write: {message}"),
    );
    refused(
        &call(&toolset, "edit", json!({"file_path": outside, "old_string": "secret", "new_string": "x"})).await,
        &format!("edit: {message}"),
    );
    refused(
        &call(&toolset, "glob", json!({"pattern": "*", "path": "../outside"})).await,
        "glob: path '../outside' is outside the session's working directory",
    );
    refused(
        &call(&toolset, "grep", json!({"pattern": "secret", "path": ".."})).await,
        "grep: path '..' is outside the session's working directory",
    );
    refused(
        &call(&toolset, "glob", json!({"pattern": "../outside/*"})).await,
        "glob: '..' is not permitted in the pattern",
    );
    assert_eq!(fs::read_to_string(f.outside.join("secret.txt")).unwrap(), "secret\n");
    // `..` that stays inside is fine.
    let read = call(&toolset, "read", json!({"file_path": "sub/../inside.txt"})).await;
    assert_eq!((read.text.as_str(), read.is_error), ("inside\n", false));
}

#[tokio::test]
async fn absolute_paths_outside_are_refused_and_inside_are_accepted() {
    let f = fixture();
    let toolset = Toolset::new(&f.work).unwrap();
    refused(
        &call(&toolset, "read", json!({"file_path": "/etc/passwd"})).await,
        "read: path '/etc/passwd' is outside the session's working directory",
    );
    refused(
        &call(&toolset, "glob", json!({"pattern": "/etc/*"})).await,
        "glob: absolute pattern not permitted; pass a relative pattern (and optionally path)",
    );
    let inside = f.work.join("inside.txt");
    let read = call(&toolset, "read", json!({"file_path": inside.to_str().unwrap()})).await;
    assert_eq!((read.text.as_str(), read.is_error), ("inside\n", false));
}

#[tokio::test]
async fn symlinks_that_lead_outside_are_refused() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.work.join("link.txt")).unwrap();
    symlink(&f.outside, f.work.join("linkdir")).unwrap();
    symlink(f.outside.join("not-yet.txt"), f.work.join("dangling.txt")).unwrap();
    symlink("inside.txt", f.work.join("inner-link.txt")).unwrap();
    let toolset = Toolset::new(&f.work).unwrap();

    refused(
        &call(&toolset, "read", json!({"file_path": "link.txt"})).await,
        "read: path 'link.txt' is outside the session's working directory",
    );
    refused(
        &call(&toolset, "read", json!({"file_path": "linkdir/secret.txt"})).await,
        "read: path 'linkdir/secret.txt' is outside the session's working directory",
    );
    refused(
        &call(&toolset, "write", json!({"file_path": "link.txt", "content": "overwritten"})).await,
        "write: path 'link.txt' is outside the session's working directory",
    );
    // A dangling link is followed too: writing through it would create a file outside.
    refused(
        &call(&toolset, "write", json!({"file_path": "dangling.txt", "content": "x"})).await,
        "write: path 'dangling.txt' is outside the session's working directory",
    );
    assert!(!f.outside.join("not-yet.txt").exists());
    assert_eq!(fs::read_to_string(f.outside.join("secret.txt")).unwrap(), "secret\n");
    // A link that stays inside works.
    let read = call(&toolset, "read", json!({"file_path": "inner-link.txt"})).await;
    assert_eq!((read.text.as_str(), read.is_error), ("inside\n", false));

    // glob drops the escaping links; grep does not follow them.
    let glob = call(&toolset, "glob", json!({"pattern": "*.txt"})).await;
    let mut listed: Vec<&str> = glob.text.lines().collect();
    listed.sort_unstable();
    let expected: Vec<String> =
        ["inner-link.txt", "inside.txt"].iter().map(|name| f.work.join(name).display().to_string()).collect();
    assert_eq!(listed, expected);
    let grep = call(&toolset, "grep", json!({"pattern": "secret"})).await;
    assert_eq!((grep.text.as_str(), grep.is_error), ("no matches", false));
}

#[tokio::test]
async fn allow_root_widens_the_reach() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.work.join("link.txt")).unwrap();
    let toolset = Toolset::builder(&f.work).allow_root(&f.outside).build().unwrap();
    for path in ["../outside/secret.txt", "link.txt", f.outside.join("secret.txt").to_str().unwrap()] {
        let read = call(&toolset, "read", json!({"file_path": path})).await;
        assert_eq!((read.text.as_str(), read.is_error), ("secret\n", false), "{path}");
    }
    let wrote = call(&toolset, "write", json!({"file_path": "../outside/new.txt", "content": "ok"})).await;
    assert!(!wrote.is_error, "{wrote:?}");
    assert_eq!(fs::read_to_string(f.outside.join("new.txt")).unwrap(), "ok");
    refused(
        &call(&toolset, "read", json!({"file_path": "/etc/passwd"})).await,
        "read: path '/etc/passwd' is outside the session's working directory and its other permitted directories",
    );
}

#[tokio::test]
async fn read_only_roots_refuse_writes_and_edits() {
    let f = fixture();
    let locked = f.work.join("locked");
    fs::create_dir_all(&locked).unwrap();
    fs::write(locked.join("a.txt"), "keep\n").unwrap();
    let toolset = Toolset::builder(&f.work).read_only_root(&locked).read_only_root(&f.outside).build().unwrap();

    let inside = locked.display();
    refused(
        &call(&toolset, "write", json!({"file_path": "locked/a.txt", "content": "x"})).await,
        &format!("write: locked/a.txt is inside read-only directory {inside}"),
    );
    refused(
        &call(&toolset, "edit", json!({"file_path": "locked/a.txt", "old_string": "keep", "new_string": "x"})).await,
        &format!("edit: locked/a.txt is inside read-only directory {inside}"),
    );
    refused(
        &call(&toolset, "write", json!({"file_path": "locked/new/b.txt", "content": "x"})).await,
        &format!("write: locked/new/b.txt is inside read-only directory {inside}"),
    );
    assert!(!locked.join("new").exists());
    let read = call(&toolset, "read", json!({"file_path": "locked/a.txt"})).await;
    assert_eq!((read.text.as_str(), read.is_error), ("keep\n", false));

    // A read-only root outside the working directory can be read, not written.
    let read = call(&toolset, "read", json!({"file_path": "../outside/secret.txt"})).await;
    assert_eq!((read.text.as_str(), read.is_error), ("secret\n", false));
    let outside = f.outside.display();
    refused(
        &call(&toolset, "write", json!({"file_path": "../outside/secret.txt", "content": "x"})).await,
        &format!("write: ../outside/secret.txt is inside read-only directory {outside}"),
    );
    assert_eq!(fs::read_to_string(f.outside.join("secret.txt")).unwrap(), "secret\n");
    // The rest of the working directory stays writable.
    let wrote = call(&toolset, "write", json!({"file_path": "free.txt", "content": "x"})).await;
    assert!(!wrote.is_error, "{wrote:?}");
}

#[tokio::test]
async fn odd_paths_give_error_results() {
    let f = fixture();
    let toolset = Toolset::new(&f.work).unwrap();
    refused(&call(&toolset, "read", json!({"file_path": "a\u{0}b"})).await, "read: embedded null byte");
    refused(
        &call(&toolset, "read", json!({"file_path": "missing.txt"})).await,
        "read: missing.txt: no such file or directory",
    );
    refused(&call(&toolset, "read", json!({"file_path": "inside.txt/x"})).await, "read: inside.txt/x: not a directory");
    symlink("loop", f.work.join("loop")).unwrap();
    refused(
        &call(&toolset, "read", json!({"file_path": "loop"})).await,
        "read: path 'loop': too many levels of symbolic links",
    );
    assert!(Path::new(&f.work).is_dir());
}
