//! A statement's subgraph handed out as a [`petgraph`] graph: what a TRACE,
//! FORWARD or MATCH reaches, with the stored records as weights, so that
//! petgraph's algorithms (dominators, shortest paths, toposort, strongly
//! connected components) run on provenance.

use std::collections::{BTreeMap, HashMap};

use memtrace_query::{Params, Plan};
use memtrace_storage::{LocalId, TraceId};
use petgraph::graph::{DiGraph, NodeIndex};

use super::capture::{Capture, Reached};
use super::run::Exec;
use crate::db::Engine;
use crate::error::{EngineError, Result};
use crate::graph::Cancel;
use crate::model::{Edge, Operation, Variable};

/// A variable of a [`QueryGraph`]: its trace and its stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    /// The graph id of its trace.
    pub graph_id: String,
    /// The variable version, value included.
    pub variable: Variable,
    /// Whether it is a start of the walk (TRACE and FORWARD).
    pub start: bool,
}

/// An edge of a [`QueryGraph`]: the stored edge and the op that induced it.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    /// The graph id of its trace.
    pub graph_id: String,
    /// The edge, source to target as recorded.
    pub edge: Edge,
    /// The op that induced it.
    pub op: Operation,
}

/// A statement's subgraph as a petgraph [`DiGraph`], with the records as
/// weights. Edges point the way data flowed (source to target, as
/// recorded), whichever way the statement walked: a TRACE's start is a
/// sink of its graph, a FORWARD's a source. Use
/// [`petgraph::visit::Reversed`] to walk from a TRACE's start.
///
/// ```no_run
/// use petgraph::algo::dominators::simple_fast;
/// use petgraph::visit::Reversed;
///
/// let db = memtrace_engine::Engine::open("memtrace.db")?;
/// let g = db.query_graph("TRACE prediction:Q2", &Default::default())?;
/// let root = g.starts()[0];
/// let dom = simple_fast(Reversed(&g.graph), root);
/// for n in g.graph.node_indices() {
///     if let Some(d) = dom.immediate_dominator(n) {
///         println!("{} is reached only through {}", g.graph[n].variable.full_node_id, g.graph[d].variable.full_node_id);
///     }
/// }
/// # Ok::<(), memtrace_engine::EngineError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct QueryGraph {
    /// The graph: a node per variable version, an edge per recorded edge.
    pub graph: DiGraph<GraphNode, GraphEdge>,
    index: HashMap<(TraceId, LocalId), NodeIndex>,
    by_name: HashMap<(String, String), NodeIndex>,
}

impl QueryGraph {
    /// The node of a variable version, by its trace's graph id and its
    /// full node id (`full_name@version`).
    pub fn node(&self, graph_id: &str, full_node_id: &str) -> Option<NodeIndex> {
        self.by_name
            .get(&(graph_id.to_string(), full_node_id.to_string()))
            .copied()
    }

    /// The node of a variable version, by trace and local id.
    pub fn node_by_id(&self, trace: TraceId, id: LocalId) -> Option<NodeIndex> {
        self.index.get(&(trace, id)).copied()
    }

    /// The walk's starts, in trace and local id order (none for a MATCH).
    pub fn starts(&self) -> Vec<NodeIndex> {
        self.graph
            .node_indices()
            .filter(|&n| self.graph[n].start)
            .collect()
    }
}

impl Engine {
    /// Runs a TRACE, FORWARD or MATCH and hands its subgraph out as a
    /// petgraph graph ([`QueryGraph`]).
    ///
    /// A TRACE or FORWARD gives what `RETURN subgraph` gives for it: the
    /// starts, the nodes that pass its WHERE and the edges walked between
    /// them, whatever its RETURN says. A MATCH gives every binding's nodes,
    /// the edges its relationships bound, and for each variable-length
    /// step the path of edges by which the walk reached the bound node
    /// (with the variables along it). Any other statement, or a LIMIT, is
    /// refused: a graph is not cut short.
    pub fn query_graph(&self, text: &str, params: &Params) -> Result<QueryGraph> {
        self.query_graph_with(text, params, &GraphOptions::default())
    }

    /// [`Engine::query_graph`] with options: whether values are read, and
    /// a cancellation token.
    pub fn query_graph_with(
        &self,
        text: &str,
        params: &Params,
        options: &GraphOptions,
    ) -> Result<QueryGraph> {
        let cancel = &options.cancel;
        let plan = match self.prepare(text, params)? {
            Plan::Traverse(mut t) => {
                if t.limit.is_some() {
                    return Err(refuse_limit());
                }
                t.output = memtrace_query::ast::Output::Subgraph;
                Plan::Traverse(t)
            }
            Plan::Match(m) => {
                if m.projection.limit.is_some() {
                    return Err(refuse_limit());
                }
                Plan::Match(m)
            }
            other => {
                return Err(EngineError::GraphNeedsWalk {
                    statement: plan_name(&other),
                })
            }
        };
        let capture = Capture::default();
        let snapshot = self.snapshot();
        let exec = Exec {
            db: self,
            view: snapshot.view(),
            snapshot: &snapshot,
            cancel,
            capture: Some(&capture),
            batches: None,
            steps: false,
        };
        exec.run(&plan, &mut |_| Ok(true))?;
        build(&snapshot, capture.into_traces(), options)
    }
}

/// How [`Engine::query_graph_with`] builds a graph.
#[derive(Debug, Clone)]
pub struct GraphOptions {
    /// Read each variable's value into its weight (the default). Without,
    /// `value` is `None` in every weight: the closure of an answer in a
    /// long-context trace can hold hundreds of versions of a transcript of
    /// megabytes each, which the graph would keep in memory.
    pub values: bool,
    /// Stops the statement, and the reading of the records, when cancelled.
    pub cancel: Cancel,
}

impl Default for GraphOptions {
    fn default() -> Self {
        GraphOptions {
            values: true,
            cancel: Cancel::new(),
        }
    }
}

/// A record the trace's adjacency names but the store lacks: damage.
fn missing(trace: TraceId, what: &'static str, id: LocalId) -> EngineError {
    EngineError::Storage(memtrace_storage::StorageError::Decode {
        what,
        reason: format!("trace #{trace} names {what} {id}, which is not stored"),
    })
}

fn refuse_limit() -> EngineError {
    EngineError::GraphLimit
}

/// The statement a plan runs, as the user wrote its keyword.
fn plan_name(plan: &Plan) -> &'static str {
    match plan {
        Plan::Traverse(_) => "TRACE",
        Plan::Match(_) => "MATCH",
        Plan::Find(_) => "FIND",
        Plan::ShowTraces => "SHOW TRACES",
        Plan::Describe(_) => "DESCRIBE",
        Plan::Explain(_) => "EXPLAIN",
        other => crate::extension::statement_name(other).unwrap_or("this statement"),
    }
}

/// Reads the records of what was reached and builds the graph.
fn build(
    snapshot: &crate::db::Snapshot<'_>,
    traces: BTreeMap<TraceId, Reached>,
    options: &GraphOptions,
) -> Result<QueryGraph> {
    let mut out = QueryGraph::default();
    for (tid, reached) in traces {
        let view = snapshot.trace(tid)?;
        let gid = view.record().graph_id.clone();
        let mut edges = Vec::with_capacity(reached.edges.len());
        let mut nodes = reached.nodes.clone();
        nodes.extend(reached.starts.iter().copied());
        for (i, &e) in reached.edges.iter().enumerate() {
            if i % 4096 == 0 {
                options.cancel.check()?;
            }
            let edge = view.edge_by_id(e)?.ok_or_else(|| missing(tid, "edge", e))?;
            nodes.insert(edge.source);
            nodes.insert(edge.target);
            edges.push(edge);
        }
        for (i, n) in nodes.into_iter().enumerate() {
            if i % 4096 == 0 {
                options.cancel.check()?;
            }
            let variable = if options.values {
                view.variable_by_id(n)?
            } else {
                view.variable_without_value(n)?
            }
            .ok_or_else(|| missing(tid, "variable", n))?;
            let name = (gid.clone(), variable.full_node_id.clone());
            let ix = out.graph.add_node(GraphNode {
                graph_id: gid.clone(),
                variable,
                start: reached.starts.contains(&n),
            });
            out.index.insert((tid, n), ix);
            out.by_name.insert(name, ix);
        }
        let mut ops: HashMap<LocalId, Operation> = HashMap::new();
        for edge in edges {
            let op = match ops.get(&edge.op) {
                Some(o) => o.clone(),
                None => {
                    let o = view
                        .op_by_id(edge.op)?
                        .ok_or_else(|| missing(tid, "op", edge.op))?;
                    ops.insert(edge.op, o.clone());
                    o
                }
            };
            let (a, b) = (
                out.index[&(tid, edge.source)],
                out.index[&(tid, edge.target)],
            );
            out.graph.add_edge(
                a,
                b,
                GraphEdge {
                    graph_id: gid.clone(),
                    edge,
                    op,
                },
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use petgraph::algo::dominators::simple_fast;
    use petgraph::algo::{is_cyclic_directed, tarjan_scc, toposort};
    use petgraph::visit::Reversed;

    use crate::{Engine, EngineError, Params};

    /// x -> a -> b -> c, y -> b, a -> c (ops named after their edges), and
    /// c -> d; with `cycle`, also c -> a.
    fn db(cycle: bool) -> (tempfile::TempDir, Engine) {
        let node = |n: &str| {
            format!(
                r#"{{"name": "{n}", "class_name": "v", "version": 1, "value": "'{n}'", "session_id": "s"}}"#
            )
        };
        let mut pairs = vec![
            ("x", "a"),
            ("a", "b"),
            ("b", "c"),
            ("y", "b"),
            ("a", "c"),
            ("c", "d"),
        ];
        if cycle {
            pairs.push(("c", "a"));
        }
        let ops: Vec<String> = pairs
            .iter()
            .map(|(a, b)| {
                format!(
                    r#"{{"op_id": "{a}{b}", "op_name": "op_{a}{b}", "category": "k{a}", "session_id": "s"}}"#
                )
            })
            .collect();
        let edges: Vec<String> = pairs
            .iter()
            .map(|(a, b)| {
                format!(
                    r#"{{"edge_id": "e{a}{b}", "op_id": "{a}{b}", "session_id": "s",
                        "source_full_node_id": "v:{a}@1", "target_full_node_id": "v:{b}@1"}}"#
                )
            })
            .collect();
        let text = format!(
            r#"{{"graph_id": "g", "user_id": "u", "project_id": "p", "data": {{
                "sessions": [{{"session_id": "s", "session_name": "s"}}],
                "operations": [{}],
                "nodes": [{}],
                "edges": [{}]}}}}"#,
            ops.join(","),
            ["x", "y", "a", "b", "c", "d"].map(node).join(","),
            edges.join(",")
        );
        crate::exec::test_db(&text)
    }

    fn names(g: &super::QueryGraph) -> Vec<String> {
        let mut v: Vec<String> = g
            .graph
            .node_weights()
            .map(|n| n.variable.name.clone())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_trace_graph_is_its_subgraph_with_records_as_weights() {
        let (_d, db) = db(false);
        let g = db.query_graph("TRACE v:c", &Params::new()).unwrap();
        assert_eq!(names(&g), ["a", "b", "c", "x", "y"]);
        // Every edge into the closure of c, none out of c (d is not reached).
        assert_eq!(g.graph.edge_count(), 5);
        let rows = db.query("TRACE v:c RETURN subgraph").unwrap().rows;
        let kinds = |k: &str| rows.iter().filter(|r| r[1] == k).count();
        assert_eq!(g.graph.node_count(), kinds("node"));
        assert_eq!(g.graph.edge_count(), kinds("edge"));
        let c = g.node("g", "v:c@1").unwrap();
        assert_eq!(g.starts(), [c]);
        assert_eq!(g.graph[c].variable.value.as_deref(), Some("'c'"));
        // Edge weights carry the edge and its op.
        let e = g
            .graph
            .find_edge(g.node("g", "v:y@1").unwrap(), g.node("g", "v:b@1").unwrap());
        let w = &g.graph[e.unwrap()];
        assert_eq!(w.edge.edge_id, "eyb");
        assert_eq!(w.op.op_name.as_deref(), Some("op_yb"));
        assert_eq!(w.op.category.as_deref(), Some("ky"));
        // The same RETURN clause is ignored, and WHERE keeps what passes.
        let h = db
            .query_graph("TRACE v:c DEPTH 1 RETURN count", &Params::new())
            .unwrap();
        assert_eq!(names(&h), ["a", "b", "c"]);
        // Data flows to the start: petgraph's algorithms see it that way.
        let order = toposort(&g.graph, None).unwrap();
        assert_eq!(order.last(), Some(&c));
        let dom = simple_fast(Reversed(&g.graph), c);
        let a = g.node("g", "v:a@1").unwrap();
        let x = g.node("g", "v:x@1").unwrap();
        // a reaches c both directly and through b: only c dominates it;
        // x is reached only through a.
        assert_eq!(dom.immediate_dominator(a), Some(c));
        assert_eq!(dom.immediate_dominator(x), Some(a));
    }

    #[test]
    fn values_can_be_left_unread_and_a_cancelled_graph_stops() {
        let (_d, db) = db(false);
        let lean = super::GraphOptions {
            values: false,
            ..Default::default()
        };
        let g = db
            .query_graph_with("TRACE v:c", &Params::new(), &lean)
            .unwrap();
        assert_eq!(names(&g), ["a", "b", "c", "x", "y"]);
        assert!(g.graph.node_weights().all(|n| n.variable.value.is_none()));
        let full = db.query_graph("TRACE v:c", &Params::new()).unwrap();
        assert!(full
            .graph
            .node_weights()
            .all(|n| n.variable.value.is_some()));
        let stopped = super::GraphOptions::default();
        stopped.cancel.cancel();
        assert!(matches!(
            db.query_graph_with("TRACE v:c", &Params::new(), &stopped),
            Err(EngineError::Cancelled)
        ));
    }

    #[test]
    fn forward_and_cycles() {
        let (_d, db) = db(true);
        let g = db.query_graph("FORWARD v:x", &Params::new()).unwrap();
        assert_eq!(names(&g), ["a", "b", "c", "d", "x"]);
        assert!(is_cyclic_directed(&g.graph));
        let big = tarjan_scc(&g.graph)
            .into_iter()
            .map(|c| c.len())
            .max()
            .unwrap();
        assert_eq!(big, 3);
        let x = g.node("g", "v:x@1").unwrap();
        assert_eq!(g.starts(), [x]);
        assert_eq!(g.graph.neighbors_directed(x, petgraph::Incoming).count(), 0);
    }

    #[test]
    fn a_match_graph_holds_its_bindings_and_paths() {
        let (_d, db) = db(false);
        // Single hops: the bound edges only.
        let g = db
            .query_graph("MATCH (a)-[r:kx]->(b) RETURN a, b", &Params::new())
            .unwrap();
        assert_eq!(names(&g), ["a", "x"]);
        assert_eq!(g.graph.edge_count(), 1);
        assert!(g.starts().is_empty());
        // A variable-length step brings the path it was reached by.
        let g = db
            .query_graph(
                "MATCH (s:v {name: 'x'})-[*2..2]->(t:v {name: 'c'}) RETURN s, t",
                &Params::new(),
            )
            .unwrap();
        assert_eq!(names(&g), ["a", "c", "x"]);
        assert_eq!(g.graph.edge_count(), 2);
        // A WHERE that nothing passes leaves an empty graph.
        let g = db
            .query_graph(
                "MATCH (a)-[:kx]->(b) WHERE b.name = 'zz' RETURN a",
                &Params::new(),
            )
            .unwrap();
        assert_eq!(g.graph.node_count(), 0);
    }

    #[test]
    fn statements_without_a_graph_and_limits_are_refused() {
        let (_d, db) = db(false);
        for q in ["FIND vars", "SHOW TRACES", "TRACE v:c LIMIT 2"] {
            match db.query_graph(q, &Params::new()) {
                Err(e) if e.is_invalid_request() => assert!(!e.to_string().is_empty(), "{q}"),
                other => panic!("{q}: {other:?}"),
            }
        }
        assert!(matches!(
            db.query_graph("TRACE v:nope", &Params::new()),
            Err(EngineError::NoTraceHolds { .. } | EngineError::UnknownNode { .. })
        ));
        assert!(matches!(
            db.query_graph("TRACE v:c UNTILL", &Params::new()),
            Err(EngineError::Query(_))
        ));
    }
}
