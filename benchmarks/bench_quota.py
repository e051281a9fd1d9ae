"""How fast judge calls get through a provider's quota: aeval against llmock's quotas.

llmock 0.2.2 (a third-party mock provider, ``pip install llmock==0.2.2``) enforces quotas as
providers do: per API key, a requests and a tokens bucket holding a minute's worth, refilling
continuously, a 429 with the real wait (``retry-after-ms``, and ``Retry-After`` rounded up to
whole seconds) beyond them, and ``x-ratelimit-*`` headers on every reply. A request is
charged its bytes / 4 plus its ``max_tokens``.

The benchmark starts llmock on 127.0.0.1 (150 ms latency) and judges samples with
``AiJudgeStrategy`` at ``Scorer(concurrency=64)`` (llmock's replies are not a verdict, so
each row asks twice: the judge's re-ask). Four cases, each with a fresh API key, so a fresh
bucket, full at the start:

* ``rpm, defaults`` / ``tpm, defaults``: the client knows nothing of the quota;
* ``rpm, configured`` / ``tpm, configured``: ``requests_per_minute=`` (``tokens_per_minute=``)
  set to the quota.

The calls need 1.5 times the bucket, so the physical minimum (a full bucket at once, then
the refill, plus one latency) is 30 s; the issue's measurement used twice the bucket (60 s),
the figures scale. The physical minimum is computed from what llmock admitted: the calls
answered 200 and their charges, read back from its journal (``--quick``: a quota of 120
requests a minute and calls for 1.05 buckets, 3 s of refill, no baseline). Printed per
case: wall, the physical minimum, efficiency (minimum / wall), the 429s and the rows lost
(error rows), for aeval as it is and for today's behaviour beside it: by default the
options that switch the new pacing off (``RateLimits(burst=1, follow_headers=False)`` and
``RetryPolicy(rate_limit_attempts=4)``: a one-second bucket, no headers read, a 429 counted
within four attempts; ``retry-after-ms`` and the jitter stay), or with ``--baseline-ref REF``
the code of that git ref (a temporary worktree), exactly. Goals: defaults efficiency >= 0.95,
429s <= 2 % of requests, no row lost; configured efficiency >= 0.95 and no 429.

llmock is looked for at ``--llmock PATH``, ``$AEVAL_BENCH_LLMOCK``, on the ``PATH``, then in
the cache venv that ``--install`` makes (``~/.cache/aeval/llmock-0.2.2``). Without it the
benchmark says so: ``--quick`` exits 0, a full run 2.

Usage::

    python benchmarks/bench_quota.py --install               # once: llmock in a cache venv
    python benchmarks/bench_quota.py                         # 4 cases and the baseline, ~6 min
    python benchmarks/bench_quota.py --baseline-ref main     # the baseline from a git ref
    python benchmarks/bench_quota.py --quick --json out.json # smoke mode (used by a test)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("AEVAL_BENCH_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

LLMOCK = "llmock==0.2.2"
CACHE_VENV = Path.home() / ".cache" / "aeval" / "llmock-0.2.2"
LATENCY_MS = 150
CONCURRENCY = 64
MODEL = "gpt-4o-mini"
GOAL_EFFICIENCY = 0.95
GOAL_429_SHARE = 0.02


def find_llmock(given: str | None) -> tuple[str | None, str]:
    """The llmock executable, or ``None`` and where it was looked for."""
    candidates = [given, os.environ.get("AEVAL_BENCH_LLMOCK")]
    for candidate in candidates:
        if candidate:
            path = Path(candidate)
            return (str(path), "") if path.is_file() else (None, f"no llmock at {path}")
    found = shutil.which("llmock") or (
        str(CACHE_VENV / "bin" / "llmock") if (CACHE_VENV / "bin" / "llmock").is_file() else None
    )
    where = f"not on the PATH nor in {CACHE_VENV}"
    return found, "" if found else where


def install() -> str:
    """``llmock==0.2.2`` in the cache venv; its executable."""
    subprocess.run([sys.executable, "-m", "venv", str(CACHE_VENV)], check=True)
    subprocess.run(
        [str(CACHE_VENV / "bin" / "python"), "-m", "pip", "install", "-q", LLMOCK], check=True
    )
    return str(CACHE_VENV / "bin" / "llmock")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LLMock:
    """llmock serving on 127.0.0.1 with one quota, stopped on exit."""

    def __init__(self, executable: str, *, rpm: int | None, tpm: int | None) -> None:
        self.port = free_port()
        command = [
            executable,
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            "--latency-ms",
            str(LATENCY_MS),
            "--tool-mode",
            "off",
        ]
        if rpm:
            command += ["--rpm", str(rpm)]
        if tpm:
            command += ["--tpm", str(tpm)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LLMock:
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llmock exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/_llmock/scenario", timeout=1)
                return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("llmock did not start within 60 s")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)

    def journal(self) -> list[dict[str, Any]]:
        import httpx

        reply = httpx.get(f"http://127.0.0.1:{self.port}/_llmock/requests", timeout=60)
        return list(reply.json()["requests"])

    def forget(self) -> None:
        import httpx

        httpx.delete(f"http://127.0.0.1:{self.port}/_llmock/requests", timeout=60)


def charge(record: dict[str, Any]) -> int:
    """What llmock charged a request: its bytes / 4 plus its max_tokens (the client sent
    compact JSON, which orjson gives back byte for byte)."""
    import orjson

    body = record["body"]
    return max(1, len(orjson.dumps(body)) // 4) + int(body.get("max_tokens") or 0)


def run_case(options: dict[str, Any]) -> dict[str, Any]:
    """One judged run against llmock: wall, 429s, rows lost, what the client saw."""
    import anyio

    from aeval import EvaluationSample, Scorer
    from aeval.models import OpenAIChatModel
    from aeval.strategies import AiJudgeStrategy

    settings: dict[str, Any] = {"max_concurrency": CONCURRENCY}
    if options["configured"] == "rpm":
        settings["requests_per_minute"] = options["quota"]
    elif options["configured"] == "tpm":
        settings["tokens_per_minute"] = options["quota"]
    if options["switched_off"]:
        from aeval.models import RateLimits, RetryPolicy

        settings = {
            "limits": RateLimits(burst=1, follow_headers=False, **settings),
            "retry": RetryPolicy(rate_limit_attempts=4),
        }
    judge = OpenAIChatModel(
        MODEL, base_url=options["base_url"], api_key=options["api_key"], **settings
    )
    samples = [
        EvaluationSample(f"q{i}", [f"What is {i} plus {i}?"], str(2 * i))
        for i in range(options["samples"])
    ]

    def answer(question: str) -> str:
        return str(2 * int(question.split()[2]))

    async def main() -> tuple[Any, float]:
        started = time.perf_counter()
        async with judge:
            report = await Scorer(CONCURRENCY).evaluate(samples, answer, AiJudgeStrategy(judge))
        return report, time.perf_counter() - started

    report, wall = anyio.run(main)
    stats = judge.statistics()
    lost = report.error_count
    return {"wall": wall, "rows": len(samples), "lost": lost, "client_requests": stats.requests}


def run_elsewhere(options: dict[str, Any], root: Path) -> dict[str, Any]:
    """:func:`run_case` in a subprocess whose ``aeval`` comes from ``root``."""
    env = {**os.environ, "AEVAL_BENCH_ROOT": str(root), "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, __file__, "--run-case", json.dumps(options)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the baseline case failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(
    server: LLMock, options: dict[str, Any], *, kind: str, quota: int, root: Path | None
) -> dict[str, Any]:
    """Run a case, then read llmock's journal: 429s and the physical minimum."""
    server.forget()
    options = {**options, "base_url": server.base_url, "api_key": f"sk-{uuid.uuid4().hex}"}
    result = run_case(options) if root is None else run_elsewhere(options, root)
    records = server.journal()
    admitted = [r for r in records if r["status"] == 200]
    limited = sum(1 for r in records if r["status"] == 429)
    used = len(admitted) if kind == "rpm" else sum(charge(r) for r in admitted)
    rate = quota / 60.0
    minimum = max(0.0, (used - quota) / rate) + LATENCY_MS / 1000.0
    return {
        **result,
        "requests": len(records),
        "rate_limited": limited,
        "share_429": limited / len(records) if records else 0.0,
        "used": used,
        "minimum": minimum,
        "efficiency": minimum / result["wall"],
    }


def probe_charge(executable: str) -> tuple[int, int]:
    """What one judged row costs at llmock: its calls and their tokens (to size the quotas)."""
    with LLMock(executable, rpm=None, tpm=None) as server:
        options = {
            "base_url": server.base_url,
            "api_key": "sk-probe",
            "samples": 1,
            "configured": None,
            "switched_off": False,
        }
        run_case(options)
        records = server.journal()
        return len(records), sum(charge(record) for record in records)


def verdict(case: str, row: dict[str, Any]) -> str:
    ok = row["efficiency"] >= GOAL_EFFICIENCY
    if case.endswith("defaults"):
        ok = ok and row["share_429"] <= GOAL_429_SHARE and row["lost"] == 0
    else:
        ok = ok and row["rate_limited"] == 0
    return "PASS" if ok else "MISS"


def worktree(ref: str) -> Path:
    checkout = Path(tempfile.mkdtemp(prefix="bench-quota-")) / "ref"
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(checkout), ref],
        cwd=ROOT,
        check=True,
    )
    return checkout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small quota, no baseline")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--llmock", help="the llmock executable")
    parser.add_argument("--install", action="store_true", help=f"install {LLMOCK} in a venv")
    parser.add_argument("--no-baseline", action="store_true", help="skip today's behaviour")
    parser.add_argument("--baseline-ref", help="take the baseline from this git ref")
    parser.add_argument("--rpm", type=int, default=400, help="the request quota (default 400)")
    parser.add_argument("--cases", help="only these, e.g. 'rpm, defaults;tpm, configured'")
    parser.add_argument("--run-case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_case:
        print(json.dumps(run_case(json.loads(args.run_case))))
        return 0
    title = "aeval quota benchmark" + (" (quick mode)" if args.quick else "")
    print(title)
    executable, where = (install(), "") if args.install else find_llmock(args.llmock)
    if executable is None:
        print(
            f"llmock is not installed ({where}): run `python benchmarks/bench_quota.py "
            f"--install` (a venv in {CACHE_VENV}), or pip install {LLMOCK} and pass --llmock"
        )
        if args.json:
            args.json.write_text(json.dumps({"quick": args.quick, "skipped": where}))
        return 0 if args.quick else 2
    rpm = 120 if args.quick else args.rpm
    # the calls need 1.5 buckets: 30 s of refill (quick: 1.05 buckets, 3 s)
    need = 1.05 if args.quick else 1.5
    per_row, tokens_per_row = probe_charge(executable)
    samples = int(rpm * need) // per_row
    calls = samples * per_row
    per_call = tokens_per_row / per_row
    tpm = int(samples * tokens_per_row / need)
    baseline = not (args.quick or args.no_baseline)
    root = worktree(args.baseline_ref) if baseline and args.baseline_ref else None
    sides = [("aeval", False, None)]
    if baseline:
        label = f"today ({args.baseline_ref})" if root else "today (switched off)"
        sides.append((label, root is None, root))
    print(
        f"llmock 0.2.2 on 127.0.0.1, latency {LATENCY_MS} ms; {samples} samples judged at "
        f"Scorer(concurrency={CONCURRENCY}), {per_row} calls a row ({calls} calls, "
        f"{per_call:.1f} tokens each as llmock charges); --rpm {rpm} or --tpm {tpm}: the calls "
        f"need {need:g} buckets"
    )
    results: dict[str, Any] = {
        "quick": args.quick,
        "samples": samples,
        "rpm": rpm,
        "tpm": tpm,
        "per_call": per_call,
        "cases": {},
    }
    header = (
        f"{'case':<18} {'side':<22} {'wall s':>7} {'min s':>7} {'effic.':>6} "
        f"{'429s':>5} {'429 %':>6} {'lost':>5}  verdict"
    )
    print(header)
    try:
        for kind, quota in (("rpm", rpm), ("tpm", tpm)):
            limits = {"rpm": quota if kind == "rpm" else None}
            limits["tpm"] = quota if kind == "tpm" else None
            with LLMock(executable, **limits) as server:
                for configured in (False, True):
                    case = f"{kind}, {'configured' if configured else 'defaults'}"
                    if args.cases and case not in args.cases.split(";"):
                        continue
                    results["cases"][case] = {}
                    for side, switched_off, side_root in sides:
                        options = {
                            "samples": samples,
                            "quota": quota,
                            "configured": kind if configured else None,
                            "switched_off": switched_off,
                        }
                        row = measure(server, options, kind=kind, quota=quota, root=side_root)
                        row["verdict"] = verdict(case, row) if side == "aeval" else "-"
                        results["cases"][case][side] = row
                        print(
                            f"{case:<18} {side:<22} {row['wall']:>7.1f} {row['minimum']:>7.1f} "
                            f"{row['efficiency']:>6.2f} {row['rate_limited']:>5} "
                            f"{100 * row['share_429']:>5.1f}% {row['lost']:>5}  {row['verdict']}",
                            flush=True,
                        )
    finally:
        if root is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(root)], cwd=ROOT)
    print(
        f"goals: defaults efficiency >= {GOAL_EFFICIENCY}, 429s <= {GOAL_429_SHARE:.0%} of "
        f"requests, no row lost; configured efficiency >= {GOAL_EFFICIENCY} and no 429"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
