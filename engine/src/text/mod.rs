//! Text matching used by retrieval simulation and evidence search:
//! tokenisation and BM25 ranking.

pub mod bm25;

pub use bm25::{tokens, Bm25};
