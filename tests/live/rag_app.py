"""A small retrieval-augmented agent, instrumented as an application would be.

It answers questions over a few remembered documents: embeds the question,
retrieves and reranks documents, looks a profile up with a tool, asks a
(simulated) model, and has an evaluator judge the answer. Every step is a
span with the OpenInference conventions (openinference-instrumentation's
tracer provider and attribute helpers), exported as they end by the
OpenTelemetry SDK's BatchSpanProcessor and OTLP/HTTP protobuf exporter
(opentelemetry-exporter-otlp-proto-http). Where the spans go is set by
OTEL_EXPORTER_OTLP_ENDPOINT alone, as for any OpenTelemetry application.

It prints one JSON line per question: its trace id, the root span's and the
model span's ids, and whether the answer was right.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:7878 python rag_app.py
    python rag_app.py --no-eval-for 1     # leave question 1 unjudged (judged later)
"""

import argparse
import json
import re
import time

from openinference.instrumentation import (
    TracerProvider,
    get_embedding_attributes,
    get_evaluation_attributes,
    get_input_attributes,
    get_llm_attributes,
    get_output_attributes,
    get_reranker_attributes,
    get_retriever_attributes,
    get_span_kind_attributes,
    get_tool_attributes,
    using_session,
    using_user,
)
from openinference.semconv.trace import SpanAttributes
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor

MEMORY = [
    {"id": "doc-paris", "content": "Caroline said she moved to Paris last week for her new job."},
    {"id": "doc-berlin", "content": "Caroline visited Berlin for a conference in 2024."},
    {"id": "doc-thai", "content": "Melanie is learning to cook Thai food at an evening class."},
    {"id": "doc-dog", "content": "Melanie adopted a dog named Biscuit in March."},
]

QUESTIONS = [
    # The retriever ranks the stale Berlin memory first: a wrong answer.
    ("Which city did Caroline move to?", "Paris"),
    ("What is Melanie learning to cook?", "Thai food"),
]

TEMPLATE = "Answer the question from the context.\nContext:\n{context}\nQuestion: {question}"


def words(text):
    return set(re.findall(r"[a-z]+", text.lower()))


def retrieve(question):
    """Documents scored by shared words, with a bias a real store might have for older entries."""
    q = words(question)
    scored = []
    for i, d in enumerate(MEMORY):
        overlap = len(q & words(d["content"]))
        # The bug: an index that favours the first-stored of two similar entries.
        bias = 1.5 if d["id"] == "doc-berlin" else 0.0
        scored.append({**d, "score": round(overlap + bias + 0.01 * i, 2)})
    return sorted(scored, key=lambda d: -d["score"])


def model(question, context):
    """A stand-in for an LLM: answers from the first context line that names a place or a dish."""
    first = context.splitlines()[0]
    for city in ("Paris", "Berlin"):
        if city in first:
            return city
    m = re.search(r"cook (\w+ \w+)", context)
    return m.group(1) if m else "I do not know."


def ask(tracer, question, gold, judge):
    with tracer.start_as_current_span(
        "rag_agent",
        attributes={**get_span_kind_attributes("chain"), **get_input_attributes(question)},
    ) as root:
        with tracer.start_as_current_span(
            "embed_query",
            attributes={
                **get_span_kind_attributes("embedding"),
                **get_embedding_attributes(
                    model_name="toy-embedder",
                    embeddings=[{"text": question, "vector": [0.1, 0.2, 0.3]}],
                ),
            },
        ):
            time.sleep(0.002)
        docs = retrieve(question)
        with tracer.start_as_current_span(
            "vector_search",
            attributes={
                **get_span_kind_attributes("retriever"),
                **get_input_attributes(question),
                **get_retriever_attributes(documents=docs),
            },
        ):
            time.sleep(0.002)
        top = docs[:2]
        with tracer.start_as_current_span(
            "rerank",
            attributes={
                **get_span_kind_attributes("reranker"),
                **get_reranker_attributes(
                    query=question,
                    model_name="toy-reranker",
                    input_documents=docs,
                    output_documents=top,
                    top_k=2,
                ),
            },
        ):
            time.sleep(0.002)
        with tracer.start_as_current_span(
            "lookup_profile",
            attributes={
                **get_span_kind_attributes("tool"),
                **get_tool_attributes(
                    name="lookup_profile",
                    description="Looks up a person's profile.",
                    parameters={"type": "object", "properties": {"person": {"type": "string"}}},
                ),
                **get_input_attributes({"person": question.split()[1]}),
                **get_output_attributes({"known": False}),
            },
        ):
            time.sleep(0.001)
        context = "\n".join(d["content"] for d in top)
        variables = {"context": context, "question": question}
        answer = model(question, context)
        with tracer.start_as_current_span(
            "generate_answer",
            attributes={
                **get_span_kind_attributes("llm"),
                SpanAttributes.LLM_PROMPT_TEMPLATE: TEMPLATE,
                SpanAttributes.LLM_PROMPT_TEMPLATE_VARIABLES: json.dumps(variables),
                **get_llm_attributes(
                    model_name="toy-model",
                    input_messages=[
                        {"role": "system", "content": "You answer from the context only."},
                        {"role": "user", "content": TEMPLATE.format(**variables)},
                    ],
                    output_messages=[{"role": "assistant", "content": answer}],
                ),
            },
        ) as llm:
            time.sleep(0.005)
        llm_ctx = llm.get_span_context()
        correct = answer.lower() == gold.lower()
        if judge:
            evaluate(tracer, question, answer, gold, llm_ctx)
        root.set_attributes(get_output_attributes(answer))
    ctx = root.get_span_context()
    return {
        "trace_id": format(ctx.trace_id, "032x"),
        "root_span_id": format(ctx.span_id, "016x"),
        "llm_span_id": format(llm_ctx.span_id, "016x"),
        "question": question,
        "answer": answer,
        "gold": gold,
        "correct": correct,
    }


def evaluate(tracer, question, answer, gold, llm_ctx, context=None):
    """An EVALUATOR span linked to the model span it judges."""
    correct = answer.lower() == gold.lower()
    label = "correct" if correct else "incorrect"
    with tracer.start_as_current_span(
        "correctness_eval",
        context=context,
        links=[trace.Link(llm_ctx, {"link.reason": "evaluates"})],
        attributes={
            **get_span_kind_attributes("evaluator"),
            **get_input_attributes({"input": question, "output": answer, "reference": gold}),
            **get_output_attributes(label),
            **get_evaluation_attributes(
                evaluations=[
                    {
                        "name": "correctness",
                        "label": label,
                        "score": 1.0 if correct else 0.0,
                        "explanation": f"the reference answer is {gold}",
                    }
                ]
            ),
        },
    ):
        time.sleep(0.001)


def provider():
    p = TracerProvider(
        resource=Resource.create(
            {"service.name": "rag-demo", "openinference.project.name": "rag-demo"}
        )
    )
    # OTLPSpanExporter() reads OTEL_EXPORTER_OTLP_ENDPOINT (and its other variables) itself.
    p.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-eval-for", type=int, action="append", default=[],
                    help="leave question N (1-based) unjudged")
    args = ap.parse_args()
    p = provider()
    tracer = p.get_tracer("rag-demo")
    with using_session("sess-live"), using_user("user-7"):
        for n, (question, gold) in enumerate(QUESTIONS, start=1):
            out = ask(tracer, question, gold, judge=n not in args.no_eval_for)
            print(json.dumps(out), flush=True)
    p.shutdown()  # exports what is left


if __name__ == "__main__":
    main()
