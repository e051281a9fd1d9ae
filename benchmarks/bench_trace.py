"""Benchmarks of the per-sample traces (``aeval.trace``): isolation, cost per call, overhead.

Scenarios (see benchmarks/README.md and docs/performance.md):

* ``isolation``: 2,000 samples at concurrency 200, each making 1-5 calls (seeded) with short
  random sleeps, interleaving three sources: an ``@aeval.tool`` async function, a chat
  completion through ``httpx.AsyncClient(event_hooks=httpx_event_hooks())`` against the local
  OpenAI-compatible test server on 127.0.0.1, and a manual ``record_tool_call``. Every call
  carries its sample's name; the check (not a timing) is that every row's trace holds exactly
  its own calls, in order. Target: 2000/2000 rows exact.
* ``cost``: the cost of one recorded call, per source, inside a sample (a recording of five
  calls, then its snapshot, as the engine takes it), against the same loop calling the
  undecorated function (for the hooks: against no hooks), in CPU time (``process_time``: the
  loops only compute, and CPU time is steadier than wall time on a shared machine; each
  recording's httpx requests and responses are built just before it, untimed, on both
  sides). Target:
  <= 2 us per recorded call.
* ``overhead``: a run whose target records nothing (20,000 samples, identity plus one
  checkpoint, concurrency 100): the Scorer as it is against the same Scorer with tracing off,
  side by side, alternating order. "Off" replaces the engine's trace hooks (the
  ``Recorder`` made per sample, setting the recorder's context variable around the call
  (``activate``/``deactivate``) and ``make_ran_current`` around the strategies) with no-ops for
  that run: the engine without the
  trace wiring. A plain-asyncio baseline (Semaphore + gather)
  gives the scale. Target: tracing on <= 1.05x tracing off, per sample.

Usage::

    python benchmarks/bench_trace.py                 # all three scenarios, medians of 5
    python benchmarks/bench_trace.py cost --reps 9
    python benchmarks/bench_trace.py --quick --json out.json   # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import random
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter, process_time, time_ns
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import orjson
from _machine import machine
from httpx._client import BoundSyncStream

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aeval
from aeval import EvaluationSample, Samples, Scorer
from aeval._engine import _run as engine_run
from aeval.strategies import NotBlankStrategy
from aeval.testing import OpenAICompatibleServer
from aeval.trace import ModelCall, ToolCall, Trace, httpx_event_hooks, record_tool_call, recording
from aeval.trace._context import RECORDER, SEQUENCE
from aeval.trace._entries import RawModelCall

COST_TARGET_US = 2.0
OVERHEAD_TARGET = 1.05
SEED = 2126


@dataclass(frozen=True, slots=True)
class Settings:
    reps: int
    isolation_n: int
    isolation_concurrency: int
    max_sleep: float
    cost_calls: int
    overhead_n: int
    overhead_concurrency: int


FULL = Settings(
    reps=5,
    isolation_n=2_000,
    isolation_concurrency=200,
    max_sleep=0.002,
    cost_calls=50_000,
    overhead_n=20_000,
    overhead_concurrency=100,
)
QUICK = Settings(
    reps=1,
    isolation_n=300,
    isolation_concurrency=200,
    max_sleep=0.001,
    cost_calls=2_000,
    overhead_n=2_000,
    overhead_concurrency=100,
)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# --- (a) isolation ----------------------------------------------------------------------------


@aeval.tool
async def lookup(sample: str, step: int, pause: float) -> str:
    """A tool that waits a little, so that the samples' calls interleave."""
    await anyio.sleep(pause)
    return f"{sample}/{step}"


Step = tuple[str, int, float]  # (source, step, pause)


def plan(name: str, settings: Settings) -> list[Step]:
    """The calls sample ``name`` makes: 1-5 of them, each from one of the three sources."""
    rng = random.Random(f"{SEED}:{name}")
    return [
        (rng.choice(("tool", "http", "manual")), step, rng.uniform(0, settings.max_sleep))
        for step in range(rng.randint(1, 5))
    ]


def agent(client: httpx.AsyncClient, settings: Settings) -> Callable[[str], Any]:
    async def run(name: str) -> str:
        for source, step, pause in plan(name, settings):
            if source == "tool":
                await lookup(name, step, pause)
            elif source == "http":
                body = {"model": f"{name}/{step}", "messages": [{"role": "user", "content": "hi"}]}
                (await client.post("/chat/completions", json=body)).raise_for_status()
            else:
                await anyio.sleep(pause)
                record_tool_call("note", {"sample": name, "step": step}, result=step)
        return name

    return run


def expected_events(name: str, settings: Settings) -> list[tuple[str, str]]:
    events = []
    for source, step, _ in plan(name, settings):
        if source == "http":
            events.append(("model", f"{name}/{step}"))
        else:
            events.append((("lookup" if source == "tool" else "note"), f"{name}/{step}"))
    return events


def seen_events(trace: Trace | None) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    for event in () if trace is None else trace.events():
        if isinstance(event, ModelCall):
            events.append(("model", str(event.model)))
        elif isinstance(event, ToolCall):
            events.append((event.name, f"{event.arguments['sample']}/{event.arguments['step']}"))
        else:
            events.append(("retrieval", "?"))
    return events


async def scenario_isolation(settings: Settings) -> dict[str, Any]:
    n, c = settings.isolation_n, settings.isolation_concurrency
    print(f"\n(a) isolation: {n} samples, concurrency {c}, 1-5 calls each (tool, httpx, manual)")
    samples = Samples(EvaluationSample(f"s{i}", [f"s{i}"]) for i in range(n))
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    async with (
        OpenAICompatibleServer(default="ok") as server,
        httpx.AsyncClient(
            base_url=server.base_url, event_hooks=httpx_event_hooks(), limits=limits, timeout=60
        ) as client,
    ):
        started = perf_counter()
        report = await Scorer(c).evaluate(samples, agent(client, settings), NotBlankStrategy())
        wall = perf_counter() - started
    exact = 0
    wrong: list[str] = []
    calls = 0
    for row in report.evaluations:
        want, got = expected_events(row.name, settings), seen_events(row.trace)
        calls += len(got)
        if want == got and row.outcome.value == "passed":
            exact += 1
        elif len(wrong) < 3:
            wrong.append(f"{row.name}: expected {want}, got {got} ({row.outcome.value})")
    rows = [[str(n), str(c), str(calls), f"{wall:.2f}", f"{exact}/{n}", verdict(exact == n)]]
    print(table(["samples", "concurrency", "calls", "wall s", "exact traces", "target"], rows))
    for line in wrong:
        print("  MISMATCH", line)
    return {
        "n": n,
        "concurrency": c,
        "calls": calls,
        "wall_s": wall,
        "exact": exact,
        "mismatches": wrong,
        "verdict": verdict(exact == n),
    }


# --- (b) cost per recorded call ---------------------------------------------------------------


def plain_weather(city: str, days: int = 1) -> str:
    return city


traced_weather = aeval.tool(name="get_weather")(plain_weather)


async def plain_async_weather(city: str, days: int = 1) -> str:
    return city


traced_async_weather = aeval.tool(name="get_weather")(plain_async_weather)

PER_SAMPLE = 5
CHAT_BODY = orjson.dumps(
    {
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
)
CHAT_REQUEST = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
CHAT_HEADERS = {  # what a local OpenAI-compatible server (llama.cpp, vLLM) sends
    "date": "Wed, 02 Dec 2026 05:00:00 GMT",
    "server": "uvicorn",
    "content-length": str(len(CHAT_BODY)),
    "content-type": "application/json",
    "connection": "keep-alive",
}


def _sync_loop(function: Callable[..., Any], samples: int) -> float:
    started = process_time()
    for _ in range(samples):
        with recording() as recorder:
            for _ in range(PER_SAMPLE):
                function("Mysore")
        recorder.snapshot()
    return process_time() - started


def _manual(city: str) -> None:
    record_tool_call("get_weather", {"city": city, "days": 1}, result=city)


def _no_call(city: str) -> None:
    return None


def _exchanges(count: int) -> list[tuple[httpx.Request, httpx.Response]]:
    """``count`` chat completions as httpx builds them, the response not yet seen by a hook:
    its body unread, in the stream a client binds to it (which sets ``response.elapsed``
    when the body has been read)."""
    url = "http://127.0.0.1/v1/chat/completions"
    exchanges = []
    for _ in range(count):
        request = httpx.Request("POST", url, content=CHAT_REQUEST)
        response = httpx.Response(
            200,
            stream=httpx.ByteStream(CHAT_BODY),
            headers=CHAT_HEADERS,
            request=request,
        )
        response.stream = BoundSyncStream(response.stream, response, perf_counter())
        exchanges.append((request, response))
    return exchanges


def _hooks_record(hooks: dict[str, list[Callable[[Any], Any]]]) -> float:
    """CPU seconds of one recording of five chat completions through ``hooks``.

    Its requests and responses are built just before, outside the timed part (on both
    sides): building them costs ~50 us a call, which would bury the hooks' few us in noise;
    built just before, they are as fresh in the CPU's caches as httpx's own are when it
    calls the hooks. The young objects are collected before the timed part too: hundreds of
    them are httpx's, and a collection set off inside it by the hooks' few allocations
    would charge the hooks for traversing them all.
    """
    exchanges = _exchanges(PER_SAMPLE)
    gc.collect(0)
    started = process_time()
    with recording() as recorder:
        for request, response in exchanges:
            for hook in hooks.get("request", ()):
                hook(request)
            for hook in hooks.get("response", ()):
                hook(response)
            response.read()  # what httpx.Client.send does after the hooks (no stream)
    recorder.snapshot()
    return process_time() - started


def _hooks_sides(samples: int, plain_first: bool) -> tuple[float, float]:
    """CPU seconds of ``samples`` recordings with the hooks and as many without, taken in
    turns, sample by sample: the machine's drift over a run falls on both sides alike, and
    the few us of the hooks are not lost in the ~15 us of httpx's own read of a response."""
    return _sides_of(httpx_event_hooks(sync=True))(samples, plain_first)


def _sides_of(hooks: dict[str, list[Callable[[Any], Any]]]) -> Sides:
    def sides(samples: int, plain_first: bool) -> tuple[float, float]:
        spent = [0.0, 0.0]
        for index in range(samples):
            for side in (1, 0) if (index + plain_first) % 2 else (0, 1):
                spent[side] += _hooks_record(hooks if side == 0 else {})
        return spent[0], spent[1]

    return sides


def _context_and_status(response: httpx.Response) -> None:
    """The least any response hook does: whether a trace records here, and the status."""
    recorder = RECORDER.get()
    if recorder is not None and 200 <= response.status_code < 300:
        return


_FIXED = RawModelCall(CHAT_BODY, CHAT_REQUEST, 0.001)


def _kept_undecided(response: httpx.Response) -> None:
    """:func:`_context_and_status`, then a fixed model call kept as the hooks keep one (an
    entry), with no decision, no clock but one, no body read."""
    recorder = RECORDER.get()
    if recorder is not None and 200 <= response.status_code < 300:
        recorder.add_model_call((next(SEQUENCE), time_ns(), None), _FIXED)


FLOORS = [
    ("a hook: context, status", _context_and_status),
    ("+ keep a fixed call, snapshot", _kept_undecided),
]
"""What stands under ``httpx_event_hooks`` on this machine, measured the same way: a hook
that only looks, and one that keeps a call without deciding or reading anything."""


async def _async_loop(function: Callable[..., Any], samples: int) -> float:
    started = process_time()
    for _ in range(samples):
        with recording() as recorder:
            for _ in range(PER_SAMPLE):
                await function("Mysore")
        recorder.snapshot()
    return process_time() - started


Sides = Callable[[int, bool], tuple[float, float]]
"""CPU seconds of ``samples`` calls traced and untraced (the untraced first when asked)."""


def _in_turn(traced: Callable[[int], float], plain: Callable[[int], float]) -> Sides:
    def sides(samples: int, plain_first: bool) -> tuple[float, float]:
        if plain_first:
            untraced = plain(samples)
            return traced(samples), untraced
        return traced(samples), plain(samples)

    return sides


def _pairs(settings: Settings) -> list[tuple[str, Sides]]:
    return [
        (
            "@aeval.tool (sync)",
            _in_turn(
                lambda s: _sync_loop(traced_weather, s), lambda s: _sync_loop(plain_weather, s)
            ),
        ),
        (
            "@aeval.tool (async)",
            _in_turn(
                lambda s: asyncio.run(_async_loop(traced_async_weather, s)),
                lambda s: asyncio.run(_async_loop(plain_async_weather, s)),
            ),
        ),
        (
            "record_tool_call",
            _in_turn(lambda s: _sync_loop(_manual, s), lambda s: _sync_loop(_no_call, s)),
        ),
        ("httpx_event_hooks", _hooks_sides),
    ]


def scenario_cost(settings: Settings) -> dict[str, Any]:
    samples = max(1, settings.cost_calls // PER_SAMPLE)
    calls = samples * PER_SAMPLE
    print(f"\n(b) cost per recorded call: {calls} calls, {PER_SAMPLE} per sample, ", end="")
    print(f"medians of {settings.reps}")
    sources: list[dict[str, Any]] = []
    rows: list[list[str]] = []
    for label, sides in _pairs(settings):
        sides(max(1, samples // 10), False)
        walls: dict[str, list[float]] = {"traced": [], "plain": []}
        for rep in range(settings.reps):
            traced, plain = sides(samples, rep % 2 == 1)
            walls["traced"].append(traced)
            walls["plain"].append(plain)
        traced_us = statistics.median(walls["traced"]) / calls * 1e6
        plain_us = statistics.median(walls["plain"]) / calls * 1e6
        cost = traced_us - plain_us
        source = {
            "source": label,
            "calls": calls,
            "traced_us_per_call": traced_us,
            "plain_us_per_call": plain_us,
            "cost_us_per_call": cost,
            "traced_walls": walls["traced"],
            "plain_walls": walls["plain"],
            "verdict": verdict(cost <= COST_TARGET_US),
        }
        sources.append(source)
        rows.append(
            [
                label,
                f"{traced_us:.2f}",
                f"{plain_us:.2f}",
                f"{cost:.2f}",
                f"{source['verdict']} (<= {COST_TARGET_US:g} us)",
            ]
        )
    print(table(["source", "traced us/call", "untraced us/call", "cost us/call", "target"], rows))
    floors = _floors(samples, settings.reps)
    ok = all(source["verdict"] == "PASS" for source in sources)
    return {"sources": sources, "hook_floors": floors, "verdict": verdict(ok)}


def _floors(samples: int, reps: int) -> dict[str, float]:
    """The cost per call of :data:`FLOORS`, printed under the hooks' row (no target)."""
    calls = samples * PER_SAMPLE
    floors: dict[str, float] = {}
    for label, hook in FLOORS:
        sides = _sides_of({"response": [hook]})
        sides(max(1, samples // 10), False)
        costs = []
        for rep in range(reps):
            traced, plain = sides(samples, rep % 2 == 1)
            costs.append((traced - plain) / calls * 1e6)
        floors[label] = statistics.median(costs)
    print(
        "under the hooks, the same way (no target): "
        + "; ".join(f"{label} {cost:.2f} us" for label, cost in floors.items())
    )
    return floors


# --- (c) overhead of a run that records nothing ----------------------------------------------


class _NoRecorder:
    unmocked = None

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def snapshot(self) -> None:
        return None


def _off_activate(recorder: Any) -> None:
    return None


def _off_deactivate(tokens: Any) -> None:
    return None


def _off_make_ran_current(trace: Any) -> None:
    return None


class _NoVar:
    """Stands for the recorder's context variable, which the engine sets directly."""

    def set(self, value: Any) -> None:
        return None

    def reset(self, token: Any) -> None:
        return None


@contextlib.contextmanager
def tracing_off() -> Iterator[None]:
    """The engine without its trace hooks: no recorder per sample, no current trace."""
    names = ("Recorder", "activate", "deactivate", "make_ran_current", "RECORDER")
    saved = [getattr(engine_run, name) for name in names]
    off = (_NoRecorder, _off_activate, _off_deactivate, _off_make_ran_current, _NoVar())
    for name, hook in zip(names, off, strict=True):
        setattr(engine_run, name, hook)
    try:
        yield
    finally:
        for name, hook in zip(names, saved, strict=True):
            setattr(engine_run, name, hook)


async def silent(params: Any) -> Any:
    await anyio.lowlevel.checkpoint()
    return params[0]


async def baseline(samples: Samples, concurrency: int) -> int:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(sample: EvaluationSample) -> bool:
        async with semaphore:
            started = perf_counter()
            output = await silent(sample.parameters)
            perf_counter() - started
            return bool(output)

    return sum(await asyncio.gather(*(one(sample) for sample in samples)))


async def _side(side: str, samples: Samples, concurrency: int) -> tuple[float, int, float]:
    """Wall seconds, rows passed and CPU seconds (``process_time``) of one run."""
    cpu = process_time()
    started = perf_counter()
    if side == "baseline":
        passed = await baseline(samples, concurrency)
    elif side == "off":
        with tracing_off():
            report = await Scorer(concurrency).evaluate(samples, silent, NotBlankStrategy())
        passed = report.passed_count
    else:
        report = await Scorer(concurrency).evaluate(samples, silent, NotBlankStrategy())
        passed = report.passed_count
    return perf_counter() - started, passed, process_time() - cpu


async def scenario_overhead(settings: Settings) -> dict[str, Any]:
    n, c = settings.overhead_n, settings.overhead_concurrency
    print(f"\n(c) a run that records nothing: {n} samples, concurrency {c}, ", end="")
    print(f"medians of {settings.reps}")
    samples = Samples(EvaluationSample(f"s{i}", [f"input-{i}"]) for i in range(n))
    sides = ("on", "off", "baseline")
    for side in sides:
        await _side(side, samples[:50], c)
    runs: dict[str, list[tuple[float, int, float]]] = {side: [] for side in sides}
    for rep in range(settings.reps):
        order = sides if rep % 2 == 0 else tuple(reversed(sides))
        for side in order:
            runs[side].append(await _side(side, samples, c))
    us = {side: statistics.median(w for w, *_ in runs[side]) / n * 1e6 for side in sides}
    cpu = {side: statistics.median(c for *_, c in runs[side]) / n * 1e6 for side in sides}
    ratio = us["on"] / us["off"]
    cpu_ratio = cpu["on"] / cpu["off"]
    above_on, above_off = us["on"] - us["baseline"], us["off"] - us["baseline"]
    rows = []
    for side, label in (("on", "tracing on"), ("off", "tracing off"), ("baseline", "baseline")):
        walls = [w for w, *_ in runs[side]]
        rows.append(
            [
                label,
                f"{statistics.median(walls):.4f} [{min(walls):.4f}-{max(walls):.4f}]",
                f"{us[side]:.2f}",
                f"{cpu[side]:.2f}",
                f"{min(p for _, p, _ in runs[side])}/{n}",
            ]
        )
    print(table(["run", "wall s", "us/sample", "cpu us/sample", "passed"], rows))
    result = verdict(ratio <= OVERHEAD_TARGET)
    print(
        f"tracing on / off: {ratio:.3f} per sample ({(ratio - 1) * 100:+.1f} %), "
        f"{us['on'] - us['off']:+.2f} us/sample; above the baseline: "
        f"{above_on:.2f} vs {above_off:.2f} us/sample; {result} (<= {OVERHEAD_TARGET:g}x)"
    )
    print(f"CPU time on / off: {cpu_ratio:.3f} per sample ({(cpu_ratio - 1) * 100:+.1f} %)")
    return {
        "n": n,
        "concurrency": c,
        "us_per_sample": us,
        "walls": {side: [w for w, *_ in runs[side]] for side in sides},
        "passed": {side: [p for _, p, _ in runs[side]] for side in sides},
        "ratio": ratio,
        "cpu_us_per_sample": cpu,
        "cpu_ratio": cpu_ratio,
        "added_us_per_sample": us["on"] - us["off"],
        "verdict": result,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "scenario", nargs="?", default="all", choices=["all", "isolation", "cost", "overhead"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repetition")
    parser.add_argument("--reps", type=int, help="repetitions per measurement (default 5)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.reps is not None:
        settings = replace(settings, reps=args.reps)
    info = machine("anyio")
    print(f"aeval trace benchmarks{' (quick mode)' if args.quick else ''}: {info['date']}")
    print(f"Python {info['python']}, {info['platform']}, {info['cpus']} CPUs, ", end="")
    print(f"load average {info['load_average']}")
    results: dict[str, Any] = {"machine": info, "quick": args.quick, "reps": settings.reps}
    if args.scenario in ("all", "isolation"):
        results["isolation"] = anyio.run(scenario_isolation, settings)
    if args.scenario in ("all", "cost"):
        results["cost"] = scenario_cost(settings)
    if args.scenario in ("all", "overhead"):
        results["overhead"] = anyio.run(scenario_overhead, settings)
    verdicts = {
        k: v["verdict"] for k, v in results.items() if isinstance(v, dict) and "verdict" in v
    }
    print("\nsummary: " + ", ".join(f"{k} {v}" for k, v in verdicts.items()))
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0 if verdicts.get("isolation", "PASS") == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
