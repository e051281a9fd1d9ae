"""``aeval run`` collects garbage less often while it evaluates, and still collects it."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from _cli import Cli, cli, rows_of, write_config

__all__ = ["cli"]

GC_THRESHOLD = 10_000
"""The youngest generation's threshold while ``aeval run`` evaluates (Python's is 700)."""

TARGETS = """
import gc
import weakref

seen = []
collected = []
collected_by_then = []


class Node:
    def __init__(self):
        self.peer = self


async def observe(text: str) -> str:
    seen.append(gc.get_threshold())
    return text


async def cyclic(text: str) -> str:
    for _ in range(10):
        weakref.finalize(Node(), collected.append, text)
    collected_by_then.append(len(collected))
    return text
"""


@pytest.fixture
def restored_threshold() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def _project(folder: Path, target: str, count: int) -> None:
    (folder / "gc_targets.py").write_text(TARGETS, encoding="utf-8")
    lines = (orjson.dumps({"name": f"s{i}", "parameters": [f"t{i}"]}) for i in range(count))
    (folder / "samples.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    write_config(
        folder,
        f"samples: samples.jsonl\ntarget: gc_targets:{target}\n"
        "strategies: [{name: not_blank}]\noutput: {dir: out, formats: [json]}\n",
    )


def test_the_run_collects_less_often_and_restores_the_threshold(
    tmp_path: Path, cli: Cli, restored_threshold: tuple[int, int, int]
) -> None:
    _project(tmp_path, "observe", 5)
    result = cli("run", "aeval.yaml", "--quiet", "--no-store", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    seen = sys.modules["gc_targets"].seen
    assert seen == [(GC_THRESHOLD, *restored_threshold[1:])] * 5
    assert gc.get_threshold() == restored_threshold
    assert len(rows_of(tmp_path / "out" / "rows.jsonl")) == 5


def test_garbage_in_cycles_is_still_collected_during_the_run(
    tmp_path: Path, cli: Cli, restored_threshold: tuple[int, int, int]
) -> None:
    count = 3_000  # ten cycles each: three times the threshold's worth of garbage
    _project(tmp_path, "cyclic", count)
    gc.collect()
    result = cli("run", "aeval.yaml", "--quiet", "--no-store", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # collected while the samples were being evaluated, not only after the run
    assert max(sys.modules["gc_targets"].collected_by_then) > 0
    assert len(rows_of(tmp_path / "out" / "rows.jsonl")) == count


@pytest.mark.parametrize("given", [0, GC_THRESHOLD, GC_THRESHOLD * 2])
def test_a_threshold_off_or_already_as_high_is_left_alone(
    given: int, tmp_path: Path, cli: Cli, restored_threshold: tuple[int, int, int]
) -> None:
    _project(tmp_path, "observe", 2)
    gc.set_threshold(given, 10, 10)
    result = cli("run", "aeval.yaml", "--quiet", "--no-store", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sys.modules["gc_targets"].seen == [(given, 10, 10)] * 2
    assert gc.get_threshold() == (given, 10, 10)


def test_the_threshold_returns_when_the_run_fails(
    tmp_path: Path, cli: Cli, restored_threshold: tuple[int, int, int]
) -> None:
    write_config(tmp_path, "samples: samples.jsonl\ntarget: gc_targets:observe\nstrategies: 3\n")
    gc.set_threshold(700, 10, 10)
    assert cli("run", "aeval.yaml", "--quiet", "--no-store", cwd=tmp_path).returncode == 2
    assert gc.get_threshold() == (700, 10, 10)
