"""The Ray executor against a real local Ray instance, started once for the test session.

Skipped, with the command that installs Ray, where Ray is missing. All Ray tests run in one
xdist group, so one Ray instance serves them.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _ray_targets as targets
import anyio
import pytest
from _benchmarks import quick_figures
from _cli import EXAMPLE, Cli, cli, rows_of

from aeval import (
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    MissingExtraError,
    NotSerializableError,
    Samples,
    Scorer,
    read_run,
)
from aeval.strategies import AiJudgeStrategy, ExactMatchStrategy, NotBlankStrategy

__all__ = ["cli"]

pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("ray")]

TESTS = Path(__file__).resolve().parent
EXAMPLES = TESTS.parent / "examples"


@pytest.fixture(scope="session")
def ray_session() -> Iterator[Any]:
    """A local Ray instance for the whole session (4 logical CPUs), shut down at the end."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'aeval-engine[ray]'")
    path = os.pathsep.join(filter(None, [str(TESTS), str(EXAMPLES), os.environ.get("PYTHONPATH")]))
    with pytest.MonkeyPatch.context() as patch:
        # the local instance's processes inherit this environment, and its workers with them
        patch.setenv("PYTHONPATH", path)
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray
    finally:
        ray.shutdown()


def executor(workers: int = 2, **options: Any) -> Any:
    from aeval.ray import RayExecutor

    return RayExecutor(workers=workers, **options)


def essentials(rows: Any) -> list[tuple[object, ...]]:
    return [
        (
            r.index,
            r.repeat,
            r.position,
            r.name,
            r.strategy,
            r.outcome,
            r.score,
            r.output,
            r.explanation,
            None if r.error is None else (r.error.type, r.error.message),
        )
        for r in rows
    ]


async def test_rows_equal_an_in_process_run_on_the_seed_dataset(ray_session: Any) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        answer = importlib.import_module("support_bot").answer
    finally:
        sys.path.remove(str(EXAMPLES))
    samples = await Samples.load(EXAMPLES / "support.yaml")
    strategies = (ExactMatchStrategy(strip=True), NotBlankStrategy(min_length=10))
    local = await Scorer(3, repeats=2).evaluate(samples, answer, *strategies)
    remote = await Scorer(3, repeats=2, executor=executor()).evaluate(samples, answer, *strategies)
    assert essentials(remote.evaluations) == essentials(local.evaluations)
    assert remote.score == local.score and remote.call_count == local.call_count
    assert remote.flaky == local.flaky and remote.complete
    assert remote.run.executor == "ray, 2 workers"


async def test_rows_stream_to_sinks_and_the_live_report(ray_session: Any, tmp_path: Path) -> None:
    samples = Samples(EvaluationSample(f"s{i}", [f"a{i}"], f"a{i}") for i in range(60))
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(4, sinks=[sink], executor=executor(batch=5))
    seen: list[EvaluationRow] = []
    async with scorer.stream(samples, targets.echo, targets.equals) as rows:
        async for row in rows:
            seen.append(row)
            assert rows.report.evaluation_count >= len(seen)
        report = await rows.finish()
    assert sorted(r.index for r in seen) == list(range(60))
    written, header = await read_run(tmp_path / "rows.jsonl")
    assert sorted(r.index for r in written) == list(range(60))
    assert header is not None and header.complete and header.executor == "ray, 2 workers"
    assert report.passed_count == 60


async def test_traces_and_served_tools_travel_with_the_rows(ray_session: Any) -> None:
    fixtures = {"get_weather": [{"arguments": {"city": "Mysore"}, "result": "sunny"}]}
    samples = [
        EvaluationSample(f"s{i}", [city], "sunny", metadata={"tool_fixtures": fixtures})
        for i, city in enumerate(["Mysore", "Mysore", "Ooty"])
    ]
    scorer = Scorer(2, tools="fixtures", executor=executor())
    report = await scorer.evaluate(samples, targets.weather_agent, targets.equals)
    first, second, unmocked = report.evaluations
    assert first.passed and second.passed
    for row in (first, second):
        assert row.trace is not None
        assert [(c.name, c.arguments, c.result, c.mocked) for c in row.trace.tool_calls] == [
            ("get_weather", {"city": "Mysore"}, "sunny", True)
        ]
    assert unmocked.error is not None and unmocked.error.type == "UnmockedToolCall"
    assert unmocked.trace is not None and unmocked.trace.tool_names() == ("get_weather",)
    assert report.run.tools == "fixtures"


async def test_a_worker_that_dies_has_its_samples_run_elsewhere_once(
    ray_session: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    names = [f"s{i}" for i in range(30)]
    names[12] = "die"
    samples = Samples(EvaluationSample(name, [name, str(marker)], name) for name in names)
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(3, sinks=[sink], executor=executor(batch=3))
    report = await scorer.evaluate(samples, targets.die_once, targets.equals)
    assert marker.exists()
    assert [r.name for r in report.evaluations] == names
    assert report.passed_count == 30 and report.complete
    written, _ = await read_run(tmp_path / "rows.jsonl")
    assert sorted(r.index for r in written) == list(range(30))
    assert any("Ray worker" in w and "died" in w for w in report.warnings)


async def test_what_cannot_be_serialised_is_refused_before_any_work(
    ray_session: Any, tmp_path: Path
) -> None:
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(sinks=[sink], executor=executor())
    samples = Samples([EvaluationSample("a", ["a"], "a")])
    with pytest.raises(NotSerializableError, match=r"strategy 2 \('Locked'\) cannot be sent"):
        await scorer.evaluate(samples, targets.echo, targets.equals, targets.Locked())
    assert not (tmp_path / "rows.jsonl").exists()


async def test_model_limits_hold_across_every_worker(ray_session: Any) -> None:
    from aeval.models import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    samples = Samples(EvaluationSample(f"s{i}", [f"a{i}"], f"a{i}") for i in range(8))
    async with OpenAICompatibleServer(
        default=Reply.json({"score": 90, "explanation": "ok"})
    ) as server:
        model = OpenAIChatModel(
            "judge", base_url=server.base_url, max_concurrency=1, requests_per_minute=6000
        )
        ray_executor = executor()
        judge = AiJudgeStrategy(model, structured=True)
        report = await Scorer(4, executor=ray_executor).evaluate(samples, targets.echo, judge)
        requests = len(server.requests)
        most = server.max_concurrent
    assert report.passed_count == 8
    usage = list(ray_executor.limit_usage.values())
    assert len(usage) == 1 and usage[0].granted == requests == 8
    assert usage[0].most_in_use == 1 and most == 1


async def test_the_providers_quota_reaches_the_cluster_limiter(ray_session: Any) -> None:
    from aeval.models import OpenAIChatModel
    from aeval.testing import OpenAICompatibleServer, Reply

    quota = {"x-ratelimit-limit-requests": "6000", "x-ratelimit-remaining-requests": "5000"}
    samples = Samples(EvaluationSample(f"s{i}", [f"a{i}"], f"a{i}") for i in range(6))
    async with OpenAICompatibleServer(
        default=Reply(content='{"score": 90, "explanation": "ok"}', headers=quota)
    ) as server:
        model = OpenAIChatModel("judge", base_url=server.base_url, max_concurrency=2)
        ray_executor = executor()
        judge = AiJudgeStrategy(model, structured=True)
        report = await Scorer(4, executor=ray_executor).evaluate(samples, targets.echo, judge)
    assert report.passed_count == 6
    [usage] = ray_executor.limit_usage.values()
    assert usage.granted == usage.quota_replies == 6


async def test_stopping_the_run_stops_the_workers_and_keeps_the_partial_report(
    ray_session: Any, tmp_path: Path
) -> None:
    names = [f"fast {i}" for i in range(6)] + ["slow a", "slow b"]
    samples = Samples(EvaluationSample(n, [n], n) for n in names)
    sink = JsonlSink(tmp_path / "rows.jsonl")
    scorer = Scorer(8, sinks=[sink], executor=executor(workers=1, batch=8))
    with anyio.CancelScope() as scope:
        async with scorer.stream(samples, targets.wait_for_file, targets.equals) as rows:
            done = 0
            async for _ in rows:
                done += 1
                if done == 6:
                    report = rows.report
                    scope.cancel()
    assert report.evaluation_count == 6
    written, header = await read_run(tmp_path / "rows.jsonl")
    assert len(written) == 6 and header is not None and not header.complete
    assert await anyio.to_thread.run_sync(workers_released, ray_session)


def workers_released(ray: Any) -> bool:
    """Poll until the killed workers have given their CPUs back to the cluster (30 s)."""
    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) >= total:
            return True
        time.sleep(0.05)
    return False


def test_the_cli_runs_the_example_on_ray_with_the_rows_of_one_process(
    ray_session: Any, tmp_path: Path, cli: Cli
) -> None:
    local = cli("run", EXAMPLE, "--output", tmp_path / "local", "--quiet")
    remote = cli(
        "run", EXAMPLE, "--executor", "ray", "--workers", "2", "--output", tmp_path / "ray"
    )
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert "concurrency 4 on ray, 2 workers" in remote.stdout

    def rows(path: Path) -> list[dict[str, Any]]:
        found = rows_of(path / "rows.jsonl")
        for row in found:
            del row["duration"], row["strategy_duration"]
        return sorted(found, key=lambda r: (r["index"], r["repeat"], r["position"]))

    assert rows(tmp_path / "ray") == rows(tmp_path / "local")


async def test_without_ray_the_executor_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    from aeval.ray import RayExecutor

    with pytest.raises(MissingExtraError, match=r"pip install 'aeval-engine\[ray\]'"):
        await Scorer(executor=RayExecutor()).evaluate(Samples([]), targets.echo)


def test_the_scale_benchmark_runs_in_quick_mode(ray_session: Any, tmp_path: Path) -> None:
    address = ray_session.get_runtime_context().gcs_address
    done, figures = quick_figures("bench_scale.py", tmp_path / "figures.json", "--address", address)
    stdout = done.stdout
    assert "aeval scale benchmarks (quick mode)" in stdout
    assert "(a) CPU-bound: 60 samples" in stdout
    assert "(b) I/O-bound: 100 samples of 10 ms, concurrency 20" in stdout
    assert "(c) the driver's ceiling: 5000 rows delivered in batches of 100" in stdout
    labels = [p["label"] for p in figures["cpu"]["points"]]
    assert labels == ["one process", "ray, 1 worker", "ray, 2 workers"]
    assert all(p["rows"] == 60 for p in figures["cpu"]["points"])
    assert all(p["rows"] == 100 for p in figures["io"]["points"])
    assert figures["cpu"]["verdict"] in ("PASS", "MISS")
    assert figures["ceiling"]["points"][1]["rows_per_s"] > 0


async def test_conversations_run_on_ray_as_in_process(ray_session: Any) -> None:
    samples = Samples(
        [
            EvaluationSample("chat", turns=["hi", "again", "bye"]),
            EvaluationSample("crash", turns=["hi", "boom", "never"]),
        ]
    )
    local = await Scorer(2, repeats=2, tracebacks=False).evaluate(
        samples, targets.chat, targets.equals
    )
    remote = await Scorer(2, repeats=2, tracebacks=False, executor=executor()).evaluate(
        samples, targets.chat, targets.equals
    )
    strip = [
        (r.index, r.repeat, r.outcome, [(t.user, t.assistant) for t in r.output.turns])
        for r in remote.evaluations
    ]
    assert strip == [
        (r.index, r.repeat, r.outcome, [(t.user, t.assistant) for t in r.output.turns])
        for r in local.evaluations
    ]
    assert remote.conversations == local.conversations == {"script": 2, "error": 2}
    assert remote.evaluations[2].output.ended == "error"
