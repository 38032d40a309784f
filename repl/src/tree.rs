//! `--format tree`: a TRACE or FORWARD result drawn as its provenance tree,
//! with the op that made each step on the branch (as `cargo tree` draws
//! dependencies). Ids and op names are drawn with their control characters
//! shown escaped (`memtrace_table::visible`).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use memtrace::engine::{dot_escape, mermaid_escape};
use memtrace::{Cancel, EngineError, Value};
use memtrace_table::visible;

/// How much of a walk's tree is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeCaps {
    /// Levels drawn below each start; what lies deeper is counted on one
    /// line (`... N more below`).
    pub depth: usize,
    /// Branches drawn below each node; the others are counted on one line
    /// (`... N more`).
    pub width: usize,
}

impl Default for TreeCaps {
    fn default() -> Self {
        TreeCaps {
            depth: 32,
            width: 100,
        }
    }
}

/// Lines drawn between two looks at the cancellation token.
const CANCEL_LINES: usize = 4096;

/// One node of a trace's tree: what it is drawn as, the op on its branch,
/// its children in the order the walk reached them, and whether the
/// statement's result holds it.
struct Node {
    text: String,
    op: String,
    children: Vec<usize>,
    shown: bool,
}

fn io_error(e: std::io::Error) -> EngineError {
    EngineError::Io {
        path: "stdout".into(),
        source: e,
    }
}

/// Draws the walk's tree from the rows of `Engine::walk_tree` (trace,
/// node, depth, parent, via_op, in_result): one tree per trace and start,
/// the op that made each step on the branch, in time and output linear in
/// the rows (at most `caps.depth` levels and `caps.width` branches per
/// node are drawn; the rest is counted). Only branches that lead to a
/// variable of the result are drawn, and of those variables the first
/// `limit` in the walk's order. `op_name` names an op id on the branches
/// (the id when it has no name). Stops with [`EngineError::Cancelled`]
/// when `cancel` fires.
pub fn draw(
    rows: &[Vec<Value>],
    limit: Option<u64>,
    caps: TreeCaps,
    op_name: &dyn Fn(&str, &str) -> String,
    cancel: &Cancel,
    out: &mut dyn Write,
) -> Result<(), EngineError> {
    fn text(v: Option<&Value>) -> Option<&str> {
        match v {
            Some(Value::Str(s)) => Some(s.as_str()),
            _ => None,
        }
    }
    // trace -> its rows, in the walk's order.
    let mut traces: BTreeMap<&str, Vec<&Vec<Value>>> = BTreeMap::new();
    for row in rows {
        if let Some(trace) = text(row.first()) {
            traces.entry(trace).or_default().push(row);
        }
    }
    let mut left = limit.unwrap_or(u64::MAX);
    let mut lines = 0usize;
    let mut first = true;
    for (trace, rows) in traces {
        let mut nodes: Vec<Node> = Vec::with_capacity(rows.len() + 1);
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
        // Starts: a variable, by its id, or an op, by "(op ID)".
        let mut roots: BTreeMap<String, usize> = BTreeMap::new();
        for row in &rows {
            if let Some(node) = text(row.get(1)) {
                index.entry(node).or_insert_with(|| {
                    nodes.push(Node {
                        text: node.to_string(),
                        op: String::new(),
                        children: Vec::new(),
                        shown: false,
                    });
                    nodes.len() - 1
                });
            }
        }
        for row in &rows {
            let Some(&me) = text(row.get(1)).and_then(|n| index.get(n)) else {
                continue;
            };
            let op = text(row.get(4)).unwrap_or("");
            let shown = matches!(row.get(5), Some(Value::Bool(true))) && left > 0;
            if shown {
                left -= 1;
            }
            nodes[me].op = op_name(trace, op);
            nodes[me].shown = shown;
            let parent = match text(row.get(3)) {
                Some(p) => match index.get(p) {
                    Some(&i) => i,
                    None => root(&mut roots, &mut nodes, p.to_string()),
                },
                None => root(&mut roots, &mut nodes, format!("(op {op})")),
            };
            nodes[parent].children.push(me);
        }
        // How many drawable variables each subtree holds: those of the
        // result and those on the way to them (children come after their
        // parent in the walk's order, roots last, so one pass from the end
        // sums them).
        let mut kept = vec![0usize; nodes.len()];
        let order = walk_order(&nodes, roots.values().copied());
        for &n in order.iter().rev() {
            let below: usize = nodes[n].children.iter().map(|&c| kept[c]).sum();
            kept[n] = below + usize::from(below > 0 || nodes[n].shown);
        }
        for (name, &r) in &roots {
            if kept[r] == 0 {
                continue;
            }
            if !first {
                writeln!(out).map_err(io_error)?;
            }
            first = false;
            writeln!(out, "{}   (trace {})", visible(name), visible(trace)).map_err(io_error)?;
            draw_below(&nodes, &kept, r, caps, cancel, &mut lines, out)?;
        }
    }
    Ok(())
}

/// The node of start `name`, made when first met.
fn root(roots: &mut BTreeMap<String, usize>, nodes: &mut Vec<Node>, name: String) -> usize {
    *roots.entry(name.clone()).or_insert_with(|| {
        nodes.push(Node {
            text: name,
            op: String::new(),
            children: Vec::new(),
            shown: false,
        });
        nodes.len() - 1
    })
}

/// The nodes below `roots`, each after its parent (a pre-order, without
/// recursion).
fn walk_order(nodes: &[Node], roots: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = roots.collect();
    while let Some(n) = stack.pop() {
        order.push(n);
        stack.extend(nodes[n].children.iter().copied());
    }
    order
}

/// Draws the branches below `root`, depth first, without recursion: the
/// prefix of each line grows by one column of four characters a level.
fn draw_below(
    nodes: &[Node],
    kept: &[usize],
    root: usize,
    caps: TreeCaps,
    cancel: &Cancel,
    lines: &mut usize,
    out: &mut dyn Write,
) -> Result<(), EngineError> {
    // One frame per level: the children to draw and the next one, the
    // variables below that are not drawn (counted on the level's last
    // line), whether the depth cap left them out, and the length of the
    // prefix the level's lines are drawn after.
    struct Frame {
        children: Vec<usize>,
        next: usize,
        more: usize,
        deep: bool,
        at: usize,
    }
    let frame = |n: usize, level: usize, at: usize| -> Frame {
        let children: Vec<usize> = nodes[n]
            .children
            .iter()
            .copied()
            .filter(|&c| kept[c] > 0)
            .collect();
        let deep = level >= caps.depth;
        let drawn = if deep {
            0
        } else {
            children.len().min(caps.width)
        };
        Frame {
            more: children[drawn..].iter().map(|&c| kept[c]).sum(),
            children: children[..drawn].to_vec(),
            next: 0,
            deep,
            at,
        }
    };
    let mut prefix = String::new();
    let mut stack = vec![frame(root, 0, 0)];
    while let Some(top) = stack.last_mut() {
        *lines += 1;
        if (*lines).is_multiple_of(CANCEL_LINES) {
            cancel.check()?;
        }
        prefix.truncate(top.at);
        if top.next == top.children.len() {
            if top.more > 0 {
                let (below, flag) = if top.deep {
                    (" below", "--tree-depth")
                } else {
                    ("", "--tree-width")
                };
                writeln!(out, "{prefix}└── ... {} more{below} ({flag})", top.more)
                    .map_err(io_error)?;
            }
            stack.pop();
            continue;
        }
        let child = top.children[top.next];
        top.next += 1;
        let last = top.next == top.children.len() && top.more == 0;
        let n = &nodes[child];
        writeln!(
            out,
            "{prefix}{}[{}] {}",
            if last { "└── " } else { "├── " },
            visible(&n.op),
            visible(&n.text)
        )
        .map_err(io_error)?;
        prefix.push_str(if last { "    " } else { "│   " });
        let level = stack.len();
        let at = prefix.len();
        stack.push(frame(child, level, at));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step row: the node, the node it was reached from (`None`: an op
    /// start), the op, and whether the result holds it.
    fn step(trace: &str, node: &str, parent: Option<&str>, op: &str, shown: bool) -> Vec<Value> {
        vec![
            Value::from(trace),
            Value::from(node),
            Value::Int(1),
            parent.map_or(Value::Null, Value::from),
            Value::from(op),
            Value::Bool(shown),
        ]
    }

    fn drawn(rows: &[Vec<Value>], limit: Option<u64>, caps: TreeCaps) -> String {
        let mut out = Vec::new();
        let names = |_: &str, op: &str| op.trim_start_matches("op-").to_string();
        draw(rows, limit, caps, &names, &Cancel::new(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn steps_become_one_tree_with_ops_on_the_branches() {
        let rows = vec![
            step("t", "q@1", Some("p@1"), "op-qa", true),
            step("t", "r@1", Some("p@1"), "op-qa", true),
            step("t", "s@1", Some("p@1"), "op-link", true),
            step("t", "m@1", Some("r@1"), "op-ret", true),
            step("t", "msg@1", Some("m@1"), "op-ext", true),
        ];
        assert_eq!(
            drawn(&rows, None, TreeCaps::default()),
            "p@1   (trace t)\n\
             ├── [qa] q@1\n\
             ├── [qa] r@1\n\
             │   └── [ret] m@1\n\
             │       └── [ext] msg@1\n\
             └── [link] s@1\n"
        );
        // Only branches to the result are drawn (a WHERE, a depth range),
        // and of the result the first LIMIT variables.
        let mut some = rows.clone();
        some[0][5] = Value::Bool(false);
        some[3][5] = Value::Bool(false);
        assert_eq!(
            drawn(&some, None, TreeCaps::default()),
            "p@1   (trace t)\n\
             ├── [qa] r@1\n\
             │   └── [ret] m@1\n\
             │       └── [ext] msg@1\n\
             └── [link] s@1\n"
        );
        assert_eq!(
            drawn(&some, Some(2), TreeCaps::default()),
            "p@1   (trace t)\n\
             ├── [qa] r@1\n\
             └── [link] s@1\n"
        );
    }

    #[test]
    fn traces_and_op_starts_get_trees_of_their_own() {
        let rows = vec![
            step("b", "y@1", Some("x@1"), "op-1", true),
            step("a", "z@1", None, "op-9", true),
            step("a", "w@1", Some("z@1"), "op-8", true),
        ];
        let mut out = Vec::new();
        draw(
            &rows,
            None,
            TreeCaps::default(),
            &|_, op| op.to_string(),
            &Cancel::new(),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "(op op-9)   (trace a)\n\
             └── [op-9] z@1\n    \
             └── [op-8] w@1\n\
             \n\
             x@1   (trace b)\n\
             └── [op-1] y@1\n"
        );
        assert_eq!(drawn(&[], None, TreeCaps::default()), "");
    }

    #[test]
    fn depth_and_width_are_capped_and_what_is_left_out_is_counted() {
        // A start with 5 children, the first with a chain of 3 below it.
        let mut rows: Vec<Vec<Value>> = (0..5)
            .map(|i| step("t", &format!("c{i}"), Some("s"), "op-f", true))
            .collect();
        rows.push(step("t", "d1", Some("c0"), "op-g", true));
        rows.push(step("t", "d2", Some("d1"), "op-g", true));
        rows.push(step("t", "d3", Some("d2"), "op-g", true));
        let caps = TreeCaps { depth: 2, width: 3 };
        assert_eq!(
            drawn(&rows, None, caps),
            "s   (trace t)\n\
             ├── [f] c0\n\
             │   └── [g] d1\n\
             │       └── ... 2 more below (--tree-depth)\n\
             ├── [f] c1\n\
             ├── [f] c2\n\
             └── ... 2 more (--tree-width)\n"
        );
    }

    #[test]
    fn a_long_chain_is_drawn_in_lines_of_bounded_length() {
        // 200,000 steps in a row: every level drawn would be 200,000 lines
        // of up to 800,000 columns of prefix.
        let n = 200_000;
        let rows: Vec<Vec<Value>> = (0..n)
            .map(|i| {
                step(
                    "t",
                    &format!("v{}", i + 1),
                    Some(&format!("v{i}")),
                    "op-u",
                    true,
                )
            })
            .collect();
        let text = drawn(&rows, None, TreeCaps::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 32 + 1);
        assert!(lines.iter().all(|l| l.chars().count() < 32 * 4 + 60));
        assert_eq!(
            lines.last().unwrap().trim_start(),
            format!("└── ... {} more below (--tree-depth)", n - 32)
        );
        // With a token that fired, it stops.
        let cancel = Cancel::new();
        cancel.cancel();
        let caps = TreeCaps {
            depth: usize::MAX,
            width: usize::MAX,
        };
        let mut sink = std::io::sink();
        let e = draw(&rows, None, caps, &|_, o| o.to_string(), &cancel, &mut sink);
        assert!(matches!(e, Err(EngineError::Cancelled)), "{e:?}");
    }

    #[test]
    fn control_characters_are_drawn_escaped() {
        let rows = vec![step(
            "t\u{1b}]0;pwned\u{7}",
            "q\u{202e}@1",
            Some("p\0@1"),
            "op-\u{1b}[31m",
            true,
        )];
        let mut out = Vec::new();
        draw(
            &rows,
            None,
            TreeCaps::default(),
            &|_, op| format!("{op}\u{9b}"),
            &Cancel::new(),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "p\\u{0}@1   (trace t\\u{1b}]0;pwned\\u{7})\n\
             └── [op-\\u{1b}[31m\\u{9b}] q\\u{202e}@1\n"
        );
    }
}

/// A drawing format for a result subgraph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drawing {
    /// Graphviz DOT.
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

/// Draws rows of `RETURN subgraph` (trace, element, id, source, target,
/// op_id) as DOT or Mermaid: variables as boxes, edges labelled with their
/// op's name. Traces are drawn side by side (DOT clusters, Mermaid subgraphs).
pub fn subgraph(
    rows: &[Vec<Value>],
    how: Drawing,
    op_name: &dyn Fn(&str, &str) -> String,
) -> String {
    let text = |v: Option<&Value>| match v {
        Some(Value::Str(s)) => s.clone(),
        _ => String::new(),
    };
    // Node numbers per (trace, node id), in the order first met.
    let mut ids: Vec<(String, String)> = Vec::new();
    let mut numbers: HashMap<(String, String), usize> = HashMap::new();
    let mut number = |trace: &str, node: &str, ids: &mut Vec<(String, String)>| -> usize {
        let key = (trace.to_string(), node.to_string());
        *numbers.entry(key.clone()).or_insert_with(|| {
            ids.push(key);
            ids.len() - 1
        })
    };
    let mut edges: Vec<(String, usize, usize, String)> = Vec::new();
    for row in rows {
        let trace = text(row.first());
        match text(row.get(1)).as_str() {
            "node" => {
                number(&trace, &text(row.get(2)), &mut ids);
            }
            "edge" => {
                let s = number(&trace, &text(row.get(3)), &mut ids);
                let t = number(&trace, &text(row.get(4)), &mut ids);
                edges.push((trace.clone(), s, t, op_name(&trace, &text(row.get(5)))));
            }
            _ => {}
        }
    }
    let mut traces: Vec<&str> = Vec::new();
    for (t, _) in &ids {
        if traces.last() != Some(&t.as_str()) && !traces.contains(&t.as_str()) {
            traces.push(t);
        }
    }
    // Each trace's nodes, in number order.
    let mut of_trace: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (t, _)) in ids.iter().enumerate() {
        of_trace.entry(t.as_str()).or_default().push(i);
    }
    let mut out = String::new();
    match how {
        Drawing::Dot => {
            out.push_str("digraph provenance {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
            for (k, trace) in traces.iter().enumerate() {
                out.push_str(&format!(
                    "  subgraph cluster_{k} {{\n    label=\"{}\";\n",
                    dot_escape(trace)
                ));
                for &i in of_trace.get(trace).map_or(&[][..], Vec::as_slice) {
                    let node = &ids[i].1;
                    out.push_str(&format!("    n{i} [label=\"{}\"];\n", dot_escape(node)));
                }
                out.push_str("  }\n");
            }
            for (_, s, t, op) in &edges {
                out.push_str(&format!("  n{s} -> n{t} [label=\"{}\"];\n", dot_escape(op)));
            }
            out.push_str("}\n");
        }
        Drawing::Mermaid => {
            out.push_str("flowchart LR\n");
            for (k, trace) in traces.iter().enumerate() {
                out.push_str(&format!("  subgraph t{k}[\"{}\"]\n", mermaid_escape(trace)));
                for &i in of_trace.get(trace).map_or(&[][..], Vec::as_slice) {
                    let node = &ids[i].1;
                    out.push_str(&format!("    n{i}[\"{}\"]\n", mermaid_escape(node)));
                }
                out.push_str("  end\n");
            }
            for (_, s, t, op) in &edges {
                out.push_str(&format!("  n{s} -->|\"{}\"| n{t}\n", mermaid_escape(op)));
            }
        }
    }
    out
}

#[cfg(test)]
mod drawing_tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<Value> {
        cells
            .iter()
            .map(|c| {
                if c.is_empty() {
                    Value::Null
                } else {
                    Value::from(*c)
                }
            })
            .collect()
    }

    fn rows() -> Vec<Vec<Value>> {
        vec![
            row(&["t", "node", "p@1", "", "", ""]),
            row(&["t", "node", "q \"x\"@1", "", "", ""]),
            row(&["t", "edge", "e1", "q \"x\"@1", "p@1", "op-1"]),
        ]
    }

    #[test]
    fn dot_draws_nodes_in_a_cluster_and_labels_edges_with_op_names() {
        let d = subgraph(&rows(), Drawing::Dot, &|_, _| "rag.answer".into());
        assert_eq!(
            d,
            "digraph provenance {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n  \
             subgraph cluster_0 {\n    label=\"t\";\n    n0 [label=\"p@1\"];\n    n1 [label=\"q \\\"x\\\"@1\"];\n  }\n  \
             n1 -> n0 [label=\"rag.answer\"];\n}\n"
        );
    }

    #[test]
    fn mermaid_escapes_quotes() {
        let m = subgraph(&rows(), Drawing::Mermaid, &|_, op| op.to_string());
        assert_eq!(
            m,
            "flowchart LR\n  subgraph t0[\"t\"]\n    n0[\"p@1\"]\n    n1[\"q #quot;x#quot;@1\"]\n  end\n  n1 -->|\"op-1\"| n0\n"
        );
    }
}
