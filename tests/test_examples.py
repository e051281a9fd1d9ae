"""The examples are part of the documentation: they must run, offline."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.anyio
async def test_quickstart_runs_and_saves_its_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="quickstart")
    score = await module["main"](tmp_path / "reports")
    out = capsys.readouterr().out
    assert score == pytest.approx(100 * 16 / 18)
    assert "Score: 88.89% (16/18 rows)" in out
    assert "FAILED Warranty [ExactMatchStrategy]" in out
    data = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert data["globalScore"] == 88.89
    assert (tmp_path / "reports" / "report.md").read_text().startswith("# Evaluation Report")
    sys.modules.pop("support_bot", None)
