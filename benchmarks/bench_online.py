"""What online evaluation costs a live service: latency and throughput with and without it.

``examples/online_service.py`` is served twice by uvicorn, each in its own process: with
online evaluation (checks on every answer, the judge on 10 %, rows to JSONL) and without it.
The judge is ``python -m aeval.testing`` in a third process. This script loads both services
in the same run, alternating (with, without, without, with, ...), with the same requests at
the same concurrency, and prints each side's p50 and p99 latency, throughput and server CPU
per request. Two scenarios:

- ``model``: each answer awaits a simulated model call (``--latency``, 200 ms by default; a
  real LLM answer takes longer), as an LLM service does, at a concurrency that leaves the
  service's CPU room. The goal applies here: under 5 % added p99 latency and throughput
  within 5 %.
- ``saturated``: no model latency, so the service's CPU is the limit and any work added to
  its event loop shows as lost throughput (reported, no goal).

Usage::

    python benchmarks/bench_online.py
    python benchmarks/bench_online.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
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

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "examples" / "online_service.py"
SIDES = ("with", "without")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_judge() -> tuple[subprocess.Popen[str], str]:
    judge = subprocess.Popen(
        [sys.executable, "-m", "aeval.testing"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert judge.stdout is not None
    return judge, judge.stdout.readline().strip()


def start_service(side: str, judge_url: str, latency: float, rows: Path) -> tuple[Any, str]:
    port = free_port()
    command = [sys.executable, str(SERVICE), "--port", str(port), "--judge-url", judge_url]
    command += ["--latency", str(latency), "--rows", str(rows), "--seed", "1"]
    if side == "without":
        command.append("--no-evaluation")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    # its "serving on" line would land among the figures
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:  # a benchmark may poll: it asserts nothing about time
        try:
            httpx.get(f"{url}/evaluation", timeout=5).raise_for_status()
            return process, url
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the {side} service did not start") from None
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc (0.0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(url: str, count: int, concurrency: int, offset: int) -> tuple[list[float], float]:
    """Send ``count`` questions, ``concurrency`` at once; latencies (s) and wall time (s)."""
    latencies: list[float] = []
    questions = iter(range(offset, offset + count))
    per_client = 10  # an httpx pool's bookkeeping grows with its connections × waiters
    limits = httpx.Limits(max_connections=per_client, max_keepalive_connections=per_client)
    clients = [
        httpx.AsyncClient(base_url=url, limits=limits, timeout=60)
        for _ in range(math.ceil(concurrency / per_client))
    ]

    async def worker(client: httpx.AsyncClient) -> None:
        for i in questions:
            started = time.perf_counter()
            reply = await client.post("/ask", json={"question": f"What is {i} plus {i}?"})
            latencies.append(time.perf_counter() - started)
            if reply.json()["answer"] != f"{i} plus {i} is {2 * i}.":
                raise AssertionError(f"wrong answer to question {i}: {reply.text}")

    started = time.perf_counter()
    try:
        async with anyio.create_task_group() as group:
            for w in range(concurrency):
                group.start_soon(worker, clients[w // per_client])
    finally:
        for client in clients:
            await client.aclose()
    return latencies, time.perf_counter() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def scenario(
    name: str, latency: float, count: int, concurrency: int, reps: int, judge_url: str
) -> dict[str, Any]:
    figures: dict[str, Any] = {"latency_s": latency, "requests": count, "concurrency": concurrency}
    with tempfile.TemporaryDirectory() as folder:
        services = {
            side: start_service(side, judge_url, latency, Path(folder) / f"{side}.jsonl")
            for side in SIDES
        }
        try:
            runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
            offset = 0
            for side in SIDES:  # warm-up
                anyio.run(load, services[side][1], max(50, count // 10), concurrency, offset)
            order = [SIDES[(rep // 2 + rep) % 2] for rep in range(2 * reps)]
            for side in order:
                process, url = services[side]
                offset += count
                cpu = cpu_seconds(process.pid)
                latencies, wall = anyio.run(load, url, count, concurrency, offset)
                cpu = cpu_seconds(process.pid) - cpu
                runs[side].append(
                    {
                        "p50_ms": 1000 * percentile(latencies, 0.50),
                        "p99_ms": 1000 * percentile(latencies, 0.99),
                        "throughput": count / wall,
                        "server_cpu_ms_per_request": 1000 * cpu / count,
                    }
                )
            accounts = httpx.get(
                f"{services['with'][1]}/evaluation", params={"settle": "1"}, timeout=120
            ).json()["statistics"]
        finally:
            for process, _ in services.values():
                process.send_signal(signal.SIGINT)
            for process, _ in services.values():
                process.wait(60)
    for side in SIDES:
        figures[side] = {
            key: statistics.median(run[key] for run in runs[side]) for key in runs[side][0]
        }
        figures[side]["runs"] = runs[side]
    with_, without = figures["with"], figures["without"]
    figures["added_p99_pct"] = 100 * (with_["p99_ms"] / without["p99_ms"] - 1)
    figures["added_p50_pct"] = 100 * (with_["p50_ms"] / without["p50_ms"] - 1)
    figures["throughput_ratio"] = with_["throughput"] / without["throughput"]
    figures["accounts"] = accounts
    if name == "model":
        met = figures["added_p99_pct"] < 5 and abs(figures["throughput_ratio"] - 1) <= 0.05
        figures["verdict"] = "PASS" if met else "MISS"
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few requests, one repetition")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--latency", type=float, default=0.2, help="model seconds per answer")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--requests", type=int, default=1000, help="per repetition and side")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    count, reps = (200, 1) if args.quick else (args.requests, args.reps)
    info = machine("aeval-engine", "anyio", "httpx", "starlette", "uvicorn")
    title = "aeval online evaluation benchmark" + (" (quick mode)" if args.quick else "")
    print(f"{title}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs, load average {info['load_average']}")
    print(
        f"{count} requests per side and repetition at concurrency {args.concurrency}, "
        f"medians of {reps}; with = checks on 100 %, the judge on 10 %, rows to JSONL"
    )
    judge, judge_url = start_judge()
    results: dict[str, Any] = {"quick": args.quick, "machine": info, "scenarios": {}}
    try:
        for name, latency in (("model", args.latency), ("saturated", 0.0)):
            figures = scenario(name, latency, count, args.concurrency, reps, judge_url)
            results["scenarios"][name] = figures
            print()
            print(f"{name}: model latency {1000 * latency:g} ms")
            print(f"{'side':<10}{'p50 ms':>10}{'p99 ms':>10}{'req/s':>10}{'server CPU ms/req':>20}")
            for side in SIDES:
                f = figures[side]
                print(
                    f"{side:<10}{f['p50_ms']:>10.2f}{f['p99_ms']:>10.2f}{f['throughput']:>10.0f}"
                    f"{f['server_cpu_ms_per_request']:>20.3f}"
                )
            line = (
                f"added p50 {figures['added_p50_pct']:+.1f} %, added p99 "
                f"{figures['added_p99_pct']:+.1f} %, throughput x{figures['throughput_ratio']:.3f}"
            )
            if "verdict" in figures:
                line += f" ({figures['verdict']}, goal < 5 % p99 and throughput within 5 %)"
            print(line)
            a = figures["accounts"]
            print(
                f"accounts (with): submitted {a['submitted']}, evaluated {a['evaluated']}, "
                f"sampled out {a['sampled_out']}, dropped {a['dropped']}"
            )
    finally:
        judge.send_signal(signal.SIGINT)
        judge.wait(30)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
