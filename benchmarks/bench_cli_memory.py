"""Peak memory of ``aeval run`` over a JSONL dataset, at two sizes, against a baseline.

``aeval run`` streams JSONL sources: samples are read as the workers need them and the report
holds only the rows that did not pass (every row goes to ``rows.jsonl``), so the process's peak
memory should grow only with the failures it keeps (1 % of the samples fail here), not with the
dataset. The baseline, measured in the same run, is what the
command did before: load the whole file with ``Samples.load`` (the first step of a run that
then also holds every row).

Each measurement is a fresh subprocess whose peak RSS is read from ``wait4``.

Usage::

    python benchmarks/bench_cli_memory.py              # 20,000 and 200,000 samples
    python benchmarks/bench_cli_memory.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _machine import machine

TARGET = """
async def answer(question: str) -> str:
    number = question.split()[2]
    return "wrong" if number.endswith("77") else question
"""

CONFIG = """
samples: {samples}
target: bench_target:answer
concurrency: 50
strategies: [{{name: exact_match}}, {{name: not_blank}}]
output: {{dir: out, formats: [json]}}
"""

LOAD = """
import sys, anyio
from aeval import Samples
samples = anyio.run(Samples.load, sys.argv[1])
print(len(samples))
"""


def write_dataset(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            question = f"question number {i} " + "padding " * 20
            handle.write(
                json.dumps(
                    {
                        "name": f"s{i}",
                        "parameters": [question.strip()],
                        "expected-output": question.strip(),
                        "tags": ["bench"],
                    }
                )
                + "\n"
            )


def peak_rss_mb(command: list[str], cwd: Path) -> tuple[float, int]:
    """Run ``command``; return its peak RSS in MB and its exit code."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, process.returncode


def measure(sizes: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": sizes, "aeval run": [], "load whole (baseline)": []}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bench_target.py").write_text(TARGET)
        (root / "load.py").write_text(LOAD)
        for size in sizes:
            data = root / f"samples-{size}.jsonl"
            write_dataset(data, size)
            config = root / f"aeval-{size}.yaml"
            config.write_text(CONFIG.format(samples=data.name))
            rss, code = peak_rss_mb(
                [sys.executable, "-m", "aeval", "run", str(config), "--quiet"], root
            )
            if code != 0:
                raise SystemExit(f"aeval run failed with exit code {code}")
            report = json.loads((root / "out" / "report.json").read_text())
            results["aeval run"].append(
                {
                    "peak_mb": rss,
                    "samples": report["totalSamples"],
                    "rows": report["rows"],
                    "failed": report["failed"],
                }
            )
            rss, code = peak_rss_mb([sys.executable, str(root / "load.py"), str(data)], root)
            results["load whole (baseline)"].append({"peak_mb": rss, "exit": code})
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (2,000 and 20,000)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    sizes = [2_000, 20_000] if args.quick else [20_000, 200_000]
    info = machine("aeval-engine")
    print(
        f"aeval run peak memory over JSONL{' (quick mode)' if args.quick else ''}: {info['date']}"
    )
    print(f"Python {info['python']}, {info['cpus']} CPUs, load average {info['load_average']}")
    figures = measure(sizes)
    print()
    header = f"{'engine':<24}" + "".join(f"{f'peak MB @ {s}':>20}" for s in sizes)
    print(header + f"{'growth MB':>12}")
    print("-" * len(header + " " * 12))
    for engine in ("aeval run", "load whole (baseline)"):
        peaks = [entry["peak_mb"] for entry in figures[engine]]
        cells = "".join(f"{peak:>20.1f}" for peak in peaks)
        print(f"{engine:<24}{cells}{peaks[-1] - peaks[0]:>+12.1f}")
    rows = figures["aeval run"][-1]
    print(
        f"\nthe largest run: {rows['samples']} samples, {rows['rows']} rows counted, "
        f"{rows['failed']} failed rows held in the report"
    )
    growth = figures["aeval run"][-1]["peak_mb"] - figures["aeval run"][0]["peak_mb"]
    baseline = (
        figures["load whole (baseline)"][-1]["peak_mb"]
        - figures["load whole (baseline)"][0]["peak_mb"]
    )
    print(
        f"summary: aeval run grew {growth:+.1f} MB for {sizes[1] // sizes[0]}x the samples; "
        f"loading the file whole grew {baseline:+.1f} MB"
    )
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
