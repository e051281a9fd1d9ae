"""The examples are part of the documentation: they must run, offline."""

from __future__ import annotations

import ast
import json
import runpy
import sys
from pathlib import Path

import anyio
import pytest

from aeval import EvaluationReport, read_run

EXAMPLES = Path(__file__).parent.parent / "examples"


def _rows(report: EvaluationReport) -> list[tuple[str, str | None, str, object]]:
    return [(r.name, r.strategy, r.outcome.value, r.output) for r in report.evaluations]


async def _cli_report(tmp_path: Path) -> EvaluationReport:
    from aeval._cli._main import main

    argv = ["run", str(EXAMPLES / "aeval.yaml"), "--quiet", "--output", str(tmp_path)]
    argv += ["--store", str(tmp_path / "runs.sqlite")]
    assert await anyio.to_thread.run_sync(main, argv) == 0
    return EvaluationReport((await read_run(tmp_path / "rows.jsonl"))[0])


@pytest.mark.anyio
async def test_quickstart_is_the_cli_run_in_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="quickstart")
    report = await module["main"](tmp_path / "reports")
    out = capsys.readouterr().out
    assert report.score == pytest.approx(100 * 11 / 12)
    assert "91.67%" in out and "Warranty" in out
    data = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert data["globalScore"] == 91.67
    assert (tmp_path / "reports" / "report.md").read_text().startswith("# Evaluation Report")
    assert (tmp_path / "reports" / "report.xml").exists()
    assert _rows(report) == _rows(await _cli_report(tmp_path / "cli"))
    sys.modules.pop("support_bot", None)


@pytest.mark.anyio
async def test_the_readme_snippet_runs_and_is_the_cli_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    snippet = readme.split("## In one screen\n\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.chdir(EXAMPLES.parent)
    snippet = snippet.replace('"target/evaluation-reports"', repr(str(tmp_path / "reports")))
    code = compile(snippet, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, object] = {}
    result = eval(code, namespace)
    if result is not None:
        await result
    report = namespace["report"]
    assert isinstance(report, EvaluationReport)
    assert "Evaluation summary" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "report.json",
        "report.md",
        "report.xml",
    ]
    assert _rows(report) == _rows(await _cli_report(tmp_path / "cli"))
    sys.modules.pop("support_bot", None)
