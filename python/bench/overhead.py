"""What a query costs through Python beside the same query run in Rust, in one process.

    python python/bench/overhead.py [--repeats 300] [--traces DIR]

Imports the bundled sample and the four MemTraceBench fixtures into a temporary database,
then runs each query `repeats` times through `Database.query` (Python: arguments in, a
worker thread, rows converted to dicts, a QueryResult) and `repeats` times in Rust on the
same open database without the GIL (`_time_in_rust`: the engine's query call only), after
warm-up runs of both. Prints the medians and the difference, as a Markdown table.
Use a release build of the package (`pip install ./python`).
"""

import argparse
import pathlib
import statistics
import tempfile
import time

import memtrace

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

QUERIES = [
    ("SHOW TRACES (5 rows)", "SHOW TRACES"),
    (
        "TRACE of one answer, RETURN count",
        "TRACE 'str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1' "
        "IN TRACE 'graph-e02a1f3b041740d5b82569831ef2d06e' RETURN count",
    ),
    (
        "TRACE of one answer, RETURN nodes",
        "TRACE 'str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1' "
        "IN TRACE 'graph-e02a1f3b041740d5b82569831ef2d06e' RETURN nodes",
    ),
    ("FIND cases, 4 columns (all traces)", "FIND cases RETURN case.query_id, case.query, case.prediction, case.origin"),
    ("FIND vars, 2 columns (all traces)", "FIND vars RETURN var.full_node_id, var.category"),
]


def median_us(xs):
    return statistics.median(xs) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with memtrace.open(pathlib.Path(tmp) / "bench.db") as db:
            db.import_path(FIXTURES / "sample_export.json")
            db.import_path(FIXTURES / "devsplit")
            print(f"memtrace {memtrace.__version__}, {len(db.traces())} traces, "
                  f"{db.stats()['variables']} variables, {args.repeats} runs each, medians\n")
            print("| query | rows | Rust | Python | overhead | ratio |")
            print("|---|---:|---:|---:|---:|---:|")
            for name, text in QUERIES:
                rows = len(db.query(text))
                for _ in range(10):
                    db.query(text)
                rust = db._db._time_in_rust(text, args.repeats)
                py = []
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    db.query(text)
                    py.append(time.perf_counter() - t)
                r, p = median_us(rust), median_us(py)
                print(f"| {name} | {rows} | {r:,.0f} us | {p:,.0f} us | {p - r:,.0f} us | {p / r:.2f}x |")


if __name__ == "__main__":
    main()
