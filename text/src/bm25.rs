//! BM25 (Okapi) ranking over a small in-memory corpus.
//!
//! Tokens are lower-cased runs of letters and digits (Unicode-aware); a short
//! English stop-word list is left out. Scores use the usual `k1 = 1.2`,
//! `b = 0.75` and the non-negative IDF `ln(1 + (N - n + 0.5) / (n + 0.5))`.

use std::collections::HashMap;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "he", "her", "his", "i", "in", "is", "it", "its", "me", "my", "of", "on",
    "or", "our", "she", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we",
    "were", "what", "when", "where", "which", "who", "with", "you", "your",
];

/// The index terms of a text, in order.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
        .filter(|t| !STOP.contains(&t.as_str()))
        .collect()
}

/// A BM25 index over documents numbered in insertion order.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<u32>,
    df: HashMap<String, u32>,
    total_len: u64,
}

impl Bm25 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    /// An empty index.
    pub fn new() -> Bm25 {
        Bm25::default()
    }

    /// Adds a document; returns its number.
    pub fn add(&mut self, text: &str) -> usize {
        let mut tf: HashMap<String, u32> = HashMap::new();
        let toks = tokens(text);
        for t in &toks {
            *tf.entry(t.clone()).or_insert(0) += 1;
        }
        for t in tf.keys() {
            *self.df.entry(t.clone()).or_insert(0) += 1;
        }
        self.lengths.push(toks.len() as u32);
        self.total_len += toks.len() as u64;
        self.docs.push(tf);
        self.docs.len() - 1
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// The BM25 score of document `doc` for `query`.
    pub fn score(&self, query: &str, doc: usize) -> f64 {
        self.score_tokens(&tokens(query), doc)
    }

    fn score_tokens(&self, query: &[String], doc: usize) -> f64 {
        let Some(tf) = self.docs.get(doc) else {
            return 0.0;
        };
        let n = self.docs.len() as f64;
        let avg = if self.docs.is_empty() {
            1.0
        } else {
            (self.total_len as f64 / n).max(1.0)
        };
        let len = self.lengths[doc] as f64;
        query
            .iter()
            .map(|t| {
                let f = *tf.get(t).unwrap_or(&0) as f64;
                if f == 0.0 {
                    return 0.0;
                }
                let df = *self.df.get(t).unwrap_or(&0) as f64;
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                idf * f * (Self::K1 + 1.0) / (f + Self::K1 * (1.0 - Self::B + Self::B * len / avg))
            })
            .sum()
    }

    /// The `k` best documents for `query` with a positive score, best first;
    /// ties go to the earlier document.
    pub fn top(&self, query: &str, k: usize) -> Vec<(usize, f64)> {
        let q = tokens(query);
        let mut scored: Vec<(usize, f64)> = (0..self.docs.len())
            .map(|d| (d, self.score_tokens(&q, d)))
            .filter(|(_, s)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tokens_are_lowercase_words_without_stop_words() {
        assert_eq!(
            tokens("Where does Caroline live? In PARIS, since 2021!"),
            vec!["caroline", "live", "paris", "since", "2021"]
        );
        assert_eq!(tokens("café über naïve"), vec!["café", "über", "naïve"]);
        assert!(tokens("").is_empty());
    }

    #[test]
    fn the_matching_document_ranks_first() {
        let mut idx = Bm25::new();
        idx.add("I like hiking with my dog on weekends.");
        idx.add("Caroline moved to Paris last week.");
        idx.add("Paris is lovely in spring, my cousin says.");
        idx.add("Totally unrelated small talk.");
        let top = idx.top("Where did Caroline move?", 3);
        assert_eq!(top[0].0, 1);
        assert!(
            top.iter().all(|(d, _)| *d != 3),
            "documents without a query term are left out"
        );
        assert!(idx.top("zebra", 5).is_empty());
    }

    #[test]
    fn rare_terms_weigh_more_than_common_ones() {
        let mut idx = Bm25::new();
        for _ in 0..5 {
            idx.add("common words here");
        }
        let rare = idx.add("common rare");
        let common_only = idx.add("common common");
        assert!(idx.score("rare", rare) > idx.score("common", common_only));
    }

    proptest! {
        #[test]
        fn scores_are_finite_and_non_negative(docs in proptest::collection::vec("[a-z ]{0,40}", 1..12), q in "[a-z ]{0,20}") {
            let mut idx = Bm25::new();
            for d in &docs {
                idx.add(d);
            }
            for d in 0..idx.len() {
                let s = idx.score(&q, d);
                prop_assert!(s.is_finite() && s >= 0.0);
            }
            let top = idx.top(&q, 3);
            prop_assert!(top.len() <= 3);
            prop_assert!(top.windows(2).all(|w| w[0].1 >= w[1].1));
        }
    }
}
