"""OpenTelemetry: each online result as a gen_ai.evaluation.result event (SDK in memory)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from aeval import EvaluationResult, EvaluationSample
from aeval.online import OnlineEvaluator

pytestmark = pytest.mark.anyio

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (set once: OpenTelemetry refuses a second one)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not getattr(provider, "_aeval_test_exporter", False):
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider._aeval_test_exporter = True  # type: ignore[attr-defined]
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def passes(sample: EvaluationSample, output: Any) -> EvaluationResult:
    return EvaluationResult.passing(0.75, "fine")


def raises(sample: EvaluationSample, output: Any) -> EvaluationResult:
    raise ValueError("judge down")


def unscored(sample: EvaluationSample, output: Any) -> EvaluationResult:
    return EvaluationResult.unscored("unreadable reply")


def spans(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


async def test_results_go_under_the_request_span_once_it_has_ended(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = trace.get_tracer("service")
    async with OnlineEvaluator(passes, raises, unscored) as online:
        with tracer.start_as_current_span("request") as request:
            online.submit("q", "answer", name="r1")
        await online.join()
    (request_span,) = spans(exporter, "request")
    assert request_span.events == ()  # it had ended before the evaluation did
    (evaluation,) = spans(exporter, "aeval.online.evaluation")
    assert evaluation.parent is not None
    assert evaluation.parent.span_id == request.get_span_context().span_id
    assert evaluation.context is not None
    assert evaluation.context.trace_id == request.get_span_context().trace_id
    assert evaluation.attributes == {"aeval.response.name": "r1"}
    events = [(event.name, dict(event.attributes or {})) for event in evaluation.events]
    assert events == [
        (
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "passes",
                "gen_ai.evaluation.score.label": "passed",
                "gen_ai.evaluation.score.value": 0.75,
                "gen_ai.evaluation.explanation": "fine",
            },
        ),
        (
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "raises",
                "gen_ai.evaluation.score.label": "error",
                "gen_ai.evaluation.score.value": 0.0,
                "gen_ai.evaluation.explanation": "ValueError: judge down",
                "error.type": "ValueError",
            },
        ),
        (
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "unscored",
                "gen_ai.evaluation.score.label": "unscored",
                "gen_ai.evaluation.explanation": "unreadable reply",
            },
        ),
    ]


async def test_results_go_on_the_request_span_while_it_is_recording(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = trace.get_tracer("service")
    async with OnlineEvaluator(passes) as online:
        with tracer.start_as_current_span("request"):
            online.submit("q", "answer")
            await online.join()
    (request_span,) = spans(exporter, "request")
    assert [event.name for event in request_span.events] == ["gen_ai.evaluation.result"]
    assert spans(exporter, "aeval.online.evaluation") == []


async def test_the_span_is_captured_in_the_submitting_thread(
    exporter: InMemorySpanExporter,
) -> None:
    import anyio

    tracer = trace.get_tracer("service")
    async with OnlineEvaluator(passes) as online:

        def handler() -> Any:
            with tracer.start_as_current_span("sync request") as span:
                online.submit("q", "answer")
                return span.get_span_context()

        context = await anyio.to_thread.run_sync(handler)
        await online.join()
    # The loop may evaluate before the thread ends its span (events on it) or after (events
    # on a child of it): either way they belong to the span current in that thread.
    (request,) = spans(exporter, "sync request")
    children = spans(exporter, "aeval.online.evaluation")
    assert all(c.parent is not None and c.parent.span_id == context.span_id for c in children)
    events = [e.name for span in [request, *children] for e in span.events]
    assert events == ["gen_ai.evaluation.result"]


async def test_nothing_is_emitted_without_a_current_span_or_with_otel_off(
    exporter: InMemorySpanExporter,
) -> None:
    tracer = trace.get_tracer("service")
    async with OnlineEvaluator(passes) as online:
        online.submit("q", "outside any span")
    async with OnlineEvaluator(passes, otel=False) as online:
        with tracer.start_as_current_span("request"):
            online.submit("q", "answer")
            await online.join()
    assert [span.name for span in exporter.get_finished_spans()] == ["request"]
    assert spans(exporter, "request")[0].events == ()
