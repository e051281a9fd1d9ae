"""Smoke test of benchmarks/bench_quota.py: it says what it needs, and runs where llmock is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _benchmarks import quick_figures

CACHED = Path.home() / ".cache" / "aeval" / "llmock-0.2.2" / "bin" / "llmock"


def test_without_llmock_the_quick_mode_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEVAL_BENCH_LLMOCK", str(tmp_path / "no-llmock"))
    done, figures = quick_figures("bench_quota.py", tmp_path / "figures.json")
    assert done.stdout.splitlines()[1] == (
        f"llmock is not installed (no llmock at {tmp_path / 'no-llmock'}): run `python "
        f"benchmarks/bench_quota.py --install` (a venv in {CACHED.parent.parent}), or pip "
        "install llmock==0.2.2 and pass --llmock"
    )
    assert figures == {"quick": True, "skipped": f"no llmock at {tmp_path / 'no-llmock'}"}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    if not (shutil.which("llmock") or CACHED.is_file()):
        pytest.skip("llmock is not installed (python benchmarks/bench_quota.py --install)")
    done, figures = quick_figures(
        "bench_quota.py", tmp_path_factory.mktemp("bench") / "figures.json"
    )
    assert done.stderr == ""
    return done.stdout, figures


def test_prints_the_four_cases(quick_run: tuple[str, dict[str, Any]]) -> None:
    stdout, figures = quick_run
    assert "aeval quota benchmark (quick mode)" in stdout
    assert f"--rpm 120 or --tpm {figures['tpm']}" in stdout
    assert set(figures["cases"]) == {
        "rpm, defaults",
        "rpm, configured",
        "tpm, defaults",
        "tpm, configured",
    }
    for case, sides in figures["cases"].items():
        row = sides["aeval"]
        assert row["rows"] == figures["samples"]
        assert row["efficiency"] == pytest.approx(row["minimum"] / row["wall"])
        assert re.search(
            rf"^{re.escape(case)} +aeval +{row['wall']:.1f} +{row['minimum']:.1f} +"
            rf"{row['efficiency']:.2f} +{row['rate_limited']} +[\d.]+% +{row['lost']} +"
            rf"{row['verdict']}$",
            stdout,
            re.MULTILINE,
        ), case
