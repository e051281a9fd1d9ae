from __future__ import annotations

import pytest

from aeval import EvaluationResult, EvaluationSample, Parameters, Samples, evaluate_sync

SAMPLES = Samples(EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}") for i in range(4))


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(sample.expected_output == output)


def test_evaluate_sync_from_plain_code() -> None:
    def fn(params: Parameters) -> str:
        return str(params[0])

    report = evaluate_sync(SAMPLES, fn, equals, concurrency=2)
    assert report.passed_count == 4


def test_evaluate_sync_passes_scorer_options() -> None:
    async def fn(params: Parameters) -> str:
        return str(params[0])

    report = evaluate_sync(SAMPLES, fn, equals, repeats=2)
    assert report.evaluation_count == 8


@pytest.mark.anyio
async def test_evaluate_sync_refuses_inside_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match=r"inside a running asyncio event loop.*await"):
        evaluate_sync(SAMPLES, str, equals)
