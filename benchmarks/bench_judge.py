"""Judge rows per second through the Scorer, against raw httpx calls to the same server.

Both sides send the same chat completion request, the one ``AiJudgeStrategy`` builds, to a
local OpenAI-compatible server (``python -m aeval.testing``) running in a separate process,
so the server's threads do not compete with the client's event loop for the GIL and the
figures measure the client side:

* ``aeval``: ``Scorer(concurrency=100)`` evaluating a function that returns the expected
  output, with ``AiJudgeStrategy(OpenAIChatModel(..., max_concurrency=100))``: prompt
  rendering, the request with its retry and limit machinery, reply parsing, verdict, row,
  report.
* ``raw``: one shared ``httpx.AsyncClient`` (a pool of 100), an ``asyncio.Semaphore(100)``
  and ``asyncio.gather`` (one task per row), posting the same bytes and reading the reply's
  content as JSON.

The two sides alternate (after a warm-up) so they share the machine's noise; the figures are
medians. Target: aeval >= 0.8x raw rows per second. The client's CPU time per row is printed
too, with the ratio it gives: on a machine shared with other work the wall times are noisy,
and CPU time per row is the steadier measure of what each side costs. The server process's
CPU use is shown as a share of one core: near 100 % would mean the server sets the pace.

Usage::

    python benchmarks/bench_judge.py                 # 3000 rows, medians of 3
    python benchmarks/bench_judge.py --rows 5000 --reps 5
    python benchmarks/bench_judge.py --quick --json out.json   # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import anyio
import httpx
import orjson
from _machine import machine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeval import EvaluationSample, Samples, Scorer  # noqa: E402
from aeval._samples import Parameters  # noqa: E402
from aeval.models import OpenAIChatModel  # noqa: E402
from aeval.strategies import AiJudgeStrategy  # noqa: E402
from aeval.testing import OpenAICompatibleServer  # noqa: E402

TARGET = 0.8
MODEL = "bench-judge"


@dataclass(frozen=True, slots=True)
class Settings:
    rows: int
    concurrency: int
    reps: int
    warmup: int


FULL = Settings(rows=3000, concurrency=100, reps=3, warmup=1000)
QUICK = Settings(rows=300, concurrency=100, reps=1, warmup=50)


@dataclass(frozen=True, slots=True)
class Run:
    wall: float
    passed: int
    server_cpu: float
    client_cpu: float
    client_cpu_seconds: float


class ServerProcess:
    """``python -m aeval.testing`` in a child process, stopped with SIGTERM."""

    label = "python -m aeval.testing, a separate process"

    def __init__(self) -> None:
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "aeval.testing", "--port", "0", "--model", MODEL],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the test server did not start (it printed {line!r})")
        self.base_url = line

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the server process so far (Linux; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


class ServerThread:
    """The same server in a thread of this process (``--in-process``): for comparison only,
    since its threads then take the GIL from the client's event loop."""

    label = "OpenAICompatibleServer in a thread of this process"

    def __init__(self) -> None:
        self.server = OpenAICompatibleServer(model=MODEL)
        self.server.start()
        self.base_url = self.server.base_url

    def cpu_seconds(self) -> float:
        return math.nan

    def stop(self) -> None:
        self.server.stop()


Server = ServerProcess | ServerThread


def make_samples(n: int) -> Samples:
    return Samples(
        EvaluationSample(f"s{i}", [f"What is {i} + {i}?"], f"{i} + {i} = {2 * i}") for i in range(n)
    )


async def answer(params: Parameters) -> str:
    """The function under test: the correct answer at once, so only the judge costs time."""
    i = int(str(params[0]).split()[2])
    return f"{i} + {i} = {2 * i}"


def request_bodies(strategy: AiJudgeStrategy, samples: Samples) -> list[bytes]:
    """The exact request bodies the judge sends, built before the raw side's clock starts."""
    bodies = []
    for sample in samples:
        prompt = strategy.render(sample, sample.expected_output)
        payload = {
            "model": MODEL,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
        }
        bodies.append(orjson.dumps(payload))
    return bodies


async def aeval_side(samples: Samples, strategy: AiJudgeStrategy, concurrency: int) -> int:
    scorer = Scorer(concurrency=concurrency)
    report = await scorer.evaluate(samples, answer, strategy)
    if report.error_count or report.unscored_count:
        raise RuntimeError(f"aeval side: {report!r}")
    return report.passed_count


async def raw_side(
    client: httpx.AsyncClient, url: str, bodies: list[bytes], concurrency: int
) -> int:
    semaphore = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json"}

    async def one(body: bytes) -> bool:
        async with semaphore:
            response = await client.post(url, content=body, headers=headers)
            response.raise_for_status()
            content = orjson.loads(response.content)["choices"][0]["message"]["content"]
            return bool(content.strip().lower().startswith("true"))

    results = await asyncio.gather(*(one(body) for body in bodies))
    return sum(results)


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def timed(server: Server, work: Callable[[], Awaitable[int]]) -> Run:
    server_before, client_before = server.cpu_seconds(), client_cpu_seconds()
    started = perf_counter()
    passed = await work()
    wall = perf_counter() - started
    client = client_cpu_seconds() - client_before
    return Run(wall, passed, (server.cpu_seconds() - server_before) / wall, client / wall, client)


async def measure(settings: Settings, server: Server) -> dict[str, list[Run]]:
    samples = make_samples(settings.rows)
    warm = make_samples(settings.warmup)
    c = settings.concurrency
    url = f"{server.base_url}/chat/completions"
    runs: dict[str, list[Run]] = {"aeval": [], "raw": []}
    async with (
        OpenAIChatModel(MODEL, base_url=server.base_url, max_concurrency=c) as model,
        httpx.AsyncClient(
            timeout=60.0,
            limits=httpx.Limits(max_connections=c, max_keepalive_connections=c),
        ) as client,
    ):
        strategy = AiJudgeStrategy(model)
        bodies, warm_bodies = request_bodies(strategy, samples), request_bodies(strategy, warm)
        sides: dict[str, Callable[[], Awaitable[int]]] = {
            "aeval": lambda: aeval_side(samples, strategy, c),
            "raw": lambda: raw_side(client, url, bodies, c),
        }
        await aeval_side(warm, strategy, c)
        await raw_side(client, url, warm_bodies, c)
        for rep in range(settings.reps):
            order = ("aeval", "raw") if rep % 2 == 0 else ("raw", "aeval")
            for side in order:
                runs[side].append(await timed(server, sides[side]))
    return runs


def summarise(settings: Settings, runs: dict[str, list[Run]]) -> dict[str, Any]:
    n = settings.rows
    figures: dict[str, Any] = {"rows": n, "concurrency": settings.concurrency, "sides": {}}
    for side, side_runs in runs.items():
        wall = statistics.median(run.wall for run in side_runs)
        figures["sides"][side] = {
            "wall_s": wall,
            "rows_per_s": n / wall,
            "walls": [run.wall for run in side_runs],
            "passed": [run.passed for run in side_runs],
            "server_cpu": statistics.median(run.server_cpu for run in side_runs),
            "client_cpu": statistics.median(run.client_cpu for run in side_runs),
            "client_cpu_ms_per_row": statistics.median(
                run.client_cpu_seconds / n * 1000 for run in side_runs
            ),
        }
    aeval, raw = figures["sides"]["aeval"], figures["sides"]["raw"]
    ratio = aeval["rows_per_s"] / raw["rows_per_s"]
    figures["ratio"] = ratio
    figures["cpu_ratio"] = raw["client_cpu_ms_per_row"] / aeval["client_cpu_ms_per_row"]
    figures["verdict"] = "PASS" if ratio >= TARGET else "MISS"
    return figures


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def report(settings: Settings, figures: dict[str, Any]) -> None:
    rows = []
    for side in ("aeval", "raw"):
        f = figures["sides"][side]
        walls = f["walls"]
        rows.append(
            [
                side,
                f"{f['rows_per_s']:.0f}",
                f"{f['wall_s']:.3f} [{min(walls):.3f}-{max(walls):.3f}]",
                f"{min(f['passed'])}/{settings.rows}",
                f"{f['client_cpu'] * 100:.0f}%",
                f"{f['client_cpu_ms_per_row']:.3f}",
                "-" if math.isnan(f["server_cpu"]) else f"{f['server_cpu'] * 100:.0f}%",
            ]
        )
    headers = ["side", "rows/s", "wall s", "passed", "client CPU", "CPU ms/row", "server CPU"]
    print(table(headers, rows))
    print(
        f"\nratio aeval/raw: {figures['ratio']:.2f}x ({figures['verdict']}, target >= {TARGET:g}x)"
    )
    print(f"ratio by client CPU time per row: {figures['cpu_ratio']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 rows, 1 repetition")
    parser.add_argument("--rows", type=int, help="judge rows per run")
    parser.add_argument("--reps", type=int, help="repetitions per side (default 3)")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the server in a thread of this process instead (to compare)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.rows is not None:
        settings = Settings(args.rows, settings.concurrency, settings.reps, settings.warmup)
    if args.reps is not None:
        settings = Settings(settings.rows, settings.concurrency, args.reps, settings.warmup)
    info = machine("httpx")
    print(f"aeval judge benchmark{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, httpx {info['httpx']}, {info['platform']}, ", end="")
    print(f"{info['cpus']} CPUs, load average {info['load_average']}")
    server: Server = ServerThread() if args.in_process else ServerProcess()
    try:
        print(f"server: {server.label}, at {server.base_url}")
        print(
            f"{settings.rows} judge rows at concurrency {settings.concurrency}, "
            f"medians of {settings.reps}\n"
        )
        runs = anyio.run(measure, settings, server)
    finally:
        server.stop()
    figures = summarise(settings, runs)
    report(settings, figures)
    if args.json is not None:
        result = {
            "machine": info,
            "quick": args.quick,
            "reps": settings.reps,
            "server": "thread" if args.in_process else "process",
            **figures,
        }
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
