//! `openapi.json` against the server: it describes exactly the API's routes, and every answer the server gives
//! — successes, errors, and the live feed's events — validates against the schema the document gives for its
//! route and status.

mod support;

use std::collections::BTreeSet;

use hyper::{Method, StatusCode};
use managed_agents_console::OPENAPI;
use serde_json::{Value, json};
use support::{Answer, Auth, ConsoleClient, Feed, Rig, TOKEN, deploy_script};

fn document() -> Value {
    serde_json::from_str(OPENAPI).expect("openapi.json is JSON")
}

/// `pointer` of the document made a JSON pointer fragment (`~` and `/` escaped).
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Checks `body` against the schema at JSON pointer `pointer` of the document (its `$ref`s resolved in it).
fn check(doc: &Value, pointer: &str, body: &Value, what: &str) {
    let mut root = doc.clone();
    // A URI fragment: the braces of a path template are percent-encoded.
    root["$ref"] = Value::String(format!("#{}", pointer.replace('{', "%7B").replace('}', "%7D")));
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .unwrap_or_else(|error| panic!("{what}: the schema at {pointer} does not build: {error}"));
    let errors: Vec<String> =
        validator.iter_errors(body).map(|error| format!("{error} at {}", error.instance_path)).collect();
    assert!(errors.is_empty(), "{what}: {body} does not match {pointer}: {errors:?}");
}

/// The schema pointer of the JSON answer of `method` `route` with `status` (a `$ref` to a shared response
/// followed), or a failure when the document does not list that status.
fn answer_schema(doc: &Value, method: &str, route: &str, status: StatusCode) -> String {
    let operation = format!("/paths/{}/{}", escape(route), method.to_lowercase());
    let responses =
        doc.pointer(&format!("{operation}/responses")).unwrap_or_else(|| panic!("{method} {route} is documented"));
    let code = status.as_str();
    let response = responses.get(code).unwrap_or_else(|| panic!("{method} {route} documents status {code}"));
    let pointer = match response.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference.trim_start_matches('#').to_string(),
        None => format!("{operation}/responses/{code}"),
    };
    format!("{pointer}/content/application~1json/schema")
}

/// Validates an answer of `method` `route` against the document.
fn validate(doc: &Value, method: &str, route: &str, answer: &Answer) {
    let pointer = answer_schema(doc, method, route, answer.status);
    check(doc, &pointer, &answer.json(), &format!("{method} {route} {}", answer.status));
}

#[test]
fn the_document_lists_exactly_the_api_routes() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|key| *key != "parameters")
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    let routed: BTreeSet<String> = [
        "GET /api/info",
        "GET /api/conversations",
        "GET /api/conversations/{id}",
        "GET /api/conversations/{id}/journal",
        "GET /api/conversations/{id}/events",
        "GET /api/approvals",
        "POST /api/conversations/{id}/approvals/{tool_use_id}",
        "POST /api/conversations/{id}/messages",
        "POST /api/conversations/{id}/terminate",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(documented, routed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_matches_the_document() {
    let doc = document();
    let rig = Rig::start(deploy_script(), false).await;
    let client = ConsoleClient::new(&rig);
    let bearer = Auth::Bearer(TOKEN.into());
    let none = Auth::None;

    // Every documented route exists: none answers with the router's fallback.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys().filter(|key| *key != "parameters") {
            let concrete = path.replace("{id}", "c0").replace("{tool_use_id}", "t0");
            let answer = client.send(method.to_uppercase().parse().unwrap(), &concrete, &none, None).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{method} {path} is routed");
            validate(&doc, &method.to_uppercase(), path, &answer);
        }
    }

    validate(&doc, "GET", "/api/info", &client.get("/api/info", &bearer).await);
    let sent = client
        .post_json("/api/conversations/c1/messages", &bearer, json!({"text": "Ship it", "metadata": {"team": "ops"}}))
        .await;
    assert_eq!(sent.status, StatusCode::ACCEPTED);
    validate(&doc, "POST", "/api/conversations/{id}/messages", &sent);
    let mut feed = Feed::new(client.open(Method::GET, "/api/conversations/c1/events", &bearer, None).await);
    let (requested, passed) = feed.until_entry("approval_requested").await;
    let entry_schema = "/components/schemas/JournalEntry";
    for entry in passed.iter().chain([&requested]) {
        check(&doc, entry_schema, entry, "a feed entry");
    }
    let tool_use_id = requested["data"]["tool_use_id"].as_str().unwrap().to_string();
    feed.until_status("awaiting_approval").await;

    let listed = client.get("/api/conversations?limit=1&status=awaiting_approval&metadata.team=ops", &bearer).await;
    assert_eq!(listed.json()["conversations"][0]["external_id"], "c1", "{}", listed.text());
    validate(&doc, "GET", "/api/conversations", &listed);
    validate(&doc, "GET", "/api/conversations/{id}", &client.get("/api/conversations/c1", &bearer).await);
    validate(
        &doc,
        "GET",
        "/api/conversations/{id}/journal",
        &client.get("/api/conversations/c1/journal?after=0", &bearer).await,
    );
    validate(&doc, "GET", "/api/approvals", &client.get("/api/approvals", &bearer).await);
    let decide = "/api/conversations/{id}/approvals/{tool_use_id}";
    let approved = client
        .post_json(&format!("/api/conversations/c1/approvals/{tool_use_id}"), &bearer, json!({"decision": "allow"}))
        .await;
    assert_eq!(approved.status, StatusCode::OK);
    validate(&doc, "POST", decide, &approved);
    let (reply, passed) = feed.until_entry("reply").await;
    for entry in passed.iter().chain([&reply]) {
        check(&doc, entry_schema, entry, "a feed entry");
    }
    let summary = feed.until_status("idle").await;
    check(&doc, "/components/schemas/ConversationSummary", &summary, "a feed conversation event");
    validate(&doc, "GET", "/api/conversations/{id}", &client.get("/api/conversations/c1?entries=3", &bearer).await);
    validate(
        &doc,
        "POST",
        "/api/conversations/{id}/terminate",
        &client.send(Method::POST, "/api/conversations/c1/terminate", &bearer, None).await,
    );

    // The errors, each with its documented status and shape.
    let errors = [
        ("GET", "/api/conversations", client.get("/api/conversations?status=asleep", &bearer).await),
        ("GET", "/api/conversations/{id}", client.get("/api/conversations/nobody", &bearer).await),
        ("GET", "/api/conversations/{id}", client.get("/api/conversations/c1?entries=lots", &bearer).await),
        (
            "GET",
            "/api/conversations/{id}/journal",
            client.get("/api/conversations/c1/journal?after=1&before=2", &bearer).await,
        ),
        ("GET", "/api/conversations/{id}/journal", client.get("/api/conversations/nobody/journal", &bearer).await),
        ("GET", "/api/conversations/{id}/events", client.get("/api/conversations/nobody/events", &bearer).await),
        ("GET", "/api/conversations/{id}/events", client.get("/api/conversations/c1/events?after=x", &bearer).await),
        ("GET", "/api/approvals", client.get("/api/approvals?entries=-1", &bearer).await),
        (
            "POST",
            decide,
            client.post_json("/api/conversations/c1/approvals/none", &bearer, json!({"decision": "allow"})).await,
        ),
        (
            "POST",
            decide,
            client.post_json("/api/conversations/c1/approvals/none", &bearer, json!({"decision": 1})).await,
        ),
        (
            "POST",
            "/api/conversations/{id}/messages",
            client.post_json("/api/conversations/c1/messages", &bearer, json!({"text": "late"})).await,
        ),
        (
            "POST",
            "/api/conversations/{id}/messages",
            client.post_json("/api/conversations/c2/messages", &bearer, json!({})).await,
        ),
        (
            "POST",
            "/api/conversations/{id}/terminate",
            client.send(Method::POST, "/api/conversations/nobody/terminate", &bearer, None).await,
        ),
    ];
    for (method, route, answer) in &errors {
        assert!(answer.status.is_client_error(), "{method} {route}: {}", answer.status);
        validate(&doc, method, route, answer);
    }
    let (cookie, _) = client.sign_in().await;
    let forged = Auth::Browser { cookie, csrf: None, origin: None };
    let refused = client.send(Method::POST, "/api/conversations/c1/terminate", &forged, None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    validate(&doc, "POST", "/api/conversations/{id}/terminate", &refused);
}

#[test]
fn the_schemas_refuse_what_the_server_never_sends() {
    let doc = document();
    let mut root = doc.clone();
    root["$ref"] = json!("#/components/schemas/ConversationSummary");
    let validator = jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&root).expect("a schema");
    let summary = json!({
        "external_id": "c1", "provider": "local", "session_id": null, "status": "idle", "metadata": {},
        "last_error": null, "requests": 0, "model": null, "created_at_ms": 1, "updated_at_ms": 2
    });
    assert!(validator.is_valid(&summary));
    let mut extra = summary.clone();
    extra["transcript"] = json!([]);
    assert!(!validator.is_valid(&extra), "a field the document does not list");
    let mut wrong = summary.clone();
    wrong["status"] = json!("sleeping");
    assert!(!validator.is_valid(&wrong), "a status that does not exist");
    let mut missing = summary;
    missing.as_object_mut().unwrap().remove("requests");
    assert!(!validator.is_valid(&missing), "a field left out");
}
