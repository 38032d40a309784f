"""The Parquet export read back by pyarrow and DuckDB: the tables hold the database's own
counts, the Hive partitions read as columns, and the book's failure-pattern query runs."""

import pathlib

import pytest

import memtrace

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEVSPLIT = ROOT / "tests" / "fixtures" / "devsplit"
TABLES = ["traces", "sessions", "nodes", "edges", "ops", "cases", "verdicts"]


def book_query():
    """The DuckDB failure-pattern query of the book's page on the Parquet export, and the
    rows the page shows it printing, as written there."""
    text = (ROOT / "docs" / "src" / "parquet.md").read_text()
    section = text[text.index("## A failure pattern in DuckDB") :]
    start = section.index("```sql\n") + len("```sql\n")
    end = section.index("```", start)
    query = section[start:end]
    shown_at = section.index("```text\n", end)
    shown = section[shown_at : section.index("```", shown_at + 3)]
    body = shown[shown.index("├") :].splitlines()[1:]
    rows = [
        tuple(cell.strip() for cell in line.strip("│").split("│"))
        for line in body
        if line.startswith("│")
    ]
    return query, rows


@pytest.fixture
def exported(tmp_path):
    """The devsplit traces with evidence verdicts stored, exported by trace."""
    with memtrace.open(tmp_path / "t.db") as db:
        db.import_path(DEVSPLIT)
        db.attribute("evidence")
        summary = db.export_parquet(tmp_path / "out", partition="trace")
        yield db, tmp_path / "out", summary


def expected(db):
    stats = db.stats()
    return {
        "traces": stats["traces"],
        "sessions": stats["sessions"],
        "nodes": stats["variables"],
        "edges": stats["edges"],
        "ops": stats["ops"],
        "cases": len(db.query("FIND cases")),
        "verdicts": len(db.attributions()),
    }


def test_pyarrow_reads_every_table_with_the_databases_counts(exported):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
    db, out, summary = exported
    want = expected(db)
    assert want["traces"] == 4 and want["cases"] > 0 and want["verdicts"] > 0
    assert summary["rows"] == want
    for table in TABLES:
        t = pq.read_table(out / table)
        assert t.num_rows == want[table], table
        # The Hive folders come back as the trace column.
        assert "trace" in t.column_names
    nodes = pq.read_table(out / "nodes")
    per_trace = {}
    for trace in nodes.column("trace").to_pylist():
        per_trace[int(trace)] = per_trace.get(int(trace), 0) + 1
    assert per_trace == {t["id"]: t["counts"]["variables"] for t in db.traces()}


def test_duckdb_reads_the_partitions_and_runs_the_book_query(exported, monkeypatch):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed")
    db, out, _ = exported
    want = expected(db)
    con = duckdb.connect()
    for table in TABLES:
        glob = str(out / table / "**" / "*.parquet")
        (n,) = con.execute(
            "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)", [glob]
        ).fetchone()
        assert n == want[table], table
    # Cases per trace, as the database counts them.
    rows = con.execute(
        "SELECT trace, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY trace",
        [str(out / "cases" / "**" / "*.parquet")],
    ).fetchall()
    mine = {}
    for c in db.cases():
        mine[c["trace"]] = mine.get(c["trace"], 0) + 1
    assert {int(t): n for t, n in rows} == mine

    # The book's query, run from the folder that holds out/.
    query, shown = book_query()
    assert "read_parquet('out/" in query
    monkeypatch.chdir(out.parent)
    result = con.execute(query).fetchall()
    assert result, "the failure-pattern query found nothing"
    # The book shows what it prints on these very traces.
    assert [tuple(str(x) for x in r) for r in result] == shown
    # Its counts are verdicts of failed cases: they add up to at most the decided verdicts.
    decided = [v for v in db.attributions() if v["verdict"]["error_type"]]
    assert sum(r[-1] for r in result) <= len(decided)
    projects = {t["project_id"] for t in db.traces()}
    assert {r[0] for r in result} <= projects


def test_bad_requests_raise_and_write_nothing(tmp_path):
    with memtrace.open(tmp_path / "t.db") as db:
        db.import_path(DEVSPLIT / "mem0-locomo_1.json")
        with pytest.raises(memtrace.NotFoundError, match="no trace nope"):
            db.export_parquet(tmp_path / "a", traces=["nope"])
        with pytest.raises(memtrace.NotFoundError, match="project_id Nope"):
            db.export_parquet(tmp_path / "a", projects=["Nope"])
        with pytest.raises(ValueError, match="unknown partition"):
            db.export_parquet(tmp_path / "a", partition="day")
        assert not (tmp_path / "a").exists()
        mine = tmp_path / "mine"
        mine.mkdir()
        (mine / "notes.txt").write_text("keep")
        with pytest.raises(FileExistsError, match="not empty"):
            db.export_parquet(mine)
        with pytest.raises(FileExistsError, match="no earlier Parquet export"):
            db.export_parquet(mine, force=True)
        assert [p.name for p in mine.iterdir()] == ["notes.txt"]
        first = db.export_parquet(tmp_path / "b", partition="project")
        assert first["partition"] == "project"
        assert (tmp_path / "b" / "traces" / "project_id=Mem0" / "part-0.parquet").is_file()
        again = db.export_parquet(tmp_path / "b", force=True)
        assert again["partition"] == "none"
        assert not (tmp_path / "b" / "traces" / "project_id=Mem0").exists()
