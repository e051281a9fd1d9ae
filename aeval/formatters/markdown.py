"""The Markdown report (``report.md``).

The skeleton is upstream's (Quarkus LangChain4j ``MarkdownReportFormatter``): the lines
``# Evaluation Report``, ``**Global Score**: 50.00%``, ``## Score per tags`` with one
``- **tag**: 50.00%`` line per tag, ``## Details``, then per row either
``### name: PASSED (100.00%)`` with ``#### Result`` and ``#### Expected Output`` sections
(details mode) or ``- name: PASSED (100.00%)`` (summary mode, ``include_details=False``).
An empty report that knows no run (``EvaluationReport([])``) is exactly upstream's. Upstream
writes a row's result and expected output as plain lines; aeval fences them (see below).
aeval adds, in both modes:

- a ``> **PARTIAL RUN**: ...`` blockquote right under the title when the run stopped before
  its last sample;
- the score's 95% interval (clustered by sample) on the line after the global score, which
  renders on the same line; then a counts line (skipped rows and failed calls appear when
  there are any);
- a ``## Run`` list when the report has rows or a run header: start and finish (UTC),
  wall-clock duration, samples (of how many), aeval version, concurrency, commit, model usage
  (tokens, retries, cost) and warnings;
- the interval after each tag's score;
- a ``## Score per strategy`` table (score, interval, samples and every outcome's count) when
  the report has more than one strategy;
- a ``## Judge calibration`` section per strategy whose samples carry human labels: kappa
  with its interval, accuracy, the confusion matrix and the disagreeing rows; a
  ``## Judges`` table (parse failures, re-asks, unscored, cut-off replies and, with several
  judges, their agreement) when the report has judge rows;
- a ``## Repeats`` section when samples were repeated: pass@k and pass^k per k, output
  agreement, the flaky (sample, strategy) pairs (``2/3`` repeats passed) and the samples
  whose outputs disagree;
- rows that did not pass first, then those that passed, each group in report order; names
  followed by ``[repeat N]`` when the run repeated samples; in summary mode, the strategy's
  name after the line (``- name: FAILED (0.00%) · Judge``) when the report has more than one
  strategy; a note under ``## Details`` when the report does not hold every row.

In details mode each row also has ``- Strategy:``, ``- Tags:``, ``- Flaky:`` lines when they
apply, a line saying that the call failed and the strategy could not run on the rows of a
failed call, then ``#### Inputs`` (the sample's parameters), ``#### Result``,
``#### Expected Output``, ``#### Explanation`` and ``#### Error`` sections, and ``#### Trace``
when the sample's run recorded tool calls, model calls or retrievals: what was recorded in a
line, then one numbered line per event (arguments and results cut at 200 characters each,
saying their length). ``UNSCORED``,
``ERROR`` and ``SKIPPED`` join upstream's ``PASSED``/``FAILED``; a row without a score shows
``(unscored)``, ``(not run)`` when it was skipped, and a ``NOT APPLICABLE`` row (its
strategy's expectation is not stated by the sample) ``(left out of the score)``; the counts
line, the ``## Run`` list and the strategy table (a ``Not applicable`` column) count those
rows when there are any.

Markdown never breaks: every value that comes from a sample, a model or a strategy (inputs,
outputs, expected outputs, explanations, errors) sits in a fenced code block whose backtick
fence is longer than any backtick run inside it, cut at 2000 characters with its length
shown; names, tags, strategy names and header values are escaped where they appear inline
(newlines become spaces; ``&``, ``<`` and ``>`` become entities; Markdown punctuation and a leading
list or heading marker are backslash-escaped), so no value can end a code block, start a
heading, a list or a quote, make a link or inject raw HTML. Values are shown Java-style:
``None`` is ``null`` and a list is ``[a, b]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from .._display import display_value
from .._reporting._judging import JUDGE_COLUMNS, judge_rows, panel_line
from .._reporting._results import Outcome
from .._util._numbers import describe_score, format_interval, format_percent, truncate
from ._base import check_options
from ._escape import markdown_fenced as _fenced, markdown_inline as _inline, markdown_row
from ._header import (
    failures_first,
    header_facts,
    not_applicable_text,
    outcome_text,
    parameters_text,
    partial_banner,
    score_text,
    strategy_counts,
    truncated,
)

if TYPE_CHECKING:
    from .._reporting._judging import Calibration
    from .._reporting._report import EvaluationReport
    from .._reporting._results import EvaluationRow
    from .._reporting._values import FlakyCase, RepeatStatistics
    from ..trace import Trace

__all__ = ["MarkdownFormatter"]

_DEFAULTS: dict[str, Any] = {"include_details": True}
_FACTS_SHOWN_ELSEWHERE = frozenset({"Rows", "Not applicable"})

Flaky: TypeAlias = "dict[tuple[str, str | None], FlakyCase]"


class MarkdownFormatter:
    """Renders a report as Markdown.

    Options:
        include_details (bool): One section per row with its inputs, output, expected output,
            explanation and error (default ``True``); ``False`` gives one summary line per row.
    """

    name: ClassVar[str] = "markdown"
    extension: ClassVar[str] = ".md"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report`` (see the module docstring for the layout).

        Raises:
            FormatError: An unknown option, or ``include_details`` that is not a bool.
        """
        include_details: bool = check_options(self.name, options, _DEFAULTS)["include_details"]
        lines = ["# Evaluation Report", ""]
        banner = partial_banner(report)
        if banner is not None:
            label, _, rest = banner.partition(": ")
            lines += [f"> **{_inline(label)}**: {_inline(rest)}", ""]
        lines.append(f"**Global Score**: {format_percent(report.score)}")
        if report.evaluation_count:
            interval = score_text(report).removeprefix(format_percent(report.score)).strip()
            lines += [interval, "", _counts_line(report)]
        lines.append("")
        if report.evaluation_count or report.started_at is not None or banner is not None:
            lines += _run_section(report)
        tags = report.tag_statistics
        if tags:
            lines += ["## Score per tags", ""]
            lines += [
                f"- **{_inline(tag)}**: "
                + describe_score(stats.score, stats.confidence_interval(), stats.samples)
                + (f" · {stats.not_applicable} not applicable" if stats.not_applicable else "")
                for tag, stats in tags.items()
            ]
            lines.append("")
        several_strategies = len(report.strategy_statistics) > 1
        if several_strategies:
            lines += _strategy_section(report)
        for calibration in report.calibration.values():
            lines += _calibration_section(calibration)
        if report.judge_statistics:
            lines += _judge_section(report)
        if report.repeat_statistics is not None:
            lines += _repeat_section(report.repeat_statistics)
        lines += ["## Details", ""]
        held = len(report.evaluations)
        if not report.holds_all_rows and held < report.evaluation_count:
            lines += [
                f"_This report holds {held} of {report.evaluation_count} evaluations; "
                "the others were not kept._",
                "",
            ]
        repeated = report.run.repeats > 1 or any(row.repeat for row in report.evaluations)
        flaky: Flaky = {(case.sample, case.strategy): case for case in report.flaky}
        for row in failures_first(report.evaluations):
            if include_details:
                lines += _details(row, repeated, flaky)
            elif several_strategies and row.strategy is not None:
                lines.append(f"- {_heading(row, repeated)} · {_inline(row.strategy)}")
            else:
                lines.append(f"- {_heading(row, repeated)}")
        lines.append("")
        return "\n".join(lines)


def _counts_line(report: EvaluationReport) -> str:
    line = (
        f"**Evaluations**: {report.evaluation_count} · **Passed**: {report.passed_count} · "
        f"**Failed**: {report.failed_count} · **Unscored**: {report.unscored_count} · "
        f"**Errors**: {report.error_count}"
    )
    if report.skipped_count:
        line += f" · **Skipped**: {report.skipped_count}"
    if report.not_applicable_count:
        line += f" · **Not applicable**: {not_applicable_text(report)}"
    if report.function_error_count:
        line += (
            f" · **Failed calls**: {report.function_error_count} "
            "(each gives one error row per strategy)"
        )
    return line


def _run_section(report: EvaluationReport) -> list[str]:
    lines = ["## Run", ""]
    lines += [
        f"- **{label}**: {_inline(value)}"
        for label, value in header_facts(report)
        if label not in _FACTS_SHOWN_ELSEWHERE
    ]
    return [*lines, ""]


def _strategy_section(report: EvaluationReport) -> list[str]:
    columns, counts = strategy_counts(report)
    lines = [
        "## Score per strategy",
        "",
        markdown_row("Strategy", "Score", "95% CI", *columns),
        markdown_row("---", *("---:" for _ in range(len(columns) + 2))),
    ]
    for name, stats in report.strategy_statistics.items():
        lines.append(
            markdown_row(
                _inline(name),
                format_percent(stats.score),
                format_interval(stats.confidence_interval()),
                *counts[name],
            )
        )
    return [*lines, ""]


_EXPLANATION_SHOWN = 200


def _calibration_section(calibration: Calibration) -> list[str]:
    (pass_pass, pass_fail), (fail_pass, fail_fail) = calibration.confusion
    said = f"Verdicts against the samples' human labels: {_inline(calibration.describe())}"
    if calibration.unjudged:
        said += f" ({calibration.unjudged} labelled rows without a verdict)"
    lines = [
        f"## Judge calibration: {_inline(calibration.strategy)}",
        "",
        said + ".",
        "",
        markdown_row("", "Verdict pass", "Verdict fail"),
        markdown_row("---", "---:", "---:"),
        markdown_row("Label pass", str(pass_pass), str(pass_fail)),
        markdown_row("Label fail", str(fail_pass), str(fail_fail)),
        "",
    ]
    if calibration.invalid_labels:
        lines += [f"{calibration.invalid_labels} rows have a label that is not pass or fail.", ""]
    if not calibration.disagreements:
        return [*lines, "**Disagreements**: none.", ""]
    lines += [
        f"**Disagreements**: {len(calibration.disagreements)}.",
        "",
        markdown_row("Sample", "Label", "Verdict", "Score", "Explanation"),
        markdown_row("---", "---", "---", "---:", "---"),
    ]
    for d in calibration.disagreements:
        name = d.sample if not d.repeat else f"{d.sample} [repeat {d.repeat + 1}]"
        lines.append(
            markdown_row(
                _inline(name),
                "pass" if d.label else "fail",
                "pass" if d.passed else "fail",
                "—" if d.score is None else format_percent(100 * d.score),
                _inline(truncate(d.explanation or "", _EXPLANATION_SHOWN)),
            )
        )
    return [*lines, ""]


def _judge_section(report: EvaluationReport) -> list[str]:
    lines = [
        "## Judges",
        "",
        markdown_row(*(column.capitalize() for column in JUDGE_COLUMNS)),
        markdown_row("---", "---", *("---:" for _ in JUDGE_COLUMNS[2:])),
    ]
    lines += [
        markdown_row(_inline(row[0]), _inline(row[1]), *row[2:])
        for row in judge_rows(report.judge_statistics)
    ]
    lines.append("")
    for strategy, stats in report.judge_statistics.items():
        line = panel_line(strategy, stats)
        if line is not None:
            lines += [_inline(line), ""]
    return lines


def _repeat_section(stats: RepeatStatistics) -> list[str]:
    lines = [
        "## Repeats",
        "",
        f"Each sample ran {stats.repeats} times: {stats.pairs} (sample, strategy) pairs.",
        "",
        markdown_row("k", "pass@k", "pass^k"),
        markdown_row("---:", "---:", "---:"),
    ]
    lines += [
        markdown_row(
            str(k),
            format_percent(100 * stats.pass_at_k[k]),
            format_percent(100 * stats.pass_hat_k[k]),
        )
        for k in sorted(stats.pass_at_k)
    ]
    lines.append("")
    if stats.output_agreement is not None:
        lines += [
            f"**Output agreement**: {format_percent(100 * stats.output_agreement)} of repeats "
            "give their sample's most common output.",
            "",
        ]
    if not stats.flaky:
        lines += ["**Flaky pairs**: none.", ""]
    else:
        lines += [
            f"**Flaky pairs**: {len(stats.flaky)} of {stats.pairs} "
            "(some repeats passed, some did not).",
            "",
            markdown_row("Sample", "Strategy", "Passed"),
            markdown_row("---", "---", "---:"),
        ]
        lines += [
            markdown_row(
                _inline(case.sample),
                _inline(case.strategy) if case.strategy is not None else "(function)",
                f"{case.passed}/{case.runs}",
            )
            for case in stats.flaky
        ]
        lines.append("")
    if stats.inconsistent:
        lines += [
            f"**Inconsistent outputs**: {len(stats.inconsistent)} "
            f"{'sample' if len(stats.inconsistent) == 1 else 'samples'} whose repeats gave "
            "different outputs.",
            "",
            markdown_row("Sample", "Agreement"),
            markdown_row("---", "---:"),
        ]
        lines += [
            markdown_row(_inline(name), format_percent(100 * agreement))
            for name, agreement in stats.inconsistent
        ]
        lines.append("")
    return lines


def _heading(row: EvaluationRow, repeated: bool) -> str:
    if row.score is not None:
        score = format_percent(row.score * 100)
    elif row.outcome is Outcome.SKIPPED:
        score = "not run"
    elif row.outcome is Outcome.NOT_APPLICABLE:
        score = "left out of the score"
    else:
        score = "unscored"
    name = _inline(row.name, line_start=True)
    if repeated:
        name += f" [repeat {row.repeat + 1}]"
    return f"{name}: {outcome_text(row)} ({score})"


def _section(title: str, text: str) -> list[str]:
    return [f"#### {title}", *_fenced(truncated(text))]


def _details(row: EvaluationRow, repeated: bool, flaky: Flaky) -> list[str]:
    from ._transcript_view import conversation_markdown, shows_turn_traces, transcript_of

    lines = [f"### {_heading(row, repeated)}"]
    if row.strategy is not None:
        lines.append(f"- Strategy: {_inline(row.strategy)}")
    if row.tags:
        lines.append("- Tags: " + ", ".join(_inline(tag) for tag in row.tags))
    case = flaky.get((row.name, row.strategy))
    if case is not None:
        lines.append(f"- Flaky: {case.passed}/{case.runs} repeats passed")
    if row.function_failed:
        lines.append(
            "- The call failed; the strategy could not run."
            if row.strategy is not None
            else "- The call failed."
        )
    lines += _section("Inputs", parameters_text(row.sample))
    transcript = transcript_of(row)
    if transcript is None:
        lines += _section("Result", display_value(row.output))
    lines += _section("Expected Output", display_value(row.expected_output))
    error = str(row.error) if row.error is not None else None
    if row.explanation and row.explanation != error:
        lines += _section("Explanation", row.explanation)
    if error is not None:
        lines += _section("Error", error)
    claims = row.metadata.get("claims")
    if isinstance(claims, list) and claims:
        lines += _claims_section(claims)
    if transcript is not None:
        lines += conversation_markdown(transcript, row.metadata)
    if row.trace is not None and (transcript is None or not shows_turn_traces(transcript)):
        lines += _trace_section(row.trace)
    return lines


def _claims_section(claims: list[Any]) -> list[str]:
    lines = ["#### Claims"]
    for claim in claims:
        if isinstance(claim, dict):
            verdict = _inline(str(claim.get("verdict")).replace("_", " "))
            lines.append(f"- {verdict}: {_inline(str(claim.get('claim')))}")
    lines.append("")
    return lines


def _trace_section(trace: Trace) -> list[str]:
    from ._trace_view import compact_lines, trace_summary

    lines = ["#### Trace", _inline(trace_summary(trace), line_start=True), ""]
    lines += [
        f"{number}. {_inline(line, line_start=True)}"
        for number, line in enumerate(compact_lines(trace), 1)
    ]
    lines.append("")
    return lines
