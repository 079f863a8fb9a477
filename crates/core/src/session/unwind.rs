//! Panics in user code (tools, providers) become values instead of tearing the session down.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::{Error, Provider};

/// Turns a panic while polling the inner future into an `Err` with the panic payload.
pub(crate) struct CatchUnwind<F: ?Sized>(Pin<Box<F>>);

impl<F: Future> CatchUnwind<F> {
    /// Wraps `future`.
    pub(crate) fn new(future: F) -> Self {
        Self(Box::pin(future))
    }
}

impl<F: Future + ?Sized> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The message of a panic payload.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a non-string payload".to_string()
    }
}

/// The error for a provider that panicked in `operation`.
pub(crate) fn provider_panicked<P: Provider + ?Sized>(
    provider: &P,
    operation: &str,
    panic: &(dyn Any + Send),
) -> Error {
    Error::provider(
        provider.name(),
        Some("panic".to_string()),
        format!("{operation} panicked: {}", panic_message(panic)),
        false,
    )
}
