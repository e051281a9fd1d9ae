"""The JSON report (``report.json``).

Keys and their order follow upstream (Quarkus LangChain4j ``JsonReportFormatter``):
``globalScore``, ``totalSamples``, ``passed``, ``failed``, ``tagScores`` (only when a tag
exists) and ``evaluations`` with ``name``, ``passed``, ``expectedOutput``, ``actualOutput`` and
``tags`` (only when the sample has tags). As upstream, ``totalSamples`` counts rows (sample and
strategy pairs) and ``failed`` counts every row that did not pass.

How this departs from upstream:

- It is real JSON, written by orjson. Upstream builds the text by hand, emits any value that
  looks like a number or boolean unquoted (a name ``"007"`` gives invalid JSON), leaves tag
  keys unescaped and escapes only five characters.
- Values keep their JSON type: ``expectedOutput`` may be a list, ``actualOutput`` a number or
  an object; ``null`` is ``null``, not the string ``"null"``. Values JSON has no type for are
  written as ``str(value)``.
- Scores are numbers rounded half up to two decimals (``66.67``), not ``%.2f`` strings.
- Added keys: ``errors``, ``unscored``, ``duration`` (seconds), ``strategyScores``, ``usage``
  (``retries``, ``promptTokens``, ``completionTokens``, ``cost`` of the strategies' model calls),
  ``complete`` (only when the report does not hold every row, then ``false``) and, per
  evaluation, ``strategy``, ``outcome``, ``score`` (0-1 or ``null`` when unscored),
  ``explanation``, ``metadata`` (only when any) and ``error`` (``{type, message}``, only on
  an error row).
- Pretty output indents by two spaces without a trailing newline, as upstream; compact
  output (``pretty=False``) has no spaces at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar

import orjson

from .._exceptions import FormatError
from .._numbers import format_number
from ._base import check_options

if TYPE_CHECKING:
    from .._report import EvaluationReport
    from .._results import EvaluationRow

__all__ = ["JsonFormatter"]

_DEFAULTS: dict[str, Any] = {"pretty": True}


class JsonFormatter:
    """Renders a report as JSON.

    Options:
        pretty (bool): Indent by two spaces (default ``True``); ``False`` gives one line.
    """

    name: ClassVar[str] = "json"
    extension: ClassVar[str] = ".json"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report`` (see the module docstring for the keys).

        Raises:
            FormatError: An unknown option, ``pretty`` that is not a bool, or a value orjson
                cannot write (an integer beyond 64 bits).
        """
        pretty: bool = check_options(self.name, options, _DEFAULTS)["pretty"]
        document: dict[str, Any] = {
            "globalScore": _rounded(report.score),
            "totalSamples": report.evaluation_count,
            "passed": report.passed_count,
            "failed": report.not_passed_count,
            "errors": report.error_count,
            "unscored": report.unscored_count,
            "duration": float(report.duration),
        }
        tag_scores = report.tag_scores
        if tag_scores:
            document["tagScores"] = {tag: _rounded(s) for tag, s in tag_scores.items()}
        document["strategyScores"] = {
            name: _rounded(score) for name, score in report.strategy_scores.items()
        }
        usage = report.usage
        document["usage"] = {
            "retries": usage.retries,
            "promptTokens": usage.prompt_tokens,
            "completionTokens": usage.completion_tokens,
            "cost": usage.cost,
        }
        if not report.holds_all_rows:
            document["complete"] = False
        document["evaluations"] = [_evaluation(row) for row in report.evaluations]
        option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if pretty else 0)
        try:
            return orjson.dumps(document, default=_default, option=option).decode()
        except orjson.JSONEncodeError as exc:
            raise FormatError(f"Cannot write the report as JSON: {exc}") from exc


def _rounded(score: float) -> float:
    return float(format_number(score))


def _evaluation(row: EvaluationRow) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": row.name,
        "strategy": row.strategy,
        "outcome": row.outcome.value,
        "passed": row.passed,
        "score": row.score,
        "expectedOutput": row.expected_output,
        "actualOutput": row.output,
        "explanation": row.explanation,
    }
    if row.tags:
        entry["tags"] = row.tags
    if row.metadata:
        entry["metadata"] = dict(row.metadata)
    if row.error is not None:
        entry["error"] = {"type": row.error.type, "message": row.error.message}
    return entry


def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Set):
        return list(value)
    if isinstance(value, Decimal):
        return float(value)
    return str(value)
