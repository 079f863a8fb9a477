//! The shared HTTP client's failures speak of the request, in words: a refused connection names the target
//! (without its query string) and the cause, and each retry is logged with the same target as `url`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use managed_agents_core::http::{HttpClient, Replay, Request};
use managed_agents_core::{Backoff, Error, RetryPolicy};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// A loopback port nothing listens on: one the system just gave us and we closed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// `error`'s text followed by each of its causes.
fn chain(error: &Error) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

fn request(url: &str) -> Request<managed_agents_core::http::RequestBody> {
    Request::post(url).body(Default::default()).expect("a request")
}

#[tokio::test]
async fn a_refused_connection_names_the_target_and_the_cause_in_words() {
    let port = closed_port();
    let client = HttpClient::new(Duration::from_secs(5)).unwrap();
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let error = client.send(request(&format!("{url}?api_key=s3cr3t")), Duration::from_secs(10)).await.unwrap_err();
    assert!(matches!(error, Error::Connect { .. }), "{error:?}");
    let text = chain(&error);
    assert_eq!(text, format!("cannot connect: {url}: connection refused"));
    for word in ["s3cr3t", "api_key", "hyper", "::", "tcp connect error", "os error"] {
        assert!(!text.contains(word), "`{word}` in {text}");
    }
}

/// Every event's target and fields.
type Events = Arc<Mutex<Vec<(String, BTreeMap<String, String>)>>>;

struct Collector(Events);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Collector {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push((event.metadata().target().to_string(), fields));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_retry_is_logged_with_the_url_and_the_cause() {
    let events: Events = Arc::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(Collector(events.clone())));
    let port = closed_port();
    let client = HttpClient::new(Duration::from_secs(5)).unwrap();
    let policy = RetryPolicy::default()
        .with_max_retries(2)
        .with_backoff(Backoff::new(Duration::from_millis(1), Duration::from_millis(1)));
    let url = format!("http://127.0.0.1:{port}/v1/messages");
    let query = format!("{url}?key=s3cr3t");
    let error = client
        .send_with_retries(&policy, Replay::Always, Duration::from_secs(10), || Ok(request(&query)))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Connect { .. }), "{error:?}");
    let events = events.lock().unwrap();
    let retries: Vec<_> = events.iter().filter(|(_, fields)| fields.contains_key("retry")).collect();
    assert_eq!(retries.len(), 2, "{events:?}");
    for (number, (target, fields)) in retries.iter().enumerate() {
        assert_eq!(target, "managed_agents_core::http::client");
        assert_eq!(fields["retry"], (number + 1).to_string());
        assert_eq!(fields["delay"], "1ms");
        assert_eq!(fields["url"], url);
        assert_eq!(fields["error"], format!("cannot connect: {url}: connection refused"));
        assert_eq!(fields["message"], "request failed; retrying");
    }
}
