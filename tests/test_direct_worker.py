"""The common run (an async target awaited as it is, live tools, direct strategies) against
the same run with a timeout (the target then called under a cancel scope): the same rows,
counts and traces. Once a second loop per worker (issue 25), now the one path (issue 33);
these tests keep that a sample's recorder never carries anything into another sample, that
a passing row nobody reads is counted as its row would be (and never made), that a report
holds its rows in order. The Python calls per sample are counted by ``benchmarks/bench_calls.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    Outcome,
    Parameters,
    Samples,
    Scorer,
    read_run,
)
from aeval.abc import BaseSink
from aeval.strategies import ExactMatchStrategy, inline
from aeval.trace import Trace, current, record_tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _target(params: Parameters) -> Any:
    text = params.values[0]
    word = text.split()[0]
    if word.endswith("3"):
        raise ValueError(f"no answer for {text}")
    if word.endswith("5"):
        record_tool_call("lookup", {"q": text}, result="found")
    if word.endswith("7"):
        await asyncio.sleep(0)
    return text.upper() if word.endswith("1") else text


async def _later(score: float) -> EvaluationResult:
    await asyncio.sleep(0)
    return EvaluationResult.passing(score, "awaited")


@inline
def _varied(sample: EvaluationSample, output: Any) -> Any:
    name = sample.name
    if name == "s29":
        raise KeyboardInterrupt
    if name.endswith("9"):
        return _later(0.5)
    if name.endswith("2"):
        return EvaluationResult.unscored("no verdict", {"why": "two"})
    if name.endswith("4"):
        raise RuntimeError("the check broke")
    if name.endswith("6"):
        return EvaluationResult.skip("gated")
    if name.endswith("8"):
        return "not a result"
    return EvaluationResult.failing(0.25, "low").with_metadata({"n": len(name)})


def _view(row: EvaluationRow) -> tuple[Any, ...]:
    trace = row.trace
    calls = None if trace is None else [(c.name, dict(c.arguments)) for c in trace.tool_calls]
    error = None if row.error is None else (row.error.type, row.error.message, row.error.source)
    fields = dataclasses.replace(row, duration=0.0, strategy_duration=0.0, trace=None, error=None)
    return fields, calls, error


def _source(kind: str, samples: Samples) -> Any:
    if kind != "async":
        return samples if kind == "samples" else list(samples)

    async def stream() -> AsyncIterator[EvaluationSample]:
        for sample in samples:
            yield sample

    return stream()


@pytest.mark.parametrize(("kind", "repeats"), [("samples", 1), ("list", 2), ("async", 2)])
async def test_the_direct_worker_makes_the_rows_the_general_path_makes(
    kind: str, repeats: int
) -> None:
    samples = Samples(EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}") for i in range(60))
    strategies = (ExactMatchStrategy(), _varied)
    direct = await Scorer(7, repeats=repeats).evaluate(_source(kind, samples), _target, *strategies)
    general = await Scorer(7, repeats=repeats, timeout=60).evaluate(
        _source(kind, samples), _target, *strategies
    )
    assert [_view(r) for r in direct.evaluations] == [_view(r) for r in general.evaluations]
    assert len(direct.evaluations) == 120 * repeats
    assert direct.counts == general.counts
    assert (direct.call_count, direct.sample_count) == (general.call_count, general.sample_count)
    assert (direct.call_count, direct.sample_count) == (60 * repeats, 60)
    assert direct.function_error_count == general.function_error_count == 6 * repeats
    assert direct.complete and general.complete
    assert direct.strategy_statistics == general.strategy_statistics
    assert direct.repeat_statistics == general.repeat_statistics


async def test_the_direct_worker_redacts_and_sends_the_general_paths_rows(tmp_path: Path) -> None:
    secret = "sk-test-0123456789"
    samples = Samples(
        EvaluationSample(f"s{i}", [f"in{i} {secret}"], f"in{i} {secret}") for i in range(30)
    )
    strategies = (ExactMatchStrategy(), _varied)
    reports = []
    for name, timeout in (("direct", None), ("general", 60.0)):
        sink = JsonlSink(tmp_path / f"{name}.jsonl")
        scorer = Scorer(3, timeout=timeout, sinks=[sink], redact=[secret])
        reports.append(await scorer.evaluate(samples, _target, *strategies))
    direct, general = reports
    assert [_view(r) for r in direct.evaluations] == [_view(r) for r in general.evaluations]
    assert secret not in repr([r.output for r in direct.evaluations])
    assert "[REDACTED]" in repr([r.output for r in direct.evaluations])
    sent = [await read_run(tmp_path / f"{name}.jsonl") for name in ("direct", "general")]
    assert [_view(r) for r in sent[0][0]] == [_view(r) for r in sent[1][0]]
    assert len(sent[0][0]) == 60
    traced = [r.trace for r in sent[0][0] if r.trace is not None]
    assert traced and secret not in repr(traced)


async def test_a_streamed_direct_run_refuses_a_conversation_as_the_general_path_does() -> None:
    plain = EvaluationSample("plain", ["q"], "q")
    chat = EvaluationSample("chat", turns=["hi"])

    async def whole(params: Parameters) -> Any:
        return params.values[0]

    refusals = []
    for timeout in (None, 60.0):
        with pytest.raises(TypeError, match=r"Sample 'chat' is a conversation") as info:
            stream = _source("async", Samples([plain, chat]))
            await Scorer(1, timeout=timeout).evaluate(stream, whole, ExactMatchStrategy())
        refusals.append((str(info.value), info.value.__notes__))
    assert refusals[0] == refusals[1]
    assert refusals[0][1] == ["aeval: 1 row(s) had finished when the run stopped."]


@pytest.mark.parametrize("exc_type", [SystemExit, GeneratorExit, ValueError])
async def test_the_direct_worker_makes_error_rows_of_what_the_target_raises(
    exc_type: type[BaseException],
) -> None:
    async def target(params: Parameters) -> Any:
        if params.values[0] == 1:
            raise exc_type("no")
        return params.values[0]

    samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(3))
    report = await Scorer(2).evaluate(samples, target, ExactMatchStrategy())
    assert [r.outcome for r in report.evaluations] == [
        Outcome.PASSED,
        Outcome.ERROR,
        Outcome.PASSED,
    ]
    error = report.evaluations[1].error
    assert error is not None and (error.type, error.message) == (exc_type.__name__, "no")
    assert (report.call_count, report.sample_count, report.function_error_count) == (3, 3, 1)
    assert report.complete


def test_a_keyboard_interrupt_from_the_target_stops_a_direct_run() -> None:
    called: list[int] = []

    async def target(params: Parameters) -> Any:
        called.append(params.values[0])
        if params.values[0] == 2:
            raise KeyboardInterrupt
        return params.values[0]

    async def main() -> None:
        samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(5))
        await Scorer(1).evaluate(samples, target, ExactMatchStrategy())

    with pytest.raises(KeyboardInterrupt):
        anyio.run(main)  # asyncio re-raises KeyboardInterrupt out of its loop: a loop of our own
    assert called == [0, 1, 2]


async def test_a_reused_recorder_never_gets_a_late_record_of_a_task_left_behind() -> None:
    """Sample 0 leaves a task behind (it holds sample 0's context); sample 1, on the same
    worker, lets it record: into sample 0's recorder, never into sample 1's."""
    release = asyncio.Event()
    left: list[asyncio.Task[None]] = []

    async def late() -> None:
        await release.wait()
        record_tool_call("late", {})

    async def target(params: Parameters) -> Any:
        step = params.values[0]
        if step == 0:
            left.append(asyncio.get_running_loop().create_task(late()))
        elif step == 1:
            release.set()
            await left[0]
        return step

    samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(4))
    report = await Scorer(1).evaluate(samples, target, ExactMatchStrategy())
    assert report.passed_count == 4
    assert [row.trace for row in report.evaluations] == [None] * 4


async def test_a_reused_recorder_never_gets_a_record_made_in_a_kept_context() -> None:
    kept: list[contextvars.Context] = []

    async def target(params: Parameters) -> Any:
        step = params.values[0]
        if step == 0:
            kept.append(contextvars.copy_context())
        elif step == 2:
            kept[0].run(record_tool_call, "kept", {})
        return step

    samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(4))
    report = await Scorer(1).evaluate(samples, target, ExactMatchStrategy())
    assert [row.trace for row in report.evaluations] == [None] * 4
    trace = kept[0].run(current)
    assert trace is not None and [c.name for c in trace.tool_calls] == ["kept"]


async def test_a_recorder_that_recorded_is_never_reused() -> None:
    async def target(params: Parameters) -> Any:
        if params.values[0] % 2 == 0:
            record_tool_call("even", {"n": params.values[0]})
        return params.values[0]

    samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(6))
    report = await Scorer(1).evaluate(samples, target, ExactMatchStrategy())
    traces: list[Trace | None] = [row.trace for row in report.evaluations]
    for index, trace in enumerate(traces):
        if index % 2:
            assert trace is None
        else:
            assert trace is not None
            assert [dict(c.arguments) for c in trace.tool_calls] == [{"n": index}]


def _row(index: int, position: int = 0) -> EvaluationRow:
    sample = EvaluationSample(f"s{index}")
    return EvaluationRow(sample, "st", "out", Outcome.PASSED, 1.0, index=index, position=position)


@pytest.mark.parametrize("order", [[0, 1, 2, 5, 9], [0, 2, 1, 3], [0, 1, 1, 2], [3, 2, 1, 0]])
def test_a_report_holds_its_rows_in_order(order: list[int]) -> None:
    rows = [_row(index) for index in order]
    assert list(EvaluationReport(rows).evaluations) == sorted(rows, key=lambda r: r.sort_key)


def test_rows_of_several_strategies_are_always_sorted() -> None:
    rows = [_row(0, 1), _row(0, 0), _row(1, 0), _row(1, 1)]
    held = EvaluationReport(rows).evaluations
    assert [(r.index, r.position) for r in held] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_a_row_made_positionally_is_the_row_made_by_name() -> None:
    sample = EvaluationSample("s", ["x"], "x", tags=("t",))
    values = (sample, "st", "x", Outcome.FAILED, 0.5, "why", {"k": 1}, None, 1.5, 0.25, 3, 1, 2)
    made = EvaluationRow(*values, 12.0, None)
    names = [field.name for field in dataclasses.fields(EvaluationRow)]
    by_name: dict[str, Any] = dict(zip(names, [*values, 12.0, None], strict=True))
    assert made == EvaluationRow(**by_name)
    assert [getattr(made, name) for name in names] == [*values, 12.0, None]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.score = 1.0  # type: ignore[misc]
    assert dataclasses.replace(made, score=0.75).score == 0.75


async def test_parameters_are_bound_once_per_shape_and_a_misfit_still_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binds = 0
    bind = inspect.Signature.bind

    def counted(self: inspect.Signature, *args: Any, **kwargs: Any) -> inspect.BoundArguments:
        nonlocal binds
        binds += 1
        return bind(self, *args, **kwargs)

    monkeypatch.setattr(inspect.Signature, "bind", counted)

    async def ask(question: str, style: str = "short") -> str:
        return f"{question}/{style}"

    samples = [EvaluationSample(f"p{i}", [f"q{i}"], f"q{i}/short") for i in range(50)]
    samples += [EvaluationSample(f"n{i}", {"question": f"q{i}"}, f"q{i}/short") for i in range(50)]
    report = await Scorer(5).evaluate(samples, ask, ExactMatchStrategy())
    assert report.passed_count == 100
    assert binds == 2  # one positional shape, one named
    misfit = EvaluationSample("bad", {"query": "q"}, "q")
    with pytest.raises(TypeError, match=r"cannot take the parameters of sample 'bad'"):
        await Scorer(5).evaluate([*samples, misfit], ask, ExactMatchStrategy())


async def test_a_direct_run_cancelled_from_outside_stops_and_raises_nothing() -> None:
    never = asyncio.Event()
    with anyio.CancelScope() as scope:

        async def target(params: Parameters) -> Any:
            if params.values[0] == 3:
                scope.cancel()
                await never.wait()
            return params.values[0]

        samples = Samples(EvaluationSample(f"s{i}", [i], i) for i in range(10))
        await Scorer(2).evaluate(samples, target, ExactMatchStrategy())
    assert scope.cancelled_caught


_TIMING = (
    "duration",
    "started",
    "ended",
    "finished",
    "elapsed",
    "time",
    "seconds",
    "run",
    "traceback",
)


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _untimed(v) for k, v in value.items() if not any(t in k.lower() for t in _TIMING)
        }
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


@inline
def _mixed(sample: EvaluationSample, output: Any) -> EvaluationResult:
    number = int(sample.name[1:])
    if number % 5 == 0:
        return EvaluationResult.failing(0.25, "low")
    if number % 7 == 0:
        return EvaluationResult.passing(0.75, "judged").with_metadata({"judges": []})
    return EvaluationResult.passing(1.0 if number % 2 else 0.5, "fine")


class _Discard(BaseSink):
    """A sink that reads every row and keeps none: its run makes every row."""

    async def send(self, row: EvaluationRow) -> None:
        pass

    async def flush(self) -> None:
        pass


async def _direct_and_general(
    samples: Samples, strategy: Any, keep: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[EvaluationReport], int]:
    """The reports of a run whose passing rows nobody reads and of the same run with a sink
    (which reads every row, so each is made), and how many rows of the first run were
    counted without being made (no EvaluationRow was built for them)."""
    made = 0
    init = EvaluationRow.__init__

    def counting(self: EvaluationRow, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        init(self, *args, **kwargs)

    monkeypatch.setattr(EvaluationRow, "__init__", counting)
    reports = []
    for sinks in ([], [_Discard()]):
        scorer = Scorer(5, keep=keep, sinks=sinks)
        made = 0
        reports.append(await scorer.evaluate(_source("async", samples), _target, strategy))
        if not sinks:
            counted = reports[0].evaluation_count - made
    assert made >= reports[1].evaluation_count  # the general path makes every row
    return reports, counted


@pytest.mark.parametrize("keep", ["failures", "none"])
async def test_a_passing_row_nobody_keeps_is_counted_as_the_row_would_be(
    keep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no sink and passing rows not kept, the direct worker counts a plain passing row
    without making it (``Aggregator.count_passed``): the report is the one the rows make,
    for tagged samples, samples with metadata or a label, results with metadata, failures
    and errors alike."""
    from aeval.formatters.json import report_to_dict

    def sample(i: int) -> EvaluationSample:
        tags = [("odd" if i % 2 else "even"), "all"] if i % 3 else []
        metadata = {"label": "pass"} if i % 11 == 0 else ({"owner": "x"} if i % 13 == 0 else {})
        return EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}", tags=tags, metadata=metadata)

    samples = Samples(sample(i) for i in range(1, 120))
    (direct, general), counted = await _direct_and_general(samples, _mixed, keep, monkeypatch)
    assert _untimed(report_to_dict(direct)) == _untimed(report_to_dict(general))
    assert [_view(r) for r in direct.evaluations] == [_view(r) for r in general.evaluations]
    assert direct.tag_statistics == general.tag_statistics
    assert direct.strategy_statistics == general.strategy_statistics
    assert direct.calibration == general.calibration
    assert direct.counts == general.counts
    assert direct.counts[Outcome.PASSED] > 60
    assert 40 < counted < direct.counts[Outcome.PASSED]  # the plain ones, not the rest


_PLAIN_PASS = EvaluationResult.passing(1.0, "same")
_JUDGED_PASS = EvaluationResult.passing(0.75, "judged").with_metadata({"judges": []})
_SHARED_FAIL = EvaluationResult.failing(0.25, "low")


@inline
def _shared(sample: EvaluationSample, output: Any) -> EvaluationResult:
    number = int(sample.name[1:])
    return (_PLAIN_PASS, _JUDGED_PASS, _SHARED_FAIL, _PLAIN_PASS)[number % 4]


async def test_a_result_returned_again_is_counted_as_its_first_return_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The direct worker remembers, per strategy, the last result it found to be a plain pass
    and counts that same (frozen) result again without looking at it: the report is the one
    the rows make, and only the plain passes are counted without a row."""
    from aeval.formatters.json import report_to_dict

    samples = Samples(EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}") for i in range(1, 101))
    reports, counted = await _direct_and_general(samples, _shared, "failures", monkeypatch)
    direct, general = reports
    assert _untimed(report_to_dict(direct)) == _untimed(report_to_dict(general))
    assert [_view(r) for r in direct.evaluations] == [_view(r) for r in general.evaluations]
    plain = [i for i in range(1, 101) if i % 4 in (0, 3) and not str(i).endswith("3")]
    assert counted == len(plain)


async def test_unnamed_parameters_reach_the_target_as_its_bound_call_passes_them() -> None:
    """The direct worker calls a target that binds its parameters with the unnamed values
    itself (``BoundFunction.positional``); named or partly named parameters still go through
    the bound call: the outputs are the general path's, whatever order the shapes come in."""
    shapes: list[Any] = [
        ["a"],
        ["a", "b"],
        {"text": "t"},
        {"text": "t", "extra": "e"},
        Parameters.from_pairs([(None, "u"), ("extra", "x")]),
        ["c"],
    ]
    samples = Samples(EvaluationSample(f"s{i}", shapes[i % len(shapes)], None) for i in range(30))
    seen: list[tuple[Any, ...]] = []

    async def target(text: str, second: str = "-", *, extra: str = "-") -> str:
        seen.append((text, second, extra))
        return f"{text}|{second}|{extra}"

    outputs = []
    for timeout in (None, 60.0):
        report = await Scorer(3, keep="all", timeout=timeout).evaluate(
            _source("async", samples), target, ExactMatchStrategy()
        )
        outputs.append(sorted((r.sample.name, r.output) for r in report.evaluations))
    assert outputs[0] == outputs[1]
    assert ("s4", "u|-|x") in outputs[0] and ("s3", "t|-|e") in outputs[0]
    assert len(seen) == 60


@pytest.mark.parametrize("limit", [None, 60.0])
async def test_in_flight_counts_the_samples_being_evaluated_whenever_it_can_be_read(
    limit: float | None,
) -> None:
    """``statistics().samples_in_flight`` is the number of samples being evaluated at every point
    another task can read it (the target's pauses, the source's), on both paths: the direct
    worker counts a sample from one to the next without a pause, not in between."""
    scorer = Scorer(4, keep="none", timeout=limit)  # a timeout: the general path
    active = 0
    seen: list[tuple[int, int]] = []

    async def target(text: str) -> str:
        nonlocal active
        active += 1
        seen.append((scorer.statistics().samples_in_flight, active))
        await asyncio.sleep(0)
        seen.append((scorer.statistics().samples_in_flight, active))
        active -= 1
        return text

    async def source() -> AsyncIterator[EvaluationSample]:
        for i in range(60):
            seen.append((scorer.statistics().samples_in_flight, active))
            if i % 3 == 0:
                await asyncio.sleep(0)
                seen.append((scorer.statistics().samples_in_flight, active))
            yield EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}")

    report = await scorer.evaluate(source(), target, ExactMatchStrategy())
    assert report.passed_count == 60
    assert len(seen) == 60 + 20 + 120
    assert [in_flight for in_flight, _ in seen] == [count for _, count in seen]
    assert max(count for _, count in seen) > 1
    assert scorer.statistics().samples_in_flight == 0


_VERDICTS = st.sampled_from(
    [
        _PLAIN_PASS,
        _JUDGED_PASS,
        _SHARED_FAIL,
        EvaluationResult.passing(0.5),
        EvaluationResult.passing(1.0).with_metadata({"k": 1}),
        EvaluationResult.unscored("no verdict"),
        EvaluationResult.skip("gated"),
        EvaluationResult.not_applicable("the sample states no expected-calls"),
    ]
)
_CASES = st.lists(
    st.tuples(
        _VERDICTS,
        st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
        st.sampled_from([{}, {"owner": "x"}, {"label": "pass"}]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(cases=_CASES, keep=st.sampled_from(["failures", "none"]))
def test_rows_counted_without_being_made_count_as_the_made_rows(
    cases: list[tuple[EvaluationResult, list[str], dict[str, Any]]], keep: Any
) -> None:
    """The one specialised step of the worker loop (``Judged.count``: a plain passing row
    nobody reads is counted, not made) against the general one (a sink reads every row, so
    each is made), on generated verdicts, tags and sample metadata: the same report."""
    from aeval.formatters.json import report_to_dict

    samples = Samples(
        EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}", tags=tags, metadata=metadata)
        for i, (_, tags, metadata) in enumerate(cases)
    )
    verdicts = {f"s{i}": verdict for i, (verdict, _, _) in enumerate(cases)}

    @inline
    def check(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return verdicts[sample.name]

    async def echo(text: str) -> str:
        return text

    async def both() -> list[EvaluationReport]:
        return [
            await Scorer(3, keep=keep, sinks=sinks).evaluate(samples, echo, check)
            for sinks in ([], [_Discard()])
        ]

    counted, made = anyio.run(both)
    assert _untimed(report_to_dict(counted)) == _untimed(report_to_dict(made))
    assert counted.counts == made.counts
    assert counted.tag_statistics == made.tag_statistics
    assert counted.strategy_statistics == made.strategy_statistics
