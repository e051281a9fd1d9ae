"""A streamed JSONL run end to end, against reading and parsing the same file with orjson.

Issue 25's goal: 100,000 samples streamed from JSONL with ``keep="failures"`` in at most 1 s,
end to end (the parse, the run, the report), with flat memory: within 10x of the baseline,
which reads the file a line at a time and parses each line with ``orjson.loads``, measured
in the same run. And ``aeval run`` on that file (a subprocess, wall time) in at most 2 s.

Each figure is one fresh subprocess (the engines alternate their order between
repetitions): the median wall time, the range in brackets, and the median CPU time (what a
busy shared machine disturbs least; the command's includes its start). Peak memory is the
growth of the child's RSS high-water mark over the measured part
(``/proc/self/clear_refs``). Rows printed, for the split of the time: ``Samples.stream``
alone (the loader) and the same Scorer over the samples already in a list (the engine per
row; the list's memory is not flat, and its load is not timed). Each aeval child first
runs its engine over the file's first 20 lines, untimed (as ``bench_peers.py`` warms every
engine up): a first run loads the engine's modules, about 0.1 s here, which is printed apart.

Usage::

    python benchmarks/bench_stream_run.py                  # 100,000 samples, medians of 3
    python benchmarks/bench_stream_run.py --million        # also 1,000,000 samples, once
    python benchmarks/bench_stream_run.py --only-cli --million   # aeval run alone, both sizes
    python benchmarks/bench_stream_run.py --quick --json out.json   # 2,000 samples, once
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from _machine import machine, reset_peak, status_mb

ROOT = Path(__file__).resolve().parent.parent
TREE = {"aeval": ROOT}  # whose aeval the children import: this checkout unless --tree says
CONCURRENCY = 100
GOAL_SECONDS = 1.0
GOAL_RATIO = 10.0
GOAL_CLI_SECONDS = 2.0

TARGET = """
async def answer(text: str) -> str:
    return text
"""

CONFIG = """
samples: samples.jsonl
target: bench_target:answer
concurrency: 100
strategies: [{name: exact_match}]
output: {dir: out, formats: [json]}
"""

ENGINES = ("orjson (baseline)", "aeval", "Samples.stream alone", "aeval over a list")


def write_dataset(path: Path, count: int) -> None:
    """``count`` samples; every hundredth expects another answer, so 1 % fail."""
    with path.open("wb") as handle:
        for i in range(count):
            text = f"input-{i}"
            expected = "other" if i % 100 == 0 else text
            item = {"name": f"s{i}", "parameters": [text], "expected-output": expected}
            handle.write(orjson.dumps(item) + b"\n")


async def _child_run(engine: str, path: str, warm: str) -> dict[str, float]:
    """The engine's figures over ``path``, after an untimed warm-up run over ``warm`` (its
    first 20 lines; ``first_run``: mostly the modules a first run loads, which the
    baseline's import of orjson leaves out too). Memory is measured after the warm-up."""
    started = time.perf_counter()
    await _engine_run(engine, warm)
    first = time.perf_counter() - started
    before = status_mb("VmRSS") or 0.0
    reset_peak()
    cpu = time.process_time()
    seconds, count = await _engine_run(engine, path)
    cpu = time.process_time() - cpu
    peak = status_mb("VmHWM") or before
    return {
        "seconds": seconds,
        "cpu": cpu,
        "samples": count,
        "growth_mb": peak - before,
        "first_run": first,
    }


async def _engine_run(engine: str, path: str) -> tuple[float, int]:
    from aeval import Samples, Scorer
    from aeval.strategies import ExactMatchStrategy

    async def identity(text: str) -> str:
        return text

    if engine == "Samples.stream alone":
        started = time.perf_counter()
        count = 0
        async for _ in Samples.stream(path):
            count += 1
        return time.perf_counter() - started, count
    scorer = Scorer(CONCURRENCY, keep="failures")
    if engine == "aeval over a list":
        samples = await Samples.load(path)
        started = time.perf_counter()
        report = await scorer.evaluate(samples, identity, ExactMatchStrategy())
    else:
        started = time.perf_counter()
        report = await scorer.evaluate(Samples.stream(path), identity, ExactMatchStrategy())
    return time.perf_counter() - started, report.sample_count


def _parse_with_orjson(path: str) -> tuple[float, int]:
    started = time.perf_counter()
    count = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                orjson.loads(line)
                count += 1
    return time.perf_counter() - started, count


def child_main(engine: str, path: str) -> int:
    import anyio

    import aeval.strategies  # noqa: F401 - imported before the memory is measured

    if engine != "orjson (baseline)":
        warm = f"{path}.warm.jsonl"
        with open(path, "rb") as source, open(warm, "wb") as target:
            target.writelines(line for _, line in zip(range(20), source, strict=False))
        print(json.dumps(anyio.run(_child_run, engine, path, warm)))
        return 0
    before = status_mb("VmRSS") or 0.0
    reset_peak()
    cpu = time.process_time()
    seconds, count = _parse_with_orjson(path)
    cpu = time.process_time() - cpu
    peak = status_mb("VmHWM") or before
    figures = {"seconds": seconds, "cpu": cpu, "samples": count, "growth_mb": peak - before}
    print(json.dumps(figures))
    return 0


def _child(engine: str, path: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TREE["aeval"]), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, __file__, "--child", engine, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _cli(folder: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(TREE["aeval"]), str(folder), os.environ.get("PYTHONPATH", "")]
        ),
    }
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", "run", "aeval.yaml", "--quiet", "--no-store"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"aeval run exited {code}")
    report = json.loads((folder / "out" / "report.json").read_text())
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "seconds": seconds,
        "cpu": cpu,
        "samples": report["samples"],
        "rss_mb": usage.ru_maxrss / 1024,
    }


def measure(count: int, reps: int, *, cli: bool = True, only_cli: bool = False) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {} if only_cli else {e: [] for e in ENGINES}
    if cli:
        runs["aeval run (subprocess)"] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "samples.jsonl"
        write_dataset(path, count)
        (folder / "bench_target.py").write_text(TARGET)
        (folder / "aeval.yaml").write_text(CONFIG)
        order = list(runs)
        for rep in range(reps):
            for engine in order if rep % 2 == 0 else reversed(order):
                if engine == "aeval run (subprocess)":
                    runs[engine].append(_cli(folder))
                else:
                    runs[engine].append(_child(engine, path))
    return {"samples": count, "runs": runs, "medians": _medians(runs)}


def _medians(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for engine, each in runs.items():
        seconds = [run["seconds"] for run in each]
        out[engine] = {
            "seconds": statistics.median(seconds),
            "min": min(seconds),
            "max": max(seconds),
            "cpu": statistics.median(run["cpu"] for run in each),
        }
        for key in ("growth_mb", "rss_mb", "first_run"):
            if key in each[0]:
                out[engine][key] = statistics.median(run[key] for run in each)
    return out


def report(figures: dict[str, Any]) -> None:
    medians = figures["medians"]
    count = figures["samples"]
    if "orjson (baseline)" not in medians:
        cli = medians["aeval run (subprocess)"]
        print(
            f"\n{count:,} samples: aeval run (subprocess) {cli['seconds']:.3f} s wall "
            f"({cli['min']:.3f}-{cli['max']:.3f}), {cli['cpu']:.3f} s CPU, "
            f"{cli['seconds'] / count * 1e6:.2f} us/sample, peak RSS {cli['rss_mb']:.0f} MB"
        )
        if count == 100_000:
            verdict = "PASS" if cli["seconds"] <= GOAL_CLI_SECONDS else "MISS"
            print(f"goal: aeval run <= {GOAL_CLI_SECONDS:g} s: {cli['seconds']:.3f} s {verdict}")
        return
    base = medians["orjson (baseline)"]["seconds"]
    print(f"\n{count:,} samples, concurrency {CONCURRENCY}, keep='failures'")
    header = f"{'wall s (min-max)':>26}{'CPU s':>8}{'us/sample':>11}{'x baseline':>12}"
    print(f"{'engine':<26}{header}{'peak +MB':>10}")
    for engine, figure in medians.items():
        seconds = figure["seconds"]
        span = f"{seconds:.3f} ({figure['min']:.3f}-{figure['max']:.3f})"
        growth = f"{figure['growth_mb']:.1f}" if "growth_mb" in figure else "-"
        print(
            f"{engine:<26}{span:>26}{figure['cpu']:>8.3f}{seconds / count * 1e6:>11.2f}"
            f"{seconds / base:>11.1f}x{growth:>10}"
        )
    print(
        "(each aeval row is timed after a warm-up run over 20 samples; that first run took "
        f"{medians['aeval']['first_run']:.3f} s, mostly loading the engine's modules)"
    )
    aeval = medians["aeval"]["seconds"]
    verdict = "PASS" if aeval / base <= GOAL_RATIO else "MISS"
    print(f"goal: aeval within {GOAL_RATIO:g}x the baseline: {aeval / base:.1f}x {verdict}")
    if count == 100_000:
        verdict = "PASS" if aeval <= GOAL_SECONDS else "MISS"
        print(f"goal: aeval <= {GOAL_SECONDS:g} s at 100,000 samples: {aeval:.3f} s {verdict}")
        if "aeval run (subprocess)" in medians:
            cli = medians["aeval run (subprocess)"]["seconds"]
            verdict = "PASS" if cli <= GOAL_CLI_SECONDS else "MISS"
            print(f"goal: aeval run <= {GOAL_CLI_SECONDS:g} s: {cli:.3f} s {verdict}")
    if "aeval run (subprocess)" in medians:
        rss = medians["aeval run (subprocess)"]["rss_mb"]
        print(f"aeval run (subprocess): peak RSS {rss:.0f} MB (the whole process)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 samples, one repetition")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--million", action="store_true", help="also 1,000,000 samples, once (aeval run too)"
    )
    parser.add_argument(
        "--only-cli", action="store_true", help="measure only aeval run (the subprocess)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--tree", type=Path, help="measure the aeval of another checkout (the figures before)"
    )
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(*args.child)
    if args.tree is not None:
        TREE["aeval"] = args.tree.resolve()
    info = machine("aeval-engine", "anyio", "orjson")
    mode = " (quick mode)" if args.quick else ""
    print(f"Streamed JSONL run end to end{mode}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs ({info['cpu']}), {info['memory']}")
    print(f"load average {info['load_average']}; aeval from {TREE['aeval']}")
    count, reps = (2_000, 1) if args.quick else (100_000, args.reps)
    figures = [measure(count, reps, only_cli=args.only_cli)]
    report(figures[0])
    if args.million:
        figures.append(measure(1_000_000, 1, only_cli=args.only_cli))
        report(figures[1])
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
