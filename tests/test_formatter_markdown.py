"""The Markdown report: the run's header, intervals, repeats, row details and escaping."""

from __future__ import annotations

from typing import Any

from aeval import EvaluationReport, EvaluationResult, EvaluationRow, EvaluationSample
from aeval._run_info import RunInfo
from aeval.formatters._header import header_facts


def row(name: str, index: int, *, passed: bool = True, **kw: Any) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], "ok")
    result = EvaluationResult.from_boolean(passed)
    return EvaluationRow.from_result(sample, "Exact", "ok", result, index=index, **kw)


def test_header_of_a_report_built_from_rows_claims_no_wall_clock() -> None:
    facts = dict(header_facts(EvaluationReport([row("A", 0, duration=1.5)])))
    assert facts["Started"] == "unknown"
    assert facts["Finished"] == "unknown"
    assert facts["Duration"] == "1.50 s (the calls, summed)"


def test_header_of_a_run_that_did_not_finish() -> None:
    report = EvaluationReport([row("A", 0)]).with_run(RunInfo(started_at=0.0, complete=False))
    facts = dict(header_facts(report))
    assert facts["Started"] == "1970-01-01 00:00:00 UTC"
    assert facts["Finished"] == "did not finish"
    assert facts["Duration"].endswith(" s (wall clock)")
