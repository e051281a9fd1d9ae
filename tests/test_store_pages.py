"""A stored run read a page at a time (``aeval._store._pages``, what ``aeval view`` serves):
the SQL index, paging, filters, search and review picks must give exactly the rows, order and
figures of the report the store rebuilds (``RunStore.load``), which the viewer used before."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeval import (
    EvaluationReport,
    EvaluationRow,
    EvaluationSample,
    Outcome,
    RunInfo,
    RunStore,
    Transcript,
    Turn,
)
from aeval._conversation import ConversationEnding
from aeval._reporting._codec import row_from_dict, row_to_dict
from aeval._reporting._results import ErrorInfo
from aeval._store import pick_rows
from aeval._store._database import RunDatabase, RunStart
from aeval._store._pages import RunPages, search_pieces, unlike_rows
from aeval._store._rows import RowEncoder
from aeval._view._data import (
    FILTER_KEYS,
    LoadedRun,
    RunCache,
    _line_text,
    _search_text,
    select,
)
from aeval.formatters._header import failures_first, header_facts, partial_banner, score_text

pytestmark = pytest.mark.anyio

_OPENED: list[RunDatabase] = []


@pytest.fixture(autouse=True)
def _close_databases() -> Iterator[None]:
    """Close each test's writers: a connection left to the collector warns (Python 3.13)."""
    yield
    while _OPENED:
        _OPENED.pop().close()


def opened(path: Path) -> RunDatabase:
    """A writer of the store at ``path``, closed when the test ends."""
    _OPENED.append(RunDatabase(path))
    return _OPENED[-1]


STRATEGIES = ("Exact", "Judge", "Length")
OUTPUTS: tuple[Any, ...] = (
    "İstanbul",
    "5\u212a (Kelvin)",
    {"answer": None, "ok": True},
    [1.5e-07, "x"],
    'a "quoted" \\ path',
    "zero\u200bwidth",
    None,
    1e16,
)


def _row(index: int, repeat: int, position: int, rng: random.Random) -> EvaluationRow:
    parameters: Any = [f"Question {index}?"]
    if index % 4 == 1:
        parameters = {"question": f"Question {index}?", "lang": None}
    elif index % 4 == 2:
        parameters = [f"Question {index}?", None, [1, None]]
    elif index % 4 == 3:
        parameters = [f"Question {index}?", None, "fr"]
    sample = EvaluationSample(
        f"sample {index}",
        parameters,
        f"City {index}",
        tags=["geo", f"t{index % 3}"],
        metadata={"review_queued": True} if index % 7 == 3 else {},
    )
    outcome = rng.choice(list(Outcome))
    score = {
        Outcome.PASSED: rng.choice([1.0, 0.55]),
        Outcome.FAILED: rng.choice([0.0, 0.42]),
        Outcome.ERROR: 0.0,
    }.get(outcome, rng.choice([None, 0.45, 0.8]))
    metadata: dict[str, Any] = {}
    if position == 1:
        metadata = {"prompt_tokens": 10 + index, "completion_tokens": 2, "cost": 0.001}
        if rng.random() < 0.3:
            metadata["agreement"] = 0.5
        if rng.random() < 0.3:
            metadata["threshold"] = 0.7
            metadata["retries"] = 1
    output = OUTPUTS[(index + repeat) % len(OUTPUTS)]
    no_strategy = index % 11 == 5
    return EvaluationRow(
        sample=sample,
        strategy=None if no_strategy else STRATEGIES[position],
        output=output,
        outcome=outcome,
        score=score,
        explanation=f"because {index}/{position}",
        metadata=metadata,
        error=ErrorInfo("ValueError", f"boom {index}" * (index % 2))
        if outcome is Outcome.ERROR
        else None,
        duration=0.25,
        index=index,
        repeat=repeat,
        position=0 if no_strategy else position,
    )


def rows(count: int, *, repeats: int = 2, seed: int = 1) -> list[EvaluationRow]:
    """Rows of ``count`` samples × ``repeats`` × 3 strategies (one row for a sample without
    strategies), every outcome, usage, judges' agreement, thresholds, queued samples, and
    outputs whose display differs from their JSON."""
    rng = random.Random(seed)
    made = []
    for index in range(count):
        for repeat in range(repeats):
            positions = (0,) if index % 11 == 5 else (0, 1, 2)
            made += [_row(index, repeat, position, rng) for position in positions]
    return made


def store_shuffled(
    path: Path, made: list[EvaluationRow], *, finished: bool = True, seed: int = 3
) -> tuple[RunDatabase, int, str]:
    """Store ``made`` as one run, its rows in a random order (as a streamed run's rows
    arrive), ended or not."""
    database = opened(path)
    info = RunInfo(started_at=1764530000.0, finished_at=1764530100.0, complete=True)
    seq, run_id = database.begin(RunStart("pages", info))
    shuffled = list(made)
    random.Random(seed).shuffle(shuffled)
    encoder = RowEncoder()
    database.add_rows(seq, 0, [encoder(row) for row in shuffled])
    if finished:
        database.finish(seq, info, encoder.models)
    return database, seq, run_id


def keys(found: Any) -> list[tuple[str, int, str | None]]:
    return [(row.name, row.repeat, row.strategy) for row in found]


async def loaded_pair(path: Path, run_id: str) -> tuple[RunStore, LoadedRun, EvaluationReport]:
    store = RunStore(path)
    index = await RunPages(store).index(run_id)
    return store, LoadedRun(index), await store.load(run_id, shards=True)


@pytest.mark.parametrize("finished", [True, False])
async def test_the_index_holds_the_report_order_and_figures(tmp_path: Path, finished: bool) -> None:
    made = rows(40)
    _, _, run_id = store_shuffled(tmp_path / "runs.sqlite", made, finished=finished)
    store, run, report = await loaded_pair(tmp_path / "runs.sqlite", run_id)
    async with store:
        pages = RunPages(store)
        index = run.index
        decoded = await pages.rows(index, list(index.ids))
        shown = [decoded[row_id] for row_id in index.ids]
        assert [row_to_dict(r) for r in shown] == [
            row_to_dict(r) for r in failures_first(report.evaluations)
        ], "failures first, each group in report order, though stored shuffled"
        in_order = [shown[position] for position in index.order]
        assert keys(in_order) == keys(report.evaluations)
        assert list(index.keys()) == keys(shown)
        flaky = {(case.sample, case.strategy) for case in report.flaky}
        assert flaky, "the data has flaky pairs"
        assert index.flaky == {
            p for p, row in enumerate(shown) if (row.name, row.strategy) in flaky
        }
        assert index.repeated and index.finished is finished
        head = index.head
        assert header_facts(head) == header_facts(report)
        assert score_text(head) == score_text(report)
        assert partial_banner(head) == partial_banner(report)
        assert head.usage == report.usage and report.usage.prompt_tokens > 0
        assert head.counts == report.counts


async def test_a_report_without_a_start_sums_the_calls_as_the_report_does(tmp_path: Path) -> None:
    made = rows(6, repeats=1)
    database = opened(tmp_path / "runs.sqlite")
    seq, run_id = database.begin(RunStart("pages", RunInfo()))
    database.add_rows(seq, 0, [RowEncoder()(row) for row in made])
    store, run, report = await loaded_pair(tmp_path / "runs.sqlite", run_id)
    async with store:
        if report.run.started_at is None:
            assert run.report.duration == report.duration
        assert header_facts(run.report) == header_facts(report)


def reference(
    report: EvaluationReport, *, filter: str, query: str, only: set[tuple[Any, ...]] | None = None
) -> list[tuple[str, int, str | None]]:
    """The rows the viewer showed when it held the whole report (its former code)."""
    flaky = {(case.sample, case.strategy) for case in report.flaky}
    terms = query.lower().split()
    kept = []
    for row in failures_first(report.evaluations):
        key = (row.name, row.repeat, row.strategy)
        if only is not None and key not in only:
            continue
        if filter not in ("all", "not-passed", "flaky") and row.outcome.value != filter:
            continue
        if filter == "not-passed" and (row.passed or row.outcome is Outcome.NOT_APPLICABLE):
            continue
        if filter == "flaky" and (row.name, row.strategy) not in flaky:
            continue
        text = _search_text(row)
        if all(term in text for term in terms):
            kept.append(key)
    return kept


QUERIES = (
    "",
    "sample 1",
    "FUNCTION",
    "none",
    "1.5e-07",
    "07",
    "i̇stanbul",
    "5k",
    '"quoted"',
    "\\ path",
    "[1.5e-07,",
    "u200b",
    "zero\u200bwidth",
    "valueerror: boom",
    "t2 because",
    "1e+16",
    "no such words",
)


async def test_filters_and_search_keep_the_rows_the_whole_report_kept(tmp_path: Path) -> None:
    made = rows(40)
    _, _, run_id = store_shuffled(tmp_path / "runs.sqlite", made)
    store, run, report = await loaded_pair(tmp_path / "runs.sqlite", run_id)
    async with store:
        pages = RunPages(store)
        matched = 0
        for filter in sorted(FILTER_KEYS):
            for query in QUERIES:
                expected = reference(report, filter=filter, query=query)
                # a run searched for the first time (SQLite narrows the rows), then one
                # whose rows' texts are all held (after a query no word of which narrows)
                for held in (LoadedRun(run.index), run):
                    page = await select(
                        pages, held, filter=filter, query=query, page=0, size=len(made)
                    )
                    assert keys(row for _, row, _ in page.rows) == expected, (filter, query)
                    assert page.matching == len(expected)
                matched += bool(expected) and bool(query)
        assert len(run.texts) == len(made), "every text held"
        assert matched > 20, "the queries find rows"
        # page by page, the same rows in the same order
        expected = reference(report, filter="not-passed", query="sample")
        seen = []
        for number in range(len(expected) // 7 + 2):
            page = await select(
                pages, run, filter="not-passed", query="sample", page=number, size=7
            )
            if page.page != number:
                break
            seen += keys(row for _, row, _ in page.rows)
            assert all(flaky == (p in run.index.flaky) for p, _, flaky in page.rows)
        assert seen == expected


def test_search_pieces_leave_out_what_only_the_shown_text_holds() -> None:
    assert search_pieces(["country", "99999?"]) == ["country", "99999"]
    assert search_pieces(["function", "none", "fun", "1e-07", "x01abc", "u200b"]) == ["1e"]
    assert search_pieces(['"quoted"', "[a,", "'b'"]) == ["quoted", "a", "b"]


@pytest.mark.parametrize("pick", ["all", "failures", "disagreements", "uncertain", "queued"])
async def test_picks_from_sql_are_pick_rows_picks(tmp_path: Path, pick: Any) -> None:
    made = rows(30)
    _, _, run_id = store_shuffled(tmp_path / "runs.sqlite", made)
    store, run, report = await loaded_pair(tmp_path / "runs.sqlite", run_id)
    async with store:
        for row in report.evaluations[:12:3]:
            await store.add_label(
                run_id,
                sample=row.name,
                strategy=row.strategy,
                repeat=row.repeat,
                reviewer="ana",
                verdict="fail" if row.passed else "pass",
            )
        labels = await store.labels(run_id)
        pages = RunPages(store)
        index = run.index
        everything = await pages.rows(index, list(index.ids))
        for sample in (None, 1, 5, 1000):
            for seed in (0, 7):
                picked = await pages.pick(index, pick=pick, sample=sample, seed=seed, labels=labels)
                expected = pick_rows(report, pick=pick, sample=sample, seed=seed, labels=labels)
                assert keys(everything[i] for i in picked) == keys(expected), (sample, seed)
        assert pick_rows(report, pick=pick, labels=labels), "the pick finds rows"
        with pytest.raises(ValueError, match="pick is one of"):
            await pages.pick(index, pick="some")  # type: ignore[arg-type]


async def test_a_run_still_written_is_read_again_a_finished_one_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    made = rows(10, repeats=1)
    database, seq, run_id = store_shuffled(path, made[:8], finished=False)
    async with RunStore(path) as store:
        cache = RunCache(store, size=1)
        first = await cache.get(run_id)
        assert await cache.get(run_id) is first, "nothing new: the index is kept"
        partial = await cache.report(first)
        assert len(partial.evaluations) == 8 and await cache.report(first) is not partial
        assert len(first.index.ids) == 8
        encoder = RowEncoder()
        database.add_rows(seq, 8, [encoder(row) for row in made[8:]])
        grown = await cache.get(run_id)
        assert grown is not first and len(grown.index.ids) == len(made)
        database.finish(seq, RunInfo(started_at=1.0, finished_at=2.0, complete=True), ())
        ended = await cache.get(run_id)
        assert ended.index.finished and await cache.get(run_id) is ended
        whole = await cache.report(ended)
        assert len(whole.evaluations) == len(made) and await cache.report(ended) is whole
        other = store_shuffled(path, made, seed=4)[2]
        await cache.get(other)
        assert await cache.get(run_id) is not ended, "the cache holds one run"


def test_a_search_tests_every_row_whose_text_is_not_its_json(tmp_path: Path) -> None:
    cases: list[tuple[str, Any, Any, bool]] = [
        ('text ,"output":"x" and ,"expected_output":{', "plain", "City", False),
        ("null", None, None, False),
        ("nested", {"output": "inner", "expected_output": "inner"}, "City", True),
        ("list", ["a", "b"], "City", True),
        ("number", 3.5, "City", True),
        ("bool", True, None, True),
        ("expected dict", "plain", {"city": "Paris"}, True),
        ("kelvin", "5\u212a", "City", True),
        ("dotted", "plain", "İzmir", True),
    ]
    made = [
        EvaluationRow(
            sample=EvaluationSample(name, [name], expected),
            strategy="Exact",
            output=output,
            outcome=Outcome.PASSED,
            score=1.0,
            index=number,
        )
        for number, (name, output, expected, _) in enumerate(cases)
    ]
    database, seq, _ = store_shuffled(tmp_path / "runs.sqlite", made)
    found = database._read(lambda connection: unlike_rows(connection, seq))
    assert found is not None
    names = database._read(
        lambda connection: connection.execute(
            f"SELECT sample FROM rows WHERE id IN ({', '.join('?' * len(found))})", tuple(found)
        ).fetchall()
    )
    assert sorted(name for (name,) in names or ()) == sorted(n for n, *_, odd in cases if odd)


def test_the_text_of_a_plain_line_is_the_text_of_its_row() -> None:
    made = rows(40)
    plain = 0
    for row in made:
        text = _line_text(row_to_dict(row_from_dict(row_to_dict(row))))
        if text is not None:
            plain += 1
            assert text == _search_text(row_from_dict(row_to_dict(row))), row.name
    assert plain > 20, "most rows take the quick way"


def conversation_rows() -> list[EvaluationRow]:
    """Conversation rows (a transcript output, two strategies), every ending, the simulated
    user's usage."""
    made = []
    endings: tuple[ConversationEnding, ...] = (
        "goal",
        "max-turns",
        "goal",
        "error",
        "script",
        "timeout",
    )
    for index, ended in enumerate(endings):
        turns = (Turn("Hi", "Hello [2]"), Turn("Book it", None if ended == "error" else "Done"))
        for position, strategy in enumerate(("EachTurn", "Judge")):
            made.append(
                EvaluationRow(
                    sample=EvaluationSample(f"trip {index}", ["plan"], None),
                    strategy=strategy,
                    output=Transcript(turns, ended),
                    outcome=Outcome.PASSED if index % 2 else Outcome.FAILED,
                    score=1.0 if index % 2 else 0.0,
                    metadata={"user_model": {"calls": 2, "prompt_tokens": 7, "cost": 0.5}}
                    if position == 0
                    else {"prompt_tokens": 3},
                    index=index,
                    position=position,
                )
            )
    return made


async def test_a_conversation_run_reads_as_its_report(tmp_path: Path) -> None:
    _, _, run_id = store_shuffled(tmp_path / "runs.sqlite", conversation_rows())
    store, run, report = await loaded_pair(tmp_path / "runs.sqlite", run_id)
    async with store:
        assert report.conversations and report.usage.user_model_calls == 12
        assert header_facts(run.report) == header_facts(report)
        for query in ("assistant", "[2]", "no answer", "book it done", "hello"):
            page = await select(
                RunPages(store), LoadedRun(run.index), filter="all", query=query, page=0, size=99
            )
            expected = reference(report, filter="all", query=query)
            assert keys(row for _, row, _ in page.rows) == expected, query
            assert expected or query == "book it done"
