//! Running work off the GIL: on a worker thread, while the calling thread
//! waits without the GIL and, every few milliseconds, lets Python handle
//! its signals, so Ctrl-C (KeyboardInterrupt) stops the work.
//!
//! Workers are kept and reused (starting a thread costs more than a small
//! query): a finished worker waits for the next call, up to [`MAX_IDLE`] of
//! them.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use memtrace::Cancel;
use pyo3::prelude::*;

use crate::error::{BindingError, Result};

/// How often the waiting thread looks at Python's signals and the clock.
const TICK: Duration = Duration::from_millis(20);

/// How long the calling thread looks for the answer before it sleeps.
const SPIN: Duration = Duration::from_micros(200);

/// How many finished workers wait for more work.
const MAX_IDLE: usize = 8;

/// A call for a worker to run.
type Job = Box<dyn FnOnce() + Send>;

/// The workers waiting for a job, each by the sender of its queue.
static IDLE: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

/// Hands `job` to an idle worker, or to a new one.
fn submit(job: Job) -> Result<()> {
    let mut job = job;
    loop {
        let idle = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some(worker) = idle else { break };
        match worker.send(job) {
            Ok(()) => return Ok(()),
            // That worker is gone; try the next.
            Err(mpsc::SendError(back)) => job = back,
        }
    }
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("memtrace-py".into())
        .spawn(move || {
            let mut job = job;
            loop {
                job();
                {
                    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
                    if idle.len() >= MAX_IDLE {
                        return;
                    }
                    idle.push(tx.clone());
                }
                match rx.recv() {
                    Ok(next) => job = next,
                    Err(_) => return,
                }
            }
        })
        .map(drop)
        .map_err(|e| BindingError::Panicked(format!("could not start a worker thread: {e}")))
}

/// Looks for the answer for [`SPIN`] before the caller sleeps: most calls
/// are short, and waking a sleeping thread costs more than a small query.
/// (Called without the GIL.)
fn spin_recv<T>(rx: &mpsc::Receiver<T>) -> Option<Result<T, RecvTimeoutError>> {
    let until = Instant::now() + SPIN;
    while Instant::now() < until {
        match rx.try_recv() {
            Ok(v) => return Some(Ok(v)),
            Err(mpsc::TryRecvError::Disconnected) => {
                return Some(Err(RecvTimeoutError::Disconnected))
            }
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    None
}

/// Whether an error is the work stopping at its cancel token.
fn is_cancelled(e: &BindingError) -> bool {
    match e {
        BindingError::Engine(memtrace::EngineError::Cancelled) => true,
        BindingError::Analysis(a) => a.is_cancelled(),
        _ => false,
    }
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a worker thread panicked".into())
}

/// Runs `work` with a cancel token on a worker thread, without the GIL.
/// A KeyboardInterrupt (or any signal handler's exception) cancels the work,
/// waits for it to stop and is raised; `timeout` (seconds) cancels it too
/// and raises QueryTimeoutError.
pub fn detached<T, F>(py: Python<'_>, timeout: Option<f64>, work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Cancel) -> Result<T> + Send + 'static,
{
    if let Some(t) = timeout {
        if !(t.is_finite() && t > 0.0) {
            return Err(BindingError::Value(format!(
                "timeout must be a positive number of seconds, not {t}"
            )));
        }
    }
    let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
    let cancel = Cancel::new();
    let (tx, rx) = mpsc::channel();
    let token = cancel.clone();
    submit(Box::new(move || {
        let outcome = catch_unwind(AssertUnwindSafe(|| work(&token)));
        let _ = tx.send(outcome);
    }))?;
    let mut rx = rx;
    let mut timed_out = false;
    let mut interrupted: Option<PyErr> = None;
    let mut first = true;
    let outcome = loop {
        let spin = std::mem::take(&mut first);
        let (got, back) = py.detach(move || {
            let got = if spin { spin_recv(&rx) } else { None };
            let got = got.unwrap_or_else(|| rx.recv_timeout(TICK));
            (got, rx)
        });
        rx = back;
        match got {
            Ok(outcome) => break Some(outcome),
            Err(RecvTimeoutError::Disconnected) => break None,
            Err(RecvTimeoutError::Timeout) => {
                if interrupted.is_none() {
                    if let Err(e) = py.check_signals() {
                        cancel.cancel();
                        interrupted = Some(e);
                    }
                }
                if !timed_out && deadline.is_some_and(|d| Instant::now() >= d) {
                    cancel.cancel();
                    timed_out = true;
                }
            }
        }
    };
    if let Some(e) = interrupted {
        return Err(BindingError::Python(e));
    }
    match outcome {
        Some(Ok(Err(e))) if timed_out && is_cancelled(&e) => {
            Err(BindingError::Timeout(timeout.unwrap_or_default()))
        }
        Some(Ok(result)) => result,
        Some(Err(panic)) => Err(BindingError::Panicked(panic_text(panic.as_ref()))),
        None => Err(BindingError::Panicked(
            "the worker thread ended without an answer".into(),
        )),
    }
}
