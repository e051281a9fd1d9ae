"""The regression guard: the same cases on a git ref and on the working tree, side by side.

``REF`` (a commit, a branch, a tag: ``main``, ``HEAD~3``, ``4e8ca09``) is checked out into a
temporary git worktree, removed at the end. Each case then runs in fresh subprocesses, once
with the ref's ``aeval`` first on ``sys.path`` and once with the working tree's, the two
sides alternating (ref, tree, tree, ref, ...), so both see the same machine and the same
drift. The case's code is this file's, so only ``aeval`` differs. Printed per case: the
median seconds of each side (the range in brackets) and the ratio tree / ref; above 1 the
working tree is slower. Nothing is asserted: read the ratios (a shared machine moves single
figures by several percent; run more repetitions to be sure).

Usage::

    python benchmarks/compare.py main                       # every case, 5 repetitions
    python benchmarks/compare.py HEAD~1 --cases stream,import --reps 9
    python benchmarks/compare.py main --quick               # small sizes, 1 repetition
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

CASES: dict[str, str] = {
    "import": "a fresh interpreter's `import aeval`",
    "overhead": "Scorer: N samples in a list, latency 0, concurrency 100, one check",
    "made": "the same with keep='all': every passing row made (overhead counts them, unmade)",
    "stream": "Scorer: N samples streamed from JSONL, keep='failures'",
    "load": "Samples.load of a JSONL file of N samples",
    "tiny": "an empty case: the plumbing alone (for the tests)",
    "online": "OnlineEvaluator: CPU seconds for N responses, two text checks on each",
}
"""Every case: what it measures. N is 20,000 unless ``--samples`` says (2,000 with --quick)."""


def _case_import(_: dict[str, Any]) -> float:
    code = "import time; t = time.perf_counter(); import aeval; print(time.perf_counter() - t)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_env()
    )
    return float(done.stdout.strip())


def _case_overhead(options: dict[str, Any], keep: str = "failures") -> float:
    import time

    import anyio

    from aeval import EvaluationSample, Scorer
    from aeval.strategies import ExactMatchStrategy

    samples = [EvaluationSample(f"s{i}", [f"in{i}"], f"in{i}") for i in range(options["n"])]

    async def identity(text: str) -> str:
        return text

    async def run() -> float:
        started = time.perf_counter()
        scorer = Scorer(100, keep=keep)  # type: ignore[arg-type]
        await scorer.evaluate(samples, identity, ExactMatchStrategy())
        return time.perf_counter() - started

    return anyio.run(run)


def _case_made(options: dict[str, Any]) -> float:
    return _case_overhead(options, keep="all")


def _case_stream(options: dict[str, Any]) -> float:
    import time

    import anyio

    from aeval import Samples, Scorer
    from aeval.strategies import ExactMatchStrategy

    async def identity(text: str) -> str:
        return text

    async def run() -> float:
        started = time.perf_counter()
        source = Samples.stream(options["jsonl"])
        await Scorer(100, keep="failures").evaluate(source, identity, ExactMatchStrategy())
        return time.perf_counter() - started

    return anyio.run(run)


def _case_load(options: dict[str, Any]) -> float:
    import time

    from aeval import Samples

    started = time.perf_counter()
    Samples.load_sync(options["jsonl"])
    return time.perf_counter() - started


def _case_online(options: dict[str, Any]) -> float:
    import time

    import anyio
    import anyio.lowlevel

    from aeval.online import OnlineEvaluator
    from aeval.strategies import ContainsStrategy, NotBlankStrategy

    count = options["n"]
    checks = (NotBlankStrategy(), ContainsStrategy(must_not_contain=["I cannot"]))
    answers = [f"Paris is the capital of France ({i})." for i in range(count)]

    async def run() -> float:
        async with OnlineEvaluator(*checks, queue_size=count, flush_interval=None) as online:
            started = time.process_time()
            for start in range(0, count, 100):
                for i in range(start, min(start + 100, count)):
                    online.submit({"question": "capital of France?"}, answers[i])
                await anyio.lowlevel.checkpoint()
            await online.join()
            return time.process_time() - started

    return anyio.run(run)


def _case_tiny(_: dict[str, Any]) -> float:
    import time

    import aeval

    started = time.perf_counter()
    len(aeval.__all__)
    return time.perf_counter() - started


_RUNNERS: dict[str, Callable[[dict[str, Any]], float]] = {
    "import": _case_import,
    "overhead": _case_overhead,
    "made": _case_made,
    "stream": _case_stream,
    "load": _case_load,
    "tiny": _case_tiny,
    "online": _case_online,
}


def _env(tree: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, env.get("PYTHONPATH", "")) if p)
    return env


def _write_jsonl(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            expected = "other" if i % 100 == 0 else f"in{i}"
            item = {"name": f"s{i}", "parameters": [f"in{i}"], "expected-output": expected}
            handle.write(json.dumps(item) + "\n")


def _run_side(case: str, tree: Path, options: dict[str, Any]) -> float:
    """One run of ``case`` in a fresh interpreter whose ``aeval`` is ``tree``'s."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", case, json.dumps(options)],
        capture_output=True,
        text=True,
        cwd=tree,
        env=_env(str(tree)),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"case {case!r} failed in {tree}:\n{done.stderr[-3000:]}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def compare(ref: str, cases: list[str], reps: int, count: int) -> dict[str, Any]:
    """Run ``cases`` on ``ref`` and on the working tree, alternating; return every figure."""
    try:
        commit = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except SystemExit:
        raise SystemExit(
            f"{ref!r} names no commit of this repository: give a branch, a tag or a commit"
        ) from None
    folder = Path(tempfile.mkdtemp(prefix="aeval-compare-"))
    checkout = folder / "ref"
    _git("worktree", "add", "--detach", "--quiet", str(checkout), commit)
    try:
        jsonl = folder / "samples.jsonl"
        _write_jsonl(jsonl, count)
        options = {"n": count, "jsonl": str(jsonl)}
        sides = {"ref": checkout, "tree": ROOT}
        seconds: dict[str, dict[str, list[float]]] = {c: {"ref": [], "tree": []} for c in cases}
        for case in cases:
            for rep in range(reps):
                order = ("ref", "tree") if rep % 2 == 0 else ("tree", "ref")
                for side in order:
                    seconds[case][side].append(_run_side(case, sides[side], options))
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(checkout)],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True, check=False)
    ratios = {
        case: statistics.median(runs["tree"]) / statistics.median(runs["ref"])
        if statistics.median(runs["ref"])
        else float("nan")
        for case, runs in seconds.items()
    }
    return {"ref": ref, "commit": commit, "samples": count, "seconds": seconds, "ratios": ratios}


def report(figures: dict[str, Any]) -> None:
    print(f"\nref {figures['ref']} ({figures['commit'][:10]}) against the working tree")
    print(f"{'case':<10}{'ref s (min-max)':>28}{'tree s (min-max)':>28}{'tree/ref':>10}")
    for case, runs in figures["seconds"].items():
        cells = ""
        for side in ("ref", "tree"):
            values = runs[side]
            median = statistics.median(values)
            cells += f"{f'{median:.4f} ({min(values):.4f}-{max(values):.4f})':>28}"
        print(f"{case:<10}{cells}{figures['ratios'][case]:>9.2f}x")
    print("tree/ref above 1: the working tree is slower (medians; read a few % as noise)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ref", nargs="?", help="the git ref to compare with (main, HEAD~1, ...)")
    parser.add_argument(
        "--cases",
        default=",".join(case for case in CASES if case != "tiny"),
        help=f"comma-separated, of: {', '.join(CASES)} (default: all but tiny)",
    )
    parser.add_argument("--reps", type=int, default=5, help="runs per side and case (default 5)")
    parser.add_argument("--samples", type=int, default=20_000, help="N (default 20,000)")
    parser.add_argument("--quick", action="store_true", help="N = 2,000 and one repetition")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "OPTIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        case, options = args.child
        print(json.dumps({"seconds": _RUNNERS[case](json.loads(options))}))
        return 0
    if args.ref is None:
        parser.error("give the git ref to compare with, e.g. main or HEAD~1")
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    unknown = [case for case in cases if case not in CASES]
    if unknown or not cases:
        parser.error(
            f"unknown case(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(CASES)}"
        )
    for case in cases:
        print(f"{case}: {CASES[case]}")
    figures = compare(
        args.ref, cases, 1 if args.quick else args.reps, 2_000 if args.quick else 20_000
    )
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
