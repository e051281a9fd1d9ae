from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

import pytest
from _replay import replayed

import aeval
from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    RunInfo,
    Scorer,
    merge_reports,
)


def row(
    name: str,
    passed: bool | None,
    *,
    strategy: str | None = "s1",
    index: int = 0,
    position: int = 0,
    tags: tuple[str, ...] = (),
    score: float | None = None,
    metadata: dict[str, object] | None = None,
) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], "a", tags=tags)
    if passed is None:
        result = EvaluationResult.unscored("?")
    else:
        value = score if score is not None else (1.0 if passed else 0.0)
        result = EvaluationResult(passed, value, None, metadata)
    if strategy is None:
        return EvaluationRow.from_error(sample, None, None, ErrorInfo("E", "x"), index=index)
    return EvaluationRow.from_result(
        sample, strategy, "out", result, index=index, position=position
    )


class TestScores:
    def test_score_is_per_row_and_ignores_numeric_scores(self) -> None:
        # 2 samples x 2 strategies, all passing but B/strategy 2; passing scores are low
        rows = [
            row("A", True, index=0, position=0, score=0.1),
            row("A", True, index=0, position=1, strategy="s2", score=0.1),
            row("B", True, index=1, position=0, score=0.1),
            row("B", False, index=1, position=1, strategy="s2"),
        ]
        report = EvaluationReport(rows)
        assert report.score == 75.0
        assert report.passed_count == 3
        assert report.failed_count == 1
        assert report.not_passed_count == 1

    def test_function_error_counts_in_the_denominator(self) -> None:
        rows = [
            row("A", True, index=0),
            row("A", True, index=0, position=1, strategy="s2"),
            row("B", None, strategy=None, index=1),
        ]
        report = EvaluationReport(rows)
        assert report.score == pytest.approx(66.6666666)
        assert report.error_count == 1
        assert report.function_error_count == 1

    def test_empty_report(self) -> None:
        report = EvaluationReport()
        assert report.score == 0.0
        assert report.evaluation_count == 0
        assert report.score_for_tag("x") == 0.0
        assert report.tag_scores == {}

    def test_tags_in_first_appearance_order(self) -> None:
        rows = [
            row("A", True, index=0, tags=("b", "a")),
            row("B", False, index=1, tags=("a", "c")),
        ]
        report = EvaluationReport(rows)
        assert report.tag_scores == {"b": 100.0, "a": 50.0, "c": 0.0}
        assert report.score_for_tag("a") == 50.0
        assert report.score_for_tag("missing") == 0.0
        assert report.tags == ("b", "a", "c")

    def test_strategy_statistics(self) -> None:
        rows = [
            row("A", True, index=0, score=0.9),
            row("B", False, index=1, score=0.3),
            row("C", None, index=2),
        ]
        stats = EvaluationReport(rows).strategy_statistics["s1"]
        assert (stats.total, stats.passed, stats.failed, stats.unscored) == (3, 1, 1, 1)
        assert stats.mean_score == pytest.approx(0.6)
        assert stats.score == pytest.approx(100 / 3)

    def test_rows_are_sorted_by_sample_then_strategy(self) -> None:
        rows = [
            row("B", True, index=1, position=1, strategy="s2"),
            row("A", True, index=0, position=1, strategy="s2"),
            row("B", True, index=1, position=0),
            row("A", True, index=0, position=0),
        ]
        report = EvaluationReport(rows)
        assert [(r.name, r.strategy) for r in report.evaluations] == [
            ("A", "s1"),
            ("A", "s2"),
            ("B", "s1"),
            ("B", "s2"),
        ]

    def test_a_report_from_rows_sums_each_function_call_once(self) -> None:
        sample = EvaluationSample("A", ["q"], "a")
        rows = [
            EvaluationRow.from_result(
                sample, name, "a", EvaluationResult.passing(), duration=0.5, position=i
            )
            for i, name in enumerate(("s1", "s2", "s3"))
        ]
        rows.append(
            EvaluationRow.from_result(
                sample, "s1", "a", EvaluationResult.passing(), duration=0.25, repeat=1
            )
        )
        report = EvaluationReport(rows)
        assert report.duration == 0.75
        assert report.call_count == 2
        assert report.sample_count == 1

    def test_a_duration_is_read_from_the_recorded_start_and_finish_never_the_clock(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def clock() -> float:
            raise AssertionError("a report's duration read the clock")

        monkeypatch.setattr(time, "time", clock)
        rows = [row("A", True)]
        finished = EvaluationReport(rows, run=RunInfo(started_at=100.0, finished_at=112.5))
        killed = EvaluationReport(rows, run=RunInfo(started_at=100.0, complete=False))
        live = EvaluationReport(rows, run=RunInfo(started_at=100.0))
        assert finished.duration == 12.5
        assert killed.duration is None
        assert live.duration is None

    def test_usage_is_summed_from_row_metadata(self) -> None:
        rows = [
            row("A", True, index=0, metadata={"retries": 2, "prompt_tokens": 10, "cost": 0.5}),
            row("B", True, index=1, metadata={"completion_tokens": 7, "retries": True}),
        ]
        usage = EvaluationReport(rows).usage
        assert (usage.retries, usage.prompt_tokens, usage.completion_tokens) == (2, 10, 7)
        assert usage.cost == 0.5
        assert usage.total_tokens == 17


class TestShardsAndKeep:
    def rows(self) -> list[EvaluationRow]:
        return [
            row(f"s{i}", i % 3 != 0, index=i, tags=("even",) if i % 2 == 0 else ("odd",))
            for i in range(10)
        ] + [row("err", None, strategy=None, index=10, tags=("odd",))]

    def test_merging_shards_gives_the_same_report_as_one_run(self) -> None:
        rows = self.rows()
        merged = merge_reports(EvaluationReport(rows[:4]), EvaluationReport(rows[4:]))
        expected = EvaluationReport(rows)
        assert merged.score == expected.score
        assert merged.tag_scores == expected.tag_scores
        assert merged.counts == expected.counts
        assert merged.strategy_statistics == expected.strategy_statistics
        assert merged.function_error_count == expected.function_error_count
        assert list(merged.evaluations) == list(expected.evaluations)

    def test_merge_order_does_not_change_the_rows(self) -> None:
        rows = self.rows()
        merged = merge_reports(EvaluationReport(rows[5:]), EvaluationReport(rows[:5]))
        assert list(merged.evaluations) == sorted(rows, key=lambda r: r.sort_key)

    @pytest.mark.parametrize(("keep", "held"), [("all", 10), ("failures", 4), ("none", 0)])
    def test_keep(self, keep: Literal["all", "failures", "none"], held: int) -> None:
        report = replayed(self.rows()[:10], keep=keep)
        assert len(report.evaluations) == held
        assert report.evaluation_count == 10
        assert report.passed_count == 6
        assert report.holds_all_rows is (keep == "all")
        if keep == "failures":
            assert all(r.outcome is not Outcome.PASSED for r in report.evaluations)

    def test_invalid_keep(self) -> None:
        with pytest.raises(ValueError, match="keep must be"):
            Scorer(keep="some")  # type: ignore[arg-type]

    def test_repr(self) -> None:
        report = EvaluationReport([row("A", True), row("B", None, index=1)])
        assert repr(report) == (
            "<EvaluationReport score=50.00% rows=2 passed=1 failed=0 unscored=1 errors=0>"
        )


class TestOneWayToBuild:
    def test_a_scorer_run_is_the_report_of_its_rows(self) -> None:
        rows = [row("a", True, tags=("t",)), row("b", False, index=1), row("c", None, index=2)]
        built = replayed(rows)
        direct = EvaluationReport(built.evaluations)
        assert [(r.name, r.outcome) for r in built.evaluations] == [
            (r.name, r.outcome) for r in rows
        ]
        assert built.counts == direct.counts
        assert built.tag_statistics == direct.tag_statistics
        assert built.strategy_statistics == direct.strategy_statistics
        assert (built.call_count, built.sample_count) == (direct.call_count, direct.sample_count)

    def test_the_aggregator_does_not_import_the_report(self) -> None:
        import ast

        source = Path(aeval.__file__).parent / "_reporting" / "_aggregator.py"
        imported = {
            node.module
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom)
        }
        assert "_report" not in imported
