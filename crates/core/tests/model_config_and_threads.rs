//! The run's model configuration is checked against the provider before anything opens; thread updates and
//! reconciled text reach the handler once each and fold into the result.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use managed_agents_core::{
    Capabilities, Connection, DataPlane, Error, Event, Handler, MessageDirection, ModelConfig, OpenConnection,
    OpenRequest, Provider, SeenIds, Session, SessionInfo, SessionOptions, StreamItem, StreamingConnection, Terminal,
    ThreadMessage, ThreadStatus, ThreadUpdate, ToolOutput, ToolSchema, TurnInput, TurnResult, split_catalog_id,
};
use serde_json::{Value, json};

/// A streaming provider that plays `script` after the kickoff and records what `open` was asked.
struct Scripted {
    data_plane: DataPlane,
    script: Vec<Value>,
    opened: Mutex<Vec<OpenRequest>>,
}

impl Scripted {
    fn new(data_plane: DataPlane, script: Vec<Value>) -> Self {
        Self { data_plane, script, opened: Mutex::default() }
    }
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with_runtime_model().with_runtime_overrides().with_data_plane(self.data_plane)
    }

    fn native_model(&self, id: &str) -> Result<Value, Error> {
        match split_catalog_id(id) {
            (None | Some("scripted"), model) => Ok(Value::from(model)),
            _ => Err(Error::unsupported_model(self.name(), id)),
        }
    }

    async fn open(&self, request: OpenRequest) -> Result<OpenConnection, Error> {
        self.opened.lock().unwrap().push(request);
        Ok(OpenConnection::Streaming(Box::new(ScriptedStream {
            connected: false,
            pending: VecDeque::new(),
            script: self.script.clone(),
            shown: String::new(),
        })))
    }

    fn normalize(&self, events: &[Event]) -> TurnResult {
        let mut turn = TurnResult::new(Terminal::EndTurn);
        turn.text = events.iter().filter(|e| e.kind() == Some("message")).filter_map(|e| e.str_field("text")).collect();
        turn.threads = events.iter().filter_map(|event| self.thread_update(event)).collect();
        turn
    }

    fn text_delta(&self, event: &Event) -> Option<String> {
        match event.kind() {
            Some("preview" | "message") => event.str_field("text").map(str::to_string),
            _ => None,
        }
    }

    fn thread_update(&self, event: &Event) -> Option<ThreadUpdate> {
        let thread_id = event.str_field("thread")?.to_string();
        match event.kind()? {
            "thread_created" => Some(ThreadUpdate::Created { thread_id, agent_name: Some("helper".into()) }),
            "thread_idle" => Some(ThreadUpdate::Status {
                thread_id,
                status: ThreadStatus::Idle,
                stop_reason: Some(json!({"type": "end_turn"})),
                agent_name: None,
            }),
            "thread_report" => Some(ThreadUpdate::Message(ThreadMessage::new(
                Some(thread_id),
                MessageDirection::Sent,
                None,
                event.str_field("text").unwrap_or_default(),
            ))),
            _ => None,
        }
    }
}

struct ScriptedStream {
    connected: bool,
    pending: VecDeque<Event>,
    script: Vec<Value>,
    /// The previewed text not yet confirmed by a message.
    shown: String,
}

#[async_trait]
impl Connection for ScriptedStream {
    fn session_id(&self) -> Option<String> {
        Some("s1".into())
    }
}

#[async_trait]
impl StreamingConnection for ScriptedStream {
    async fn push(&mut self, input: TurnInput) -> Result<(), Error> {
        if matches!(input, TurnInput::Kickoff { .. }) {
            self.pending.extend(self.script.drain(..).map(|value| Event::from_value(value).unwrap()));
        }
        Ok(())
    }

    async fn next_item(&mut self) -> StreamItem {
        if !std::mem::replace(&mut self.connected, true) {
            return StreamItem::Connected;
        }
        match self.pending.pop_front() {
            Some(event) => StreamItem::Event(event),
            None => std::future::pending().await,
        }
    }

    fn is_turn_boundary(&self, event: &Event) -> bool {
        event.kind() == Some("idle")
    }

    fn reconcile_text(&mut self, event: &Event, text: Option<String>) -> Option<String> {
        let text = text?;
        if event.kind() == Some("preview") {
            self.shown.push_str(&text);
            return Some(text);
        }
        let rest = text.strip_prefix(self.shown.as_str()).map(str::to_string);
        self.shown.clear();
        rest
    }

    async fn reconnect(&mut self, _: &SeenIds) -> Result<managed_agents_core::Reconnected, Error> {
        Err(Error::Closed)
    }
}

/// A handler that keeps every event it is given.
#[derive(Clone, Default)]
struct Keeps(Arc<Mutex<Vec<Event>>>);

#[async_trait]
impl Handler for Keeps {
    async fn handle_tool_call(&self, _: &str, _: &Value) -> ToolOutput {
        Err("no tools".into())
    }

    fn handle_event(&self, event: &Event, _: &SessionInfo) {
        self.0.lock().unwrap().push(event.clone());
    }
}

fn event(value: Value) -> Value {
    value
}

#[tokio::test]
async fn a_credential_or_destination_on_a_provider_without_a_data_plane_fails_before_open() {
    let provider = Scripted::new(DataPlane::None, Vec::new());
    for config in [ModelConfig::new().credential("sk-run-key"), ModelConfig::new().destination("http://127.0.0.1:1")] {
        let error = Session::run(&provider, Keeps::default(), SessionOptions::new().model_config(config))
            .await
            .expect_err("refused");
        let Error::DataPlaneUnsupported { provider: name, setting, .. } = &error else { panic!("{error:?}") };
        assert_eq!(name, "scripted");
        assert!(["credential", "destination"].contains(setting));
        assert!(!format!("{error:?} {error}").contains("sk-run-key"));
    }
    assert!(provider.opened.lock().unwrap().is_empty(), "nothing was opened");
}

#[tokio::test]
async fn a_model_from_a_foreign_catalog_fails_before_open_and_a_served_one_reaches_open() {
    let script = vec![event(json!({"type": "message", "text": "hi"})), event(json!({"type": "idle"}))];
    let provider = Scripted::new(DataPlane::ChatCompletions, script);
    let error = Session::run(&provider, Keeps::default(), SessionOptions::new().model("openai:gpt-4.1"))
        .await
        .expect_err("foreign catalog");
    assert!(
        matches!(&error, Error::UnsupportedModel { provider, model, .. } if provider == "scripted" && model == "openai:gpt-4.1"),
        "{error:?}"
    );
    assert!(provider.opened.lock().unwrap().is_empty());

    let config = ModelConfig::new().model("scripted:fast").credential("sk-run").destination("http://127.0.0.1:9");
    let options = SessionOptions::new()
        .model_config(config)
        .system_prompt("be brief")
        .tools(vec![ToolSchema::with_string_params("lookup", "", &["q"])]);
    Session::run(&provider, Keeps::default(), options).await.unwrap();
    let opened = provider.opened.lock().unwrap();
    assert_eq!(opened[0].model(), Some("scripted:fast"));
    assert_eq!(opened[0].model_config.credential.as_ref().map(|c| c.expose()), Some("sk-run"));
    assert_eq!(opened[0].model_config.destination.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(opened[0].system.as_deref(), Some("be brief"));
    assert_eq!(opened[0].tools.as_ref().map(Vec::len), Some(1));
    assert!(!format!("{:?}", opened[0]).contains("sk-run"));
}

#[tokio::test]
async fn overrides_need_the_capability() {
    struct Plain;
    #[async_trait]
    impl Provider for Plain {
        fn name(&self) -> &str {
            "plain"
        }
        async fn open(&self, _: OpenRequest) -> Result<OpenConnection, Error> {
            Err(Error::Closed)
        }
        fn normalize(&self, _: &[Event]) -> TurnResult {
            TurnResult::new(Terminal::EndTurn)
        }
    }
    let error = Session::run(&Plain, Keeps::default(), SessionOptions::new().system_prompt("x")).await.unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "system_prompt", .. }), "{error:?}");
    let error = Session::run(&Plain, Keeps::default(), SessionOptions::new().tools(vec![])).await.unwrap_err();
    assert!(matches!(error, Error::InvalidOption { option: "tools", .. }), "{error:?}");
}

#[tokio::test]
async fn previews_and_messages_reach_the_handler_once_and_threads_fold_into_the_result() {
    let script = vec![
        json!({"type": "thread_created", "thread": "t1"}),
        json!({"type": "preview", "text": "Hel"}),
        json!({"type": "preview", "text": "lo"}),
        json!({"type": "message", "text": "Hello, world"}),
        json!({"type": "thread_report", "thread": "t1", "text": "done digging"}),
        json!({"type": "thread_idle", "thread": "t1"}),
        json!({"type": "idle"}),
    ];
    let provider = Scripted::new(DataPlane::None, script);
    let handler = Keeps::default();
    let result = Session::run(&provider, handler.clone(), SessionOptions::new().live_text(true)).await.unwrap();
    let seen = handler.0.lock().unwrap();
    let deltas: Vec<&str> = seen.iter().filter_map(Event::text_delta_text).collect();
    assert_eq!(deltas, ["Hel", "lo", ", world"], "no text shown twice");
    let updates: Vec<ThreadUpdate> = seen.iter().filter_map(Event::thread_update_view).collect();
    assert_eq!(updates.len(), 3);
    assert_eq!(updates[0].thread_id(), Some("t1"));
    assert_eq!(result.text, "Hello, world");
    assert_eq!(result.threads.len(), 1);
    assert_eq!(result.threads[0].agent_name.as_deref(), Some("helper"));
    assert_eq!(result.threads[0].status, ThreadStatus::Idle);
    assert_eq!(result.thread_messages.len(), 1);
    assert_eq!(result.thread_messages[0].text, "done digging");
    assert!(result.events.iter().all(|e| e.thread_update_view().is_none()), "synthetic events are not stored");
    assert!(provider.opened.lock().unwrap()[0].live_text);
}
