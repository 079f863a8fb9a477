//! What the tests of the chat seam share: a scripted [`ChatBackend`] answering raw chat completions, the
//! completions it answers, and a connection opened on a provider. Each test binary uses part of it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use managed_agents_core::{Error, LiveEvents, OpenConnection, OpenRequest, Provider, RequestResponseConnection};
use managed_agents_local::{ChatBackend, ChatRequest, ChatResponse, Local};
use serde_json::{Value, json};

/// Answers each call with the next scripted completion (or error) and records the requests.
#[derive(Default)]
pub struct Scripted {
    answers: Mutex<VecDeque<Result<Value, Error>>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    /// Answers (completions or errors) in order.
    pub fn new(answers: Vec<Result<Value, Error>>) -> Arc<Self> {
        Arc::new(Self { answers: Mutex::new(answers.into()), requests: Mutex::default() })
    }

    /// Completions only, in order.
    pub fn answering(answers: Vec<Value>) -> Arc<Self> {
        Self::new(answers.into_iter().map(Ok).collect())
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatBackend for Scripted {
    async fn complete(&self, request: ChatRequest, _live: &LiveEvents) -> Result<ChatResponse, Error> {
        self.requests.lock().unwrap().push(request);
        let answer = self.answers.lock().unwrap().pop_front().expect("the script has no more answers");
        Ok(response(answer?))
    }
}

/// A completion answering `content`, finished by `stop`, counting `prompt` and `completion` tokens.
pub fn text_completion(content: &str, (prompt, completion): (u64, u64)) -> Value {
    json!({
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion}
    })
}

/// A completion calling `name` as `id` with `arguments` (a JSON string), finished by `tool_calls`, counting
/// `prompt` and `completion` tokens.
pub fn tool_call_completion(id: &str, name: &str, arguments: &str, (prompt, completion): (u64, u64)) -> Value {
    json!({
        "choices": [{
            "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            ]},
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion}
    })
}

/// A raw (non-streamed) chat completion read into its parts, as the built-in client reads one:
/// `choices[0].message`, its `finish_reason`, the `usage` object and the completion itself.
pub fn response(raw: Value) -> ChatResponse {
    let choice = &raw["choices"][0];
    let mut response = ChatResponse::new(choice["message"].clone());
    response.finish_reason = choice["finish_reason"].as_str().map(str::to_string);
    response.usage = raw.get("usage").filter(|usage| usage.is_object()).cloned();
    response.raw = Some(raw);
    response
}

/// A connection of `provider`, at most `max_turns` model calls per request.
pub async fn open(provider: &Local, max_turns: Option<u32>) -> Box<dyn RequestResponseConnection> {
    let mut request = OpenRequest::default();
    request.max_turns = max_turns;
    match provider.open(request).await.unwrap() {
        OpenConnection::RequestResponse(connection) => connection,
        _ => panic!("Local connections are request/response"),
    }
}
