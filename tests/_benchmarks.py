"""Running the scripts of benchmarks/ from the tests (smoke runs, never timing checks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``benchmarks/<name>`` with this interpreter and capture its output."""
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def quick_figures(name: str, out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    """Run ``name --quick --json out`` and return the process and the figures it wrote."""
    done = run_script(name, "--quick", "--json", str(out), *args)
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text())
