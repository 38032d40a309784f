//! The evidence search of one trace: the source evidence of a case, or
//! the messages a BM25, dense or hybrid search ranks, weighed.

use crate::attrib::case::FailedCase;
use crate::attrib::choose::{Chooser, POOL};
use crate::attrib::dense::{fuse, DenseIndex, Embedder, Search};
use crate::attrib::evidence::{self, Evidence};
use crate::attrib::flow::Flow;
use crate::attrib::model::TraceModel;
use crate::error::Result;

/// The evidence search of one trace: BM25 alone, or with the trace's
/// messages embedded for a dense or hybrid search.
pub(super) struct Searcher<'s, 'e> {
    model: &'s TraceModel,
    dense: Option<(DenseIndex, &'s mut Embedder<'e>)>,
}

impl<'s, 'e> Searcher<'s, 'e> {
    /// A searcher of `model`; with an embedder, its messages are embedded.
    pub(super) fn new(
        model: &'s TraceModel,
        flow: &Flow<'_>,
        embedder: Option<&'s mut Embedder<'e>>,
    ) -> Result<Searcher<'s, 'e>> {
        let dense = match embedder {
            Some(e) => Some((DenseIndex::new(model, flow.matcher(), e)?, e)),
            None => None,
        };
        Ok(Searcher { model, dense })
    }

    /// The evidence of a case: its source evidence, or the candidates the
    /// search ranks, weighed.
    pub(super) fn evidence(
        &mut self,
        chooser: &Chooser<'_>,
        case: &FailedCase,
        k: usize,
    ) -> Result<Evidence> {
        let Some((index, embedder)) = self.dense.as_mut() else {
            return Ok(evidence::evidence(self.model, chooser, case, k));
        };
        if !case.source_evidence.is_empty() {
            return Ok(evidence::evidence(self.model, chooser, case, k));
        }
        let dense: Vec<usize> = index.rank(case, embedder)?.into_iter().take(POOL).collect();
        let order = match embedder.search {
            Search::Hybrid => {
                let sparse: Vec<usize> = chooser
                    .sparse(case)
                    .into_iter()
                    .take(POOL)
                    .map(|x| x.0)
                    .collect();
                fuse(&sparse, &dense).into_iter().take(POOL).collect()
            }
            _ => dense,
        };
        let chosen: Vec<_> = chooser
            .weigh_in_order(case, &order)
            .into_iter()
            .take(k)
            .collect();
        Ok(Evidence {
            items: chosen.iter().map(|c| c.message).collect(),
            weights: chosen.iter().map(|c| c.weight).collect(),
            origin: evidence::EvidenceOrigin::Pseudo,
        })
    }
}
