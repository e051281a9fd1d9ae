"""Benchmarks of the aeval Scorer against a plain-asyncio baseline measured in the same run.

Scenarios (see benchmarks/README.md and docs/performance.md):

* ``overhead``: per-sample cost at zero latency (20,000 samples, concurrency 100).
  Target (issue 25): aeval <= 0.35x the baseline's wall time, which on the machine the
  target was set on is <= 3 us per sample; the verdict is on the ratio, the machine-free
  form. The CPU time of the process (``process_time``) is printed beside the wall time: on
  a shared machine it is the steadier figure. The check is the built-in
  ``ExactMatchStrategy`` (a text check, run on the event loop); a third row runs the same
  check as a plain function, which the Scorer runs in a worker thread, to show what that
  hand-off costs; a fourth the same function marked ``@inline`` (run on the event loop).
* ``efficiency``: ideal / actual wall time for 2,000 samples of 50 ms latency at concurrency
  100 and 500. Target: >= 0.9 at 500.
* ``memory``: peak RSS growth of a fresh subprocess evaluating samples streamed from JSONL
  with ``keep="none"``, at two sizes (10,000 and 100,000). Target: no growth with the count.

The baseline is what a user would write by hand: an ``asyncio.Semaphore`` and
``asyncio.gather`` (one task per sample) over the same async function and the same equality
check, collecting one result record per sample.

Usage::

    python benchmarks/bench_scorer.py                 # all three scenarios, medians of 3
    python benchmarks/bench_scorer.py overhead --reps 5
    python benchmarks/bench_scorer.py --quick --json out.json   # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter, process_time
from typing import Any

import anyio
import anyio.lowlevel
import orjson
from _machine import machine, reset_peak, status_mb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aeval import EvaluationResult, EvaluationSample, Samples, Scorer
from aeval._samples import Parameters
from aeval.strategies import ExactMatchStrategy, inline

OVERHEAD_TARGET = 0.35
OVERHEAD_TARGET_US = 3.0
EFFICIENCY_TARGET = 0.9
EFFICIENCY_TARGET_CONCURRENCY = 500
MEMORY_FLAT_MB = 5.0

Function = Callable[[Parameters], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Settings:
    reps: int
    overhead_n: int
    overhead_concurrency: int
    efficiency_n: int
    efficiency_latency: float
    efficiency_concurrencies: tuple[int, ...]
    memory_sizes: tuple[int, ...]
    memory_concurrency: int


FULL = Settings(
    reps=3,
    overhead_n=20_000,
    overhead_concurrency=100,
    efficiency_n=2_000,
    efficiency_latency=0.050,
    efficiency_concurrencies=(100, 500),
    memory_sizes=(10_000, 100_000),
    memory_concurrency=100,
)
QUICK = Settings(
    reps=1,
    overhead_n=2_000,
    overhead_concurrency=100,
    efficiency_n=1_000,
    efficiency_latency=0.010,
    efficiency_concurrencies=(100, 500),
    memory_sizes=(1_000, 5_000),
    memory_concurrency=100,
)


def equals(sample: EvaluationSample, output: Any) -> EvaluationResult:
    """The equality check: the baseline calls it; as a strategy it is a plain function, which
    the Scorer runs in a worker thread (it might block)."""
    return EvaluationResult.from_boolean(output == sample.expected_output)


@inline
def equals_on_loop(sample: EvaluationSample, output: Any) -> EvaluationResult:
    """The same check, marked ``@inline``: the Scorer calls it on the event loop."""
    return EvaluationResult.from_boolean(output == sample.expected_output)


EXACT_MATCH = ExactMatchStrategy()
"""The same check as aeval's built-in text check, which runs on the event loop."""


async def identity(params: Parameters) -> Any:
    return params[0]


async def identity_checkpoint(params: Parameters) -> Any:
    await anyio.lowlevel.checkpoint()
    return params[0]


def sleeping(latency: float) -> Function:
    async def function(params: Parameters) -> Any:
        await anyio.sleep(latency)
        return params[0]

    return function


def make_samples(n: int) -> Samples:
    return Samples(EvaluationSample(f"s{i}", [f"input-{i}"], f"input-{i}") for i in range(n))


@dataclass(slots=True)
class Record:
    """The baseline's result record: one per sample, like a report row."""

    name: str
    output: Any
    result: EvaluationResult
    duration: float


async def baseline(
    samples: Iterable[EvaluationSample], function: Function, concurrency: int
) -> int:
    """Semaphore + gather, one task per sample; returns the number of passing records."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(sample: EvaluationSample) -> Record:
        async with semaphore:
            started = perf_counter()
            output = await function(sample.parameters)
            duration = perf_counter() - started
            return Record(sample.name, output, equals(sample, output), duration)

    records = await asyncio.gather(*(one(sample) for sample in samples))
    return sum(1 for record in records if record.result.passed)


async def aeval_run(
    samples: Any,
    function: Function,
    concurrency: int,
    *,
    keep: str = "all",
    strategy: object = EXACT_MATCH,
) -> int:
    scorer = Scorer(concurrency, keep=keep)  # type: ignore[arg-type]
    report = await scorer.evaluate(samples, function, strategy)
    return report.passed_count


Timing = tuple[float, int, float]
"""One run: wall seconds, rows passed, CPU seconds of this process (``process_time``)."""


async def timed(run: Awaitable[int]) -> Timing:
    cpu = process_time()
    started = perf_counter()
    passed = await run
    return perf_counter() - started, passed, process_time() - cpu


def median_cpu(runs: list[Timing]) -> float:
    return statistics.median(cpu for *_, cpu in runs)


async def interleaved(
    samples: Samples,
    function: Function,
    concurrency: int,
    reps: int,
    strategy: object = EXACT_MATCH,
) -> dict[str, list[Timing]]:
    """Warm both sides up, then alternate them ``reps`` times so they share the noise."""
    warm = samples[:50]
    await aeval_run(warm, function, concurrency, strategy=strategy)
    await baseline(warm, function, concurrency)
    runs: dict[str, list[Timing]] = {"aeval": [], "baseline": []}
    for rep in range(reps):
        order = ("aeval", "baseline") if rep % 2 == 0 else ("baseline", "aeval")
        for side in order:
            if side == "aeval":
                run = aeval_run(samples, function, concurrency, strategy=strategy)
                runs[side].append(await timed(run))
            else:
                runs[side].append(await timed(baseline(samples, function, concurrency)))
    return runs


def median_wall(runs: list[Timing]) -> float:
    return statistics.median(wall for wall, *_ in runs)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def spread(runs: list[Timing]) -> str:
    walls = [wall for wall, *_ in runs]
    return f"{min(walls):.4f}-{max(walls):.4f}"


async def scenario_overhead(settings: Settings) -> dict[str, Any]:
    n, c = settings.overhead_n, settings.overhead_concurrency
    samples = make_samples(n)
    print(f"\n(a) per-sample overhead at zero latency: {n} samples, concurrency {c}, ", end="")
    print(f"medians of {settings.reps}")
    variants: list[dict[str, Any]] = []
    rows: list[list[str]] = []
    for label, function, strategy in (
        ("identity", identity, EXACT_MATCH),
        ("identity+checkpoint", identity_checkpoint, EXACT_MATCH),
        ("identity, check in a thread", identity, equals),
        ("identity, check @inline", identity, equals_on_loop),
    ):
        runs = await interleaved(samples, function, c, settings.reps, strategy)
        a, b = median_wall(runs["aeval"]), median_wall(runs["baseline"])
        ratio = a / b
        cpu_a, cpu_b = median_cpu(runs["aeval"]), median_cpu(runs["baseline"])
        variant: dict[str, Any] = {
            "function": label,
            "n": n,
            "concurrency": c,
            "aeval_wall_s": a,
            "baseline_wall_s": b,
            "aeval_us_per_sample": a / n * 1e6,
            "baseline_us_per_sample": b / n * 1e6,
            "ratio": ratio,
            "aeval_cpu_us_per_sample": cpu_a / n * 1e6,
            "baseline_cpu_us_per_sample": cpu_b / n * 1e6,
            "cpu_ratio": cpu_a / cpu_b,
            "aeval_passed": [p for _, p, *_ in runs["aeval"]],
            "baseline_passed": [p for _, p, *_ in runs["baseline"]],
            "aeval_walls": [w for w, *_ in runs["aeval"]],
            "baseline_walls": [w for w, *_ in runs["baseline"]],
            "verdict": verdict(ratio <= OVERHEAD_TARGET),
        }
        variants.append(variant)
        rows.append(
            [
                label,
                f"{a:.4f} [{spread(runs['aeval'])}]",
                f"{b:.4f} [{spread(runs['baseline'])}]",
                f"{variant['aeval_us_per_sample']:.2f}",
                f"{variant['baseline_us_per_sample']:.2f}",
                f"{ratio:.2f}",
                f"{variant['aeval_cpu_us_per_sample']:.2f} / "
                f"{variant['baseline_cpu_us_per_sample']:.2f} ({variant['cpu_ratio']:.2f})",
                f"{min(variant['aeval_passed'])}/{n}",
                f"{variant['verdict']} (<= {OVERHEAD_TARGET:g}x)"
                if strategy is EXACT_MATCH
                else "-",
            ]
        )
    headers = ["function", "aeval wall s", "baseline wall s", "aeval us/sample"]
    headers += ["baseline us/sample", "ratio", "cpu us/sample aeval / baseline (ratio)"]
    headers += ["passed", "target"]
    print(table(headers, rows))
    first = variants[0]["aeval_us_per_sample"]
    print(
        f"    target: <= {OVERHEAD_TARGET:g}x the baseline (about {OVERHEAD_TARGET_US:g} us ",
        end="",
    )
    print(f"per sample where it was set); here {first:.2f} us per sample")
    return {"variants": variants, "verdict": variants[0]["verdict"]}


async def scenario_efficiency(settings: Settings) -> dict[str, Any]:
    n, latency = settings.efficiency_n, settings.efficiency_latency
    samples = make_samples(n)
    function = sleeping(latency)
    print(f"\n(b) efficiency (ideal / wall): {n} samples of {latency * 1000:g} ms, ", end="")
    print(f"medians of {settings.reps}")
    points: list[dict[str, Any]] = []
    rows: list[list[str]] = []
    for c in settings.efficiency_concurrencies:
        ideal = math.ceil(n / c) * latency
        runs = await interleaved(samples, function, c, settings.reps)
        a, b = median_wall(runs["aeval"]), median_wall(runs["baseline"])
        point: dict[str, Any] = {
            "n": n,
            "latency_s": latency,
            "concurrency": c,
            "ideal_s": ideal,
            "aeval_wall_s": a,
            "baseline_wall_s": b,
            "aeval_efficiency": ideal / a,
            "baseline_efficiency": ideal / b,
            "aeval_best_efficiency": ideal / min(w for w, *_ in runs["aeval"]),
            "baseline_best_efficiency": ideal / min(w for w, *_ in runs["baseline"]),
            "ratio": a / b,
            "aeval_passed": [p for _, p, *_ in runs["aeval"]],
            "baseline_passed": [p for _, p, *_ in runs["baseline"]],
            "aeval_walls": [w for w, *_ in runs["aeval"]],
            "baseline_walls": [w for w, *_ in runs["baseline"]],
        }
        target = "-"
        if c == EFFICIENCY_TARGET_CONCURRENCY:
            point["verdict"] = verdict(point["aeval_efficiency"] >= EFFICIENCY_TARGET)
            target = f"{point['verdict']} (>= {EFFICIENCY_TARGET:g})"
        points.append(point)
        rows.append(
            [
                str(c),
                f"{ideal:.3f}",
                f"{a:.4f} [{spread(runs['aeval'])}]",
                f"{b:.4f} [{spread(runs['baseline'])}]",
                f"{point['aeval_efficiency']:.3f} ({point['aeval_best_efficiency']:.3f})",
                f"{point['baseline_efficiency']:.3f} ({point['baseline_best_efficiency']:.3f})",
                f"{a / b:.2f}",
                f"{min(point['aeval_passed'])}/{n}",
                target,
            ]
        )
    headers = ["concurrency", "ideal s", "aeval wall s", "baseline wall s", "aeval eff (best)"]
    headers += ["baseline eff (best)", "ratio", "passed", "target"]
    print(table(headers, rows))
    verdicts = [p["verdict"] for p in points if "verdict" in p]
    return {"points": points, "verdict": verdicts[0] if verdicts else "-"}


def rss_mb() -> float:
    """Current resident set size (VmRSS)."""
    current = status_mb("VmRSS")
    return current if current is not None else peak_rss_mb()


def peak_rss_mb() -> float:
    """Peak resident set size of this process image (VmHWM; ru_maxrss elsewhere).

    ``ru_maxrss`` is not used on Linux: a child started by ``fork`` + ``exec`` inherits the
    parent's high-water mark, which would hide the child's own growth.
    """
    peak = status_mb("VmHWM")
    if peak is not None:
        return peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_jsonl(path: Path, n: int) -> None:
    with path.open("wb") as file:
        for i in range(n):
            item = {"name": f"s{i}", "parameters": [f"input-{i}"], "expected-output": f"input-{i}"}
            file.write(orjson.dumps(item) + b"\n")


async def baseline_from_jsonl(path: str, concurrency: int) -> int:
    samples = [sample async for sample in Samples.stream(path)]
    return await baseline(samples, identity_checkpoint, concurrency)


async def memory_child(engine: str, path: str, concurrency: int, warm_path: str) -> dict[str, Any]:
    keep = {"aeval": "none", "aeval-all": "all"}.get(engine)
    if keep is None:
        await baseline_from_jsonl(warm_path, concurrency)
    else:
        await aeval_run(Samples.stream(warm_path), identity_checkpoint, concurrency, keep=keep)
    reset = reset_peak()
    before, before_peak = rss_mb(), peak_rss_mb()
    started = perf_counter()
    if keep is None:
        passed = await baseline_from_jsonl(path, concurrency)
    else:
        passed = await aeval_run(Samples.stream(path), identity_checkpoint, concurrency, keep=keep)
    wall = perf_counter() - started
    peak = peak_rss_mb()
    return {
        "engine": engine,
        "passed": passed,
        "wall_s": wall,
        "rss_before_mb": before,
        "peak_rss_mb": peak,
        "growth_mb": peak - (before if reset else max(before, before_peak)),
        "peak_reset": reset,
    }


def run_child(engine: str, path: Path, concurrency: int, warm_path: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "_memory-child", "--engine", engine]
    command += ["--file", str(path), "--concurrency", str(concurrency), "--warm", str(warm_path)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory child {engine} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def scenario_memory(settings: Settings) -> dict[str, Any]:
    sizes, c = settings.memory_sizes, settings.memory_concurrency
    engines = ("aeval", "aeval-all", "baseline")
    print(f"\n(c) peak RSS growth, samples streamed from JSONL, concurrency {c}, ", end="")
    print(f"a fresh subprocess per run, medians of {settings.reps}")
    print("    aeval = Scorer(keep='none') over Samples.stream(); aeval-all = keep='all';")
    print("    baseline = the JSONL read into a list, then Semaphore + gather")
    results: dict[str, dict[int, dict[str, Any]]] = {engine: {} for engine in engines}
    with tempfile.TemporaryDirectory(prefix="aeval-bench-") as tmp:
        warm = Path(tmp, "warm.jsonl")
        write_jsonl(warm, 200)
        for n in sizes:
            path = Path(tmp, f"samples-{n}.jsonl")
            write_jsonl(path, n)
            for engine in engines:
                runs = [run_child(engine, path, c, warm) for _ in range(settings.reps)]
                results[engine][n] = {
                    "n": n,
                    "growth_mb": statistics.median(r["growth_mb"] for r in runs),
                    "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
                    "wall_s": statistics.median(r["wall_s"] for r in runs),
                    "passed": [r["passed"] for r in runs],
                    "runs": runs,
                }
            path.unlink()
    small, large = sizes[0], sizes[-1]
    rows: list[list[str]] = []
    summary: dict[str, Any] = {"sizes": list(sizes), "concurrency": c, "engines": {}}
    for engine in engines:
        by_size = results[engine]
        extra = by_size[large]["growth_mb"] - by_size[small]["growth_mb"]
        per_sample = extra * 2**20 / (large - small)
        flat = extra <= MEMORY_FLAT_MB
        target = f"{verdict(flat)} (+<= {MEMORY_FLAT_MB:g} MB)" if engine == "aeval" else "-"
        summary["engines"][engine] = {
            "by_size": {str(n): by_size[n] for n in sizes},
            "extra_growth_mb": extra,
            "bytes_per_extra_sample": per_sample,
        }
        cells = [engine]
        for n in sizes:
            point = by_size[n]
            cells.append(f"{point['growth_mb']:.1f} ({point['peak_rss_mb']:.0f} peak)")
        cells += [f"{extra:+.1f}", f"{per_sample:.0f}"]
        cells += [" / ".join(f"{by_size[n]['wall_s']:.2f}" for n in sizes)]
        cells += [f"{min(by_size[large]['passed'])}/{large}", target]
        rows.append(cells)
    headers = ["engine"] + [f"growth MB @ {n}" for n in sizes]
    headers += [f"{large} - {small} MB", "B/extra sample", "wall s", "passed", "target"]
    print(table(headers, rows))
    summary["verdict"] = verdict(summary["engines"]["aeval"]["extra_growth_mb"] <= MEMORY_FLAT_MB)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "scenario", nargs="?", default="all", choices=["all", "overhead", "efficiency", "memory"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repetition")
    parser.add_argument("--reps", type=int, help="repetitions per measurement (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.reps is not None:
        settings = replace(settings, reps=args.reps)
    info = machine("anyio")
    print(f"aeval Scorer benchmarks{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['platform']}, {info['cpus']} CPUs, ", end="")
    print(f"load average {info['load_average']}")
    results: dict[str, Any] = {"machine": info, "quick": args.quick, "reps": settings.reps}
    if args.scenario in ("all", "overhead"):
        results["overhead"] = anyio.run(scenario_overhead, settings)
    if args.scenario in ("all", "efficiency"):
        results["efficiency"] = anyio.run(scenario_efficiency, settings)
    if args.scenario in ("all", "memory"):
        results["memory"] = scenario_memory(settings)
    verdicts = {
        k: v["verdict"] for k, v in results.items() if isinstance(v, dict) and "verdict" in v
    }
    print("\nsummary: " + ", ".join(f"{k} {v}" for k, v in verdicts.items()))
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


def child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--engine", choices=["aeval", "aeval-all", "baseline"], required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--warm", required=True)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args(argv)
    result = anyio.run(memory_child, args.engine, args.file, args.concurrency, args.warm)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["_memory-child"]:
        sys.exit(child_main(sys.argv[2:]))
    sys.exit(main())
