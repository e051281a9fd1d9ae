"""The work a sample costs, counted (not timed), beside a hand-written loop counted the same way.

Python calls per sample (``sys.setprofile`` counts every Python function entered; C functions
are not counted) and cycle collections (``gc.callbacks``) do not move with the machine's load,
so they show where work went when wall times swing. A per-sample count is the count of a run
of 2n samples less that of a run of n (the fixed cost of a run cancels out). Each case prints
aeval's count, the count of a plain asyncio ``Semaphore`` + ``gather`` loop doing the same
work in the same run, their ratio, and the budget (with its tolerance) the case was last held
to; over budget prints OVER, a finding to look at, not a failed test: the unit suite asserts
behaviour only.

Cases:

- ``scorer``: ``Scorer(20).evaluate`` of in-memory samples, an async target, ``ExactMatchStrategy``.
- ``stream``: the same over ``Samples.stream`` of a JSONL file, ``keep="failures"``.
- ``sink``: ``Scorer.stream`` with a ``JsonlSink``, every row read by the caller.
- ``tool``: ``aeval.trace.record_tool_call`` and an ``@aeval.tool`` call inside a capture, per call.
- ``gc``: cycle collections during a streamed run of 20,000 tagged samples.
- ``online``: ``OnlineEvaluator.submit`` and the evaluation of each response by two built-in
  checks (``NotBlankStrategy``, ``ContainsStrategy``), per response.
- ``cli``: ``aeval run --quiet --no-store`` of a streamed JSONL file, in this process, per sample.

Usage::

    python benchmarks/bench_calls.py              # every case, full size
    python benchmarks/bench_calls.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from _machine import machine

import aeval
from aeval import EvaluationSample, JsonlSink, Parameters, Samples, Scorer
from aeval.strategies import ExactMatchStrategy

TOLERANCE = 0.15
"""How far over its budget a count may go before the case says OVER."""

BUDGETS = {
    "scorer": 8.5,
    "stream": 7.5,
    "sink": 28.0,
    "tool": 2.0,
    "gc": 20.0,
    "online": 17.5,
    "cli": 17.0,
}
"""Each case's last held figure (calls per sample, per recorded call, or collections)."""


class _Calls:
    def __init__(self) -> None:
        self.count = 0

    def _watch(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.count += 1

    @contextmanager
    def counting(self) -> Iterator[None]:
        sys.setprofile(self._watch)
        try:
            yield
        finally:
            sys.setprofile(None)


def _count(run: Callable[[], Any]) -> int:
    calls = _Calls()
    with calls.counting():
        run()
    return calls.count


async def _target(params: Parameters) -> Any:
    return params.values[0]


async def _text_target(text: str) -> str:
    return text


async def _gather_baseline(pairs: list[tuple[str, str]]) -> int:
    limit = asyncio.Semaphore(20)

    async def one(given: str, expected: str) -> bool:
        async with limit:
            output = await _text_target(given)
            return output == expected

    return sum(await asyncio.gather(*(one(g, e) for g, e in pairs)))


def _write(path: Path, count: int, *, tags: bool = False) -> Path:
    lines = (
        orjson.dumps(
            {"name": f"s{i}", "parameters": [f"in{i}"], "expected-output": f"in{i}"}
            | ({"tags": ["t"]} if tags else {})
        )
        for i in range(count)
    )
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _file_baseline(path: Path) -> int:
    pairs = [
        (item["parameters"][0], item["expected-output"])
        for item in map(orjson.loads, path.read_bytes().splitlines())
    ]
    return asyncio.run(_gather_baseline(pairs))


def case_scorer(n: int, _: Path) -> tuple[float, float]:
    samples = Samples(EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}") for i in range(n))
    scorer = Scorer(20)

    async def run() -> None:
        report = await scorer.evaluate(samples, _target, ExactMatchStrategy())
        assert report.passed_count == n

    asyncio.run(run())
    pairs = [(f"in{i}", f"in{i}") for i in range(n)]
    return _count(lambda: asyncio.run(run())), _count(lambda: asyncio.run(_gather_baseline(pairs)))


def case_stream(n: int, tmp: Path) -> tuple[float, float]:
    path = _write(tmp / f"stream{n}.jsonl", n)
    scorer = Scorer(20, keep="failures")

    async def run() -> None:
        report = await scorer.evaluate(Samples.stream(path), _text_target, ExactMatchStrategy())
        assert report.passed_count == n

    asyncio.run(run())
    return _count(lambda: asyncio.run(run())), _count(lambda: _file_baseline(path))


def case_sink(n: int, tmp: Path) -> tuple[float, float]:
    samples = Samples(EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}") for i in range(n))

    async def run() -> None:
        scorer = Scorer(20, sinks=[JsonlSink(tmp / "rows.jsonl")], keep="failures")
        async with scorer.stream(samples, _target, ExactMatchStrategy()) as rows:
            assert sum([1 async for _ in rows]) == n

    asyncio.run(run())
    pairs = [(f"in{i}", f"in{i}") for i in range(n)]
    return _count(lambda: asyncio.run(run())), _count(lambda: asyncio.run(_gather_baseline(pairs)))


def case_tool(n: int, _: Path) -> tuple[float, float]:
    @aeval.tool
    def weather(city: str, days: int = 1) -> str:
        return "sunny"

    kept: list[tuple[str, dict[str, Any], str]] = []

    def by_hand(name: str, arguments: dict[str, Any], result: str) -> None:
        kept.append((name, dict(arguments), result))

    def traced() -> None:
        with aeval.trace.capture():
            for _ in range(n):
                aeval.trace.record_tool_call("manual", {"city": "Mysore"}, result="sunny")
                weather("Mysore", 1)

    def baseline() -> None:
        for _ in range(n):
            by_hand("manual", {"city": "Mysore"}, "sunny")
            by_hand("weather", {"city": "Mysore", "days": 1}, weather.__wrapped__("Mysore", 1))

    return _count(traced) / 2, _count(baseline) / 2


def case_gc(n: int, tmp: Path) -> tuple[float, float]:
    path = _write(tmp / "gc.jsonl", n, tags=True)
    scorer = Scorer(50, keep="failures")

    async def run() -> None:
        report = await scorer.evaluate(Samples.stream(path), _text_target, ExactMatchStrategy())
        assert report.passed_count == n

    def collections(work: Callable[[], Any]) -> int:
        seen = 0

        def count(phase: str, info: dict[str, int]) -> None:
            nonlocal seen
            seen += phase == "start"

        gc.collect()
        gc.callbacks.append(count)
        try:
            work()
        finally:
            gc.callbacks.remove(count)
        return seen

    asyncio.run(run())
    return float(collections(lambda: asyncio.run(run()))), float(
        collections(lambda: _file_baseline(path))
    )


def case_online(n: int, _: Path) -> tuple[float, float]:
    from aeval.online import OnlineEvaluator
    from aeval.strategies import ContainsStrategy, NotBlankStrategy

    checks = (NotBlankStrategy(), ContainsStrategy(must_not_contain=["I cannot"]))

    async def run() -> None:
        async with OnlineEvaluator(*checks, queue_size=2 * n) as online:
            for i in range(n):
                online.submit({"question": f"q{i}"}, f"answer {i}")
            await online.join()
            assert online.statistics().rows == 2 * n

    async def by_hand() -> None:
        answers = [f"answer {i}" for i in range(n)]
        limit = asyncio.Semaphore(20)

        async def one(answer: str) -> bool:
            async with limit:
                return bool(answer.strip()) and "I cannot" not in answer

        assert all(await asyncio.gather(*(one(a) for a in answers)))

    asyncio.run(run())
    return _count(lambda: asyncio.run(run())), _count(lambda: asyncio.run(by_hand()))


def case_cli(n: int, tmp: Path) -> tuple[float, float]:
    from aeval.__main__ import main as aeval_main

    project = tmp / f"cli{n}"
    project.mkdir(exist_ok=True)
    (project / "echo_bot.py").write_text(
        "async def answer(text: str) -> str:\n    return text\n", encoding="utf-8"
    )
    path = _write(project / "samples.jsonl", n)
    config = project / "aeval.yaml"
    config.write_text(
        f"samples: {path.name}\ntarget: echo_bot:answer\n"
        "strategies: [{name: exact_match}]\noutput: {dir: out, formats: [json]}\n",
        encoding="utf-8",
    )

    def run() -> None:
        here, sys.path[:] = Path.cwd(), [str(project), *sys.path]
        os.chdir(project)
        try:
            assert aeval_main(["run", str(config), "--quiet", "--no-store"]) == 0
        finally:
            os.chdir(here)
            sys.path.remove(str(project))
        sys.modules.pop("echo_bot", None)

    run()
    return _count(run), _count(lambda: _file_baseline(path))


CASES: dict[str, tuple[Callable[[int, Path], tuple[float, float]], int, int, str]] = {
    "scorer": (case_scorer, 2_000, 200, "Python calls per sample"),
    "stream": (case_stream, 2_000, 200, "Python calls per sample"),
    "sink": (case_sink, 1_000, 200, "Python calls per sample"),
    "tool": (case_tool, 1_000, 100, "Python calls per recorded call"),
    "gc": (case_gc, 20_000, 2_000, "cycle collections in the run"),
    "online": (case_online, 1_000, 200, "Python calls per response"),
    "cli": (case_cli, 2_000, 200, "Python calls per sample"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", help="default: every case")
    parser.add_argument("--quick", action="store_true", help="small sizes, for the smoke test")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    print(f"aeval counted work{' (quick mode)' if args.quick else ''}: {machine()['date']}")
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases or list(CASES):
            run, full, quick, unit = CASES[name]
            size = quick if args.quick else full
            if name == "gc":
                ours, baseline = run(size, Path(tmp))
            else:  # the counts of 2n less those of n: the run's fixed cost cancels out
                small, large = run(size, Path(tmp)), run(2 * size, Path(tmp))
                ours, baseline = ((b - a) / size for a, b in zip(small, large, strict=True))
            budget = BUDGETS[name]
            verdict = "ok" if ours <= budget * (1 + TOLERANCE) else "OVER"
            ratio = ours / baseline if baseline else float("inf")
            print(
                f"{name:7s} {unit} (n={size}): aeval {ours:.2f}, hand-written loop "
                f"{baseline:.2f} (same run), ratio {ratio:.2f}x; budget {budget:g} "
                f"+{TOLERANCE:.0%}: {verdict}"
            )
            figures[name] = {
                "unit": unit,
                "size": size,
                "aeval": ours,
                "baseline": baseline,
                "budget": budget,
                "tolerance": TOLERANCE,
                "verdict": verdict,
            }
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
