"""Issue 12 §2: how far to trust the judge. Human labels on samples, the judge's agreement
with them (accuracy, Cohen's kappa with its interval, the confusion matrix, the
disagreements), the judges' parse failures, re-asks and agreement, in every report format,
the CLI summary, an assertion and the CLI's gate."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import Cli, Result, cli, project
from rich.console import Console

import aeval
from aeval import (
    EvaluationReport,
    EvaluationSample,
    SampleLoadError,
    Samples,
    Scorer,
    assert_that,
    calibrate,
    merge_reports,
)
from aeval.formatters.json import report_from_json
from aeval.strategies import AiJudgeStrategy, ExactMatchStrategy
from aeval.testing import ChatCall, FakeChatModel, OpenAICompatibleServer, RecordedRequest, Reply

__all__ = ["cli", "project"]

pytestmark = pytest.mark.anyio

Z95 = 1.959963984540054

# (sample, human label, the judge's reply): the judge agrees on 7 of 10
CASES = [
    ("a", "pass", "true"),
    ("b", "pass", "true"),
    ("c", "pass", "true"),
    ("d", "pass", "true"),
    ("e", "pass", "false"),
    ("f", "fail", "false"),
    ("g", "fail", "false"),
    ("h", "fail", "false"),
    ("i", "fail", "true"),
    ("j", "fail", "true"),
]


def labelled() -> Samples:
    return Samples(
        EvaluationSample(name, [f"question {name}"], f"answer {name}", metadata={"label": label})
        for name, label, _ in CASES
    )


def by_question(call: ChatCall) -> str:
    prompt = call.messages[-1].content
    for name, _, reply in CASES:
        if f"answer {name}" in prompt:
            return reply
    raise AssertionError(prompt)


async def judged(*, name: str = "judge") -> EvaluationReport:
    strategy = AiJudgeStrategy(FakeChatModel(by_question, model="small"), name=name)
    return await Scorer(concurrency=4).evaluate(labelled(), lambda p: "an answer", strategy)


def cohens_kappa(table: Any) -> Any:
    """statsmodels' Cohen's kappa of a table (its results: kappa, std_kappa, kappa_low…)."""
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    numpy = pytest.importorskip("numpy")
    return inter_rater.cohens_kappa(numpy.array(table))


# --- labels in sample files ---------------------------------------------------------------


def test_labels_are_read_from_sample_files(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "- {name: a, parameters: [q], expected-output: x, label: PASS}\n"
        "- {name: b, parameters: [q], expected-output: x, label: false}\n"
        "- {name: c, parameters: [q], expected-output: x, label: 0.8}\n"
        "- {name: d, parameters: [q], expected-output: x}\n"
    )
    samples = Samples.load_sync(path)
    assert [s.metadata.get("label") for s in samples] == ["pass", "fail", 0.8, None]
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text('{"name": "a", "parameters": ["q"], "label": "fail"}\n')
    assert Samples.load_sync(jsonl)[0].metadata["label"] == "fail"


def test_a_label_that_is_not_a_verdict_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("- name: a\n  parameters: [q]\n  label: maybe\n")
    with pytest.raises(SampleLoadError) as caught:
        Samples.load_sync(path)
    assert str(caught.value) == (
        f"{path}:3, sample 'a': 'label' must be pass or fail (or a human score between 0 and "
        "1), got a string ('maybe'): write label: pass"
    )


# --- the calibration ----------------------------------------------------------------------


async def test_the_report_holds_the_judges_agreement_with_the_labels() -> None:
    report = await judged()
    calibration = calibrate(report)
    assert calibration == report.calibration["judge"]
    assert calibration.confusion == ((4, 1), (2, 3))
    assert (calibration.rows, calibration.accuracy) == (10, 0.7)
    expected = cohens_kappa([[4, 1], [2, 3]])
    assert calibration.kappa == pytest.approx(expected.kappa)
    assert [(d.sample, d.label, d.passed) for d in calibration.disagreements] == [
        ("e", True, False),
        ("i", False, True),
        ("j", False, True),
    ]
    assert calibration.describe().startswith(f"kappa {expected.kappa:.2f} [")
    assert calibration.describe().endswith("· accuracy 70.00% over 10 rows")


async def test_every_strategy_is_calibrated_and_calibrate_asks_which() -> None:
    strategy = AiJudgeStrategy(FakeChatModel(by_question), name="judge")
    report = await Scorer().evaluate(
        labelled(), lambda p: "answer a", strategy, ExactMatchStrategy()
    )
    assert list(report.calibration) == ["judge", "ExactMatchStrategy"]
    with pytest.raises(ValueError, match=r"several strategies have labelled rows \(judge, Exa"):
        calibrate(report)
    assert calibrate(report, strategy="ExactMatchStrategy").confusion == ((1, 4), (0, 5))
    with pytest.raises(ValueError, match="the strategy 'nope' has no labelled rows"):
        calibrate(report, strategy="nope")
    unlabelled = await Scorer().evaluate(
        [EvaluationSample("x", ["q"], "q")], lambda p: "q", ExactMatchStrategy()
    )
    with pytest.raises(ValueError, match="no evaluated sample has a label: add `label: pass`"):
        calibrate(unlabelled)


async def test_rows_without_a_verdict_are_counted_apart() -> None:
    replies = {"a": "true", "b": "hm"}

    def decide(call: ChatCall) -> str:
        return replies["a" if "answer a" in call.messages[0].content else "b"]

    samples = [EvaluationSample(n, ["q"], f"answer {n}", metadata={"label": "pass"}) for n in "ab"]
    report = await Scorer().evaluate(samples, lambda p: "x", AiJudgeStrategy(FakeChatModel(decide)))
    calibration = calibrate(report)
    assert (calibration.rows, calibration.unjudged, calibration.kappa) == (1, 1, None)
    assert calibration.describe() == (
        "kappa undefined (every label and every verdict is pass) · accuracy 100.00% over 1 rows"
    )


async def test_shards_merge_into_the_calibration_of_the_whole() -> None:
    whole = await judged()
    rows = list(whole.evaluations)
    names = {row.name for row in rows[:4]}
    merged = merge_reports(
        EvaluationReport([row for row in rows if row.name in names]),
        EvaluationReport([row for row in rows if row.name not in names]),
    )
    assert merged.calibration == whole.calibration
    assert merged.judge_statistics == whole.judge_statistics
    assert EvaluationReport(rows).calibration == whole.calibration


# --- judge statistics ---------------------------------------------------------------------


async def test_parse_failures_and_reasks_are_counted_per_judge() -> None:
    replies = iter(["true", "hm", "false", "what?", "?", "true"])
    model = FakeChatModel(lambda call: next(replies), model="small")
    samples = [EvaluationSample(n, ["q"], "x") for n in "abcd"]
    report = await Scorer().evaluate(samples, lambda p: "x", AiJudgeStrategy(model, name="j"))
    stats = report.judge_statistics["j"]
    counts = stats.judges["small"]
    assert (counts.verdicts, counts.unreadable, counts.reasked, counts.unscored) == (4, 2, 2, 1)
    assert (stats.parse_failure_rate, stats.reask_rate, stats.agreement) == (0.5, 0.5, None)
    properties = {
        p.get("name"): p.get("value")
        for p in ET.fromstring(report.format("junit").split("\n", 1)[1]).iter("property")
    }
    assert (properties["judge.j.parse_failure_rate"], properties["judge.j.reask_rate"]) == (
        "50.00",
        "50.00",
    )
    judges = orjson.loads(report.format("json"))["judges"]["j"]
    assert (judges["parseFailureRate"], judges["reaskRate"]) == (0.5, 0.5)


async def test_the_judges_agreement_is_counted_overall_and_per_judge() -> None:
    def panel(verdicts: str) -> list[FakeChatModel]:
        return [
            FakeChatModel(["true" if v == "t" else "false"] * 2, model=f"m{i}")
            for i, v in enumerate(verdicts)
        ]

    samples = [EvaluationSample(n, ["q"], "x") for n in "ab"]
    strategy = AiJudgeStrategy(panel("ttf"), name="panel")
    report = await Scorer().evaluate(samples, lambda p: "x", strategy)
    stats = report.judge_statistics["panel"]
    assert (stats.decided, stats.unanimous) == (2, 0)
    assert stats.agreement == pytest.approx(2 / 3)
    assert [c.agreement for c in stats.judges.values()] == [1.0, 1.0, 0.0]


# --- every format and the summary ---------------------------------------------------------


async def test_the_calibration_and_the_judges_are_in_every_format() -> None:
    report = await judged()
    markdown = report.format("markdown")
    assert "## Judge calibration: judge" in markdown
    assert "| Label pass | 4 | 1 |" in markdown and "| Label fail | 2 | 3 |" in markdown
    assert "**Disagreements**: 3." in markdown
    assert "## Judges" in markdown and "| judge | small | 10 | 0 (0.00%) |" in markdown
    html = report.format("html")
    assert "<h2>Judge calibration: judge</h2>" in html and "<h2>Judges</h2>" in html
    assert "Disagreements (3)" in html
    properties = {
        p.get("name"): p.get("value")
        for p in ET.fromstring(report.format("junit").split("\n", 1)[1]).iter("property")
    }
    kappa = calibrate(report).kappa
    assert kappa is not None
    assert properties["calibration.judge.kappa"] == f"{kappa:.4f}"
    assert properties["calibration.judge.accuracy"] == "70.00"
    assert properties["calibration.judge.disagreements"] == "3"
    assert properties["judge.judge.parse_failure_rate"] == "0.00"
    document = orjson.loads(report.format("json"))
    assert document["calibration"]["judge"]["kappa"] == pytest.approx(kappa)
    assert document["calibration"]["judge"]["falsePass"] == 2
    assert document["judges"]["judge"]["judges"]["small"]["verdicts"] == 10
    again = report_from_json(report.format("json"))
    assert again.calibration == report.calibration
    assert again.judge_statistics == report.judge_statistics


async def test_a_judge_that_never_varies_has_an_undefined_kappa_in_every_format() -> None:
    strategy = AiJudgeStrategy(FakeChatModel(lambda call: "true", model="small"), name="judge")
    report = await Scorer(concurrency=4).evaluate(labelled(), lambda p: "an answer", strategy)
    calibration = calibrate(report)
    assert calibration.confusion == ((5, 0), (5, 0))
    assert (calibration.kappa, calibration.kappa_interval()) == (None, None)
    reason = "every verdict is pass: agreement beyond chance needs both kinds"
    assert calibration.kappa_undefined == reason
    said = f"kappa undefined ({reason}) · accuracy 50.00% over 10 rows"
    assert calibration.describe() == said
    assert said in report.format("markdown")
    assert said in report.format("html")
    out = io.StringIO()
    report.print(Console(file=out, width=200, highlight=False))
    assert f"Judge calibration: judge: {said}" in out.getvalue()
    assert "[0.00, 0.00]" not in out.getvalue()
    document = orjson.loads(report.format("json"))["calibration"]["judge"]
    assert (document["kappa"], document["kappaInterval"]) == (None, None)
    assert document["kappaUndefined"] == reason
    properties = {
        p.get("name"): p.get("value")
        for p in ET.fromstring(report.format("junit").split("\n", 1)[1]).iter("property")
    }
    assert "calibration.judge.kappa" not in properties
    assert properties["calibration.judge.kappa_undefined"] == reason
    assert report_from_json(report.format("json")).calibration == report.calibration
    labels_alike = Samples(
        EvaluationSample(n, ["q"], f"answer {n}", metadata={"label": "fail"}) for n in "xy"
    )
    judge = AiJudgeStrategy(
        FakeChatModel(lambda call: "true" if "answer x" in call.messages[-1].content else "false")
    )
    mixed = calibrate(await Scorer().evaluate(labels_alike, lambda p: "a", judge))
    assert mixed.confusion == ((0, 0), (1, 1))
    assert mixed.kappa_undefined == (
        "every human label is fail: agreement beyond chance needs both kinds"
    )


async def test_a_report_of_a_run_without_labels_or_judges_is_unchanged() -> None:
    report = await Scorer().evaluate(
        [EvaluationSample("x", ["q"], "q")], lambda p: "q", ExactMatchStrategy()
    )
    document = orjson.loads(report.format("json"))
    assert "calibration" not in document and "judges" not in document
    assert "Judge calibration" not in report.format("markdown")


async def test_the_summary_shows_the_calibration_and_the_judges() -> None:
    report = await judged()
    out = io.StringIO()
    report.print(Console(file=out, width=200, highlight=False))
    text = out.getvalue()
    assert "Judge calibration: judge: kappa " in text
    assert "Disagreements (3): e, i, j" in text
    assert "Judges" in text and "parse failures" in text


async def test_the_judges_table_keeps_every_number_whole_at_80_columns() -> None:
    out = io.StringIO()
    (await judged()).print(Console(file=out, width=80, highlight=False))
    text = out.getvalue()
    assert "…" not in text
    assert re.search(
        r"\n  judge +small +10 +0 \(0\.00%\) +0 \(0\.00%\) +0 \(0\.00%\) +0 +0 +0 +— *\n", text
    ), text
    assert re.search(r"parse failures +re-asks +unscored +errors +cut off +salvaged", text)


# --- gating on kappa ----------------------------------------------------------------------


async def test_the_assertion_gates_on_kappa() -> None:
    report = await judged()
    kappa = calibrate(report).kappa
    assert kappa is not None
    assert_that(report).has_kappa_at_least(kappa - 0.01)
    with pytest.raises(AssertionError) as caught:
        assert_that(report).has_kappa_at_least(0.6, strategy="judge")
    assert str(caught.value).startswith(
        f"Expected kappa of judge against the human labels to be at least 0.60 but was kappa "
        f"{kappa:.2f} ["
    )
    assert str(caught.value).endswith("Disagreements: e, i, j")
    unlabelled = await Scorer().evaluate(
        [EvaluationSample("x", ["q"], "q")], lambda p: "q", ExactMatchStrategy()
    )
    with pytest.raises(AssertionError, match="Expected a judge calibration, but no evaluated"):
        assert_that(unlabelled).has_kappa_at_least(0.6)


def _labelled_project(directory: Path, min_kappa: float, base_url: str) -> Path:
    lines = []
    for name, label, _ in CASES:
        lines.append(
            f"- {{name: {name}, parameters: ['question {name}'], expected-output: 'answer "
            f"{name}', label: {label}}}"
        )
    (directory / "labelled.yaml").write_text("\n".join(lines) + "\n")
    config = directory / "aeval.yaml"
    config.write_text(
        "samples: labelled.yaml\n"
        "target: cli_targets:echo\n"
        "strategies:\n"
        "  - name: judge\n"
        f"    model: {{model: small, base_url: '{base_url}', max_concurrency: 1}}\n"
        "    max_tokens: 8\n"
        "    seed: 3\n"
        "    label: judge\n"
        f"thresholds: {{min_kappa: {min_kappa}}}\n"
        f"output: {{dir: out, formats: [markdown, json, junit, html]}}\n"
    )
    return config


def _scripted(request: RecordedRequest) -> Reply:
    prompt = str(request.messages[0]["content"])
    for name, _, reply in CASES:
        if f"answer {name}" in prompt:
            return Reply.text(reply)
    return Reply.text("?")


async def test_aeval_run_gates_on_min_kappa_and_prints_it(cli: Cli, project: Path) -> None:
    async with OpenAICompatibleServer(handler=_scripted) as server:
        config = _labelled_project(project, 0.6, server.base_url)
        missed = await _run(cli, config, project)
        bodies = [r.json for r in server.requests]
        config = _labelled_project(project, 0.3, server.base_url)
        met = await _run(cli, config, project, "--min-kappa", "0.35")
    kappa = cohens_kappa([[4, 1], [2, 3]]).kappa
    assert missed.returncode == 1, missed.stderr
    assert f"FAILED: kappa judge {kappa:.2f} < 0.60" in missed.stdout
    assert "Judge calibration: judge: kappa" in missed.stdout
    assert {(b["max_tokens"], b["seed"]) for b in bodies} == {(8, 3)}
    assert met.returncode == 0, met.stdout
    assert f"PASSED: kappa judge {kappa:.2f} >= 0.35" in met.stdout
    report = orjson.loads((project / "out" / "report.json").read_bytes())
    assert report["calibration"]["judge"]["rows"] == 10


async def _run(cli: Cli, config: Path, cwd: Path, *flags: str) -> Result:
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: cli("run", config, *flags, cwd=cwd))


async def test_min_kappa_without_labels_misses_the_gate(cli: Cli, project: Path) -> None:
    config = project / "aeval.yaml"
    config.write_text(
        "samples: samples.yaml\ntarget: cli_targets:echo\nstrategies: [{name: exact_match}]\n"
        "thresholds: {min_kappa: 0.5}\noutput: {dir: out}\n"
    )
    import anyio.to_thread

    result = await anyio.to_thread.run_sync(lambda: cli("run", config, cwd=project))
    assert result.returncode == 1
    assert "FAILED: kappa: no evaluated sample has a label (label: pass|fail)" in result.stdout


def test_calibrate_is_exported() -> None:
    assert aeval.calibrate is calibrate
