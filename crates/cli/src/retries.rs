//! Retries, shown: the HTTP client logs each retry as a WARN event of target `managed_agents_core::http::client`
//! with fields `retry`, `delay`, `url` and `error` (see `RetryPolicy`); this layer puts them on the spinner
//! ("retrying in 2s: cannot connect to http://127.0.0.1:9/v1/chat/completions: connection refused"), so a wait
//! for a host that is down is not silent.

use std::fmt::{self, Write};
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::{Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::screen::Screen;

/// The target the HTTP client logs its retries under.
const TARGET: &str = "managed_agents_core::http";

/// Shows retries on `screen` for the rest of the process.
pub fn show_on(screen: &Arc<Screen>) {
    let _ = tracing_subscriber::registry().with(RetryNotes { screen: Arc::clone(screen) }).try_init();
}

/// The layer.
struct RetryNotes {
    screen: Arc<Screen>,
}

impl<S: Subscriber> Layer<S> for RetryNotes {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        if *metadata.level() != Level::WARN || !metadata.target().starts_with(TARGET) {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let (Some(delay), Some(error)) = (fields.delay, fields.error) {
            self.screen.waiting(&format!("retrying in {delay}: {error}"));
        }
    }
}

/// The fields of a retry event.
#[derive(Default)]
struct Fields {
    delay: Option<String>,
    error: Option<String>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        match field.name() {
            "delay" => self.delay = Some(rounded(&text)),
            "error" => self.error = Some(text),
            _ => {}
        }
    }
}

/// A `Duration`'s debug text (`1.912345678s`) to a tenth of a second.
fn rounded(delay: &str) -> String {
    match delay.strip_suffix('s').filter(|number| !number.ends_with('m')).and_then(|number| number.parse::<f64>().ok())
    {
        Some(seconds) => format!("{seconds:.1}s"),
        None => delay.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::rounded;

    #[test]
    fn delays_are_shown_to_a_tenth_of_a_second() {
        assert_eq!(rounded("1.912345678s"), "1.9s");
        assert_eq!(rounded("250ms"), "250ms");
    }
}
