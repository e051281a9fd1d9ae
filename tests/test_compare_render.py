"""A comparison rendered: terminal tables, Markdown, JSON, JUnit XML and the HTML page."""

from __future__ import annotations

import base64
import hashlib
import io
import re
from pathlib import Path

import orjson
import pytest
import xmlschema
from _compare import run
from rich.console import Console
from test_formatter_html import FORBIDDEN, HOSTILE, parse
from test_formatter_markdown import parse as parse_markdown

from aeval import Comparison, FormatError

pytestmark = pytest.mark.anyio

SCHEMA = xmlschema.XMLSchema(Path(__file__).resolve().parent / "data" / "cli" / "junit.xsd")
ATTACK = f"<img src=x onerror=alert(1)>|*x*|{HOSTILE}"


def regressed() -> Comparison:
    """30 samples in two tags; the candidate breaks 12 of the 'risky' ones."""
    tags = {f"s{i}": ["risky"] if i < 15 else ["safe"] for i in range(30)}
    before = {f"s{i}": {"exact": "P"} for i in range(30)}
    after = {f"s{i}": {"exact": "F" if i < 12 else "P"} for i in range(30)}
    outputs = {f"s{i}": f"The capital is Lyon, not Paris ({i})" for i in range(12)}
    return Comparison.of(
        run(before, tags=tags, outputs=dict.fromkeys(before, "The capital is Paris")),
        run(after, tags=tags, outputs=outputs),
    )


def hostile() -> Comparison:
    baseline = run({ATTACK: {ATTACK: "P"}, "ok": {ATTACK: "F"}}, tags={ATTACK: [ATTACK]})
    candidate = run(
        {ATTACK: {ATTACK: "F"}, "ok": {ATTACK: "P"}, "new": {"x": "P"}},
        tags={ATTACK: [ATTACK]},
        outputs={ATTACK: ATTACK, "ok": ATTACK},
    )
    return Comparison.of(baseline, candidate)


def test_the_terminal_shows_the_figures_the_tables_and_both_outputs() -> None:
    out = io.StringIO()
    regressed().print(Console(file=out, width=160, color_system=None), margin=2)
    text = out.getvalue()
    assert "difference        -40.00 points (95% CI -57.83 to -22.17)" in text
    assert "p-value           p < 0.001 (exact McNemar test)" in text
    assert "verdict           worse (regression)" in text
    assert "power             with 30 samples only a change of 32 points or more" in text
    assert "Per tag (p Holm-adjusted)" in text
    assert re.search(r"risky\s+15\s+100\.00% → 20\.00%\s+-80\.00 \(-100\.00…-59\.05\)", text)
    assert re.search(r"safe\s+15\s+100\.00% → 100\.00%.*no significant difference", text)
    assert "Regressions (passed → not passed): 12" in text
    assert re.search(r"s0\s+exact\s+passed\s+failed\s+The capital is Paris\s+The capital", text)
    assert regressed().format("text").startswith("Comparison (candidate − baseline)")


def test_markdown_has_the_tables_and_no_value_breaks_it() -> None:
    text = hostile().format("markdown")
    tokens = parse_markdown(text)
    assert not [t for t in tokens if t.type in ("html_inline", "html_block")]
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [
        "Comparison",
        "Per tag",
        "Per strategy",
        "Regressions (passed → not passed): 1",
        "Fixes (not passed → passed): 1",
        "Only in the candidate: 1 (not compared)",
    ]
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + 1 + 1 + 1 + 2 + 2, "each table: its header and its rows"
    cells = [t.content for t in tokens if t.type == "inline" and "img src=x" in t.content]
    assert cells, "the hostile names are shown, as text"
    assert all("&lt;img" in cell for cell in cells)
    regressions = regressed().format("markdown")
    assert "**Verdict**: worse (regression)" in regressions
    assert "- **Power**: with 30 samples only a change of 32 points" in regressions
    assert "| s0 | exact | passed | failed | The capital is Paris | The capital is Lyon" in (
        regressions
    )


def test_json_holds_every_figure_and_both_sides_of_each_pair() -> None:
    comparison = regressed()
    data = orjson.loads(comparison.format("json", margin=2))
    assert data["formatVersion"] == 1
    assert data["verdict"] == "worse" and data["regression"] is True
    assert data["difference"] == pytest.approx(-40.0)
    assert data["pValue"] == comparison.p_value
    assert data["interval"]["low"] == comparison.interval[0]
    assert data["test"] == "exact McNemar test"
    assert data["counts"]["regressions"] == 12
    assert data["tags"]["risky"]["adjustedPValue"] == pytest.approx(
        2 * data["tags"]["risky"]["pValue"]
    )
    assert data["tags"]["risky"]["regressions"][0] == {"sample": "s0", "strategy": "exact"}
    first = data["regressions"][0]
    assert first["baseline"]["output"] == "The capital is Paris"
    assert first["candidate"]["output"] == "The capital is Lyon, not Paris (0)"
    assert first["candidate"]["outcomes"] == ["failed"]
    assert first["expectedOutput"] == "answer s0"
    assert data["margin"] == 2
    assert orjson.loads(hostile().format("json"))["onlyInCandidate"] == [
        {"sample": "new", "strategy": "x"}
    ]


def test_junit_has_one_failing_case_per_significant_regression() -> None:
    text = regressed().format("junit", margin=2, non_inferiority=5)
    SCHEMA.validate(text)
    cases = re.findall(r'<testcase classname="aeval.compare" name="([^"]+)"', text)
    assert cases == ["overall", "tag risky", "tag safe", "non-inferiority (margin 5.00)"]
    assert text.count("<failure ") == 3
    assert '<failure type="regression" message="tag risky: 100.00% → 20.00%, -80.00 points' in text
    assert "Holm-adjusted p &lt; 0.001), beyond the margin of 2.00 points" in text
    assert "- s0 [exact]: passed → failed" in text
    assert "candidate: The capital is Lyon, not Paris (0)" in text
    assert '<failure type="non-inferiority"' in text
    assert 'name="test" value="exact McNemar test"' in text
    calm = hostile().format("junit")
    SCHEMA.validate(calm)
    assert "<failure" not in calm and 'tests="2"' in calm


def _csp_sources(page: str) -> tuple[str, str]:
    script = re.search(r"<script>(.*?)</script>", page, re.DOTALL)
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL)
    assert script is not None and style is not None

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    return digest(script.group(1)), digest(style.group(1))


def test_the_html_page_is_self_contained_and_its_policy_admits_only_its_own_code() -> None:
    page = regressed().format("html")
    script, style = _csp_sources(page)
    assert f"default-src 'none'; script-src 'sha256-{script}'; style-src 'sha256-{style}'" in page
    root = parse(page)
    assert not root.find_all("link") and "http" not in page.split("<body>")[1]
    table = next(t for t in root.find_all("table") if t.attrs.get("id") == "pairs")
    rows = table.find("tbody").find_all("tr")
    assert len(rows) == 12
    assert {row.attrs["data-kinds"] for row in rows} == {"regression"}
    buttons = [b.text() for b in root.find_all("button")]
    assert buttons == [
        "All changed (12)",
        "Regressions (12)",
        "Fixes (0)",
        "New errors (0)",
        "Newly unscored (0)",
    ]
    form = next(f for f in root.find_all("form") if f.attrs.get("id") == "filters")
    assert "hidden" in form.attrs, "without scripts the filters stay hidden"
    assert "every changed pair is shown" in root.find("noscript").text()


def test_the_html_page_highlights_what_changed_in_the_output() -> None:
    tagged = Comparison.of(
        run({"s": {"exact": "P"}}, outputs={"s": "a <b> c"}),
        run({"s": {"exact": "F"}}, outputs={"s": "a <i> c"}),
    ).format("html")
    assert "<pre>a &lt;<del>b</del>&gt; c</pre>" in tagged
    assert "<pre>a &lt;<ins>i</ins>&gt; c</pre>" in tagged
    page = regressed().format("html")
    assert "<pre>The capital is Paris</pre>" in page
    assert "<pre>The capital is <ins>Lyon, not </ins>Paris<ins> (0)</ins></pre>" in page


def test_the_html_page_escapes_every_value_and_writes_no_forbidden_character() -> None:
    page = hostile().format("html")
    root = parse(page)
    assert len(root.find_all("script")) == 1 and not root.find_all("img")
    assert not FORBIDDEN.search(page)
    assert ATTACK[:20] in "".join(th.text() for th in root.find_all("th"))


async def test_save_as_picks_the_format_from_the_extension(tmp_path: Path) -> None:
    comparison = regressed()
    for name, check in (
        ("c.md", "# Comparison"),
        ("c.json", '"formatVersion": 1'),
        ("c.html", "<!DOCTYPE html>"),
        ("c.xml", "<testsuites"),
        ("c.txt", "Comparison (candidate − baseline)"),
    ):
        path = await comparison.save_as(tmp_path / "out" / name)
        assert check in path.read_text(encoding="utf-8")
    with pytest.raises(FormatError, match=r"no comparison format for the extension '\.pdf'"):
        await comparison.save_as(tmp_path / "c.pdf")
    with pytest.raises(FormatError, match="unknown comparison format 'pdf'; available: text"):
        comparison.format("pdf")
