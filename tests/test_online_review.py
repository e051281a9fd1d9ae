"""``OnlineEvaluator(review_rate=...)``: a reproducible share of live responses queued for
review in the run store, found by ``pick_rows(pick="queued")`` until someone labels them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _cli import main

from aeval import EvaluationReport, RunStore, pick_rows
from aeval.online import OnlineEvaluator
from aeval.strategies import NotBlankStrategy

pytestmark = pytest.mark.anyio

RESPONSES = 200


async def serve(path: Path, name: str = "support", **options: Any) -> EvaluationReport:
    store = RunStore(path)
    async with OnlineEvaluator(NotBlankStrategy(), store=store, name=name, **options) as online:
        for i in range(RESPONSES):
            online.submit({"question": f"q{i}"}, "" if i % 10 == 0 else f"answer {i}")
        await online.join()
    report = await store.load(f"{name}@latest")
    await store.aclose()
    return report


def queued(report: EvaluationReport) -> list[str]:
    return [row.name for row in report.evaluations if row.sample.metadata.get("review_queued")]


async def test_a_share_of_live_rows_is_queued_reproducibly(tmp_path: Path) -> None:
    first = await serve(tmp_path / "runs.sqlite", review_rate=0.25, seed=7)
    again = await serve(tmp_path / "runs.sqlite", name="again", review_rate=0.25, seed=7)
    other = await serve(tmp_path / "runs.sqlite", name="other", review_rate=0.25, seed=8)
    names = queued(first)
    assert 25 <= len(names) <= 75  # 50 expected; the seed fixes the draw
    assert [name.removeprefix("again") for name in queued(again)] == [
        name.removeprefix("support") for name in names
    ]
    assert [name.removeprefix("other") for name in queued(other)] != [
        name.removeprefix("support") for name in names
    ]
    assert len(first.evaluations) == RESPONSES


async def test_no_rate_queues_nothing_and_a_rate_of_1_everything(tmp_path: Path) -> None:
    assert queued(await serve(tmp_path / "a.sqlite")) == []
    assert len(queued(await serve(tmp_path / "b.sqlite", review_rate=1.0))) == RESPONSES


async def test_the_review_draw_leaves_the_strategy_sampling_alone(tmp_path: Path) -> None:
    plain = await serve(tmp_path / "a.sqlite", sample_rates=0.5, seed=3)
    reviewed = await serve(tmp_path / "b.sqlite", sample_rates=0.5, seed=3, review_rate=0.5)
    assert [row.name for row in plain.evaluations] == [row.name for row in reviewed.evaluations]
    assert 0 < len(queued(reviewed)) < len(reviewed.evaluations)


async def test_queued_rows_leave_the_queue_once_labelled(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    report = await serve(path, review_rate=0.1, seed=1)
    async with RunStore(path) as store:
        labels = await store.labels("support@latest")
        picked = pick_rows(report, pick="queued", labels=labels)
        assert [row.name for row in picked] == queued(report)
        await store.add_label(
            "support@latest",
            sample=picked[0].name,
            strategy=picked[0].strategy,
            reviewer="ann",
            verdict="pass",
        )
        labels = await store.labels("support@latest")
    left = pick_rows(report, pick="queued", labels=labels)
    assert [row.name for row in left] == [row.name for row in picked[1:]]


async def test_a_failed_live_sample_drops_the_queue_mark(tmp_path: Path) -> None:
    await serve(tmp_path / "runs.sqlite", review_rate=1.0)
    output = tmp_path / "failed.yaml"
    argv = ["dataset", "from", "support@latest", "--failures", "--output", str(output)]
    assert (
        await anyio.to_thread.run_sync(main, [*argv, "--store", str(tmp_path / "runs.sqlite")]) == 0
    )
    samples = yaml.safe_load(output.read_text(encoding="utf-8"))
    assert len(samples) == RESPONSES // 10
    assert all("review_queued" not in sample.get("metadata", {}) for sample in samples)


@pytest.mark.parametrize(
    ("rate", "error", "message"),
    [
        (1.5, ValueError, "review_rate must be between 0 and 1, got 1.5"),
        ("high", TypeError, "review_rate must be a number between 0 and 1, got 'high'"),
    ],
)
def test_a_bad_review_rate_is_refused(rate: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        OnlineEvaluator(NotBlankStrategy(), review_rate=rate)
