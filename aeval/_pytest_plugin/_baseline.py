"""``--aeval-baseline REF``: the suite's evaluations compared with a baseline run.

The baseline is read when the session starts (a bad one is a usage error before any test
runs). Every row of every report the tests record joins one candidate run; pytest-xdist
workers send theirs to the controller as JSONL lines. At the end the two runs are compared
(``aeval.compare``) and a significant regression, overall or on a tag (Holm-adjusted), beyond
``--aeval-margin`` points fails the session; the terminal summary says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

import anyio
import orjson
import pytest

from .._compare import (
    ChangedPair,
    Comparison,
    LoadedSide,
    compare_loaded,
    load_ref,
    regression_message,
    store_path,
)
from .._exceptions import ComparisonError
from .._reporting._codec import row_from_dict, row_line
from .._reporting._report import EvaluationReport
from .._reporting._results import EvaluationRow
from .._util._numbers import format_number
from ._config import Settings

__all__ = ["BaselineCheck"]

_PAIRS_SHOWN = 10


class BaselineCheck:
    """The baseline of a session and the candidate rows gathered for it."""

    def __init__(self, ref: str, baseline: LoadedSide | None, margin: float) -> None:
        self.ref = ref
        self._baseline = baseline
        self._margin = margin
        self._rows: list[EvaluationRow] = []
        self._problems: list[str] = []
        self.lines: list[str] = []

    @classmethod
    def load(cls, settings: Settings) -> BaselineCheck | None:
        """Read the baseline (controller only); ``None`` without ``--aeval-baseline``.

        Raises:
            pytest.UsageError: The baseline cannot be read (the message says why).
        """
        if settings.baseline is None:
            return None
        store = settings.baseline_store or store_path(None)
        load = partial(
            load_ref, settings.baseline, role="baseline", store=store, flag="--aeval-store"
        )
        try:
            side = anyio.run(load)
        except ComparisonError as exc:
            raise pytest.UsageError(f"--aeval-baseline: {exc}") from None
        return cls(settings.baseline, side, settings.margin)

    @classmethod
    def collecting(cls, settings: Settings) -> BaselineCheck | None:
        """A check that only gathers rows (on a pytest-xdist worker)."""
        if settings.baseline is None:
            return None
        return cls(settings.baseline, None, settings.margin)

    def add_report(self, test_id: str, report: EvaluationReport) -> None:
        """Gather the rows of a report a test recorded."""
        if not report.holds_all_rows and len(report.evaluations) < report.evaluation_count:
            self._problems.append(
                f"{test_id}: its report holds {len(report.evaluations)} of its "
                f"{report.evaluation_count} rows (keep='failures' or 'none'); give its Scorer "
                "keep='all' to compare it"
            )
            return
        self._rows.extend(report.evaluations)

    def worker_output(self) -> dict[str, list[bytes] | list[str]]:
        """The rows as JSONL lines and the problems, for a worker's ``workeroutput``."""
        return {"rows": [row_line(row) for row in self._rows], "problems": list(self._problems)}

    def add_worker_output(self, data: dict[str, Sequence[bytes | str]]) -> None:
        """Gather what a worker sent (on the controller)."""
        self._rows.extend(row_from_dict(orjson.loads(line)) for line in data.get("rows", ()))
        self._problems.extend(str(problem) for problem in data.get("problems", ()))

    def finish(self) -> bool:
        """Compare and write :attr:`lines`; return whether the session must fail."""
        ref = self.ref
        if self._baseline is None:
            return False
        if self._problems:
            self.lines = [
                f"FAILED: --aeval-baseline {ref}: some evaluations cannot be compared:",
                *(f"    - {problem}" for problem in self._problems),
            ]
            return True
        if not self._rows:
            self.lines = [f"--aeval-baseline {ref} was not checked: no evaluation ran"]
            return False
        try:
            candidate = LoadedSide.of(
                EvaluationReport(self._rows), role="candidate", label="this session"
            )
            comparison = compare_loaded(self._baseline, candidate)
        except ComparisonError as exc:
            self.lines = [f"FAILED: --aeval-baseline {ref}: {exc}"]
            return True
        return self._describe(comparison)

    def _describe(self, comparison: Comparison) -> bool:
        margin = self._margin
        c = comparison
        self.lines = [
            f"Compared with the baseline {self.ref}: {c.describe()}",
            f"  {c.power_note}; {len(c.regressions)} regressions, {len(c.fixes)} fixes; "
            f"{len(c.only_in_baseline)} pairs only in the baseline, "
            f"{len(c.only_in_candidate)} only in this session",
            *_pairs("regressions", c.regressions),
            *(f"  warning: {warning}" for warning in c.warnings),
        ]
        regressed = c.significant_regressions(margin)
        if regressed:
            self.lines.append(
                "FAILED: significant regression on "
                + "; ".join(regression_message(scope, margin) for scope in regressed)
            )
            return True
        beyond = f" beyond {format_number(margin)} points" if margin else ""
        self.lines.append(
            f"No significant regression{beyond} compared with the baseline {self.ref}"
        )
        return False


def _pairs(title: str, pairs: Sequence[ChangedPair]) -> Iterable[str]:
    if not pairs:
        return []
    shown = [f"    - {pair.describe()}" for pair in pairs[:_PAIRS_SHOWN]]
    more = len(pairs) - _PAIRS_SHOWN
    return [f"  {title}:", *shown, *([f"    ... and {more} more"] if more > 0 else [])]
