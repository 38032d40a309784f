//! Reading environment variables: trimmed values and comma-separated lists.

use crate::{LlmError, Result};

/// A variable's value, trimmed; `None` when it is unset or empty.
pub(super) fn var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|value| value.trim().to_string())
        .filter(|value| !value.is_empty())
}

/// The items of a comma-separated variable, trimmed, with the variable's
/// name; `None` when it is unset. The error never quotes the value.
pub(super) fn list(
    env: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<(&'static str, Vec<String>)>> {
    let Some(value) = var(env, name) else {
        return Ok(None);
    };
    let items: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
    if let Some(i) = items.iter().position(String::is_empty) {
        return Err(LlmError::Config(format!(
            "{name} has an empty item (item {} of {}): expected items separated by single commas",
            i + 1,
            items.len()
        )));
    }
    Ok(Some((name, items)))
}
