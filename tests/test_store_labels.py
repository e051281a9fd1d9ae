"""Reviewers' labels in the run store: kept per output, replaced, current or stale."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunNotFoundError,
    RunStore,
    StoreError,
    output_digest,
)

pytestmark = pytest.mark.anyio


def row(name: str, output: Any, passed: bool, *, repeat: int = 0, index: int = 0) -> EvaluationRow:
    return EvaluationRow.from_result(
        EvaluationSample(name, [name]),
        "judge",
        output,
        EvaluationResult.from_boolean(passed),
        index=index,
        repeat=repeat,
    )


def report(outputs: dict[str, Any], *, repeats: int = 1) -> EvaluationReport:
    rows = [
        row(name, output, index % 2 == 0, repeat=r, index=index)
        for index, (name, output) in enumerate(outputs.items())
        for r in range(repeats)
    ]
    return EvaluationReport(rows, run=RunInfo(started_at=1.0e9, finished_at=1.0e9 + 5))


def test_the_output_digest_is_sha256_of_sorted_json() -> None:
    value = {"b": [1, 2.5, None], "a": "é\n\"'"}
    expected = hashlib.sha256(
        b'{"a":"\xc3\xa9\\n\\"\'","b":[1,2.5,null]}',
    ).hexdigest()
    assert output_digest(value) == expected
    assert output_digest({"a": "é\n\"'", "b": [1, 2.5, None]}) == expected
    assert output_digest("text") == hashlib.sha256(b'"text"').hexdigest()
    assert output_digest("text") != output_digest("text ")


async def test_a_row_digest_is_that_of_its_stored_output(tmp_path: Path) -> None:
    stored = orjson.loads(orjson.dumps({"output": {"sources": [1, 2], "answer": "x"}}))
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"s": {"answer": "x", "sources": [1, 2]}}), "bot")
        label = await store.add_label(
            run_id, sample="s", strategy="judge", reviewer="ann", verdict="pass"
        )
    assert label.output_sha256 == output_digest(stored["output"])


async def test_a_label_is_kept_with_the_hash_of_the_stored_output(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"a": "one", "b": "two"}), "bot")
        label = await store.add_label(
            run_id, sample="a", strategy="judge", reviewer=" ann ", verdict="FAIL", note=" wrong "
        )
        assert (label.name, label.sample, label.strategy, label.reviewer) == (
            "bot",
            "a",
            "judge",
            "ann",
        )
        assert (label.verdict, label.note, label.run_id, label.passed) == (
            "fail",
            "wrong",
            run_id,
            False,
        )
        assert label.output_sha256 == output_digest("one")
        assert label.time.tzinfo is not None
        found = await store.labels(run_id)
    [only] = found
    assert (only.label, only.sample, only.repeat, only.strategy, only.index, only.stale) == (
        label,
        "a",
        0,
        "judge",
        0,
        False,
    )
    assert (found[0].reviewer, found[0].verdict, found[0].note) == ("ann", "fail", "wrong")
    assert found[0].key == ("a", 0, "judge")


async def test_labelling_the_same_output_again_replaces_the_label(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"a": "one"}), "bot")
        await store.add_label(run_id, sample="a", strategy="judge", reviewer="ann", verdict="fail")
        await store.add_label(run_id, sample="a", strategy="judge", reviewer="bob", verdict="fail")
        again = await store.add_label(
            run_id, sample="a", strategy="judge", reviewer="ann", verdict="pass", note="ok"
        )
        found = await store.labels(run_id)
        mine = await store.labels(run_id, reviewer="ann")
    assert sorted((f.reviewer, f.verdict) for f in found) == [("ann", "pass"), ("bob", "fail")]
    assert [f.label for f in mine] == [again]


async def test_a_label_is_stale_in_a_run_whose_output_changed(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        first = await store.save(report({"a": "one", "b": "two"}), "bot")
        await store.add_label(first, sample="a", strategy="judge", reviewer="ann", verdict="fail")
        await store.add_label(first, sample="b", strategy="judge", reviewer="ann", verdict="pass")
        second = await store.save(report({"a": "one, fixed", "b": "two"}), "bot")
        other = await store.save(report({"a": "one"}), "other-bot")
        now = await store.labels(second)
        before = await store.labels(first)
        elsewhere = await store.labels(other)
        relabel = await store.add_label(
            second, sample="a", strategy="judge", reviewer="ann", verdict="pass"
        )
        after = await store.labels(second)
        still = await store.labels(first)
    assert [(f.sample, f.verdict, f.stale) for f in now] == [
        ("a", "fail", True),
        ("b", "pass", False),
    ]
    assert [(f.sample, f.stale) for f in before] == [("a", False), ("b", False)]
    assert elsewhere == ()
    assert [(f.sample, f.verdict, f.stale) for f in after] == [
        ("a", "pass", False),
        ("b", "pass", False),
    ]
    assert after[0].label == relabel
    assert [(f.sample, f.verdict, f.stale) for f in still] == [
        ("a", "fail", False),
        ("b", "pass", False),
    ]


async def test_repeats_with_the_same_output_share_a_label(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"a": "one"}, repeats=2), "bot")
        await store.add_label(
            run_id, sample="a", strategy="judge", repeat=1, reviewer="ann", verdict="pass"
        )
        found = await store.labels(run_id)
    assert [(f.repeat, f.stale) for f in found] == [(0, False), (1, False)]
    assert found[0].label.repeat == 1


async def test_a_transcript_like_output_is_labelled(tmp_path: Path) -> None:
    output = {"turns": [{"user": "hi", "assistant": 'hello\n"x" ✓'}], "ended": "script"}
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"a": output}), "bot")
        label = await store.add_label(
            run_id, sample="a", strategy="judge", reviewer="ann", verdict="pass"
        )
    assert label.output_sha256 == output_digest(output)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample": "zz"}, "has no sample 'zz' (samples: 'a', 'b')"),
        ({"strategy": "exact"}, "no row of the strategy 'exact' (its strategies: 'judge')"),
        ({"repeat": 3}, "sample 'a' has no repeat 3 (its repeats: 0)"),
        ({"verdict": "maybe"}, "a label's verdict is 'pass' or 'fail', got 'maybe'"),
        ({"reviewer": "  "}, "a label needs a reviewer (a non-empty name), got '  '"),
        ({"repeat": -1}, "a label's repeat is an integer >= 0, got -1"),
    ],
)
async def test_a_bad_label_is_a_clear_error(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {
        "sample": "a",
        "strategy": "judge",
        "reviewer": "ann",
        "verdict": "pass",
        **options,
    }
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report({"a": "one", "b": "two"}), "bot")
        with pytest.raises(ValueError) as caught:
            await store.add_label(run_id, **given)
        assert await store.labels(run_id) == ()
    assert message in str(caught.value)


async def test_an_unknown_run_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    async with RunStore(path) as store:
        with pytest.raises(RunNotFoundError, match="does not exist yet"):
            await store.add_label(
                "latest", sample="a", strategy="judge", reviewer="ann", verdict="pass"
            )
        assert not path.exists()
        with pytest.raises(RunNotFoundError, match="does not exist yet"):
            await store.labels("latest")
        await store.save(report({"a": "one"}), "bot")
        with pytest.raises(RunNotFoundError, match="'nope'"):
            await store.labels("nope")


async def test_a_version_2_store_is_upgraded_and_a_read_only_one_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    async with RunStore(path) as store:
        run_id = await store.save(report({"a": "one"}), "bot")
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("DROP TABLE labels")
    connection.execute("UPDATE aeval_schema SET version = 2")
    connection.close()
    with monkeypatch.context() as patched:
        access = os.access
        patched.setattr(  # a store the user cannot write (root ignores chmod)
            os, "access", lambda where, mode: access(where, mode) and Path(where) != path
        )
        async with RunStore(path) as store:
            assert await store.labels(run_id) == ()
            with pytest.raises(StoreError, match="read-only"):
                await store.add_label(
                    run_id, sample="a", strategy="judge", reviewer="ann", verdict="pass"
                )
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT version FROM aeval_schema").fetchone() == (2,)
    connection.close()
    async with RunStore(path) as store:
        await store.add_label(run_id, sample="a", strategy="judge", reviewer="ann", verdict="pass")
        assert [f.verdict for f in await store.labels(run_id)] == ["pass"]
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT version FROM aeval_schema").fetchone() == (3,)
    connection.close()


async def test_a_damaged_row_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    async with RunStore(path) as store:
        run_id = await store.save(report({"a": "one"}), "bot")
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("UPDATE rows SET data = 'not json'")
    connection.close()
    async with RunStore(path) as store:
        with pytest.raises(StoreError, match=f"damaged or was edited by hand .*run {run_id}"):
            await store.add_label(
                run_id, sample="a", strategy="judge", reviewer="ann", verdict="pass"
            )
