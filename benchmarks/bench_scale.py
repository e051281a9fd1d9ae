"""Scaling out: one process against Ray workers, side by side in one run, and the driver's ceiling.

Scenarios (see docs/scale.md):

* ``cpu``: a CPU-bound sync function (a few ms of pure Python per sample) over 2,000
  samples: one process (its worker threads share the GIL) against Ray with 1 and 2 workers.
  Goal on a 2-core machine: >= 1.7x speed-up with 2 workers.
* ``io``: an I/O-bound function (50 ms sleep) over 2,000 samples at concurrency 100: one
  process against Ray with 1 worker (concurrency 100 on it). Goal: >= 0.9x the in-process
  rows/s.
* ``ceiling``: the most rows per second the driver absorbs: batches of rows in the wire
  format unpickled and delivered into the Scorer's report (and a JSONL sink, as ``aeval run``
  writes), with no evaluation behind them. Any cluster is bounded by it.

Each Ray figure is given twice: the wall clock of the whole run, and the same minus the
workers' start (actor processes starting and reading the function), which a long run pays
once. Ray starts once, before the first measurement, and is not counted.

Usage::

    python benchmarks/bench_scale.py                # every scenario, medians of 3
    python benchmarks/bench_scale.py --quick --json out.json   # smoke mode (a test runs it)
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter
from typing import Any

import anyio
import orjson
from _machine import machine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aeval import EvaluationResult, EvaluationSample, JsonlSink, Parameters, Samples, Scorer
from aeval._engine._executor import Deliver, ExecutorJob

ROOT = str(Path(__file__).resolve().parent.parent)
CPU_GOAL = 1.7
IO_GOAL = 0.9


@dataclass(frozen=True, slots=True)
class Settings:
    reps: int
    cpu_n: int
    cpu_loops: int
    io_n: int
    io_latency: float
    io_concurrency: int
    ceiling_rows: int
    ceiling_batch: int


FULL = Settings(
    reps=3,
    cpu_n=2_000,
    cpu_loops=25_000,
    io_n=2_000,
    io_latency=0.050,
    io_concurrency=100,
    ceiling_rows=200_000,
    ceiling_batch=200,
)
QUICK = Settings(
    reps=1,
    cpu_n=60,
    cpu_loops=5_000,
    io_n=100,
    io_latency=0.010,
    io_concurrency=20,
    ceiling_rows=5_000,
    ceiling_batch=100,
)


def burn(params: Parameters) -> str:
    """A few milliseconds of pure Python (the loop count is the second parameter)."""
    total = 0
    for i in range(int(params[1])):
        total += i * i % 7
    return f"{params[0]}:{total % 10}"


def sleeper(latency: float) -> Any:
    async def sleep(params: Parameters) -> str:
        await anyio.sleep(latency)
        return str(params[0])

    return sleep


def not_empty(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(bool(output))


def make_samples(n: int, *extra: object) -> Samples:
    return Samples(EvaluationSample(f"s{i}", [f"s{i}", *extra], None) for i in range(n))


@dataclass(slots=True)
class Timed:
    wall: float
    startup: float
    rows: int

    @property
    def steady(self) -> float:
        return max(1e-9, self.wall - self.startup)


async def run(samples: Samples, function: Any, concurrency: int, executor: Any) -> Timed:
    scorer = Scorer(concurrency, keep="none", executor=executor)
    started = perf_counter()
    report = await scorer.evaluate(samples, function, not_empty)
    wall = perf_counter() - started
    startup = executor.startup_seconds if executor is not None else 0.0
    return Timed(wall, startup or 0.0, report.evaluation_count)


def ray_executor(workers: int) -> Any:
    from aeval.ray import RayExecutor

    return RayExecutor(workers=workers, python_path=[str(Path(__file__).resolve().parent)])


async def series(
    label: str, samples: Samples, function: Any, concurrency: int, workers: int | None, reps: int
) -> dict[str, Any]:
    runs = []
    for _ in range(reps):
        executor = None if workers is None else ray_executor(workers)
        runs.append(await run(samples, function, concurrency, executor))
    wall = statistics.median(r.wall for r in runs)
    steady = statistics.median(r.steady for r in runs)
    return {
        "label": label,
        "workers": workers,
        "concurrency": concurrency,
        "wall_s": wall,
        "steady_s": steady,
        "startup_s": statistics.median(r.startup for r in runs),
        "rows": runs[0].rows,
        "rows_per_s": runs[0].rows / wall,
        "steady_rows_per_s": runs[0].rows / steady,
        "walls": [r.wall for r in runs],
    }


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def print_series(points: Sequence[dict[str, Any]], base: dict[str, Any]) -> None:
    rows = []
    for p in points:
        rows.append(
            [
                p["label"],
                f"{p['wall_s']:.2f}",
                f"{p['startup_s']:.2f}",
                f"{p['steady_s']:.2f}",
                f"{p['rows_per_s']:.0f}",
                f"{p['steady_rows_per_s']:.0f}",
                f"{base['wall_s'] / p['wall_s']:.2f}",
                f"{base['wall_s'] / p['steady_s']:.2f}",
            ]
        )
    headers = ["engine", "wall s", "start s", "steady s", "rows/s", "steady rows/s"]
    headers += ["speed-up", "steady speed-up"]
    print(table(headers, rows))


async def scenario_cpu(settings: Settings) -> dict[str, Any]:
    n = settings.cpu_n
    samples = make_samples(n, settings.cpu_loops)
    started = perf_counter()
    for sample in samples[:20]:
        burn(sample.parameters)
    per_sample = (perf_counter() - started) / 20
    print(f"\n(a) CPU-bound: {n} samples of {per_sample * 1000:.1f} ms of pure Python, ", end="")
    print(f"medians of {settings.reps}")
    local = await series("one process", samples, burn, 2, None, settings.reps)
    one = await series("ray, 1 worker", samples, burn, 1, 1, settings.reps)
    two = await series("ray, 2 workers", samples, burn, 1, 2, settings.reps)
    print_series([local, one, two], local)
    speedup = local["wall_s"] / two["wall_s"]
    steady = local["wall_s"] / two["steady_s"]
    result = {
        "ms_per_sample": per_sample * 1000,
        "points": [local, one, two],
        "speedup_2_workers": speedup,
        "steady_speedup_2_workers": steady,
        "verdict": verdict(speedup >= CPU_GOAL),
        "steady_verdict": verdict(steady >= CPU_GOAL),
    }
    print(
        f"speed-up with 2 workers: {speedup:.2f}x whole run ({result['verdict']}), "
        f"{steady:.2f}x without the workers' start ({result['steady_verdict']}); "
        f"goal >= {CPU_GOAL}x"
    )
    return result


async def scenario_io(settings: Settings) -> dict[str, Any]:
    n, latency, c = settings.io_n, settings.io_latency, settings.io_concurrency
    samples = make_samples(n)
    function = sleeper(latency)
    print(f"\n(b) I/O-bound: {n} samples of {latency * 1000:g} ms, concurrency {c}, ", end="")
    print(f"medians of {settings.reps}")
    local = await series("one process", samples, function, c, None, settings.reps)
    one = await series("ray, 1 worker", samples, function, c, 1, settings.reps)
    print_series([local, one], local)
    ratio = one["rows_per_s"] / local["rows_per_s"]
    steady = one["steady_rows_per_s"] / local["rows_per_s"]
    result = {
        "points": [local, one],
        "ratio_1_worker": ratio,
        "steady_ratio_1_worker": steady,
        "verdict": verdict(ratio >= IO_GOAL),
        "steady_verdict": verdict(steady >= IO_GOAL),
    }
    print(
        f"rows/s of 1 worker / one process: {ratio:.2f} whole run ({result['verdict']}), "
        f"{steady:.2f} without the worker's start ({result['steady_verdict']}); goal >= {IO_GOAL}"
    )
    return result


class Replay:
    """An executor that delivers pre-serialised batches of rows as fast as it can."""

    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs

    def describe(self) -> str:
        return "replay"

    def prepare(self, function: object, strategies: Sequence[object]) -> object:
        return None

    async def execute(self, job: ExecutorJob, deliver: Deliver) -> None:
        from aeval.ray._wire import loads

        for blob in self.blobs:
            await deliver(loads(blob))


async def scenario_ceiling(settings: Settings) -> dict[str, Any]:
    from aeval.ray._wire import dumps

    n, size = settings.ceiling_rows, settings.ceiling_batch
    print(f"\n(c) the driver's ceiling: {n} rows delivered in batches of {size}, ", end="")
    print(f"medians of {settings.reps}")
    template = await Scorer(8).evaluate(make_samples(size), sleeper(0), not_empty)
    rows = [replace(row, index=row.index) for row in template.evaluations]
    blobs = []
    for start in range(0, n, size):
        blobs.append(dumps([replace(row, index=start + i) for i, row in enumerate(rows)]))
    points: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aeval-bench-") as tmp:
        for label, sink in (("report only", False), ("report + rows.jsonl", True)):
            walls = []
            for _ in range(settings.reps):
                sinks = [JsonlSink(Path(tmp, "rows.jsonl"))] if sink else []
                scorer = Scorer(keep="none", sinks=sinks, executor=Replay(blobs))
                started = perf_counter()
                report = await scorer.evaluate(make_samples(0), sleeper(0), not_empty)
                walls.append(perf_counter() - started)
                assert report.evaluation_count == len(blobs) * size
            wall = statistics.median(walls)
            points.append({"label": label, "wall_s": wall, "rows_per_s": len(blobs) * size / wall})
    print(
        table(
            ["driver", "wall s", "rows/s"],
            [[p["label"], f"{p['wall_s']:.2f}", f"{p['rows_per_s']:,.0f}"] for p in points],
        )
    )
    return {"rows": n, "batch": size, "points": points}


async def main_async(
    settings: Settings, scenarios: Sequence[str], address: str | None
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    if "ceiling" in scenarios:
        results["ceiling"] = await scenario_ceiling(settings)
    if {"cpu", "io"} & set(scenarios):
        import ray

        started = perf_counter()
        # a local instance's workers inherit this environment (a runtime_env would cost each
        # worker's start about a second); a remote cluster needs aeval installed on its nodes
        path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
        os.environ["PYTHONPATH"] = path
        ray.init(
            address=address,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
        results["ray_init_s"] = perf_counter() - started
        print(f"\nray.init (not counted below): {results['ray_init_s']:.1f} s")
        if address is not None:
            print(f"(connected to the cluster at {address})")
        try:
            if "cpu" in scenarios:
                results["cpu"] = await scenario_cpu(settings)
            if "io" in scenarios:
                results["io"] = await scenario_io(settings)
        finally:
            ray.shutdown()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "scenario", nargs="?", default="all", choices=["all", "cpu", "io", "ceiling"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repetition")
    parser.add_argument("--reps", type=int, help="repetitions per measurement (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--address", help="a running Ray cluster to use (default: start one)")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.reps is not None:
        settings = replace(settings, reps=args.reps)
    scenarios = ["ceiling", "cpu", "io"] if args.scenario == "all" else [args.scenario]
    info = machine("anyio", "ray")
    print(f"aeval scale benchmarks{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['platform']}, {info['cpus']} CPUs, ", end="")
    print(f"load average {info['load_average']}")
    results: dict[str, Any] = {"machine": info, "quick": args.quick, "reps": settings.reps}
    results |= anyio.run(main_async, settings, scenarios, args.address)
    verdicts = {
        k: v["verdict"] for k, v in results.items() if isinstance(v, dict) and "verdict" in v
    }
    print("\nsummary: " + (", ".join(f"{k} {v}" for k, v in verdicts.items()) or "-"))
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
