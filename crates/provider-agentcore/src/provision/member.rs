//! Whether a response named a member at all.
//!
//! The SDK fills a required member the response left out with a default (an empty list, an object of empty
//! strings, the status `"no value was set"`), so a drifted answer reads like a real one. [`MemberCheck`] looks at
//! the body the SDK decoded and remembers whether the member was there, so that provisioning can report the
//! drift instead of acting on the default.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use aws_sdk_bedrockagentcorecontrol::config::interceptors::AfterDeserializationInterceptorContextRef;
use aws_sdk_bedrockagentcorecontrol::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_bedrockagentcorecontrol::error::BoxError;
use serde_json::Value;

const UNSEEN: u8 = 0;
const PRESENT: u8 = 1;
const MISSING: u8 = 2;

/// An interceptor for one request: after the response is decoded, notes whether its JSON body has a value (not
/// `null`) at `pointer` (a JSON pointer: `/harnesses`, `/endpoint/status`).
#[derive(Debug, Clone)]
pub(super) struct MemberCheck {
    pointer: &'static str,
    seen: Arc<AtomicU8>,
}

impl MemberCheck {
    /// A check for the value at `pointer`, nothing seen yet.
    pub(super) fn new(pointer: &'static str) -> Self {
        Self { pointer, seen: Arc::new(AtomicU8::new(UNSEEN)) }
    }

    /// Whether the decoded response had the value; `None` when no response was decoded.
    pub(super) fn present(&self) -> Option<bool> {
        match self.seen.load(Ordering::Acquire) {
            PRESENT => Some(true),
            MISSING => Some(false),
            _ => None,
        }
    }
}

impl Intercept for MemberCheck {
    fn name(&self) -> &'static str {
        "MemberCheck"
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // The body of a response that is not streamed has been read into memory by now.
        let body = context.response().body().bytes().and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok());
        let present = body.is_some_and(|body| body.pointer(self.pointer).is_some_and(|value| !value.is_null()));
        self.seen.store(if present { PRESENT } else { MISSING }, Ordering::Release);
        Ok(())
    }
}
