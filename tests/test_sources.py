"""Which sample sources stream: decided in one place, _samples/_sources.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval import EvaluationSample
from aeval._samples._sources import CountedStream, count_lines, is_url, streams

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        (["a.jsonl"], True),
        (["a.JSONL", "b.ndjson"], True),
        (["a.jsonl", "b.yaml"], False),
        (["a.json"], False),
        (["https://example.org/a.jsonl"], False),
        (["HTTP://example.org/a.jsonl"], False),
        ("a.jsonl", True),
    ],
)
def test_only_local_jsonl_files_stream(sources: list[str] | str, expected: bool) -> None:
    assert streams(sources) is expected


def test_a_url_is_recognised_in_any_case() -> None:
    assert is_url("https://x") and is_url("HTTPS://x") and is_url("Http://x")
    assert not is_url("file:///x.jsonl") and not is_url("data.jsonl")


async def test_a_counted_stream_counts_and_checks_each_sample(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"name": "a", "parameters": [1], "expected-output": 1}\n\n'
        '{"name": "b", "parameters": [2], "expected-output": 2}\n'
    )
    seen: list[str] = []

    def check(sample: EvaluationSample) -> None:
        seen.append(sample.name)

    stream = CountedStream([str(path)], count_lines([str(path)]), check)
    assert len(stream) == 2
    assert [sample.name async for sample in stream] == ["a", "b"] == seen
