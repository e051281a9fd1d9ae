from __future__ import annotations

import contextlib
import importlib.metadata
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from aeval import (
    EvaluationSample,
    NoLoaderError,
    Parameters,
    SampleFileNotFoundError,
    SampleLoadError,
    Samples,
    register_loader,
    unregister_loader,
)
from aeval._samples import _formats as _sample_formats, _limits, _loaders
from aeval._samples._loaders import (
    load_sources,
    load_sources_sync,
    registered_loaders,
    stream_jsonl,
)
from aeval._samples._sources import CountedStream, count_lines, is_url, streams
from aeval.abc import SampleLoader
from aeval.testing import HTTPReply, ScriptedHTTPServer

DATA = Path(__file__).parent / "data" / "loaders"

EXPECTED = Samples(
    [
        EvaluationSample("Sample1", ["parameter1"], "expected1", tags=["tag1"]),
        EvaluationSample(
            "multiline",
            ["first parameter value", "second parameter value"],
            "The expected output content here\nCan span multiple lines\n",
            tags=["tag1", "tag2"],
        ),
        EvaluationSample(
            "retriever_test_sample",
            ["search query"],
            ["expected segment 1", "expected segment 2"],
            tags=["retriever"],
        ),
        EvaluationSample(
            "named",
            {"question": "What is RAG?", "lang": "en"},
            "Retrieval-augmented generation",
            metadata={"source": "docs", "difficulty": 2},
        ),
    ]
)


def _details(samples: Samples) -> list[tuple[Any, ...]]:
    return [(s.name, s.parameters, s.expected_output, s.tags, dict(s.metadata)) for s in samples]


@pytest.fixture(autouse=True)
def _isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_loaders._REGISTRY, "_entries", list(_loaders._REGISTRY._entries))
    monkeypatch.setattr(_loaders._REGISTRY, "_entry_points_loaded", True)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["samples.yaml", "samples.json", "samples.jsonl"])
def test_each_format_loads_the_same_samples(name: str) -> None:
    samples = load_sources_sync([DATA / name])

    assert _details(samples) == _details(EXPECTED)
    named = samples[3]
    assert named.parameters == Parameters({"question": "What is RAG?", "lang": "en"})
    assert named.parameters.get("lang") == "en"
    assert isinstance(samples[2].expected_output, list)


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["samples.yaml", "samples.json", "samples.jsonl"])
async def test_each_format_loads_asynchronously(name: str) -> None:
    samples = await Samples.load(str(DATA / name))

    assert _details(samples) == _details(EXPECTED)


@pytest.mark.anyio
async def test_async_parsing_runs_in_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    real = _sample_formats.PARSERS["yaml"]

    def recording(data: bytes, source: str) -> Any:
        threads.append(threading.get_ident())
        return real(data, source)

    monkeypatch.setitem(_sample_formats.PARSERS, "yaml", recording)
    await load_sources([DATA / "samples.yaml"])

    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


@pytest.mark.parametrize("name", ["S.YAML", "s.Yml", "s.JSON", "s.JSONL", "s.ndjson"])
def test_extensions_are_case_insensitive(in_tmp: Path, name: str) -> None:
    text = (
        '{"name": "a", "parameters": [], "expected-output": "b"}\n'
        if name.lower().endswith(("jsonl", "ndjson"))
        else '[{"name": "a", "parameters": [], "expected-output": "b"}]'
    )
    (in_tmp / name).write_text(text)

    assert _details(Samples.load_sync(name)) == [("a", Parameters(), "b", (), {})]


def test_yaml_uses_yaml_1_1_scalars_and_keeps_non_string_values(in_tmp: Path) -> None:
    (in_tmp / "s.yaml").write_text(
        "- name: s\n  parameters: [1, yes, null]\n  expected-output: 42\n  tags: []\n"
    )

    (sample,) = Samples.load_sync("s.yaml")

    assert sample.parameters.values == (1, True, None)
    assert sample.expected_output == 42


def test_empty_list_gives_no_samples(in_tmp: Path) -> None:
    (in_tmp / "e.yaml").write_text("[]\n")
    (in_tmp / "e.json").write_text("[]")

    assert len(Samples.load_sync("e.yaml")) == 0
    assert len(Samples.load_sync("e.json")) == 0


def test_sources_merge_in_order() -> None:
    samples = Samples.load_sync(DATA / "more.yml", str(DATA / "samples.yaml"))

    assert samples.names == ("extra", *EXPECTED.names)
    assert samples.filter_by_tags("smoke").names == ("extra",)


def test_relative_paths_resolve_against_the_working_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(DATA)

    assert Samples.load_sync("more.yml").names == ("extra",)


JUDGE_ONLY = {
    "j.yaml": "- name: open\n  parameters: [Tell me a joke]\n  tags: [judge]\n"
    "- name: explicit\n  parameters: {q: Hi}\n  expected-output: null\n",
    "j.json": '[{"name": "open", "parameters": ["Tell me a joke"], "tags": ["judge"]},\n'
    ' {"name": "explicit", "parameters": {"q": "Hi"}, "expected-output": null}]',
    "j.jsonl": '{"name": "open", "parameters": ["Tell me a joke"], "tags": ["judge"]}\n'
    '{"name": "explicit", "parameters": {"q": "Hi"}, "expected-output": null}\n',
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(JUDGE_ONLY))
async def test_samples_without_an_expected_output_load_from_every_format(
    in_tmp: Path, name: str
) -> None:
    (in_tmp / name).write_text(JUDGE_ONLY[name])
    expected: list[tuple[Any, ...]] = [
        ("open", Parameters(["Tell me a joke"]), None, ("judge",), {}),
        ("explicit", Parameters({"q": "Hi"}), None, (), {}),
    ]

    assert _details(Samples.load_sync(name)) == expected
    assert _details(await Samples.load(name)) == expected
    if name.endswith(".jsonl"):
        assert _details(Samples([s async for s in Samples.stream(name)])) == expected
    python = EvaluationSample(name="open", parameters=["Tell me a joke"], tags=["judge"])
    assert Samples.load_sync(name)[0] == python


# --- errors --------------------------------------------------------------------------------


def _load_error(source: str, *more: str) -> SampleLoadError:
    with pytest.raises(SampleLoadError) as info:
        load_sources_sync([source, *more])
    return info.value


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("e.yaml", "", "e.yaml: file is empty: expected a list of samples"),
        ("e.yaml", "# only a comment\n", "e.yaml: file is empty: expected a list of samples"),
        ("e.yaml", "---\n", "e.yaml: file is empty: expected a list of samples"),
        ("e.json", " \n", "e.json: file is empty: expected a list of samples"),
        ("e.jsonl", "\n\n", "e.jsonl: file is empty: expected one sample object per line"),
    ],
)
def test_empty_file(in_tmp: Path, name: str, text: str, message: str) -> None:
    (in_tmp / name).write_text(text)

    assert str(_load_error(name)) == message


YAML_FORM = (
    '- name: greeting\n  parameters: ["Hello"]\n  expected-output: "Hi there"\n  tags: [smoke]'
)
JSON_FORM = '[{"name": "greeting", "parameters": ["Hello"], "expected-output": "Hi there"}]'


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "t.yaml",
            "# samples\nname: a\nparameters: [x]\n",
            "t.yaml:2: the top level is a mapping, but it must be a YAML list of samples; "
            f"write it in this form:\n{YAML_FORM}",
        ),
        (
            "t.yaml",
            "just text\n",
            "t.yaml:1: the top level is a string ('just text'), but it must be a YAML list of "
            f"samples; write it in this form:\n{YAML_FORM}",
        ),
        (
            "t.json",
            '\n{"name": "a"}',
            "t.json:2: the top level is a mapping, but it must be a JSON list of samples; "
            f"write it in this form:\n{JSON_FORM}",
        ),
    ],
)
def test_top_level_not_a_list(in_tmp: Path, name: str, text: str, message: str) -> None:
    (in_tmp / name).write_text(text)

    assert str(_load_error(name)) == message


GOOD = "- name: ok\n  parameters: [q]\n  expected-output: a\n"

YAML_CASES = [
    (
        GOOD + "- just a string\n",
        4,
        None,
        "item 2 is a string ('just a string'), not a mapping: each sample is a mapping "
        "with 'name', 'parameters' and 'expected-output'",
    ),
    (
        GOOD + "- parameters: [q]\n  expected-output: a\n",
        4,
        None,
        "item 2 has no 'name': give every sample a unique, non-blank name",
    ),
    (
        GOOD + "- name: '  '\n  parameters: [q]\n  expected-output: a\n",
        4,
        None,
        "item 2 has a blank 'name': give every sample a unique, non-blank name",
    ),
    (
        GOOD + "- name: 12\n  parameters: [q]\n  expected-output: a\n",
        4,
        None,
        "item 2 has a 'name' that is a number (12): write the name as a string, e.g. name: \"12\"",
    ),
    (
        GOOD + "- name: s\n  parameter: [q]\n  expected-output: a\n",
        4,
        "s",
        "no 'parameters' (found 'parameter': the key is spelled 'parameters'): add a list "
        'of values (parameters: ["..."]) or a mapping of named values',
    ),
    (
        GOOD + "- name: s\n  expected-output: a\n\n  parameters: q\n",
        7,
        "s",
        "'parameters' must be a list (unnamed values) or a mapping (named values), got a "
        "string ('q'): write parameters: [\"...\"] (or [] for none)",
    ),
    (
        GOOD + "- name: s\n  parameters: {1: q}\n  expected-output: a\n",
        5,
        "s",
        "parameter names must be strings, got a number (1): quote the name",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected_output: a\n",
        4,
        "s",
        "no expected output (found 'expected_output': the key is spelled 'expected-output'): "
        "add 'expected-output' (one value) or 'expected-outputs' (a list of values)",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected-output: a\n  expected-outputs: [a]\n",
        7,
        "s",
        "has both 'expected-output' and 'expected-outputs': use one of them, not both",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected-outputs: a\n",
        6,
        "s",
        "'expected-outputs' must be a list, got a string ('a'): write "
        "expected-outputs: [\"...\"], or use 'expected-output' for a single value",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected-output: a\n  tags: smoke\n",
        7,
        "s",
        "'tags' must be a list of strings, got a string ('smoke'): write tags: [\"smoke\"]",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected-output: a\n  tags: [a, 3]\n",
        7,
        "s",
        "'tags' must be a list of strings, but tag 2 is a number (3): quote it, e.g. \"3\"",
    ),
    (
        GOOD + "- name: s\n  parameters: [q]\n  expected-output: a\n  metadata: [1]\n",
        7,
        "s",
        "'metadata' must be a mapping, got a list: write metadata: {key: value}",
    ),
]


@pytest.mark.parametrize(("text", "line", "sample", "reason"), YAML_CASES)
def test_invalid_yaml_sample(
    in_tmp: Path, text: str, line: int, sample: str | None, reason: str
) -> None:
    (in_tmp / "bad.yaml").write_text(text)

    error = _load_error("bad.yaml")

    where = f"bad.yaml:{line}" + (f", sample {sample!r}" if sample else "")
    assert str(error) == f"{where}: {reason}"
    assert (error.source, error.line, error.sample, error.reason) == (
        "bad.yaml",
        line,
        sample,
        reason,
    )


def test_invalid_json_sample_names_the_item_line(in_tmp: Path) -> None:
    (in_tmp / "bad.json").write_text(
        '[\n  {"name": "ok", "parameters": [], "expected-output": "a"},\n'
        '  {"name": "a", "parameters": [1, [2, {"x": "]"}]], "expected-output": "b"},\n\n'
        '  {"name": "s",\n   "parameters": "q", "expected-output": "a"}\n]'
    )

    assert str(_load_error("bad.json")) == (
        "bad.json:5, sample 's': 'parameters' must be a list (unnamed values) or a mapping "
        "(named values), got a string ('q'): write parameters: [\"...\"] (or [] for none)"
    )


def test_invalid_jsonl_sample_names_its_line(in_tmp: Path) -> None:
    (in_tmp / "bad.jsonl").write_text(
        '{"name": "ok", "parameters": [], "expected-output": "a"}\n\n["not", "a", "sample"]\n'
    )

    assert str(_load_error("bad.jsonl")) == (
        "bad.jsonl:3: the line is a list, not a mapping: each sample is a mapping with "
        "'name', 'parameters' and 'expected-output'"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "syn.yaml",
            "- name: a\n  parameters: [1\n  expected-output: b\n",
            "syn.yaml:3: invalid YAML at line 3, column 18: did not find expected ',' or ']' "
            "(while parsing a flow sequence at line 2, column 15); fix the syntax there",
        ),
        (
            "two.yaml",
            "- name: a\n---\n- name: b\n",
            "two.yaml:2: invalid YAML at line 2, column 1: but found another document "
            "(expected a single document in the stream at line 1, column 1); "
            "fix the syntax there",
        ),
        (
            "syn.json",
            '[\n  {"name": "a",,}\n]',
            "syn.json:2: invalid JSON at line 2, column 16: unexpected character, expected "
            "a string key; fix the syntax there",
        ),
        (
            "syn.jsonl",
            '{"name": "a", "parameters": [], "expected-output": "b"}\n{"name": }\n',
            "syn.jsonl:2: invalid JSON at column 10: unexpected character, expected a JSON "
            "value; write one sample object per line",
        ),
    ],
)
def test_syntax_errors_give_line_and_column(
    in_tmp: Path, name: str, text: str, message: str
) -> None:
    (in_tmp / name).write_text(text)

    error = _load_error(name)

    assert str(error) == message
    assert error.__cause__ is not None


def test_non_utf8_file(in_tmp: Path) -> None:
    (in_tmp / "latin.yaml").write_bytes(b"- name: a\n  parameters: [caf\xe9]\n")

    assert str(_load_error("latin.yaml")) == (
        "latin.yaml:2: the file is not UTF-8 text (invalid byte 0xE9 at column 19, byte "
        "offset 28): save it as UTF-8"
    )


NOT_UTF8 = {
    "latin.yaml": b'\xef\xbb\xbf- name: ok\n  parameters: ["caf\xc3\xa9 cr\xe8me"]\n',
    "latin.json": b'\xef\xbb\xbf[\n  {"name": "ok", "parameters": ["caf\xc3\xa9 cr\xe8me"]}\n]',
    "latin.jsonl": b'\xef\xbb\xbf{"name": "ok", "parameters": [], "expected-output": "a"}\n'
    b'{"name": "b", "parameters": ["caf\xc3\xa9 cr\xe8me"]}\n',
}
NOT_UTF8_AT = {
    "latin.yaml": "latin.yaml:2: the file is not UTF-8 text (invalid byte 0xE8 at column 24, "
    "byte offset 38): save it as UTF-8",
    "latin.json": "latin.json:2: the file is not UTF-8 text (invalid byte 0xE8 at column 41, "
    "byte offset 46): save it as UTF-8",
    "latin.jsonl": "latin.jsonl:2: the file is not UTF-8 text (invalid byte 0xE8 at column 38, "
    "byte offset 98): save it as UTF-8",
}


@pytest.mark.parametrize("name", list(NOT_UTF8))
def test_a_non_utf8_byte_is_located_by_line_column_and_byte_offset(in_tmp: Path, name: str) -> None:
    data = NOT_UTF8[name]
    (in_tmp / name).write_bytes(data)

    error = _load_error(name)

    assert str(error) == NOT_UTF8_AT[name]
    offset = int(str(error).rsplit("byte offset ", 1)[1].split(")")[0])
    assert data[offset] == 0xE8


@pytest.mark.anyio
@pytest.mark.parametrize("chunk_size", [5, 64 * 1024])
async def test_a_streamed_non_utf8_byte_is_located_too(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, chunk_size: int
) -> None:
    monkeypatch.setattr(_loaders, "_CHUNK_SIZE", chunk_size)
    (in_tmp / "latin.jsonl").write_bytes(NOT_UTF8["latin.jsonl"])

    with pytest.raises(SampleLoadError) as info:
        async for _ in stream_jsonl("latin.jsonl"):
            pass

    assert str(info.value) == NOT_UTF8_AT["latin.jsonl"]


def test_duplicate_names_within_a_file(in_tmp: Path) -> None:
    (in_tmp / "d.yaml").write_text(
        GOOD + "- name: x\n  parameters: []\n  expected-output: y\n" + GOOD
    )

    error = _load_error("d.yaml")

    assert str(error) == (
        "d.yaml:7, sample 'ok': duplicate name, first defined at d.yaml:1; "
        "give each sample its own name"
    )


@pytest.mark.anyio
async def test_duplicate_names_across_sources_name_both_files(in_tmp: Path) -> None:
    (in_tmp / "a.yaml").write_text("# a\n" + GOOD)
    (in_tmp / "b.json").write_text(
        '[{"name": "x", "parameters": [], "expected-output": "y"},\n'
        ' {"name": "ok", "parameters": [], "expected-output": "y"}]'
    )

    with pytest.raises(SampleLoadError) as info:
        await load_sources(["a.yaml", "b.json"])

    assert str(info.value) == (
        "b.json:2, sample 'ok': duplicate name, first defined at a.yaml:2; "
        "give each sample its own name"
    )


@pytest.mark.anyio
async def test_missing_file_is_a_file_not_found_error(in_tmp: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        await Samples.load("nope/missing.yaml")

    error = info.value
    assert isinstance(error, SampleFileNotFoundError)
    assert isinstance(error, SampleLoadError)
    assert error.filename == "nope/missing.yaml"
    assert error.args[0] == (
        f"nope/missing.yaml: file not found (resolved to {in_tmp / 'nope' / 'missing.yaml'}; "
        "relative paths start at the working directory): check the path"
    )


def test_directory_is_not_a_sample_file(in_tmp: Path) -> None:
    (in_tmp / "dir.yaml").mkdir()

    assert str(_load_error("dir.yaml")) == (
        "dir.yaml: is a directory, not a sample file: give the path of a .yaml, .json or "
        ".jsonl file"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("source", ["", "   ", "\t\n"])
async def test_blank_source_is_rejected(source: str) -> None:
    with pytest.raises(ValueError, match=r"^Source must not be null or blank$"):
        Samples.load_sync(source)
    with pytest.raises(ValueError, match=r"^Source must not be null or blank$"):
        await Samples.load(str(DATA / "more.yml"), source)


def test_no_source_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"^Give at least one sample source"):
        Samples.load_sync()


def test_no_loader_for_source() -> None:
    with pytest.raises(NoLoaderError) as info:
        Samples.load_sync("samples.csv")

    assert str(info.value) == (
        "No sample loader supports source: samples.csv. Available loaders: "
        "[YamlSampleLoader, JsonSampleLoader, JsonlSampleLoader, HttpSampleLoader]. "
        "Use a .yaml/.yml, .json or .jsonl/.ndjson file or an http(s) URL, or register a "
        "loader with register_loader()"
    )
    assert info.value.source == "samples.csv"


@pytest.mark.anyio
async def test_a_file_url_asks_for_a_plain_path(in_tmp: Path) -> None:
    (in_tmp / "my samples.jsonl").write_text('{"name": "a", "parameters": []}\n')
    path = in_tmp / "my samples.jsonl"
    url = path.as_uri()
    message = f"{url}: a file:// URL is not a sample source: use a plain path ({path})"

    with pytest.raises(NoLoaderError) as info:
        Samples.load_sync(url)
    assert str(info.value) == message
    assert info.value.source == url
    with pytest.raises(NoLoaderError) as info:
        await Samples.load(url)
    assert str(info.value) == message
    with pytest.raises(SampleLoadError) as caught:
        async for _ in Samples.stream(url):
            pass
    assert str(caught.value) == message


def test_other_schemes_are_not_read_as_relative_paths() -> None:
    with pytest.raises(NoLoaderError) as info:
        Samples.load_sync("s3://bucket/samples.yaml")

    assert str(info.value).startswith("No sample loader supports source: s3://bucket/samples.yaml.")


def test_a_registered_loader_may_take_file_urls() -> None:
    loader = MemoryLoader("file://")
    register_loader(loader)

    (sample,) = Samples.load_sync("file:///data/s.yaml")

    assert sample.name == "MemoryLoader:file:///data/s.yaml"


# --- registry ------------------------------------------------------------------------------


class MemoryLoader:
    def __init__(self, prefix: str = "mem:", *, priority: int = 0) -> None:
        self.prefix = prefix
        self.priority = priority
        self.threads: list[int] = []

    def supports(self, source: str) -> bool:
        return source.startswith(self.prefix)

    def load(self, source: str) -> list[EvaluationSample]:
        self.threads.append(threading.get_ident())
        return [EvaluationSample(f"{type(self).__name__}:{source}", ["q"], "a")]


class OtherLoader(MemoryLoader):
    pass


class YamlOverride(MemoryLoader):
    def supports(self, source: str) -> bool:
        return source.endswith(".yaml")


def test_registered_loader_is_a_sample_loader() -> None:
    loader = MemoryLoader()
    assert isinstance(loader, SampleLoader)

    register_loader(loader)

    assert registered_loaders()[-1] is loader
    assert Samples.load_sync("mem:one").names == ("MemoryLoader:mem:one",)
    assert unregister_loader(loader) is True
    assert unregister_loader(loader) is False
    with pytest.raises(NoLoaderError):
        Samples.load_sync("mem:one")


def test_register_rejects_non_loaders() -> None:
    with pytest.raises(TypeError, match="needs supports\\(source\\) and load\\(source\\)"):
        register_loader(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Loader priority must be an int, got 'high'"):
        register_loader(MemoryLoader(), priority="high")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_custom_loader_runs_in_a_worker_thread() -> None:
    loader = MemoryLoader()
    register_loader(loader)

    samples = await Samples.load("mem:x")

    assert samples.names == ("MemoryLoader:mem:x",)
    assert loader.threads and loader.threads[0] != threading.get_ident()


def test_priority_decides_and_ties_keep_registration_order() -> None:
    low, other = MemoryLoader(), OtherLoader()
    register_loader(low)
    register_loader(other)
    assert Samples.load_sync("mem:a").names == ("MemoryLoader:mem:a",)

    register_loader(other, priority=5)
    assert Samples.load_sync("mem:a").names == ("OtherLoader:mem:a",)


def test_builtin_wins_a_tie_and_a_higher_priority_overrides_it() -> None:
    register_loader(YamlOverride())
    assert Samples.load_sync(str(DATA / "samples.yaml")).names == EXPECTED.names

    register_loader(YamlOverride(priority=1))
    assert Samples.load_sync("x.yaml").names == ("YamlOverride:x.yaml",)


def test_custom_loader_errors_are_wrapped_with_cause() -> None:
    class BrokenLoader:
        def supports(self, source: str) -> bool:
            return source.startswith("broken:")

        def load(self, source: str) -> list[EvaluationSample]:
            raise RuntimeError("database is down")

    register_loader(BrokenLoader(), priority=1)

    error = _load_error("broken:x")

    assert str(error) == (
        "Failed to load samples from broken:x using BrokenLoader: RuntimeError: database is down"
    )
    assert error.source == "broken:x"
    assert isinstance(error.__cause__, RuntimeError)


def test_custom_loader_aeval_errors_pass_through_unchanged() -> None:
    original = SampleLoadError("row 3 has no question", source="sheet:1", line=3)

    class StrictLoader:
        def supports(self, source: str) -> bool:
            return source.startswith("sheet:")

        def load(self, source: str) -> list[EvaluationSample]:
            raise original

    register_loader(StrictLoader())

    assert _load_error("sheet:1") is original


def test_custom_loader_must_return_samples() -> None:
    class SloppyLoader:
        def supports(self, source: str) -> bool:
            return source.startswith("sloppy:")

        def load(self, source: str) -> list[Any]:
            return [EvaluationSample("a", [], "b"), {"name": "c"}]

    register_loader(SloppyLoader())

    assert str(_load_error("sloppy:x")) == (
        "sloppy:x: SloppyLoader.load() returned a mapping at position 2: a loader returns "
        "EvaluationSample objects"
    )


def test_custom_loader_duplicates_name_both_sources() -> None:
    register_loader(MemoryLoader())

    assert str(_load_error("mem:a", "mem:a")) == (
        "mem:a, sample 'MemoryLoader:mem:a': duplicate name, first defined at mem:a; "
        "give each sample its own name"
    )


def test_keyboard_interrupt_in_a_loader_is_not_wrapped() -> None:
    class InterruptedLoader:
        def supports(self, source: str) -> bool:
            return source == "stop"

        def load(self, source: str) -> list[EvaluationSample]:
            raise KeyboardInterrupt

    register_loader(InterruptedLoader())

    with pytest.raises(KeyboardInterrupt):
        Samples.load_sync("stop")


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "aeval_test_plugin.py").write_text(
        "from aeval._samples import EvaluationSample\n\n"
        "class PluginLoader:\n"
        "    priority = 3\n"
        "    def supports(self, source):\n"
        "        return source.startswith('plugin:')\n"
        "    def load(self, source):\n"
        "        return [EvaluationSample('from-plugin', [source], 'ok')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "aeval_test_plugin", raising=False)
    return "aeval_test_plugin"


def test_entry_point_loaders_are_loaded_lazily_once(
    plugin_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        calls.append(group)
        return [
            importlib.metadata.EntryPoint(
                name="plugin", value=f"{plugin_module}:PluginLoader", group=group
            )
        ]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(_loaders._REGISTRY, "_entry_points_loaded", False)

    assert calls == []
    assert _details(Samples.load_sync("plugin:a")) == [
        ("from-plugin", Parameters(["plugin:a"]), "ok", (), {})
    ]
    assert Samples.load_sync("plugin:b").names == ("from-plugin",)
    assert calls == ["aeval.loaders"]
    assert type(registered_loaders()[0]).__name__ == "PluginLoader"


def test_broken_entry_point_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = importlib.metadata.EntryPoint(
        name="broken", value="aeval_no_such_module:Loader", group="aeval.loaders"
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda *, group: [broken])
    monkeypatch.setattr(_loaders._REGISTRY, "_entry_points_loaded", False)

    for _ in range(2):
        error = _load_error(str(DATA / "more.yml"))
        assert str(error) == (
            "Failed to load the sample loader entry point 'broken' "
            "(aeval_no_such_module:Loader) of group 'aeval.loaders': ModuleNotFoundError: "
            "No module named 'aeval_no_such_module'; fix or uninstall the package that "
            "declares it"
        )
        assert isinstance(error.__cause__, ModuleNotFoundError)


# --- unknown keys --------------------------------------------------------------------------

KNOWN = (
    "a sample has only the keys name, parameters, expected-output, expected-outputs, tags, "
    "metadata, label, must-contain, must-not-contain, expected-tools, forbidden-tools, "
    "expected-tool-arguments, tools, expected-calls, expected-calls-order, functions, context, "
    "relevant-ids, turns, user"
)
CUSTOM = "or put custom fields under 'metadata:' (metadata: {owner: support})"


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("tag", " (did you mean 'tags'?)"),
        ("lable", " (did you mean 'label'?)"),
        ("mustContain", " (did you mean 'must-contain'?)"),
        ("must_not_contain", " (did you mean 'must-not-contain'?)"),
        ("expectedOutputs", " (did you mean 'expected-outputs'?)"),
        ("Metadata", " (did you mean 'metadata'?)"),
        ("owner", ""),
    ],
)
def test_an_unknown_sample_key_is_refused_with_its_line_and_a_suggestion(
    in_tmp: Path, key: str, hint: str
) -> None:
    (in_tmp / "s.yaml").write_text(
        GOOD + f"- name: Refund\n  parameters: [q]\n  expected-output: a\n  {key}: [x]\n"
    )

    error = _load_error("s.yaml")

    assert str(error) == (
        f"s.yaml:7, sample 'Refund': unknown key '{key}'{hint}: {KNOWN}; rename it, {CUSTOM}"
    )
    assert (error.source, error.line, error.sample) == ("s.yaml", 7, "Refund")


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        (
            "s.json",
            '[\n  {"name": "ok", "parameters": []},\n'
            '  {"name": "Refund", "parameters": [], "tag": ["billing"], "lable": "fail"}\n]\n',
            3,
        ),
        (
            "s.jsonl",
            '{"name": "ok", "parameters": []}\n\n'
            '{"name": "Refund", "parameters": [], "tag": ["billing"], "lable": "fail"}\n',
            3,
        ),
    ],
)
def test_unknown_keys_are_refused_in_json_and_jsonl(
    in_tmp: Path, name: str, text: str, line: int
) -> None:
    (in_tmp / name).write_text(text)

    error = _load_error(name)

    assert str(error) == (
        f"{name}:{line}, sample 'Refund': unknown keys 'tag' (did you mean 'tags'?) and "
        f"'lable' (did you mean 'label'?): {KNOWN}; rename them, {CUSTOM}"
    )


@pytest.mark.anyio
async def test_a_streamed_jsonl_line_with_an_unknown_key_is_refused(in_tmp: Path) -> None:
    (in_tmp / "s.jsonl").write_text(
        '{"name": "ok", "parameters": []}\n{"name": "b", "parameters": [], "mustContain": "x"}\n'
    )

    with pytest.raises(SampleLoadError) as info:
        async for _ in Samples.stream("s.jsonl"):
            pass

    assert str(info.value).startswith(
        "s.jsonl:2, sample 'b': unknown key 'mustContain' (did you mean 'must-contain'?)"
    )


def test_a_non_string_key_is_refused(in_tmp: Path) -> None:
    (in_tmp / "s.yaml").write_text(GOOD + "  1: one\n")

    assert str(_load_error("s.yaml")).startswith(
        "s.yaml:1, sample 'ok': unknown key a number (1): "
    )


# --- limits --------------------------------------------------------------------------------

LAUGHS = "\n".join(
    [
        'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)),
    ]
)


def test_a_yaml_alias_bomb_is_refused_at_the_alias_that_passes_the_limit(in_tmp: Path) -> None:
    text = f"- name: laughs\n  parameters:\n    - {{{LAUGHS.replace(chr(10), ', ')}}}\n"
    text += "  expected-output: a\n"
    assert len(text) < 1024
    (in_tmp / "bomb.yaml").write_text(text)

    error = _load_error("bomb.yaml")

    assert error.line == 3
    assert str(error).startswith(
        "bomb.yaml:3: YAML aliases expand the document by more than 1,000,000 nodes (passed at "
        "the alias *a5, line 3, column "
    )
    assert str(error).endswith(
        "): write the repeated values out, or nest fewer aliases inside aliases"
    )


def test_aliases_of_a_long_text_are_weighed_by_the_text_they_add(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_limits, "MAX_YAML_ALIAS_TEXT", 1_000)
    long = "x" * 300
    text = f"- name: s0\n  parameters: [&long {long}]\n  expected-output: a\n"
    text += "".join(
        f"- name: s{i}\n  parameters: [*long]\n  expected-output: a\n" for i in range(1, 5)
    )
    (in_tmp / "shared.yaml").write_text(text)

    error = _load_error("shared.yaml")

    assert str(error) == (
        "shared.yaml:14: YAML aliases expand the document by more than 1,000 characters of "
        "text (passed at the alias *long, line 14, column 16, which repeats 300): use the "
        "long text fewer times, or keep it in a file the function under test reads"
    )
    assert (error.source, error.line) == ("shared.yaml", 14)
    (in_tmp / "fewer.yaml").write_text(text.rsplit("- name: s4", 1)[0])
    assert len(Samples.load_sync("fewer.yaml")) == 4


def test_aliases_of_a_collection_count_the_text_inside_it(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_limits, "MAX_YAML_ALIAS_TEXT", 1_000)
    text = f"- name: s0\n  parameters: &p [{'a' * 200}, [{'b' * 200}]]\n  expected-output: a\n"
    text += "- name: s1\n  parameters: &q [*p, *p]\n  expected-output: a\n"
    text += "- name: s2\n  parameters: *q\n  expected-output: a\n"
    (in_tmp / "nested.yaml").write_text(text)

    error = _load_error("nested.yaml")

    assert error.line == 8
    assert "more than 1,000 characters of text (passed at the alias *q" in str(error)
    assert "which repeats 800)" in str(error)


def test_a_recursive_yaml_alias_is_refused(in_tmp: Path) -> None:
    (in_tmp / "loop.yaml").write_text(
        GOOD + "- name: loop\n  parameters: &p\n    - a\n    - *p\n  expected-output: a\n"
    )

    assert str(_load_error("loop.yaml")) == (
        "loop.yaml:7: the alias *p (line 7, column 7) refers to a collection that contains "
        "it: recursive data cannot be evaluated; remove the alias"
    )


def test_yaml_aliases_within_the_limits_load(in_tmp: Path) -> None:
    (in_tmp / "shared.yaml").write_text(
        "- name: a\n  parameters: &question [q, {lang: en}]\n  expected-output: x\n"
        "  metadata: &meta {owner: support}\n"
        "- name: b\n  parameters: *question\n  expected-output: y\n  metadata: *meta\n"
    )

    a, b = Samples.load_sync("shared.yaml")

    assert b.parameters == a.parameters == Parameters(["q", {"lang": "en"}])
    assert dict(b.metadata) == {"owner": "support"}


def _nested(depth: int, *, flow: bool) -> str:
    """A sample whose single parameter nests lists so that the file has ``depth`` levels."""
    inner = depth - 3  # the list of samples, the sample mapping and 'parameters'
    if flow:
        value = "[" * inner + "1" + "]" * inner
        return f"- name: deep\n  parameters: [{value}]\n  expected-output: a\n"
    value = "".join(f"{'  ' * (level + 2)}- \n" for level in range(inner))[:-2]
    value += f"{'  ' * (inner + 2)}- 1\n"
    return f"- name: deep\n  parameters:\n{value}  expected-output: a\n"


@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_yaml_nesting_at_the_limit_loads(in_tmp: Path, flow: bool) -> None:
    (in_tmp / "deep.yaml").write_text(_nested(_limits.MAX_NESTING_DEPTH, flow=flow))

    (sample,) = Samples.load_sync("deep.yaml")

    value = sample.parameters[0]
    for _ in range(_limits.MAX_NESTING_DEPTH - 4):
        (value,) = value
    assert value == [1]


@pytest.mark.parametrize(
    ("depth", "flow"),
    [(101, True), (101, False), (5_000, True), (200_000, True)],
    ids=["101-flow", "101-block", "5000-flow", "200000-flow"],
)
def test_yaml_nesting_beyond_the_limit_is_refused(in_tmp: Path, depth: int, flow: bool) -> None:
    (in_tmp / "deep.yaml").write_text(_nested(depth, flow=flow))

    error = _load_error("deep.yaml")

    line = 2 if flow else 100
    assert error.line == line
    assert str(error).startswith(
        f"deep.yaml:{line}: the document nests deeper than 100 levels of lists and mappings "
        f"(line {line}, column "
    )
    assert str(error).endswith("): flatten the data; aeval reads at most 100 levels")


class _LoaderWithItsOwnLimit(yaml.SafeLoader):
    """A YAML loader that, like libyaml 0.2.5 under PyYAML 6.0.4, refuses deep flow nesting
    with a limit and words of its own while it scans, before it gives a single event."""

    def get_event(self) -> Any:
        if "[" * 150 in self.buffer:
            raise yaml.scanner.ScannerError(
                "while increasing flow level", None, "the loader's own nesting limit", None
            )
        return super().get_event()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("depth", [101, 5_000])
def test_yaml_nesting_is_refused_in_aevals_words_whichever_limit_fires_first(
    in_tmp: Path, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sample_formats, "_yaml_loader", lambda: _LoaderWithItsOwnLimit)
    (in_tmp / "deep.yaml").write_text(_nested(depth, flow=True))

    assert str(_load_error("deep.yaml")).startswith(
        "deep.yaml:2: the document nests deeper than 100 levels of lists and mappings "
        "(line 2, column "
    )


def test_yaml_nesting_through_an_alias_is_refused(in_tmp: Path) -> None:
    deep = "[" * 98 + "1" + "]" * 98
    (in_tmp / "deep.yaml").write_text(
        f"- name: a\n  parameters: [x]\n  expected-output: &deep {deep}\n"
        "- name: b\n  parameters: [[*deep]]\n  expected-output: a\n"
    )

    assert str(_load_error("deep.yaml")) == (
        "deep.yaml:5: the document nests deeper than 100 levels of lists and mappings (through "
        "the alias at line 5, column 17): flatten the data; aeval reads at most 100 levels"
    )


def _deep_json(levels: int) -> str:
    """A sample object nesting ``levels`` levels: itself, 'parameters' and lists inside."""
    inner = "[" * (levels - 1) + "]" * (levels - 1)
    return f'{{"name": "deep", "parameters": {inner}, "expected-output": "a"}}'


@pytest.mark.parametrize("depth", [101, 1_100])
def test_json_nesting_beyond_the_limit_is_refused(in_tmp: Path, depth: int) -> None:
    good = '{"name": "ok", "parameters": [], "expected-output": "a"}'
    (in_tmp / "deep.json").write_text(f"[\n{good},\n{_deep_json(depth - 1)}\n]")

    error = _load_error("deep.json")

    subject, where = ("item 2", "") if depth == 101 else ("the document", " (line 3, column 1055)")
    assert str(error) == (
        f"deep.json:3: {subject} nests deeper than 100 levels of lists and mappings{where}: "
        "flatten the data; aeval reads at most 100 levels"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [101, 1_100])
async def test_jsonl_nesting_beyond_the_limit_is_refused(in_tmp: Path, depth: int) -> None:
    good = '{"name": "ok", "parameters": [], "expected-output": "a"}'
    (in_tmp / "deep.jsonl").write_text(f"{good}\n{_deep_json(depth)}\n")
    where = "" if depth == 101 else " (column 1056)"
    message = (
        f"deep.jsonl:2: the line nests deeper than 100 levels of lists and mappings{where}: "
        "flatten the data; aeval reads at most 100 levels"
    )

    assert str(_load_error("deep.jsonl")) == message
    with pytest.raises(SampleLoadError) as info:
        async for _ in stream_jsonl("deep.jsonl"):
            pass
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["ok.json", "ok.jsonl"])
def test_json_nesting_at_the_limit_loads(in_tmp: Path, name: str) -> None:
    if name == "ok.json":
        text = f"[{_deep_json(_limits.MAX_NESTING_DEPTH - 1)}]"
    else:
        text = _deep_json(_limits.MAX_NESTING_DEPTH)
    (in_tmp / name).write_text(text)

    (sample,) = Samples.load_sync(name)

    assert sample.name == "deep"


# --- URLs ----------------------------------------------------------------------------------

ROUTES = {
    "/samples.yaml": HTTPReply.text((DATA / "samples.yaml").read_bytes()),
    "/api/samples?v=1": HTTPReply.text(
        (DATA / "samples.json").read_bytes(), content_type="application/json; charset=utf-8"
    ),
    "/api/stream": HTTPReply.text(
        (DATA / "samples.jsonl").read_bytes(), content_type="application/x-ndjson"
    ),
    "/page": HTTPReply.text(b"<html></html>", content_type="text/html"),
    "/bad.json": HTTPReply.text(b'[{"name": "a"}]', content_type="application/json"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with ScriptedHTTPServer(ROUTES) as scripted:
        yield scripted.url


@pytest.mark.anyio
async def test_url_with_yaml_extension(server: str) -> None:
    samples = await Samples.load(f"{server}/samples.yaml")

    assert _details(samples) == _details(EXPECTED)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/api/samples?v=1", "/api/stream"])
async def test_url_format_from_content_type(server: str, path: str) -> None:
    assert _details(await Samples.load(server + path)) == _details(EXPECTED)


@pytest.mark.parametrize("path", ["/samples.yaml", "/api/samples?v=1"])
def test_url_sync(server: str, path: str) -> None:
    assert _details(Samples.load_sync(server + path)) == _details(EXPECTED)


@pytest.mark.anyio
async def test_url_http_error(server: str) -> None:
    url = f"{server}/missing.yaml"
    with pytest.raises(SampleLoadError) as info:
        await Samples.load(url)

    assert str(info.value) == (
        f"{url}: HTTP 404 Not Found: check the URL and that the server serves the sample file"
    )
    with pytest.raises(SampleLoadError, match="HTTP 404 Not Found"):
        Samples.load_sync(url)


@pytest.mark.anyio
async def test_url_unknown_format(server: str) -> None:
    with pytest.raises(SampleLoadError) as info:
        await Samples.load(f"{server}/page")

    assert str(info.value) == (
        f"{server}/page: cannot tell the format: the URL path has no .yaml/.yml, .json or "
        ".jsonl/.ndjson extension and the content-type is 'text/html'; use such an "
        "extension or serve application/yaml, application/json or application/x-ndjson"
    )


@pytest.mark.anyio
async def test_url_content_errors_name_the_url(server: str) -> None:
    with pytest.raises(SampleLoadError) as info:
        await Samples.load(f"{server}/bad.json")

    assert str(info.value) == (
        f"{server}/bad.json:1, sample 'a': no 'parameters': add a list of values "
        '(parameters: ["..."]) or a mapping of named values'
    )


@pytest.mark.anyio
async def test_url_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/s.yaml"

    with pytest.raises(SampleLoadError) as info:
        await Samples.load(url)

    assert str(info.value).startswith(f"{url}: could not fetch the samples (ConnectError: ")
    assert str(info.value).endswith("): check the URL and that the server is reachable")


# --- streaming -----------------------------------------------------------------------------


@pytest.fixture
def opened_files(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    files: list[Any] = []
    real_open = anyio.open_file

    async def spy(*args: Any, **kwargs: Any) -> Any:
        file = await real_open(*args, **kwargs)
        files.append(file.wrapped)
        return file

    monkeypatch.setattr(anyio, "open_file", spy)
    return files


@pytest.mark.anyio
@pytest.mark.parametrize("chunk_size", [7, 64 * 1024])
async def test_stream_yields_every_sample(
    monkeypatch: pytest.MonkeyPatch, opened_files: list[Any], chunk_size: int
) -> None:
    monkeypatch.setattr(_loaders, "_CHUNK_SIZE", chunk_size)

    streamed = [sample async for sample in Samples.stream(DATA / "samples.jsonl")]

    assert _details(Samples(streamed)) == _details(EXPECTED)
    assert opened_files[0].closed


@pytest.mark.anyio
async def test_stream_reads_lazily_and_closes_on_early_stop(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, opened_files: list[Any]
) -> None:
    lines = [
        f'{{"name": "s{i}", "parameters": [{i}], "expected-output": "a"}}\n' for i in range(50)
    ]
    (in_tmp / "big.jsonl").write_text("".join(lines))
    monkeypatch.setattr(_loaders, "_CHUNK_SIZE", 128)

    async with contextlib.aclosing(stream_jsonl("big.jsonl")) as stream:
        names = []
        async for sample in stream:
            names.append(sample.name)
            if len(names) == 3:
                file = opened_files[0]
                assert file.tell() <= 256
                break

    assert names == ["s0", "s1", "s2"]
    assert file.closed


@pytest.mark.anyio
async def test_stream_error_names_the_line_after_earlier_samples(in_tmp: Path) -> None:
    (in_tmp / "s.jsonl").write_text(
        '{"name": "a", "parameters": [], "expected-output": "b"}\n\n{"name": "c"\n'
    )
    stream = stream_jsonl("s.jsonl")

    first = await stream.__anext__()
    with pytest.raises(SampleLoadError) as info:
        await stream.__anext__()

    assert first.name == "a"
    assert str(info.value) == (
        "s.jsonl:3: invalid JSON at column 13: unexpected end of data; write one sample "
        "object per line"
    )


@pytest.mark.anyio
async def test_stream_last_line_without_newline_and_crlf(in_tmp: Path) -> None:
    (in_tmp / "s.jsonl").write_bytes(
        b'\xef\xbb\xbf{"name": "a", "parameters": [], "expected-output": "b"}\r\n'
        b'{"name": "c", "parameters": {"k": 1}, "expected-output": "d"}'
    )

    streamed = [s async for s in stream_jsonl(in_tmp / "s.jsonl")]

    assert _details(Samples(streamed)) == [
        ("a", Parameters(), "b", (), {}),
        ("c", Parameters({"k": 1}), "d", (), {}),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "create", "error_type", "message"),
    [
        ("none.jsonl", False, SampleFileNotFoundError, None),
        (
            "e.jsonl",
            True,
            SampleLoadError,
            "e.jsonl: file is empty: expected one sample object per line",
        ),
        (
            "s.yaml",
            True,
            SampleLoadError,
            "s.yaml: Samples.stream() reads local JSONL files (one sample object per line); "
            "load this source with Samples.load()",
        ),
    ],
)
async def test_stream_errors(
    in_tmp: Path, name: str, create: bool, error_type: type[Exception], message: str | None
) -> None:
    if create:
        (in_tmp / name).write_text("\n")

    with pytest.raises(error_type) as info:
        async for _ in stream_jsonl(name):
            pass

    if message is not None:
        assert str(info.value) == message
    else:
        assert isinstance(info.value, FileNotFoundError)
        assert info.value.args[0].startswith("none.jsonl: file not found (resolved to ")


@pytest.mark.anyio
async def test_stream_reads_a_line_longer_than_many_chunks_whole(in_tmp: Path) -> None:
    """A line spread over hundreds of chunks comes back whole (its speed: bench_stream.py)."""
    path = in_tmp / "long.jsonl"
    text = "x" * (4 * 1024 * 1024)
    path.write_text(
        f'{{"name": "long", "parameters": ["{text}"]}}\n{{"name": "short", "parameters": []}}\n'
    )
    samples = [s async for s in stream_jsonl(path)]
    assert [s.name for s in samples] == ["long", "short"]
    assert samples[0].parameters[0] == text


# --- which sources stream (_samples/_sources.py) ------------------------------------------


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


@pytest.mark.anyio
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


def test_the_shortest_line_nesting_too_deep_is_still_counted() -> None:
    """``may_nest_too_deep`` skips counting brackets in lines too short to nest too deeply
    (a valid text opens and closes each level): the shortest line that does still counts."""
    limit = _limits.MAX_NESTING_DEPTH
    shortest = b"[" * (limit + 1) + b"]" * (limit + 1)
    at_the_limit = b"[" * limit + b"]" * limit
    inner = b"[" * (limit - 1) + b"]" * (limit - 1)
    padded = b'{"name": "x", "parameters": ' + inner + b"}" + b" " * 200

    assert len(shortest) == 2 * (limit + 1)
    assert _limits.may_nest_too_deep([b"{}", shortest])
    assert not _limits.may_nest_too_deep([b"{}", at_the_limit, padded])
    assert _limits.may_nest_too_deep([padded, b"[" + shortest + b"]"])
    assert not _limits.may_nest_too_deep([])
