//! What the configuration falls back on when nothing names a value.

/// The base URL when neither the file nor the environment names one.
pub(super) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model when neither the file nor the environment names one.
pub(super) const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The host that always needs a key.
pub(super) const OPENAI_HOST: &str = "api.openai.com";
