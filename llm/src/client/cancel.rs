//! Waiting on a future while a caller's flag may call the work off.

use std::future::Future;
use std::time::Duration;

use crate::error::{LlmError, Result};

/// How often a cancellation flag is polled while waiting.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Runs `fut` unless `cancelled` says so first (polled every
/// [`CANCEL_POLL`]); the future is dropped then.
pub(super) async fn or_cancel<F: Future>(
    fut: F,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<F::Output> {
    let watch = async {
        loop {
            if cancelled() {
                return;
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
    };
    tokio::select! {
        biased;
        _ = watch => Err(LlmError::Cancelled),
        out = fut => Ok(out),
    }
}
