//! The console's JSON API on a real store with a real worker (see `support`): authentication, CSRF, read-only
//! mode, paging and filters, the live feed, and an approval answered through the API resuming its conversation —
//! each on an SQLite file and on PostgreSQL.

mod support;

use std::future::Future;
use std::pin::Pin;

use std::time::Duration;

use hyper::{Method, StatusCode};
use managed_agents_conformance::{Fault, Script, ScriptTurn};
use managed_agents_core::conversation::{Conversation, ConversationStatus};
use serde_json::{Value, json};
use support::{Auth, ConsoleClient, Feed, MARKUP_RESULT, Rig, StoreKind, TOKEN, deploy_script};

use libtest_mimic::{Arguments, Trial};

type Case = fn(StoreKind) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Every case, run on an SQLite file and on PostgreSQL (listed as ignored, with the reason, without a server).
const CASES: &[(&str, Case)] = &[
    ("every_route_refuses_a_caller_without_the_token", |kind| {
        Box::pin(every_route_refuses_a_caller_without_the_token(kind))
    }),
    ("a_wrong_sign_in_is_refused_and_a_right_one_starts_a_strict_http_only_session", |kind| {
        Box::pin(a_wrong_sign_in_is_refused_and_a_right_one_starts_a_strict_http_only_session(kind))
    }),
    ("a_browsers_changes_need_its_csrf_token_and_its_own_origin", |kind| {
        Box::pin(a_browsers_changes_need_its_csrf_token_and_its_own_origin(kind))
    }),
    ("a_read_only_console_shows_everything_and_changes_nothing", |kind| {
        Box::pin(a_read_only_console_shows_everything_and_changes_nothing(kind))
    }),
    ("conversations_are_listed_newest_first_filtered_and_paged", |kind| {
        Box::pin(conversations_are_listed_newest_first_filtered_and_paged(kind))
    }),
    ("an_approval_answered_through_the_api_resumes_the_conversation_and_the_feed_shows_it", |kind| {
        Box::pin(an_approval_answered_through_the_api_resumes_the_conversation_and_the_feed_shows_it(kind))
    }),
    ("a_failed_request_shows_its_error_and_a_reply_its_usage", |kind| {
        Box::pin(a_failed_request_shows_its_error_and_a_reply_its_usage(kind))
    }),
    ("a_denial_with_a_message_reaches_the_model_and_a_terminated_conversation_takes_no_message", |kind| {
        Box::pin(a_denial_with_a_message_reaches_the_model_and_a_terminated_conversation_takes_no_message(kind))
    }),
];

fn main() {
    let mut trials = Vec::new();
    for kind in [StoreKind::Sqlite, StoreKind::Postgres] {
        for (name, case) in CASES {
            let case = *case;
            let trial = Trial::test(format!("{}::{name}", kind.label()), move || {
                let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
                runtime.block_on(case(kind));
                Ok(())
            });
            trials.push(match kind.unavailable() {
                Some(reason) => trial.with_ignored_flag(true).with_kind(reason),
                None => trial,
            });
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}

fn bearer() -> Auth {
    Auth::Bearer(TOKEN.to_string())
}

/// Every route of the API, as (method, path).
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/api/info"),
    ("GET", "/api/conversations"),
    ("GET", "/api/conversations/c1"),
    ("GET", "/api/conversations/c1/journal"),
    ("GET", "/api/conversations/c1/events"),
    ("GET", "/api/approvals"),
    ("POST", "/api/conversations/c1/approvals/call_1"),
    ("POST", "/api/conversations/c1/messages"),
    ("POST", "/api/conversations/c1/terminate"),
];

async fn every_route_refuses_a_caller_without_the_token(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    for (method, path) in ROUTES {
        let method: Method = method.parse().unwrap();
        for auth in [Auth::None, Auth::Bearer("console-test-token-012345678X".into()), Auth::Bearer(String::new())] {
            let answer = client.send(method.clone(), path, &auth, Some(("application/json", "{}".into()))).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path} with {auth:?}");
            assert_eq!(answer.code(), "unauthorized");
            assert!(!answer.text().contains(TOKEN), "the token is never echoed");
        }
        let forged = Auth::Browser { cookie: "managed_agents_console=forged".into(), csrf: None, origin: None };
        assert_eq!(client.send(method.clone(), path, &forged, None).await.status, StatusCode::UNAUTHORIZED);
    }
    // The page sends a browser without a session to the sign-in form, which needs no token.
    let page = client.get("/", &Auth::None).await;
    assert_eq!((page.status, page.headers["location"].to_str().unwrap()), (StatusCode::SEE_OTHER, "/login"));
    let login = client.get("/login", &Auth::None).await;
    assert_eq!(login.status, StatusCode::OK);
    assert!(login.text().contains("name=\"token\""));
    assert_eq!(client.get("/api/info", &bearer()).await.json()["read_only"], false);
}

async fn a_wrong_sign_in_is_refused_and_a_right_one_starts_a_strict_http_only_session(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    let form = ("application/x-www-form-urlencoded", "token=not-the-token-at-all-no".to_string());
    let wrong = client.send(Method::POST, "/login", &Auth::None, Some(form)).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get("set-cookie").is_none());
    let answer = client
        .send(
            Method::POST,
            "/login",
            &Auth::None,
            Some(("application/x-www-form-urlencoded", format!("token={TOKEN}"))),
        )
        .await;
    let cookie = answer.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains(TOKEN), "the cookie is a session id, not the token");
    let (cookie, csrf) = client.sign_in().await;
    let browser = Auth::Browser { cookie: cookie.clone(), csrf: Some(csrf), origin: None };
    assert_eq!(client.get("/api/conversations", &browser).await.status, StatusCode::OK);
    // A conversation followed with the session (its first message waits in the inbox).
    let answer = client.post_json("/api/conversations/s1/messages", &bearer(), json!({"text": "hello"})).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    let mut feed = Feed::new(client.open(Method::GET, "/api/conversations/s1/events", &browser, None).await);
    feed.next().await;
    // Signing out ends the session, and the feeds it opened.
    let out = client.send(Method::POST, "/logout", &browser, None).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(client.get("/api/conversations", &browser).await.status, StatusCode::UNAUTHORIZED);
    feed.ended().await;
}

async fn a_browsers_changes_need_its_csrf_token_and_its_own_origin(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    let (cookie, csrf) = client.sign_in().await;
    let origin = format!("http://{}", rig.address);
    let cases = [
        (None, Some(origin.clone()), "no CSRF token"),
        (Some("0".repeat(64)), Some(origin.clone()), "a wrong CSRF token"),
        (Some(csrf.clone()), Some("http://evil.test".to_string()), "another origin"),
    ];
    for (token, origin, what) in cases {
        let auth = Auth::Browser { cookie: cookie.clone(), csrf: token, origin };
        let answer = client.post_json("/api/conversations/c1/messages", &auth, json!({"text": "hi"})).await;
        assert_eq!((answer.status, answer.code()), (StatusCode::FORBIDDEN, "csrf".to_string()), "{what}");
        let terminate = client.send(Method::POST, "/api/conversations/c1/terminate", &auth, None).await;
        assert_eq!(terminate.status, StatusCode::FORBIDDEN, "{what}");
    }
    let inbox = rig.store.inbox().expect("an inbox");
    assert!(inbox.messages("c1").await.unwrap().is_empty(), "nothing was enqueued by a refused request");
    // Reading needs no CSRF token; changing with it does.
    let reader = Auth::Browser { cookie: cookie.clone(), csrf: None, origin: None };
    assert_eq!(client.get("/api/approvals", &reader).await.status, StatusCode::OK);
    let writer = Auth::Browser { cookie, csrf: Some(csrf), origin: Some(origin) };
    let answer = client.post_json("/api/conversations/c9/messages", &writer, json!({"text": "hello"})).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.text());
    // A bearer client needs no CSRF token: no browser sends its header on its own.
    let answer =
        client.post_json("/api/conversations/c1/approvals/nope", &bearer(), json!({"decision": "allow"})).await;
    assert_eq!((answer.status, answer.code()), (StatusCode::NOT_FOUND, "not_found".to_string()));
}

async fn a_read_only_console_shows_everything_and_changes_nothing(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), true).await;
    let client = ConsoleClient::new(&rig);
    assert_eq!(client.get("/api/info", &bearer()).await.json()["read_only"], true);
    assert_eq!(client.get("/api/conversations", &bearer()).await.status, StatusCode::OK);
    for path in
        ["/api/conversations/c1/messages", "/api/conversations/c1/terminate", "/api/conversations/c1/approvals/x"]
    {
        let answer = client.post_json(path, &bearer(), json!({"text": "hi", "decision": "allow"})).await;
        assert_eq!((answer.status, answer.code()), (StatusCode::FORBIDDEN, "read_only".to_string()), "{path}");
    }
    assert!(rig.store.inbox().unwrap().messages("c1").await.unwrap().is_empty());
    let page = client.get("/", &Auth::Browser { cookie: client.sign_in().await.0, csrf: None, origin: None }).await;
    assert!(page.text().contains("content=\"read-only\""));
}

/// Saves a conversation straight into the store: created at `created_at_ms`, with `status` and `metadata`.
async fn put(rig: &Rig, external_id: &str, provider: &str, status: ConversationStatus, metadata: Value, created: i64) {
    let store = &rig.store;
    let lease = store.acquire(external_id, "test", Duration::from_secs(60)).await.unwrap().unwrap();
    let mut record = Conversation::new(external_id, provider);
    record.status = status;
    record.created_at_ms = created;
    record.metadata = metadata.as_object().cloned().unwrap_or_default();
    store.save(&record, &lease).await.unwrap();
    store.release(&lease).await.unwrap();
}

fn ids(page: &Value) -> Vec<String> {
    page["conversations"].as_array().unwrap().iter().map(|c| c["external_id"].as_str().unwrap().to_string()).collect()
}

async fn conversations_are_listed_newest_first_filtered_and_paged(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    use ConversationStatus::{Failed, Idle};
    put(&rig, "a", "local", Idle, json!({"team": "support"}), 1_000).await;
    put(&rig, "b", "claude", Failed, json!({"team": "support", "tier": 2}), 2_000).await;
    put(&rig, "c", "local", Idle, json!({"team": "sales"}), 3_000).await;
    put(&rig, "d", "local", Failed, json!({}), 3_000).await;
    put(&rig, "e", "claude", Idle, json!({"team": "support"}), 5_000).await;
    let client = ConsoleClient::new(&rig);
    let mut seen = Vec::new();
    let mut path = "/api/conversations?limit=2".to_string();
    loop {
        let page = client.get(&path, &bearer()).await.json();
        let listed = ids(&page);
        assert!(listed.len() <= 2);
        seen.extend(listed);
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/api/conversations?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, ["e", "d", "c", "b", "a"], "newest first, every one once");
    let get = |query: &'static str| {
        let client = &client;
        async move { ids(&client.get(&format!("/api/conversations?{query}"), &bearer()).await.json()) }
    };
    assert_eq!(get("order=oldest&limit=3").await, ["a", "b", "c"]);
    assert_eq!(get("status=failed").await, ["d", "b"]);
    assert_eq!(get("status=failed,idle&provider=claude").await, ["e", "b"]);
    assert_eq!(get("status=idle&status=failed&provider=local").await, ["d", "c", "a"]);
    assert_eq!(get("metadata.team=support").await, ["e", "b", "a"]);
    assert_eq!(get("metadata.team=support&metadata.tier=2").await, ["b"], "a JSON value");
    assert_eq!(get("metadata.tier=%222%22").await, Vec::<String>::new(), "the text \"2\" is not the number 2");
    for bad in ["status=sleeping", "limit=many", "order=sideways", "cursor=nonsense", "colour=red"] {
        let answer = client.get(&format!("/api/conversations?{bad}"), &bearer()).await;
        assert_eq!((answer.status, answer.code()), (StatusCode::BAD_REQUEST, "bad_request".to_string()), "{bad}");
    }
    let missing = client.get("/api/conversations/nobody", &bearer()).await;
    assert_eq!((missing.status, missing.code()), (StatusCode::NOT_FOUND, "not_found".to_string()));
    let no_feed = client.get("/api/conversations/nobody/events", &bearer()).await;
    assert_eq!(no_feed.status, StatusCode::NOT_FOUND, "no record and no message: no feed");
}

async fn an_approval_answered_through_the_api_resumes_the_conversation_and_the_feed_shows_it(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    let sent = client.post_json("/api/conversations/ticket%2F7/messages", &bearer(), json!({"text": "Ship it"})).await;
    assert_eq!(sent.status, StatusCode::ACCEPTED, "{}", sent.text());
    assert_eq!(sent.json()["message"]["state"], "pending");
    let message_id = sent.json()["message"]["id"].as_i64().unwrap();

    // Followed from the start, before the worker created the conversation (its message is in the inbox).
    let mut feed = Feed::new(client.open(Method::GET, "/api/conversations/ticket%2F7/events", &bearer(), None).await);
    let (requested, before) = feed.until_entry("approval_requested").await;
    assert_eq!(requested["data"]["name"], "deploy");
    let kinds: Vec<&str> = before.iter().map(|entry| entry["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["message", "tool_call"], "{before:?}");
    assert_eq!(before[0]["data"]["text"], "Ship it");
    assert_eq!(before[0]["data"]["message_id"], message_id);
    assert_eq!(before[1]["data"]["input"], json!({"target": "prod", "note": "<i>now</i>"}));

    // The record says so once the request stopped for the approval.
    feed.until_status("awaiting_approval").await;
    let waiting = client.get("/api/approvals", &bearer()).await.json();
    let approvals = waiting["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{waiting}");
    assert_eq!((approvals[0]["external_id"].as_str(), approvals[0]["decision"].is_null()), (Some("ticket/7"), true));
    let tool_use_id = approvals[0]["tool_use_id"].as_str().unwrap().to_string();
    let view = client.get("/api/conversations/ticket%2F7", &bearer()).await.json();
    assert_eq!(view["conversation"]["status"], "awaiting_approval");

    let bad = client
        .post_json(
            &format!("/api/conversations/ticket%2F7/approvals/{tool_use_id}"),
            &bearer(),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let answer = client
        .post_json(
            &format!("/api/conversations/ticket%2F7/approvals/{tool_use_id}"),
            &bearer(),
            json!({"decision": "allow"}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["approval"]["decision"], "allow");

    // The worker resumes the conversation: the call runs, its result is posted, the model replies.
    let (reply, between) = feed.until_entry("reply").await;
    let kinds: Vec<&str> = between.iter().map(|entry| entry["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["approval_decided", "tool_result", "turn"], "{between:?}");
    assert_eq!(between[0]["data"]["decision"], "allow");
    assert_eq!(between[1]["data"]["text"], MARKUP_RESULT);
    assert_eq!(between[1]["data"]["is_error"], false);
    assert_eq!(reply["data"]["text"], "Deployed to prod.");
    let done = feed.until_status("idle").await;
    assert_eq!(done["requests"], 1);
    assert!(client.get("/api/approvals", &bearer()).await.json()["approvals"].as_array().unwrap().is_empty());

    // The journal reads the same through its own route, in pages either way.
    let all = client.get("/api/conversations/ticket%2F7/journal", &bearer()).await.json();
    let entries = all["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 7, "{all}");
    let first = entries[0]["seq"].as_i64().unwrap();
    let after =
        client.get(&format!("/api/conversations/ticket%2F7/journal?after={first}&limit=2"), &bearer()).await.json();
    assert_eq!(after["entries"].as_array().unwrap(), &entries[1..3]);
    let last = entries[6]["seq"].as_i64().unwrap();
    let before =
        client.get(&format!("/api/conversations/ticket%2F7/journal?before={last}&limit=2"), &bearer()).await.json();
    assert_eq!(before["entries"].as_array().unwrap(), &entries[4..6]);
    let both = client.get("/api/conversations/ticket%2F7/journal?before=9&after=1", &bearer()).await;
    assert_eq!(both.status, StatusCode::BAD_REQUEST);

    // A feed that reconnects with Last-Event-ID gets only what came after.
    let mut resumed = Feed::new(
        client
            .open(
                Method::GET,
                &format!("/api/conversations/ticket%2F7/events?after={}", entries[4]["seq"]),
                &bearer(),
                None,
            )
            .await,
    );
    let (turn, skipped) = resumed.until_entry("turn").await;
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(turn["seq"], entries[5]["seq"]);
}

async fn a_denial_with_a_message_reaches_the_model_and_a_terminated_conversation_takes_no_message(kind: StoreKind) {
    let rig = Rig::on(kind, deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    client.post_json("/api/conversations/t1/messages", &bearer(), json!({"text": "Ship it"})).await;
    let mut feed = open_feed(&client, "t1").await;
    let (requested, _) = feed.until_entry("approval_requested").await;
    let tool_use_id = requested["data"]["tool_use_id"].as_str().unwrap();
    let answer = client
        .post_json(
            &format!("/api/conversations/t1/approvals/{tool_use_id}"),
            &bearer(),
            json!({"decision": "deny", "message": "not on a Friday"}),
        )
        .await;
    assert_eq!(answer.json()["approval"]["message"], "not on a Friday");
    let (result, _) = feed.until_entry("tool_result").await;
    assert_eq!(result["data"]["is_error"], true);
    assert!(result["data"]["text"].as_str().unwrap().contains("not on a Friday"), "{result}");
    feed.until_entry("reply").await;
    feed.until_status("idle").await;
    let ended = client.send(Method::POST, "/api/conversations/t1/terminate", &bearer(), None).await;
    assert_eq!(ended.status, StatusCode::OK, "{}", ended.text());
    assert_eq!(ended.json()["conversation"]["status"], "terminated");
    let (closed, _) = feed.until_entry("closed").await;
    assert_eq!(closed["data"]["status"], "terminated");
    let refused = client.post_json("/api/conversations/t1/messages", &bearer(), json!({"text": "again"})).await;
    assert_eq!((refused.status, refused.code()), (StatusCode::CONFLICT, "closed".to_string()));
    let missing = client.send(Method::POST, "/api/conversations/nobody/terminate", &bearer(), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let empty = client.post_json("/api/conversations/t1/messages", &bearer(), json!({"text": "  "})).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    let unknown =
        client.post_json("/api/conversations/t1/messages", &bearer(), json!({"text": "x", "colour": 1})).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
}

async fn a_failed_request_shows_its_error_and_a_reply_its_usage(kind: StoreKind) {
    let script = Script::new()
        .turn(ScriptTurn::text("Hello.").with_usage(12, 34))
        .turn(ScriptTurn::text("Never said.").with_fault(Fault::HttpError { status: 400, retry_after: None }));
    let rig = Rig::on(kind, script, false).await;
    let client = ConsoleClient::new(&rig);
    client.post_json("/api/conversations/f1/messages", &bearer(), json!({"text": "Hi"})).await;
    let mut feed = open_feed(&client, "f1").await;
    let (reply, _) = feed.until_entry("reply").await;
    assert_eq!(
        (reply["data"]["usage"]["input_tokens"].as_u64(), reply["data"]["usage"]["output_tokens"].as_u64()),
        (Some(12), Some(34))
    );
    client.post_json("/api/conversations/f1/messages", &bearer(), json!({"text": "And?"})).await;
    let (failure, passed) = feed.until_entry("failure").await;
    assert_eq!(
        passed.iter().map(|entry| entry["kind"].as_str().unwrap()).collect::<Vec<_>>(),
        ["message"],
        "{passed:?}"
    );
    let error = failure["data"]["error"].as_str().unwrap();
    assert!(error.contains("400"), "the loop host's refusal, in words: {error}");
    let summary = feed.until_status("failed").await;
    assert_eq!(summary["last_error"].as_str(), Some(error), "the record says the same");
    let messages = client.get("/api/conversations/f1", &bearer()).await.json()["messages"].clone();
    assert_eq!(messages[0]["reply"], "Hello.");
    assert_eq!((messages[1]["state"].as_str(), messages[1]["error"].as_str()), (Some("failed"), Some(error)));
}

/// Opens `external_id`'s feed.
async fn open_feed(client: &ConsoleClient, external_id: &str) -> Feed {
    Feed::new(client.open(Method::GET, &format!("/api/conversations/{external_id}/events"), &bearer(), None).await)
}
