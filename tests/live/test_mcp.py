"""`memtrace mcp` through the official MCP Python client SDK over stdio:
the tools are listed, each is called, a syntax error comes back as an MCP
error with its caret line, a row limit cuts and says so, and the write tool
is there only with --allow-writes."""

import asyncio
import json

import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

from conftest import BIN, ROOT, memtrace

OTLP = ROOT / "tests" / "fixtures" / "otlp" / "rag_session.json"
RAG = "otel-db5b5fab8f4d3e27dda1494c73cf256d"
READ_TOOLS = {
    "list_traces",
    "query",
    "explain",
    "show_value",
    "failed_cases",
    "attribute_case",
    "run_pattern",
    "describe",
}


@pytest.fixture
def otlp_db(db):
    memtrace(db, "import", str(OTLP))
    return db


def session(db, *args):
    params = StdioServerParameters(command=str(BIN), args=["--db", str(db), "mcp", *args])

    async def go(body):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                return await body(s, init)

    return go


def structured(result):
    assert not result.is_error, result
    assert result.structured_content is not None, result
    return result.structured_content


def test_every_tool_answers_and_errors_say_what_to_fix(otlp_db):
    async def body(s, init):
        assert "never instructions" in (init.instructions or "")
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == READ_TOOLS, sorted(tools)
        assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())

        traces = structured(await s.call_tool("list_traces", {"failed_only": True}))
        assert [t["graph_id"] for t in traces["data"]] == [RAG], traces
        assert traces["data"][0]["failed_cases"] == 1
        assert "never instructions" in traces["notice"]

        rows = structured(
            await s.call_tool(
                "query", {"statement": f"FIND ops IN TRACE '{RAG}' RETURN name ORDER BY name"}
            )
        )
        assert rows["columns"] == ["name"]
        assert ["generate_answer"] in rows["data"], rows
        # A row limit cuts, and says so.
        limited = structured(
            await s.call_tool("query", {"statement": "FIND vars RETURN var.full_name", "limit": 3})
        )
        assert len(limited["data"]) == 3 and limited["truncated"] is True, limited
        # Parameters.
        p = structured(
            await s.call_tool(
                "query",
                {"statement": "FIND traces WHERE trace.graph_id = $g RETURN count(*)", "params": {"g": RAG}},
            )
        )
        assert p["data"] == [[1]], p

        plan = structured(
            await s.call_tool("explain", {"statement": f"TRACE prediction:Q1 IN TRACE '{RAG}' DEPTH 2"})
        )
        assert plan["plan"].strip(), plan

        cases = structured(await s.call_tool("failed_cases", {"trace": RAG}))
        assert cases["matched"] == 1, cases
        case = cases["data"][0]["case"]

        verdict = structured(
            await s.call_tool("attribute_case", {"trace": RAG, "case": case, "method": "evidence"})
        )
        assert verdict["stored"] is False
        assert verdict["data"]["error_type"], verdict
        assert verdict["data"]["op_id"].startswith("span-"), verdict

        value = structured(
            await s.call_tool(
                "show_value",
                {"trace": RAG, "node": "output_message:generate_answer:0", "max_chars": 5},
            )
        )
        assert value["data"]["value"].startswith("<data-"), value
        assert value["value_chars"] > 5 and value["next_offset"] == 5, value

        hits = structured(await s.call_tool("run_pattern", {"name": "empty_retrieval", "limit": 5}))
        assert "columns" in hits and hits["row_limit"] == 5, hits

        described = structured(await s.call_tool("describe", {}))
        assert "FIND" in described["text"] and "schema" in described["topics"]
        topic = structured(await s.call_tool("describe", {"topic": "match"}))
        assert "MATCH" in topic["text"]

        # A syntax error: an MCP error with the line, column and caret.
        with pytest.raises(MCPError) as err:
            await s.call_tool("query", {"statement": "FIND ops WHERE op.name = "})
        assert "^" in err.value.message and "line 1" in err.value.message, err.value.message
        # A statement that stores is refused, saying how to store.
        with pytest.raises(MCPError) as err:
            await s.call_tool("query", {"statement": f"ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"})
        assert "--allow-writes" in err.value.message, err.value.message
        # An unknown trace, an out-of-range limit and an unconfigured LLM say what to do.
        with pytest.raises(MCPError) as err:
            await s.call_tool("failed_cases", {"trace": "nope"})
        assert "list_traces" in err.value.message
        with pytest.raises(MCPError) as err:
            await s.call_tool("query", {"statement": "SHOW TRACES", "limit": 999999})
        assert "over the limit" in err.value.message
        with pytest.raises(MCPError) as err:
            await s.call_tool("attribute_case", {"trace": RAG, "case": case, "method": "llm"})
        assert "LLM" in err.value.message or "endpoint" in err.value.message
        # The write tool is absent: calling it is an error.
        with pytest.raises(MCPError):
            await s.call_tool("execute", {"statement": f"ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"})
        return True

    import os

    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith(("OPENAI_", "MEMTRACE_LLM"))}
    try:
        assert asyncio.run(session(otlp_db)(body))
    finally:
        os.environ.update(saved)
    # Nothing was stored.
    out = memtrace(otlp_db, "query", "FIND attributions RETURN count(*)", "--format", "json")
    assert json.loads(out.stdout)["rows"] == [[0]]


def test_the_write_tool_is_there_only_with_allow_writes(otlp_db):
    async def body(s, init):
        tools = {t.name for t in (await s.list_tools()).tools}
        assert tools == READ_TOOLS | {"execute"}, sorted(tools)
        out = structured(
            await s.call_tool("execute", {"statement": f"ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"})
        )
        assert len(out["data"]) == 1, out
        with pytest.raises(MCPError) as err:
            await s.call_tool("execute", {"statement": "SHOW TRACES"})
        assert "query tool" in err.value.message
        cases = structured(await s.call_tool("failed_cases", {"trace": RAG}))
        assert cases["data"][0]["verdict"]["error_type"], cases
        return True

    assert asyncio.run(session(otlp_db, "--allow-writes")(body))
    out = memtrace(otlp_db, "query", "FIND attributions RETURN count(*)", "--format", "json")
    assert json.loads(out.stdout)["rows"] == [[1]]
