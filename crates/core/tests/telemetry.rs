//! Spans follow the OpenTelemetry GenAI conventions and carry no message content by default.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use managed_agents_conformance::reference::RequestResponseReference;
use managed_agents_conformance::support::EchoTools;
use managed_agents_conformance::{Script, ScriptTurn};
use managed_agents_core::{Session, SessionOptions};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

type Spans = Arc<Mutex<Vec<(String, BTreeMap<String, String>)>>>;

/// Collects every span's name and recorded fields.
struct Collector(Spans);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}").trim_matches('"').to_string());
    }
}

#[derive(Default)]
struct Recorded(BTreeMap<String, String>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Collector {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Recorded(fields));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(recorded) = span.extensions_mut().get_mut::<Recorded>()
        {
            values.record(&mut Fields(&mut recorded.0));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let fields = span.extensions().get::<Recorded>().map(|r| r.0.clone()).unwrap_or_default();
            self.0.lock().unwrap().push((span.name().to_string(), fields));
        }
    }
}

async fn run_traced(options: SessionOptions) -> Vec<(String, BTreeMap<String, String>)> {
    // One subscriber per test, set per thread; a global one that takes every level keeps `tracing`'s
    // process-wide caches (the maximum level, each callsite's interest) from being computed while no test's
    // subscriber is alive, which could hide a callsite from the next test's subscriber.
    static EVERY_LEVEL: std::sync::Once = std::sync::Once::new();
    EVERY_LEVEL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    });
    let spans: Spans = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Collector(Arc::clone(&spans)));
    let _default = tracing::subscriber::set_default(subscriber);
    let script = Script::new()
        .turn(ScriptTurn::tool_call("call_1", "lookup", json!({"secret": "s3cr3t"})).with_usage(3, 1))
        .turn(ScriptTurn::text("done").with_usage(2, 1));
    let provider = RequestResponseReference::new(script);
    Session::run(&provider, EchoTools, options).await.unwrap();
    spans.lock().unwrap().clone()
}

#[tokio::test(flavor = "current_thread")]
async fn invoke_agent_and_execute_tool_spans_use_genai_names_without_content() {
    let spans = run_traced(SessionOptions::new()).await;
    let (_, session) = spans.iter().find(|(name, _)| name == "invoke_agent").expect("invoke_agent span");
    assert_eq!(session["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(session["gen_ai.provider.name"], "reference-request-response");
    assert!(session["gen_ai.conversation.id"].starts_with("session_"));
    assert_eq!(session["gen_ai.usage.input_tokens"], "5");
    assert_eq!(session["gen_ai.usage.output_tokens"], "2");
    let (_, tool) = spans.iter().find(|(name, _)| name == "execute_tool").expect("execute_tool span");
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "lookup");
    assert_eq!(tool["gen_ai.tool.call.id"], "call_1");
    let everything = format!("{spans:?}");
    assert!(!everything.contains("s3cr3t"), "tool arguments are not recorded by default: {everything}");
}

#[tokio::test(flavor = "current_thread")]
async fn content_is_recorded_only_when_asked() {
    let spans = run_traced(SessionOptions::new().record_content(true)).await;
    let (_, tool) = spans.iter().find(|(name, _)| name == "execute_tool").expect("execute_tool span");
    assert!(tool["gen_ai.tool.call.arguments"].contains("s3cr3t"));
    assert!(tool["gen_ai.tool.call.result"].starts_with("lookup:"));
}
