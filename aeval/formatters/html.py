"""The HTML report (``report.html``): one self-contained page to review a run with, readable
offline and as a CI artifact.

From the top: a warning banner (``role="alert"``) when the run is partial; the title; the
score with its 95% interval, the counts and the run's header (start and end in UTC, wall-clock
duration, aeval version, concurrency, commit, model usage, warnings); a table per tag and per
strategy with each score's interval; a *Judge calibration* section per strategy whose samples
carry human labels (kappa with its interval, accuracy, the confusion matrix, the
disagreements) and a *Judges* table (parse failures, re-asks, cut-off replies, agreement)
when the report has judge rows; a *Repeats* section (pass@k, pass^k, output agreement,
flaky pairs, inconsistent samples) when samples were repeated; then every row held, failures
first, each with its outcome badge and a ``<details>`` element holding the sample's
parameters, expected output, output, tags, the explanation, the error, the metadata as JSON
and the durations.

Above the rows, filter buttons (not passed, failed, errors, unscored, skipped, flaky, passed,
all) and a search box work offline through one small inline script, which shows the rows 200
a page from the JSON the page holds them in (see ``_html_rows``); the address keeps the view,
so ``report.html#filter=failed&q=paris&page=2`` opens filtered. Without scripts the controls
stay hidden and the first page of rows shows, with a note on the others. The page's
Content-Security-Policy admits only that script and the inline style, and no network at all.
Every value that comes from the user is HTML-escaped, values longer than 2000 characters are
cut (their length shown), and characters HTML forbids (controls, lone surrogates) are written
as ``\\x..`` / ``\\u....`` escapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ._base import check_options

if TYPE_CHECKING:
    from .._reporting._report import EvaluationReport

__all__ = ["HtmlFormatter"]

_DEFAULTS: dict[str, Any] = {"title": "Evaluation Report", "include_details": True}


class HtmlFormatter:
    """Renders a report as one self-contained HTML page (see the module docstring).

    Options:
        title (str): The page's title and heading (default ``"Evaluation Report"``).
        include_details (bool): Each row's parameters, outputs, metadata and error detail in a
            ``<details>`` element (default ``True``); ``False`` leaves the inputs and outputs
            out of the page, search included.
    """

    name: ClassVar[str] = "html"
    extension: ClassVar[str] = ".html"
    options: ClassVar[frozenset[str]] = frozenset(_DEFAULTS)

    def format(self, report: EvaluationReport, **options: Any) -> str:
        """Render ``report``.

        Raises:
            FormatError: An unknown option, or an option of the wrong type.
        """
        resolved = check_options(self.name, options, _DEFAULTS)
        from ._html_report import render_report

        return render_report(
            report, title=resolved["title"], include_details=resolved["include_details"]
        )
