//! Approvals through the host on all three providers' emulators (Claude Managed Agents, AgentCore, Local): a
//! call the permission hook defers is stored; a new host over the same store — another process, as far as the
//! store can tell — answers it (allow, or deny with a reason) and resumes the conversation to its end.
//!
//! Tests are `<store>::<provider>::<case>`; PostgreSQL ones are ignored, with the reason, without a database.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use libtest_mimic::{Arguments, Completion, Trial};
use managed_agents_agentcore::emulator::AgentCoreEmulator;
use managed_agents_claude::ClaudeManagedAgents;
use managed_agents_claude::emulator::ClaudeEmulator;
use managed_agents_conformance::{InputLog, Script, ScriptTurn};
use managed_agents_core::approval::{Decision, permission_fn};
use managed_agents_core::conversation::ConversationStatus;
use managed_agents_core::{AgentHandle, Error, Provider, ToolResult, ToolSchema, tool_fn};
use managed_agents_host::Host;
use managed_agents_local::Local;
use managed_agents_local::emulator::LocalEmulator;
use serde_json::json;
use support::{Kind, Place, unique};

/// A provider on its emulator: what the host needs, and what the emulator received.
struct Emulated {
    provider: Arc<dyn Provider>,
    agent: Option<AgentHandle>,
    log: InputLog,
    /// The call id the emulator's script uses.
    call_id: String,
    /// Keeps the emulator's server up.
    _server: Box<dyn std::any::Any + Send>,
}

fn script(call_id: &str) -> Script {
    Script::new()
        .turn(ScriptTurn::tool_call(call_id, "danger", json!({"target": "prod"})))
        .turn(ScriptTurn::text("finished"))
}

async fn claude() -> Emulated {
    let call_id = support::call_id("toolu_danger");
    let emulator = ClaudeEmulator::start(script(&call_id)).await.expect("emulator");
    let provider =
        ClaudeManagedAgents::builder().base_url(emulator.base_url()).api_key("test-key").build().expect("provider");
    let (agent_id, environment_id) = emulator.seed_agent();
    Emulated {
        provider: Arc::new(provider),
        agent: Some(AgentHandle { agent_id, environment_id: Some(environment_id) }),
        log: emulator.log(),
        call_id,
        _server: Box::new(emulator),
    }
}

async fn agentcore() -> Emulated {
    let call_id = support::call_id("tooluse_danger");
    let emulator = AgentCoreEmulator::start(script(&call_id)).await.expect("emulator");
    Emulated {
        provider: Arc::new(emulator.provider_builder().build().expect("the emulator's provider builds")),
        agent: Some(AgentHandle { agent_id: emulator.harness_arn(), environment_id: None }),
        log: emulator.log(),
        call_id,
        _server: Box::new(emulator),
    }
}

async fn local() -> Emulated {
    let call_id = support::call_id("call_danger");
    let emulator = LocalEmulator::start(script(&call_id)).await.expect("emulator");
    let provider = Local::builder()
        .base_url(emulator.base_url())
        .model("emulated")
        .tool(ToolSchema::new("danger", "Does something that needs a yes", json!({"type": "object"})))
        .build()
        .expect("provider");
    Emulated { provider: Arc::new(provider), agent: None, log: emulator.log(), call_id, _server: Box::new(emulator) }
}

type Make = fn() -> Pin<Box<dyn Future<Output = Emulated>>>;

const PROVIDERS: &[(&str, Make)] =
    &[("claude", || Box::pin(claude())), ("agentcore", || Box::pin(agentcore())), ("local", || Box::pin(local()))];

fn main() -> std::process::ExitCode {
    let mut trials = Vec::new();
    for kind in [Kind::Memory, Kind::Sqlite, Kind::Postgres] {
        for (provider, make) in PROVIDERS {
            for (case, allow) in
                [("defer_then_approve_from_a_new_host", true), ("defer_then_deny_from_a_new_host", false)]
            {
                let make = *make;
                trials.push(Trial::ignorable_test(format!("{}::{provider}::{case}", kind.label()), move || {
                    if let Some(reason) = kind.unavailable() {
                        return Ok(Completion::ignored_with(reason));
                    }
                    support::runtime()
                        .block_on(async move { answered_from_a_new_host(Place::new(kind), make().await, allow).await });
                    Ok(Completion::Completed)
                }));
            }
        }
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

async fn host(place: &Place, emulated: &Emulated, runs: &Arc<AtomicUsize>) -> Host {
    let runs = Arc::clone(runs);
    let handler = tool_fn(move |name, input| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("{name} ran on {}", input["target"].as_str().unwrap_or("?"))) }
    });
    let permission = permission_fn(|request| async move {
        if request.tool_use.name == "danger" { Decision::Defer } else { Decision::Allow }
    });
    let mut builder = Host::builder(Arc::clone(&emulated.provider), place.open().await, handler).permission(permission);
    if let Some(agent) = &emulated.agent {
        builder = builder.agent(agent.clone());
    }
    builder.build().expect("host")
}

async fn answered_from_a_new_host(place: Place, emulated: Emulated, allow: bool) {
    let runs = Arc::new(AtomicUsize::new(0));
    let id = unique("approval");
    let first = host(&place, &emulated, &runs).await;
    let error = first.send(&id, "do the dangerous thing").await.expect_err("the call waits for a person");
    let Error::ApprovalRequired { requests, .. } = &error else { panic!("{error:?}") };
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool_use.id, emulated.call_id);
    assert_eq!(requests[0].tool_use.input, json!({"target": "prod"}), "the request says what the call would do");
    let record = first.conversation(&id).await.unwrap().expect("stored");
    assert_eq!(record.status, ConversationStatus::AwaitingApproval);
    assert!(record.session_id.is_some() || record.transcript.is_some(), "what resuming needs is stored");
    drop(first);

    let second = host(&place, &emulated, &runs).await;
    let pending = second.pending_approvals(&id).await.unwrap();
    assert_eq!(pending.iter().map(|p| p.request.tool_use.id.as_str()).collect::<Vec<_>>(), [emulated.call_id.as_str()]);
    if allow {
        second.approve(&id, &emulated.call_id).await.expect("approve");
    } else {
        second.deny(&id, &emulated.call_id, Some("not in production".into())).await.expect("deny");
    }
    let result = second.resume(&id).await.expect("the conversation resumes to its end");
    assert_eq!(result.text, "finished");
    let expected = if allow {
        ToolResult::ok(&emulated.call_id, "danger ran on prod")
    } else {
        ToolResult::error(&emulated.call_id, "not in production")
    };
    assert_eq!(emulated.log.tool_results(), vec![expected], "the answer given later is posted, once");
    assert_eq!(runs.load(Ordering::SeqCst), usize::from(allow), "the tool runs only when allowed, once");
    assert!(second.pending_approvals(&id).await.unwrap().is_empty());
    assert_eq!(second.conversation(&id).await.unwrap().unwrap().status, ConversationStatus::Idle);

    // The journal tells the story, across both hosts; a deleted conversation's goes with it.
    let journal = second.store().journal().expect("every store here keeps a journal");
    let entries = journal.entries_after(&id, 0, 100).await.unwrap();
    let story: Vec<&str> = entries.iter().map(|entry| entry.kind.as_str()).filter(|kind| *kind != "turn").collect();
    assert_eq!(story, ["message", "tool_call", "approval_requested", "approval_decided", "tool_result", "reply"]);
    let find = |kind: &str| entries.iter().find(|entry| entry.kind.as_str() == kind).expect(kind).data.clone();
    assert_eq!(find("message")["text"], "do the dangerous thing");
    assert_eq!(find("tool_call")["input"], json!({"target": "prod"}));
    assert_eq!(find("approval_decided")["decision"], if allow { "allow" } else { "deny" });
    assert_eq!(find("tool_result")["text"], expected_text(allow));
    assert_eq!(find("tool_result")["is_error"], !allow);
    assert_eq!(find("reply")["text"], "finished");
    assert!(entries.iter().any(|entry| entry.kind.as_str() == "turn" && entry.data["text"] == "finished"));
    second.delete(&id).await.expect("delete");
    assert!(journal.entries_after(&id, 0, 100).await.unwrap().is_empty(), "deleting drops the journal");
}

fn expected_text(allow: bool) -> &'static str {
    if allow { "danger ran on prod" } else { "not in production" }
}
