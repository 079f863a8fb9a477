//! Live text previews: the stream's `event_start` / `event_delta` frames (asked for with
//! `event_deltas[]=agent.message`) show an `agent.message` while the model writes it; the buffered message of
//! the same id follows and carries the whole text. [`Previews`] keeps what each open preview showed, so the
//! message then shows only the rest and no text is shown twice.
//!
//! The rules:
//!
//! * A preview opens at its `event_start` (type `agent.message`); its deltas' text is shown as it arrives. A delta
//!   of a preview this connection did not see start (it began before the stream attached) is not shown: its
//!   message shows the text whole.
//! * The buffered `agent.message` of an open preview shows the part of its text after what the preview showed.
//!   When the shown text is not a prefix of the message (a preview that skipped or reordered fragments), nothing
//!   more is shown: what was shown cannot be taken back, and the message is in the turn's result whole.
//! * `span.model_request_end` closes every preview still open (its model request failed or was interrupted: no
//!   message comes); its state is forgotten.
//! * A stream that breaks freezes the open previews: the next stream's deltas for them are not shown (fragments
//!   sent while no stream was attached are lost, never replayed), and the message — from the new stream or the
//!   history a reconnect replays — shows the rest after what was shown.
//!
//! Previews are stream-only (never in the history) and carry no `id` of their own, so the session's seen set
//! and a reconnect's history replay pass them by; they are not turn text ([`normalize_for`](super::events::normalize_for)
//! reads `agent.message` only).

use managed_agents_core::Event;
use serde_json::Value;

/// The event type a stream's previews are asked for.
pub(crate) const PREVIEWED: &str = "agent.message";
/// The frame that opens a preview.
pub(crate) const EVENT_START: &str = "event_start";
/// A fragment of a preview.
pub(crate) const EVENT_DELTA: &str = "event_delta";
/// The most previews kept open at once; a stream that opens more without closing them loses the oldest.
const MAX_OPEN: usize = 64;

/// The text one `event_delta` frame carries (a `content_delta` whose content is a text block).
pub(crate) fn delta_text(event: &Event) -> Option<String> {
    if event.kind() != Some(EVENT_DELTA) {
        return None;
    }
    let delta = event.get("delta")?;
    if delta.get("type").and_then(Value::as_str) != Some("content_delta") {
        return None;
    }
    let content = delta.get("content")?;
    if content.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    content.get("text").and_then(Value::as_str).map(str::to_string)
}

/// The id of the `agent.message` an `event_start` frame opens a preview of.
fn started_message(event: &Event) -> Option<&str> {
    let previewed = event.get("event")?;
    (previewed.get("type").and_then(Value::as_str) == Some(PREVIEWED)).then(|| previewed.get("id")?.as_str())?
}

/// One open preview.
#[derive(Debug)]
struct Preview {
    /// The id of the message it previews.
    id: String,
    /// The text shown so far.
    shown: String,
    /// Whether its deltas are still shown (false once the stream it started on broke).
    live: bool,
}

/// The open previews of one connection, and what each showed.
#[derive(Debug, Default)]
pub(crate) struct Previews {
    /// Whether the connection asks for previews.
    enabled: bool,
    open: Vec<Preview>,
}

impl Previews {
    /// The previews of a connection that asks for them (`enabled`) or not.
    pub(crate) fn new(enabled: bool) -> Self {
        Self { enabled, open: Vec::new() }
    }

    /// The `event_deltas[]` values the connection's streams ask for.
    pub(crate) fn event_deltas(&self) -> &'static [&'static str] {
        if self.enabled { &[PREVIEWED] } else { &[] }
    }

    /// The stream broke: the open previews show nothing more until their messages arrive.
    pub(crate) fn stream_broke(&mut self) {
        for preview in &mut self.open {
            preview.live = false;
        }
    }

    /// The text the handler should see for `event`, given what `text_delta` read from it (see the module's
    /// rules).
    pub(crate) fn reconcile(&mut self, event: &Event, text: Option<String>) -> Option<String> {
        match event.kind() {
            Some(EVENT_START) => {
                if let Some(id) = started_message(event) {
                    self.open.retain(|preview| preview.id != id);
                    if self.open.len() >= MAX_OPEN {
                        self.open.remove(0);
                    }
                    self.open.push(Preview { id: id.to_string(), shown: String::new(), live: true });
                }
                None
            }
            Some(EVENT_DELTA) => {
                let id = event.str_field("event_id")?;
                let preview = self.open.iter_mut().find(|preview| preview.id == id && preview.live)?;
                let text = text?;
                preview.shown.push_str(&text);
                Some(text)
            }
            Some(PREVIEWED) => {
                let Some(at) = event.id().and_then(|id| self.open.iter().position(|preview| preview.id == id)) else {
                    return text;
                };
                let preview = self.open.remove(at);
                let text = text?;
                match text.strip_prefix(preview.shown.as_str()) {
                    Some(rest) => Some(rest.to_string()),
                    None => {
                        tracing::debug!(
                            event_id = preview.id,
                            "the preview showed text the message does not start with; showing nothing more"
                        );
                        None
                    }
                }
            }
            Some("span.model_request_end") => {
                self.open.clear();
                text
            }
            _ => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::events::text_delta;

    fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    fn start(id: &str) -> Event {
        event(json!({"type": EVENT_START, "event": {"type": PREVIEWED, "id": id}}))
    }

    fn delta(id: &str, text: &str) -> Event {
        event(json!({"type": EVENT_DELTA, "event_id": id,
            "delta": {"type": "content_delta", "index": 0, "content": {"type": "text", "text": text}}}))
    }

    fn message(id: &str, text: &str) -> Event {
        event(json!({"type": PREVIEWED, "id": id, "content": [{"type": "text", "text": text}]}))
    }

    /// What the handler is shown for `events`, in order.
    fn shown(previews: &mut Previews, events: &[Event]) -> Vec<String> {
        let read = |e: &Event| delta_text(e).or_else(|| text_delta(e));
        events.iter().filter_map(|e| previews.reconcile(e, read(e))).filter(|t| !t.is_empty()).collect()
    }

    #[test]
    fn a_message_shows_only_what_its_preview_did_not() {
        let mut previews = Previews::new(true);
        let events = [start("m1"), delta("m1", "Hel"), delta("m1", "lo"), message("m1", "Hello, world")];
        assert_eq!(shown(&mut previews, &events), ["Hel", "lo", ", world"]);
        let whole = [start("m2"), delta("m2", "Done."), message("m2", "Done.")];
        assert_eq!(shown(&mut previews, &whole), ["Done."], "a fully previewed message adds nothing");
        assert_eq!(shown(&mut previews, &[message("m3", "No preview.")]), ["No preview."]);
        assert_eq!(previews.event_deltas(), [PREVIEWED]);
        assert!(Previews::new(false).event_deltas().is_empty());
    }

    #[test]
    fn a_preview_the_message_does_not_extend_shows_nothing_more() {
        let mut previews = Previews::new(true);
        let events = [start("m1"), delta("m1", "Helo"), message("m1", "Hello")];
        assert_eq!(shown(&mut previews, &events), ["Helo"]);
    }

    #[test]
    fn a_failed_request_closes_its_preview_and_deltas_without_a_start_are_not_shown() {
        let mut previews = Previews::new(true);
        let end = event(json!({"type": "span.model_request_end", "is_error": true}));
        let events = [start("m1"), delta("m1", "Partial"), end, delta("m1", " late"), delta("m9", "orphan")];
        assert_eq!(shown(&mut previews, &events), ["Partial"]);
        assert!(previews.open.is_empty(), "forgotten");
        let thinking = event(json!({"type": EVENT_START, "event": {"type": "agent.thinking", "id": "t1"}}));
        assert_eq!(shown(&mut previews, &[thinking]), Vec::<String>::new());
        assert!(previews.open.is_empty(), "thinking previews carry no text");
    }

    #[test]
    fn after_a_broken_stream_only_the_message_completes_the_preview() {
        let mut previews = Previews::new(true);
        assert_eq!(shown(&mut previews, &[start("m1"), delta("m1", "Hel")]), ["Hel"]);
        previews.stream_broke();
        let after = [delta("m1", "lo, wor"), message("m1", "Hello, world")];
        assert_eq!(shown(&mut previews, &after), ["lo, world"]);
    }

    #[test]
    fn open_previews_are_bounded() {
        let mut previews = Previews::new(true);
        for n in 0..MAX_OPEN + 5 {
            previews.reconcile(&start(&format!("m{n}")), None);
        }
        assert_eq!(previews.open.len(), MAX_OPEN);
        assert_eq!(previews.open[0].id, "m5");
    }
}
