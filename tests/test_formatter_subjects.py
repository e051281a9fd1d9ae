"""One registry for every subject: a formatter registered for comparisons, histories or suites
reaches every place that renders them, and one extension map names the format of a file."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from pathlib import Path
from typing import Any

import anyio
import pytest
from _cli import Cli, cli

import aeval
from aeval import FormatError, RunStore
from aeval.formatters import (
    get_formatter,
    register_formatter,
    supported_formats,
    unregister_formatter,
)

__all__ = ["cli"]

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"


class VerdictFormatter:
    """A comparison format: the verdict and the number of changed pairs, one line."""

    name = "verdict"
    extension = ".verdict"
    subject = "comparison"
    options = frozenset({"margin"})

    def format(self, comparison: aeval.Comparison, **options: Any) -> str:
        changed = len(comparison.regressions) + len(comparison.fixes)
        return f"{comparison.verdict}; {changed} changed; margin {options.get('margin')}\n"


class CountFormatter:
    """A history format: the number of runs."""

    name = "count"
    extension = ".count"

    def format(self, history: Any, **options: Any) -> str:
        return f"{history.name}: {len(history.points)} run(s)\n"


def comparison() -> aeval.Comparison:
    return aeval.compare_sync(GOLDEN / "baseline.jsonl", GOLDEN / "candidate.jsonl")


def test_builtin_formats_of_each_subject(registry: Any) -> None:
    assert supported_formats() == ("html", "json", "junit", "markdown")
    assert supported_formats("comparison") == ("html", "json", "junit", "markdown", "text")
    assert supported_formats("history") == ("html", "json", "markdown")
    assert supported_formats("runs") == ("json",)
    assert supported_formats("suite") == ("json", "markdown")


def test_a_comparison_formatter_reaches_format_save_as_and_the_command(
    registry: Any, tmp_path: Path, cli: Cli
) -> None:
    register_formatter(VerdictFormatter())
    assert "verdict" not in supported_formats()
    compared = comparison()
    assert (
        compared.format("verdict", margin=2.0)
        == "no significant difference; 2 changed; margin 2.0\n"
    )
    saved = anyio.run(compared.save_as, tmp_path / "out.verdict")
    assert saved.read_text() == "no significant difference; 2 changed; margin 0.0\n"
    shown = cli(
        "compare", GOLDEN / "baseline.jsonl", GOLDEN / "candidate.jsonl", "--format", "verdict"
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "no significant difference; 2 changed; margin 0.0\n"


def test_a_history_formatter_reaches_aeval_history(registry: Any, tmp_path: Path, cli: Cli) -> None:
    register_formatter(CountFormatter(), subject="history")
    rows, run = anyio.run(aeval.read_run, GOLDEN / "baseline.jsonl")

    async def fill() -> None:
        async with RunStore(tmp_path / "runs.sqlite") as store:
            await store.save(aeval.EvaluationReport(rows, run=run), "bot", git_dirty=False)

    anyio.run(fill)
    shown = cli("history", "bot", "--store", tmp_path / "runs.sqlite", "--format", "count")
    assert (shown.returncode, shown.stdout) == (0, "bot: 1 run(s)\n")


def test_the_same_name_is_kept_apart_per_subject(registry: Any) -> None:
    class Json:
        name = "json"
        extension = ".json"

        def format(self, value: object, **options: Any) -> str:
            return "mine"

    with pytest.raises(FormatError, match="A comparison formatter named 'json' is already"):
        register_formatter(Json(), subject="comparison")
    register_formatter(Json(), subject="comparison", replace=True)
    assert comparison().format("json") == "mine"
    assert get_formatter("json").name == "json" and not isinstance(get_formatter("json"), Json)
    assert isinstance(unregister_formatter("json", subject="comparison"), Json)
    with pytest.raises(FormatError, match="unknown comparison format 'json'; available: text"):
        comparison().format("json")


def test_an_entry_point_names_its_subject(registry: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("aeval_test_subject_plugin")
    module.VerdictFormatter = VerdictFormatter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    point = importlib.metadata.EntryPoint(
        name="verdict", value=f"{module.__name__}:VerdictFormatter", group="aeval.formatters"
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: [point])
    assert "verdict" in supported_formats("comparison")
    assert "verdict" not in supported_formats()


def test_an_unknown_subject_is_refused(registry: Any) -> None:
    with pytest.raises(ValueError, match="unknown subject 'diff'; the subjects: report, "):
        register_formatter(CountFormatter(), subject="diff")


@pytest.mark.parametrize(
    ("subject", "name", "expected"),
    [
        ("report", "report.markdown", "markdown"),
        ("report", "report.htm", "html"),
        ("report", "report.XML", "junit"),
        ("comparison", "c.txt", "text"),
        ("comparison", "c.markdown", "markdown"),
        ("comparison", "c.htm", "html"),
        ("comparison", "c.xml", "junit"),
    ],
)
def test_one_extension_map_for_every_subject(
    registry: object, tmp_path: Path, subject: str, name: str, expected: str
) -> None:
    value: aeval.EvaluationReport | aeval.Comparison
    if subject == "report":
        rows, run = anyio.run(aeval.read_run, GOLDEN / "baseline.jsonl")
        value = aeval.EvaluationReport(rows, run=run)
    else:
        value = comparison()
    saved = anyio.run(value.save_as, tmp_path / name)
    assert saved.read_text(encoding="utf-8") == value.format(expected)


def test_an_extension_no_formatter_writes(registry: object, tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"no comparison format for the extension '\.yaml'; use"):
        anyio.run(comparison().save_as, tmp_path / "c.yaml")


def test_comparison_format_names_md_and_xml_still_work(registry: Any) -> None:
    compared = comparison()
    assert compared.format("md") == compared.format("markdown")
    assert compared.format("xml", non_inferiority=5.0) == compared.format(
        "junit", non_inferiority=5.0
    )


def test_history_markdown_escapes_values_as_the_report_does(tmp_path: Path, cli: Cli) -> None:
    name = "- 1. *bot* <x> | #1"
    label = "+ [link](http://x) `code`"
    rows, run = anyio.run(aeval.read_run, GOLDEN / "baseline.jsonl")

    async def fill() -> None:
        async with RunStore(tmp_path / "runs.sqlite") as store:
            report = aeval.EvaluationReport(rows, run=run)
            await store.save(report, name, labels=[label], git_dirty=False)

    anyio.run(fill)
    shown = cli("history", name, "--store", tmp_path / "runs.sqlite", "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "# History of - 1. \\*bot\\* &lt;x&gt; \\| \\#1 (overall)" in text
    assert "| + \\[link\\](http://x) \\`code\\` |" in text
    assert "<x>" not in text and "*bot*" not in text
