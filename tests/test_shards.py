"""Shards: the split, samples that keep their dataset index, and merging the shards' reports."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from _cli import Cli, cli, records_of

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationSample,
    MergeError,
    Parameters,
    RunInfo,
    Samples,
    Scorer,
    Shard,
    merge_reports,
)
from aeval.formatters.json import report_from_json

__all__ = ["cli"]

pytestmark = pytest.mark.anyio

NAMES = [f"sample-{i}" for i in range(40)]


def samples() -> Samples:
    return Samples(
        EvaluationSample(name, [name], name if i % 3 else "other", tags=[f"t{i % 2}"])
        for i, name in enumerate(NAMES)
    )


async def echo(params: Parameters) -> str:
    return str(params[0])


def equals(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output)


def not_empty(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(bool(output))


def strip(report: EvaluationReport) -> list[tuple[object, ...]]:
    return [
        (r.index, r.repeat, r.position, r.name, r.strategy, r.outcome, r.score, r.output)
        for r in report.evaluations
    ]


def shard_run(shard: Shard, *, config: str = "c", dataset: str = "d") -> RunInfo:
    return RunInfo(
        shard=str(shard),
        config_digest=config,
        dataset_digest=dataset,
        dataset_samples=len(NAMES),
        samples_expected=len(shard.select(samples())),
    )


async def run_shard(shard: Shard, **facts: str) -> EvaluationReport:
    report = await Scorer(4).evaluate(shard.select(samples()), echo, equals, not_empty)
    return report.with_run(report.run.replace(**shard_run(shard, **facts).to_dict()))


def test_parse_and_render() -> None:
    assert Shard.parse(" 2/4 ") == Shard(2, 4)
    assert str(Shard(2, 4)) == "2/4"
    for bad in ("0/4", "5/4", "2", "a/b", "1/0", "-1/3"):
        with pytest.raises(ValueError, match="I/N"):
            Shard.parse(bad)


def shard_of(name: str, count: int) -> int:
    """The shard of ``count`` that holds the sample called ``name``."""
    (index,) = (i for i in range(1, count + 1) if Shard(i, count).holds(name))
    return index


def test_the_split_is_stable_and_puts_every_sample_in_exactly_one_shard() -> None:
    # pinned: a change of hash would split datasets differently from older aeval versions
    assert [shard_of(name, 4) for name in ("hello", "world", "Refund policy")] == [2, 4, 4]
    names = [f"n{i}" for i in range(1000)]
    held = [[name for name in names if Shard(i, 4).holds(name)] for i in range(1, 5)]
    assert sorted(name for part in held for name in part) == sorted(names)
    assert all(part for part in held)
    every = Shard(1, 1).select(samples())
    assert [(item.index, item.sample) for item in every] == list(enumerate(samples()))


def dataset_facts(
    directory: Path, names: list[str], cli: Cli, *, streamed: bool
) -> dict[str, object]:
    """The run header of ``aeval run --shard 1/2`` over samples called ``names``, in a JSONL
    file (streamed) or a YAML one (read whole)."""
    directory.mkdir()
    entries = [{"name": n, "parameters": [n]} for n in names]
    if streamed:
        source = "samples.jsonl"
        (directory / source).write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    else:
        source = "samples.yaml"
        (directory / source).write_bytes(orjson.dumps(entries))  # JSON is YAML
    (directory / "targets.py").write_text("def echo(text):\n    return text\n")
    (directory / "aeval.yaml").write_text(
        f"samples: {source}\ntarget: targets:echo\nstrategies: [{{name: not_blank}}]\n"
        "output: {dir: out, formats: [json]}\n"
    )
    result = cli("run", "aeval.yaml", "--shard", "1/2", "--quiet", "--no-store", cwd=directory)
    assert result.returncode in (0, 1), result.stderr
    header: dict[str, object] = records_of(directory / "out" / "rows.jsonl")[0]
    return header


def test_the_dataset_digest_depends_on_names_and_order(tmp_path: Path, cli: Cli) -> None:
    def digest(where: str, names: list[str]) -> object:
        header = dataset_facts(tmp_path / where, names, cli, streamed=False)
        assert header["dataset_samples"] == len(names)
        return header["dataset_digest"]

    ab = digest("ab", ["a", "b"])
    assert ab == digest("ab-again", ["a", "b"])
    assert ab != digest("ba", ["b", "a"])
    assert ab != digest("joined", ["ab"])


async def test_indexed_samples_keep_their_index_in_every_row() -> None:
    items = [s for s in reversed(Shard(1, 1).select(samples())) if s.index in (3, 7)]
    report = await Scorer(2, repeats=2).evaluate(items, echo, equals)
    assert [(r.index, r.repeat, r.name) for r in report.evaluations] == [
        (3, 0, "sample-3"),
        (3, 1, "sample-3"),
        (7, 0, "sample-7"),
        (7, 1, "sample-7"),
    ]


def test_a_streamed_shard_keeps_the_dataset_index_of_its_samples(tmp_path: Path, cli: Cli) -> None:
    dataset_facts(tmp_path / "streamed", NAMES, cli, streamed=True)
    rows = records_of(tmp_path / "streamed" / "out" / "rows.jsonl")[1:-1]
    assert {row["index"] for row in rows} == {
        i for i, name in enumerate(NAMES) if shard_of(name, 2) == 1
    }
    assert all(NAMES[row["index"]] == row["name"] for row in rows)


async def test_merged_shards_equal_one_run_over_every_sample() -> None:
    whole = await Scorer(4).evaluate(samples(), echo, equals, not_empty)
    parts = [await run_shard(Shard(i, 3)) for i in (3, 1, 2)]
    merged = merge_reports(*parts)
    assert strip(merged) == strip(whole)
    assert merged.complete and merged.warnings == ()
    assert merged.score == whole.score
    assert merged.tag_scores == whole.tag_scores
    assert merged.confidence_interval() == pytest.approx(whole.confidence_interval())
    assert merged.sample_count == merged.samples_expected == len(NAMES)
    assert merged.run.shard is None and merged.run.dataset_digest == "d"


async def test_a_missing_shard_makes_a_partial_report_that_names_it() -> None:
    merged = merge_reports(await run_shard(Shard(1, 3)), await run_shard(Shard(3, 3)))
    assert not merged.complete
    assert merged.samples_expected == len(NAMES)
    assert merged.sample_count < len(NAMES)
    assert any("shard 2/3 missing" in warning for warning in merged.warnings)


async def test_a_stopped_shard_makes_a_partial_report() -> None:
    one = await run_shard(Shard(1, 2))
    two = await run_shard(Shard(2, 2))
    two = two.with_run(two.run.replace(complete=False))
    merged = merge_reports(one, two, sources=["a/rows.jsonl", "b/rows.jsonl"])
    assert not merged.complete
    assert any("shard 2/2 (b/rows.jsonl) is partial" in w for w in merged.warnings)


@pytest.mark.parametrize(
    ("second", "message"),
    [
        ({"config": "other"}, "different configurations"),
        ({"dataset": "other"}, "different datasets"),
    ],
)
async def test_shards_of_other_configs_or_datasets_are_refused(
    second: dict[str, str], message: str
) -> None:
    one = await run_shard(Shard(1, 2))
    two = await run_shard(Shard(2, 2), **second)
    with pytest.raises(MergeError, match=message) as caught:
        merge_reports(one, two, sources=["one.jsonl", "two.jsonl"])
    assert "two.jsonl and one.jsonl" in str(caught.value)


async def test_duplicates_and_strangers_are_refused() -> None:
    one = await run_shard(Shard(1, 2))
    with pytest.raises(MergeError, match="shard 1/2 appears twice, in a and b"):
        merge_reports(one, one, sources=["a", "b"])
    other_split = await run_shard(Shard(2, 3))
    with pytest.raises(MergeError, match="different splits"):
        merge_reports(one, other_split)
    plain = await Scorer().evaluate(samples()[:2], echo, equals)
    with pytest.raises(MergeError, match="not the output of a shard"):
        merge_reports(one, plain)
    with pytest.raises(MergeError, match="is also in report 1: each row may be merged once"):
        merge_reports(plain, plain)
    stranger = await Scorer().evaluate(Shard(1, 2).select(samples())[:1], echo, equals)
    mislabelled = stranger.with_run(
        stranger.run.replace(
            shard="2/2", config_digest="c", dataset_digest="d", dataset_samples=len(NAMES)
        )
    )
    with pytest.raises(MergeError, match="belongs to shard 1/2, not 2/2"):
        merge_reports(one, mislabelled)
    failures = await Scorer(keep="failures").evaluate(samples()[:2], echo, equals)
    with pytest.raises(MergeError, match="only some of its rows"):
        merge_reports(failures)
    with pytest.raises(MergeError, match="nothing to merge"):
        merge_reports()


async def test_reports_without_shards_merge_when_their_rows_differ() -> None:
    first = await Scorer().evaluate(samples()[:2], echo, equals)
    later = [item for item in Shard(1, 1).select(samples()) if item.index in (2, 3)]
    second = await Scorer().evaluate(later, echo, equals)
    merged = merge_reports(second, first)
    assert [r.index for r in merged.evaluations] == [0, 1, 2, 3]
    assert merged.samples_expected == 4 and merged.complete


async def test_the_json_report_keeps_the_shard_and_the_digests() -> None:
    report = await run_shard(Shard(2, 3))
    report = report.with_run(report.run.replace(executor="ray, 2 workers"))
    back = report_from_json(report.format("json"))
    for field in ("shard", "config_digest", "dataset_digest", "dataset_samples", "executor"):
        assert getattr(back.run, field) == getattr(report.run, field)
    assert "**Shard**: 2/3 of a dataset of 40" in report.format("markdown")
    assert "**Executor**: ray, 2 workers" in report.format("markdown")


async def test_shards_whose_rows_were_removed_are_not_complete() -> None:
    one = await run_shard(Shard(1, 2))
    two = await run_shard(Shard(2, 2))
    dropped = two.evaluations[0].index
    cut = EvaluationReport([row for row in two.evaluations if row.index != dropped], run=two.run)
    merged = merge_reports(one, cut, sources=["a/rows.jsonl", "b/rows.jsonl"])
    assert not merged.complete
    assert merged.sample_count == len(NAMES) - 1
    assert any(
        f"hold {len(NAMES) - 1} of the dataset's {len(NAMES)} samples" in w for w in merged.warnings
    )


@pytest.mark.parametrize("field", ["config_digest", "dataset_digest", "dataset_samples"])
async def test_a_shard_without_its_digests_is_refused(field: str) -> None:
    one = await run_shard(Shard(1, 2))
    two = await run_shard(Shard(2, 2), config="other")
    two = two.with_run(two.run.replace(**{field: None}))
    with pytest.raises(
        MergeError, match=f"b/rows.jsonl: its run header names shard 2/2 but has no {field}"
    ):
        merge_reports(one, two, sources=["a/rows.jsonl", "b/rows.jsonl"])
