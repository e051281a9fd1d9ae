"""Gated strategies (issue 13 §1): the expensive check runs only when the cheap ones passed,
in the Scorer, the builder, the pytest plugin and ``aeval run``; and per-sample text checks."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import orjson
import pytest
from _cli import Cli, cli, fresh_imports, project, rows_of, write_config
from test_pytest_plugin import (
    project as plugin_project,
    write_test,
)

import aeval
from aeval import (
    EvaluationResult,
    EvaluationSample,
    Outcome,
    Parameters,
    Samples,
    Scorer,
)
from aeval.strategies import ContainsStrategy, GatedStrategy, NotBlankStrategy, RegexStrategy

__all__ = ["cli", "fresh_imports", "plugin_project", "project"]

pytestmark = pytest.mark.anyio
pytest_plugins = ("pytester",)


class CountingJudge:
    """A stand-in for an expensive strategy that counts its calls."""

    name = "judge"

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def evaluate(self, sample: EvaluationSample, output: object) -> EvaluationResult:
        self.calls.append(sample.name)
        return EvaluationResult.passing(0.9, "looks right")


SAMPLES = Samples(
    [
        EvaluationSample("good", ["Paris is the capital."], "Paris"),
        EvaluationSample("blank", ["   "], "Paris"),
        EvaluationSample("off topic", ["Lyon, surely."], "Paris"),
    ]
)


async def echo(params: Parameters) -> str:
    return str(params[0])


async def test_a_failed_check_skips_the_strategy_with_a_row_that_says_why() -> None:
    judge = CountingJudge()
    gated = GatedStrategy(judge, after=[NotBlankStrategy(), ContainsStrategy("Paris")])
    report = await Scorer().evaluate(SAMPLES, echo, gated)
    assert judge.calls == ["good"]
    good, blank, off = report.evaluations
    assert (good.outcome, good.score, good.metadata["gate"]) == (Outcome.PASSED, 0.9, "passed")
    assert blank.outcome is Outcome.SKIPPED and blank.score is None
    assert blank.explanation is not None
    assert blank.explanation.startswith("not run: the check NotBlankStrategy did not pass (")
    assert blank.metadata == {"gate": "NotBlankStrategy", "gate_passed": False}
    assert off.outcome is Outcome.SKIPPED
    assert off.explanation is not None and "ContainsStrategy" in off.explanation
    # every sample weighs the same: the skipped rows count, as not passed, and apart
    assert (report.evaluation_count, report.passed_count, report.skipped_count) == (3, 1, 2)
    assert report.score == pytest.approx(100 / 3)
    assert report.strategy_statistics["judge"].skipped == 2
    junit = report.format("junit")
    assert junit.count("<skipped") == 2
    assert orjson.loads(report.format("json"))["skipped"] == 2


async def test_the_gate_passes_an_unscored_check_as_closed() -> None:
    def unsure(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.unscored("cannot tell")

    judge = CountingJudge()
    report = await Scorer().evaluate(SAMPLES[:1], echo, GatedStrategy(judge, after=[unsure]))
    (row,) = report.evaluations
    assert (row.outcome, judge.calls) == (Outcome.SKIPPED, [])
    assert row.explanation == "not run: the check unsure did not pass (cannot tell)"


async def test_a_check_that_raises_is_an_error_row_naming_it() -> None:
    def broken(sample: EvaluationSample, output: object) -> EvaluationResult:
        raise RuntimeError("regex engine on fire")

    report = await Scorer().evaluate(
        SAMPLES[:1], echo, GatedStrategy(CountingJudge(), after=[broken])
    )
    (row,) = report.evaluations
    assert row.outcome is Outcome.ERROR
    assert row.error is not None and row.error.message == "regex engine on fire"


def test_gated_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="at least one check"):
        GatedStrategy(CountingJudge(), after=[])
    with pytest.raises(TypeError, match="a list of strategies"):
        GatedStrategy(CountingJudge(), after=NotBlankStrategy())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an instance"):
        GatedStrategy(NotBlankStrategy, after=[NotBlankStrategy()])
    gated = GatedStrategy(RegexStrategy("x"), after=[NotBlankStrategy()], name="regex if any")
    assert gated.name == "regex if any"
    assert repr(gated) == (
        "Gated(strategy='RegexStrategy', after=['NotBlankStrategy'], name='regex if any')"
    )


@pytest.mark.filterwarnings("ignore:aeval.Evaluation is deprecated:DeprecationWarning")
async def test_the_builder_runs_gated_strategies() -> None:
    judge = CountingJudge()
    runner = (
        aeval.Evaluation.builder()
        .with_samples(SAMPLES)
        .evaluate(echo)
        .using(NotBlankStrategy())
        .using(GatedStrategy(judge, after=[NotBlankStrategy()]))
        .build()
    )
    report = await runner.run()
    assert judge.calls == ["good", "off topic"]
    assert report.skipped_count == 1


def test_the_pytest_plugin_runs_gated_strategies(plugin_project: pytest.Pytester) -> None:
    write_test(
        plugin_project,
        """
        from aeval.pytest_plugin import evaluation_test
        from aeval.strategies import ExactMatchStrategy, GatedStrategy, RegexStrategy

        @evaluation_test(
            samples="samples.yaml",
            function="bot",
            strategies=[GatedStrategy(ExactMatchStrategy(), after=[RegexStrategy("^[AB]$")])],
            min_score=70,
        )
        def test_gated():
            pass
        """,
    )
    result = plugin_project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "Expected evaluation score to be greater than or equal to 70.00% but was 66.67%",
            "*three [[]ExactMatchStrategy[]]:*",
            "*reason   = not run: the check RegexStrategy did not pass (*",
        ]
    )


def test_aeval_run_reads_gated_strategies_from_the_config(cli: Cli, project: Path) -> None:
    (project / "gate.yaml").write_text(
        textwrap.dedent(
            """
            - name: hello
              parameters: ["hello"]
              expected-output: "hello"
            - name: blank
              parameters: [""]
              expected-output: "x"
            """
        )
    )
    config = write_config(
        project,
        "samples: gate.yaml\ntarget: cli_targets:echo\n"
        "strategies:\n"
        "  - name: gated\n"
        "    label: exact if not blank\n"
        "    strategy: {name: exact_match}\n"
        "    after: [{name: not_blank}, {name: regex, pattern: '^h'}]\n"
        "output: {dir: out}\n",
    )
    result = cli("run", config)
    assert result.returncode == 0, result.stderr
    rows = rows_of(project / "out" / "rows.jsonl")
    assert [(r["name"], r["strategy"], r["outcome"]) for r in rows] == [
        ("hello", "exact if not blank", "passed"),
        ("blank", "exact if not blank", "skipped"),
    ]
    report = json.loads((project / "out" / "report.json").read_text())
    assert report["strategies"]["exact if not blank"]["skipped"] == 1


def test_a_gated_entry_without_checks_is_a_config_error(cli: Cli, project: Path) -> None:
    config = write_config(
        project,
        "samples: samples.yaml\ntarget: cli_targets:echo\n"
        "strategies:\n  - {name: gated, strategy: {name: exact_match}, after: []}\n",
    )
    result = cli("run", config)
    assert result.returncode == 2
    assert "strategies[0].after" in result.stderr


async def test_per_sample_text_checks_from_a_file_are_read_by_contains(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        textwrap.dedent(
            """
            - name: refund
              parameters: ["How do I get a refund?"]
              must-contain: ["30 days", "receipt"]
              must-not-contain: "sorry"
            - name: hours
              parameters: ["When are you open?"]
              must-contain: "9am"
            """
        )
    )
    samples = await Samples.load(path)
    assert samples[0].metadata["must_contain"] == ["30 days", "receipt"]
    assert samples[0].expected_output is None

    async def bot(question: str) -> str:
        if "refund" in question:
            return "Sorry, refunds need a receipt within 30 days."
        return "We open at 9am."

    report = await Scorer().evaluate(samples, bot, ContainsStrategy(case_sensitive=False))
    refund, hours = report.evaluations
    assert refund.outcome is Outcome.FAILED
    assert refund.explanation == "Found 1 of 1 forbidden text: 'sorry'"
    assert hours.outcome is Outcome.PASSED


async def test_per_sample_text_checks_must_be_texts(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- name: x\n  parameters: []\n  must-contain: [1, 2]\n")
    with pytest.raises(ValueError, match=r"bad.yaml:3, sample 'x': 'must-contain' must be a text"):
        await Samples.load(path)
