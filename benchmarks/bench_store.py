"""Storing a run in the run store against writing the same rows to ``rows.jsonl``.

``aeval run`` writes every row twice: to ``rows.jsonl`` (``JsonlSink``) and to the run store
(``store.sink(...)``, SQLite). The target: storing a 100,000-row run takes no more than 2x writing
its rows to ``rows.jsonl``. This script builds the rows of a run first (50,000 samples, two
strategies, tags, a judge's metadata on half the rows, one failure in seven), then times, in
the same run and alternating the order, each engine from the run's start to its last byte:

- ``rows.jsonl (baseline)``: a ``JsonlSink`` given the run's header, every row, its end;
- ``store sink``: ``store.sink(...)`` given the same (what ``aeval run`` does), then the store
  closed, which folds SQLite's write-ahead log into the file;
- ``store save``: ``RunStore.save(report)`` of the whole report, then the store closed.

After a warm-up of 2,000 rows, each figure is the median wall time of the repetitions
(min–max in brackets), then its ratio to the baseline's, and the same ratio for the CPU time
of the whole process (its threads included: the store writes in a worker thread). Every
stored run is read back and its rows counted. Usage::

    python benchmarks/bench_store.py              # 100,000 rows, 3 repetitions
    python benchmarks/bench_store.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from _machine import machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    RunInfo,
    RunStore,
)


def build_rows(count: int) -> list[EvaluationRow]:
    rows = []
    for i in range(count // 2):
        sample = EvaluationSample(
            f"sample-{i}",
            [f"What is the status of order {i}? " + "context " * 8],
            f"Order {i} has shipped.",
            tags=["faq", "orders"] if i % 3 else ["smoke"],
        )
        output = f"Order {i} has shipped." if i % 7 else "I do not know."
        exact = EvaluationResult.from_boolean(i % 7 != 0, None if i % 7 else "not equal")
        judged = EvaluationResult.passing(0.9, "The answer states the order's status.")
        if i % 7 == 0:
            judged = EvaluationResult.failing(0.2, "The answer does not give the status.")
        judged = judged.with_metadata(
            {"judge_model": "judge-8b", "prompt_tokens": 210, "completion_tokens": 24}
        )
        for position, (name, result) in enumerate((("ExactMatch", exact), ("Judge", judged))):
            rows.append(
                EvaluationRow.from_result(
                    sample, name, output, result, duration=0.012, index=i, position=position
                )
            )
    return rows


def header(count: int) -> RunInfo:
    now = time.time()
    return RunInfo(
        started_at=now,
        complete=False,
        samples_expected=count // 2,
        concurrency=8,
        strategies=("ExactMatch", "Judge"),
        aeval_version="bench",
    )


Timing = tuple[float, float]
"""Wall-clock seconds and CPU seconds (every thread of the process)."""


def clock() -> Timing:
    return time.perf_counter(), time.process_time()


def since(start: Timing) -> Timing:
    wall, cpu = clock()
    return wall - start[0], cpu - start[1]


async def write_jsonl(rows: list[EvaluationRow], folder: Path) -> Timing:
    run = header(len(rows))
    started = clock()
    sink = JsonlSink(folder / "rows.jsonl")
    await sink.run_started(run)
    for row in rows:
        await sink.send(row)
    await sink.run_finished(run.replace(finished_at=time.time(), complete=True))
    await sink.flush()
    return since(started)


async def store_sink(rows: list[EvaluationRow], folder: Path) -> Timing:
    run = header(len(rows))
    started = clock()
    store = RunStore(folder / "runs.sqlite")
    sink = store.sink("bench")
    await sink.run_started(run)
    for row in rows:
        await sink.send(row)
    await sink.run_finished(run.replace(finished_at=time.time(), complete=True))
    await sink.flush()
    await store.aclose()
    return since(started)


Engine = Callable[[list[EvaluationRow], Path], Awaitable[Timing]]


def save_store(report: EvaluationReport) -> Engine:
    async def save(rows: list[EvaluationRow], folder: Path) -> Timing:
        started = clock()
        store = RunStore(folder / "runs.sqlite")
        await store.save(report, "bench")
        await store.aclose()
        return since(started)

    return save


def stored_rows(folder: Path) -> int:
    connection = sqlite3.connect(folder / "runs.sqlite")
    try:
        (count,) = connection.execute("SELECT count(*) FROM rows").fetchone()
    finally:
        connection.close()
    return int(count)


def measure(count: int, reps: int) -> dict[str, Any]:
    rows = build_rows(count)
    report = EvaluationReport(rows, run=header(count).replace(finished_at=time.time()))
    engines: dict[str, Engine] = {
        "rows.jsonl (baseline)": write_jsonl,
        "store sink": store_sink,
        "store save": save_store(report),
    }
    times: dict[str, list[float]] = {name: [] for name in engines}
    cpu: dict[str, list[float]] = {name: [] for name in engines}
    order = list(engines)
    warm_up = build_rows(2_000)
    for name in order:
        if name != "store save":
            with tempfile.TemporaryDirectory() as folder:
                anyio.run(engines[name], warm_up, Path(folder))
    for rep in range(reps):
        for name in order if rep % 2 == 0 else reversed(order):
            with tempfile.TemporaryDirectory() as folder:
                wall, used = anyio.run(engines[name], rows, Path(folder))
                times[name].append(wall)
                cpu[name].append(used)
                if name != "rows.jsonl (baseline)":
                    assert stored_rows(Path(folder)) == len(rows), name
    baseline = statistics.median(times["rows.jsonl (baseline)"])
    cpu_baseline = statistics.median(cpu["rows.jsonl (baseline)"])
    return {
        "rows": len(rows),
        "repetitions": reps,
        "seconds": times,
        "cpu_seconds": cpu,
        "median": {name: statistics.median(values) for name, values in times.items()},
        "ratio": {name: statistics.median(values) / baseline for name, values in times.items()},
        "cpu_ratio": {
            name: statistics.median(values) / cpu_baseline for name, values in cpu.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 rows, one repetition")
    parser.add_argument("--rows", type=int, help="rows in the run (default 100,000)")
    parser.add_argument("--reps", type=int, help="repetitions (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    count = args.rows or (10_000 if args.quick else 100_000)
    reps = args.reps or (1 if args.quick else 3)
    info = machine("aeval-engine")
    print(f"Run store against rows.jsonl{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs, load average {info['load_average']}")
    print(f"SQLite {sqlite3.sqlite_version}; {count:,} rows, {reps} repetition(s)")
    figures = measure(count, reps)
    print()
    print(f"{'engine':<24}{'median s':>10}  {'range':<17}{'x baseline':>11}{'CPU x':>8}")
    for name, values in figures["seconds"].items():
        spread = f"[{min(values):.3f}–{max(values):.3f}]"
        ratio, cpu_ratio = figures["ratio"][name], figures["cpu_ratio"][name]
        print(
            f"{name:<24}{figures['median'][name]:>10.3f}  {spread:<17}{ratio:>10.2f}x"
            f"{cpu_ratio:>7.2f}x"
        )
    worst = max(figures["ratio"]["store sink"], figures["ratio"]["store save"])
    verdict = "within" if worst <= 2.0 else "OVER"
    print(f"\nStoring is {worst:.2f}x writing rows.jsonl: {verdict} the 2x target.")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
