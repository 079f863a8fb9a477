//! What each scenario needs of a backend: the requirements the registry names.

use managed_agents_core::Mode;

use crate::backend::BackendCapabilities;
use crate::fault_case::FaultCase;

pub(super) fn always(_: &BackendCapabilities) -> Option<&'static str> {
    None
}

pub(super) fn needs_streaming(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::Streaming).then_some("request/response providers refuse raw events (see send_event_refused)")
}

pub(super) fn needs_request_response(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::RequestResponse).then_some("streaming providers post raw events (see send_event_passthrough)")
}

pub(super) fn needs_interrupt(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.interrupt).then_some("the provider has no interrupt capability (see interrupt_refused)")
}

pub(super) fn needs_pushed_interrupt(c: &BackendCapabilities) -> Option<&'static str> {
    needs_interrupt(c).or_else(|| {
        (c.mode != Mode::Streaming)
            .then_some("a request/response provider cancels the turn on an interrupt instead of sending one")
    })
}

pub(super) fn needs_interrupt_mid_turn(c: &BackendCapabilities) -> Option<&'static str> {
    needs_interrupt(c)
        .or_else(|| needs_per_session_scripts(c))
        .or_else(|| c.fault(FaultCase::Stall).is_none().then_some("the backend cannot stall a turn to interrupt it"))
}

pub(super) fn needs_no_interrupt(c: &BackendCapabilities) -> Option<&'static str> {
    c.provider.interrupt.then_some("the provider supports interrupts (see interrupt_reaches_host)")
}

pub(super) fn needs_split(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.split_requires_action).then_some("the backend cannot split a requires_action across batches")
}

pub(super) fn needs_duplicates(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.duplicate_delivery).then_some("the backend cannot deliver an event twice with the same id")
}

pub(super) fn needs_reconnect(c: &BackendCapabilities) -> Option<&'static str> {
    (c.mode != Mode::Streaming || !c.reconnect).then_some("the provider has no event stream to drop and reconnect")
}

pub(super) fn needs_per_session_scripts(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.per_session_scripts).then_some("the backend plays one script for every session")
}

pub(super) fn needs_resume(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.resume).then_some("the provider cannot reattach to a session by id")
}

pub(super) fn needs_reattach(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.resume_pending).then_some("the backend cannot answer, from a new session, the calls an earlier one stopped on")
}

pub(super) fn needs_confirmations(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.confirmations).then_some("the backend plays no host-side tool calls that ask for confirmation")
}

pub(super) fn needs_transcript(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.transcript).then_some("the provider keeps no client-side transcript")
}

pub(super) fn needs_outcomes(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.outcomes).then_some("the provider does not support outcomes")
}

pub(super) fn needs_no_outcomes(c: &BackendCapabilities) -> Option<&'static str> {
    c.provider.outcomes.then_some("the provider supports outcomes (see outcome_kickoff)")
}

pub(super) fn needs_no_data_plane(c: &BackendCapabilities) -> Option<&'static str> {
    c.provider
        .data_plane
        .accepts_settings()
        .then_some("the provider has a data plane (see per_run_destination_stays_apart)")
}

pub(super) fn needs_data_plane(c: &BackendCapabilities) -> Option<&'static str> {
    (!c.provider.data_plane.accepts_settings())
        .then_some("the provider has no data plane for a run's credential or destination")
}

pub(super) fn needs_refused_models(c: &BackendCapabilities) -> Option<&'static str> {
    c.models.refused.is_empty().then_some("the backend declares no refused model id (BackendCapabilities::models)")
}

pub(super) fn needs_accepted_models(c: &BackendCapabilities) -> Option<&'static str> {
    if !c.provider.runtime_model {
        return Some("the provider cannot choose the model per run");
    }
    c.models.accepted.is_empty().then_some("the backend declares no accepted model id (BackendCapabilities::models)")
}

/// A fault case's scenarios need the backend to declare the case.
pub(super) fn needs_fault(c: &BackendCapabilities, case: FaultCase) -> Option<&'static str> {
    match c.fault(case) {
        Some(_) => None,
        None => Some(case.skip_reason()),
    }
}
