"""Comparing two runs: the sides, the alignment, the lists, the verdict and the gates."""

from __future__ import annotations

from pathlib import Path

import pytest
from _compare import binary_run, rows_for, run

import aeval
from aeval import (
    Comparison,
    ComparisonError,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    RunInfo,
    Samples,
    Scorer,
    compare,
)

pytestmark = pytest.mark.anyio


def forty(passed: int, *, offset: int = 0) -> EvaluationReport:
    """40 samples, one row each, ``passed`` of them passing from ``offset`` on (cyclic)."""
    return binary_run([(i - offset) % 40 < passed for i in range(40)])


# -- alignment ------------------------------------------------------------------------------


def test_pairs_on_one_side_only_are_counted_listed_and_not_compared() -> None:
    baseline = run({"a": {"x": "P", "y": "P"}, "b": {"x": "P"}, "gone": {"x": "P"}})
    candidate = run({"a": {"x": "F"}, "b": {"x": "P", "z": "F"}, "new": {"x": "F"}})
    comparison = Comparison.of(baseline, candidate)
    assert [(k.sample, k.strategy) for k in comparison.only_in_baseline] == [
        ("a", "y"),
        ("gone", "x"),
    ]
    assert [str(k) for k in comparison.only_in_candidate] == ["b [z]", "new [x]"]
    assert (comparison.samples, comparison.pairs) == (2, 2)
    assert (comparison.baseline_score, comparison.candidate_score) == (100.0, 50.0)
    assert [str(p.key) for p in comparison.regressions] == ["a [x]"]


def test_runs_that_share_nothing_cannot_be_compared() -> None:
    with pytest.raises(ComparisonError, match="share no \\(sample, strategy\\) pair") as caught:
        Comparison.of(run({"a": {"x": "P"}}), run({"b": {"x": "P"}, "c": {"y": "F"}}))
    assert "the baseline has 'a [x]'" in str(caught.value)
    assert "the candidate has 'b [x]', 'c [y]'" in str(caught.value)


def test_two_different_samples_under_one_name_is_an_error_naming_them() -> None:
    rows = rows_for({"q1": {"x": "P"}, "q2": {"x": "P"}, "q3": {"x": "F"}})
    twin = EvaluationSample("q1", ["another question"], "another answer")
    rows.append(EvaluationRow.from_result(twin, "x", "o", EvaluationResult.passing(), index=3))
    with pytest.raises(ComparisonError) as caught:
        Comparison.of(EvaluationReport(rows), run({"q1": {"x": "P"}}))
    message = str(caught.value)
    assert message.startswith("the baseline (baseline report) has different samples under one")
    assert "'q1' (2 different samples, at positions 1, 4)" in message
    assert "give each sample a unique name" in message
    assert caught.value.side == "baseline"


def test_the_same_sample_met_twice_in_one_run_is_one_sample() -> None:
    # a pytest suite whose two tests evaluate one dataset: the rows join as repeats
    rows = rows_for({"q": {"x": "P"}}) + rows_for({"q": {"x": "F"}})
    comparison = Comparison.of(EvaluationReport(rows), run({"q": {"x": "P"}}))
    assert comparison.samples == 1
    assert comparison.baseline_score == 50.0
    assert comparison.fixes[0].verdict_on("baseline") == "1/2 passed"


def test_new_errors_and_newly_unscored_pairs_are_listed_with_both_sides() -> None:
    baseline = run({"a": {"x": "P"}, "b": {"x": "P"}, "c": {"x": "E"}, "d": {"x": "F"}})
    candidate = run(
        {"a": {"x": "E"}, "b": {"x": "U"}, "c": {"x": "E"}, "d": {"x": "P"}},
        outputs={"a": "boom", "d": "fixed"},
    )
    comparison = Comparison.of(baseline, candidate)
    assert [p.sample for p in comparison.new_errors] == ["a"]
    assert [p.sample for p in comparison.newly_unscored] == ["b"]
    assert [p.sample for p in comparison.regressions] == ["a", "b"]
    [fix] = comparison.fixes
    assert (fix.baseline_output, fix.candidate_output) == ("answer d", "fixed")
    assert fix.describe() == "d [x]: failed → passed"
    assert comparison.new_errors[0].candidate[0].error is not None


def test_tags_and_strategies_each_get_a_comparison() -> None:
    tags = {"a": ["smoke"], "b": ["smoke", "faq"], "c": ["faq"]}
    baseline = run({k: {"x": "P", "y": "F"} for k in tags}, tags=tags)
    candidate = run({k: {"x": "F", "y": "F"} for k in tags}, tags=tags)
    comparison = Comparison.of(baseline, candidate)
    assert comparison.tags == ("smoke", "faq")
    assert comparison.strategies == ("x", "y")
    smoke = comparison.for_tag("smoke")
    assert (smoke.scope, smoke.samples, smoke.pairs) == ("tag smoke", 2, 4)
    assert comparison.for_strategy("x").difference == -100.0
    assert comparison.for_strategy("y").difference == 0.0
    with pytest.raises(KeyError, match="no aligned pair has the tag 'nope'; the tags compared: "):
        comparison.for_tag("nope")
    with pytest.raises(KeyError, match="'x', 'y'"):
        comparison.for_strategy("z")


def test_a_tag_on_either_side_counts() -> None:
    baseline = run({"a": {"x": "P"}, "b": {"x": "P"}}, tags={"a": ["old"]})
    candidate = run({"a": {"x": "P"}, "b": {"x": "F"}}, tags={"b": ["new"]})
    comparison = Comparison.of(baseline, candidate)
    assert comparison.tags == ("old", "new")
    assert comparison.for_tag("new").regressions[0].sample == "b"


# -- the verdict and the gates ----------------------------------------------------------------


def test_the_verdict_in_words() -> None:
    assert Comparison.of(forty(20), forty(38)).verdict == "better"
    worse = Comparison.of(forty(38), forty(20))
    assert worse.verdict == "worse"
    assert Comparison.of(forty(30), forty(32)).verdict == "no significant difference"
    assert worse.describe().startswith("95.00% → 50.00%: -45.00 points (95% CI -")
    assert worse.describe().endswith("p < 0.001 (exact McNemar test): worse")


def test_a_regression_must_be_significant_and_beyond_the_margin() -> None:
    comparison = Comparison.of(forty(38), forty(20))
    assert comparison.is_significant_regression()
    assert comparison.is_significant_regression(margin=40)
    assert not comparison.is_significant_regression(margin=45)
    assert comparison.significant_regressions() == (comparison,)
    noise = Comparison.of(forty(30), forty(27))
    assert noise.difference == -7.5 and not noise.is_significant_regression()


def test_non_inferiority_needs_the_whole_interval_above_minus_the_margin() -> None:
    comparison = Comparison.of(forty(30), forty(30, offset=3))
    low, high = comparison.interval
    assert comparison.difference == 0.0 and low < 0 < high
    assert comparison.is_non_inferior(-low + 0.01)
    assert not comparison.is_non_inferior(-low - 0.01)


def test_a_tag_regression_is_caught_when_the_overall_is_not() -> None:
    tags = {f"s{i}": ["risky"] if i < 12 else ["safe"] for i in range(60)}
    before = {f"s{i}": {"x": "P" if i < 12 or i % 2 else "F"} for i in range(60)}
    after = {f"s{i}": {"x": "F" if i < 12 else "P"} for i in range(60)}
    comparison = Comparison.of(run(before, tags=tags), run(after, tags=tags))
    assert comparison.verdict == "no significant difference"
    [regression] = comparison.significant_regressions()
    assert regression.scope == "tag risky"
    assert comparison.for_tag("safe").verdict == "better"


def test_the_confidence_is_checked_and_changes_significance() -> None:
    base, cand = forty(30), forty(23)
    assert Comparison.of(base, cand, confidence=0.9).verdict == "worse"
    assert Comparison.of(base, cand, confidence=0.99).verdict == "no significant difference"
    with pytest.raises(ValueError, match="between 0 and 1"):
        Comparison.of(base, cand, confidence=95)


# -- the sides ----------------------------------------------------------------------------------


async def test_a_side_can_be_a_report_a_rows_jsonl_or_a_report_json(tmp_path: Path) -> None:
    samples = Samples(EvaluationSample(f"q{i}", [str(i)], str(i % 3)) for i in range(12))

    def exact(sample: EvaluationSample, output: object) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == sample.expected_output)

    async def echo(text: str) -> str:
        return text

    async with Scorer(sinks=[JsonlSink(tmp_path / "rows.jsonl")]) as scorer:
        report = await scorer.evaluate(samples, echo, exact)
    await report.save(tmp_path, formats=["json"])
    from_rows = await compare(report, tmp_path / "rows.jsonl")
    from_json = await compare(str(tmp_path / "report.json"), report)
    assert from_rows.difference == from_json.difference == 0.0
    assert from_rows.candidate_label == str(tmp_path / "rows.jsonl")
    assert from_json.baseline_label == str(tmp_path / "report.json")
    assert (from_rows.samples, from_rows.pairs) == (12, 12)


def test_compare_sync_compares_from_plain_code(tmp_path: Path) -> None:
    baseline, candidate = forty(30), forty(20)
    comparison = aeval.compare_sync(baseline, candidate, confidence=0.9)
    expected = Comparison.of(baseline, candidate, confidence=0.9)
    assert (comparison.difference, comparison.interval, comparison.verdict) == (
        expected.difference,
        expected.interval,
        expected.verdict,
    )
    with pytest.raises(ComparisonError, match="candidate"):
        aeval.compare_sync(baseline, tmp_path / "nope" / "rows.jsonl")


async def test_compare_sync_refuses_inside_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match=r"inside a running asyncio event loop.*await aeval"):
        aeval.compare_sync(forty(3), forty(4))


async def test_a_report_json_without_every_row_is_refused_saying_why(tmp_path: Path) -> None:
    async with Scorer(keep="failures") as scorer:
        report = await scorer.evaluate(
            Samples(EvaluationSample(f"q{i}", [str(i)], "1") for i in range(4)),
            lambda params: str(params[0]),
            lambda sample, output: EvaluationResult.from_boolean(output == "1"),
        )
    path = await report.save_as(tmp_path / "report.json")
    with pytest.raises(ComparisonError) as caught:
        await compare(path, report)
    message = str(caught.value)
    assert message.startswith(f"the baseline ({path}) holds 3 of its 4 rows")
    assert "compare the run's rows.jsonl" in message
    with pytest.raises(ComparisonError, match="the candidate \\(candidate report\\) holds 3"):
        Comparison.of(forty(3), report)


async def test_a_missing_or_bad_file_names_the_side_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ComparisonError) as caught:
        await compare(tmp_path / "nope" / "rows.jsonl", forty(3))
    assert str(caught.value) == (
        f"the baseline file {tmp_path / 'nope' / 'rows.jsonl'} does not exist: give the path of "
        "a run's rows.jsonl or report.json (aeval run writes both into its output directory)"
    )
    with pytest.raises(ComparisonError, match=r"pass store=aeval\.RunStore\(path\)"):
        await compare(forty(3), "latest")
    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"name": "q"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ComparisonError, match=f"the candidate {bad}: .*rows.jsonl:1"):
        await compare(forty(3), bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ComparisonError, match="holds no rows"):
        await compare(empty, forty(3))
    broken = tmp_path / "report.json"
    broken.write_text("{}", encoding="utf-8")
    with pytest.raises(ComparisonError, match=r"the baseline .*report\.json: not a report\.json"):
        await compare(broken, forty(3))
    with pytest.raises(TypeError, match="the candidate must be an EvaluationReport"):
        await compare(forty(3), 42)  # type: ignore[arg-type]


class FakeStore:
    """Anything with ``async load(ref)`` serves stored runs (``aeval.RunStore`` does)."""

    def __init__(self, runs: dict[str, EvaluationReport]) -> None:
        self.runs = runs

    async def load(self, ref: str) -> EvaluationReport:
        if ref not in self.runs:
            raise KeyError(f"no run {ref!r} in the store")
        return self.runs[ref]


async def test_refs_that_are_not_files_are_loaded_from_the_store() -> None:
    store = FakeStore({"latest~1": forty(30), "latest": forty(10)})
    comparison = await compare("latest~1", "latest", store=store)
    assert comparison.verdict == "worse"
    assert (comparison.baseline_label, comparison.candidate_label) == (
        "run latest~1",
        "run latest",
    )
    with pytest.raises(ComparisonError) as caught:
        await compare("latest", "main@latest", store=store)
    assert str(caught.value) == (
        "the candidate 'main@latest' is not a file, and the run store cannot load it: "
        "\"no run 'main@latest' in the store\""
    )


def test_warnings_say_when_a_side_is_partial_or_the_dataset_changed() -> None:
    partial = EvaluationReport(
        rows_for({"a": {"x": "P"}, "b": {"x": "P"}}),
        run=RunInfo(complete=False, samples_expected=5),
    )
    changed = run({"a": {"x": "P"}, "b": {"x": "P"}}, expected={"b": "another answer"})
    comparison = Comparison.of(partial, changed)
    assert comparison.warnings == (
        "the baseline (baseline report) is a partial run (run stopped after 2 of 5 samples): "
        "only the samples it evaluated are compared",
        "1 of the 2 aligned samples have other parameters or another expected output in the "
        "candidate ('b'): the difference measures the change of dataset too",
    )
