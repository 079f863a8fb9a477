//! The harness listing: every page of `ListHarnesses`, and whether each page carried its list member at all.
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
use aws_sdk_bedrockagentcorecontrol::types::HarnessSummary;
use managed_agents_core::Error;
use serde_json::Value;

use super::call::{Call, Wait, bounded, control_failure};

/// A bound on listing pages, against a service that never stops handing out tokens.
const MAX_PAGES: u32 = 10_000;

const UNSEEN: u8 = 0;
const PRESENT: u8 = 1;
const MISSING: u8 = 2;

/// An interceptor for one request: after the response is decoded, notes whether its JSON body had `member`
/// (present and not `null`).
#[derive(Debug, Clone)]
struct MemberCheck {
    member: &'static str,
    seen: Arc<AtomicU8>,
}

impl MemberCheck {
    /// A check for `member`, nothing seen yet.
    fn new(member: &'static str) -> Self {
        Self { member, seen: Arc::new(AtomicU8::new(UNSEEN)) }
    }

    /// Whether the decoded response had the member; `None` when no response was decoded.
    fn present(&self) -> Option<bool> {
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

impl Call<'_> {
    /// Every harness, following `nextToken` through every page; each page bounded by the budget.
    pub(super) async fn list(&mut self) -> Result<Listing, Error> {
        let wait = Wait { phase: "listing", id: None, last_status: None, polls: self.polls };
        let mut listing = Listing { harnesses: Vec::new(), whole: true };
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let check = MemberCheck::new("harnesses");
            let request = self
                .client
                .list_harnesses()
                .set_max_results(self.settings.page_size)
                .set_next_token(token.clone())
                .customize()
                .interceptor(check.clone())
                .send();
            let page = bounded(self.settings, &self.budget, &wait, async {
                request.await.map_err(|e| control_failure("ListHarnesses", e))
            })
            .await
            .map_err(|f| f.into_error("ListHarnesses"))?;
            listing.whole &= check.present() != Some(false);
            listing.harnesses.extend(page.harnesses().iter().cloned());
            match page.next_token().filter(|t| !t.is_empty()) {
                Some(next) if token.as_deref() != Some(next) => token = Some(next.to_string()),
                _ => return Ok(listing),
            }
        }
        Err(Error::malformed("ListHarnesses response", format!("more than {MAX_PAGES} pages"), ""))
    }
}

/// The harnesses a listing found, and whether every page named its list.
pub(super) struct Listing {
    /// Every harness of every page.
    pub(super) harnesses: Vec<HarnessSummary>,
    /// Whether every page carried its `harnesses` member (the SDK reads a page without it as an empty list).
    pub(super) whole: bool,
}
