//! The wire (private): how `InvokeHarness` is read and written on the AWS SDK's types. The events of one call
//! become raw JSON events ([`convert`]) and then a turn ([`events`]); the next call's messages echo what the
//! model needs ([`messages`]); an event stream is read under one idle timer ([`idle`]); the SDK's errors become
//! ours ([`sdk_error`]); a harness's model, system prompt and tools are built for either plane
//! ([`harness_config`]); what a recording's messages should look like is [`vocabulary`].
//!
//! Only [`StopReason`](crate::StopReason), [`VOCABULARY`](crate::VOCABULARY) and
//! [`check_recording`](crate::check_recording) are public (at the crate root). The fuzz targets reach the rest through
//! `--cfg fuzzing`, under which this module is public (hidden from the documentation).

pub(crate) mod convert;
pub(crate) mod events;
pub(crate) mod harness_config;
pub(crate) mod idle;
pub(crate) mod messages;
pub(crate) mod sdk_error;
pub(crate) mod vocabulary;

// The fuzz targets' door (`--cfg fuzzing`), one path for each thing they reach.
#[cfg(fuzzing)]
pub use convert::{stream_event, to_document, to_json};
#[cfg(fuzzing)]
pub use events::{StopReason, is_complete, normalize, text_delta};
#[cfg(fuzzing)]
pub use messages::{AssistantBlock, assistant_blocks, messages_after};
