"""Not-applicable rows: a strategy whose expectation the sample does not state neither passes
nor fails, and the score is the mean over samples of passed / applicable rows (issue 34)."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _cli import Cli, cli
from _replay import replay, replayed

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    RunStore,
    Scorer,
    assert_that,
    compare,
    merge_reports,
)
from aeval.formatters.json import report_from_json

__all__ = ["cli"]


def _row(
    name: str,
    strategy: str,
    verdict: bool | None,
    *,
    index: int,
    position: int,
    repeat: int = 0,
    tags: tuple[str, ...] = (),
) -> EvaluationRow:
    """A row that passed (True), failed (False) or is not applicable (None)."""
    sample = EvaluationSample(name, ["q"], "a", tags=tags)
    if verdict is None:
        result = EvaluationResult.not_applicable("the sample states no expected-calls")
    else:
        result = EvaluationResult.from_boolean(verdict)
    return EvaluationRow.from_result(
        sample, strategy, "out", result, index=index, position=position, repeat=repeat
    )


def _hand_rows() -> list[EvaluationRow]:
    """Three samples, two strategies (answer, tools):

    - a: answer passed, tools failed           -> 1/2 = 0.5
    - b: answer passed, tools not applicable   -> 1/1 = 1.0
    - c: answer not applicable, tools n/a      -> no applicable row: left out
    The score is mean(0.5, 1.0) = 75 %; passed / applicable rows would say 2/3 = 66.67 %.
    """
    return [
        _row("a", "answer", True, index=0, position=0, tags=("x",)),
        _row("a", "tools", False, index=0, position=1, tags=("x",)),
        _row("b", "answer", True, index=1, position=0, tags=("x", "y")),
        _row("b", "tools", None, index=1, position=1, tags=("x", "y")),
        _row("c", "answer", None, index=2, position=0, tags=("y",)),
        _row("c", "tools", None, index=2, position=1, tags=("y",)),
    ]


class TestResult:
    def test_a_not_applicable_result_makes_a_not_applicable_row(self) -> None:
        row = _row("b", "tools", None, index=0, position=0)
        assert row.outcome is Outcome.NOT_APPLICABLE
        assert row.outcome.value == "not_applicable"
        assert row.score is None and not row.passed
        assert row.explanation == "the sample states no expected-calls"

    def test_it_neither_passes_nor_has_a_score(self) -> None:
        result = EvaluationResult.not_applicable("no relevant-ids")
        assert result.inapplicable and not result.is_unscored and not result.skipped
        with pytest.raises(ValueError, match="not-applicable"):
            EvaluationResult(False, 0.5, "x", inapplicable=True)
        assert result.with_metadata({"k": 1}).inapplicable

    def test_the_row_codec_keeps_the_outcome(self) -> None:
        row = _row("b", "tools", None, index=0, position=0)
        back = EvaluationRow.from_dict(json.loads(json.dumps(row.to_dict())))
        assert back.outcome is Outcome.NOT_APPLICABLE
        assert back.explanation == row.explanation


class TestScoreRule:
    def test_hand_computed_numbers(self) -> None:
        report = EvaluationReport(_hand_rows())
        assert report.score == pytest.approx(75.0)
        assert report.evaluation_count == 6
        assert report.passed_count == 2
        assert report.failed_count == 1
        assert report.not_applicable_count == 3
        assert report.not_passed_count == 1
        assert report.applicable_count == 3
        assert report.inapplicable_sample_count == 1
        assert [r.name for r in report.failures] == ["a"]
        strategies = report.strategy_statistics
        # answer: a passed, b passed, c n/a -> 2/2; tools: a failed, b and c n/a -> 0/1
        assert strategies["answer"].score == pytest.approx(100.0)
        assert strategies["answer"].not_applicable == 1
        assert strategies["tools"].score == pytest.approx(0.0)
        assert strategies["tools"].not_applicable == 2
        # tag x: samples a (0.5) and b (1.0) -> 75 %; tag y: b (1.0), c left out -> 100 %
        assert report.score_for_tag("x") == pytest.approx(75.0)
        assert report.score_for_tag("y") == pytest.approx(100.0)
        assert report.tag_statistics["y"].not_applicable == 3

    def test_a_scorer_run_gives_the_same_numbers(self) -> None:
        report = replayed(_hand_rows())
        assert [r.outcome for r in report.evaluations] == [r.outcome for r in _hand_rows()]
        assert report.score == pytest.approx(75.0)
        assert report.strategy_scores == pytest.approx({"answer": 100.0, "tools": 0.0})
        assert report.tag_scores == pytest.approx({"x": 75.0, "y": 100.0})

    def test_one_row_per_sample_leaves_the_not_applicable_samples_out(self) -> None:
        rows = [
            _row("a", "tools", True, index=0, position=0),
            _row("b", "tools", None, index=1, position=0),
            _row("c", "tools", False, index=2, position=0),
            _row("d", "tools", None, index=3, position=0),
        ]
        report = replayed(rows)
        assert report.score == pytest.approx(50.0)
        assert report.moments.clusters == 2
        assert (
            report.confidence_interval()
            == EvaluationReport([rows[0], rows[2]]).confidence_interval()
        )

    def test_repeats_of_a_not_applicable_pair_are_no_pass_at_k(self) -> None:
        rows = [
            _row(name, "tools", verdict, index=i, position=0, repeat=r)
            for i, (name, verdict) in enumerate([("a", True), ("b", None)])
            for r in range(2)
        ]
        report = EvaluationReport(rows)
        stats = report.repeat_statistics
        assert stats is not None and stats.pairs == 1
        assert stats.pass_at_k[1] == pytest.approx(1.0)
        assert report.score == pytest.approx(100.0)

    def test_without_not_applicable_rows_the_score_is_todays_exactly(self) -> None:
        rows = [
            _row(name, s, verdict, index=i, position=p)
            for i, (name, verdicts) in enumerate([("a", (True, False)), ("b", (True, True))])
            for p, (s, verdict) in enumerate(zip(("x", "y"), verdicts, strict=True))
        ]
        rows.append(_row("c", "x", False, index=2, position=0))
        report = EvaluationReport(rows)
        assert report.score == 100.0 * 3 / 5
        assert report.not_applicable_count == 0

    def test_merged_shards_give_the_same_numbers(self) -> None:
        rows = _hand_rows()
        merged = merge_reports(EvaluationReport(rows[:2]), EvaluationReport(rows[2:]))
        assert merged.score == pytest.approx(75.0)
        assert merged.not_applicable_count == 3

    def test_a_run_that_keeps_no_rows_counts_alike(self) -> None:
        rows = [
            *_hand_rows(),
            _row("d", "answer", True, index=3, position=0, tags=("t",)),
            _row("d", "tools", False, index=3, position=1, tags=("t",)),
        ]
        counted, kept = replayed(rows, keep="none"), replayed(rows)
        assert not counted.evaluations
        assert counted.strategy_statistics == kept.strategy_statistics
        assert counted.tag_statistics == kept.tag_statistics


class TestGates:
    def test_all_passed_and_score_assertions_leave_not_applicable_rows_out(self) -> None:
        rows = [r for r in _hand_rows() if r.outcome is not Outcome.FAILED]
        report = EvaluationReport(rows)
        assert_that(report).has_all_passed().has_score(100.0).has_passed_for_tag("y")

    def test_the_cli_gate_reads_the_same_score(self, tmp_path: Path, cli: Cli) -> None:
        rows = tmp_path / "rows.jsonl"
        rows.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in _hand_rows()))
        config = tmp_path / "aeval.yaml"
        config.write_text(
            "samples: s.jsonl\ntarget: m:f\nstrategies: [{name: exact_match}]\n"
            "thresholds: {min_score: 75, tag_min_scores: {y: 100}}\n"
        )
        met = cli("merge", rows, "--config", config, "--output", tmp_path / "met")
        assert met.returncode == 0, met.stdout + met.stderr
        assert "PASSED: score 75.00% >= 75.00%; tag y 100.00% >= 100.00%" in met.stdout
        missed = cli("merge", rows, "--min-score", "75.01", "--output", tmp_path / "missed")
        assert missed.returncode == 1, missed.stdout + missed.stderr
        assert "FAILED: score 75.00% < 75.01%" in missed.stdout


class TestFormats:
    def test_json_counts_them_and_reads_them_back(self) -> None:
        report = EvaluationReport(_hand_rows())
        document = json.loads(report.format("json"))
        assert document["notApplicable"] == 3
        assert document["notApplicableSamples"] == 1
        assert document["globalScore"] == 75.0
        assert document["strategies"]["tools"]["notApplicable"] == 2
        assert document["tags"]["y"]["notApplicable"] == 3
        back = report_from_json(json.dumps(document))
        assert back.score == pytest.approx(75.0)
        assert back.not_applicable_count == 3
        assert back.strategy_scores == pytest.approx(report.strategy_scores)
        assert back.tag_scores == pytest.approx(report.tag_scores)

    def test_junit_writes_them_as_skipped_with_the_reason(self) -> None:
        root = ET.fromstring(EvaluationReport(_hand_rows()).format("junit"))
        suite = root.find("testsuite")
        assert suite is not None
        assert suite.get("failures") == "1" and suite.get("skipped") == "3"
        skipped = [case.find("skipped") for case in suite.iter("testcase")]
        messages = [s.get("message") for s in skipped if s is not None]
        assert messages == ["not applicable: the sample states no expected-calls"] * 3
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert properties["not_applicable"] == "3"
        assert properties["score"] == "75.00"

    def test_markdown_shows_the_count_and_the_rows(self) -> None:
        text = EvaluationReport(_hand_rows()).format("markdown")
        assert "**Global Score**: 75.00%" in text
        assert (
            "**Not applicable**: 3 rows, left out of the score (1 sample has no applicable row)"
            in text
        )
        assert "NOT APPLICABLE (left out of the score)" in text
        assert "| Not applicable |" in text

    def test_html_shows_the_count_and_a_filter(self) -> None:
        page = EvaluationReport(_hand_rows()).format("html")
        assert "Not applicable: <strong>3</strong>" in page
        assert 'data-filter="not_applicable"' in page
        assert "Not passed (1)" in page

    def test_html_of_a_report_without_them_has_no_such_filter(self) -> None:
        page = EvaluationReport(_hand_rows()[:2]).format("html")
        assert 'data-filter="not_applicable"' not in page

    def test_the_terminal_shows_them(self) -> None:
        import io

        from rich.console import Console

        out = io.StringIO()
        EvaluationReport(_hand_rows()).print(Console(file=out, width=140, color_system=None))
        text = out.getvalue()
        assert "3 not applicable" in text
        assert "75.00%" in text


class TestStoreAndCompare:
    def test_a_stored_run_reads_back_with_the_same_numbers(self, tmp_path: Path) -> None:
        report = EvaluationReport(_hand_rows())

        async def main() -> None:
            async with RunStore(tmp_path / "runs.db") as store:
                run_id = await store.save(report, name="na")
                loaded = await store.load(run_id)
                assert loaded.score == pytest.approx(75.0)
                assert loaded.not_applicable_count == 3
                [summary] = await store.runs(name="na")
                assert summary.score == pytest.approx(75.0)
                assert summary.not_applicable == 3
                [point] = await store.history("na")
                assert point.score == pytest.approx(75.0)

        asyncio.run(main())

    def test_a_run_stored_row_by_row_is_summarised_by_the_same_rule(self, tmp_path: Path) -> None:
        samples, target, strategies, _ = replay(_hand_rows())

        async def main() -> None:
            async with RunStore(tmp_path / "runs.db") as store:
                sink = store.sink("streamed", batch=1, interval=0)
                report = await Scorer(sinks=[sink]).evaluate(samples, target, *strategies)
                await store.save(report, name="saved")
                for name in ("streamed", "saved"):
                    [summary] = await store.runs(name=name)
                    assert summary.score == pytest.approx(75.0)
                    assert summary.not_applicable == 3
                    for tag, score in (("x", 75.0), ("y", 100.0)):
                        [point] = await store.history(name, tag=tag)
                        assert point.score == pytest.approx(score)
                    for strategy, score in (("answer", 100.0), ("tools", 0.0)):
                        [point] = await store.history(name, strategy=strategy)
                        assert point.score == pytest.approx(score)

        asyncio.run(main())

    def test_compare_leaves_the_pairs_out_that_do_not_apply(self) -> None:
        baseline = EvaluationReport(_hand_rows())
        changed = _hand_rows()
        changed[1] = _row("a", "tools", True, index=0, position=1, tags=("x",))
        candidate = EvaluationReport(changed)
        comparison = asyncio.run(compare(baseline, candidate))
        assert comparison.baseline_score == pytest.approx(75.0)
        assert comparison.candidate_score == pytest.approx(100.0)
        assert comparison.difference == pytest.approx(25.0)
        assert [p.key.sample for p in comparison.fixes] == ["a"]
        assert comparison.pairs == 3
        assert any("not applicable" in warning for warning in comparison.warnings)
        assert set(comparison.strategy_comparisons) == {"answer", "tools"}


class TestThroughTheScorer:
    async def _run(self) -> EvaluationReport:
        from aeval import Scorer, tool
        from aeval.strategies import ExactMatchStrategy, ToolCallsStrategy

        @tool
        async def lookup(city: str) -> str:
            return f"sunny in {city}"

        async def agent(question: str) -> str:
            if question.startswith("weather"):
                return await lookup(question.split()[-1])
            return "hello"

        samples = [
            EvaluationSample(
                f"weather {i}",
                [f"weather in City{i}"],
                f"sunny in City{i}",
                metadata={
                    "expected_calls": [{"name": "lookup", "arguments": {"city": f"City{i}"}}]
                },
            )
            for i in range(3)
        ] + [EvaluationSample(f"greeting {i}", ["hi"], "hello") for i in range(3)]
        return await Scorer().evaluate(samples, agent, ExactMatchStrategy(), ToolCallsStrategy())

    def test_half_the_samples_without_expected_calls_reach_100_percent(self) -> None:
        report = asyncio.run(self._run())
        assert report.score == 100.0
        assert report.not_applicable_count == 3
        assert report.strategy_scores == {"ExactMatchStrategy": 100.0, "ToolCallsStrategy": 100.0}
        assert_that(report).has_all_passed().has_score_greater_than_or_equal_to(100)
        rows = [r for r in report.evaluations if r.outcome is Outcome.NOT_APPLICABLE]
        assert {r.name for r in rows} == {"greeting 0", "greeting 1", "greeting 2"}
        assert all("states no expected-calls" in (r.explanation or "") for r in rows)
