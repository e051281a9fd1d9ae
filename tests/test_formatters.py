from __future__ import annotations

import importlib.metadata
import re
import sys
import types
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from _replay import replayed

from aeval import (
    ErrorInfo,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    FormatError,
    formatters,
)
from aeval.abc import ReportFormatter
from aeval.formatters import (
    check_options,
    get_formatter,
    register_formatter,
    supported_formats,
    unregister_formatter,
)
from aeval.formatters.json import JsonFormatter
from aeval.formatters.markdown import MarkdownFormatter


def passed(
    name: str, index: int, *, output: Any = "ok", expected: Any = "ok", **kw: Any
) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], expected, tags=kw.pop("tags", ()))
    strategy = kw.pop("strategy", "ExactMatch")
    return EvaluationRow.from_result(
        sample, strategy, output, EvaluationResult.passing(kw.pop("score", 1.0)), index=index, **kw
    )


def failed(
    name: str, index: int, *, score: float = 0.0, why: str | None = None, **kw: Any
) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], kw.pop("expected", "ok"), tags=kw.pop("tags", ()))
    return EvaluationRow.from_result(
        sample,
        kw.pop("strategy", "ExactMatch"),
        kw.pop("output", "ko"),
        EvaluationResult.failing(score, why),
        index=index,
        **kw,
    )


def upstream_report() -> EvaluationReport:
    return EvaluationReport(
        [
            passed("Sample1", 0, output="expected1", expected="expected1", tags=["tag1"]),
            failed("Sample2", 1, output="other", expected="expected2", tags=["tag2"]),
        ]
    )


def mixed_report() -> EvaluationReport:
    return EvaluationReport(
        [
            passed("S1", 0, output="a", expected="a", tags=["t1"]),
            failed(
                "S2",
                1,
                score=0.02675,
                why="Too different",
                output="b",
                expected=["x", "y"],
                tags=["t2", "t1"],
            ),
            EvaluationRow.from_result(
                EvaluationSample("S3", ["q"], "c"),
                "Judge",
                "c",
                EvaluationResult.unscored("bad reply"),
                index=2,
            ),
            EvaluationRow.from_error(
                EvaluationSample("S4", ["q"], "d"),
                None,
                None,
                ErrorInfo("ValueError", "boom"),
                index=3,
            ),
            EvaluationRow.from_error(
                EvaluationSample("S5", ["q"], None),
                "Judge",
                42,
                ErrorInfo("TimeoutError", "judge too slow"),
                index=4,
            ),
        ]
    )


# -- markdown ----------------------------------------------------------------------------------


def test_markdown_empty_report_is_exactly_upstream() -> None:
    text = EvaluationReport([]).format("markdown")
    assert text == "# Evaluation Report\n\n**Global Score**: 0.00%\n\n## Details\n\n"
    assert EvaluationReport([]).format("markdown", include_details=False) == text


def test_markdown_summary_mode_upstream_layout() -> None:
    text = upstream_report().format("markdown", include_details=False)
    assert text == (
        "# Evaluation Report\n"
        "\n"
        "**Global Score**: 50.00%\n"
        "(95% CI 9.45–90.55, 2 samples)\n"
        "\n"
        "**Evaluations**: 2 · **Passed**: 1 · **Failed**: 1 · **Unscored**: 0 · **Errors**: 0\n"
        "\n"
        "## Run\n"
        "\n"
        "- **Started**: unknown\n"
        "- **Finished**: unknown\n"
        "- **Duration**: 0.00 s (the calls, summed)\n"
        "- **Samples**: 2\n"
        "- **aeval**: unknown\n"
        "\n"
        "## Score per tags\n"
        "\n"
        "- **tag1**: 100.00% (95% CI 0.00–100.00, 1 sample)\n"
        "- **tag2**: 0.00% (95% CI 0.00–100.00, 1 sample)\n"
        "\n"
        "## Details\n"
        "\n"
        "- Sample2: FAILED (0.00%)\n"
        "- Sample1: PASSED (100.00%)\n"
    )
    assert "#### Result" not in text


def test_markdown_details_is_the_default() -> None:
    text = upstream_report().format("markdown")
    assert text.endswith(
        "## Details\n"
        "\n"
        "### Sample2: FAILED (0.00%)\n"
        "- Strategy: ExactMatch\n"
        "- Tags: tag2\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\nother\n```\n"
        "#### Expected Output\n"
        "```\nexpected2\n```\n"
        "### Sample1: PASSED (100.00%)\n"
        "- Strategy: ExactMatch\n"
        "- Tags: tag1\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\nexpected1\n```\n"
        "#### Expected Output\n"
        "```\nexpected1\n```\n"
    )
    assert "## Score per strategy" not in text


def test_markdown_without_tags_omits_the_tag_block() -> None:
    report = EvaluationReport([passed("A", 0), passed("B", 1)])
    text = MarkdownFormatter().format(report, include_details=False)
    assert "## Score per tags" not in text
    assert text == (
        "# Evaluation Report\n\n**Global Score**: 100.00%\n(95% CI 34.24–100.00, 2 samples)\n\n"
        "**Evaluations**: 2 · **Passed**: 2 · **Failed**: 0 · **Unscored**: 0 · **Errors**: 0\n\n"
        "## Run\n"
        "\n"
        "- **Started**: unknown\n"
        "- **Finished**: unknown\n"
        "- **Duration**: 0.00 s (the calls, summed)\n"
        "- **Samples**: 2\n"
        "- **aeval**: unknown\n"
        "\n"
        "## Details\n\n- A: PASSED (100.00%)\n- B: PASSED (100.00%)\n"
    )


def test_markdown_tags_in_first_appearance_order() -> None:
    report = EvaluationReport(
        [
            passed("A", 0, tags=["zeta", "alpha"]),
            failed("B", 1, tags=["mid", "zeta"]),
        ]
    )
    text = report.format("markdown", include_details=False)
    assert (
        "## Score per tags\n\n"
        "- **zeta**: 50.00% (95% CI 9.45–90.55, 2 samples)\n"
        "- **alpha**: 100.00% (95% CI 0.00–100.00, 1 sample)\n"
        "- **mid**: 0.00% (95% CI 0.00–100.00, 1 sample)\n\n"
    ) in text


def test_markdown_details_with_error_unscored_strategies_and_lists() -> None:
    text = mixed_report().format("markdown")
    assert text == (
        "# Evaluation Report\n"
        "\n"
        "**Global Score**: 20.00%\n"
        "(95% CI 3.62–62.45, 5 samples)\n"
        "\n"
        "**Evaluations**: 5 · **Passed**: 1 · **Failed**: 1 · **Unscored**: 1 · **Errors**: 2"
        " · **Failed calls**: 1 (each gives one error row per strategy)\n"
        "\n"
        "## Run\n"
        "\n"
        "- **Started**: unknown\n"
        "- **Finished**: unknown\n"
        "- **Duration**: 0.00 s (the calls, summed)\n"
        "- **Samples**: 5\n"
        "- **aeval**: unknown\n"
        "\n"
        "## Score per tags\n"
        "\n"
        "- **t1**: 50.00% (95% CI 9.45–90.55, 2 samples)\n"
        "- **t2**: 0.00% (95% CI 0.00–100.00, 1 sample)\n"
        "\n"
        "## Score per strategy\n"
        "\n"
        "| Strategy | Score | 95% CI | Samples | Rows | Passed | Failed | Unscored | Skipped"
        " | Errors |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        "| ExactMatch | 50.00% | 9.45–90.55 | 2 | 2 | 1 | 1 | 0 | 0 | 0 |\n"
        "| Judge | 0.00% | 0.00–65.76 | 2 | 2 | 0 | 0 | 1 | 0 | 1 |\n"
        "\n"
        "## Details\n"
        "\n"
        "### S2: FAILED (2.68%)\n"
        "- Strategy: ExactMatch\n"
        "- Tags: t2, t1\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\nb\n```\n"
        "#### Expected Output\n"
        "```\n[x, y]\n```\n"
        "#### Explanation\n"
        "```\nToo different\n```\n"
        "### S3: UNSCORED (unscored)\n"
        "- Strategy: Judge\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\nc\n```\n"
        "#### Expected Output\n"
        "```\nc\n```\n"
        "#### Explanation\n"
        "```\nbad reply\n```\n"
        "### S4: ERROR (0.00%)\n"
        "- The call failed.\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\nnull\n```\n"
        "#### Expected Output\n"
        "```\nd\n```\n"
        "#### Explanation\n"
        "```\nFailed to execute sample 'S4': ValueError: boom\n```\n"
        "#### Error\n"
        "```\nValueError: boom\n```\n"
        "### S5: ERROR (0.00%)\n"
        "- Strategy: Judge\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\n42\n```\n"
        "#### Expected Output\n"
        "```\nnull\n```\n"
        "#### Error\n"
        "```\nTimeoutError: judge too slow\n```\n"
        "### S1: PASSED (100.00%)\n"
        "- Strategy: ExactMatch\n"
        "- Tags: t1\n"
        "#### Inputs\n"
        "```\n[q]\n```\n"
        "#### Result\n"
        "```\na\n```\n"
        "#### Expected Output\n"
        "```\na\n```\n"
    )


def test_markdown_summary_labels_every_outcome() -> None:
    text = mixed_report().format("markdown", include_details=False)
    assert text.endswith(
        "- S2: FAILED (2.68%) · ExactMatch\n"
        "- S3: UNSCORED (unscored) · Judge\n"
        "- S4: ERROR (0.00%)\n"
        "- S5: ERROR (0.00%) · Judge\n"
        "- S1: PASSED (100.00%) · ExactMatch\n"
    )


def test_markdown_global_score_rounds_half_up() -> None:
    rows = [passed("P", 0)] + [failed(f"F{i}", i + 1) for i in range(31)]
    report = EvaluationReport(rows)
    assert report.score == 3.125
    assert format(report.score, ".2f") == "3.12"
    assert "**Global Score**: 3.13%\n" in report.format("markdown")


def test_markdown_nested_lists_render_java_style() -> None:
    report = EvaluationReport([passed("L", 0, output=["a", ["b", None]], expected=("x",))])
    text = report.format("markdown")
    assert "#### Result\n```\n[a, [b, null]]\n```\n#### Expected Output\n```\n[x]\n```\n" in text


def test_markdown_notes_a_report_that_does_not_hold_every_row() -> None:
    kept = replayed([passed("A", 0), failed("B", 1), passed("C", 2)], keep="failures")
    text = kept.format("markdown", include_details=False)
    assert text.endswith(
        "## Details\n\n"
        "_This report holds 1 of 3 evaluations; the others were not kept._\n\n"
        "- B: FAILED (0.00%)\n"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"includeDetails": True},
            "Unknown option 'includeDetails' for the markdown report formatter; "
            "accepted options: include_details",
        ),
        (
            {"include_details": "yes"},
            "Option 'include_details' of the markdown report formatter must be a bool, got 'yes'",
        ),
    ],
)
def test_markdown_rejects_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError) as info:
        MarkdownFormatter().format(upstream_report(), **options)
    assert str(info.value) == message


# -- json ------------------------------------------------------------------------------------------


def test_json_rejects_unknown_option() -> None:
    with pytest.raises(FormatError) as info:
        JsonFormatter().format(upstream_report(), indent=4)
    assert str(info.value) == (
        "Unknown option 'indent' for the json report formatter; accepted options: pretty"
    )


def test_check_options_fills_defaults() -> None:
    assert check_options("x", {}, {"a": True, "b": 3}) == {"a": True, "b": 3}
    assert check_options("x", {"b": 5}, {"a": True, "b": 3}) == {"a": True, "b": 5}
    with pytest.raises(
        FormatError,
        match=r"^Unknown option 'a' for the x report formatter; accepted options: none$",
    ):
        check_options("x", {"a": 1}, {})


# -- registry --------------------------------------------------------------------------------------


class CsvFormatter:
    name = "CSV"
    extension = ".csv"
    options = frozenset({"separator"})

    def format(self, report: EvaluationReport, **options: Any) -> str:
        separator = check_options(self.name, options, {"separator": ","})["separator"]
        return "".join(f"{r.name}{separator}{r.outcome}\n" for r in report.evaluations)


class BytesFormatter:
    name = "bin"
    extension = ".bin"

    def format(self, report: EvaluationReport, **options: Any) -> bytes:
        return bytes([report.evaluation_count, *sorted(options.get("extra", b""))])


def test_builtins_are_registered(registry: object) -> None:
    assert supported_formats() == ("html", "json", "junit", "markdown")
    assert isinstance(get_formatter("markdown"), MarkdownFormatter)
    assert isinstance(get_formatter("json"), JsonFormatter)
    assert get_formatter("markdown").extension == ".md"
    assert get_formatter("json").extension == ".json"
    assert isinstance(MarkdownFormatter(), ReportFormatter)


@pytest.mark.parametrize("name", ["MARKDOWN", "Markdown", " markdown "])
def test_lookup_is_case_insensitive(registry: object, name: str) -> None:
    assert isinstance(get_formatter(name), MarkdownFormatter)


def test_unknown_format(registry: object) -> None:
    with pytest.raises(FormatError) as info:
        get_formatter("unknown")
    assert str(info.value) == (
        "No report formatter found for format: unknown. "
        "Available formats: html, json, junit, markdown"
    )


@pytest.mark.parametrize("name", ["", "   ", None])
def test_blank_format(registry: object, name: Any) -> None:
    with pytest.raises(FormatError, match=r"^Format must not be null or blank$"):
        get_formatter(name)


def test_register_and_unregister_custom_formatter(
    registry: object,
) -> None:
    csv = CsvFormatter()
    assert register_formatter(csv) is csv
    assert supported_formats() == ("CSV", "html", "json", "junit", "markdown")
    assert get_formatter("csv") is csv
    assert upstream_report().format("csv", separator=";") == "Sample1;passed\nSample2;failed\n"
    assert unregister_formatter("Csv") is csv
    assert supported_formats() == ("html", "json", "junit", "markdown")
    with pytest.raises(FormatError, match=r"^No report formatter found for format: csv\."):
        unregister_formatter("csv")


def test_duplicate_registration_needs_replace(registry: object) -> None:
    class OtherMarkdown(MarkdownFormatter):
        name = "MarkDown"

    with pytest.raises(FormatError) as info:
        register_formatter(OtherMarkdown())
    assert str(info.value) == (
        "A report formatter named 'markdown' is already registered (MarkdownFormatter); "
        "pass replace=True to replace it"
    )
    replacement = OtherMarkdown()
    register_formatter(replacement, replace=True)
    assert get_formatter("markdown") is replacement


def test_register_rejects_non_formatters(registry: object) -> None:
    with pytest.raises(TypeError, match="is not a report formatter"):
        register_formatter(object())  # type: ignore[arg-type]

    class NoDot(CsvFormatter):
        extension = "csv"

    with pytest.raises(TypeError, match="extension must start with a dot"):
        register_formatter(NoDot())


def _entry_point(name: str, value: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name=name, value=value, group="aeval.formatters")


@pytest.fixture
def plugin_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("aeval_test_formatter_plugin")
    module.CsvFormatter = CsvFormatter  # type: ignore[attr-defined]
    module.BYTES = BytesFormatter()  # type: ignore[attr-defined]
    module.NOT_A_FORMATTER = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_entry_points_load_once_lazily(
    registry: object, monkeypatch: pytest.MonkeyPatch, plugin_module: Any
) -> None:
    calls: list[str] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        calls.append(group)
        return [
            _entry_point("csv", "aeval_test_formatter_plugin:CsvFormatter"),
            _entry_point("bin", "aeval_test_formatter_plugin:BYTES"),
            _entry_point("markdown", "aeval.formatters.markdown:MarkdownFormatter"),
        ]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert calls == []
    assert supported_formats() == ("bin", "CSV", "html", "json", "junit", "markdown")
    assert isinstance(get_formatter("csv"), CsvFormatter)
    assert get_formatter("bin") is plugin_module.BYTES
    assert calls == ["aeval.formatters"]


def _distribution(folder: Path, name: str | None, entry_points: str) -> Path:
    info = folder / f"{name or 'nameless'}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\n" + (f"Name: {name}\nVersion: 1.0\n" if name else "")
    )
    (info / "entry_points.txt").write_text(entry_points)
    return info


def test_a_broken_distribution_on_the_path_does_not_hide_the_others(
    aeval_formatters: None,
    monkeypatch: pytest.MonkeyPatch,
    plugin_module: Any,
    tmp_path: Path,
) -> None:
    """A zip on sys.path whose metadata has no Name makes CPython's
    ``importlib.metadata.entry_points`` raise (3.11 to 3.13); the formatters declared by the
    other distributions still load, and a warning names the zip."""
    import zipfile

    group = "[aeval.formatters]\ncsv = aeval_test_formatter_plugin:CsvFormatter\n"
    _distribution(tmp_path / "good", "aeval-test-csv", group)
    nameless = _distribution(tmp_path / "bad", None, group)
    archive = tmp_path / "nameless.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for file in nameless.iterdir():
            zipped.write(file, f"{nameless.name}/{file.name}")
    monkeypatch.syspath_prepend(str(tmp_path / "good"))
    monkeypatch.syspath_prepend(str(archive))
    try:
        with warnings.catch_warnings():  # 3.12+ first warn that the Name is missing
            warnings.simplefilter("ignore", DeprecationWarning)
            importlib.metadata.entry_points(group="aeval.formatters")
        broken = False
    except TypeError:
        broken = True
    with warnings.catch_warnings(record=True) as caught:  # 3.12+ also warn, in the stdlib
        warnings.simplefilter("always")
        formats = supported_formats()
    ours = [str(w.message) for w in caught if w.category is RuntimeWarning]
    if broken:
        assert len(ours) == 1
        assert re.search(r"nameless\.zip\S* \(its metadata has no Name\)", ours[0]), ours[0]
        assert ours[0].endswith("Fix or remove them from sys.path.")
    else:
        assert ours == []
    assert "CSV" in formats
    assert isinstance(get_formatter("csv"), CsvFormatter)


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("aeval_test_formatter_plugin:Missing", "AttributeError"),
        ("aeval_test_no_such_module:Thing", "ModuleNotFoundError"),
        ("aeval_test_formatter_plugin:NOT_A_FORMATTER", "TypeError"),
    ],
)
def test_broken_entry_point_is_a_format_error(
    registry: object,
    monkeypatch: pytest.MonkeyPatch,
    plugin_module: Any,
    value: str,
    cause: str,
) -> None:
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda *, group: [_entry_point("broken", value)]
    )
    with pytest.raises(FormatError) as info:
        get_formatter("markdown")
    assert str(info.value).startswith(
        f"Report formatter entry point 'broken' ({value}, group 'aeval.formatters') "
        f"cannot be loaded: {cause}: "
    )


def test_entry_point_clashing_with_a_builtin_name(
    registry: object, monkeypatch: pytest.MonkeyPatch, plugin_module: Any
) -> None:
    class FakeJson(CsvFormatter):
        name = "json"

    plugin_module.FakeJson = FakeJson
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda *, group: [_entry_point("json", "aeval_test_formatter_plugin:FakeJson")],
    )
    with pytest.raises(FormatError, match="named 'json' is already registered"):
        supported_formats()


# -- saving ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_save_writes_every_format(registry: object, tmp_path: Path) -> None:
    report = upstream_report()
    target = tmp_path / "nested" / "reports"
    paths = await report.save(target)
    assert paths == [
        target / "report.html",
        target / "report.json",
        target / "report.xml",
        target / "report.md",
    ]
    assert sorted(p.name for p in target.iterdir()) == [
        "report.html",
        "report.json",
        "report.md",
        "report.xml",
    ]
    assert (target / "report.html").read_text(encoding="utf-8") == report.format("html")
    assert (target / "report.md").read_text(encoding="utf-8") == report.format("markdown")
    assert orjson.loads((target / "report.json").read_bytes())["totalSamples"] == 2


@pytest.mark.anyio
async def test_save_routes_options_to_the_formatters_that_take_them(
    registry: object, tmp_path: Path
) -> None:
    report = upstream_report()
    paths = await report.save(
        tmp_path,
        formats=["MARKDOWN", "json", "markdown"],
        include_details=False,
        pretty=False,
    )
    assert paths == [tmp_path / "report.md", tmp_path / "report.json"]
    assert (tmp_path / "report.md").read_text() == report.format("markdown", include_details=False)
    assert "\n" not in (tmp_path / "report.json").read_text()


@pytest.mark.anyio
async def test_save_with_a_formatter_returning_bytes(registry: object, tmp_path: Path) -> None:
    register_formatter(BytesFormatter())
    [path] = await upstream_report().save(tmp_path, formats="bin", extra=b"\x05\x03")
    assert path == tmp_path / "report.bin"
    assert path.read_bytes() == b"\x02\x03\x05"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("formats", "options", "message"),
    [
        (["json", "nope"], {}, "No report formatter found for format: nope."),
        (["json", "  "], {}, "Format must not be null or blank"),
        (
            ["json", "markdown"],
            {"colour": True},
            "Unknown report option 'colour' for the formats json, markdown; accepted "
            "options: include_details, pretty",
        ),
        (["markdown"], {"include_details": 1}, "Option 'include_details' of the markdown"),
    ],
)
async def test_save_writes_nothing_when_a_format_or_option_is_bad(
    registry: object,
    tmp_path: Path,
    formats: list[str],
    options: dict[str, Any],
    message: str,
) -> None:
    target = tmp_path / "out"
    with pytest.raises(FormatError) as info:
        await upstream_report().save(target, formats=formats, **options)
    assert str(info.value).startswith(message)
    assert not target.exists()


@pytest.mark.anyio
async def test_save_as_infers_the_format(registry: object, tmp_path: Path) -> None:
    report = upstream_report()
    md = await report.save_as(tmp_path / "a" / "r.md")
    long_md = await report.save_as(tmp_path / "r.MARKDOWN", include_details=False)
    js = await report.save_as(tmp_path / "r.json", None, pretty=False)
    assert md == tmp_path / "a" / "r.md"
    assert md.read_text() == report.format("markdown")
    assert long_md.read_text() == report.format("markdown", include_details=False)
    assert js.read_text() == report.format("json", pretty=False)


@pytest.mark.anyio
async def test_save_as_with_explicit_format_and_custom_extension(
    registry: object, tmp_path: Path
) -> None:
    report = upstream_report()
    path = await report.save_as(tmp_path / "report.txt", "JSON")
    assert orjson.loads(path.read_bytes())["passed"] == 1
    register_formatter(CsvFormatter())
    csv = await report.save_as(tmp_path / "r.csv")
    assert csv.read_text() == "Sample1,passed\nSample2,failed\n"


@pytest.mark.anyio
async def test_save_as_unknown_extension(registry: object, tmp_path: Path) -> None:
    with pytest.raises(FormatError) as info:
        await upstream_report().save_as(tmp_path / "report.txt")
    assert str(info.value) == (
        f"Cannot tell the report format of {str(tmp_path / 'report.txt')!r} from its "
        "extension: pass format= (one of html, json, junit, markdown)"
    )
    assert not (tmp_path / "report.txt").exists()


def test_public_names() -> None:
    assert formatters.__all__ == sorted(formatters.__all__)
    for name in formatters.__all__:
        assert hasattr(formatters, name)


def test_model_usage_is_reported_in_markdown_json_and_junit() -> None:
    sample = EvaluationSample("S", ["q"], "a")
    result = EvaluationResult.passing().with_metadata(
        {"retries": 2, "prompt_tokens": 120, "completion_tokens": 30, "cost": 0.0125}
    )
    report = EvaluationReport([EvaluationRow.from_result(sample, "Judge", "a", result)])
    assert (
        "**Model usage**: 120 prompt + 30 completion tokens · 2 retries · $0.0125"
        in report.format("markdown")
    )
    assert orjson.loads(report.format("json"))["usage"] == {
        "retries": 2,
        "promptTokens": 120,
        "completionTokens": 30,
        "cost": 0.0125,
    }
    assert "Model usage" not in EvaluationReport([]).format("markdown")
    junit = report.format("junit")
    properties = {
        p.get("name"): p.get("value")
        for p in ET.fromstring(junit.split("\n", 1)[1]).iter("property")
    }
    assert {k: v for k, v in properties.items() if k and k.startswith("model_")} == {
        "model_retries": "2",
        "model_prompt_tokens": "120",
        "model_completion_tokens": "30",
        "model_cost_usd": "0.012500",
    }
    assert "model_retries" not in EvaluationReport([]).format("junit")
