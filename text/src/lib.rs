//! Which texts best match a query? Tokens and BM25 ranking, shared by the generator's simulated retrieval and the analyses' evidence search.

#![deny(missing_docs)]

pub mod bm25;

pub use bm25::{tokens, Bm25};
