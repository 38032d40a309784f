//! Dense and hybrid evidence search: message bodies and questions embedded
//! by an OpenAI-compatible `/embeddings` endpoint, ranked by cosine
//! similarity, and fused with the BM25 ranking by reciprocal rank. Each
//! message's vector is cached in the database under a hash of the model
//! and the text, so a message is embedded once.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::case::FailedCase;
use super::holds::Matcher;
use super::model::TraceModel;
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Cancel, Engine};
use memtrace_llm::{Client, Config};

/// How evidence messages are searched for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// BM25 over the messages' words: needs nothing.
    #[default]
    Sparse,
    /// Cosine similarity of embeddings from an endpoint.
    Dense,
    /// Both rankings fused by reciprocal rank.
    Hybrid,
}

impl Search {
    /// Every search, sparse first.
    pub const ALL: [Search; 3] = [Search::Sparse, Search::Dense, Search::Hybrid];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Search::Sparse => "sparse",
            Search::Dense => "dense",
            Search::Hybrid => "hybrid",
        }
    }

    /// Whether it needs an embeddings endpoint.
    pub fn needs_embeddings(self) -> bool {
        self != Search::Sparse
    }
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Search {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Search, String> {
        Search::ALL
            .into_iter()
            .find(|x| x.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown evidence search '{s}' (one of sparse, dense, hybrid)"))
    }
}

/// The constant of reciprocal-rank fusion: a message ranked `r` (from 1)
/// adds `1 / (RRF_K + r)`.
const RRF_K: f64 = 60.0;

/// Texts sent in one request.
const BATCH: usize = 64;

/// Two rankings (message variables, best first) fused by reciprocal rank.
pub fn fuse(first: &[usize], second: &[usize]) -> Vec<usize> {
    let mut score: HashMap<usize, f64> = HashMap::new();
    for list in [first, second] {
        for (r, &v) in list.iter().enumerate() {
            *score.entry(v).or_default() += 1.0 / (RRF_K + r as f64 + 1.0);
        }
    }
    let mut out: Vec<(usize, f64)> = score.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.into_iter().map(|x| x.0).collect()
}

/// An embeddings client with the database's cache of vectors.
pub struct Embedder<'a> {
    db: &'a Engine,
    client: Client,
    rt: tokio::runtime::Runtime,
    cancel: &'a Cancel,
    /// Dense or hybrid.
    pub search: Search,
    /// Texts embedded by the endpoint (not found in the cache) so far.
    pub sent: usize,
    /// Texts found in the cache so far.
    pub cached: usize,
}

impl<'a> Embedder<'a> {
    /// An embedder for `config` (its model and pool) over `db`'s cache,
    /// for a dense or hybrid `search`.
    pub fn new(
        db: &'a Engine,
        config: Config,
        search: Search,
        cancel: &'a Cancel,
    ) -> Result<Embedder<'a>> {
        let client = Client::new(config)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| AnalysisError::ClientCannotStart {
                client: "embeddings",
                source,
            })?;
        Ok(Embedder {
            db,
            client,
            rt,
            cancel,
            search,
            sent: 0,
            cached: 0,
        })
    }

    fn key(&self, text: &str) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"memtrace embedding\0");
        h.update(self.client.config().model.as_bytes());
        h.update(b"\0");
        h.update(text.as_bytes());
        *h.finalize().as_bytes()
    }

    /// The vectors of `texts`, from the cache or the endpoint (which is
    /// asked only for the texts not cached, in batches); new vectors are
    /// cached when the database can be written.
    pub fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        let mut missing: Vec<usize> = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            match self.db.memo(&self.key(t))?.and_then(|b| decode(&b)) {
                Some(v) => {
                    self.cached += 1;
                    out.push(Some(v));
                }
                None => {
                    missing.push(i);
                    out.push(None);
                }
            }
        }
        for chunk in missing.chunks(BATCH) {
            self.cancel.check()?;
            let batch: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            let cancel = self.cancel;
            let vectors = self
                .rt
                .block_on(self.client.embed(&batch, &|| cancel.is_cancelled()))?;
            let mut memos = Vec::with_capacity(chunk.len());
            for (&i, v) in chunk.iter().zip(vectors) {
                memos.push((self.key(&texts[i]), encode(&v)));
                out[i] = Some(v);
            }
            self.sent += chunk.len();
            // A database opened read-only keeps no cache; the vectors are
            // still used.
            let _ = self.db.put_memos(&memos);
        }
        Ok(out.into_iter().flatten().collect())
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(b: &[u8]) -> Option<Vec<f32>> {
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        dot += f64::from(*x) * f64::from(*y);
        na += f64::from(*x) * f64::from(*x);
        nb += f64::from(*y) * f64::from(*y);
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The embedded messages of one trace.
pub struct DenseIndex {
    vars: Vec<usize>,
    vectors: Vec<Vec<f32>>,
}

impl DenseIndex {
    /// Embeds every message body of a trace.
    pub fn new(
        model: &TraceModel,
        matcher: &Matcher<'_>,
        embedder: &mut Embedder<'_>,
    ) -> Result<DenseIndex> {
        let mut vars = Vec::new();
        let mut texts = Vec::new();
        for var in 0..model.vars.len() {
            if let Some(body) = matcher.body(var) {
                if !body.text.trim().is_empty() {
                    vars.push(var);
                    texts.push(body.text.clone());
                }
            }
        }
        let vectors = embedder.embed(&texts)?;
        Ok(DenseIndex { vars, vectors })
    }

    /// The messages by similarity to a case's question (and gold answer,
    /// when it has one), best first.
    pub fn rank(&self, case: &FailedCase, embedder: &mut Embedder<'_>) -> Result<Vec<usize>> {
        let mut text = case.query.clone();
        for g in case.gold.iter().filter(|g| !g.trim().is_empty()) {
            text.push(' ');
            text.push_str(g);
        }
        let q = embedder
            .embed(std::slice::from_ref(&text))?
            .into_iter()
            .next()
            .unwrap_or_default();
        let mut scored: Vec<(usize, f64)> = self
            .vars
            .iter()
            .zip(&self.vectors)
            .map(|(&v, x)| (v, cosine(&q, x)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scored.into_iter().map(|x| x.0).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_what_both_rankings_put_high() {
        assert_eq!(fuse(&[1, 2, 3], &[3, 1, 4]), vec![1, 3, 2, 4]);
        assert_eq!(fuse(&[], &[5, 6]), vec![5, 6]);
    }

    #[test]
    fn vectors_round_trip_through_their_bytes_and_bad_bytes_are_refused() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(decode(&encode(&v)), Some(v));
        assert_eq!(decode(&[1, 2, 3]), None);
        assert_eq!(decode(&[]), None);
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn searches_read_their_names() {
        for s in Search::ALL {
            assert_eq!(s.name().parse::<Search>(), Ok(s));
        }
        assert!("bm25"
            .parse::<Search>()
            .unwrap_err()
            .contains("sparse, dense, hybrid"));
    }
}
