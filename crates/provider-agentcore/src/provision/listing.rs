//! The harness listing: every page of `ListHarnesses`, and whether each page carried its list member at all.
//!
//! The SDK reads a `ListHarnesses` answer of `{}` as an empty list, exactly like `{"harnesses": []}`. The two mean
//! different things after a `ConflictException`: an empty list says the harness holding the name went away
//! (create again); a listing without its list is no answer at all (report it).

use aws_sdk_bedrockagentcorecontrol::types::HarnessSummary;
use managed_agents_core::Error;

use super::call::{Call, RESOURCE, Wait, bounded, control_failure};
use super::member::MemberCheck;

/// A bound on listing pages, against a service that never stops handing out tokens.
const MAX_PAGES: u32 = 10_000;

impl Call<'_> {
    /// Every harness, following `nextToken` through every page; each page bounded by the budget.
    pub(super) async fn list(&mut self) -> Result<Listing, Error> {
        let wait = Wait { resource: RESOURCE, phase: "listing", id: None, last_status: None, polls: self.polls };
        let mut listing = Listing { harnesses: Vec::new(), whole: true };
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let check = MemberCheck::new("/harnesses");
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
