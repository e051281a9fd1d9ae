"""What every format shows at its top and for every row: the run's header, the partial-run
banner, the score with its interval, and each row's inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .._display import display_value
from .._reporting._report import partial_note
from .._reporting._results import Outcome
from .._reporting._run_info import timestamp
from .._util._numbers import describe_score

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow
    from .._reporting._run_info import Gate
    from .._samples import EvaluationSample

__all__ = [
    "conversations_text",
    "duration_text",
    "failures_first",
    "gate_text",
    "header_facts",
    "not_applicable_text",
    "outcome_text",
    "parameters_text",
    "partial_banner",
    "score_text",
    "strategy_counts",
    "truncated",
]

VALUE_LENGTH = 2000
"""Longest value shown in full in Markdown and HTML; longer ones are cut, their length shown."""


def score_text(report: EvaluationReport) -> str:
    """``80.00% (95% CI 65.24–89.50, 40 samples)``."""
    return describe_score(report.score, report.confidence_interval(), report.sample_count)


def partial_banner(report: EvaluationReport) -> str | None:
    """The warning a partial report carries in every format, ``None`` for a complete run."""
    note = partial_note(report)
    if note is None:
        return None
    return (
        f"PARTIAL RUN: {note}. The scores cover only the samples evaluated; "
        "do not gate a release on them."
    )


def duration_text(report: EvaluationReport) -> str:
    """``12.50 s (wall clock)``; ``1.25 s (the calls, summed)`` for a report of rows with no
    header; ``unknown (the run did not finish)`` when no finish was recorded."""
    duration = report.duration
    if duration is None:
        return "unknown (the run did not finish)"
    known = report.run.started_at is not None
    return f"{duration:.2f} s ({'wall clock' if known else 'the calls, summed'})"


def header_facts(report: EvaluationReport) -> list[tuple[str, str]]:
    """The run's header as (label, value) pairs: when, how long, with what, from which commit.

    A report built from rows alone (no header) has an unknown start and finish, and its
    duration is the summed time of the function calls rather than a wall clock.
    """
    run = report.run
    expected = report.samples_expected
    samples = str(report.sample_count) + (f" of {expected}" if expected is not None else "")
    known = run.started_at is not None
    facts = [
        ("Started", timestamp(run.started_at)),
        (
            "Finished",
            "did not finish" if known and run.finished_at is None else timestamp(run.finished_at),
        ),
        ("Duration", duration_text(report)),
        ("Samples", samples + (f" × {run.repeats} repeats" if run.repeats > 1 else "")),
        ("Rows", str(report.evaluation_count)),
        ("aeval", run.aeval_version or "unknown"),
    ]
    if report.not_applicable_count:
        facts.insert(5, ("Not applicable", not_applicable_text(report)))
    if run.concurrency is not None:
        facts.append(("Concurrency", str(run.concurrency)))
    if run.shard is not None:
        total = f" of a dataset of {run.dataset_samples}" if run.dataset_samples else ""
        facts.append(("Shard", f"{run.shard}{total}"))
    if run.executor is not None:
        facts.append(("Executor", run.executor))
    if run.tools is not None:
        facts.append(("Tools", run.tools))
    if run.git_commit:
        facts.append(("Commit", run.git_commit))
    usage = report.usage
    if usage.retries or usage.total_tokens or usage.cost:
        line = (
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens · "
            f"{usage.retries} retries"
        )
        if usage.user_model_calls:
            line += f" · {usage.user_model_calls} simulated-user calls"
        facts.append(("Model usage", f"{line} · ${usage.cost:.4f}" if usage.cost else line))
    if report.conversations:
        facts.append(("Conversations", conversations_text(report.conversations)))
    if run.gate is not None:
        facts.append(("Gate", gate_text(run.gate)))
    for warning in report.warnings:
        facts.append(("Warning", warning))
    return facts


def not_applicable_text(report: EvaluationReport) -> str:
    """``3 rows, left out of the score (1 sample had no applicable row)``: the rows whose
    strategy's expectation the sample does not state."""
    count = report.not_applicable_count
    text = f"{count} {'row' if count == 1 else 'rows'}, left out of the score"
    samples = report.inapplicable_sample_count
    if samples:
        text += f" ({samples} {'sample has' if samples == 1 else 'samples have'} no applicable row)"
    return text


def strategy_counts(
    report: EvaluationReport,
) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The count columns of the table per strategy (``Samples`` to ``Errors``, then ``Not
    applicable`` when some row is), and each strategy's counts in them, as text."""
    columns: tuple[str, ...] = (
        "Samples",
        "Rows",
        "Passed",
        "Failed",
        "Unscored",
        "Skipped",
        "Errors",
    )
    inapplicable = report.not_applicable_count > 0
    if inapplicable:
        columns = (*columns, "Not applicable")
    counts = {
        name: tuple(
            str(n)
            for n in (
                s.moments.clusters,
                s.total,
                s.passed,
                s.failed,
                s.unscored,
                s.skipped,
                s.errors,
                *((s.not_applicable,) if inapplicable else ()),
            )
        )
        for name, s in report.strategy_statistics.items()
    }
    return columns, counts


def outcome_text(row: EvaluationRow) -> str:
    """The row's outcome in capitals, as headings show it: ``PASSED``, ``NOT APPLICABLE``."""
    return row.outcome.value.replace("_", " ").upper()


def conversations_text(endings: Mapping[str, int]) -> str:
    """``3 (2 goal reached, 1 at max turns)``: the conversations and why they ended."""
    words = {
        "script": "script done",
        "goal": "goal reached",
        "max-turns": "at max turns",
        "error": "ended by an error",
        "timeout": "timed out",
    }
    parts = [f"{count} {words.get(ending, ending)}" for ending, count in endings.items() if count]
    return f"{sum(endings.values())} ({', '.join(parts)})"


def gate_text(gate: Gate) -> str:
    """``MISSED: score 66.67% < 80.00%``, ``PASSED: ...`` or ``none (no threshold)``."""
    if gate.verdict == "none":
        if not gate.checks:
            return "none (no threshold configured)"
        return "none (thresholds not checked: a partial run, or a shard)"
    shown = [c for c in gate.checks if c.passed is False] if gate.verdict == "missed" else []
    return f"{gate.verdict.upper()}: " + "; ".join(c.text for c in shown or gate.checks)


def parameters_text(sample: EvaluationSample) -> str:
    """The sample's parameters as one line: ``[a, b]`` or ``question=..., lang=en``."""
    params = sample.parameters
    if not any(name is not None for name in params.names):
        return display_value(list(params.values))
    return ", ".join(
        display_value(value) if name is None else f"{name}={display_value(value)}"
        for name, value in zip(params.names, params.values, strict=True)
    )


def truncated(text: str, limit: int = VALUE_LENGTH) -> str:
    """``text``, or its first ``limit`` characters and ``… (12345 characters in all)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters in all)"


def failures_first(rows: Sequence[EvaluationRow]) -> list[EvaluationRow]:
    """The rows that did not pass, then the not-applicable ones, then those that passed,
    each group in report order."""
    inapplicable = Outcome.NOT_APPLICABLE
    return (
        [row for row in rows if not row.passed and row.outcome is not inapplicable]
        + [row for row in rows if row.outcome is inapplicable]
        + [row for row in rows if row.passed]
    )
