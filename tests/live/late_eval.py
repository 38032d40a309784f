"""Judges an answer minutes after its trace was exported, as Phoenix and
Langfuse users attach evaluations: an EVALUATOR span in the answer's trace,
a child of its root span and linked to the model span it judges, exported
by the OpenTelemetry SDK to OTEL_EXPORTER_OTLP_ENDPOINT.

    python late_eval.py TRACE_ID ROOT_SPAN_ID LLM_SPAN_ID QUESTION ANSWER GOLD
"""

import sys

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from rag_app import evaluate, provider


def main():
    trace_id, root_id, llm_id, question, answer, gold = sys.argv[1:7]

    def ctx(span_id):
        return SpanContext(
            trace_id=int(trace_id, 16),
            span_id=int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )

    p = provider()
    tracer = p.get_tracer("rag-demo-evals")
    parent = trace.set_span_in_context(NonRecordingSpan(ctx(root_id)))
    evaluate(tracer, question, answer, gold, ctx(llm_id), context=parent)
    p.shutdown()


if __name__ == "__main__":
    main()
