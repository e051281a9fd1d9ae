"""Every table with a 95 % CI column shows each interval in one form, its two ends.

Wilson's interval is symmetric about the score only at 50 %: an interval once shown as
``± 40.55`` there and as ``9.68–70.00`` elsewhere made one column read two ways. Each report
below holds a 50 % score (a symmetric interval) beside a 75 % one, in every table that
shows intervals: the report's score line, its tags and strategies (terminal, Markdown,
HTML), the history of a name and the list of runs (every format, and the viewer's page), and
a comparison's sides.
"""

from __future__ import annotations

import io
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import anyio
import pytest
from _cli import Cli, cli
from rich.console import Console
from test_view import client, viewer

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
)

__all__ = ["cli"]

STARTED = 1_796_000_000.0


def report_of(passes: dict[str, tuple[bool, ...]], *, started: float = STARTED) -> EvaluationReport:
    """One row per (sample, strategy): ``passes[strategy][sample]``; odd samples are tagged
    ``odd``, even ones ``even``."""
    rows = []
    for position, (strategy, outcomes) in enumerate(passes.items()):
        for index, passed in enumerate(outcomes):
            tag = "odd" if index % 2 else "even"
            sample = EvaluationSample(f"s{index}", ["q"], "a", tags=[tag])
            result = EvaluationResult.from_boolean(passed)
            rows.append(
                EvaluationRow.from_result(
                    sample, strategy, "a", result, index=index, position=position
                )
            )
    run = RunInfo(started_at=started, finished_at=started + 1.0, strategies=tuple(passes))
    return EvaluationReport(rows, run=run)


def format_number(value: float) -> str:
    """Two decimals, rounding half up on the shortest representation, as aeval shows them."""
    return str(Decimal(repr(float(value))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def ends(interval: tuple[float, float]) -> str:
    low, high = interval
    return f"{format_number(low)}–{format_number(high)}"


def assert_one_form(text: str, *symmetric: tuple[float, float]) -> None:
    assert "±" not in text, text
    for interval in symmetric:
        assert ends(interval) in text, (ends(interval), text)


# "Half" passes 2 of 4 samples, "Most" 3 of 4; the odd samples score 50 %, the even ones 75 %
REPORT = report_of({"Half": (True, True, False, False), "Most": (True, True, True, False)})


def test_a_report_shows_every_interval_by_its_ends() -> None:
    half = REPORT.strategy_statistics["Half"].confidence_interval()
    odd = REPORT.tag_statistics["odd"].confidence_interval()
    assert REPORT.strategy_statistics["Half"].score == REPORT.tag_statistics["odd"].score == 50.0
    assert REPORT.tag_statistics["even"].score == 75.0
    for fmt in ("markdown", "html"):
        assert_one_form(REPORT.format(fmt), half, odd)
    out = io.StringIO()
    REPORT.print(Console(file=out, width=200, color_system=None))
    assert_one_form(out.getvalue(), half, odd)
    even_only = report_of({"Half": (True, False)})
    assert even_only.score == 50.0
    assert_one_form(even_only.format("markdown"), even_only.confidence_interval())


async def _store(path: Path) -> list[tuple[float, float]]:
    reports = [
        report_of({"Half": (True, False)}, started=STARTED),
        report_of({"Most": (True, True, True, False)}, started=STARTED + 60),
    ]
    async with RunStore(path) as store:
        for report in reports:
            await store.save(report, "bot", git_dirty=False)
    return [reports[0].confidence_interval()]


def test_the_history_and_the_run_list_show_every_interval_by_its_ends(
    tmp_path: Path, cli: Cli
) -> None:
    store = tmp_path / "runs.sqlite"
    symmetric = anyio.run(_store, store)
    for command in ("history", "runs"):
        names = ["bot"] if command == "history" else []
        formats = ("table", "markdown", "html") if command == "history" else ("table",)
        for fmt in formats:
            result = cli(command, *names, "--store", store, "--format", fmt)
            assert result.returncode == 0, result.stderr
            assert_one_form(result.stdout, *symmetric)

    with viewer(store) as served, client(served) as http:
        assert_one_form(http.get("/").text, *symmetric)


@pytest.mark.parametrize("passed", [0, 2, 4])
def test_a_score_names_both_ends_of_its_interval_at_any_score(passed: int) -> None:
    report = report_of({"Half": tuple(index < passed for index in range(4))})
    text = report.format("markdown")
    assert "±" not in text
    for stats in report.tag_statistics.values():
        assert stats.score == passed * 25.0
        shown = f"{format_number(stats.score)}% (95% CI {ends(stats.confidence_interval())}, "
        assert shown in text, (shown, text)


def test_a_comparison_shows_every_interval_by_its_ends() -> None:
    import aeval

    candidate = report_of({"Half": (True, True, True, False), "Most": (True, True, True, False)})
    comparison = aeval.compare_sync(REPORT, candidate)
    assert comparison.baseline_score == 62.5
    for fmt in ("text", "markdown", "html"):
        assert_one_form(comparison.format(fmt), REPORT.confidence_interval())
    out = io.StringIO()
    comparison.print(Console(file=out, width=200, color_system=None))
    assert_one_form(out.getvalue(), REPORT.confidence_interval())
