//! Reference providers: in-memory loop hosts of both modes that play a [`Script`](crate::Script).
//!
//! They implement the provider contract the simplest honest way, run the whole suite in this crate's own
//! tests, and serve as a worked example for provider authors. Anyone may use them to test code built on
//! `managed-agents-core` without a network.

mod backends;
mod provider;
mod request_response;
mod streaming;
pub mod wire;
mod world;

pub use backends::{RequestResponseReferenceBackend, StreamingReferenceBackend};
pub use request_response::RequestResponseReference;
pub use streaming::StreamingReference;
