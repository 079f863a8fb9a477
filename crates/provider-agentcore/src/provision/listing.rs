//! Whether a listing response carried its list member at all.
//!
//! The SDK fills a missing required member with its default, so a `ListHarnesses` answer of `{}` reads as an
//! empty list, exactly like `{"harnesses": []}`. The two mean different things after a `ConflictException`: an
//! empty list says the harness holding the name went away (create again); a listing without its list is no
//! answer at all (report it). [`MemberCheck`] looks at the response body the SDK decoded and remembers which it
//! was.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use aws_sdk_bedrockagentcorecontrol::config::interceptors::AfterDeserializationInterceptorContextRef;
use aws_sdk_bedrockagentcorecontrol::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_bedrockagentcorecontrol::error::BoxError;
use serde_json::Value;

const UNSEEN: u8 = 0;
const PRESENT: u8 = 1;
const MISSING: u8 = 2;

/// An interceptor for one request: after the response is decoded, notes whether its JSON body had `member`
/// (present and not `null`).
#[derive(Debug, Clone)]
pub(super) struct MemberCheck {
    member: &'static str,
    seen: Arc<AtomicU8>,
}

impl MemberCheck {
    /// A check for `member`, nothing seen yet.
    pub(super) fn new(member: &'static str) -> Self {
        Self { member, seen: Arc::new(AtomicU8::new(UNSEEN)) }
    }

    /// Whether the decoded response had the member; `None` when no response was decoded.
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
        let present = body.is_some_and(|body| body.get(self.member).is_some_and(|member| !member.is_null()));
        self.seen.store(if present { PRESENT } else { MISSING }, Ordering::Release);
        Ok(())
    }
}
