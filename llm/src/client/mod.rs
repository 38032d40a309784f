//! The client: sends chat completions and embeddings to the endpoint pool,
//! round-robin, with a limit on requests in flight, retries with exponential
//! backoff, and the fall-back from native tool calling to the text protocol.

mod cancel;
mod detail;
mod embeddings;
mod outcome;
mod redirect;
mod requests;
mod retry;
mod send;
#[cfg(test)]
mod tests;

pub use requests::{Client, Exchange};
