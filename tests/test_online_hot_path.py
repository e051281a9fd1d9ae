"""Online evaluation's per-response path (issue 25): the same samples, rows and counts, made
with less work.

No timings: bench_online.py measures the speed. These tests pin what the fast paths must keep
(the sample the constructor makes, the queue's bound and hand-over, the window's counts) and
the work they must not do again (Python calls per response, counted with ``sys.setprofile``).
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import pytest
from _sinks import Rows
from anyio import wait_all_tasks_blocked

from aeval import EvaluationResult, EvaluationRow, EvaluationSample, Outcome
from aeval._engine._apply import apply_to_row
from aeval._engine._redact import Redactor
from aeval._samples._labels import REVIEW_QUEUED
from aeval.online import OnlineEvaluator, _window as online_window
from aeval.online._job import Job, timed_out
from aeval.online._queue import JobQueue
from aeval.online._window import Window
from aeval.strategies import ContainsStrategy, NotBlankStrategy, inline

pytestmark = pytest.mark.anyio

INPUTS: list[Any] = [
    {"question": "Hi?", "lang": "en"},
    {},
    ["a", "b"],
    ("a",),
    "one string",
    42,
    None,
]
NAMES: list[str | None] = [None, "request-7"]
TAGS: list[Any] = [(), ("faq", "en"), ["faq"]]
METADATA: list[Mapping[str, Any] | None] = [None, {"must_contain": ["Paris"]}, {}]


def _job(inputs: Any, name: str | None, tags: Any, metadata: Any, *, review: bool) -> Job:
    job = Job(inputs, "an answer", name, "watched", tags, metadata, 5.0, None, 0.0)
    job.seq = 12
    job.review = review
    return job


def _general(job: Job, prefix: str) -> EvaluationSample:
    """The sample as ``EvaluationSample``'s constructor makes it, every check done."""
    inputs = job.inputs
    parameters = inputs if isinstance(inputs, Mapping | list | tuple) else [inputs]
    metadata = dict(job.metadata or {})
    if job.review:
        metadata[REVIEW_QUEUED] = True
    return EvaluationSample(
        job.name or f"{job.prefix or prefix}-{job.seq}",
        parameters,
        tags=job.tags,
        metadata=metadata,
    )


@pytest.mark.parametrize("inputs", INPUTS, ids=repr)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("tags", TAGS, ids=repr)
@pytest.mark.parametrize("metadata", METADATA, ids=repr)
@pytest.mark.parametrize("review", [False, True])
def test_a_response_becomes_the_sample_the_constructor_makes(
    inputs: Any, name: str | None, tags: Any, metadata: Any, review: bool
) -> None:
    job = _job(inputs, name, tags, metadata, review=review)
    made = job.sample("online")
    expected = _general(job, "online")
    assert made == expected
    assert (made.name, made.parameters, made.tags) == (
        expected.name,
        expected.parameters,
        expected.tags,
    )
    assert dict(made.metadata) == dict(expected.metadata)
    assert type(made.metadata) is type(expected.metadata)
    assert made.parameters.names == expected.parameters.names


@pytest.mark.parametrize(
    ("inputs", "name", "tags", "metadata"),
    [
        ({1: "x"}, None, (), None),
        ({"q": 1}, "   ", (), None),
        ({"q": 1}, None, ("ok", 3), None),
        ({"q": 1}, None, (), {"turns": 3}),
    ],
)
def test_a_response_the_constructor_refuses_is_refused_with_its_message(
    inputs: Any, name: str | None, tags: Any, metadata: Any
) -> None:
    job = _job(inputs, name, tags, metadata, review=False)
    with pytest.raises((TypeError, ValueError)) as general:
        _general(job, "online")
    with pytest.raises(type(general.value)) as made:
        job.sample("online")
    assert str(made.value) == str(general.value)


async def test_the_queue_keeps_its_bound_and_hands_a_job_to_a_parked_worker() -> None:
    queue: JobQueue[str] = JobQueue(2)
    assert (queue.put("a"), queue.put("b"), queue.put("c")) == (True, True, False)
    assert len(queue) == 2
    assert [await queue.get(), queue.get_nowait(), queue.get_nowait()] == ["a", "b", None]

    unbuffered: JobQueue[str] = JobQueue(0)
    assert unbuffered.put("refused") is False  # no worker free, no room
    got: list[str | None] = []
    async with anyio.create_task_group() as group:

        async def worker() -> None:
            got.append(await unbuffered.get())

        group.start_soon(worker)
        group.start_soon(worker)
        await wait_all_tasks_blocked()
        # two parked workers: two jobs taken outside the bound, a third refused
        assert (unbuffered.put("x"), unbuffered.put("y"), unbuffered.put("z")) == (
            True,
            True,
            False,
        )
        assert len(unbuffered) == 0
    assert sorted(got, key=str) == ["x", "y"]


async def test_closing_the_queue_wakes_parked_workers_and_refuses_jobs() -> None:
    queue: JobQueue[str] = JobQueue(5)
    ends: list[str | None] = []
    async with anyio.create_task_group() as group:

        async def worker() -> None:
            ends.append(await queue.get())

        for _ in range(3):
            group.start_soon(worker)
        await wait_all_tasks_blocked()
        queue.close()
    assert ends == [None, None, None]
    assert queue.put("late") is False and len(queue) == 0


async def test_a_cancelled_worker_loses_no_job_and_takes_none_after() -> None:
    queue: JobQueue[str] = JobQueue(0)
    got: list[str | None] = []
    async with anyio.create_task_group() as group:

        async def worker() -> None:
            got.append(await queue.get())

        group.start_soon(worker)
        await wait_all_tasks_blocked()
        assert queue.put("handed")  # the worker is woken with it, then cancelled
        group.cancel_scope.cancel()
    left = queue.get_nowait()
    assert [*got, left].count("handed") == 1  # taken, or back in the queue to be counted
    async with anyio.create_task_group() as group:
        group.start_soon(worker)
        await wait_all_tasks_blocked()
        group.cancel_scope.cancel()  # cancelled while parked, nothing handed
    assert queue.put("late") is False  # not handed to the worker that left
    assert len(queue) == 0


def _row(
    strategy: str, outcome: Outcome, score: float | None, moment: float | None, tags: Any
) -> EvaluationRow:
    sample = EvaluationSample("s", ["q"], tags=tags)
    return EvaluationRow(sample, strategy, "out", outcome, score, timestamp=moment)


def test_the_window_counts_a_response_s_rows_as_it_counts_them_one_by_one() -> None:
    rows = [
        _row("a", Outcome.PASSED, 1.0, 100.0, ("x",)),
        _row("b", Outcome.FAILED, 0.25, 100.0, ("x", "y")),
        _row("a", Outcome.ERROR, 0.0, 100.0, ()),
        _row("a", Outcome.PASSED, 0.5, 125.0, ("y",)),  # another bucket
        _row("b", Outcome.SKIPPED, None, 125.0, ()),
        _row("a", Outcome.PASSED, 1.0, 5.0, ()),  # older than the retention: not counted
        _row("a", Outcome.PASSED, 1.0, 5.0, ()),
        _row("b", Outcome.UNSCORED, None, None, ()),  # no timestamp: counted at now
        _row("a", Outcome.PASSED, 1.0, 126.0, ()),
    ]
    together = Window(resolution=10.0, retention=60.0)
    one_by_one = Window(resolution=10.0, retention=60.0)
    together.add(rows, 130.0)
    for row in rows:
        one_by_one.add([row], 130.0)
    for window in (together, one_by_one):
        assert window.score(0.0, 130.0).rows == 7
    for tag in (None, "x", "y"):
        for strategy in (None, "a", "b"):
            assert together.score(0.0, 130.0, tag=tag, strategy=strategy) == one_by_one.score(
                0.0, 130.0, tag=tag, strategy=strategy
            )
    assert together.by(0.0, 130.0, field="tag") == one_by_one.by(0.0, 130.0, field="tag")
    a = together.score(0.0, 130.0, strategy="a")
    assert (a.rows, a.passed, a.failed, a.errors, a.mean_score) == (4, 3, 0, 1, 2.5 / 3)
    b_y = together.score(0.0, 130.0, strategy="b", tag="y")
    assert (b_y.rows, b_y.failed, b_y.mean_score) == (1, 1, 0.25)
    x = together.score(0.0, 130.0, tag="x")
    assert (x.rows, x.passed, x.failed, x.mean_score) == (2, 1, 1, 0.625)
    b = together.score(0.0, 130.0, strategy="b")
    assert (b.rows, b.failed, b.skipped, b.unscored, b.mean_score) == (3, 1, 1, 1, 0.25)


def test_the_span_capture_skips_an_empty_context_and_still_finds_a_span() -> None:
    pytest.importorskip("opentelemetry")
    from opentelemetry import context, trace

    from aeval.online._otel import Telemetry

    telemetry = Telemetry()
    assert telemetry.capture() is None  # nothing attached: answered at once
    token = context.attach(context.set_value("unrelated", 1))
    try:
        assert telemetry.capture() is None  # a context, but no span in it
    finally:
        context.detach(token)
    span = trace.NonRecordingSpan(trace.SpanContext(trace_id=1, span_id=2, is_remote=False))
    with trace.use_span(span):
        assert telemetry.capture() is span
    with trace.use_span(trace.INVALID_SPAN):
        assert telemetry.capture() is None


class _Interrupting:
    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        raise KeyboardInterrupt


async def _quick_result() -> EvaluationResult:
    return EvaluationResult.failing(0.25, "awaited")


def _named(name: str, check: Callable[[EvaluationSample, Any], Any]) -> Any:
    marked = inline(functools.partial(check))
    marked.__name__ = name  # type: ignore[attr-defined]
    return marked


_DIRECT: list[Any] = [
    NotBlankStrategy(),
    ContainsStrategy(must_not_contain=["secret"]),  # fails on the secret answer
    ContainsStrategy(must_not_contain=["I cannot"], name="refusal"),
    _named("passes", lambda s, o: EvaluationResult.passing(0.9, f"fine: {o}")),
    _named("fails", lambda s, o: EvaluationResult.failing(0.1, "no").with_metadata({"o": o})),
    _named("unscored", lambda s, o: EvaluationResult.unscored("no verdict")),
    _named("skipped", lambda s, o: EvaluationResult.skip("gated")),
    _named("not_applicable", lambda s, o: EvaluationResult.not_applicable("no expected-calls")),
    _named("raises", lambda s, o: 1 / 0),
    _named("interrupts", _Interrupting().evaluate),
    _named("wrong_type", lambda s, o: "yes"),
    _named("awaitable", lambda s, o: _quick_result()),  # the rest goes the awaited way
    NotBlankStrategy(name="after"),
]


def _comparable(row: EvaluationRow) -> EvaluationRow:
    return dataclasses.replace(row, strategy_duration=0.0)


@pytest.mark.parametrize("redact", [(), ("secret",)])
@pytest.mark.parametrize("tags", [(), ("faq", "en")])
async def test_online_rows_and_window_are_those_the_general_path_makes(
    redact: tuple[str, ...], tags: tuple[str, ...]
) -> None:
    """The worker applies a direct strategy itself (apply_inline's work, inlined): every row
    must be the one ``apply_to_row`` makes, redacted the same, counted the same."""
    sink = Rows()
    outputs = ["Paris is the capital.", "the secret is 42", "  "]
    async with OnlineEvaluator(
        *_DIRECT, sink=sink, redact=redact, clock=lambda: 1_800_000_000.0
    ) as online:
        for i, output in enumerate(outputs):
            online.submit({"question": f"q{i}"}, output, name=f"r{i}", tags=tags)
        await online.join()
        by_strategy = await online.by_strategy()
        by_tag = await online.by_tag()
        stats = online.statistics()
    assert (stats.evaluated, stats.rows) == (3, 3 * len(_DIRECT))
    redactor = Redactor(redact)
    expected: list[EvaluationRow] = []
    for i, output in enumerate(outputs):
        sample = EvaluationSample(f"r{i}", {"question": f"q{i}"}, tags=tags)
        for strategy in online.strategies:
            row = await apply_to_row(
                strategy,
                sample,
                output,
                duration=0.0,
                index=i + 1,
                seconds=None,
                timed_out=timed_out,
                tracebacks=False,
                timestamp=1_800_000_000.0,
            )
            expected.append(redactor.row(row))
    made = sorted(sink.rows, key=lambda row: (row.index, row.position))  # any worker's order
    assert [_comparable(row) for row in made] == [_comparable(row) for row in expected]
    assert {row.outcome for row in sink.rows} == set(Outcome)
    window = Window(resolution=10.0, retention=24 * 3600.0)
    window.add(expected, 1_800_000_000.0)
    assert by_strategy == window.by(0.0, 1_800_000_000.0, field="strategy")
    assert by_tag == window.by(0.0, 1_800_000_000.0, field="tag")
    assert stats.errors == sum(row.outcome is Outcome.ERROR for row in expected)


def _counted_by_hand(
    rows: list[tuple[EvaluationRow, float]],
    oldest: int,
    since: float,
    until: float,
    strategy: str | None,
    tag: str | None,
) -> tuple[tuple[int, ...], float | None]:
    """What the window must say of ``rows`` (each with the moment it was added)."""
    counted: list[EvaluationRow] = []
    for row, now in rows:
        index = int((now if row.timestamp is None else row.timestamp) // 10.0)
        if not max(oldest, int(since // 10.0)) <= index <= int(until // 10.0):
            continue
        if strategy is not None and row.strategy != strategy:
            continue
        counted += [row] * (1 if tag is None else row.sample.tags.count(tag))
    scores = [
        r.score
        for r in counted
        if r.outcome in (Outcome.PASSED, Outcome.FAILED) and r.score is not None
    ]
    counts = (len(counted), *(sum(r.outcome is o for r in counted) for o in _OUTCOMES))
    return counts, (sum(scores) / len(scores) if scores else None)


_OUTCOMES = (
    Outcome.PASSED,
    Outcome.FAILED,
    Outcome.ERROR,
    Outcome.UNSCORED,
    Outcome.SKIPPED,
    Outcome.NOT_APPLICABLE,
)


@pytest.mark.parametrize("uncounted", [None, 5])
def test_the_window_s_counts_are_those_of_its_rows_counted_by_hand(
    uncounted: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window notes each row and counts the notes together (every thousand, and before
    any read), under the row's strategy and its response's tags as they are; a tag's and a
    strategy's totals are summed when read. Every total must be the one counted row by row,
    as time goes on and old buckets are forgotten (a tag given twice counts the row twice, as
    a counter per tag did)."""
    if uncounted is not None:
        monkeypatch.setattr(online_window, "_UNCOUNTED", uncounted)
    draw = random.Random(25)
    tag_sets: list[tuple[str, ...]] = [(), ("x",), ("x", "y"), ("y",), ("x", "x")]
    window = Window(resolution=10.0, retention=300.0)
    added: list[tuple[EvaluationRow, float]] = []
    for step in range(300):
        now = 300.0 + step
        response = []
        for _ in range(draw.choice([1, 2, 3])):
            outcome = draw.choice(_OUTCOMES)
            score = draw.choice([0.0, 0.25, 1.0]) if outcome in _OUTCOMES[:2] else None
            if outcome is Outcome.ERROR:
                score = 0.0
            moment = draw.choice([None, now - 400 * draw.random()])
            response.append(_row(draw.choice("abc"), outcome, score, moment, draw.choice(tag_sets)))
        window.add(response, now)
        added += [(row, now) for row in response]
        if step % 97 == 0 or step == 299:  # reads between the adds, and at the end
            for since, until in [(0.0, now), (350.0, 460.0), (now - 5.0, now)]:
                for strategy in (None, "a", "b", "c"):
                    for tag in (None, "x", "y"):
                        got = window.score(since, until, tag=tag, strategy=strategy)
                        counts, mean = _counted_by_hand(
                            added, window._oldest, since, until, strategy, tag
                        )
                        assert (
                            got.rows,
                            got.passed,
                            got.failed,
                            got.errors,
                            got.unscored,
                            got.skipped,
                            got.not_applicable,
                        ) == counts
                        if mean is None:
                            assert got.mean_score is None
                        else:
                            assert got.mean_score == pytest.approx(mean)
    assert window._oldest > 0  # old buckets were forgotten on the way
    assert window.keys(0.0, 600.0) == ({"a", "b", "c"}, {"x", "y"})
