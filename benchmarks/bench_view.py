"""How long ``aeval view`` takes to serve the pages of a large run.

This script stores one run of 100,000 rows (every fifth one failed, tags and metadata on
each), starts ``aeval view`` on it in its own process (``--port 0``), and times, with httpx
from this process, each page from request to last byte:

- ``first page (cold)``: the run's first page when the server has not read the run yet (it
  indexes the run from the store's columns and reads the page's 50 rows);
- ``first page (warm)``: the same page again, the run's index in memory;
- ``page 1000``, ``failed filter``, ``search`` (one sample by its words, another sample at
  each repetition), ``search every row`` (a word of every row, another word at each
  repetition: the first decodes every row once, for its search text; the others reuse the
  texts), ``review queue`` (``--pick failures --sample 50``): each warm;
- ``runs list``;
- with ``--runs N`` (N runs of the name, each of ``--rows`` rows, the last ones timed):
  ``grid of 3 (cold)``, ``grid of 3`` and ``grid, verdicts differ`` (``/grid`` of the last
  three runs), ``labels export``.

Each warm figure is the median of the repetitions (min–max in brackets); the size of each page
is printed too (a page holds 50 rows whatever the run's size). The baseline, measured in the
same process on the same store: ``RunStore.load`` of the run, the whole report rebuilt from
its rows (what the viewer did on a run's first page before it read pages from SQLite).
Usage::

    python benchmarks/bench_view.py              # 100,000 rows, 5 repetitions
    python benchmarks/bench_view.py --quick --json out.json
    python benchmarks/bench_view.py --runs 50 --rows 1000   # the reviewer's store
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
from _machine import machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
)

ROOT = Path(__file__).resolve().parent.parent
_EVERY_ROW = ("capital", "country", "number", "what", "city")
"""Words of every row: each repetition of ``search every row`` searches another."""


def build(count: int) -> EvaluationReport:
    rows = []
    for index in range(count):
        sample = EvaluationSample(
            f"sample {index}",
            [f"What is the capital of country number {index}?"],
            f"City {index}",
            tags=["geo", f"t{index % 7}"],
            metadata={"source": "atlas", "id": index},
        )
        failed = index % 5 == 0
        result = (
            EvaluationResult.failing(0.0, f"Expected 'City {index}', got 'Town {index}'")
            if failed
            else EvaluationResult.passing()
        )
        output = f"Town {index}" if failed else f"City {index}"
        rows.append(EvaluationRow.from_result(sample, "Exact", output, result, index=index))
    run = RunInfo(started_at=time.time() - 60, finished_at=time.time(), complete=True)
    return EvaluationReport(rows, run=run)


async def store(path: Path, report: EvaluationReport, runs: int = 1) -> list[str]:
    async with RunStore(path) as opened:
        return [await opened.save(report, "bench", git_dirty=False) for _ in range(runs)]


async def load_time(path: Path, run: str) -> float:
    async with RunStore(path) as opened:
        start = time.perf_counter()
        await opened.load(run)
        return time.perf_counter() - start


def timed(http: httpx.Client, path: str) -> tuple[float, int]:
    start = time.perf_counter()
    response = http.get(path)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed, len(response.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1, help="runs stored (each of --rows rows)")
    parser.add_argument("--quick", action="store_true", help="5,000 rows, 2 repetitions")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()
    rows, repeats = (5_000, 2) if args.quick else (args.rows, args.repeats)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "runs.sqlite"
        start = time.perf_counter()
        ids = anyio.run(store, path, build(rows), max(args.runs, 1))
        run = ids[-1]
        built = time.perf_counter() - start
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "aeval", "view", "--store", str(path), "--port", "0"]
        command += ["--pick", "failures", "--sample", "50"]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as server:
            assert server.stdout is not None
            found = re.search(r"at (http://[\d.]+:\d+)/", server.stdout.readline())
            if found is None:
                raise SystemExit("aeval view did not print its address")
            try:
                with httpx.Client(base_url=found.group(1), timeout=600) as http:
                    figures = measure(http, run, rows, repeats, grid=ids[-3:])
            finally:
                server.send_signal(signal.SIGINT)
                server.wait(60)
        baseline = anyio.run(load_time, path, run)
    figures["baseline"] = {"RunStore.load": baseline}
    mode = " (quick mode)" if args.quick else ""
    stored = f"{len(ids)} runs of {rows:,} rows" if len(ids) > 1 else f"a {rows:,}-row run"
    print(f"aeval view over {stored}{mode} (stored in {built:.1f} s)")
    print(f"  baseline: RunStore.load of the run {baseline * 1000:8.1f} ms")
    for name, entry in figures["pages"].items():
        times = entry["seconds"]
        spread = f" [{min(times) * 1000:.0f}–{max(times) * 1000:.0f}]" if len(times) > 1 else ""
        print(
            f"  {name:<20} {statistics.median(times) * 1000:8.1f} ms{spread:<14} "
            f"{entry['bytes'] / 1024:8.1f} KiB"
        )
    if args.json is not None:
        out = {"machine": machine("starlette", "uvicorn", "httpx"), "figures": figures}
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


def measure(
    http: httpx.Client, run: str, rows: int, repeats: int, *, grid: list[str]
) -> dict[str, Any]:
    pages: dict[str, dict[str, Any]] = {}
    cold, size = timed(http, f"/runs/{run}")
    pages["first page (cold)"] = {"seconds": [cold], "bytes": size}
    last = max(1, rows // 50 // 2)
    grid_path = "/grid?" + "&".join(f"run={run_id}" for run_id in grid)
    more = []
    if len(grid) == 3:
        cold, size = timed(http, grid_path)
        pages["grid of 3 (cold)"] = {"seconds": [cold], "bytes": size}
        more = [
            ("grid of 3", grid_path),
            ("grid, verdicts differ", grid_path + "&filter=differ"),
            ("labels export", f"/runs/{run}/labels.csv"),
        ]
    for name, path in (
        ("first page (warm)", f"/runs/{run}"),
        (f"page {last}", f"/runs/{run}?page={last}"),
        ("failed filter", f"/runs/{run}?filter=failed&page=2"),
        ("search", f"/runs/{run}?q=country+number+{{last_row}}%3F"),
        ("search every row", f"/runs/{run}?q={{word}}&page=3"),
        ("review queue", f"/runs/{run}/review"),
        ("runs list", "/"),
        *more,
    ):
        times = []
        for repeat in range(repeats):
            word = _EVERY_ROW[repeat % len(_EVERY_ROW)]
            elapsed, size = timed(http, path.format(last_row=rows - 1 - repeat, word=word))
            times.append(elapsed)
        pages[name] = {"seconds": times, "bytes": size}
    return {"rows": rows, "repeats": repeats, "pages": pages}


if __name__ == "__main__":
    main()
