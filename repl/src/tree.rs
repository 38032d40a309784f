//! `--format tree`: a TRACE or FORWARD result drawn as its provenance tree,
//! with the op that made each step on the branch (as `cargo tree` draws
//! dependencies). Ids and op names are drawn with their control characters
//! shown escaped (`memtrace_table::visible`).

use std::collections::BTreeMap;

use memtrace::{dot_escape, mermaid_escape, Value};
use memtrace_table::visible;

/// One node of the drawn tree: its children in the order first met.
#[derive(Debug, Default)]
struct Branch {
    children: Vec<(String, String, Branch)>,
}

impl Branch {
    /// Adds a path of (op, node) steps below this node.
    fn insert(&mut self, steps: &[(String, String)]) {
        let Some(((op, node), rest)) = steps.split_first() else {
            return;
        };
        let i = match self
            .children
            .iter()
            .position(|(o, n, _)| o == op && n == node)
        {
            Some(i) => i,
            None => {
                self.children
                    .push((op.clone(), node.clone(), Branch::default()));
                self.children.len() - 1
            }
        };
        self.children[i].2.insert(rest);
    }

    fn draw(&self, prefix: &str, out: &mut String) {
        for (i, (op, node, child)) in self.children.iter().enumerate() {
            let last = i + 1 == self.children.len();
            out.push_str(prefix);
            out.push_str(if last { "└── " } else { "├── " });
            out.push_str(&format!("[{}] {}\n", visible(op), visible(node)));
            let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
            child.draw(&deeper, out);
        }
    }
}

/// Draws rows of `RETURN paths` (trace, node, depth, path) as one tree per
/// trace and start. `op_name` names an op id on the branches (the id when
/// it has no name).
pub fn draw(rows: &[Vec<Value>], op_name: &dyn Fn(&str, &str) -> String) -> String {
    // trace -> start -> tree
    let mut trees: BTreeMap<String, BTreeMap<String, Branch>> = BTreeMap::new();
    for row in rows {
        let (Some(Value::Str(trace)), Some(Value::List(path))) = (row.first(), row.get(3)) else {
            continue;
        };
        let items: Vec<String> = path.iter().map(|v| v.to_string()).collect();
        let Some((start, rest)) = items.split_first() else {
            continue;
        };
        // An op start: the path is [op, node, op, node, ...] from its first step.
        let (root, rest) = if rest.len() % 2 == 1 {
            (format!("(op {start})"), {
                let mut r = vec![start.clone()];
                r.extend(rest.iter().cloned());
                r
            })
        } else {
            (start.clone(), rest.to_vec())
        };
        let steps: Vec<(String, String)> = rest
            .chunks(2)
            .filter_map(|c| match c {
                [op, node] => Some((op_name(trace, op), node.clone())),
                _ => None,
            })
            .collect();
        trees
            .entry(trace.clone())
            .or_default()
            .entry(root)
            .or_default()
            .insert(&steps);
    }
    let mut out = String::new();
    for (trace, starts) in &trees {
        for (start, tree) in starts {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!(
                "{}   (trace {})\n",
                visible(start),
                visible(trace)
            ));
            tree.draw("", &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: &str, path: &[&str]) -> Vec<Value> {
        vec![
            Value::from(trace),
            Value::from(*path.last().unwrap()),
            Value::Int((path.len() / 2) as i64),
            Value::List(path.iter().map(|s| Value::from(*s)).collect()),
        ]
    }

    #[test]
    fn paths_become_one_tree_with_ops_on_the_branches() {
        let rows = vec![
            row("t", &["p@1", "op-qa", "q@1"]),
            row("t", &["p@1", "op-qa", "r@1"]),
            row("t", &["p@1", "op-qa", "r@1", "op-ret", "m@1"]),
            row(
                "t",
                &["p@1", "op-qa", "r@1", "op-ret", "m@1", "op-ext", "msg@1"],
            ),
            row("t", &["p@1", "op-link", "s@1"]),
        ];
        let names = |_: &str, op: &str| op.trim_start_matches("op-").to_string();
        let drawn = draw(&rows, &names);
        assert_eq!(
            drawn,
            "p@1   (trace t)\n\
             ├── [qa] q@1\n\
             ├── [qa] r@1\n\
             │   └── [ret] m@1\n\
             │       └── [ext] msg@1\n\
             └── [link] s@1\n"
        );
    }

    #[test]
    fn traces_and_op_starts_get_trees_of_their_own() {
        let rows = vec![
            row("b", &["x@1", "op-1", "y@1"]),
            row("a", &["op-9", "z@1"]),
            row("a", &["op-9", "z@1", "op-8", "w@1"]),
        ];
        let drawn = draw(&rows, &|_, op| op.to_string());
        assert_eq!(
            drawn,
            "(op op-9)   (trace a)\n\
             └── [op-9] z@1\n    \
             └── [op-8] w@1\n\
             \n\
             x@1   (trace b)\n\
             └── [op-1] y@1\n"
        );
        assert_eq!(draw(&[], &|_, op| op.to_string()), "");
    }

    #[test]
    fn control_characters_are_drawn_escaped() {
        let rows = vec![row(
            "t\u{1b}]0;pwned\u{7}",
            &["p\0@1", "op-\u{1b}[31m", "q\u{202e}@1"],
        )];
        let drawn = draw(&rows, &|_, op| format!("{op}\u{9b}"));
        assert_eq!(
            drawn,
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
    let number = |trace: &str, node: &str, ids: &mut Vec<(String, String)>| -> usize {
        match ids.iter().position(|(t, n)| t == trace && n == node) {
            Some(i) => i,
            None => {
                ids.push((trace.to_string(), node.to_string()));
                ids.len() - 1
            }
        }
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
        if !traces.contains(&t.as_str()) {
            traces.push(t);
        }
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
                for (i, (t, node)) in ids.iter().enumerate() {
                    if t == trace {
                        out.push_str(&format!("    n{i} [label=\"{}\"];\n", dot_escape(node)));
                    }
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
                for (i, (t, node)) in ids.iter().enumerate() {
                    if t == trace {
                        out.push_str(&format!("    n{i}[\"{}\"]\n", mermaid_escape(node)));
                    }
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
