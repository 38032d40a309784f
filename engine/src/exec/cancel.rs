//! The token that lets one thread stop a query another thread runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{EngineError, Result};

/// A cheap, cloneable cancellation token: clones share one flag, so one
/// thread can cancel a long query that another runs.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the work that holds this token (or any clone of it).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(EngineError::Cancelled)` once cancelled, `Ok(())` before.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }
}
