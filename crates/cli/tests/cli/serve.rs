//! `managed-agents serve`: the operator console on the conversations `run` keeps — a conversation run by the
//! binary shows in the console's API with its journal; the token comes from the environment only; SIGTERM stops
//! it cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{Home, json, script, text};

const TOKEN: &str = "serve-test-token-0123456789abcdef";

/// One HTTP/1.1 GET of `path` at `address` (`host:port`), with `token` as a bearer when given: status and body.
fn get(address: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("the console listens");
    let authorization = token.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\n{authorization}Connection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status line");
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (status, body)
}

#[test]
fn serve_shows_the_conversations_run_keeps_and_stops_on_sigterm() {
    let home = Home::new();
    let output =
        home.cli().args(["run", "--json", "Hello console", "--script", &script("hello.json")]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let id = json(&output.stdout)["session"].as_str().expect("an id").to_string();

    let mut child = Command::new(env!("CARGO_BIN_EXE_managed-agents"))
        .args(["serve", "--bind", "127.0.0.1:0", "--read-only"])
        .env("MANAGED_AGENTS_DB", home.path().join("sessions.sqlite3"))
        .env("MANAGED_AGENTS_CONSOLE_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let address = first.trim().strip_prefix("http://").and_then(|rest| rest.strip_suffix('/')).expect("its address");
    assert!(address.starts_with("127.0.0.1:"), "{first}");

    assert_eq!(get(address, "/api/info", None).0, 401, "the token is needed");
    let (status, info) = get(address, "/api/info", Some(TOKEN));
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&info).unwrap()["read_only"], true);
    let (_, listed) = get(address, "/api/conversations", Some(TOKEN));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["conversations"][0]["external_id"], id.as_str(), "{listed}");
    let (_, journal) = get(address, &format!("/api/conversations/{id}/journal"), Some(TOKEN));
    let journal: Value = serde_json::from_str(&journal).unwrap();
    let kinds: Vec<&str> = journal["entries"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"message"), "{journal}");
    assert_eq!(kinds.last(), Some(&"reply"), "{journal}");
    assert_eq!(journal["entries"][0]["data"]["text"], "Hello console");

    // A browser following the conversation does not keep the console from stopping.
    let mut feed = TcpStream::connect(address).unwrap();
    write!(
        feed,
        "GET /api/conversations/{id}/events HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    feed.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "the console did not stop with a feed open");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(!text(&output.stderr).contains(TOKEN), "the token is never printed");
}

#[test]
fn serve_without_a_token_says_how_to_give_one() {
    let home = Home::new();
    let output = home
        .cli()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("MANAGED_AGENTS_CONSOLE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(64), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("MANAGED_AGENTS_CONSOLE_TOKEN"), "{}", text(&output.stderr));
    let short = home
        .cli()
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("MANAGED_AGENTS_CONSOLE_TOKEN", "short")
        .output()
        .unwrap();
    assert_eq!(short.status.code(), Some(64), "{}", text(&short.stderr));
}
