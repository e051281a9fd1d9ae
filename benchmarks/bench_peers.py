"""aeval side by side with peer eval libraries, in one run on one machine.

Every run is a fresh subprocess: aeval runs in this interpreter's environment, each peer in its own
virtual environment, driven by its reference script from ``../shared/bench-peers/``. All of them
get the same task (the identity, after ``asyncio.sleep(latency)`` when latency > 0), the same
equality check, the same 20-case warm-up and the same timing boundary: only the library's "run
the dataset" call is timed (``asyncio.run`` of the async API, or the sync API that owns its loop),
the report it returns included; building the cases is timed apart (``build_s``).

Scenarios (``--scenario`` picks some; ``--quick`` shrinks them for a smoke run):

* ``a-2k`` / ``a-20k``: 2,000 / 20,000 cases at latency 0, concurrency 100: µs per case.
* ``b-c100`` / ``b-c500``: 2,000 cases of 50 ms at concurrency 100 / 500: efficiency.
* ``c-100k``: 100,000 cases at latency 0, concurrency 100: wall and peak RSS. aeval runs twice:
  the in-memory list with ``keep="all"`` (like the peers) and ``Samples.stream`` over a JSONL
  file with ``keep="none"``.

Usage::

    python benchmarks/bench_peers.py                                # aeval alone
    python benchmarks/bench_peers.py --peer pydantic-evals --venv-dir /tmp/peer-venvs --install
    python benchmarks/bench_peers.py --peer deepeval --peer pydantic-evals --json out.json
    python benchmarks/bench_peers.py --peer inspect-ai --scenario a-2k --scenario b-c100
    python benchmarks/bench_peers.py --quick --json out.json        # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _machine import machine

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PEER_SCRIPTS = ROOT.parent / "shared" / "bench-peers"
CHILD_COMMAND = "_aeval-child"
AEVAL = "aeval"
AEVAL_STREAM = "aeval stream keep=none"


@dataclass(frozen=True, slots=True)
class Peer:
    name: str
    requirement: str
    script: str
    env: tuple[tuple[str, str], ...] = ()


PEERS = {
    peer.name: peer
    for peer in (
        Peer("pydantic-evals", "pydantic-evals==2.62.0", "pydantic_evals_bench.py"),
        Peer(
            "deepeval",
            "deepeval==4.3.1",
            "deepeval_bench.py",
            (("DEEPEVAL_TELEMETRY_OPT_OUT", "YES"),),
        ),
        Peer("inspect-ai", "inspect-ai==0.3.285", "inspect_ai_bench.py"),
    )
}


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    n: int
    latency_ms: float
    concurrency: int

    @property
    def label(self) -> str:
        return f"{self.key[0]} N={self.n:,} {self.latency_ms:g} ms C={self.concurrency}"

    @property
    def ideal_s(self) -> float:
        return self.n * self.latency_ms / 1000 / self.concurrency


FULL = (
    Scenario("a-2k", 2_000, 0, 100),
    Scenario("a-20k", 20_000, 0, 100),
    Scenario("b-c100", 2_000, 50, 100),
    Scenario("b-c500", 2_000, 50, 500),
    Scenario("c-100k", 100_000, 0, 100),
)
QUICK = (
    Scenario("a-2k", 200, 0, 100),
    Scenario("a-20k", 2_000, 0, 100),
    Scenario("b-c100", 500, 10, 100),
    Scenario("b-c500", 500, 10, 500),
    Scenario("c-100k", 5_000, 0, 100),
)
WARMUP = 20


@dataclass(frozen=True, slots=True)
class Engine:
    """One side of the comparison: how to start a run of it for a scenario."""

    name: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    streams: bool = False

    def argv(self, scenario: Scenario, files: dict[str, Path]) -> list[str]:
        argv = [*self.command, "--n", str(scenario.n), "--latency-ms", f"{scenario.latency_ms:g}"]
        argv += ["--concurrency", str(scenario.concurrency), "--warmup", str(WARMUP)]
        if self.streams:
            argv += ["--file", str(files["data"]), "--warm-file", str(files["warm"])]
        return argv


def ru_maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ThreadCounter:
    """Samples ``threading.active_count()`` every 50 ms, not counting its own thread."""

    def __init__(self) -> None:
        self.most = threading.active_count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.most = max(self.most, threading.active_count() - 1)

    def __enter__(self) -> ThreadCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def aeval_child(argv: Sequence[str]) -> int:
    """The aeval driver: one warm-up, one timed run, one JSON line (the peers' fields)."""
    parser = argparse.ArgumentParser(prog=f"bench_peers.py {CHILD_COMMAND}")
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--file", type=Path, help="stream the samples from this JSONL file")
    parser.add_argument("--warm-file", type=Path, help="JSONL file of the warm-up samples")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    import asyncio

    from aeval import EvaluationReport, EvaluationResult, EvaluationSample, Samples, Scorer
    from aeval._samples import Parameters

    rss_start = ru_maxrss_mb()
    latency = args.latency_ms / 1000
    streaming = args.file is not None

    async def task(params: Parameters) -> Any:
        if latency:
            await asyncio.sleep(latency)
        return params[0]

    def equals(sample: EvaluationSample, output: Any) -> EvaluationResult:
        return EvaluationResult.from_boolean(output == sample.expected_output)

    def build(n: int) -> Samples:
        return Samples(EvaluationSample(f"c{i}", [f"input-{i}"], f"input-{i}") for i in range(n))

    def run(samples: Any) -> int:
        scorer = Scorer(args.concurrency, keep="none" if streaming else "all")
        report: EvaluationReport = asyncio.run(scorer.evaluate(samples, task, equals))
        return report.passed_count

    warmup_s = None
    if args.warmup:
        warm = Samples.stream(args.warm_file) if streaming else build(args.warmup)
        started = time.perf_counter()
        warm_passed = run(warm)
        warmup_s = time.perf_counter() - started
        if warm_passed != args.warmup:
            raise SystemExit(f"warm-up passed {warm_passed} of {args.warmup}")
        del warm
    started = time.perf_counter()
    samples = Samples.stream(args.file) if streaming else build(args.n)
    build_s = time.perf_counter() - started
    with ThreadCounter() as threads:
        cpu_before = cpu_s()
        started = time.perf_counter()
        passed = run(samples)
        wall = time.perf_counter() - started
        cpu_used = cpu_s() - cpu_before
    ideal = args.n * latency / args.concurrency
    line = {
        "peer": AEVAL_STREAM if streaming else AEVAL,
        "version": _aeval_version(),
        "n": args.n,
        "latency_ms": args.latency_ms,
        "concurrency": args.concurrency,
        "wall_s": round(wall, 4),
        "per_case_overhead_us": round((wall - ideal) / args.n * 1e6, 2),
        "peak_rss_mb": round(ru_maxrss_mb(), 1),
        "ideal_s": round(ideal, 4),
        "efficiency": round(ideal / wall, 4) if ideal > 0 else None,
        "build_s": round(build_s, 4),
        "cpu_s": round(cpu_used, 3),
        "rss_start_mb": round(rss_start, 1),
        "threads_max": threads.most,
        "passed": passed,
        "python": platform.python_version(),
        "pid": os.getpid(),
        "warmup_s": None if warmup_s is None else round(warmup_s, 4),
    }
    print(json.dumps(line), flush=True)
    return 0


def _aeval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aeval-engine")
    except PackageNotFoundError:
        return "checkout"


def run_once(engine: Engine, argv: list[str], timeout: float) -> dict[str, Any]:
    """One run in a fresh process group; killed (and reported as a timeout) after ``timeout`` s."""
    env = {**os.environ, **engine.env}
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return {"status": "timeout", "timeout_s": timeout, "proc_s": time.perf_counter() - started}
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        return {"status": "failed", "returncode": process.returncode, "stderr": tail}
    result: dict[str, Any] = json.loads(lines[-1])
    result.update(status="ok", proc_s=round(time.perf_counter() - started, 3))
    return result


def summarise(
    scenario: Scenario, engine: Engine, runs: list[dict[str, Any]], reps: int
) -> dict[str, Any]:
    ok = [run for run in runs if run["status"] == "ok"]
    cell: dict[str, Any] = {
        "scenario": scenario.key,
        "label": scenario.label,
        "engine": engine.name,
        "n": scenario.n,
        "latency_ms": scenario.latency_ms,
        "concurrency": scenario.concurrency,
        "reps": reps,
        "ok_runs": len(ok),
        "status": "ok" if ok else runs[-1]["status"],
        "runs": runs,
    }
    if not ok:
        return cell
    walls = [run["wall_s"] for run in ok]

    def median(key: str) -> float:
        return float(statistics.median(run[key] for run in ok))

    cell.update(
        version=ok[0]["version"],
        wall_s=statistics.median(walls),
        wall_min_s=min(walls),
        wall_max_s=max(walls),
        per_case_us=median("per_case_overhead_us"),
        efficiency=scenario.ideal_s / statistics.median(walls) if scenario.ideal_s else None,
        peak_rss_mb=median("peak_rss_mb"),
        rss_start_mb=median("rss_start_mb"),
        cpu_s=median("cpu_s"),
        threads_max=max(run["threads_max"] for run in ok),
        passed=[run["passed"] for run in ok],
    )
    return cell


def measure(
    scenarios: Sequence[Scenario],
    engines: Sequence[Engine],
    *,
    reps: int,
    timeout: float,
    progress: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Run every engine on every scenario, alternating their order between repetitions."""
    cells: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aeval-bench-peers-") as tmp:
        files = {"data": Path(tmp, "samples.jsonl"), "warm": Path(tmp, "warm.jsonl")}
        write_jsonl(files["warm"], WARMUP)
        for scenario in scenarios:
            present = [e for e in engines if not e.streams or scenario.key.startswith("c")]
            if any(e.streams for e in present):
                write_jsonl(files["data"], scenario.n)
            runs: dict[str, list[dict[str, Any]]] = {e.name: [] for e in present}
            for rep in range(reps):
                order = present if rep % 2 == 0 else present[::-1]
                for engine in order:
                    done = runs[engine.name]
                    if done and done[-1]["status"] != "ok":
                        continue
                    result = run_once(engine, engine.argv(scenario, files), timeout)
                    done.append(result)
                    shown = f"{result['wall_s']:.3f} s" if result["status"] == "ok" else ""
                    progress(f"{scenario.label}  {engine.name}  rep {rep + 1}: ")
                    progress(f"{result['status']} {shown}\n")
            cells += [summarise(scenario, e, runs[e.name], reps) for e in present]
    for cell in cells:
        reference = next(
            c for c in cells if c["scenario"] == cell["scenario"] and c["engine"] == AEVAL
        )
        for key, ratio in (("wall_s", "wall_ratio"), ("peak_rss_mb", "rss_ratio")):
            ok = cell["status"] == reference["status"] == "ok"
            cell[ratio] = cell[key] / reference[key] if ok else None
    return cells


def write_jsonl(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as file:
        for i in range(n):
            item = {"name": f"c{i}", "parameters": [f"input-{i}"], "expected-output": f"input-{i}"}
            file.write(json.dumps(item) + "\n")


def _number(value: float | None, spec: str, suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def render(cells: Sequence[dict[str, Any]], timeout: float) -> str:
    headers = ["scenario", "engine", "wall s [min-max]", "µs/case", "efficiency"]
    headers += ["peak RSS MB", "RSS after import MB", "wall × aeval", "RSS × aeval", "passed"]
    rows: list[list[str]] = []
    for cell in cells:
        row = [cell["label"], cell["engine"]]
        if cell["status"] != "ok":
            reason = f"timeout (> {timeout:g} s)" if cell["status"] == "timeout" else "failed"
            rows.append(row + [reason] + ["–"] * (len(headers) - 3))
            continue
        row += [
            f"{cell['wall_s']:.3f} [{cell['wall_min_s']:.3f}-{cell['wall_max_s']:.3f}]",
            f"{cell['per_case_us']:.1f}",
            _number(cell["efficiency"], ".3f"),
            f"{cell['peak_rss_mb']:.0f}",
            f"{cell['rss_start_mb']:.0f}",
            _number(cell["wall_ratio"], ".2f", "×"),
            _number(cell["rss_ratio"], ".2f", "×"),
            f"{min(cell['passed'])}/{cell['n']} ({cell['ok_runs']}/{cell['reps']} runs)",
        ]
        rows.append(row)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def venv_python(venv_dir: Path, peer: Peer) -> Path:
    return venv_dir / peer.name / "bin" / "python"


def install(venv_dir: Path, peer: Peer) -> None:
    venv = venv_dir / peer.name
    print(f"installing {peer.requirement} into {venv}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", peer.requirement]
    subprocess.run(pip, check=True)


def peer_engine(peer: Peer, venv_dir: Path, scripts: Path) -> Engine:
    command = (str(venv_python(venv_dir, peer)), str(scripts / peer.script))
    return Engine(peer.name, command, dict(peer.env))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--peer",
        action="append",
        choices=[*PEERS, "none"],
        default=[],
        help="a peer to run beside aeval (repeatable; 'none' or no --peer: aeval alone)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=[s.key for s in FULL],
        default=[],
        help="run only these scenarios (repeatable; default: all)",
    )
    parser.add_argument("--venv-dir", type=Path, default=Path("/tmp/peer-venvs"))
    parser.add_argument("--install", action="store_true", help="create missing peer venvs")
    parser.add_argument("--peer-scripts", type=Path, default=DEFAULT_PEER_SCRIPTS)
    parser.add_argument("--reps", type=int, help="runs per cell, medians (default 3, quick 1)")
    parser.add_argument("--timeout", type=float, default=200.0, help="seconds per run")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repetition")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)

    peers = [PEERS[name] for name in dict.fromkeys(args.peer) if name != "none"]
    for peer in peers:
        if venv_python(args.venv_dir, peer).exists():
            continue
        if not args.install:
            parser.error(
                f"no venv for {peer.name} at {args.venv_dir / peer.name}: pass --install to "
                f"create it (pip install {peer.requirement}), or --venv-dir DIR where it is"
            )
        install(args.venv_dir, peer)
    if peers and not (args.peer_scripts / "_common.py").exists():
        parser.error(f"no peer scripts in {args.peer_scripts}: pass --peer-scripts DIR")
    scenarios = [
        s for s in (QUICK if args.quick else FULL) if not args.scenario or s.key in args.scenario
    ]
    reps = args.reps if args.reps is not None else 1 if args.quick else 3
    here = (sys.executable, str(Path(__file__).resolve()), CHILD_COMMAND)
    engines = [Engine(AEVAL, here), Engine(AEVAL_STREAM, here, streams=True)]
    engines += [peer_engine(peer, args.venv_dir, args.peer_scripts) for peer in peers]

    info = {**machine(), "environment_variables": len(os.environ)}
    print(f"aeval beside its peers{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['platform']}, {info['cpus']} CPUs ({info['cpu']})")
    print(f"load average {', '.join(f'{x:.2f}' for x in info['load_average'])}; ", end="")
    print(f"medians of {reps}, a fresh process per run, timeout {args.timeout:g} s per run")
    cells = measure(
        scenarios,
        engines,
        reps=reps,
        timeout=args.timeout,
        progress=lambda text: print(text, end="", file=sys.stderr, flush=True),
    )
    print()
    print(render(cells, args.timeout))
    print()
    versions = {
        c["engine"]: c["version"]
        for c in cells
        if c["status"] == "ok" and c["engine"] != AEVAL_STREAM
    }
    print("versions: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
    if args.json is not None:
        figures = {
            "machine": info,
            "quick": args.quick,
            "reps": reps,
            "timeout_s": args.timeout,
            "warmup": WARMUP,
            "parent_peak_rss_mb": round(ru_maxrss_mb(), 1),
            "scenarios": [s.key for s in scenarios],
            "engines": {e.name: list(e.command) for e in engines},
            "cells": cells,
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == [CHILD_COMMAND]:
        sys.exit(aeval_child(sys.argv[2:]))
    sys.exit(main())
