//! The emulator's self-hosted environments over real HTTP: the work queue a worker long-polls (poll, ack,
//! heartbeat, stop, metadata, list, stats), leases that lapse, un-acked items offered again, the credentials a
//! worker holds, and a self-hosted session whose built-in tool calls wait for its worker's `user.tool_result`.
//! The official Python SDK's `EnvironmentWorker` serves such a session in the workspace's
//! `tests/tests/self_hosted_sdk.rs`.

use std::time::{Duration, Instant};

use managed_agents_claude::emulator::{ClaudeEmulator, EmulatorOptions};
use managed_agents_conformance::{Script, ScriptToolCall, ScriptTurn};
use managed_agents_core::http::{
    Bytes, HttpClient, IncomingBody, Method, Request, RequestBody, Response, SseBody, read_body,
};
use serde_json::{Value, json};

/// The beta header of the wire, spelt out.
const MANAGED_AGENTS_BETA: &str = "managed-agents-2026-04-01";

/// The account's API key: any credential the emulator did not mint.
const ACCOUNT: &str = "test-key";

/// Raw requests to the emulator.
struct Api {
    base: String,
    http: HttpClient,
}

impl Api {
    fn new(emulator: &ClaudeEmulator) -> Self {
        Self { base: emulator.base_url(), http: HttpClient::new(Duration::from_secs(5)).unwrap() }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        key: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Response<IncomingBody> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("anthropic-version", "2023-06-01")
            .header("anthropic-beta", MANAGED_AGENTS_BETA)
            .header("authorization", format!("Bearer {key}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = match body {
            Some(body) => {
                request = request.header("content-type", "application/json");
                RequestBody::new(Bytes::from(body.to_string()))
            }
            None => RequestBody::default(),
        };
        self.http.send(request.body(body).unwrap(), Duration::from_secs(10)).await.unwrap()
    }

    /// Sends a request and reads its JSON answer.
    async fn call(&self, method: Method, path: &str, key: &str, body: Option<&Value>) -> (u16, Value) {
        let response = self.send(method, path, key, body, &[]).await;
        let status = response.status().as_u16();
        let bytes = read_body(response.into_body(), 1 << 20, Duration::from_secs(10)).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, key: &str) -> (u16, Value) {
        self.call(Method::GET, path, key, None).await
    }

    async fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, path, key, Some(&body)).await
    }

    /// A poll of `environment`'s queue by worker `worker` with the query `query`.
    async fn poll(&self, environment: &str, key: &str, worker: &str, query: &str) -> (u16, Value) {
        let path = format!("/v1/environments/{environment}/work/poll?{query}");
        let response = self.send(Method::GET, &path, key, None, &[("anthropic-worker-id", worker)]).await;
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string);
        let bytes = read_body(response.into_body(), 1 << 20, Duration::from_secs(10)).await.unwrap();
        if status == 200 {
            assert_eq!(content_type.as_deref(), Some("application/json"), "a poll answers JSON");
        }
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// Creates an agent with `tools` and a self-hosted environment; returns their ids.
    async fn self_hosted(&self, name: &str, tools: Value) -> (String, String) {
        let (status, agent) =
            self.post("/v1/agents", ACCOUNT, json!({"name": name, "model": "claude-sonnet-4-6", "tools": tools})).await;
        assert_eq!(status, 200, "{agent}");
        let body = json!({"name": name, "config": {"type": "self_hosted"}});
        let (status, environment) = self.post("/v1/environments", ACCOUNT, body).await;
        assert_eq!(status, 200, "{environment}");
        assert_eq!(environment["config"], json!({"type": "self_hosted"}));
        (agent["id"].as_str().unwrap().to_string(), environment["id"].as_str().unwrap().to_string())
    }

    /// Creates a session of `agent` in `environment`, kicked off with `prompt` when given; returns its id.
    async fn session(&self, agent: &str, environment: &str, prompt: Option<&str>) -> String {
        let mut body = json!({"agent": agent, "environment_id": environment});
        if let Some(prompt) = prompt {
            body["initial_events"] = json!([user_message(prompt)]);
        }
        let (status, session) = self.post("/v1/sessions", ACCOUNT, body).await;
        assert_eq!(status, 200, "{session}");
        session["id"].as_str().unwrap().to_string()
    }

    /// Posts `events` to session `session` with `key`.
    async fn events(&self, session: &str, key: &str, events: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/events"), key, json!({ "events": events })).await
    }

    /// Opens session `session`'s event stream with `key`.
    async fn stream(&self, session: &str, key: &str) -> SseBody {
        let response = self.send(Method::GET, &format!("/v1/sessions/{session}/events/stream"), key, None, &[]).await;
        assert_eq!(response.status().as_u16(), 200);
        SseBody::new(response.into_body(), Duration::from_secs(10))
    }
}

fn user_message(text: &str) -> Value {
    json!({"type": "user.message", "content": [{"type": "text", "text": text}]})
}

fn tool_result(id: &str, text: &str) -> Value {
    json!({"type": "user.tool_result", "tool_use_id": id, "content": [{"type": "text", "text": text}],
        "is_error": false})
}

/// The events of `stream` up to and including the next `session.status_idle`.
async fn until_idle(stream: &mut SseBody) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let frame = stream.next().await.unwrap().expect("the stream stays open");
        let event: Value = serde_json::from_str(&frame.data).unwrap();
        let idle = event["type"] == "session.status_idle";
        events.push(event);
        if idle {
            return events;
        }
    }
}

/// The `event_ids` a `requires_action` idle names.
fn awaited(idle: &Value) -> Vec<&str> {
    assert_eq!(idle["stop_reason"]["type"], "requires_action", "{idle}");
    idle["stop_reason"]["event_ids"].as_array().unwrap().iter().map(|id| id.as_str().unwrap()).collect()
}

/// Decodes URL-safe base64, padded or not.
fn base64url_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not URL-safe base64: {text}"),
    };
    let digits: Vec<u8> = text.trim_end_matches('=').bytes().map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
        for byte in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * byte)) as u8);
        }
    }
    out
}

/// The sessions token a polled item's `secret` carries.
fn sessions_token(item: &Value) -> String {
    let payload: Value = serde_json::from_slice(&base64url_decode(item["secret"].as_str().unwrap())).unwrap();
    payload["sessions_token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_work_item_goes_from_the_queue_through_its_lease_to_stopped() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let api = Api::new(&emulator);
    let (agent, environment) = api.self_hosted("queue", json!([])).await;
    let key = emulator.environment_key(&environment).expect("a self-hosted environment has a key");
    let work = format!("/v1/environments/{environment}/work");
    let session = api.session(&agent, &environment, None).await;

    let (_, stats) = api.get(&format!("{work}/stats"), &key).await;
    assert_eq!(
        (stats["type"].as_str(), stats["depth"].as_u64(), stats["pending"].as_u64()),
        (Some("work_queue_stats"), Some(1), Some(0))
    );
    assert!(stats["oldest_queued_at"].is_string(), "{stats}");
    assert_eq!(stats["workers_polling"], 0);

    let (status, item) = api.poll(&environment, &key, "worker-1", "block_ms=100").await;
    assert_eq!(status, 200);
    assert_eq!((item["type"].as_str(), item["state"].as_str()), (Some("work"), Some("queued")));
    assert_eq!(item["data"], json!({"type": "session", "id": session}));
    assert_eq!(item["environment_id"], environment.as_str());
    let id = item["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("work_"), "{id}");
    let token = sessions_token(&item);
    let (_, stats) = api.get(&format!("{work}/stats"), &key).await;
    assert_eq!((stats["depth"].as_u64(), stats["pending"].as_u64()), (Some(0), Some(1)), "polled, not acked");
    assert_eq!(stats["workers_polling"], 1);

    let (status, acked) = api.post(&format!("{work}/{id}/ack"), &key, json!({})).await;
    assert_eq!((status, acked["state"].as_str()), (200, Some("starting")));
    assert!(acked["acknowledged_at"].is_string() && acked["secret"].is_null(), "{acked}");
    let (_, stats) = api.get(&format!("{work}/stats"), &key).await;
    assert_eq!((stats["depth"].as_u64(), stats["pending"].as_u64()), (Some(0), Some(0)), "acked: off the queue");
    assert!(stats["oldest_queued_at"].is_null());
    let (status, _) = api.post(&format!("{work}/{id}/ack"), &key, json!({})).await;
    assert_eq!(status, 409, "only a queued item is acked");

    let beat = |expected: String| {
        let path = format!("{work}/{id}/heartbeat?expected_last_heartbeat={expected}");
        let (api, token) = (&api, token.clone());
        async move { api.post(&path, &token, json!({})).await }
    };
    let (status, first) = beat("NO_HEARTBEAT".into()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["type"], "work_heartbeat");
    assert_eq!((first["state"].as_str(), first["lease_extended"].as_bool()), (Some("active"), Some(true)));
    assert_eq!(first["ttl_seconds"], 300, "the service's default lease");
    let last = first["last_heartbeat"].as_str().unwrap().to_string();
    let (status, second) = beat(last.clone()).await;
    assert_eq!(status, 200);
    let latest = second["last_heartbeat"].as_str().unwrap().to_string();
    assert_ne!(latest, last, "each beat stores a new value");
    let (status, refused) = beat(last).await;
    assert_eq!(status, 412, "a stale heartbeat");
    let details = &refused["error"]["details"];
    assert_eq!(details["error_code"], "heartbeat_precondition_failed");
    assert_eq!(
        details["current_state"],
        json!({"last_heartbeat": latest, "lease_extended": false, "state": "active", "ttl_seconds": 300})
    );
    let (status, _) = beat("NO_HEARTBEAT".into()).await;
    assert_eq!(status, 412, "the lease has a heartbeat already");

    let (_, retrieved) = api.get(&format!("{work}/{id}"), ACCOUNT).await;
    assert_eq!(
        (retrieved["state"].as_str(), retrieved["latest_heartbeat_at"].as_str()),
        (Some("active"), Some(latest.as_str()))
    );
    assert!(retrieved["started_at"].is_string() && retrieved["secret"].is_null(), "{retrieved}");

    let (status, updated) = api.post(&format!("{work}/{id}"), ACCOUNT, json!({"metadata": {"a": "1", "b": "2"}})).await;
    assert_eq!((status, &updated["metadata"]), (200, &json!({"a": "1", "b": "2"})));
    let patch = json!({"metadata": {"a": null, "b": "", "c": "3"}});
    let (_, updated) = api.post(&format!("{work}/{id}"), ACCOUNT, patch).await;
    assert_eq!(updated["metadata"], json!({"c": "3"}), "null and \"\" delete a key");
    for bad in [json!({}), json!({"metadata": {"n": 1}}), json!({"metadata": "x"})] {
        let (status, answer) = api.post(&format!("{work}/{id}"), ACCOUNT, bad).await;
        assert_eq!((status, answer["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{answer}");
    }
    let response = api.send(Method::POST, &format!("{work}/{id}/stop"), &key, None, &[]).await;
    assert_eq!(response.status().as_u16(), 200, "a stop without a body is graceful");

    let (_, stopping) = api.get(&format!("{work}/{id}"), &key).await;
    assert_eq!(stopping["state"], "stopping");
    assert!(stopping["stop_requested_at"].is_string() && stopping["stopped_at"].is_null());
    let (status, told) = beat("anything".into()).await;
    assert_eq!(status, 200, "a stopping item's heartbeat is not compared");
    assert_eq!((told["state"].as_str(), told["lease_extended"].as_bool()), (Some("stopping"), Some(false)));
    let (status, stopped) = api.post(&format!("{work}/{id}/stop"), &token, json!({"force": true})).await;
    assert_eq!((status, stopped["state"].as_str()), (200, Some("stopped")));
    assert!(stopped["stopped_at"].is_string());
    let (status, _) = api.post(&format!("{work}/{id}/stop"), &token, json!({"force": true})).await;
    assert_eq!(status, 409, "already stopped");
    let (status, _) = api.post(&format!("{work}/{id}/stop"), &key, json!({"force": "yes"})).await;
    assert_eq!(status, 400);

    // The stopped session's next message queues a new item; a message while it is live does not.
    assert_eq!(api.events(&session, ACCOUNT, json!([user_message("again")])).await.0, 200);
    assert_eq!(api.events(&session, ACCOUNT, json!([user_message("and again")])).await.0, 200);
    let items = emulator.work_items(&environment);
    let states: Vec<&str> = items.iter().map(|item| item["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["stopped", "queued"]);

    api.session(&agent, &environment, None).await;
    let (_, first_page) = api.get(&format!("{work}?limit=2"), &key).await;
    let ids: Vec<&str> = first_page["data"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id.as_str(), items[1]["id"].as_str().unwrap()], "oldest first");
    let next = first_page["next_page"].as_str().expect("a second page");
    let (_, second_page) = api.get(&format!("{work}?limit=2&page={next}"), &key).await;
    assert_eq!(second_page["data"].as_array().unwrap().len(), 1);
    assert!(second_page["next_page"].is_null());
}

#[tokio::test]
async fn a_poll_waits_for_work_and_answers_null_without() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let api = Api::new(&emulator);
    let (agent, environment) = api.self_hosted("polls", json!([])).await;
    let key = emulator.environment_key(&environment).unwrap();

    let started = Instant::now();
    let (status, none) = api.poll(&environment, &key, "w", "block_ms=200").await;
    assert_eq!((status, none), (200, Value::Null), "no work: a JSON null");
    assert!(started.elapsed() >= Duration::from_millis(190), "it blocked for block_ms: {:?}", started.elapsed());
    let started = Instant::now();
    assert_eq!(api.poll(&environment, &key, "w", "").await, (200, Value::Null), "without block_ms: at once");
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    for bad in ["block_ms=0", "block_ms=1000", "block_ms=soon", "reclaim_older_than_ms=-1"] {
        let (status, answer) = api.poll(&environment, &key, "w", bad).await;
        assert_eq!((status, answer["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{bad}");
    }

    // A poll blocked when a session is created gets the session's item.
    let polls_before = emulator.requests().len();
    let blocked = {
        let (api, environment, key) = (Api::new(&emulator), environment.clone(), key.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = api.poll(&environment, &key, "w", "block_ms=999").await;
            (answer, started.elapsed())
        })
    };
    while emulator.requests().len() == polls_before {
        tokio::task::yield_now().await;
    }
    let session = api.session(&agent, &environment, None).await;
    let ((status, item), waited) = blocked.await.unwrap();
    assert_eq!((status, item["data"]["id"].as_str()), (200, Some(session.as_str())));
    assert!(waited < Duration::from_millis(999), "woken by the new item, not the timeout: {waited:?}");
}

#[tokio::test]
async fn a_lapsed_lease_requeues_the_item_and_refuses_its_old_holder() {
    let options = EmulatorOptions::default().with_work_lease_ttl(Duration::from_secs(1));
    let emulator = ClaudeEmulator::start_with(Script::new(), options).await.unwrap();
    let api = Api::new(&emulator);
    let (agent, environment) = api.self_hosted("leases", json!([])).await;
    let key = emulator.environment_key(&environment).unwrap();
    let work = format!("/v1/environments/{environment}/work");
    api.session(&agent, &environment, None).await;

    let (_, item) = api.poll(&environment, &key, "first", "").await;
    let id = item["id"].as_str().unwrap().to_string();
    api.post(&format!("{work}/{id}/ack"), &key, json!({})).await;
    let (_, beat) =
        api.post(&format!("{work}/{id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT"), &key, json!({})).await;
    assert_eq!(beat["ttl_seconds"], 1);
    let last = beat["last_heartbeat"].as_str().unwrap().to_string();

    // The first holder goes silent: a second worker's blocked poll sees the lease lapse within its window.
    let started = Instant::now();
    let reclaimed = loop {
        let (_, answer) = api.poll(&environment, &key, "second", "block_ms=999").await;
        if !answer.is_null() {
            break answer;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "the lease never lapsed");
    };
    assert!(started.elapsed() >= Duration::from_millis(900), "not before the TTL: {:?}", started.elapsed());
    assert_eq!((reclaimed["id"].as_str(), reclaimed["state"].as_str()), (Some(id.as_str()), Some("queued")));
    assert!(reclaimed["latest_heartbeat_at"].is_null(), "the stored heartbeat is cleared");

    let path = format!("{work}/{id}/heartbeat?expected_last_heartbeat={last}");
    let (status, refused) = api.post(&path, &key, json!({})).await;
    assert_eq!(status, 412, "the old holder lost the lease");
    let current = &refused["error"]["details"]["current_state"];
    assert_eq!((current["state"].as_str(), current["last_heartbeat"].is_null()), (Some("queued"), true), "{refused}");

    api.post(&format!("{work}/{id}/ack"), &key, json!({})).await;
    let (status, beat) = api
        .post(
            &format!("{work}/{id}/heartbeat?expected_last_heartbeat=NO_HEARTBEAT&desired_ttl_seconds=30"),
            &key,
            json!({}),
        )
        .await;
    assert_eq!((status, beat["ttl_seconds"].as_u64()), (200, Some(30)), "the new holder starts afresh: {beat}");
}

#[tokio::test]
async fn an_unacked_item_is_offered_again_after_reclaim_older_than_ms() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let api = Api::new(&emulator);
    let (agent, environment) = api.self_hosted("reclaim", json!([])).await;
    let key = emulator.environment_key(&environment).unwrap();
    api.session(&agent, &environment, None).await;

    let (_, offered) = api.poll(&environment, &key, "a", "").await;
    assert!(offered.is_object());
    assert_eq!(api.poll(&environment, &key, "b", "").await.1, Value::Null, "pending for 5 s by default");
    let started = Instant::now();
    let (_, again) = api.poll(&environment, &key, "b", "block_ms=999&reclaim_older_than_ms=100").await;
    assert_eq!(again["id"], offered["id"], "reclaimed");
    assert!(started.elapsed() < Duration::from_millis(900), "as soon as it is old enough: {:?}", started.elapsed());
    let (_, stats) = api.get(&format!("/v1/environments/{environment}/work/stats"), &key).await;
    assert_eq!((stats["pending"].as_u64(), stats["workers_polling"].as_u64()), (Some(1), Some(2)));
}

#[tokio::test]
async fn a_self_hosted_session_waits_for_its_workers_tool_results() {
    let calls = [
        ScriptToolCall::host("toolu_bash", "bash", json!({"command": "echo hi"})).expecting("hi"),
        ScriptToolCall::host("toolu_write", "write", json!({"file_path": "a.txt", "content": "x"})).expecting("wrote"),
        ScriptToolCall::new("toolu_lookup", "lookup", json!({"q": "x"})).expecting("found"),
    ];
    let script = Script::new().turn(ScriptTurn::tool_calls(calls)).turn(ScriptTurn::text("all done"));
    let emulator = ClaudeEmulator::start(script).await.unwrap();
    let api = Api::new(&emulator);
    let toolset = json!({"type": "agent_toolset_20260401", "default_config": {"permission_policy": {"type": "always_allow"}},
        "configs": [{"name": "write", "permission_policy": {"type": "always_ask"}}]});
    let (agent, environment) = api.self_hosted("sandbox", json!([toolset])).await;
    let key = emulator.environment_key(&environment).unwrap();
    let session = api.session(&agent, &environment, None).await;
    let mut stream = api.stream(&session, &key).await;
    assert_eq!(api.events(&session, ACCOUNT, json!([user_message("go")])).await.0, 200);

    let turn = until_idle(&mut stream).await;
    let uses: Vec<(&str, &str, &str)> = turn
        .iter()
        .filter(|e| e["type"] == "agent.tool_use")
        .map(|e| (e["id"].as_str().unwrap(), e["name"].as_str().unwrap(), e["evaluated_permission"].as_str().unwrap()))
        .collect();
    assert_eq!(uses, [("toolu_bash", "bash", "allow"), ("toolu_write", "write", "ask")]);
    assert!(!turn.iter().any(|e| e["type"] == "agent.tool_result"), "the emulator runs none of them: {turn:?}");
    assert_eq!(awaited(turn.last().unwrap()), ["toolu_bash", "toolu_write", "toolu_lookup"]);

    for (event, why) in [
        (tool_result("toolu_nope", "?"), "not awaited"),
        (tool_result("toolu_lookup", "?"), "a custom call"),
        (tool_result("toolu_write", "?"), "not confirmed yet"),
        (json!({"type": "user.tool_result", "content": []}), "no tool_use_id"),
    ] {
        let (status, answer) = api.events(&session, &key, json!([event])).await;
        assert_eq!((status, answer["error"]["type"].as_str()), (400, Some("invalid_request_error")), "{why}: {answer}");
    }
    assert_eq!(api.events(&session, &key, json!([tool_result("toolu_bash", "hi\n")])).await.0, 200);
    let (status, _) = api.events(&session, &key, json!([tool_result("toolu_bash", "hi\n")])).await;
    assert_eq!(status, 400, "answered already");
    let idle = until_idle(&mut stream).await;
    assert_eq!(awaited(idle.last().unwrap()), ["toolu_write", "toolu_lookup"]);

    let allow = json!({"type": "user.tool_confirmation", "tool_use_id": "toolu_write", "result": "allow"});
    assert_eq!(api.events(&session, ACCOUNT, json!([allow])).await.0, 200);
    let idle = until_idle(&mut stream).await;
    assert_eq!(awaited(idle.last().unwrap()), ["toolu_write", "toolu_lookup"], "allowed, it awaits its result");

    let (_, item) = api.poll(&environment, &key, "w", "").await;
    let token = sessions_token(&item);
    assert_eq!(api.events(&session, &token, json!([tool_result("toolu_write", "refused")])).await.0, 200);
    let idle = until_idle(&mut stream).await;
    assert_eq!(awaited(idle.last().unwrap()), ["toolu_lookup"]);
    let custom = json!({"type": "user.custom_tool_result", "custom_tool_use_id": "toolu_lookup",
        "content": [{"type": "text", "text": "found it"}]});
    assert_eq!(api.events(&session, ACCOUNT, json!([custom])).await.0, 200);
    let next = until_idle(&mut stream).await;
    let message = next.iter().find(|e| e["type"] == "agent.message").expect("the next turn");
    assert_eq!(message["content"][0]["text"], "all done");
    assert_eq!(next.last().unwrap()["stop_reason"]["type"], "end_turn");

    let results = emulator.tool_result_events(&session);
    let ids: Vec<&str> = results.iter().map(|e| e["tool_use_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["toolu_bash", "toolu_write"]);
    let unexpected = emulator.unexpected_tool_results();
    assert_eq!(unexpected.len(), 1, "{unexpected:?}");
    assert!(
        unexpected[0].contains(&session) && unexpected[0].contains("toolu_write") && unexpected[0].contains("refused")
    );
}

#[tokio::test]
async fn environment_keys_and_sessions_tokens_are_scoped() {
    let emulator = ClaudeEmulator::start(Script::new()).await.unwrap();
    let api = Api::new(&emulator);
    let (agent, first) = api.self_hosted("first", json!([])).await;
    let second = emulator.insert_self_hosted_environment("second");
    let (first_key, second_key) =
        (emulator.environment_key(&first).unwrap(), emulator.environment_key(&second).unwrap());
    assert_ne!(first_key, second_key);
    assert_eq!(emulator.environment_key(&first), Some(first_key.clone()), "one key per environment");
    let (_, hosted) = api.post("/v1/environments", ACCOUNT, json!({"name": "hosted"})).await;
    let hosted = hosted["id"].as_str().unwrap();
    assert_eq!(emulator.environment_key(hosted), None);
    let (status, _) = api.get(&format!("/v1/environments/{hosted}/work/poll"), ACCOUNT).await;
    assert_eq!(status, 400, "a hosted environment has no queue");

    let session = api.session(&agent, &first, None).await;
    let other = api.session(&agent, &first, None).await;
    let elsewhere = api.session(&agent, &second, None).await;
    let (status, refused) = api.poll(&second, &first_key, "w", "").await;
    assert_eq!(
        (status, refused["error"]["type"].as_str()),
        (403, Some("permission_error")),
        "another environment's work"
    );
    assert_eq!(api.get(&format!("/v1/sessions/{elsewhere}"), &first_key).await.0, 403);
    assert_eq!(api.get("/v1/agents", &first_key).await.0, 403, "not the account's key");
    assert_eq!(api.get(&format!("/v1/sessions/{session}"), &first_key).await.0, 200);

    let (_, item) = api.poll(&first, &first_key, "w", "").await;
    let token = sessions_token(&item);
    let id = item["id"].as_str().unwrap();
    let owner = item["data"]["id"].as_str().unwrap();
    let not_owner = if owner == session { &other } else { &session };
    assert_eq!(api.get(&format!("/v1/sessions/{owner}"), &token).await.0, 200);
    assert_eq!(api.get(&format!("/v1/sessions/{owner}/events"), &token).await.0, 200);
    assert_eq!(api.get(&format!("/v1/sessions/{not_owner}"), &token).await.0, 403, "another session");
    assert_eq!(
        api.post(&format!("/v1/sessions/{owner}/archive"), &token, json!({})).await.0,
        403,
        "not a worker's call"
    );
    assert_eq!(api.poll(&first, &token, "w", "").await.0, 403, "an item's token does not poll");
    assert_eq!(api.post(&format!("/v1/environments/{first}/work/{id}/ack"), &token, json!({})).await.0, 200);
    let (status, _) = api.events(owner, &token, json!([user_message("more")])).await;
    assert_eq!(status, 200);
    assert_eq!(api.get(&format!("/v1/environments/{second}/work/stats"), ACCOUNT).await.0, 200, "the account may");
    let (status, answer) = api.events(&elsewhere, ACCOUNT, json!([tool_result("toolu_x", "?")])).await;
    assert_eq!(status, 400, "{answer}");
    let (_, hosted_session) =
        api.post("/v1/sessions", ACCOUNT, json!({"agent": agent, "environment_id": hosted})).await;
    let hosted_session = hosted_session["id"].as_str().unwrap();
    let (status, answer) = api.events(hosted_session, ACCOUNT, json!([tool_result("toolu_x", "?")])).await;
    assert_eq!((status, answer["error"]["message"].as_str().is_some_and(|m| m.contains("self_hosted"))), (400, true));
}
