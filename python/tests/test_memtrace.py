"""End-to-end tests of the memtrace Python package, against the built native module."""

import _thread
import copy
import json
import os
import pathlib
import signal
import threading
import time

import pytest

import memtrace

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures"
SAMPLE = FIXTURES / "sample_export.json"
MEM0 = FIXTURES / "devsplit" / "mem0-locomo_1.json"
GRAPH = "graph-e02a1f3b041740d5b82569831ef2d06e"
ANSWER = "str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1"
# A cross product of nine node sets: runs for minutes on the sample.
HEAVY = "MATCH (a), (b), (c), (d), (e), (f), (g), (h), (i) RETURN count(*)"


@pytest.fixture
def sigint():
    """Ctrl-C raises KeyboardInterrupt here, even when the test process was started with SIGINT
    ignored (as a background job is), so that `_thread.interrupt_main` reaches the code under test."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.fixture
def db(tmp_path):
    with memtrace.open(tmp_path / "test.db") as db:
        yield db


@pytest.fixture
def sample_db(db):
    db.import_path(SAMPLE)
    return db


def test_open_is_a_context_manager_and_close_is_final(tmp_path):
    path = tmp_path / "ctx.db"
    with memtrace.Database(path) as db:
        assert not db.closed
        assert db.path == str(path)
        assert not db.read_only
        db.import_path(SAMPLE)
    assert db.closed
    with pytest.raises(memtrace.ClosedError, match="closed"):
        db.traces()
    db.close()  # a second close does nothing
    # What was stored is there when the database is opened again.
    with memtrace.open(path) as again:
        assert [t["graph_id"] for t in again.traces()] == [GRAPH]


def test_import_a_file_then_again_is_a_no_op(db):
    first = db.import_path(SAMPLE)
    assert [(t["graph_id"], t["unchanged"]) for t in first] == [(GRAPH, False)]
    assert first[0]["counts"]["variables"] == 9
    again = db.import_path(SAMPLE)
    assert [t["unchanged"] for t in again] == [True]
    assert len(db.traces()) == 1
    assert db.stats()["traces"] == 1


def test_import_a_folder_with_a_bad_file_keeps_the_good_ones(db, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.json").write_text(SAMPLE.read_text())
    (folder / "bad.json").write_text('{"graph_id": "x", "data": ')
    with pytest.raises(memtrace.ImportFailedError) as e:
        db.import_path(folder)
    assert [p for p, _ in e.value.failures] == [str(folder / "bad.json")]
    assert [t["graph_id"] for t in e.value.imported] == [GRAPH]
    assert "bad.json" in str(e.value)
    assert [t["graph_id"] for t in db.traces()] == [GRAPH]


def test_import_an_export_dict_in_memory(db):
    export = json.loads(SAMPLE.read_text())
    before = copy.deepcopy(export)
    stored = db.import_export(export)
    assert stored[0]["graph_id"] == GRAPH
    assert export == before  # the caller's dict is left as it was
    # Python's own floats: NaN and infinities are read as Python meant them.
    export["graph_id"] = "with-floats"
    export["metadata"] = {"score": float("inf"), "missing": float("nan")}
    db.import_export(export)
    rows = db.query("SHOW TRACES")
    assert {r["trace"] for r in rows} == {GRAPH, "with-floats"}


def test_invalid_input_is_refused_and_nothing_is_stored(db):
    export = json.loads(SAMPLE.read_text())
    export["data"]["edges"][0]["op_id"] = "op-missing"
    with pytest.raises(memtrace.InvalidTraceError, match=r"data\.edges\[0\]"):
        db.import_export(export, source="broken export")
    with pytest.raises(memtrace.InvalidTraceError, match="<json>"):
        db.import_json("[1, 2")
    with pytest.raises(TypeError, match="takes a dict"):
        db.import_export([1, 2])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="export_graph"):
        db.import_network(object())
    assert db.traces() == []


def test_a_trace_query_returns_rows_as_dicts(sample_db):
    rows = sample_db.query(f"TRACE '{ANSWER}' IN TRACE '{GRAPH}' RETURN nodes")
    assert isinstance(rows, memtrace.QueryResult)
    assert rows.columns and all(list(r.keys()) == rows.columns for r in rows)
    flat = json.dumps(list(rows))
    assert "memory_store@2" in flat
    count = sample_db.query(f"TRACE '{ANSWER}' IN TRACE '{GRAPH}' RETURN count")
    assert count.columns == ["trace", "count"]
    assert count[0]["trace"] == GRAPH
    assert count[0]["count"] == len(rows)


def test_results_show_their_rows_and_escape_html(sample_db):
    rows = sample_db.query("FIND vars RETURN var.full_node_id, var.value ORDER BY var.full_node_id")
    assert len(rows) == 9
    text = repr(rows)
    assert "memory_store@2" in text and "9 row(s)" in text
    page = rows._repr_html_()
    assert page.count("<tr>") == 10 and "<th>var.value</th>" in page
    assert "&#x27;m0: user is a developer&#x27;" in page  # quotes of the values are escaped


def test_parameters_are_bound_by_name(sample_db):
    rows = sample_db.query(
        "FIND vars WHERE var.category = $cat RETURN var.full_node_id",
        {"cat": "answer"},
    )
    assert [r["var.full_node_id"] for r in rows] == [ANSWER]
    same = sample_db.query(
        "FIND vars WHERE var.category = $cat RETURN var.full_node_id",
        params={"$cat": "answer"},
    )
    assert list(same) == list(rows)
    with pytest.raises(memtrace.QueryError, match=r"\$cat"):
        sample_db.query("FIND vars WHERE var.category = $cat RETURN count(*)")
    with pytest.raises(TypeError, match="cannot be a query value"):
        sample_db.query("FIND vars WHERE var.category = $cat RETURN count(*)", {"cat": object()})


def test_a_syntax_error_carries_line_column_and_caret(sample_db):
    with pytest.raises(memtrace.QueryError) as e:
        sample_db.query("TRACE answer:42\n  UNTILL x")
    err = e.value
    assert isinstance(err, memtrace.Error)
    assert err.line == 2
    assert err.column == 3
    assert "UNTIL" in err.message
    assert err.caret.splitlines()[-1].strip() == "^"
    assert "line 2, column 3" in str(err)


def test_unknown_names_raise_not_found(sample_db):
    with pytest.raises(memtrace.NotFoundError, match="no trace nope"):
        sample_db.query("TRACE answer:42 IN TRACE 'nope'")
    with pytest.raises(memtrace.NotFoundError):
        sample_db.query(f"TRACE answer:42 IN TRACE '{GRAPH}'")
    with pytest.raises(memtrace.NotFoundError):
        sample_db.cases("nope")


def test_two_threads_query_at_once_and_the_gil_is_released(sample_db):
    query = f"TRACE '{ANSWER}' IN TRACE '{GRAPH}' RETURN nodes"
    expected = list(sample_db.query(query))
    results, errors = [], []

    def worker():
        try:
            for _ in range(50):
                results.append(list(sample_db.query(query)))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 100 and all(r == expected for r in results)

    # While a long query runs in one thread, Python code keeps running in another.
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        with pytest.raises(memtrace.QueryTimeoutError):
            sample_db.query(HEAVY, timeout=1.0)
    finally:
        stop.set()
        t.join()
    assert len(ticks) >= 20, f"only {len(ticks)} ticks while the query ran"


def test_a_timeout_stops_a_query_and_the_database_goes_on(sample_db):
    start = time.monotonic()
    with pytest.raises(memtrace.QueryTimeoutError, match="time limit of 0.3 s"):
        sample_db.query(HEAVY, timeout=0.3)
    assert time.monotonic() - start < 10
    assert len(sample_db.traces()) == 1
    with pytest.raises(ValueError, match="positive"):
        sample_db.query("SHOW TRACES", timeout=0)


def test_keyboard_interrupt_cancels_a_running_query(sample_db, sigint):
    timer = threading.Timer(0.5, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sample_db.query(HEAVY)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 10
    # The query was stopped, not left running: the next one answers at once.
    assert sample_db.query("SHOW TRACES")[0]["trace"] == GRAPH


def test_a_read_only_handle_reads_beside_a_writer(db, tmp_path):
    db.import_path(SAMPLE)
    with memtrace.open(db.path, read_only=True) as reader:
        assert reader.read_only
        assert [t["graph_id"] for t in reader.traces()] == [GRAPH]
        with pytest.raises(memtrace.Error):
            reader.import_path(MEM0)
    with pytest.raises(memtrace.StoreError):
        memtrace.open(tmp_path / "missing.db", read_only=True)


def test_attribution_eval_and_report_on_an_independent_trace(db, tmp_path):
    db.import_path(MEM0)
    cases = db.cases()
    assert len(cases) == 21
    seen = []
    verdicts = db.attribute("evidence", progress=seen.append)
    assert len(verdicts) == len(cases)
    assert seen and seen[-1]["traces_read"] == seen[-1]["traces"] == 1
    decided = [v for v in verdicts if v["error_type"]]
    assert decided, verdicts[:2]
    v = decided[0]
    assert v["method"] == "evidence"
    assert v["op_id"].startswith("op-")
    assert v["error_type"] in {
        "ExtractionError",
        "UpdateError",
        "DeletionError",
        "RetrievalError",
        "ResponseError",
    }
    stored = db.attributions()
    assert len(stored) == len(verdicts)
    assert all(s["author"] == "memtrace python" for s in stored)
    # Attributing again stores nothing new.
    db.attribute("evidence")
    assert len(db.attributions()) == len(verdicts)
    # The same as the query language answers.
    counted = db.query("FIND attributions RETURN count(*)")
    assert counted[0]["count(*)"] == len(verdicts)

    scored = db.eval("evidence")
    assert scored["cases"] == 21
    assert scored["setting"] == "benchmark"
    assert 0.0 <= scored["error_type_accuracy"] <= 1.0
    # The same labelled cases with their evidence, then their gold answers, hidden.
    hidden = db.eval("evidence", setting="production")
    assert hidden["setting"] == "production" and hidden["cases"] == 21
    assert 0.0 <= hidden["calibration"]["confident"]["coverage"] <= 1.0
    prod = db.attribute("evidence", setting="production", store=False)
    assert {v["setting"] for v in prod} == {"production"}
    with pytest.raises(ValueError, match="unknown setting"):
        db.eval("evidence", setting="prod")

    report = db.report(tmp_path / "report")
    assert report["overall"]["failed"] == 21
    assert pathlib.Path(report["html"]).is_file()
    assert pathlib.Path(report["markdown"]).read_text().strip()

    with pytest.raises(ValueError, match="unknown attribution method"):
        db.attribute("magic")
    with pytest.raises(ValueError, match="give trace="):
        db.attribute(cases=["x"])
    with pytest.raises(memtrace.NotFoundError):
        db.attribute(trace=cases[0]["graph_id"], cases=["no such case"])


def test_a_dead_llm_endpoint_is_a_clear_error_and_stores_nothing(db):
    db.import_path(MEM0)
    # Port 9 (discard) on loopback: nothing listens there.
    db.set_llm("http://127.0.0.1:9/v1", "test-model", "sk-test", timeout=2)
    case = db.cases()[0]
    with pytest.raises(memtrace.LlmError) as e:
        db.attribute("llm", trace=case["graph_id"], cases=[case["id"]])
    assert "127.0.0.1:9" in str(e.value)
    assert "sk-test" not in str(e.value)
    assert db.attributions() == []


def test_saved_and_built_in_patterns(db):
    db.import_path(MEM0)
    names = [p["name"] for p in db.patterns()]
    assert names and all(p["builtin"] for p in db.patterns())
    version = db.save_pattern(
        "answers",
        "FIND vars WHERE var.category = $cat RETURN var.full_node_id",
        {"cat": "prompt"},
        author="tester",
    )
    assert version == 1
    saved = [p for p in db.patterns() if p["name"] == "answers"]
    assert saved and saved[0]["params"] == {"cat": "prompt"} and not saved[0]["builtin"]
    hits = db.run_pattern("answers")
    assert isinstance(hits, memtrace.PatternResult)
    assert hits.traces == 1
    assert hits.columns == ["trace", "var.full_node_id"]
    direct = db.query("FIND vars WHERE var.category = 'prompt' RETURN var.full_node_id")
    assert len(hits) == len(direct) > 0
    assert sum(hits.per_trace.values()) == len(hits)
    none = db.run_pattern("answers", {"cat": "no such category"})
    assert len(none) == 0
    with pytest.raises(memtrace.QueryError):
        db.save_pattern("broken", "FIND vars WHERE")
    db.drop_pattern("answers", author="tester")
    assert "answers" not in [p["name"] for p in db.patterns()]
    with pytest.raises(memtrace.Error):
        db.run_pattern("answers")
    builtin = db.run_pattern(names[0])
    assert builtin.traces == 1


def test_to_arrow_and_to_pandas(sample_db):
    rows = sample_db.query("FIND vars RETURN var.full_node_id, var.version ORDER BY var.full_node_id")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pyarrow"):
            rows.to_arrow()
    else:
        table = rows.to_arrow()
        assert table.column_names == rows.columns
        assert table.num_rows == len(rows) == 9
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            rows.to_pandas()
    else:
        frame = rows.to_pandas()
        assert list(frame.columns) == rows.columns
        assert frame["var.full_node_id"].tolist() == [r["var.full_node_id"] for r in rows]


def test_types_are_stubbed():
    package = pathlib.Path(memtrace.__file__).parent
    assert (package / "_memtrace.pyi").is_file()
    assert (package / "py.typed").is_file()
    assert memtrace.Database.query.__doc__ and "QueryError" in memtrace.Database.query.__doc__
    assert issubclass(memtrace.QueryError, memtrace.Error)
    assert memtrace.__version__


def _record_program():
    """A small smartcomment 0.1.2 program, as the format's sample records it."""
    from smartcomment import comment_fn, comment_graph, comment_op, comment_session, comment_variable

    @comment_fn(
        op_name="llm.extract",
        category="extraction",
        param_options={
            "prompt": {"class_name": "prompt", "category": "prompt"},
            "-o": {"class_name": "llm_output", "category": "llm_output"},
        },
    )
    def fake_llm(prompt: str) -> str:
        return "FACT: user likes graphs"

    with comment_graph(user_id="u1", project_id="notebook-demo") as g:
        with comment_session(session_name="ingest", category="ingest"):
            msg = comment_variable("I like graph databases.", category="user_input")
            fact = fake_llm("Extract facts from: " + msg)
        with comment_session(session_name="answer", category="qa"):
            comment_op(
                op_name="rag.answer",
                category="generation",
                inputs=[
                    ("What does the user like?", {"category": "query"}),
                    (fact, {"id_strategy": "content", "class_name": "llm_output"}),
                ],
                outputs=[("The user likes graphs.", {"category": "answer"})],
            )
    return g


def test_a_live_smartcomment_network_is_imported_without_a_file(db, tmp_path, monkeypatch):
    pytest.importorskip(
        "smartcomment",
        reason="smartcomment 0.1.2 is not installed here (it needs Python >= 3.12)",
    )
    monkeypatch.chdir(tmp_path)
    g = _record_program()
    before = set(os.listdir(tmp_path))
    stored = db.import_network(g)
    assert set(os.listdir(tmp_path)) == before, "import_network wrote a file"
    graph_id = stored[0]["graph_id"]
    assert stored[0]["format"] == "smartcomment"
    answers = db.query(
        f"FIND vars IN TRACE '{graph_id}' WHERE var.category = 'answer' RETURN var.full_node_id"
    )
    assert len(answers) == 1
    answer = answers[0]["var.full_node_id"]
    trace = db.query(f"TRACE '{answer}' IN TRACE '{graph_id}' RETURN nodes")
    by_category = {row["category"]: row for row in trace}
    # The answer comes from the query and the LLM's output, which comes from its prompt.
    assert set(by_category) == {"query", "llm_output", "prompt"}
    assert by_category["llm_output"]["depth"] == 1
    assert by_category["prompt"]["depth"] == 2
    extract = db.query(
        f"FIND ops IN TRACE '{graph_id}' WHERE op.op_name = 'llm.extract' RETURN op.op_id"
    )
    assert by_category["prompt"]["via_op"] == extract[0]["op.op_id"]
    assert db.traces()[0]["source"].startswith("<smartcomment")


class _FakeModel:
    """An OpenAI-compatible endpoint on loopback that answers every attribution request at
    once: with the hybrid analysis's proposal when the case gives one, else the answering op
    as a ResponseError. `delay` makes it slow, to interrupt a run."""

    def __init__(self, delay: float = 0.0):
        import http.server

        self.requests = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append((self.path, self.headers.get("Authorization"), body))
                time.sleep(delay)
                case = body["messages"][1]["content"]
                arguments = {"reason": "the fake model's guess", "confidence": 0.5}
                proposal = [l for l in case.splitlines() if "analysis proposes: " in l]
                if proposal:
                    words = proposal[0].split("analysis proposes: ", 1)[1].split()
                    arguments.update(error_type=words[0], op_id=words[2])
                else:
                    line = [l for l in case.splitlines() if "The answering op: " in l][0]
                    op = line.split("The answering op: ", 1)[1].split()[0]
                    arguments.update(error_type="ResponseError", op_id=op)
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call{len(fake.requests)}",
                            "type": "function",
                            "function": {"name": "finish", "arguments": json.dumps(arguments)},
                        }
                    ],
                }
                reply = json.dumps(
                    {
                        "id": "fake",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                    }
                ).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:  # the client gave up (an interrupted run)
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_llm_attribution_through_an_openai_compatible_endpoint(db):
    db.import_path(MEM0)
    model = _FakeModel()
    try:
        db.set_llm(model.url, "fake-model", "sk-python-test")
        cases = db.cases()[:2]
        seen = []
        verdicts = db.attribute(
            "hybrid",
            trace=cases[0]["graph_id"],
            cases=[c["id"] for c in cases],
            progress=seen.append,
        )
    finally:
        model.close()
    assert [v["case"] for v in verdicts] == [c["id"] for c in cases]
    for v in verdicts:
        assert v["method"] == "hybrid" and v["model"] == "fake-model"
        assert v["error_type"] and v["op_id"].startswith("op-")
        assert v["cost"]["calls"] >= 1
    assert model.requests and all(p.endswith("/chat/completions") for p, _, _ in model.requests)
    assert all(auth == "Bearer sk-python-test" for _, auth, _ in model.requests)
    assert seen[-1]["cases_done"] == 2 and seen[-1]["calls"] >= 2
    assert len(db.attributions()) == 2


def test_keyboard_interrupt_stops_an_llm_run_and_stores_nothing(db, sigint):
    db.import_path(MEM0)
    model = _FakeModel(delay=30)
    try:
        db.set_llm(model.url, "slow-model", timeout=60)
        timer = threading.Timer(1.0, _thread.interrupt_main)
        start = time.monotonic()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                db.attribute("llm")
        finally:
            timer.cancel()
        assert time.monotonic() - start < 15
    finally:
        model.close()
    assert db.attributions() == []
