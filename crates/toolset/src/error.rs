//! What can go wrong while building a [`Toolset`](crate::Toolset).

use std::path::PathBuf;

/// A [`Toolset`](crate::Toolset) could not be built: its working directory is unusable, or a setting is out of
/// range. Errors of a tool *call* are not this type: they are [`ToolCallResult`](crate::ToolCallResult)s with
/// `is_error` set, for the model to read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsetError {
    /// The working directory does not exist.
    #[error("the working directory {} does not exist", path.display())]
    WorkdirMissing {
        /// The directory as it was given.
        path: PathBuf,
    },
    /// The working directory exists but is not a directory.
    #[error("the working directory {} is not a directory", path.display())]
    WorkdirNotDirectory {
        /// The directory as it was given.
        path: PathBuf,
    },
    /// The working directory could not be resolved (permission denied, a symlink loop, …).
    #[error("the working directory {} cannot be resolved: {source}", path.display())]
    Workdir {
        /// The directory as it was given.
        path: PathBuf,
        /// What the file system answered.
        #[source]
        source: std::io::Error,
    },
    /// A builder setting is out of range (a zero timeout or cap, an empty root, a malformed variable name).
    #[error("invalid toolset setting `{setting}`: {reason}")]
    InvalidSetting {
        /// The builder method's name.
        setting: &'static str,
        /// What is wrong with the value.
        reason: String,
    },
}

impl ToolsetError {
    pub(crate) fn setting(setting: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidSetting { setting, reason: reason.into() }
    }
}
