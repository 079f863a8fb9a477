//! The configuration file and `--mcp-config`: defaults that flags override, MCP servers from files.

use crate::support::{Home, json, script, text};

/// The echo server, as a TOML table of the configuration file.
const ECHO_TABLE: &str = "[mcp_servers.echo]\ncommand = \"python3\"\nargs = [\"tests/servers/echo_server.py\"]\n";

#[test]
fn config_path_shows_where_the_file_is_read_from() {
    let home = Home::new();
    let output = home.cli().args(["config", "path"]).output().unwrap();
    assert_eq!(text(&output.stdout).trim(), home.path().join("config.toml").display().to_string());
    let output = home
        .cli()
        .args(["config", "path"])
        .env_remove("MANAGED_AGENTS_CONFIG")
        .env("XDG_CONFIG_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(text(&output.stdout).trim(), home.path().join("managed-agents/config.toml").display().to_string());
    let example = home.cli().args(["config", "example"]).output().unwrap();
    assert!(text(&example.stdout).contains("[mcp_servers.time]"));
}

#[test]
fn the_config_file_gives_servers_approvals_and_defaults_and_flags_win() {
    let home = Home::new();
    home.config(&format!("max_turns = 1\nallow = [\"echo__echo\"]\n{ECHO_TABLE}"));
    let output = home.cli().args(["run", "go", "--json", "--script", &script("echo_then_fail.json")]).output().unwrap();
    let stderr = text(&output.stderr);
    assert!(stderr.contains("tools: echo__echo, echo__fail"), "the file's server: {stderr}");
    assert_eq!(output.status.code(), Some(2), "the file's max_turns: {stderr}");

    let output = home
        .cli()
        .args(["run", "go", "--json", "--max-turns", "5", "--script", &script("echo_then_fail.json")])
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "the flag wins: {stderr}");
    assert!(stderr.contains("↳ echo__echo → echo: hi"), "the file's approval: {stderr}");
    assert!(stderr.contains("echo__fail denied"), "only the file's tool is allowed: {stderr}");
    assert_eq!(json(&output.stdout)["result"]["text"], "Done.");
}

#[test]
fn a_malformed_config_file_is_a_usage_error_naming_it() {
    let home = Home::new();
    home.config("modle = \"x\"\n");
    let output = home.cli().args(["run", "go", "--script", &script("hello.json")]).output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("config.toml") && stderr.contains("modle"), "{stderr}");
}

#[test]
fn mcp_config_reads_the_mcp_servers_format_of_other_clients() {
    let home = Home::new();
    let file = home.file(
        "mcp.json",
        r#"{"mcpServers": {"echo": {"command": "python3", "args": ["tests/servers/echo_server.py"]}, "off": {"command": "nope", "disabled": true}}}"#,
    );
    let output = home
        .cli()
        .args(["run", "go", "--yes", "--script", &script("mcp_echo.json"), "--mcp-config"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("tools: echo__echo, echo__fail") && stderr.contains("echo: hi"), "{stderr}");

    let bad = home.file("bad.json", r#"{"mcpServers": {"x": {}}}"#);
    let output = home.cli().args(["run", "go", "--mcp-config"]).arg(&bad).output().unwrap();
    assert_eq!(output.status.code(), Some(64));
    assert!(text(&output.stderr).contains("MCP server `x`"), "{}", text(&output.stderr));
}
