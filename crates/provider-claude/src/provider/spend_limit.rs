//! Spend limits: a cap on what one session may cost, sent with the new session (the wire calls it the session's
//! `budget`), and how reaching it is reported.
//!
//! A session created with a spend limit (`{"type":"limit","max_list_cost":{"amount","currency"}}`) pauses when its
//! list cost reaches the cap: the service sends `session.usage` (cumulative usage and the budget) and then
//! `session.status_idle` with `stop_reason: {"type":"budget_reached"}`. The session loop reads that idle as a
//! terminated turn (`Terminal::Terminated`, the stop reason kept in `SessionResult::stop_reason`);
//! [`SpendLimitReached::from_events`] turns the events into a typed report with the usage the service counted.
//! A paused session accepts only settling events until its limit is raised or removed (a session update).

use managed_agents_core::{Error, Event, SessionResult};
use serde_json::{Value, json};

use crate::wire::events::is_turn_boundary;

/// `session.usage`: cumulative usage (and the budget) of a session.
pub const SESSION_USAGE: &str = "session.usage";
/// The idle stop reason of a session paused at its spend limit (the wire's `budget_reached`).
pub const SPEND_LIMIT_REACHED: &str = "budget_reached";

/// A spend limit for one Claude session (the wire's session `budget`), passed as the provider option
/// [`SpendLimit::OPTION`]:
///
/// ```
/// # use managed_agents_claude::SpendLimit;
/// # use managed_agents_core::SessionOptions;
/// let limit = SpendLimit::new("2.50", "USD").unwrap();
/// let options = SessionOptions::new().provider_option(SpendLimit::OPTION, limit.to_value());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpendLimit {
    /// The most the session may cost, as a decimal string in the currency's units (sent verbatim as
    /// `max_list_cost.amount`).
    pub amount: String,
    /// The currency (`"USD"`).
    pub currency: String,
}

impl SpendLimit {
    /// The provider option carrying a spend limit (`budget`, the create-session field it becomes).
    pub const OPTION: &'static str = "budget";

    /// A cap of `amount` (a non-negative decimal such as `"2.50"`) in `currency` (3 ASCII letters); anything
    /// else is an [`Error::InvalidOption`].
    pub fn new(amount: impl Into<String>, currency: impl Into<String>) -> Result<Self, Error> {
        let (amount, currency) = (amount.into(), currency.into());
        let (whole, fraction) = amount.split_once('.').unwrap_or((&amount, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) || (amount.contains('.') && fraction.is_empty()) {
            return Err(Error::invalid_option("budget", "the amount must be a non-negative decimal such as \"2.50\""));
        }
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(Error::invalid_option("budget", "the currency must be a 3-letter code such as \"USD\""));
        }
        Ok(Self { amount, currency: currency.to_ascii_uppercase() })
    }

    /// A cap in US dollars.
    pub fn usd(amount: impl Into<String>) -> Result<Self, Error> {
        Self::new(amount, "USD")
    }

    /// The wire shape, which is also the option's value.
    pub fn to_value(&self) -> Value {
        json!({"type": "limit", "max_list_cost": {"amount": self.amount, "currency": self.currency}})
    }

    /// Reads the wire shape back; `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Self> {
        if value.get("type")?.as_str()? != "limit" {
            return None;
        }
        let cost = value.get("max_list_cost")?;
        Self::new(cost.get("amount")?.as_str()?, cost.get("currency")?.as_str()?).ok()
    }

    /// The create-session `budget` for the option's value: a valid limit as [`SpendLimit::to_value`]
    /// writes it; anything else is an [`Error::InvalidOption`] (nothing is created).
    pub(super) fn wire_value(option: &Value) -> Result<Value, Error> {
        Self::from_value(option).map(|limit| limit.to_value()).ok_or_else(|| {
            Error::invalid_option(
                "budget",
                "expected {\"type\":\"limit\",\"max_list_cost\":{\"amount\":\"2.50\",\"currency\":\"USD\"}}",
            )
        })
    }
}

/// A session paused at its spend limit: what [`SpendLimitReached::from_events`] finds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SpendLimitReached {
    /// The spend limit the service reported (the `budget` of the `session.usage` before the idle), when it did.
    pub limit: Option<SpendLimit>,
    /// The cumulative usage the service reported, verbatim (tokens, `list_cost` …).
    pub usage: Option<Value>,
    /// The list cost so far (`usage.list_cost`, an amount in a currency), when reported.
    pub list_cost: Option<SpendLimit>,
    /// The id of the idle event that paused the session.
    pub event_id: Option<String>,
}

impl SpendLimitReached {
    /// Whether the last turn boundary in `events` is a `budget_reached` idle, and with what usage (the latest
    /// `session.usage` before it).
    pub fn from_events(events: &[Event]) -> Option<Self> {
        let (at, idle) = events.iter().enumerate().rev().find(|(_, e)| is_turn_boundary(e))?;
        let reason = idle.get("stop_reason").and_then(|r| r.get("type")).and_then(Value::as_str);
        if reason != Some(SPEND_LIMIT_REACHED) {
            return None;
        }
        let usage_event = events[..at].iter().rev().find(|e| e.kind() == Some(SESSION_USAGE));
        let usage = usage_event.and_then(|e| e.get("usage")).cloned();
        let limit = usage_event.and_then(|e| e.get("budget")).and_then(SpendLimit::from_value);
        let list_cost = usage
            .as_ref()
            .and_then(|u| u.get("list_cost"))
            .and_then(|cost| SpendLimit::new(cost.get("amount")?.as_str()?, cost.get("currency")?.as_str()?).ok());
        Some(Self { limit, usage, list_cost, event_id: idle.id().map(str::to_string) })
    }

    /// [`SpendLimitReached::from_events`] over a session's record.
    pub fn from_result(result: &SessionResult) -> Option<Self> {
        Self::from_events(&result.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(value: Value) -> Event {
        Event::from_value(value).unwrap()
    }

    #[test]
    fn budgets_validate_and_round_trip() {
        let budget = SpendLimit::new("2.50", "usd").unwrap();
        assert_eq!(budget.to_value(), json!({"type": "limit", "max_list_cost": {"amount": "2.50", "currency": "USD"}}));
        assert_eq!(SpendLimit::from_value(&budget.to_value()), Some(budget));
        for (amount, currency) in [("", "USD"), ("-1", "USD"), ("1.", "USD"), ("1e3", "USD"), ("1", "US"), ("1", "U$D")]
        {
            assert!(SpendLimit::new(amount, currency).is_err(), "{amount} {currency}");
        }
        assert!(SpendLimit::wire_value(&json!({"max": 3})).is_err());
    }

    #[test]
    fn a_budget_reached_idle_is_reported_with_its_usage() {
        let events = [
            event(json!({"type": "session.usage", "id": "sevt_1", "usage": {"output_tokens": 9,
                "list_cost": {"amount": "0.02", "currency": "USD"}},
                "budget": {"type": "limit", "max_list_cost": {"amount": "0.01", "currency": "USD"}}})),
            event(json!({"type": "session.status_idle", "id": "sevt_2", "stop_reason": {"type": "budget_reached"}})),
        ];
        let reached = SpendLimitReached::from_events(&events).unwrap();
        assert_eq!(reached.limit, SpendLimit::usd("0.01").ok());
        assert_eq!(reached.list_cost, SpendLimit::usd("0.02").ok());
        assert_eq!(reached.event_id.as_deref(), Some("sevt_2"));
        let ended = [event(json!({"type": "session.status_idle", "stop_reason": {"type": "end_turn"}}))];
        assert_eq!(SpendLimitReached::from_events(&ended), None);
    }
}
