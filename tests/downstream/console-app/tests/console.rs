//! The application's console answers a call that waits for a person, and the host's worker carries on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use downstream_console_app::{app, host};
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_host::{Worker, WorkerSettings};
use managed_agents_local::emulator::LocalEmulator;
use serde_json::{Value, json};

const TOKEN: &str = "downstream-console-token-0123";

/// One HTTP/1.1 request to `address`: the status and the body (on a blocking socket, in a blocking task).
async fn call(address: String, method: &'static str, path: String, body: Option<Value>) -> (u16, String) {
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&address).expect("the application listens");
        let body = body.map(|body| body.to_string()).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status line");
        (status, answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default())
    })
    .await
    .expect("the request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_mounted_in_the_application_answers_an_approval() {
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "refund", json!({"order": "A-7"})))
        .turn(ScriptTurn::text("Refunded A-7."));
    let emulator = LocalEmulator::start(script).await.expect("the emulator");
    let dir = std::env::temp_dir().join(format!("console-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = host(&emulator.base_url(), &dir.join("app.sqlite3")).await.expect("the host");
    let worker = Worker::new(host.clone(), WorkerSettings::new().idle_poll(Duration::from_millis(20))).unwrap();
    tokio::spawn(async move { worker.run_until(std::future::pending()).await });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let router = app(&host, TOKEN).expect("the application");
    tokio::spawn(async move { axum::serve(listener, router).await });

    assert_eq!(call(address.clone(), "GET", "/healthz".into(), None).await, (200, "ok".to_string()));
    let (status, _) =
        call(address.clone(), "POST", "/api/conversations/t1/messages".into(), Some(json!({"text": "Refund A-7"})))
            .await;
    assert_eq!(status, 202);
    // The worker runs the message until the refund waits for a person (looked for, a bounded while).
    let message = host.messages("t1").await.unwrap().remove(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let waiting = loop {
        let (_, body) = call(address.clone(), "GET", "/api/approvals".into(), None).await;
        let approvals: Value = serde_json::from_str(&body).unwrap();
        if let Some(first) = approvals["approvals"].as_array().and_then(|list| list.first()) {
            break first.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "the refund never waited for a person");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let path = format!("/api/conversations/t1/approvals/{}", waiting["tool_use_id"].as_str().unwrap());
    assert_eq!(call(address.clone(), "POST", path, Some(json!({"decision": "allow"}))).await.0, 200);
    let answered = tokio::time::timeout(Duration::from_secs(20), host.wait(message.id)).await.unwrap().unwrap();
    assert_eq!(answered.result.expect("a result").text, "Refunded A-7.");
    std::fs::remove_dir_all(&dir).ok();
}
