//! Cross-provider end-to-end tests live in `tests/`.
