"""Streamed JSONL at speed (issue 25): lines parsed a chunk at a time, each item built by the
one sample builder (the sample ``EvaluationSample`` makes), workers fed a batch at a time,
signatures checked once per shape, and every line-numbered message kept."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from hypothesis import given, settings, strategies as st

from aeval import (
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    JsonlSink,
    SampleLoadError,
    Samples,
    Scorer,
)
from aeval._cli import _run
from aeval._cli._run import _FlushingSink, _Tagged
from aeval._engine._callables import BoundFunction
from aeval._engine._shards import Shard, ShardStream
from aeval._samples import _formats, _loaders
from aeval._samples._formats import parse_jsonl_line, parse_jsonl_lines
from aeval._samples._sources import CountedStream, count_lines
from aeval.abc import BaseSink

pytestmark = pytest.mark.anyio

ITEMS: list[dict[str, Any]] = [
    {"name": "plain", "parameters": ["q"], "expected-output": "a"},
    {"name": "named", "parameters": {"question": "q", "lang": "en"}, "expected-output": [1]},
    {"name": "tagged", "parameters": [], "tags": ["smoke", "x"], "metadata": {"owner": "o"}},
    {"name": "no expected", "parameters": [{"deep": [1, [2]]}]},
    {"name": "outputs", "parameters": ["q"], "expected-outputs": ["a", "b"]},
    {"name": "context", "parameters": ["q"], "context": "a passage", "label": "pass"},
    {"name": "checks", "parameters": ["q"], "must-contain": "a", "metadata": {"k": 1}},
]


def agrees(sample: EvaluationSample, output: object) -> EvaluationResult:
    return EvaluationResult.from_boolean(output == sample.expected_output)


def _fields(sample: EvaluationSample) -> tuple[Any, ...]:
    return (
        sample.name,
        sample.parameters.names,
        sample.parameters.values,
        sample.expected_output,
        sample.tags,
        dict(sample.metadata),
        type(sample.metadata).__name__,
    )


def _write(path: Path, items: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


async def test_the_fast_path_builds_the_samples_the_full_builder_does(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", ITEMS)
    one_by_one = [
        parse_jsonl_lines([json.dumps(item).encode()], 1, "s.jsonl", 0).samples[0] for item in ITEMS
    ]
    loaded = await Samples.load(path)
    streamed = [sample async for sample in Samples.stream(path)]

    expected = [
        EvaluationSample("plain", ["q"], "a"),
        EvaluationSample("named", {"question": "q", "lang": "en"}, [1]),
        EvaluationSample("tagged", [], None, tags=["smoke", "x"], metadata={"owner": "o"}),
        EvaluationSample("no expected", [{"deep": [1, [2]]}]),
    ]
    assert [_fields(s) for s in streamed[:4]] == [_fields(s) for s in expected]
    assert [_fields(s) for s in streamed] == [_fields(s) for s in loaded]
    assert [_fields(s) for s in streamed] == [_fields(s) for s in one_by_one]
    assert streamed[4].expected_output == ["a", "b"]
    assert dict(streamed[5].metadata) == {"context": ["a passage"], "label": "pass"}
    assert dict(streamed[6].metadata) == {"k": 1, "must_contain": ["a"]}


def _common(i: int, **changes: Any) -> dict[str, Any]:
    return {"name": f"s{i}", "parameters": [f"q{i}"], "expected-output": f"a{i}"} | changes


_BATCHES: dict[str, list[Any]] = {
    "common": [_common(i) for i in range(20)],
    "expected of any type": [
        _common(i, **{"expected-output": value})
        for i, value in enumerate([None, 1, 2.5, True, [1, "a"], {"k": [None]}, ""])
    ],
    "no parameters": [_common(i, parameters=[]) for i in range(5)],
    "two parameters": [_common(i, parameters=[i, {"deep": [i]}]) for i in range(5)],
    "nine parameters": [_common(i, parameters=list(range(9))) for i in range(5)],
    "counts differ": [_common(0), _common(1, parameters=["a", "b"]), _common(2)],
    "named parameters": [_common(0), _common(1, parameters={"q": "x"}), _common(2)],
    "a tag": [_common(0), _common(1, tags=["t"]), _common(2)],
    "no expected output": [_common(0), {"name": "s1", "parameters": ["q"]}, _common(2)],
    "another key": [_common(0), {"name": "s1", "parameters": ["q"], "label": "pass"}],
    "a blank name": [_common(0), _common(1, name=" \t"), _common(2)],
    "a name not a string": [_common(0), _common(1, name=7), _common(2)],
    "parameters not a list": [_common(0), _common(1, parameters="q"), _common(2)],
    "an item not a mapping": [_common(0), ["s1", ["q"], "a"], _common(2)],
    "a conversation key": [_common(0), {"name": "s1", "turns": ["hi"], "expected-output": "a"}],
    "many lines": [_common(i) for i in range(150)],
    "a bad line past the first step": [
        *(_common(i) for i in range(100)),
        _common(100, name=""),
        *(_common(i) for i in range(101, 150)),
    ],
    "a tag past the first step": [_common(i, tags=[] if i == 70 else None) for i in range(99)],
}


@pytest.mark.parametrize("case", sorted(_BATCHES))
def test_lines_built_together_are_the_samples_each_line_makes_alone(case: str) -> None:
    """A batch of lines is built together (the usual items through the fast path); the
    samples, and the error of a line that is not right, are the ones each line makes
    through the line-by-line path."""
    items = _BATCHES[case]
    lines = [json.dumps(item).encode() for item in items]
    batch = parse_jsonl_lines(lines, 3, "s.jsonl", 0)
    alone: list[EvaluationSample] = []
    error: SampleLoadError | None = None
    for number, raw in enumerate(lines, start=3):
        try:
            alone.append(parse_jsonl_line(raw, number, "s.jsonl", offset=0))
        except SampleLoadError as exc:
            error = exc
            break
    assert [_fields(s) for s in batch.samples] == [_fields(s) for s in alone]
    assert batch.samples == alone
    assert batch.numbers[: len(alone)] == list(range(3, 3 + len(alone)))
    assert (None if batch.error is None else str(batch.error)) == (
        None if error is None else str(error)
    )


def _build(item: Any) -> EvaluationSample:
    """The sample the one builder of every file format builds of a parsed JSONL item."""
    return _formats._build_all([item], "s.jsonl", _formats._JsonlLines([1]))[0]


@pytest.mark.parametrize(
    "item",
    [
        {"name": "x", "parameters": ["q"], "other": 1},
        {"name": " ", "parameters": ["q"]},
        {"name": 3, "parameters": ["q"]},
        {"name": "x"},
        {"name": "x", "parameters": "q"},
        {"name": "x", "parameters": ["q"], "tags": "smoke"},
        {"name": "x", "parameters": ["q"], "tags": [1]},
        {"name": "x", "parameters": ["q"], "metadata": [1]},
        {"name": "x", "parameters": ["q"], "metadata": {"turns": ["hi"]}},
        {"name": "x", "parameters": ["q"], "metadata": {"simulated_user": {}}},
        {"name": "x", "parameters": {1: "q"}},
        ["not", "a", "mapping"],
    ],
)
def test_an_item_with_only_the_usual_keys_is_still_checked_in_full(item: object) -> None:
    """The builder reads the other keys only when an item has one: an item of the usual keys
    with a wrong value, or a conversation's key in its metadata, is still refused."""
    with pytest.raises(SampleLoadError, match=r"s\.jsonl:1"):
        _build(item)


async def test_a_stream_hands_out_a_chunk_of_samples_at_a_time(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [ITEMS[0] | {"name": f"s{i}"} for i in range(50)])
    stream = _loaders.SampleStream(path)

    first = await anext(stream)
    batches = [batch async for batch in stream.sample_batches()]

    assert first.name == "s0"
    assert len(batches) == 1
    assert [sample.name for sample in batches[0]] == [f"s{i}" for i in range(1, 50)]


@pytest.mark.parametrize("chunk", [64, 64 * 1024])
async def test_a_bad_line_comes_after_every_sample_before_it_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(_loaders, "_CHUNK_SIZE", chunk)
    good = [ITEMS[0] | {"name": f"s{i}"} for i in range(5)]
    path = _write(tmp_path / "s.jsonl", [*good, {"name": "bad", "parameters": "q"}, ITEMS[0]])

    names: list[str] = []
    with pytest.raises(SampleLoadError) as info:
        async for sample in Samples.stream(path):
            names.append(sample.name)

    assert names == [f"s{i}" for i in range(5)]
    assert info.value.line == 6
    assert info.value.sample == "bad"
    assert "'parameters' must be a list" in str(info.value)


@pytest.mark.parametrize(
    "bad",
    [
        b'{"name": "bad", "parameters": "q"}',
        b'{"name": "bad", "parameters": ["caf\xe9"]}',
        b'{"name": "bad", "parameters": [}',
    ],
    ids=["invalid-sample", "not-utf8", "invalid-json"],
)
async def test_a_bad_line_past_the_first_batch_of_a_chunk_is_named_as_the_whole_file_names_it(
    tmp_path: Path, bad: bytes
) -> None:
    """A chunk's lines are parsed and handed out in batches of ``_BATCH_LINES``: a problem
    in a later batch keeps its line, column and byte offset, the same as loading the whole
    file (one batch) finds them, and every sample before it comes first."""
    count = 2 * _loaders._BATCH_LINES + 7
    lines = [json.dumps(ITEMS[0] | {"name": f"s{i}"}).encode() for i in range(count)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([*lines, bad, lines[0]]) + b"\n")
    assert path.stat().st_size < _loaders._CHUNK_SIZE

    with pytest.raises(SampleLoadError) as whole:
        await Samples.load(str(path))
    names: list[str] = []
    with pytest.raises(SampleLoadError) as streamed:
        async for sample in Samples.stream(str(path)):
            names.append(sample.name)

    assert names == [f"s{i}" for i in range(count)]
    assert streamed.value.line == whole.value.line == count + 1
    assert str(streamed.value) == str(whole.value)


def test_a_deep_line_among_shallow_ones_is_found_by_its_number() -> None:
    deep: object = "x"
    for _ in range(101):
        deep = [deep]
    lines = [json.dumps(item).encode() for item in (ITEMS[0], ITEMS[1], {"name": "d"}, ITEMS[2])]
    lines[2] = json.dumps({"name": "d", "parameters": deep}).encode()

    batch = parse_jsonl_lines(lines, 10, "s.jsonl", 0)

    assert [sample.name for sample in batch.samples] == ["plain", "named"]
    assert batch.numbers == [10, 11]
    assert batch.error is not None and batch.error.line == 12
    assert "nests deeper than 100 levels" in str(batch.error)


class _BatchesOnly:
    """A source that can only be read in batches: iterating it one by one fails."""

    def __init__(self, batches: list[list[EvaluationSample]]) -> None:
        self.batches = batches
        self.closed = False

    def __aiter__(self) -> AsyncIterator[EvaluationSample]:
        raise AssertionError("the workers read a batched source one sample at a time")

    async def sample_batches(self) -> AsyncIterator[list[EvaluationSample]]:
        for batch in self.batches:
            yield batch

    async def aclose(self) -> None:
        self.closed = True


async def test_the_workers_read_a_batched_source_a_batch_at_a_time() -> None:
    source = _BatchesOnly(
        [
            [EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}") for i in range(3)],
            [EvaluationSample(f"s{i}", [f"q{i}"], f"q{i}") for i in range(3, 5)],
        ]
    )

    async def echo(question: str) -> str:
        return question

    report = await Scorer(2, repeats=2).evaluate(source, echo, agrees)

    assert report.passed_count == 10
    assert sorted((row.index, row.repeat) for row in report.evaluations) == [
        (i, r) for i in range(5) for r in range(2)
    ]
    assert source.closed


async def test_a_streamed_signature_is_checked_once_per_shape_of_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real = BoundFunction.check

    def counting(self: BoundFunction, sample: EvaluationSample) -> None:
        checked.append(sample.name)
        real(self, sample)

    monkeypatch.setattr(BoundFunction, "check", counting)
    items = [
        *({"name": f"p{i}", "parameters": [f"q{i}"], "expected-output": f"q{i}"} for i in range(4)),
        *(
            {"name": f"n{i}", "parameters": {"question": "q"}, "expected-output": "q"}
            for i in range(3)
        ),
    ]
    path = _write(tmp_path / "s.jsonl", items)

    async def chat(question: str) -> str:
        return question

    report = await Scorer(3).evaluate(Samples.stream(path), chat, agrees)

    assert report.passed_count == 7
    assert checked == ["p0", "n0"]


async def test_a_streamed_sample_that_does_not_fit_comes_after_the_rows_before_it(
    tmp_path: Path,
) -> None:
    items: list[dict[str, Any]] = [
        {"name": f"s{i}", "parameters": [f"q{i}"], "expected-output": f"q{i}"} for i in range(6)
    ]
    items.insert(4, {"name": "wrong", "parameters": {"topic": "x"}})
    path = _write(tmp_path / "s.jsonl", items)
    called: list[str] = []

    async def chat(question: str) -> str:
        called.append(question)
        return question

    with pytest.raises(TypeError, match=r"sample 'wrong'.*missing a required argument"):
        await Scorer(2).evaluate(Samples.stream(path), chat, agrees)

    assert sorted(called) == ["q0", "q1", "q2", "q3"]


class _SlowFirstSink(BaseSink):
    """Holds its first row until ``release`` is set; records every call's start and end."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.held = anyio.Event()
        self.calls: list[str] = []
        self.inside = 0
        self.most_inside = 0

    async def send(self, row: EvaluationRow) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        self.calls.append(row.name)
        if row.name == "s0":
            self.held.set()
            await self.release.wait()
        self.inside -= 1

    async def flush(self) -> None:
        self.calls.append("flush")


def _row(name: str) -> EvaluationRow:
    return EvaluationRow.from_result(
        EvaluationSample(name, ["q"], "q"), "exact", "q", EvaluationResult.from_boolean(True)
    )


async def test_the_command_lines_sink_wrapper_lets_one_call_in_at_a_time() -> None:
    sink = _SlowFirstSink()
    flushing = _FlushingSink(sink)
    async with anyio.create_task_group() as group:
        group.start_soon(flushing.send, _row("s0"))
        await sink.held.wait()
        for i in range(1, 4):
            group.start_soon(flushing.send, _row(f"s{i}"))
        group.start_soon(flushing.flush)
        await anyio.wait_all_tasks_blocked()
        assert sink.calls == ["s0"]
        sink.release.set()
    assert sink.most_inside == 1
    assert sorted(sink.calls) == sorted(["s0", "s1", "s2", "s3", "flush"])
    await flushing.send(_row("s4"))
    assert sink.calls[-1] == "s4"


async def test_rows_reach_rows_jsonl_without_the_wrapper_and_each_periodic_flush_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run, "_FLUSH_INTERVAL", 0.0)
    inner = JsonlSink(tmp_path / "rows.jsonl")
    flushing = _FlushingSink(inner)
    assert flushing.send == inner.send  # no call of the wrapper per row
    flush = inner.flush
    wrote = {1: anyio.Event(), 2: anyio.Event()}

    async def counted_flush() -> None:
        await flush()
        if inner.rows_written in wrote:
            wrote[inner.rows_written].set()

    inner.flush = counted_flush  # type: ignore[method-assign]
    async with anyio.create_task_group() as group:
        group.start_soon(flushing.run)
        await flushing.send(_row("s0"))
        await wrote[1].wait()
        await flushing.send(_row("s1"))  # sent after a flush: the next one writes it
        await wrote[2].wait()
        group.cancel_scope.cancel()
    lines = (tmp_path / "rows.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["s0", "s1"]


async def test_after_a_periodic_flush_failed_the_next_row_raises_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run, "_FLUSH_INTERVAL", 0.0)
    inner = JsonlSink(tmp_path / "rows.jsonl")
    flushing = _FlushingSink(inner)
    await flushing.send(_row("s0"))
    failure = OSError(28, "No space left on device")

    def full(data: bytes, truncate: bool) -> None:
        raise failure

    inner._write_file = full  # type: ignore[method-assign]
    await flushing.run()  # returns once a periodic flush failed
    with pytest.raises(OSError) as raised:
        await flushing.send(_row("s1"))
    assert raised.value is failure
    assert inner.rows_written == 1


async def test_rows_jsonl_writes_a_chunk_in_one_call_to_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(function, "__name__", repr(function)))
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    sink = JsonlSink(tmp_path / "out" / "rows.jsonl")
    for i in range(3):
        await sink.send(_row(f"s{i}"))
    await sink.flush()
    await sink.send(_row("s3"))
    await sink.flush()

    assert calls == ["_write_file", "_write_file"]
    lines = (tmp_path / "out" / "rows.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["s0", "s1", "s2", "s3"]


class _HeldWrites:
    """Holds a JsonlSink's first chunk in its worker thread until released (a slow disk)."""

    def __init__(self, sink: JsonlSink) -> None:
        self.write = sink._write_file
        self.writing = threading.Event()
        self.release = threading.Event()
        self.chunks = 0
        sink._write_file = self  # type: ignore[method-assign]

    def __call__(self, data: bytes, truncate: bool) -> None:
        self.chunks += 1
        if self.chunks == 1:
            self.writing.set()
            self.release.wait(10)
        self.write(data, truncate)


def _big_row(name: str) -> EvaluationRow:
    sample = EvaluationSample(name, ["q" * 40_000], "q")
    return EvaluationRow.from_result(sample, "exact", "q", EvaluationResult.from_boolean(True))


async def test_rows_go_on_while_rows_jsonl_writes_a_chunk_in_order_and_bounded(
    tmp_path: Path,
) -> None:
    inner = JsonlSink(tmp_path / "rows.jsonl")
    held = _HeldWrites(inner)
    flushing = _FlushingSink(inner)
    done: list[str] = []

    async def send(name: str) -> None:
        await flushing.send(_big_row(name))
        done.append(name)

    async with anyio.create_task_group() as group:
        group.start_soon(send, "s0")
        group.start_soon(send, "s1")  # 80 kB: the first chunk, held in its thread
        await anyio.to_thread.run_sync(held.writing.wait, 10)
        for i in range(2, 6):  # crosses a chunk again: joins the buffer, no second write
            await send(f"s{i}")
        assert done == ["s0", "s2", "s3", "s4", "s5"]
        assert held.chunks == 1
        for i in range(6, 40):  # past the bound: waits for the chunk being written
            group.start_soon(send, f"s{i}")
        await anyio.wait_all_tasks_blocked()
        assert len(done) < 40
        held.release.set()
    await flushing.flush()

    lines = (tmp_path / "rows.jsonl").read_bytes().splitlines()
    names = [json.loads(line)["name"] for line in lines]
    assert sorted(names) == sorted(f"s{i}" for i in range(40))
    assert names[:6] == [f"s{i}" for i in range(6)]
    assert inner.rows_written == 40


async def test_tagged_and_sharded_streams_hand_out_batches_with_the_whole_datasets_index(
    tmp_path: Path,
) -> None:
    items = [
        {"name": f"s{i}", "parameters": ["q"], "tags": ["even" if i % 2 == 0 else "odd"]}
        for i in range(40)
    ]
    path = str(_write(tmp_path / "s.jsonl", items))
    counted = CountedStream([path], count_lines([path]))
    tagged = _Tagged(counted, frozenset({"even"}))
    shard = Shard.parse("1/2")

    tagged_batches = [batch async for batch in tagged.sample_batches()]
    sharded = [batch async for batch in ShardStream(counted, shard, 0).sample_batches()]

    assert len(tagged_batches) == 1
    assert [sample.name for sample in tagged_batches[0]] == [f"s{i}" for i in range(0, 40, 2)]
    assert [sample.name async for sample in tagged] == [f"s{i}" for i in range(0, 40, 2)]
    assert len(sharded) == 1
    assert [(item.index, item.sample.name) for item in sharded[0]] == [
        (i, f"s{i}") for i in range(40) if shard.holds(f"s{i}")
    ]


async def test_stopping_a_counted_stream_after_one_sample_closes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files: list[Any] = []
    real_open = anyio.open_file

    async def spy(*args: Any, **kwargs: Any) -> Any:
        file = await real_open(*args, **kwargs)
        files.append(file.wrapped)
        return file

    monkeypatch.setattr(anyio, "open_file", spy)
    items = [ITEMS[0] | {"name": f"s{i}", "tags": ["x"]} for i in range(9)]
    path = str(_write(tmp_path / "s.jsonl", items))
    for stream in (CountedStream([path], 9), _Tagged(CountedStream([path], 9), frozenset("x"))):
        iterator = aiter(stream)
        assert (await anext(iterator)).name == "s0"
        await iterator.aclose()  # type: ignore[attr-defined]
    assert len(files) == 2
    assert all(file.closed for file in files)


@pytest.mark.parametrize("count", [0, 1, 7, 8, 9])
def test_the_builder_builds_the_parameters_and_metadata_the_sample_does(count: int) -> None:
    values = [f"v{i}" for i in range(count)]
    for parameters in (values, {f"p{i}": value for i, value in enumerate(values)}):
        item = {"name": "x", "parameters": parameters, "metadata": {"k": [1]}, "tags": ["t"]}
        built = _build(item)
        expected = EvaluationSample("x", parameters, None, tags=["t"], metadata={"k": [1]})
        assert _fields(built) == _fields(expected)
        assert built == expected
        assert (built.parameters._names, built.parameters._values) == (
            expected.parameters._names,
            expected.parameters._values,
        )


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
_TEXTS = st.lists(st.text(max_size=3), max_size=3)
_USUAL = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["s", "x y"]),
        "parameters": st.lists(_VALUES, max_size=9)
        | st.dictionaries(st.text(max_size=3), _VALUES, max_size=3),
    },
    optional={
        "expected-output": _VALUES,
        "tags": st.none() | _TEXTS,
        "metadata": st.none() | st.dictionaries(st.text(max_size=3), _VALUES, max_size=3),
    },
)
"""Items of the usual keys of the usual types."""
_ODD = st.fixed_dictionaries(
    {"name": st.sampled_from(["s", " ", ""]) | st.integers()},
    optional={
        "parameters": _TEXTS | _VALUES,
        "expected-output": _VALUES,
        "tags": st.none() | _TEXTS | _VALUES,
        "metadata": st.none()
        | st.dictionaries(st.sampled_from(["k", "turns", "simulated_user"]), _VALUES)
        | _VALUES,
        "label": st.sampled_from(["pass", "fail"]),
        "x": _VALUES,
    },
)
"""Items that are not all the usual keys of the usual types."""


@settings(max_examples=400, deadline=None)
@given(item=_USUAL | _ODD)
def test_the_builder_builds_the_sample_the_constructor_builds(item: dict[str, Any]) -> None:
    """The sample builder (``_build_into``, which makes the sample without
    ``EvaluationSample``'s own checks) either names the item's problem or builds the sample
    ``EvaluationSample(name, parameters, expected_output, tags=..., metadata=...)`` builds
    of the item's values, its label joining the metadata."""
    try:
        built = _build(item)
    except SampleLoadError:
        assert not _takes_without_problem(item)
        return
    metadata = dict(item.get("metadata") or {})
    if "label" in item:
        metadata["label"] = item["label"]
    made = EvaluationSample(
        item["name"],
        item["parameters"],
        item.get("expected-output"),
        tags=item.get("tags") or (),
        metadata=metadata,
    )
    assert _fields(built) == _fields(made)
    assert built == made
    assert built.parameters._names == made.parameters._names
    assert type(built.metadata) is type(made.metadata)


def _takes_without_problem(item: dict[str, Any]) -> bool:
    """Whether ``item`` has a name, parameters and only the keys and types the builder
    takes without a problem (of those ``_ODD`` draws)."""
    name, parameters, tags = item.get("name"), item.get("parameters"), item.get("tags")
    metadata = item.get("metadata")
    return (
        isinstance(name, str)
        and bool(name.strip())
        and isinstance(parameters, list | dict)
        and (tags is None or (isinstance(tags, list) and all(isinstance(t, str) for t in tags)))
        and (
            metadata is None
            or (isinstance(metadata, dict) and not {"turns", "simulated_user"} & set(metadata))
        )
        and "x" not in item
    )
