//! Time limits: work handed a cancellation token that fires when its time
//! is up (`memtrace query --timeout`, the viewer's query limit).

use std::sync::mpsc;
use std::time::Duration;

use memtrace::Cancel;

/// Runs `f` with a cancellation token that fires after `timeout`; the
/// timer stops as soon as `f` returns.
pub fn with_timeout<T>(timeout: Duration, f: impl FnOnce(&Cancel) -> T) -> T {
    with_timeout_on(&Cancel::new(), timeout, f)
}

/// Runs `f` with `cancel`, which also fires after `timeout` (others holding a
/// clone, such as a server whose client went away, may fire it sooner).
pub fn with_timeout_on<T>(cancel: &Cancel, timeout: Duration, f: impl FnOnce(&Cancel) -> T) -> T {
    let cancel = cancel.clone();
    let (done, wait) = mpsc::channel::<()>();
    let watch = cancel.clone();
    let timer = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(timeout) {
            watch.cancel();
        }
    });
    let out = f(&cancel);
    drop(done);
    let _ = timer.join();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_fires_after_the_limit_and_not_before() {
        let fired = with_timeout(Duration::from_millis(20), |c| {
            let start = std::time::Instant::now();
            while !c.is_cancelled() && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(2));
            }
            c.is_cancelled()
        });
        assert!(fired);
        let quick = with_timeout(Duration::from_secs(10), |c| c.is_cancelled());
        assert!(!quick);
    }
}
