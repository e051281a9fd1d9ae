from __future__ import annotations

from pathlib import Path

import pytest

import aeval
from aeval import (
    EvaluationResult,
    EvaluationSample,
    Parameters,
    SampleFileNotFoundError,
    Samples,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:aeval.Evaluation is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings(
        "ignore:aeval.EvaluationSetupError is deprecated:DeprecationWarning"
    ),
]

SAMPLES = Samples(
    [
        EvaluationSample("a", ["1"], "1", tags=["smoke"]),
        EvaluationSample("b", ["2"], "x", tags=["regression"]),
        EvaluationSample("c", ["3"], "3", tags=["smoke"]),
    ]
)


async def echo(params: Parameters) -> str:
    return str(params[0])


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(sample.expected_output == output)


async def test_build_and_run_many_times() -> None:
    calls = 0

    async def fn(params: Parameters) -> str:
        nonlocal calls
        calls += 1
        return str(params[0])

    runner = (
        aeval.Evaluation.builder()
        .with_samples(SAMPLES)
        .with_concurrency(2)
        .evaluate(fn)
        .using(equals)
        .using(equals)
        .build()
    )
    first = await runner.run()
    second = await runner.run()
    assert first.evaluation_count == second.evaluation_count == 6
    assert first.score == pytest.approx(200 / 3)
    assert calls == 6


async def test_with_tags_replaces_earlier_tags() -> None:
    report = (
        await aeval.Evaluation.builder()
        .with_samples(SAMPLES)
        .with_tags("regression")
        .with_tags("smoke")
        .evaluate(echo)
        .using(equals)
        .run()
    )
    assert [r.name for r in report.evaluations] == ["a", "c"]
    assert report.score == 100.0


async def test_no_matching_sample_gives_an_empty_report() -> None:
    report = (
        await aeval.Evaluation.builder()
        .with_samples(SAMPLES)
        .with_tags("absent")
        .evaluate(echo)
        .using(equals)
        .run()
    )
    assert report.evaluation_count == 0
    assert report.score == 0.0


@pytest.mark.parametrize(
    ("configure", "message"),
    [
        (lambda b: b.evaluate(echo).using(equals), "Samples must be set using with_samples()"),
        (lambda b: b.with_samples(SAMPLES).using(equals), "Function must be set using evaluate()"),
        (
            lambda b: b.with_samples(SAMPLES).evaluate(echo),
            "At least one strategy must be set using using()",
        ),
    ],
)
def test_build_checks_the_configuration(configure: object, message: str) -> None:
    builder = configure(aeval.Evaluation.builder())  # type: ignore[operator]
    with pytest.raises(
        aeval.EvaluationSetupError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        builder.build()


def test_argument_checks() -> None:
    builder = aeval.Evaluation.builder()
    with pytest.raises(ValueError, match="Concurrency must be at least 1"):
        builder.with_concurrency(0)
    with pytest.raises(ValueError, match="Strategy must not be None"):
        builder.using(None)
    with pytest.raises(TypeError, match="Function must be callable"):
        builder.evaluate("nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-blank path"):
        builder.with_samples("  ")
    with pytest.raises(ValueError, match="timeout must be a positive"):
        builder.with_scorer_options(timeout=-1)


async def test_samples_path_is_loaded_when_the_runner_runs(tmp_path: Path) -> None:
    path = tmp_path / "samples.yaml"
    runner = aeval.Evaluation.builder().with_samples(path).evaluate(echo).using(equals).build()
    with pytest.raises(SampleFileNotFoundError):
        await runner.run()
    path.write_text(
        '- name: "one"\n  parameters: ["1"]\n  expected-output: "1"\n'
        '- name: "two"\n  parameters: ["2"]\n  expected-output: "0"\n'
    )
    report = await runner.run()
    assert report.score == 50.0


async def test_run_and_save_writes_a_timestamped_markdown_report(tmp_path: Path) -> None:
    report = (
        await aeval.Evaluation.builder()
        .with_samples(SAMPLES)
        .evaluate(echo)
        .using(equals)
        .run_and_save(tmp_path / "reports")
    )
    (written,) = (tmp_path / "reports").iterdir()
    assert written.name.startswith("evaluation_report_") and written.suffix == ".md"
    text = written.read_text()
    assert "# Evaluation Report" in text
    assert "**Global Score**: 66.67%" in text
    assert "#### Result" in text
    assert report.score == pytest.approx(200 / 3)


async def test_a_one_parameter_function_gets_the_value() -> None:
    async def shout(question):  # type: ignore[no-untyped-def]
        return question.upper()

    report = await (
        aeval.Evaluation.builder()
        .with_samples(Samples([EvaluationSample("a", ["hi"], "HI")]))
        .evaluate(shout)
        .using(equals)
        .run()
    )
    assert report.passed_count == 1
