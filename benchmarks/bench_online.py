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
- ``cpu``: in one process, no HTTP: the CPU time (``process_time``) one response costs an
  ``OnlineEvaluator`` with the example's two structural checks (``NotBlankStrategy``,
  ``ContainsStrategy``), from ``submit`` to its rows in the window, and the thread time
  (``thread_time``) of the ``submit`` calls alone. The baseline, measured in the same run,
  alternating, is the same two checks called by hand on each response (a sample built, both
  ``evaluate`` calls). Goals (issue 25): <= 10 us per response, ``submit`` <= 2 us.

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
import anyio.lowlevel
import httpx
from _machine import machine

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "examples" / "online_service.py"
SIDES = ("with", "without")
REFUSALS = ["I cannot", "I don't know"]  # as examples/online_service.py
sys.path.insert(0, str(ROOT))


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


CPU_GOAL_US = 10.0
SUBMIT_GOAL_US = 2.0


async def online_cpu(count: int) -> tuple[float, float, int]:
    """CPU seconds for ``count`` responses through an evaluator, the submit calls' thread
    seconds, and the rows made."""
    from aeval.online import OnlineEvaluator
    from aeval.strategies import ContainsStrategy, NotBlankStrategy

    checks = (NotBlankStrategy(), ContainsStrategy(must_not_contain=REFUSALS))
    async with OnlineEvaluator(*checks, queue_size=count, flush_interval=None) as online:
        submit = online.submit
        answers = [f"Paris is the capital of France ({i})." for i in range(count)]
        submitting = 0.0
        started = time.process_time()
        for start in range(0, count, 100):
            before = time.thread_time()
            for i in range(start, min(start + 100, count)):
                submit({"question": "capital of France?"}, answers[i])
            submitting += time.thread_time() - before
            await anyio.lowlevel.checkpoint()
        await online.join()
        spent = time.process_time() - started
        rows = online.statistics().rows
    return spent, submitting, rows


def by_hand_cpu(count: int) -> float:
    """CPU seconds for the same two checks called by hand on ``count`` responses."""
    from aeval import EvaluationSample, Parameters
    from aeval.strategies import ContainsStrategy, NotBlankStrategy

    checks = (NotBlankStrategy(), ContainsStrategy(must_not_contain=REFUSALS))
    answers = [f"Paris is the capital of France ({i})." for i in range(count)]
    started = time.process_time()
    passed = 0
    for i in range(count):
        sample = EvaluationSample(f"r-{i}", Parameters({"question": "capital of France?"}))
        for check in checks:
            passed += check.evaluate(sample, answers[i]).passed
    assert passed == 2 * count
    return time.process_time() - started


def scenario_cpu(count: int, reps: int) -> dict[str, Any]:
    """The ``cpu`` scenario: medians of ``reps`` alternating runs of ``count`` responses."""
    online: list[tuple[float, float, int]] = []
    by_hand: list[float] = []
    anyio.run(online_cpu, 100)
    by_hand_cpu(100)
    for rep in range(reps):
        for side in ("online", "by hand") if rep % 2 == 0 else ("by hand", "online"):
            if side == "online":
                online.append(anyio.run(online_cpu, count))
            else:
                by_hand.append(by_hand_cpu(count))
    per_response = statistics.median(spent for spent, _, _ in online) / count * 1e6
    per_submit = statistics.median(submitting for _, submitting, _ in online) / count * 1e6
    baseline = statistics.median(by_hand) / count * 1e6
    met = per_response <= CPU_GOAL_US and per_submit <= SUBMIT_GOAL_US
    return {
        "responses": count,
        "reps": reps,
        "cpu_us_per_response": per_response,
        "submit_us": per_submit,
        "by_hand_cpu_us_per_response": baseline,
        "rows": [rows for _, _, rows in online],
        "runs_us": [spent / count * 1e6 for spent, _, _ in online],
        "verdict": "PASS" if met else "MISS",
    }


def print_cpu(figures: dict[str, Any]) -> None:
    print()
    print(f"cpu: {figures['responses']} responses in process, two structural checks, ", end="")
    print(f"medians of {figures['reps']}")
    print(
        f"online {figures['cpu_us_per_response']:.2f} us CPU per response "
        f"(submit {figures['submit_us']:.2f} us); the same checks by hand "
        f"{figures['by_hand_cpu_us_per_response']:.2f} us ({figures['verdict']}, goal <= "
        f"{CPU_GOAL_US:g} us per response and <= {SUBMIT_GOAL_US:g} us per submit)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few requests, one repetition")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--latency", type=float, default=0.2, help="model seconds per answer")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--requests", type=int, default=1000, help="per repetition and side")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--scenarios",
        default="model,saturated,cpu",
        help="which to run, comma-separated (default: model,saturated,cpu)",
    )
    parser.add_argument("--cpu-responses", type=int, default=20_000, help="for the cpu scenario")
    args = parser.parse_args(argv)
    chosen = set(args.scenarios.split(","))
    count, reps = (200, 1) if args.quick else (args.requests, args.reps)
    info = machine("aeval-engine", "anyio", "httpx", "starlette", "uvicorn")
    title = "aeval online evaluation benchmark" + (" (quick mode)" if args.quick else "")
    print(f"{title}: {info['date']}")
    print(f"Python {info['python']}, {info['cpus']} CPUs, load average {info['load_average']}")
    print(
        f"{count} requests per side and repetition at concurrency {args.concurrency}, "
        f"medians of {reps}; with = checks on 100 %, the judge on 10 %, rows to JSONL"
    )
    results: dict[str, Any] = {"quick": args.quick, "machine": info, "scenarios": {}}
    if "cpu" in chosen:
        responses = 2000 if args.quick else args.cpu_responses
        results["scenarios"]["cpu"] = cpu = scenario_cpu(responses, max(reps, 3))
        print_cpu(cpu)
    judge, judge_url = start_judge()
    try:
        for name, latency in (("model", args.latency), ("saturated", 0.0)):
            if name not in chosen:
                continue
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
