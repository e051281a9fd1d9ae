from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
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
    Outcome,
    RunInfo,
)
from aeval.formatters import get_formatter, supported_formats
from aeval.formatters.html import HtmlFormatter
from aeval.trace import CallError, Document, Retrieval, ToolCall, Trace

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "source", "wbr", "area", "base"}
ATTACK = "<script>alert(1)</script> \"double\" & 'single'"


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                if child.tag == tag:
                    found.append(child)
                found += child.find_all(tag)
        return found

    def find(self, tag: str) -> Node:
        return self.find_all(tag)[0]

    def attr(self, name: str) -> str:
        """An attribute that must have a value."""
        value = self.attrs[name]
        assert value is not None, f"<{self.tag}> has {name} without a value"
        return value


class TreeBuilder(HTMLParser):
    """Builds a tree and fails on any unbalanced or misnested non-void tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raise AssertionError(f"self-closing <{tag}/> in HTML")

    def handle_endtag(self, tag: str) -> None:
        assert tag not in VOID, f"end tag for the void element {tag}"
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(text: str) -> Node:
    builder = TreeBuilder()
    builder.feed(text)
    builder.close()
    assert [n.tag for n in builder.stack] == ["#document"], "unclosed elements"
    assert builder.doctype == "DOCTYPE html"
    return builder.root


def table_rows(table: Node) -> list[list[str]]:
    return [
        [cell.text() for cell in tr.children if isinstance(cell, Node)]
        for tr in table.find_all("tr")
    ]


def section(root: Node, heading: str) -> Node:
    [found] = [s for s in root.find_all("section") if s.find("h2").text() == heading]
    return found


def by_id(root: Node, ident: str) -> Node:
    [found] = [
        n
        for tag in ("table", "form", "p", "input")
        for n in root.find_all(tag)
        if n.attrs.get("id") == ident
    ]
    return found


def scripts(root: Node) -> tuple[Node, Node]:
    """The page's own script (inline, no attributes) and its rows as JSON."""
    data, code = root.find_all("script")
    assert code.attrs == {}, "inline only: no src, no type"
    assert data.attrs == {"type": "application/json", "id": "row-data"}
    return code, data


def row_data(root: Node) -> list[dict[str, Any]]:
    """Every row as the page's JSON holds it (no ``<``, ``>`` or ``&`` in it)."""
    _, data = scripts(root)
    assert not re.search("[<>&\u2028\u2029]", data.text())
    records: list[dict[str, Any]] = json.loads(data.text())
    return records


def body_rows(root: Node) -> list[Node]:
    return by_id(root, "rows").find("tbody").find_all("tr")


def detail_nodes(tr: Node) -> dict[str, Node]:
    """The row's ``<details>`` as {label: dd} (``dt`` → ``dd``)."""
    items = [n for n in tr.find("details").find("dl").children if isinstance(n, Node)]
    return {dt.text(): dd for dt, dd in zip(items[::2], items[1::2], strict=True)}


def details(tr: Node) -> dict[str, str]:
    return {label: dd.text() for label, dd in detail_nodes(tr).items()}


def facts(root: Node) -> list[tuple[str, str]]:
    [dl] = [n for n in root.find_all("dl") if n.attrs.get("class") == "facts"]
    items = [n for n in dl.children if isinstance(n, Node)]
    return [(dt.text(), dd.text()) for dt, dd in zip(items[::2], items[1::2], strict=True)]


def row(name: str, index: int, result: EvaluationResult, **kw: Any) -> EvaluationRow:
    sample = EvaluationSample(name, ["q"], kw.pop("expected", "ok"), tags=kw.pop("tags", ()))
    return EvaluationRow.from_result(
        sample, kw.pop("strategy", "ExactMatch"), kw.pop("output", "ok"), result, index=index, **kw
    )


def mixed_rows() -> list[EvaluationRow]:
    return [
        row("S1", 0, EvaluationResult.failing(0.25, "Too different"), output="b", tags=["t1"]),
        row("S2", 1, EvaluationResult.passing(), tags=["t1", "t2"]),
        row("S3", 2, EvaluationResult.unscored("bad reply"), strategy="Judge"),
        EvaluationRow.from_error(
            EvaluationSample("S4", ["q"], "d"), None, None, ErrorInfo("ValueError", "boom"), index=3
        ),
        EvaluationRow.from_error(
            EvaluationSample("S5", ["q"], None),
            "Judge",
            42,
            ErrorInfo("TimeoutError", "judge too slow"),
            index=4,
        ),
    ]


def csp_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_page_is_well_formed_self_contained_and_accessible() -> None:
    root = parse(EvaluationReport(mixed_rows()).format("html"))
    page = root.find("html")
    assert page.attrs == {"lang": "en"}
    assert root.find("title").text() == "Evaluation Report"
    assert root.find("h1").text() == "Evaluation Report"
    assert root.find_all("link") == []
    script, _ = scripts(root)
    every = [n for tag in ("img", "a", "iframe", "object", "embed") for n in root.find_all(tag)]
    assert every == []
    style = root.find("style").text()
    assert "url(" not in style and "@import" not in style
    assert "http" not in script.text() and "fetch(" not in script.text()
    [policy] = [m for m in root.find_all("meta") if m.attrs.get("http-equiv")]
    assert policy.attrs["http-equiv"] == "Content-Security-Policy"
    assert policy.attrs["content"] == (
        f"default-src 'none'; script-src {csp_source(script.text())}; "
        f"style-src {csp_source(style)}; form-action 'none'; base-uri 'none'"
    )
    for table in root.find_all("table"):
        assert all(th.attrs.get("scope") == "col" for th in table.find("thead").find_all("th"))
        for tr in table.find("tbody").find_all("tr"):
            assert tr.find("th").attrs == {"scope": "row"}
    [search] = root.find_all("input")
    [label] = root.find_all("label")
    assert label.attrs == {"for": search.attrs["id"]} and label.text() == "Search"
    assert search.attrs["type"] == "search"
    buttons = root.find_all("button")
    assert buttons and all(b.text().strip() and b.attrs["type"] == "button" for b in buttons)


def test_score_counts_and_tables() -> None:
    root = parse(EvaluationReport(mixed_rows()).format("html"))
    assert root.find("p").text() == "Global score 20.00% (95% CI 3.62–62.45, 5 samples)"
    assert root.find("p").find("strong").text() == "20.00%"
    assert [li.text() for li in root.find("ul").find_all("li")] == [
        "Evaluations: 5",
        "Passed: 1",
        "Failed: 1",
        "Unscored: 1",
        "Skipped: 0",
        "Errors: 2",
        "Failed calls: 1",
    ]
    assert "Model usage" not in dict(facts(root))
    assert table_rows(section(root, "Score per tag").find("table")) == [
        ["Tag", "Samples", "Rows", "Passed", "Score", "95% CI"],
        ["t1", "2", "2", "1", "50.00%", "9.45–90.55"],
        ["t2", "1", "1", "1", "100.00%", "0.00–100.00"],
    ]
    assert table_rows(section(root, "Score per strategy").find("table")) == [
        [
            "Strategy",
            "Samples",
            "Rows",
            "Passed",
            "Failed",
            "Unscored",
            "Skipped",
            "Errors",
            "Score",
            "95% CI",
            "Mean score",
        ],
        ["ExactMatch", "2", "2", "1", "1", "0", "0", "0", "50.00%", "9.45–90.55", "0.63"],
        ["Judge", "2", "2", "0", "0", "1", "0", "1", "0.00%", "0.00–65.76", "—"],
    ]
    assert [s.find("h2").text() for s in root.find_all("section")] == [
        "Score per tag",
        "Score per strategy",
        "Evaluations",
    ]


def test_rows_failures_first_with_badges_and_details() -> None:
    root = parse(EvaluationReport(mixed_rows()).format("html"))
    table = section(root, "Evaluations").find("table")
    rows = table_rows(table)
    assert rows[0] == ["Sample", "Strategy", "Outcome", "Score", "Explanation", "Error", "Details"]
    assert [cells[:6] for cells in rows[1:]] == [
        ["S1", "ExactMatch", "failed", "25.00%", "Too different", ""],
        ["S3", "Judge", "unscored", "unscored", "bad reply", ""],
        ["S4", "function", "error", "0.00%", "", "ValueError: boom (the call failed)"],
        ["S5", "Judge", "error", "0.00%", "", "TimeoutError: judge too slow"],
        ["S2", "ExactMatch", "passed", "100.00%", "", ""],
    ]
    badges = [n for n in table.find_all("span") if "badge" in (n.attrs.get("class") or "")]
    assert [b.attrs["class"] for b in badges] == [
        "badge failed",
        "badge unscored",
        "badge error",
        "badge error",
        "badge passed",
    ]
    assert [tr.find("summary").text() for tr in body_rows(root)] == ["Details"] * 5
    s1, s3, s4, s5, s2 = (details(tr) for tr in body_rows(root))
    assert s1 == {
        "Parameters": "[q]",
        "Expected output": "ok",
        "Output": "b",
        "Tags": "t1",
        "Explanation": "Too different",
        "Duration": "function call 0.000 s · strategy 0.000 s",
    }
    assert (s2["Output"], s2["Expected output"], s2["Tags"]) == ("ok", "ok", "t1, t2")
    assert s3["Explanation"] == "bad reply" and "Error" not in s3
    assert s4["Output"] == "null" and s4["Expected output"] == "d"
    assert s4["Error"] == (
        "The function under test failed, so the strategy could not run.ValueError: boom"
    )
    assert s4["Duration"] == "function call 0.000 s"
    assert s5["Error"] == "The strategy raised.TimeoutError: judge too slow"
    assert (s5["Output"], s5["Expected output"]) == ("42", "null")
    assert "Explanation" not in s5, "the explanation only repeated the error"


def test_everything_user_provided_is_escaped() -> None:
    sample = EvaluationSample(ATTACK, [ATTACK], ATTACK, tags=[ATTACK], metadata={ATTACK: ATTACK})
    rows = [
        EvaluationRow.from_result(sample, ATTACK, ATTACK, EvaluationResult.failing(0.0, ATTACK)),
        EvaluationRow.from_error(sample, None, None, ErrorInfo("Boom", ATTACK), index=1),
    ]
    text = EvaluationReport(rows).format("html", title=ATTACK)
    assert text.count("<script") == text.count("</script") == 2, "the script and its rows"
    assert "alert(1)</script>" not in text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt; &quot;double&quot; &amp; &#x27;single&#x27;" in text
    )
    root = parse(text)
    script, _ = scripts(root)
    assert "alert" not in script.text()
    first_row, second_row = row_data(root)
    assert first_row["n"] == first_row["s"] == first_row["x"] == first_row["y"] == ATTACK
    assert second_row["r"] == f"Boom: {ATTACK}" and second_row["f"] == 1
    assert root.find("title").text() == root.find("h1").text() == ATTACK
    first, second = (details(tr) for tr in body_rows(root))
    assert first["Parameters"] == f"[{ATTACK}]"
    assert first["Output"] == first["Expected output"] == first["Explanation"] == ATTACK
    assert first["Tags"] == ATTACK
    assert orjson.loads(first["Sample metadata"]) == {ATTACK: ATTACK}
    assert second["Output"] == "null"
    assert second["Error"].endswith(f"Boom: {ATTACK}")
    assert table_rows(section(root, "Score per tag").find("table"))[1][0] == ATTACK
    assert table_rows(section(root, "Score per strategy").find("table"))[1][0] == ATTACK
    cells = table_rows(section(root, "Evaluations").find("table"))
    assert cells[1][:6] == [ATTACK, ATTACK, "failed", "0.00%", ATTACK, ""]
    assert cells[2][:6] == [
        ATTACK,
        "function",
        "error",
        "0.00%",
        "",
        f"Boom: {ATTACK} (the call failed)",
    ]
    searches = [tr.attr("data-search") for tr in body_rows(root)]
    assert all(ATTACK.lower() in search for search in searches)


def test_without_details_there_are_no_outputs() -> None:
    rows = [row("S1", 0, EvaluationResult.failing(0.0, "no"), output="secret-out", expected="exp")]
    text = EvaluationReport(rows).format("html", include_details=False, title="Nightly")
    root = parse(text)
    assert root.find("title").text() == "Nightly"
    assert root.find_all("details") == root.find_all("pre") == []
    assert "secret-out" not in text and "exp<" not in text
    assert table_rows(section(root, "Evaluations").find("table")) == [
        ["Sample", "Strategy", "Outcome", "Score", "Explanation", "Error"],
        ["S1", "ExactMatch", "failed", "0.00%", "no", ""],
    ]
    assert body_rows(root)[0].attrs["data-search"] == "s1\nexactmatch\nno"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"pretty": True},
            "Unknown option 'pretty' for the html report formatter; "
            "accepted options: include_details, title",
        ),
        ({"title": 3}, "Option 'title' of the html report formatter must be a str, got 3"),
        (
            {"include_details": "no"},
            "Option 'include_details' of the html report formatter must be a bool, got 'no'",
        ),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError) as info:
        HtmlFormatter().format(EvaluationReport([]), **options)
    assert str(info.value) == message


def test_usage_line_when_models_were_called() -> None:
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "retries": 2, "cost": 0.0125}
    rows = [row("S1", 0, EvaluationResult.passing().with_metadata(usage))]
    root = parse(EvaluationReport(rows).format("html"))
    assert dict(facts(root))["Model usage"] == (
        "120 prompt + 30 completion tokens · 2 retries · $0.0125"
    )
    assert details(body_rows(root)[0])["Result metadata"] == (
        '{\n  "prompt_tokens": 120,\n  "completion_tokens": 30,\n  "retries": 2,\n'
        '  "cost": 0.0125\n}'
    )


def test_partial_report_says_so_and_repeats_are_named() -> None:
    kept = replayed(
        [
            row("S1", 0, EvaluationResult.passing()),
            row("S1", 0, EvaluationResult.failing(0.0), repeat=1),
            row("S2", 1, EvaluationResult.passing()),
        ],
        keep="failures",
    )
    root = parse(kept.format("html"))
    rows_section = section(root, "Evaluations")
    assert rows_section.find("p").text() == (
        "This report holds 1 of 4 evaluations; the others were not kept."
    )
    assert table_rows(rows_section.find("table"))[1][0] == "S1 [repeat 2]"


def test_empty_report() -> None:
    root = parse(EvaluationReport([]).format("html"))
    assert root.find("p").find("strong").text() == "0.00%"
    assert [s.find("h2").text() for s in root.find_all("section")] == ["Evaluations"]
    assert section(root, "Evaluations").find("p").text() == "No evaluations to show."
    assert root.find_all("table") == []
    assert root.find_all("script") == root.find_all("form") == root.find_all("noscript") == []


def test_registered_as_a_builtin(registry: object) -> None:
    assert supported_formats() == ("html", "json", "junit", "markdown")
    formatter = get_formatter("HTML")
    assert isinstance(formatter, HtmlFormatter)
    assert (formatter.name, formatter.extension) == ("html", ".html")


@pytest.mark.anyio
async def test_save_and_save_as_write_report_html(registry: object, tmp_path: Path) -> None:
    report = EvaluationReport(mixed_rows())
    paths = await report.save(tmp_path / "out", formats=["html"], title="CI run")
    assert paths == [tmp_path / "out" / "report.html"]
    written = paths[0].read_text(encoding="utf-8")
    assert written == report.format("html", title="CI run")
    path = await report.save_as(tmp_path / "page.html", include_details=False)
    assert path.read_text(encoding="utf-8") == report.format("html", include_details=False)


def test_cli_run_writes_report_html_when_configured(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parent / "data" / "cli"
    for name in ("cli_targets.py", "samples.yaml"):
        shutil.copy(data / name, tmp_path / name)
    (tmp_path / "aeval.yaml").write_text(
        "samples: samples.yaml\n"
        "target: cli_targets:echo\n"
        "strategies:\n  - name: exact_match\n"
        "output:\n  dir: out\n  formats: [markdown, html]\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "aeval", "run", "aeval.yaml", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.md", "rows.jsonl"]
    root = parse((out / "report.html").read_text(encoding="utf-8"))
    assert root.find("p").find("strong").text() == "66.67%"
    names = [r[0] for r in table_rows(section(root, "Evaluations").find("table"))[1:]]
    assert names == ["mismatch", "hello", "world"], "failures first, then report order"


HOSTILE = "</script><script>alert(2)</script><!-- ]]> \"dq\" 'sq' \ud800 \x00\x0b\x1f\x85\ufffe end"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff]")


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def run_info(**changes: Any) -> RunInfo:
    info = RunInfo(
        started_at=1764530000.0,
        finished_at=1764530042.5,
        samples_expected=3,
        concurrency=4,
        repeats=3,
        aeval_version="1.2.3",
        git_commit=COMMIT,
        warnings=("sink rows.jsonl failed: disk full",),
    )
    return info.replace(**changes)


def repeated_rows() -> list[EvaluationRow]:
    """Three samples, two strategies, three repeats.

    geo passes Exact every time and Judge twice (flaky); wrong fails Exact every time (not
    flaky) so Judge is skipped, and its outputs disagree; slow's second call fails, so both
    its pairs are flaky.
    """
    geo = EvaluationSample("geo", {"question": "Capital of France?", "lang": "en"}, "Paris")
    wrong = EvaluationSample("wrong", ["Capital of Germany?"], "Berlin", tags=["hard"])
    slow = EvaluationSample("slow", ["2+2"], "4", metadata={"source": "arith", "level": 1})
    crash = ErrorInfo("TimeoutError", "took 30 s", "Traceback: here", source="function")
    rows = []
    for repeat in range(3):
        judge = EvaluationResult.passing(0.9) if repeat != 1 else EvaluationResult.failing(0.4)
        rows += [
            EvaluationRow.from_result(
                geo, "Exact", "Paris", EvaluationResult.passing(), index=0, repeat=repeat
            ),
            EvaluationRow.from_result(
                geo, "Judge", "Paris", judge, index=0, repeat=repeat, position=1
            ),
        ]
        output = "Berlin!" if repeat == 1 else "Bonn"
        rows += [
            EvaluationRow.from_result(
                wrong, "Exact", output, EvaluationResult.failing("no"), index=1, repeat=repeat
            ),
            EvaluationRow(
                wrong,
                "Judge",
                output,
                Outcome.SKIPPED,
                None,
                "Exact failed",
                index=1,
                repeat=repeat,
                position=1,
            ),
        ]
        if repeat == 1:
            rows += [
                EvaluationRow.from_error(
                    slow, name, None, crash, index=2, repeat=1, position=position, duration=30.0
                )
                for position, name in enumerate(("Exact", "Judge"))
            ]
        else:
            rows += [
                EvaluationRow.from_result(
                    slow,
                    name,
                    "4",
                    EvaluationResult.passing(),
                    index=2,
                    repeat=repeat,
                    position=position,
                    duration=0.25,
                    strategy_duration=0.5,
                )
                for position, name in enumerate(("Exact", "Judge"))
            ]
    return rows


def repeated_report(**changes: Any) -> EvaluationReport:
    return EvaluationReport(repeated_rows(), run=run_info(**changes))


def test_partial_banner_only_when_partial() -> None:
    complete = parse(repeated_report().format("html"))
    assert [n for n in complete.find_all("div") if n.attrs.get("role") == "alert"] == []
    assert complete.find("title").text() == "Evaluation Report"
    report = repeated_report(complete=False, samples_expected=10)
    root = parse(report.format("html"))
    main = root.find("main")
    banner = next(n for n in main.children if isinstance(n, Node))
    assert banner.tag == "div", "the banner comes first, before the title"
    assert banner.attrs == {"class": "banner", "role": "alert"}
    assert banner.text() == (
        "PARTIAL RUN: run stopped after 3 of 10 samples. The scores cover only the samples "
        "evaluated; do not gate a release on them."
    )
    assert root.find("title").text() == "Evaluation Report (PARTIAL RUN)"
    assert ".banner {" in root.find("style").text()


def test_header_facts_interval_and_counts() -> None:
    report = repeated_report()
    root = parse(report.format("html"))
    assert facts(root) == [
        ("Started", "2025-11-30 19:13:20 UTC"),
        ("Finished", "2025-11-30 19:14:02 UTC"),
        ("Duration", "42.50 s (wall clock)"),
        ("Samples", "3 of 3 × 3 repeats"),
        ("Rows", "18"),
        ("aeval", "1.2.3"),
        ("Concurrency", "4"),
        ("Commit", COMMIT),
        ("Warning", "sink rows.jsonl failed: disk full"),
    ]
    [warning] = [n for n in root.find_all("dd") if n.attrs.get("class") == "warning"]
    assert warning.text() == "sink rows.jsonl failed: disk full"
    score = root.find("p")
    assert score.text() == "Global score 50.00% (95% CI 14.68–85.32, 3 samples)"
    assert score.find("strong").text() == "50.00%"
    assert score.find("span").text() == "(95% CI 14.68–85.32, 3 samples)"
    assert [li.text() for li in root.find("ul").find_all("li")] == [
        "Evaluations: 18",
        "Passed: 9",
        "Failed: 4",
        "Unscored: 0",
        "Skipped: 3",
        "Errors: 2",
        "Failed calls: 1",
        "Flaky pairs: 3",
    ]


def test_tables_show_each_interval() -> None:
    report = repeated_report()
    root = parse(report.format("html"))
    assert table_rows(section(root, "Score per tag").find("table"))[1:] == [
        ["hard", "1", "6", "0", "0.00%", "0.00–100.00"],
    ]
    strategies = table_rows(section(root, "Score per strategy").find("table"))[1:]
    assert strategies == [
        [
            "Exact",
            "3",
            "9",
            "5",
            "3",
            "0",
            "0",
            "1",
            "55.56%",
            "15.07–89.80",
            "0.63",
        ],
        [
            "Judge",
            "3",
            "9",
            "4",
            "1",
            "0",
            "3",
            "1",
            "44.44%",
            "14.02–79.70",
            "0.84",
        ],
    ]


def test_repeats_section() -> None:
    report = repeated_report()
    stats = report.repeat_statistics
    assert stats is not None
    root = parse(report.format("html"))
    repeats = section(root, "Repeats")
    paragraphs = [p.text() for p in repeats.find_all("p")]
    assert paragraphs[0] == "Each sample ran 3 times: 6 (sample, strategy) pairs, 3 of them flaky."
    assert paragraphs[2] == (
        "Output agreement: 77.78% of repeats give the most common output (2 samples disagree)."
    )
    pass_k, flaky, inconsistent = repeats.find_all("table")
    assert table_rows(pass_k) == [
        ["k", "pass@k", "pass^k"],
        ["1", "50.00%", "50.00%"],
        ["2", "66.67%", "33.33%"],
        ["3", "66.67%", "16.67%"],
    ]
    assert [stats.pass_at_k[k] for k in (1, 2, 3)] == pytest.approx([1 / 2, 2 / 3, 2 / 3])
    assert [h.text() for h in repeats.find_all("h3")] == ["Flaky pairs", "Inconsistent outputs"]
    assert table_rows(flaky) == [
        ["Sample", "Strategy", "Passed", "Pass rate"],
        ["geo", "Judge", "2/3 passed", "66.67%"],
        ["slow", "Exact", "2/3 passed", "66.67%"],
        ["slow", "Judge", "2/3 passed", "66.67%"],
    ]
    assert table_rows(inconsistent) == [
        ["Sample", "Agreement"],
        ["wrong", "66.67%"],
        ["slow", "66.67%"],
    ]
    single = parse(EvaluationReport(mixed_rows()).format("html"))
    assert "Repeats" not in [s.find("h2").text() for s in single.find_all("section")]
    assert not [li for li in single.find("ul").find_all("li") if "Flaky" in li.text()]


def test_rows_carry_what_the_filters_need() -> None:
    root = parse(repeated_report().format("html"))
    rows = body_rows(root)
    seen = [
        (
            tr.find("th").text(),
            tr.find_all("td")[0].text(),
            tr.attrs["data-outcome"],
            tr.attrs["data-flaky"],
        )
        for tr in rows
    ]
    assert seen == [
        ("geo [repeat 2]", "Judge", "failed", "true"),
        ("wrong [repeat 1]", "Exact", "failed", "false"),
        ("wrong [repeat 1]", "Judge", "skipped", "false"),
        ("wrong [repeat 2]", "Exact", "failed", "false"),
        ("wrong [repeat 2]", "Judge", "skipped", "false"),
        ("wrong [repeat 3]", "Exact", "failed", "false"),
        ("wrong [repeat 3]", "Judge", "skipped", "false"),
        ("slow [repeat 2]", "Exact", "error", "true"),
        ("slow [repeat 2]", "Judge", "error", "true"),
        ("geo [repeat 1]", "Exact", "passed", "false"),
        ("geo [repeat 1]", "Judge", "passed", "true"),
        ("geo [repeat 2]", "Exact", "passed", "false"),
        ("geo [repeat 3]", "Exact", "passed", "false"),
        ("geo [repeat 3]", "Judge", "passed", "true"),
        ("slow [repeat 1]", "Exact", "passed", "true"),
        ("slow [repeat 1]", "Judge", "passed", "true"),
        ("slow [repeat 3]", "Exact", "passed", "true"),
        ("slow [repeat 3]", "Judge", "passed", "true"),
    ]
    flags = [tr.find_all("td")[1].find_all("span") for tr in rows]
    assert [len(spans) == 2 and spans[1].text() == "flaky" for spans in flags] == [
        tr.attrs["data-flaky"] == "true" for tr in rows
    ]
    assert rows[1].attr("data-search") == (
        "wrong [repeat 1]\nexact\nhard\nno\n[capital of germany?]\nberlin\nbonn"
    )
    assert rows[2].find_all("td")[2].text() == "—", "a skipped row has no score"
    assert all(tr.attr("data-search") == tr.attr("data-search").lower() for tr in rows)
    assert "took 30 s" in rows[7].attr("data-search")
    form = by_id(root, "filters")
    assert "hidden" in form.attrs, "the script reveals the controls"
    assert form.attrs["role"] == "search"
    assert [
        (b.attrs["data-filter"], b.text(), b.attrs["aria-pressed"]) for b in form.find_all("button")
    ] == [
        ("all", "All (18)", "true"),
        ("not-passed", "Not passed (9)", "false"),
        ("failed", "Failed (4)", "false"),
        ("error", "Errors (2)", "false"),
        ("unscored", "Unscored (0)", "false"),
        ("skipped", "Skipped (3)", "false"),
        ("flaky", "Flaky (9)", "false"),
        ("passed", "Passed (9)", "false"),
    ]
    assert by_id(root, "shown").text() == "Showing 18 of 18 rows"
    assert by_id(root, "shown").attrs["aria-live"] == "polite"
    [noscript] = root.find_all("noscript")
    assert "every row is shown" in noscript.text()


def test_details_hold_inputs_error_metadata_and_durations() -> None:
    rows = body_rows(parse(repeated_report().format("html")))
    failed_call, passed = details(rows[7]), details(rows[14])
    assert failed_call == {
        "Parameters": "[2+2]",
        "Expected output": "4",
        "Output": "null",
        "Explanation": "Failed to execute sample 'slow': TimeoutError: took 30 s; the strategy "
        "Exact could not run",
        "Error": "The function under test failed, so the strategy could not run."
        "TimeoutError: took 30 sTracebackTraceback: here",
        "Sample metadata": '{\n  "source": "arith",\n  "level": 1\n}',
        "Duration": "function call 30.000 s",
    }
    assert passed["Duration"] == "function call 0.250 s · strategy 0.500 s"
    assert rows[7].find_all("td")[4].text() == "TimeoutError: took 30 s (the call failed)"
    geo = details(rows[0])
    assert geo["Parameters"] == "question=Capital of France?, lang=en"
    assert "Tags" not in geo and "Sample metadata" not in geo and "Error" not in geo
    assert details(rows[1])["Tags"] == "hard"


def test_long_values_are_cut_and_say_their_length() -> None:
    long = "x" * 1_000_000
    rows = [row("S1", 0, EvaluationResult.failing(0.0, "y" * 5000), output=long, expected=long)]
    text = EvaluationReport(rows).format("html")
    assert len(text) < 40_000
    tr = body_rows(parse(text))[0]
    shown = details(tr)
    assert shown["Output"] == "x" * 2000 + "… (1000000 characters in all)"
    assert shown["Expected output"] == shown["Output"]
    assert shown["Explanation"] == "y" * 2000 + "… (5000 characters in all)"
    assert tr.find_all("td")[3].text() == "y" * 300 + "… (5000 characters in all)"
    assert "x" * 2000 + "… (1000000 characters in all)" in tr.attr("data-search")


def test_hostile_values_never_break_the_page(tmp_path: Path) -> None:
    sample = EvaluationSample(
        HOSTILE,
        {HOSTILE: Unprintable()},
        Unprintable(),
        tags=[HOSTILE],
        metadata={HOSTILE: [HOSTILE, Unprintable()], "big": 2**70},
    )
    rows = [
        EvaluationRow.from_result(
            sample,
            HOSTILE,
            Unprintable(),
            EvaluationResult.failing(0.0, HOSTILE).with_metadata({"why": HOSTILE}),
        ),
        EvaluationRow.from_error(
            sample, HOSTILE, HOSTILE, ErrorInfo(HOSTILE, HOSTILE, HOSTILE), index=1
        ),
    ]
    report = EvaluationReport(rows, run=run_info(warnings=(HOSTILE,), git_commit=HOSTILE))
    text = report.format("html", title=HOSTILE)
    text.encode("utf-8")
    assert not FORBIDDEN.search(text)
    assert text.count("<script") == text.count("</script") == 2
    assert "<!--" not in text and "]]>" not in text
    root = parse(text)
    shown = HOSTILE.replace("\ud800", "\\ud800").replace("\x00", "\\x00")
    shown = shown.replace("\x0b", "\\x0b").replace("\x1f", "\\x1f").replace("\x85", "\\x85")
    shown = shown.replace("\ufffe", "\\ufffe")
    assert root.find("h1").text() == shown
    first, second = body_rows(root)
    assert first.find("th").text() == shown
    assert first.attrs["data-flaky"] == "false" and first.attrs["data-outcome"] == "failed"
    assert shown.lower() in first.attr("data-search")
    assert "\"dq\" 'sq'" in first.attr("data-search")
    opened = details(first)
    unprintable = "<Unprintable object: str() raised RuntimeError>"
    assert opened["Output"] == opened["Expected output"] == unprintable
    assert opened["Parameters"] == f"{shown}={unprintable}"
    assert opened["Explanation"] == shown
    cut = HOSTILE.replace("\ud800", "\\ud800")
    result_metadata = detail_nodes(first)["Result metadata"].find("pre").text()
    assert orjson.loads(result_metadata) == {"why": cut}, "still valid JSON"
    sample_metadata = detail_nodes(first)["Sample metadata"]
    assert orjson.loads(sample_metadata.find("pre").text()) == {
        cut: [cut, unprintable],
        "big": str(2**70),
    }
    assert sorted(p.text() for p in sample_metadata.find_all("p")) == [
        "a Unprintable object: written as its text",
        "a key held lone surrogates: written as \\u escapes",
        "a string held lone surrogates (a cut character): written as \\u escapes",
        "an integer beyond 64 bits: written as a string",
    ], "the stand-ins are said"
    assert details(second)["Error"].startswith("The strategy raised.")
    assert ("Warning", shown) in facts(root) and ("Commit", shown) in facts(root)
    script, _ = scripts(root)
    assert [record["n"] for record in row_data(root)] == [shown, shown]
    assert (
        script.text() == scripts(parse(EvaluationReport(mixed_rows()).format("html")))[0].text()
    ), "the script is the same for every report: no user value in it"
    assert "</" not in script.text() and "<!--" not in script.text()
    path = tmp_path / "page.html"
    anyio.run(functools.partial(report.save_as, path, title=HOSTILE))
    assert path.read_text(encoding="utf-8") == text


def test_only_characters_html_forbids_are_escaped() -> None:
    kept = "é · — 😀 \U0010fffd tab\tline\nfeed\x0creturn\r nbsp\xa0 \ue000"
    forbidden = "\x01\x7f\x9f\ufdd0\ufffe\U0001fffe\U0010ffff\udfff"
    rows = [row("S1", 0, EvaluationResult.failing(0.0), output=kept + forbidden)]
    text = EvaluationReport(rows).format("html")
    assert not FORBIDDEN.search(text) and not re.search("[\U0001fffe\U0010ffff]", text)
    output = details(body_rows(parse(text))[0])["Output"]
    escaped = "\\x01\\x7f\\x9f\\ufdd0\\ufffe\\U0001fffe\\U0010ffff\\udfff"
    assert output == kept + escaped


def many_rows(count: int) -> EvaluationReport:
    """``count`` rows, every fifth one failed, each with a little of everything."""
    rows = []
    for index in range(count):
        sample = EvaluationSample(
            f"sample {index}",
            [f"What is the capital of country number {index}?"],
            f"City {index}",
            tags=["geo", f"t{index % 7}"],
            metadata={"source": "atlas", "id": index},
        )
        failed = index % 5 == 0
        result = (
            EvaluationResult.failing(0.0, f"Expected 'City {index}', got 'Town {index}'")
            if failed
            else EvaluationResult.passing()
        )
        output = f"Town {index}" if failed else f"City {index}"
        rows.append(EvaluationRow.from_result(sample, "Exact", output, result, index=index))
    return EvaluationReport(rows)


def test_a_large_report_holds_a_page_of_static_rows_and_every_row_as_json() -> None:
    text = many_rows(450).format("html")
    root = parse(text)
    static = body_rows(root)
    assert len(static) == 200, "the first page, for reading without scripts"
    records = row_data(root)
    assert len(records) == 450
    assert [r["n"] for r in records[:90]] == [f"sample {i}" for i in range(0, 450, 5)]
    assert [tr.find("th").text() for tr in static] == [r["n"] for r in records[:200]]
    assert records[0] == {
        "n": "sample 0",
        "o": "failed",
        "c": "0.00%",
        "d": "0.000",
        "s": "Exact",
        "ds": "0.000",
        "t": ["geo", "t0"],
        "x": "Expected 'City 0', got 'Town 0'",
        "p": "[What is the capital of country number 0?]",
        "e": "City 0",
        "y": "Town 0",
        "m": '{\n  "source": "atlas",\n  "id": 0\n}',
    }
    notes = [n.text() for n in root.find_all("noscript")]
    assert notes == [
        "The filters and the search need JavaScript; the first 200 of 450 rows are shown "
        "below, failures first; the others are shown with JavaScript, and report.json holds "
        "every row (and rows.jsonl, beside the reports of an aeval run).",
        "… and 250 more rows, which this page shows with JavaScript; report.json holds every "
        "row (and rows.jsonl, beside the reports of an aeval run).",
    ]
    assert by_id(root, "rows").attrs["data-page-size"] == "200"
    assert by_id(root, "shown").text() == "Showing 450 of 450 rows"
    without = parse(many_rows(3).format("html", include_details=False))
    assert row_data(without)[0] == {
        "n": "sample 0",
        "o": "failed",
        "c": "0.00%",
        "d": "0.000",
        "s": "Exact",
        "ds": "0.000",
        "t": ["geo", "t0"],
        "x": "Expected 'City 0', got 'Town 0'",
    }, "no inputs or outputs without details"


def test_a_large_report_is_a_third_of_its_rows_as_html() -> None:
    """50,000 such rows were 43 MB as table rows (about 870 bytes a row); as JSON they are
    about 270, plus one page of static rows."""
    text = many_rows(5000).format("html")
    assert len(text.encode()) < 5000 * 300 + 200 * 900


def test_the_json_of_the_rows_cannot_close_its_element() -> None:
    attack = "</script><script>alert(1)</script><!-- \u2028\u2029 & \x85\x00 end"
    rows = [row(attack, 0, EvaluationResult.failing(0.0, attack), output=attack, tags=[attack])]
    text = EvaluationReport(rows).format("html")
    assert "alert(1)</script>" not in text and "<!--" not in text
    assert not FORBIDDEN.search(text)
    root = parse(text)
    [record] = row_data(root)
    shown = attack.replace("\x85", "\\x85").replace("\x00", "\\x00")
    assert record["n"] == record["x"] == record["y"] == record["t"][0] == shown
    assert body_rows(root)[0].find("th").text() == shown, "the static row reads the same"


def traced(text: str) -> Trace:
    return Trace(
        tool_calls=(
            ToolCall("get_weather", {"city": text}, {"sky": text}, mocked=True),
            ToolCall(text, {"q": "y" * 3000}, None, CallError(text, text)),
        ),
        retrievals=(Retrieval(text, (Document("d1", text, 0.5),)),),
    )


def test_a_traced_row_has_a_collapsed_timeline_built_from_text_only() -> None:
    rows = [
        row("S1", 0, EvaluationResult.failing(0.0), trace=traced(HOSTILE)),
        row("S2", 1, EvaluationResult.passing()),
    ]
    text = EvaluationReport(rows).format("html")
    assert not FORBIDDEN.search(text)
    assert text.count("<script") == text.count("</script") == 2
    root = parse(text)
    first, second = body_rows(root)
    timeline = detail_nodes(first)["Trace"].find("details")
    assert timeline.find("summary").text() == "2 tool calls · 1 retrieval"
    events = timeline.find("ol").find_all("li")
    shown = HOSTILE.replace("\ud800", "\\ud800").replace("\x00", "\\x00")
    shown = shown.replace("\x0b", "\\x0b").replace("\x1f", "\\x1f").replace("\x85", "\\x85")
    shown = shown.replace("\ufffe", "\\ufffe")
    texts = [[p.text() for p in li.find_all("p")] for li in events]
    assert texts[0] == ["tool get_weather · mocked", "Arguments", "Result"]
    assert texts[1] == [f"tool {shown}", "Arguments", "Error"]
    assert texts[2] == ["retrieval · 1 document", "Query", "Documents"]
    pres = [[p.text() for p in li.find_all("pre")] for li in events]
    assert '"y' in pres[1][0] and pres[1][0].endswith("… (3013 characters in all)")
    assert len(pres[1][0]) < 1100
    assert pres[1][1] == f"{shown}: {shown}"
    assert "Trace" not in details(second)
    record = row_data(root)[0]
    assert record["Ts"] == "2 tool calls · 1 retrieval"
    assert record["T"][1][0] == f"tool {shown}"
    assert record["T"][1][2] == pres[1][0]
    assert "T" not in row_data(root)[1]
    script, _ = scripts(root)
    plain = EvaluationReport([row("P", 0, EvaluationResult.passing(), trace=traced("plain"))])
    assert script.text() == scripts(parse(plain.format("html")))[0].text(), "no user value"
    untraced = scripts(parse(EvaluationReport(mixed_rows()).format("html")))[0].text()
    assert script.text() != untraced and "row.T" not in untraced, "only traced reports build one"
