//! The trace cache: per-trace graphs, catalogs, edge records and what
//! extensions compute per trace ([`TraceState`]), kept while
//! they fit in a budget of bytes, least recently used evicted first.
//!
//! Traces never change after import and their ids are never reused, so an
//! entry stays valid until its trace is dropped; dropping evicts it.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use memtrace_storage::TraceId;

use crate::catalog::{StoredLabels, TraceCatalog, TraceEdges, TraceOps};
use crate::error::Result;
use crate::graph::TraceGraph;

/// The default budget: 256 MiB.
pub(crate) const DEFAULT_BUDGET: usize = 256 << 20;

/// What the trace cache holds and has done since the database was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests that loaded from the store.
    pub misses: u64,
    /// Entries evicted to stay within the budget.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes held now (approximate heap size of the entries).
    pub bytes: usize,
    /// The budget in bytes.
    pub budget: usize,
}

/// What an extension computes for one trace and keeps in the trace cache.
pub trait TraceState: Any + Send + Sync {
    /// Approximate heap bytes, counted against the cache's budget.
    fn bytes(&self) -> usize;
}

impl TraceState for TraceGraph {
    fn bytes(&self) -> usize {
        TraceGraph::bytes(self)
    }
}

impl TraceState for TraceCatalog {
    fn bytes(&self) -> usize {
        TraceCatalog::bytes(self)
    }
}

impl TraceState for TraceOps {
    fn bytes(&self) -> usize {
        TraceOps::bytes(self)
    }
}

impl TraceState for StoredLabels {
    fn bytes(&self) -> usize {
        StoredLabels::bytes(self)
    }
}

/// A trace's head as the cache keeps it: its record and, for a small
/// trace, its names and adjacency as stored (the graph is built from them
/// when a query needs it).
#[derive(Debug)]
pub(crate) struct Head {
    /// The trace's record.
    pub(crate) record: memtrace_storage::TraceRecord,
    /// Its variables by node id (a small trace's).
    pub(crate) names: Option<memtrace_storage::StoredNames>,
    /// Its adjacency as stored (a small trace's).
    pub(crate) adjacency: Option<memtrace_storage::StoredAdjacency>,
}

impl TraceState for Head {
    fn bytes(&self) -> usize {
        size_of::<Self>()
            + self.record.header_json.capacity()
            + self.record.source.capacity()
            + self
                .names
                .as_ref()
                .map_or(0, memtrace_storage::StoredNames::bytes)
            + self
                .adjacency
                .as_ref()
                .map_or(0, memtrace_storage::StoredAdjacency::bytes)
    }
}

impl TraceState for TraceEdges {
    fn bytes(&self) -> usize {
        TraceEdges::bytes(self)
    }
}

/// An entry: one per trace and type of structure.
type Key = (TraceId, TypeId);

/// A cached structure, of the type its key names.
type Entry = Arc<dyn Any + Send + Sync>;

struct Slot {
    entry: Entry,
    bytes: usize,
    tick: u64,
}

#[derive(Default)]
struct Inner {
    budget: usize,
    used: usize,
    tick: u64,
    slots: HashMap<Key, Slot>,
    /// Least recently used first: last-use tick -> key.
    lru: BTreeMap<u64, Key>,
    /// Dropped traces: a load that raced with the drop is not kept.
    dropped: HashSet<TraceId>,
    /// Traces walked once from their stored blocks (see
    /// [`TraceCache::walk_stored`]).
    walked: HashSet<TraceId>,
    hits: u64,
    misses: u64,
    evictions: u64,
}

impl Inner {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn remove(&mut self, key: &Key) -> bool {
        match self.slots.remove(key) {
            Some(slot) => {
                self.lru.remove(&slot.tick);
                self.used -= slot.bytes;
                true
            }
            None => false,
        }
    }

    /// Evicts least recently used entries until `extra` more bytes fit.
    fn make_room(&mut self, extra: usize) {
        while self.used + extra > self.budget {
            let Some((_, key)) = self.lru.pop_first() else {
                break;
            };
            if let Some(slot) = self.slots.remove(&key) {
                self.used -= slot.bytes;
                self.evictions += 1;
            }
        }
    }
}

/// A thread-safe cache of per-trace structures, bounded in bytes.
pub(crate) struct TraceCache {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for TraceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TraceCache").field(&self.stats()).finish()
    }
}

impl Default for TraceCache {
    fn default() -> Self {
        TraceCache::new(DEFAULT_BUDGET)
    }
}

impl TraceCache {
    /// An empty cache with a budget of `budget` bytes.
    pub(crate) fn new(budget: usize) -> TraceCache {
        TraceCache {
            inner: Mutex::new(Inner {
                budget,
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent at every await-free step; a panic
        // elsewhere while holding the lock leaves nothing half-done.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached structure of type `T` for `trace`, if any (a hit, or a
    /// miss, in the counters).
    pub(crate) fn get<T: TraceState>(&self, trace: TraceId) -> Option<Arc<T>> {
        let key = (trace, TypeId::of::<T>());
        let mut guard = self.lock();
        let tick = guard.next_tick();
        let inner = &mut *guard;
        if let Some(slot) = inner.slots.get_mut(&key) {
            if let Ok(found) = Arc::clone(&slot.entry).downcast::<T>() {
                let old = std::mem::replace(&mut slot.tick, tick);
                inner.lru.remove(&old);
                inner.lru.insert(tick, key);
                inner.hits += 1;
                return Some(found);
            }
        }
        inner.misses += 1;
        None
    }

    /// The cached structure of type `T` for `trace`, if any, without
    /// counting a hit or a miss: for a look at what is at hand (a head's
    /// adjacency) before loading something else. A found entry counts as
    /// used for the eviction order.
    pub(crate) fn peek<T: TraceState>(&self, trace: TraceId) -> Option<Arc<T>> {
        let key = (trace, TypeId::of::<T>());
        let mut guard = self.lock();
        let tick = guard.next_tick();
        let inner = &mut *guard;
        let slot = inner.slots.get_mut(&key)?;
        let found = Arc::clone(&slot.entry).downcast::<T>().ok()?;
        let old = std::mem::replace(&mut slot.tick, tick);
        inner.lru.remove(&old);
        inner.lru.insert(tick, key);
        Some(found)
    }

    /// Keeps `value` as `trace`'s structure of type `T` when it fits the
    /// budget (and the trace was not dropped).
    pub(crate) fn insert<T: TraceState>(&self, trace: TraceId, value: &Arc<T>) {
        let key = (trace, TypeId::of::<T>());
        let bytes = value.bytes();
        let mut inner = self.lock();
        if bytes > inner.budget || inner.dropped.contains(&trace) {
            return;
        }
        // Another thread may have loaded the same entry meanwhile: keep one.
        inner.remove(&key);
        inner.make_room(bytes);
        let tick = inner.next_tick();
        inner.lru.insert(tick, key);
        inner.used += bytes;
        inner.slots.insert(
            key,
            Slot {
                entry: value.clone(),
                bytes,
                tick,
            },
        );
    }

    /// The cached structure of type `T` for `trace`, or what `load`
    /// returns (kept when it fits the budget). `load` runs without the lock
    /// held, so a slow load does not hold up other traces.
    pub(crate) fn get_or_load<T: TraceState, E>(
        &self,
        trace: TraceId,
        load: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        if let Some(found) = self.get(trace) {
            return Ok(found);
        }
        let value = Arc::new(load()?);
        self.insert(trace, &value);
        Ok(value)
    }

    /// Whether a bounded walk of `trace` should read the stored blocks of
    /// its rows rather than load its graph: yes the first time for a trace
    /// whose graph is not cached (a one-off query reads a few blocks); a
    /// trace walked again is worth loading whole.
    pub(crate) fn walk_stored(&self, trace: TraceId) -> bool {
        let mut inner = self.lock();
        if inner
            .slots
            .contains_key(&(trace, TypeId::of::<TraceGraph>()))
        {
            return false;
        }
        inner.walked.insert(trace)
    }

    /// Forgets a dropped trace's entries, and keeps none loaded for it later.
    pub(crate) fn evict_trace(&self, trace: TraceId) {
        let mut inner = self.lock();
        inner.dropped.insert(trace);
        let keys: Vec<Key> = inner
            .slots
            .keys()
            .filter(|(t, _)| *t == trace)
            .copied()
            .collect();
        for key in keys {
            inner.remove(&key);
        }
    }

    /// Sets the budget, evicting least recently used entries beyond it.
    pub(crate) fn set_budget(&self, bytes: usize) {
        let mut inner = self.lock();
        inner.budget = bytes;
        inner.make_room(0);
    }

    /// Empties the cache (the counters stay).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.slots.clear();
        inner.lru.clear();
        inner.used = 0;
    }

    /// Counters and sizes.
    pub(crate) fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            hits: inner.hits,
            misses: inner.misses,
            evictions: inner.evictions,
            entries: inner.slots.len(),
            bytes: inner.used,
            budget: inner.budget,
        }
    }

    /// Whether an entry is held (for tests).
    #[cfg(test)]
    fn holds<T: TraceState>(&self, trace: TraceId) -> bool {
        self.lock().slots.contains_key(&(trace, TypeId::of::<T>()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineError, ImportOptions};

    /// A graph of `n` edges (a chain over `n + 1` variables).
    fn chain(n: u32) -> TraceGraph {
        let edges: Vec<_> = (0..n).map(|i| (i, i + 1, 0)).collect();
        TraceGraph::from_edges(n + 1, 1, &edges).unwrap()
    }

    fn load_graph(cache: &TraceCache, trace: TraceId, n: u32) -> Arc<TraceGraph> {
        cache
            .get_or_load(trace, || Ok::<_, EngineError>(chain(n)))
            .unwrap()
    }

    #[test]
    fn hits_misses_and_eviction_by_bytes() {
        let size = chain(100).bytes();
        let cache = TraceCache::new(size * 2 + size / 2);
        let a = load_graph(&cache, 1, 100);
        load_graph(&cache, 2, 100);
        assert_eq!(
            (
                cache.stats().misses,
                cache.stats().hits,
                cache.stats().bytes
            ),
            (2, 0, 2 * size)
        );
        // A hit returns the same value and makes trace 1 the most recent.
        let again = cache
            .get_or_load::<TraceGraph, EngineError>(1, || panic!("must not load"))
            .unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(cache.stats().hits, 1);
        // A third does not fit: trace 2, the least recently used, goes.
        load_graph(&cache, 3, 100);
        assert!(cache.holds::<TraceGraph>(1) && cache.holds::<TraceGraph>(3));
        assert!(!cache.holds::<TraceGraph>(2));
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions, s.bytes), (2, 1, 2 * size));
        assert!(s.bytes <= s.budget);
        // Kinds of one trace are separate entries.
        assert!(!cache.holds::<TraceCatalog>(1));
        let c = cache
            .get_or_load(1, || Ok::<_, EngineError>(TraceCatalog::new(vec![])))
            .unwrap();
        assert!(c.variables().is_empty());
        assert!(cache.holds::<TraceCatalog>(1));
        assert!(cache.stats().bytes <= cache.stats().budget);
    }

    #[test]
    fn entries_over_the_budget_are_returned_but_not_kept() {
        let cache = TraceCache::new(chain(10).bytes());
        load_graph(&cache, 1, 10);
        let big = load_graph(&cache, 2, 1000);
        assert_eq!(big.edge_count(), 1000);
        assert!(!cache.holds::<TraceGraph>(2));
        assert!(cache.holds::<TraceGraph>(1), "nothing evicted for it");
        load_graph(&cache, 2, 1000);
        assert_eq!(cache.stats().misses, 3);
    }

    #[test]
    fn load_errors_pass_through_and_are_not_kept() {
        let cache = TraceCache::default();
        assert_eq!(cache.stats().budget, DEFAULT_BUDGET);
        let r = cache.get_or_load::<TraceGraph, EngineError>(1, || Err(EngineError::Cancelled));
        assert!(matches!(r, Err(EngineError::Cancelled)));
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn budget_changes_dropped_traces_and_clearing() {
        let cache = TraceCache::new(1 << 20);
        load_graph(&cache, 1, 10);
        load_graph(&cache, 2, 10);
        cache.evict_trace(1);
        assert!(!cache.holds::<TraceGraph>(1));
        // A load for a dropped trace (racing with the drop) is not kept.
        load_graph(&cache, 1, 10);
        assert!(!cache.holds::<TraceGraph>(1));
        cache.set_budget(0);
        let s = cache.stats();
        assert_eq!((s.entries, s.bytes, s.budget, s.evictions), (0, 0, 0, 1));
        cache.set_budget(1 << 20);
        load_graph(&cache, 3, 10);
        cache.clear();
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().bytes, 0);
        assert!(format!("{cache:?}").contains("TraceCache"));
    }

    #[test]
    fn the_database_caches_per_trace_structures() {
        let dir = tempfile::tempdir().unwrap();
        let db = Engine::open(dir.path().join("db")).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/sample_export.json");
        let opts = ImportOptions { force: true };
        let mut ids = Vec::new();
        for _ in 0..2 {
            let r = db.import_paths(std::slice::from_ref(&path), &opts, &mut |_| {});
            ids.push(r.into_iter().next().unwrap().result.unwrap()[0].trace);
        }
        let tv = db.trace_by_id(ids[0]).unwrap();
        let view = tv.store();
        let g = db.trace_graph(view, ids[0]).unwrap();
        assert_eq!(g.edge_count(), tv.info().counts.edges);
        let c = db.trace_catalog(view, ids[0]).unwrap();
        assert_eq!(c.variables().len(), tv.info().counts.variables as usize);
        let e = db.trace_edges(view, ids[0]).unwrap();
        assert_eq!(e.edges().len(), tv.info().counts.edges as usize);
        assert!(Arc::ptr_eq(&g, &db.trace_graph(view, ids[0]).unwrap()));
        let s = db.cache_stats();
        assert_eq!((s.misses, s.hits, s.entries), (3, 1, 3));
        assert_eq!(s.bytes, g.bytes() + c.bytes() + e.bytes());
        assert!(matches!(
            db.trace_graph(view, 999),
            Err(EngineError::UnknownTrace(_))
        ));
        db.trace_graph(view, ids[1]).unwrap();
        assert_eq!(db.cache_stats().entries, 4);

        let selector = format!("#{}", ids[0]);
        drop(tv);
        db.drop_trace(&selector, "test").unwrap();
        assert_eq!(
            db.cache_stats().entries,
            1,
            "the dropped trace's entries go"
        );
        let view = db.trace_by_id(ids[1]).unwrap();
        assert!(matches!(
            db.trace_catalog(view.store(), ids[0]),
            Err(EngineError::UnknownTrace(_))
        ));

        db.set_cache_budget(0);
        assert_eq!(db.cache_stats().entries, 0);
        db.trace_graph(view.store(), ids[1]).unwrap();
        assert_eq!(db.cache_stats().entries, 0, "nothing fits a budget of 0");
        db.set_cache_budget(1 << 20);
        db.trace_graph(view.store(), ids[1]).unwrap();
        assert_eq!(db.cache_stats().entries, 1);
        db.clear_cache();
        assert_eq!(db.cache_stats().entries, 0);
    }
}
