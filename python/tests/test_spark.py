"""memtrace on PySpark in local mode (local[2]): the verdicts and pattern hits of a generated
set equal what the memtrace CLI gives on the same traces, row for row; a malformed file gives
an error row naming it while the other traces of its partition get their verdicts; and the
book's Spark job (docs/src/spark.md) runs as written."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
BAD = FIXTURES / "malformed" / "truncated.json"

if os.environ.get("MEMTRACE_SPARK_TESTS") == "1":
    # scripts/python-tests.sh installs Java and PySpark: there, missing ones fail the run.
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
else:
    pytest.importorskip("pyarrow", reason="the Spark tests need pyarrow")
    pytest.importorskip("pyspark", reason="the Spark tests need pyspark (and Java 17+)")

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import memtrace.spark as ms  # noqa: E402


def cli():
    """The memtrace binary that `cargo test` built (MEMTRACE_BIN names another)."""
    path = pathlib.Path(os.environ.get("MEMTRACE_BIN", ROOT / "target" / "debug" / "memtrace"))
    if not path.exists():
        pytest.fail(f"no memtrace binary at {path}: build it with cargo build -p memtrace-repl")
    return str(path)


def run(*args):
    done = subprocess.run([cli(), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated set of 16 small traces of the four systems, a folder with one malformed
    file, and the CLI's verdicts, pattern hits, cases and op kinds over the set."""
    base = tmp_path_factory.mktemp("spark")
    traces = base / "traces"
    run("gen", "--system", "all", "--traces", "16", "--seed", "59", "--sessions", "3..4",
        "--messages", "6..8", "--questions", "24", "--out", str(traces))
    bad = base / "bad"
    bad.mkdir()
    shutil.copy(BAD, bad / "truncated.json")
    db = str(base / "cli.db")
    run("--db", db, "import", str(traces))
    verdicts = json.loads(run("--db", db, "attribute", "--format", "json"))
    patterns = json.loads(
        run("--db", db, "patterns", "--builtin", "--examples", "1000000", "--format", "json")
    )
    cases = json.loads(
        run("--db", db, "query", "FIND cases RETURN trace, case, prediction", "--format", "json")
    )
    ops = json.loads(
        run("--db", db, "query", "FIND ops RETURN trace, op.id, op.kind", "--format", "json")
    )
    return {
        "base": base,
        "traces": traces,
        "bad": bad,
        "verdicts": verdicts,
        "patterns": patterns,
        "cases": cases,
        "ops": ops,
    }


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("memtrace-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.showConsoleProgress", "false")
        # Small partitions, so that the set spreads over several tasks.
        .config("spark.sql.files.maxPartitionBytes", str(256 * 1024))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def rows_of(query_result):
    """The rows of `memtrace query --format json` (columns and rows of values) as dicts."""
    return [dict(zip(query_result["columns"], row)) for row in query_result["rows"]]


def by_trace(rows, key):
    out = defaultdict(list)
    for r in rows:
        out[r[key]].append(r)
    return dict(out)


def test_verdicts_equal_the_cli_row_for_row_with_an_error_row_for_the_bad_file(spark, generated):
    # Four partitions of about four files each: the bad file is read with good ones.
    traces = ms.read_traces(spark, [str(generated["traces"]), str(generated["bad"])]).coalesce(4)
    assert traces.columns == ["path", "content"]
    with_part = traces.select("path", F.spark_partition_id().alias("part")).collect()
    parts = {r["path"]: r["part"] for r in with_part}
    assert len(parts) == 17 and len(set(parts.values())) >= 2, parts
    bad_path = next(p for p in parts if p.endswith("/bad/truncated.json"))
    neighbours = [p for p, n in parts.items() if n == parts[bad_path] and p != bad_path]
    assert neighbours, "the malformed file shares its partition with good traces"

    got = traces.mapInArrow(ms.attribute("evidence"), ms.VERDICTS).collect()
    errors = [r for r in got if r["error"] is not None]
    assert [r["source"] for r in errors] == [bad_path]
    assert "truncated.json" in errors[0]["error"]
    good = [r.asDict() for r in got if r["error"] is None]

    want = generated["verdicts"]
    assert len(good) == len(want) > 16
    fields = [("graph_id", "graph_id"), ("case_id", "case"), ("query", "query"),
              ("error_type", "error_type"), ("op_id", "op_id"), ("op_name", "op_name"),
              ("confidence", "confidence"), ("reason", "reason"), ("method", "method"),
              ("setting", "setting"), ("version", "version")]
    mine = {g: [tuple(r[a] for a, _ in fields) for r in rs] for g, rs in by_trace(good, "graph_id").items()}
    theirs = {g: [tuple(r.get(b) for _, b in fields) for r in rs] for g, rs in by_trace(want, "graph_id").items()}
    assert mine == theirs
    # The traces of the bad file's partition got theirs too.
    sources = {r["source"] for r in good}
    assert set(neighbours) & sources

    # Each verdict's prediction is its case's, and its op kind its op's, as the CLI lists them.
    predictions = {(r["trace"], r["case"]): r["prediction"] for r in rows_of(generated["cases"])}
    kinds = {(r["trace"], r["op.id"]): r["op.kind"] for r in rows_of(generated["ops"])}
    for r in good:
        assert r["prediction"] == predictions[(r["graph_id"], r["case_id"])]
        if r["op_id"] is not None:
            assert r["op_kind"] == kinds[(r["graph_id"], r["op_id"])]


def test_pattern_hits_equal_the_cli_row_for_row(spark, generated):
    traces = ms.read_traces(spark, str(generated["traces"]))
    got = traces.mapInArrow(ms.patterns(), ms.PATTERN_HITS).collect()
    assert all(r["error"] is None for r in got)
    mine = defaultdict(list)
    for r in got:
        mine[(r["graph_id"], r["pattern"])].append((r["hit"], json.loads(r["row"])))
    theirs = defaultdict(list)
    for p in generated["patterns"]["patterns"]:
        for ex in p["examples"]:
            theirs[(ex["trace"], p["name"])].append(ex["row"])
    assert sum(len(v) for v in theirs.values()) > 0
    assert {k: [row for _, row in v] for k, v in mine.items()} == dict(theirs)
    assert all([h for h, _ in v] == list(range(len(v))) for v in mine.values())


def test_cases_and_stats_cover_every_trace(spark, generated):
    traces = ms.read_traces(spark, [str(generated["traces"]), str(generated["bad"])])
    stats = traces.mapInArrow(ms.stats(), ms.STATS).collect()
    assert len(stats) == 17
    assert sum(1 for r in stats if r["error"]) == 1
    cases = traces.mapInArrow(ms.cases(), ms.CASES).where("error IS NULL").count()
    assert cases == len(rows_of(generated["cases"])) == sum(r["failed_cases"] or 0 for r in stats)


def book_job():
    """The Spark job of the book's page on Spark, as written there."""
    text = (ROOT / "docs" / "src" / "spark.md").read_text()
    section = text[text.index("## The job") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_the_book_spark_job_runs_and_its_tables_hold_the_clis_verdicts(spark, generated, tmp_path):
    # Spark reads relative paths from the JVM's folder, which a test cannot change: the job's
    # two folders are made absolute, and nothing else of it is changed.
    job = book_job()
    assert '"traces/"' in job and '"out/' in job
    job = job.replace('"traces/"', f'"{generated["traces"]}/"').replace('"out/', f'"{tmp_path}/out/')
    exec(compile(job, "docs/src/spark.md", "exec"), {"__name__": "book"})
    verdicts = spark.read.parquet(str(tmp_path / "out" / "verdicts"))
    assert verdicts.where("error IS NULL").count() == len(generated["verdicts"])
    per = verdicts.where("error_type IS NOT NULL").groupBy("project_id", "error_type").count().collect()
    want = defaultdict(int)
    for v in generated["verdicts"]:
        if v["error_type"] is not None:
            want[(v["system"], v["error_type"])] += 1
    assert {(r["project_id"], r["error_type"]): r["count"] for r in per} == dict(want)
    hits = spark.read.parquet(str(tmp_path / "out" / "pattern_hits")).count()
    assert hits == sum(p["hits"] for p in generated["patterns"]["patterns"])
