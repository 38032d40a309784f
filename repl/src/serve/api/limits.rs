//! How much the API sends and keeps at most.

use memtrace::attrib::HUMAN;

/// Rows a query returns at most over HTTP.
pub const MAX_ROWS: usize = 5000;
/// Nodes a drawn graph holds at most.
pub const MAX_GRAPH_NODES: usize = 2000;
/// Characters of a value the node panel shows at most.
pub const MAX_VALUE_CHARS: usize = 65_536;
/// Largest body of a label or a query.
pub const MAX_SMALL_BODY: u64 = 1 << 20;
/// Characters of a value shown beside a node in a graph or list.
pub const PREVIEW: usize = 160;
/// Traces whose structure (ops with their inputs and outputs, degrees) stay cached.
pub const STRUCTURES: usize = 16;

/// The methods whose verdicts the case page sets side by side, in order.
pub const METHODS: [&str; 4] = ["evidence", "llm", "hybrid", HUMAN];
