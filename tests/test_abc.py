"""aeval.abc: every contract on one page, the same objects as in their old (deprecated) homes."""

from __future__ import annotations

import pytest

import aeval
import aeval.abc
import aeval.formatters
import aeval.models
import aeval.strategies
from aeval import (
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    Samples,
    Scorer,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("old_home", "name"),
    [
        (aeval.strategies, "Strategy"),
        (aeval.formatters, "ReportFormatter"),
        (aeval.models, "ChatModel"),
        (aeval.models, "Embedder"),
        (aeval.models, "Clock"),
    ],
)
def test_the_contracts_old_homes_give_the_same_objects_with_a_warning(
    old_home: object, name: str
) -> None:
    with pytest.warns(DeprecationWarning, match="import it from aeval.abc"):
        assert getattr(old_home, name) is getattr(aeval.abc, name)


def test_all_is_sorted_and_names_every_contract() -> None:
    public = {
        name
        for name, value in vars(aeval.abc).items()
        if isinstance(value, type) and value.__module__ in ("aeval.abc", "aeval")
    }
    assert aeval.abc.__all__ == sorted(public)


def test_a_duck_typed_sink_is_a_sink_and_so_is_a_base_sink() -> None:
    class Duck:
        async def send(self, row: EvaluationRow) -> None: ...

        async def flush(self) -> None: ...

    class Based(aeval.abc.BaseSink):
        async def send(self, row: EvaluationRow) -> None: ...

        async def flush(self) -> None: ...

    assert isinstance(Duck(), aeval.abc.Sink)
    assert isinstance(Based(), aeval.abc.Sink)
    assert isinstance(aeval.JsonlSink("rows.jsonl"), aeval.abc.BaseSink)


async def test_a_base_sink_gets_the_hooks_it_overrides_and_a_duck_sink_runs_without() -> None:
    events: list[str] = []

    class Based(aeval.abc.BaseSink):
        async def send(self, row: EvaluationRow) -> None:
            events.append(f"row {row.name}")

        async def flush(self) -> None:
            events.append("flush")

        async def run_finished(self, run: RunInfo) -> None:
            events.append("finished")

    class Duck:
        async def send(self, row: EvaluationRow) -> None:
            events.append("duck row")

        async def flush(self) -> None:
            pass

    def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == sample.expected_output)

    report = await Scorer(sinks=[Based(), Duck()]).evaluate(
        Samples([EvaluationSample("s", ["a"], "a")]), lambda params: params[0], equals
    )
    assert report.score == 100.0
    assert events[:2] == ["row s", "duck row"]
    assert events[2:] == ["finished", "flush"]


def test_the_optional_hooks_have_their_documented_defaults() -> None:
    assert aeval.abc.BaseSampleLoader.priority == 0
    assert aeval.abc.BaseReportFormatter.options is None
