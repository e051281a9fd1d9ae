"""What ``import aeval`` costs, against importing only anyio and orjson, in the same run.

Issue 25's goal: ``import aeval`` in at most 60 ms in-process (``python -X importtime``,
the minimum of 10), and a fresh ``python -c "import aeval"`` within 1.5x of one that
imports only anyio and orjson. Printed: the in-process import time of each side (the sum of
the top-level modules' cumulative times that ``-X importtime`` reports), the wall time of a
fresh interpreter for each (and for ``pass``, the interpreter alone), and, for contrast, the
first names a program uses (``from aeval import Scorer, Samples``). Minimum of ``--reps``
runs per side, the sides alternating.

Usage::

    python benchmarks/bench_import.py              # 10 runs per side
    python benchmarks/bench_import.py --quick --json out.json   # 2 runs per side
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _machine import machine

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 60.0
GOAL_RATIO = 1.5

SIDES = {
    "python alone": "pass",
    "anyio + orjson (baseline)": "import anyio, orjson",
    "import aeval": "import aeval",
    "from aeval import Scorer, Samples": "from aeval import Scorer, Samples",
}


def _env() -> dict[str, str]:
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def _importtime(code: str) -> list[tuple[str, int]]:
    """The top-level imports ``-X importtime`` reports for ``code``: name, cumulative µs."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    )
    lines = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        if not name.startswith("  "):
            lines.append((name.strip(), int(cumulative)))
    return lines


def importtime_ms(code: str) -> float:
    """The in-process import time of ``code``: the cumulative times of the top-level imports
    it makes (the interpreter's own start-up imports left out)."""
    startup = {name for name, _ in _importtime("pass")}
    return sum(us for name, us in _importtime(code) if name not in startup) / 1000


def wall_ms(code: str) -> float:
    """The wall time of a fresh interpreter that runs ``code``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=_env())
    return (time.perf_counter() - started) * 1000


def measure(reps: int) -> dict[str, Any]:
    figures: dict[str, dict[str, list[float]]] = {
        side: {"importtime_ms": [], "wall_ms": []} for side in SIDES
    }
    order = list(SIDES)
    for rep in range(reps):
        for side in order if rep % 2 == 0 else reversed(order):
            figures[side]["wall_ms"].append(wall_ms(SIDES[side]))
            if SIDES[side] != "pass":
                figures[side]["importtime_ms"].append(importtime_ms(SIDES[side]))
    best = {
        side: {key: min(values) if values else 0.0 for key, values in runs.items()}
        for side, runs in figures.items()
    }
    return {"runs": figures, "best": best}


def report(figures: dict[str, Any]) -> None:
    best = figures["best"]
    print(f"\n{'side':<36}{'in-process ms':>15}{'fresh interpreter ms':>22}")
    for side, values in best.items():
        inside = f"{values['importtime_ms']:.1f}" if SIDES[side] != "pass" else "-"
        print(f"{side:<36}{inside:>15}{values['wall_ms']:>22.1f}")
    aeval = best["import aeval"]
    base = best["anyio + orjson (baseline)"]
    ratio = aeval["wall_ms"] / base["wall_ms"]
    verdict = "PASS" if aeval["importtime_ms"] <= GOAL_MS else "MISS"
    inside = aeval["importtime_ms"]
    print(f"goal: import aeval <= {GOAL_MS:g} ms in-process: {inside:.1f} ms {verdict}")
    verdict = "PASS" if ratio <= GOAL_RATIO else "MISS"
    print(f"goal: fresh import aeval <= {GOAL_RATIO:g}x anyio + orjson: {ratio:.2f}x {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=10, help="runs per side (default 10)")
    parser.add_argument("--quick", action="store_true", help="2 runs per side")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    info = machine("aeval-engine", "anyio", "orjson")
    print(f"import aeval{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs ({info['cpu']})")
    print(f"load average {info['load_average']}")
    figures = measure(2 if args.quick else args.reps)
    report(figures)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
