"""A real OpenTelemetry application exports to a running `memtrace serve`
through OTEL_EXPORTER_OTLP_ENDPOINT alone: its traces become queryable, the
failed evaluation is a case that `memtrace attribute` gives a verdict, and
an evaluation attached after the trace was stored is kept (the trace is
stored again with it) and becomes a case too."""

import urllib.error

from conftest import memtrace, run_app


def case_count(server, graph_id):
    try:
        rows = server.query(f"FIND cases IN TRACE '{graph_id}' RETURN count(*)")["rows"]
    except urllib.error.HTTPError as e:
        # While a trace is stored again, the new one is written before the
        # old one is dropped: for that moment the graph id names both.
        assert e.code == 400 and "several" in e.read().decode(), e
        return None
    return rows[0][0]


def test_an_instrumented_rag_app_exports_live_and_its_failed_evaluation_gets_a_verdict(db, serve):
    server = serve(db, "--otlp-quiet", "0.5")
    turns, _ = run_app("rag_app.py", server.url, "--no-eval-for", "2")
    assert [t["correct"] for t in turns] == [False, True], turns
    wrong, right = (f"otel-{t['trace_id']}" for t in turns)

    def both_stored():
        listed = {t["graph_id"]: t for t in server.get("/api/traces")["traces"]}
        return wrong in listed and right in listed and listed

    listed = server.wait("both traces stored", both_stored)
    assert listed[wrong]["system"] == "rag-demo"
    assert listed[wrong]["ops"] == 7 and listed[right]["ops"] == 6

    # Queryable as any trace: the model's call, the retrieved documents, the provenance.
    ops = server.query(
        f"FIND ops IN TRACE '{wrong}' WHERE op.kind = 'llm' RETURN name, op.meta.attributes.llm.model_name"
    )
    assert ops["rows"] == [["generate_answer", "toy-model"]], ops
    docs = server.query(f"FIND vars IN TRACE '{wrong}' WHERE var.category = 'document' RETURN count(*)")
    assert docs["rows"][0][0] >= 4, docs
    prov = server.query(f"TRACE 'output_message:generate_answer:0@1' IN TRACE '{wrong}' RETURN ops")
    assert any(r[2] == "vector_search" for r in prov["rows"]), prov
    sessions = server.query("FIND traces WHERE trace.meta.session_id = 'sess-live' RETURN count(*)")
    assert sessions["rows"][0][0] == 2, sessions

    # The failed evaluation is a case; the correct answer has none.
    assert case_count(server, wrong) == 1
    assert case_count(server, right) == 0

    # Minutes later, an evaluator judges the second answer wrongly: the
    # trace is stored again with the late span, and it now has a case.
    t = turns[1]
    run_app(
        "late_eval.py",
        server.url,
        t["trace_id"],
        t["root_span_id"],
        t["llm_span_id"],
        t["question"],
        t["answer"],
        "Italian food",
    )
    server.wait("the late evaluation's case", lambda: case_count(server, right) == 1)
    graph_ids = [x["graph_id"] for x in server.get("/api/traces")["traces"]]
    assert graph_ids.count(right) == 1, graph_ids
    source = server.query(f"FIND traces WHERE trace.graph_id = '{right}' RETURN trace.source")
    assert "late spans" in source["rows"][0][0], source
    server.stop()

    # `memtrace attribute` gives both cases a verdict.
    out = memtrace(db, "attribute", "--format", "json")
    import json

    verdicts = json.loads(out.stdout)
    verdicts = verdicts.get("verdicts", verdicts) if isinstance(verdicts, dict) else verdicts
    mine = [v for v in verdicts if v["graph_id"] in (wrong, right)]
    assert len(mine) == 2, out.stdout
    assert all(v["error_type"] for v in mine), mine
    log = memtrace(db, "log").stdout
    assert "superseded by" in log, log
