"""The run store: saving, loading, listing, references, sinks and partial runs."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from aeval import (
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    Parameters,
    RunInfo,
    RunNotFoundError,
    RunStore,
    Samples,
    Scorer,
)
from aeval.strategies import ExactMatchStrategy

pytestmark = pytest.mark.anyio


def samples(count: int = 12) -> Samples:
    return Samples(
        EvaluationSample(
            f"s{i}",
            [f"q{i}"],
            f"q{i}" if i % 3 else "other",
            tags=["odd"] if i % 2 else ["even", "smoke"],
        )
        for i in range(count)
    )


def echo(params: Parameters) -> Any:
    return params[0]


def judged(sample: EvaluationSample, output: Any) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output).with_metadata(
        {"judge_model": "judge-7b", "prompt_tokens": 3}
    )


async def evaluate(count: int = 12, **options: Any) -> EvaluationReport:
    scorer = Scorer(3, **options)
    return await scorer.evaluate(samples(count), echo, ExactMatchStrategy(), judged)


def same_report(loaded: EvaluationReport, saved: EvaluationReport) -> None:
    assert loaded.counts == saved.counts
    assert loaded.score == saved.score
    assert loaded.confidence_interval() == saved.confidence_interval()
    assert loaded.sample_count == saved.sample_count
    assert loaded.tag_scores == saved.tag_scores
    assert {t: s.confidence_interval() for t, s in loaded.tag_statistics.items()} == {
        t: s.confidence_interval() for t, s in saved.tag_statistics.items()
    }
    assert loaded.strategy_scores == saved.strategy_scores
    assert {n: s.confidence_interval() for n, s in loaded.strategy_statistics.items()} == {
        n: s.confidence_interval() for n, s in saved.strategy_statistics.items()
    }
    assert loaded.usage == saved.usage
    assert loaded.run == saved.run
    assert [r.to_dict() for r in loaded.evaluations] == [r.to_dict() for r in saved.evaluations]


async def test_a_saved_report_loads_back_the_same(tmp_path: Path) -> None:
    report = await evaluate(repeats=2)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report, "bot", labels=["prompt-v2"], config={"a": 1})
        loaded = await store.load(run_id)
    same_report(loaded, report)
    assert loaded.flaky == report.flaky


async def test_runs_lists_what_the_report_says(tmp_path: Path) -> None:
    report = await evaluate()
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report, "bot", labels=["v2", "v2", "nightly"], config="x: 1")
        (run,) = await store.runs()
    assert run.id == run_id
    assert (run.name, run.complete, run.partial) == ("bot", True, False)
    assert (run.rows, run.passed, run.failed) == (24, report.passed_count, report.failed_count)
    assert (run.unscored, run.errors, run.skipped) == (0, 0, 0)
    assert (run.samples, run.samples_expected) == (12, 12)
    assert run.score == report.score
    assert run.interval == report.confidence_interval()
    assert run.labels == ("v2", "nightly")
    assert run.models == ("judge-7b",)
    assert run.config_hash == hashlib.sha256(b"x: 1").hexdigest()[:16]
    assert run.header == report.run
    assert run.git_commit == report.run.git_commit
    assert (run.started_at, run.finished_at) == (report.started_at, report.finished_at)
    assert run.aeval_version == report.run.aeval_version


async def test_ids_are_short_and_sort_by_time(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    ids = []
    for when in (1_800_000_000.0, 1_800_000_100.0, 1_700_000_000.0):
        report = EvaluationReport(
            (await evaluate(3)).evaluations, run=RunInfo(started_at=when, finished_at=when)
        )
        ids.append(await store.save(report, "bot"))
    assert all(len(run_id) == 20 for run_id in ids)
    assert ids[0].startswith("20270115-080000-")
    listed = [run.id for run in await store.runs()]
    assert listed == sorted(ids) == [ids[2], ids[0], ids[1]]
    assert await store.resolve("latest") == ids[1]
    assert await store.resolve("latest~2") == ids[2]
    await store.aclose()


async def test_a_report_holding_only_failures_is_refused(tmp_path: Path) -> None:
    report = await evaluate(keep="failures")
    store = RunStore(tmp_path / "runs.sqlite")
    with pytest.raises(ValueError, match=r"holds \d+ of its 24 rows.*keep='all'"):
        await store.save(report, "bot")
    with pytest.raises(ValueError, match="a run needs a name"):
        await store.save(await evaluate(3), " ")
    assert not store.path.exists()


async def test_a_value_json_cannot_hold_is_stored_as_a_stand_in(tmp_path: Path) -> None:
    sample = EvaluationSample("odd", ["q"], "a")
    row = EvaluationRow.from_result(sample, "s", {1, 2}, EvaluationResult.passing())
    loop: list[Any] = []
    loop.append(loop)
    rows = [
        row,
        EvaluationRow.from_result(sample, "t", loop, EvaluationResult.failing(), position=1),
    ]
    report = EvaluationReport(rows)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        loaded = await store.load(await store.save(report, "odd"))
    assert loaded.counts == report.counts
    assert loaded.evaluations[0].output == [1, 2]


# -- the sink -----------------------------------------------------------------------------------


async def test_the_sink_stores_each_run_a_scorer_gives_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    sink = store.sink("bot", labels=["ci"])
    assert sink.run_id is None
    scorer = Scorer(4, sinks=[sink], repeats=3)
    first = await scorer.evaluate(samples(), echo, ExactMatchStrategy(), judged)
    first_id = sink.run_id
    second = await scorer.evaluate(samples(5), echo, ExactMatchStrategy())
    assert first_id is not None and sink.run_id not in (None, first_id)
    assert sink.rows_written == 15
    runs = await store.runs("bot")
    assert [run.id for run in runs] == [first_id, sink.run_id]
    assert [run.rows for run in runs] == [72, 15]
    assert runs[0].labels == ("ci",)
    assert runs[0].score == first.score
    assert runs[0].interval == first.confidence_interval()
    same_report(await store.load(first_id), first)
    same_report(await store.load("latest"), second)
    await store.aclose()


async def test_the_sink_writes_rows_before_the_run_ends(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    sink = store.sink("bot", batch=4)
    release = anyio.Event()
    written = anyio.Event()

    async def waiting(params: Parameters) -> Any:
        if params[0] == "q9":
            written.set()
            await release.wait()
        return params[0]

    async def watch() -> None:
        await written.wait()
        while sink.rows_written < 8:
            await anyio.lowlevel.checkpoint()
        (run,) = await store.runs()
        assert (run.complete, run.finished_at) == (False, None)
        assert run.rows >= 8
        release.set()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        report = await Scorer(1, sinks=[sink]).evaluate(samples(), waiting, ExactMatchStrategy())
    (run,) = await store.runs()
    assert (run.complete, run.rows, run.score) == (True, 12, report.score)
    await store.aclose()


async def test_a_cancelled_run_is_stored_partial_with_every_finished_row(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    sink = store.sink("bot")
    stuck = anyio.Event()

    async def stops(params: Parameters) -> Any:
        if params[0] == "q7":
            stuck.set()
            await anyio.sleep_forever()
        return params[0]

    scorer = Scorer(1, sinks=[sink])
    async with anyio.create_task_group() as group:

        async def run() -> None:
            async with scorer.stream(samples(), stops, ExactMatchStrategy()) as rows:
                async for _ in rows:
                    pass

        group.start_soon(run)
        await stuck.wait()
        group.cancel_scope.cancel()
    (stored,) = await store.runs()
    assert (stored.complete, stored.partial, stored.rows, stored.samples) == (False, True, 7, 7)
    assert stored.finished_at is not None
    loaded = await store.load(stored.id)
    assert (loaded.complete, loaded.evaluation_count, loaded.samples_expected) == (False, 7, 12)
    await store.aclose()


async def test_a_killed_run_is_listed_partial_from_the_rows_it_wrote(tmp_path: Path) -> None:
    report = await evaluate()
    store = RunStore(tmp_path / "runs.sqlite")
    sink = store.sink("bot")
    await sink.run_started(report.run.replace(complete=False, finished_at=None))
    for row in report.evaluations[:10]:
        await sink.send(row)
    await sink.flush()
    partial = EvaluationReport(report.evaluations[:10])
    (run,) = await store.runs()
    assert (run.complete, run.finished_at, run.rows) == (False, None, 10)
    assert (run.score, run.interval) == (partial.score, partial.confidence_interval())
    (point,) = await store.history("bot", tag="odd")
    assert point.score == partial.score_for_tag("odd")
    loaded = await store.load(run.id)
    assert loaded.complete is False
    assert loaded.counts == partial.counts
    await store.aclose()


async def test_a_row_before_the_run_started_is_refused(tmp_path: Path) -> None:
    sink = RunStore(tmp_path / "runs.sqlite").sink("bot")
    row = (await evaluate(1)).evaluations[0]
    with pytest.raises(RuntimeError, match="before its run started"):
        await sink.send(row)


# -- references ---------------------------------------------------------------------------------


async def saved(store: RunStore, names: Sequence[str]) -> list[str]:
    report = await evaluate(3)
    ids = []
    for number, name in enumerate(names):
        when = 1_800_000_000.0 + number
        run = report.run.replace(started_at=when, finished_at=when + 1)
        ids.append(await store.save(report.with_run(run), name))
    return ids


async def test_references(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        ids = await saved(store, ["a", "b", "a", "b@v2", "a"])
        assert await store.resolve("latest") == ids[4]
        assert await store.resolve(" latest~1 ") == ids[3]
        assert await store.resolve("a@latest") == ids[4]
        assert await store.resolve("a@latest~2") == ids[0]
        assert await store.resolve("b@v2@latest") == ids[3]
        assert await store.resolve(ids[1]) == ids[1]
        assert await store.resolve(ids[2][:-1]) == ids[2]
        assert (await store.load("b@latest")).run.started_at == 1_800_000_001.0


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("latest~9", "'latest~9': it asks for the run 9 before the latest, and .* holds 3 run"),
        ("a@latest~5", "the run of 'a' 5 before its latest, and .* holds 2 run\\(s\\) of 'a'"),
        ("zz@latest", "holds no run named 'zz'; the names there are 'a', 'b'"),
        ("2027", "it starts 3 or more run ids .*: give more of the id"),
        ("a", "no run has that id \\(a run name: did you mean 'a@latest'\\?\\).*latest runs are"),
        ("1999", "no run has that id; a reference is a run id, latest, latest~N or NAME@"),
    ],
)
async def test_a_reference_that_names_no_run(tmp_path: Path, ref: str, message: str) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        await saved(store, ["a", "b", "a"])
        with pytest.raises(RunNotFoundError, match=message) as caught:
            await store.load(ref)
    assert isinstance(caught.value, LookupError)
    assert caught.value.ref == ref
    assert caught.value.path == str(store.path)


async def test_a_malformed_reference(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    with pytest.raises(ValueError, match="after '@' write latest or latest~N"):
        await store.resolve("bot@yesterday")
    with pytest.raises(ValueError, match="an empty run reference"):
        await store.resolve("  ")


async def test_reading_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "none" / "runs.sqlite")
    assert await store.runs() == []
    with pytest.raises(RunNotFoundError, match="does not exist yet"):
        await store.load("latest")
    with pytest.raises(RunNotFoundError, match=r"no run named 'bot'.*does not exist yet"):
        await store.history("bot")
    assert not (tmp_path / "none").exists()
    empty = RunStore(tmp_path / "empty.sqlite")
    await empty.check()
    with pytest.raises(RunNotFoundError, match="holds no run yet"):
        await empty.resolve("latest")
    await empty.aclose()


# -- history ------------------------------------------------------------------------------------


def rows_passing(
    passed: int, total: int, *, tag: str = "t", strategy: str = "s", start: int = 0
) -> list[EvaluationRow]:
    return [
        EvaluationRow.from_result(
            EvaluationSample(f"s{i}", [i], tags=[tag]),
            strategy,
            i,
            EvaluationResult.from_boolean(i < start + passed),
            index=i,
        )
        for i in range(start, start + total)
    ]


async def save_at(
    store: RunStore, rows: list[EvaluationRow], when: float, name: str = "bot"
) -> str:
    run = RunInfo(started_at=when, finished_at=when + 1, strategies=("s",))
    return await store.save(EvaluationReport(rows, run=run), name)


async def test_history_overall_per_tag_and_per_strategy(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        first = await save_at(
            store, rows_passing(2, 4) + rows_passing(0, 1, tag="u", start=4), 100.0
        )
        second = await save_at(store, rows_passing(3, 4, strategy="k"), 200.0)
        await save_at(store, rows_passing(0, 2), 150.0, name="other")
        points = await store.history("bot")
        assert [(p.run_id, p.score, p.rows, p.passed) for p in points] == [
            (first, 40.0, 5, 2),
            (second, 75.0, 4, 3),
        ]
        expected = EvaluationReport(rows_passing(3, 4)).confidence_interval()
        assert points[1].interval == expected
        assert (points[1].samples, points[1].complete) == (4, True)
        assert [p.score for p in await store.history("bot", tag="t")] == [50.0, 75.0]
        assert [p.score for p in await store.history("bot", tag="u")] == [0.0]
        assert [p.run_id for p in await store.history("bot", tag="u")] == [first]
        assert [p.run_id for p in await store.history("bot", strategy="k")] == [second]
        assert [p.run_id for p in await store.history("bot", since=150.0)] == [second]
        with pytest.raises(
            ValueError, match="no run of 'bot' has rows of the tag 'x'; tags: 't', 'u'"
        ):
            await store.history("bot", tag="x")
        with pytest.raises(ValueError, match="strategies: 'k', 's'"):
            await store.history("bot", strategy="x")
        with pytest.raises(ValueError, match="a tag or a strategy, not both"):
            await store.history("bot", tag="t", strategy="s")
        with pytest.raises(
            RunNotFoundError, match=r"no run named 'bots'.*the names there are 'bot', 'other'"
        ):
            await store.history("bots")


async def test_average_score_pools_the_rows_of_the_runs(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        await save_at(store, rows_passing(0, 2), 100.0)
        await save_at(store, rows_passing(9, 10), 200.0)
        await save_at(store, rows_passing(1, 2), 300.0)
        assert await store.average_score("bot") == pytest.approx(100 * 10 / 14)
        assert await store.average_score("bot", since=200.0) == pytest.approx(100 * 10 / 12)
        moment = datetime.fromtimestamp(300.0, UTC)
        assert await store.average_score("bot", since=moment) == 50.0
        assert await store.average_score("bot", since=timedelta(days=1)) is None
        with pytest.raises(RunNotFoundError):
            await store.average_score("nobody")


async def test_history_takes_a_since_in_words(tmp_path: Path) -> None:
    async with RunStore(tmp_path / "runs.sqlite") as store:
        await save_at(store, rows_passing(1, 2), datetime(2026, 10, 31, 23, tzinfo=UTC).timestamp())
        late = await save_at(
            store, rows_passing(1, 2), datetime(2026, 11, 1, tzinfo=UTC).timestamp()
        )
        assert [p.run_id for p in await store.history("bot", since="2026-11-01")] == [late]
        with pytest.raises(ValueError, match=r"since: expected a date \(2026-11-01\).*got 'soon'"):
            await store.history("bot", since="soon")


# -- the database's own checks ------------------------------------------------------------------


async def test_the_store_keeps_each_row_as_its_data(tmp_path: Path) -> None:
    report = await evaluate(3)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = await store.save(report, "bot")
        assert await store.resolve("bot@latest") == run_id
        assert (await store.load(run_id)).score == report.score
    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        data = [orjson.loads(d) for (d,) in connection.execute("SELECT data FROM rows ORDER BY id")]
    connection.close()
    assert data == [row.to_dict() for row in report.evaluations]
    assert {row.outcome for row in report.evaluations} <= set(Outcome)


async def test_the_stored_summary_of_the_rows_is_the_reports(tmp_path: Path) -> None:
    def explode(sample: EvaluationSample, output: Any) -> EvaluationResult:
        if sample.name == "s4":
            raise ValueError("boom")
        return EvaluationResult.unscored("?") if sample.name == "s5" else judged(sample, output)

    report = await Scorer(3, repeats=3).evaluate(samples(), echo, ExactMatchStrategy(), explode)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        await store.save(report, "bot")
        (run,) = await store.runs()
        tags = {tag: await store.history("bot", tag=tag) for tag in ("odd", "even", "smoke")}
        strategies = {
            name: await store.history("bot", strategy=name)
            for name in ("ExactMatchStrategy", "explode")
        }
    assert (run.score, run.interval) == (report.score, report.confidence_interval())
    assert (run.rows, run.passed, run.failed) == (
        report.evaluation_count,
        report.passed_count,
        report.failed_count,
    )
    assert (run.unscored, run.errors, run.skipped) == (
        report.unscored_count,
        report.error_count,
        report.skipped_count,
    )
    assert run.errors > 0 and run.unscored > 0
    for tag, (point,) in tags.items():
        assert point.score == report.tag_scores[tag], tag
        assert point.interval == report.tag_statistics[tag].confidence_interval(), tag
    for name, (point,) in strategies.items():
        assert point.score == report.strategy_scores[name], name
        assert point.interval == report.strategy_statistics[name].confidence_interval(), name


async def test_shard_runs_are_kept_apart_from_the_history(tmp_path: Path) -> None:
    report = await evaluate(4)
    async with RunStore(tmp_path / "runs.sqlite") as store:
        whole = await store.save(report.with_run(report.run.replace(started_at=100.0)), "bot")
        shard = await store.save(
            report.with_run(report.run.replace(started_at=200.0, shard="1/2")), "bot"
        )
        assert await store.resolve("latest") == await store.resolve("bot@latest") == whole
        assert await store.resolve("latest", shards=True) == shard
        assert await store.resolve(shard) == shard
        assert (await store.load(shard)).run.shard == "1/2"
        assert [run.id for run in await store.runs()] == [whole]
        assert [(r.id, r.shard) for r in await store.runs("bot", shards=True)] == [
            (whole, None),
            (shard, "1/2"),
        ]
        assert [p.run_id for p in await store.history("bot")] == [whole]
        assert [p.shard for p in await store.history("bot", shards=True)] == [None, "1/2"]
        assert await store.average_score("bot") == report.score
        with pytest.raises(RunNotFoundError, match=r"\(and 1 run\(s\) of single shards"):
            await store.resolve("bot@latest~1")
