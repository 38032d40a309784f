"""The partition functions (memtrace.partition) on Arrow batches, without Spark: their rows
equal the Database's own analyses of the same traces, a malformed row gives an error row, the
same batch gives the same rows, and the work runs without the GIL."""

import json
import pathlib
import threading
import time

import pytest

import memtrace

pa = pytest.importorskip("pyarrow", reason="the partition functions need pyarrow")
import memtrace.partition as mp  # noqa: E402
import memtrace.spark as ms  # noqa: E402  (no pyspark needed for its schemas)

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures"
GOOD = [
    "devsplit/rag-locomo_1.json",
    "sample_export.json",
    "otlp/rag_session.json",
]
BAD = "malformed/truncated.json"


def files_batch(files, binary=True):
    """A batch as Spark's binaryFile source gives it: path and content."""
    contents = [(FIXTURES / f).read_bytes() for f in files]
    if not binary:
        contents = [c.decode("utf-8") for c in contents]
    return pa.record_batch(
        {
            "path": pa.array(files, pa.string()),
            "content": pa.array(contents, pa.binary() if binary else pa.large_string()),
            "length": pa.array([len(c) for c in contents], pa.int64()),
        }
    )


@pytest.fixture
def reference(tmp_path):
    """The good files imported into a database the ordinary way."""
    with memtrace.open(tmp_path / "ref.db") as db:
        for f in GOOD:
            db.import_path(FIXTURES / f)
        yield db


def rows(batches):
    out = []
    for b in batches:
        out.extend(b.to_pylist())
    return out


def test_schemas_name_their_columns_and_spark_ddl_follows_them():
    for table in mp.TABLES:
        s = mp.schema(table)
        assert s.names[:3] == ["source", "graph_id", "project_id"]
        assert s.names[-1] == "error"
        ddl = ms.schema(table)
        assert ddl.startswith("`source` STRING NOT NULL, `graph_id` STRING, ")
        assert ddl.count("`") == 2 * len(s.names)
    assert "`confidence` DOUBLE" in ms.VERDICTS
    assert "`golden_answers` ARRAY<STRING>" in ms.CASES
    assert "`hit` BIGINT" in ms.PATTERN_HITS
    with pytest.raises(ValueError, match="no result table verdict"):
        mp.schema("verdict")


def test_verdicts_equal_the_databases_attribution_with_an_error_row_for_the_bad_file(reference):
    files = GOOD[:1] + [BAD] + GOOD[1:]
    out = list(mp.attribute([files_batch(files)]))
    assert len(out) == 1 and out[0].schema == mp.schema("verdicts")
    got = rows(out)
    errors = [r for r in got if r["error"] is not None]
    assert [(r["source"], r["graph_id"], r["case_id"]) for r in errors] == [(BAD, None, None)]
    assert BAD in errors[0]["error"]
    # The error row stands where the bad file's row stood.
    at = got.index(errors[0])
    assert {r["source"] for r in got[:at]} == {GOOD[0]}
    want = reference.attribute("evidence", store=False)
    good = [r for r in got if r["error"] is None]
    assert len(good) == len(want) > 10
    cases = reference.cases()
    for g, w, c in zip(good, want, cases):
        assert (g["graph_id"], g["case_id"], g["query"]) == (w["graph_id"], w["case"], w["query"])
        assert (g["error_type"], g["op_id"], g["op_name"]) == (w["error_type"], w["op_id"], w["op_name"])
        assert (g["confidence"], g["reason"], g["method"]) == (w["confidence"], w["reason"], w["method"])
        assert g["setting"] == w.get("setting")
        assert g["prediction"] == c["prediction"]
        if g["op_id"] is not None:
            kinds = reference.query(
                "FIND ops IN TRACE $t WHERE op.id = $op RETURN op.kind",
                {"t": g["graph_id"], "op": g["op_id"]},
            )
            assert g["op_kind"] == kinds[0]["op.kind"]


def test_text_and_binary_content_and_several_batches_give_the_same_rows():
    binary = rows(mp.stats([files_batch(GOOD)]))
    text = rows(mp.stats(pa.Table.from_batches([files_batch(GOOD[:1], False), files_batch(GOOD[1:], False)])))
    assert binary == text
    # The OTLP request holds two traces: each gets its row.
    assert [r["format"] for r in binary] == ["memtracebench", "smartcomment", "otlp", "otlp"]
    # Without a path column, rows are named by their place in the batch.
    unnamed = files_batch(GOOD).select(["content"])
    assert [r["source"] for r in rows(mp.stats([unnamed]))] == ["row 0", "row 1", "row 2", "row 2"]
    with pytest.raises(ValueError, match="no content column trace"):
        list(mp.stats([unnamed], content="trace"))


def test_the_same_batch_gives_the_same_rows_every_time():
    batch = files_batch(GOOD[:2])
    assert rows(mp.attribute([batch])) == rows(mp.attribute([batch]))
    assert rows(mp.patterns([batch])) == rows(mp.patterns([batch]))


def test_settings_change_what_the_method_sees(reference):
    got = rows(mp.attribute([files_batch(GOOD[:1])], setting="production"))
    assert {r["setting"] for r in got} == {"production"}
    want = reference.attribute("evidence", store=False, setting="production")
    want = [w for w in want if w["graph_id"] == got[0]["graph_id"]]
    assert [(g["case_id"], g["error_type"], g["op_id"]) for g in got] == [
        (w["case"], w["error_type"], w["op_id"]) for w in want
    ]
    with pytest.raises(ValueError, match="setting"):
        list(mp.attribute([files_batch(GOOD[:1])], setting="lab"))


def test_pattern_hits_equal_run_pattern_and_take_statements_and_params(reference):
    got = rows(mp.patterns([files_batch(GOOD)], ["noop_update", "empty_retrieval"]))
    for name in ["noop_update", "empty_retrieval"]:
        want = reference.run_pattern(name)
        mine = [r for r in got if r["pattern"] == name]
        assert len(mine) == len(want)
        for g, w in zip(mine, want):
            assert g["graph_id"] == w["trace"]
            row = json.loads(g["row"])
            assert row == {k: v for k, v in w.items() if k != "trace"}
    big = "FIND vars WHERE var.version > $v RETURN var.full_name, var.version"
    hits = rows(mp.patterns([files_batch(GOOD)], statements={"big": (big, {"v": 1})}, params={"v": 2}))
    reference.save_pattern("big", big, {"v": 2})
    assert len(hits) == len(reference.run_pattern("big")) > 0
    assert all(json.loads(h["row"])["var.version"] > 2 for h in hits)
    with pytest.raises(ValueError, match="no built-in pattern mine"):
        mp.check_patterns(["mine"])
    with pytest.raises(ValueError, match="takes \\$nope"):
        mp.check_patterns(["noop_update"], params={"nope": 1})
    with pytest.raises(memtrace.QueryError):
        mp.check_patterns(statements={"bad": "FIND vars WHERE"})


def test_cases_list_the_failed_cases_with_their_labels(reference):
    got = rows(mp.cases([files_batch(GOOD)]))
    want = reference.cases()
    assert [(r["graph_id"], r["case_id"], r["prediction"]) for r in got] == [
        (c["graph_id"], c["id"], c["prediction"]) for c in want
    ]
    assert any(r["final_error_type"] for r in got)


def test_the_scratch_folder_is_used_and_left_empty(tmp_path):
    seen = []

    def watch():
        while not done.is_set():
            seen.extend(p.name for p in tmp_path.iterdir())
            time.sleep(0.005)

    done = threading.Event()
    t = threading.Thread(target=watch)
    t.start()
    try:
        rows(mp.attribute([files_batch(GOOD)], scratch=tmp_path))
    finally:
        done.set()
        t.join()
    assert any(name.startswith("memtrace-partition-") for name in seen)
    assert list(tmp_path.iterdir()) == []


def test_a_partition_runs_without_the_gil():
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    batch = files_batch(GOOD * 3)
    t.start()
    started = time.monotonic()
    try:
        rows(mp.attribute([batch]))
    finally:
        done.set()
        t.join()
    during = [x for x in ticks if x > started]
    # Holding the GIL would stop the ticker for the whole run.
    assert len(during) > 20, len(during)
