#!/usr/bin/env python3
"""Writes the expected sets of the parity test (tests/parity.rs) with smartcomment itself.

For each fixture trace given on the command line (a smartcomment export or a
MemTraceBench file), this loads it with smartcomment's own importer
(`ExecNetwork.import_graph`) and, for every variable version of the trace, records

- `ancestors`:   smartcomment's `get_ancestors(id)`        (what `TRACE id RETURN nodes` must give)
- `ancestors_depth[n]`: `get_ancestors(id, max_depth=n)`    (`TRACE id DEPTH n RETURN nodes`)
- `descendants`: `get_descendants(id)`                     (`FORWARD id RETURN nodes`)
- `descendants_depth[n]`: `get_descendants(id, max_depth=n)` (`FORWARD id DEPTH n RETURN nodes`)

for n in 1, 2, 3, as sorted lists of full node ids, into
`tests/fixtures/parity/<stem>.expected.json` (sorted keys, indent 1).
Every variable is a key, with an empty list when nothing is reachable.

The expected files are committed; rerun this only when a fixture changes or is
added. From the repository root, with a virtual environment outside the project:

    PYENV_VERSION=3.12.1 python -m venv /tmp/scvenv
    /tmp/scvenv/bin/pip install smartcomment==0.1.2
    /tmp/scvenv/bin/python scripts/parity_fixtures.py \
        tests/fixtures/sample_export.json tests/fixtures/parity/cycles.json \
        tests/fixtures/parity/gen_long_context.json tests/fixtures/parity/gen_rag.json \
        tests/fixtures/parity/gen_mem0.json tests/fixtures/parity/gen_evermemos.json

The generated fixtures were written by the release binary (see tests/fixtures/parity/README.md).
Then run `cargo test --test parity`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

from smartcomment.runtime import ExecNetwork

SMARTCOMMENT_VERSION = "0.1.2"
DEPTHS = (1, 2, 3)
REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "fixtures" / "parity"

# Keys of the export object that smartcomment's ExecNetwork model knows; a
# MemTraceBench file adds `data.annotations`, which is not part of the graph.
GRAPH_DATA_KEYS = ("nodes", "edges", "operations", "sessions")


def export_part(doc: dict) -> dict:
    """The smartcomment export inside a fixture: `data` reduced to the graph records."""
    out = dict(doc)
    data = doc.get("data", {})
    out["data"] = {k: data[k] for k in GRAPH_DATA_KEYS if k in data}
    return out


def full_node_id(node: dict) -> str:
    """`class_name:name@version`, or `name@version` without a class name (as smartcomment computes it)."""
    cls = node.get("class_name")
    full_name = f"{cls}:{node['name']}" if cls else node["name"]
    return f"{full_name}@{node['version']}"


def ids(variables) -> list[str]:
    return sorted(v.full_node_id for v in variables)


def expected_sets(path: Path) -> dict:
    doc = json.loads(path.read_text(encoding="utf-8"))
    graph = ExecNetwork.import_graph(export_part(doc))

    variables = sorted(v.full_node_id for v in graph.search_variables())
    in_file = sorted(full_node_id(n) for n in doc["data"]["nodes"])
    if variables != in_file or len(set(variables)) != len(variables):
        sys.exit(f"{path}: smartcomment holds {len(variables)} variables, the file {len(in_file)}")

    result = {
        "ancestors": {},
        "ancestors_depth": {str(n): {} for n in DEPTHS},
        "descendants": {},
        "descendants_depth": {str(n): {} for n in DEPTHS},
    }
    for vid in variables:
        result["ancestors"][vid] = ids(graph.get_ancestors(vid))
        result["descendants"][vid] = ids(graph.get_descendants(vid))
        for n in DEPTHS:
            result["ancestors_depth"][str(n)][vid] = ids(graph.get_ancestors(vid, max_depth=n))
            result["descendants_depth"][str(n)][vid] = ids(graph.get_descendants(vid, max_depth=n))
    try:
        fixture = path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        sys.exit(f"{path}: fixtures must lie inside the repository ({REPO})")
    return {
        "fixture": fixture,
        "graph_id": graph.graph_id,
        "smartcomment": SMARTCOMMENT_VERSION,
        "variables": len(variables),
        **result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fixtures", nargs="+", type=Path, help="export or MemTraceBench JSON files")
    args = parser.parse_args()

    installed = importlib.metadata.version("smartcomment")
    if installed != SMARTCOMMENT_VERSION:
        sys.exit(f"smartcomment {installed} is installed; the expected sets are those of {SMARTCOMMENT_VERSION}")

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for path in args.fixtures:
        expected = expected_sets(path)
        stem = path.name.removesuffix(".json")
        out = OUT_DIR / f"{stem}.expected.json"
        with out.open("w", encoding="utf-8") as f:
            json.dump(expected, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        print(f"{out.relative_to(REPO)}: {expected['graph_id']}, {expected['variables']} variables")


if __name__ == "__main__":
    main()
