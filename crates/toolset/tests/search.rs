//! glob and grep: patterns, newest-first order, limits, what grep skips, and the output format.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use managed_agents_toolset::{ToolCallResult, Toolset};
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    toolset: Toolset,
}

fn touch(path: &Path, contents: &str, age_secs: u64) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, contents).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_secs)).unwrap();
}

impl Fixture {
    /// main.rs (newest), src/lib.rs, src/deep/x.rs, README.md (oldest), .git and node_modules contents.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        touch(&root.join("main.rs"), "fn main() {}\n// TODO: main\n", 10);
        touch(&root.join("src/lib.rs"), "pub fn a() {}\n// todo lower\n", 100);
        touch(&root.join("src/deep/x.rs"), "TODO deep\n", 1000);
        touch(&root.join("README.md"), "# readme\nTODO docs\r\n", 10_000);
        touch(&root.join(".git/config"), "TODO in git\n", 5);
        touch(&root.join("node_modules/m/index.js"), "TODO in node_modules\n", 5);
        let toolset = Toolset::new(&root).unwrap();
        Self { _dir: dir, root, toolset }
    }

    async fn call(&self, name: &str, input: Value) -> ToolCallResult {
        self.toolset.call(name, &input).await
    }

    async fn ok(&self, name: &str, input: Value) -> String {
        let result = self.call(name, input).await;
        assert!(!result.is_error, "{result:?}");
        result.text
    }

    /// `names` as absolute paths, one a line.
    fn paths(&self, names: &[&str]) -> String {
        names.iter().map(|name| self.root.join(name).display().to_string()).collect::<Vec<_>>().join("\n")
    }
}

#[tokio::test]
async fn glob_lists_matches_newest_first() {
    let f = Fixture::new();
    assert_eq!(f.ok("glob", json!({"pattern": "**/*.rs"})).await, f.paths(&["main.rs", "src/lib.rs", "src/deep/x.rs"]));
    assert_eq!(f.ok("glob", json!({"pattern": "*.rs"})).await, f.paths(&["main.rs"]));
    assert_eq!(f.ok("glob", json!({"pattern": "./src/*.rs"})).await, f.paths(&["src/lib.rs"]));
    assert_eq!(f.ok("glob", json!({"pattern": "*.rs", "path": "src"})).await, f.paths(&["src/lib.rs"]));
    assert_eq!(f.ok("glob", json!({"pattern": "*.{md,rs}"})).await, f.paths(&["main.rs", "README.md"]));
    assert_eq!(f.ok("glob", json!({"pattern": "src/d??p/[a-x].rs"})).await, f.paths(&["src/deep/x.rs"]));
    assert_eq!(f.ok("glob", json!({"pattern": "*.none"})).await, "no matches");
    assert_eq!(f.ok("glob", json!({"pattern": "*", "path": "missing-dir"})).await, "no matches");
    // Hidden files and directories are matched like any other; `src/**` names src and the directories in it.
    assert_eq!(f.ok("glob", json!({"pattern": ".git/*"})).await, f.paths(&[".git/config"]));
    let dirs = f.ok("glob", json!({"pattern": "src/**"})).await;
    let mut dirs: Vec<&str> = dirs.lines().collect();
    dirs.sort_unstable();
    assert_eq!(dirs.join("\n"), f.paths(&["src", "src/deep"]));
}

#[tokio::test]
async fn glob_refuses_bad_patterns() {
    let f = Fixture::new();
    for (pattern, expected) in [
        ("/etc/*", "glob: absolute pattern not permitted; pass a relative pattern (and optionally path)"),
        ("src/../../*", "glob: '..' is not permitted in the pattern"),
        ("", "glob: Unacceptable pattern: ''"),
        ("./", "glob: Unacceptable pattern: './'"),
    ] {
        let result = f.call("glob", json!({"pattern": pattern})).await;
        assert_eq!((result.text.as_str(), result.is_error), (expected, true), "{pattern}");
    }
    let missing = f.call("glob", json!({"path": "src"})).await;
    assert_eq!(missing.text, "Invalid arguments for function glob: `pattern`: field required");
}

#[tokio::test]
async fn glob_keeps_at_most_200_paths() {
    let f = Fixture::new();
    fs::create_dir_all(f.root.join("many")).unwrap();
    for i in 0..250 {
        fs::write(f.root.join(format!("many/{i:03}.txt")), "").unwrap();
    }
    let listed = f.ok("glob", json!({"pattern": "many/*.txt"})).await;
    assert_eq!(listed.lines().count(), 200);
}

#[tokio::test]
async fn grep_prints_path_line_and_text() {
    let f = Fixture::new();
    // The files of a directory come before its subdirectories; .git and node_modules are skipped; `\r` is
    // trimmed.
    let expected = [
        format!("{}:2:TODO docs", f.root.join("README.md").display()),
        format!("{}:2:// TODO: main", f.root.join("main.rs").display()),
        format!("{}:1:TODO deep", f.root.join("src/deep/x.rs").display()),
    ];
    assert_eq!(f.ok("grep", json!({"pattern": "TODO"})).await, expected.join("\n"));
    assert_eq!(
        f.ok("grep", json!({"pattern": "(?i)todo", "path": "src"})).await,
        [
            format!("{}:2:// todo lower", f.root.join("src/lib.rs").display()),
            format!("{}:1:TODO deep", f.root.join("src/deep/x.rs").display()),
        ]
        .join("\n")
    );
    // A single file.
    assert_eq!(
        f.ok("grep", json!({"pattern": "^fn", "path": "main.rs"})).await,
        format!("{}:1:fn main() {{}}", f.root.join("main.rs").display())
    );
    assert_eq!(f.ok("grep", json!({"pattern": "nothing-like-this"})).await, "no matches");
    assert_eq!(f.ok("grep", json!({"pattern": "TODO", "path": "missing"})).await, "no matches");
}

#[tokio::test]
async fn grep_skips_binary_files_and_long_lines() {
    let f = Fixture::new();
    fs::write(f.root.join("bin.dat"), b"needle\0binary\n").unwrap();
    fs::write(f.root.join("long.txt"), format!("{} needle\nshort needle\n", "x".repeat(2000))).unwrap();
    assert_eq!(
        f.ok("grep", json!({"pattern": "needle"})).await,
        format!("{}:2:short needle", f.root.join("long.txt").display())
    );
}

#[tokio::test]
async fn grep_output_is_capped() {
    let f = Fixture::new();
    let line = format!("{}\n", "hit ".repeat(200));
    fs::write(f.root.join("hits.txt"), line.repeat(200)).unwrap();
    let out = f.ok("grep", json!({"pattern": "hit", "path": "hits.txt"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.last(), Some(&"[output truncated at 102400 bytes]"));
    let kept: usize = lines[..lines.len() - 1].iter().map(|l| l.chars().count() + 1).sum();
    assert!(kept <= 100 * 1024, "{kept}");
    assert!(lines.len() > 100);
}

#[tokio::test]
async fn grep_reports_a_bad_regex() {
    let f = Fixture::new();
    let result = f.call("grep", json!({"pattern": "(unclosed"})).await;
    assert!(result.is_error);
    assert!(result.text.starts_with("grep: invalid regex: "), "{}", result.text);
}
