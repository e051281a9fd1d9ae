"""The HTML report in a real browser: headless Chromium, scripts on and off.

``test_chromium_applies_the_filter_in_the_address`` needs only Chromium (Debian's
``chromium`` package, or the path in ``AEVAL_CHROMIUM``); the tests that click and type drive
it with Playwright's Python package, which is told to use that Chromium and never downloads a
browser of its own. Each test skips, saying what is missing, when its tools are absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from test_formatter_html import (
    HOSTILE,
    Node,
    body_rows,
    detail_nodes,
    many_rows,
    parse,
    repeated_report,
)

from aeval import EvaluationReport, EvaluationResult, EvaluationRow, EvaluationSample
from aeval.trace import CallError, Document, Retrieval, ToolCall, Trace

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = os.environ.get("AEVAL_CHROMIUM") or shutil.which("chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROWS = "#rows tbody tr"

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium: apt-get install -y --no-install-recommends chromium "
    "(or set AEVAL_CHROMIUM to a Chromium binary)",
)
pytestmark = needs_chromium


def write(report: EvaluationReport, directory: Path) -> str:
    path = directory / "report.html"
    path.write_text(report.format("html"), encoding="utf-8")
    return path.as_uri()


def shown(page: Page) -> list[tuple[str, str]]:
    """(outcome, flaky flag) of every row the browser shows."""
    return [
        (row.get_attribute("data-outcome") or "", row.get_attribute("data-flaky") or "")
        for row in page.locator(f"{ROWS}:visible").all()
    ]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="no Playwright: pip install playwright (its driver only; "
        "never run 'playwright install')",
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda message: problems.append(message.text))
    page.on("dialog", lambda dialog: problems.append(f"dialog: {dialog.message}"))
    yield page
    context.close()
    assert problems == [], "the page logged errors (a CSP violation logs one) or opened a dialog"


def test_clicking_a_filter_hides_the_other_rows(page: Page, tmp_path: Path) -> None:
    page.goto(write(repeated_report(), tmp_path))
    assert page.locator("#filters").is_visible(), "the script revealed the controls"
    assert page.locator("noscript").count() == 1
    assert len(shown(page)) == 18
    assert page.locator("#shown").inner_text() == "Showing 18 of 18 rows"

    page.get_by_role("button", name="Failed (4)", exact=True).click()
    assert shown(page) == [("failed", "true")] + [("failed", "false")] * 3
    assert page.locator("#shown").inner_text() == "Showing 4 of 18 rows"
    assert (
        page.get_by_role("button", name="Failed (4)", exact=True).get_attribute("aria-pressed")
        == "true"
    )
    assert (
        page.get_by_role("button", name="All (18)", exact=True).get_attribute("aria-pressed")
        == "false"
    )
    assert page.url.endswith("report.html#filter=failed")

    page.get_by_role("button", name="Flaky (9)", exact=True).click()
    assert [flag for _, flag in shown(page)] == ["true"] * 9
    page.get_by_role("button", name="Not passed (9)", exact=True).click()
    assert sorted({outcome for outcome, _ in shown(page)}) == ["error", "failed", "skipped"]
    page.get_by_role("button", name="Passed (9)", exact=True).click()
    assert {outcome for outcome, _ in shown(page)} == {"passed"} and len(shown(page)) == 9
    page.get_by_role("button", name="All (18)", exact=True).click()
    assert len(shown(page)) == 18
    assert page.url.endswith("report.html")


def test_typing_in_the_search_box_filters_rows(page: Page, tmp_path: Path) -> None:
    page.goto(write(repeated_report(), tmp_path))
    search = page.get_by_label("Search")
    search.press_sequentially("BONN")
    assert shown(page) == [("failed", "false"), ("skipped", "false")] * 2, "outputs are searched"
    assert page.locator("#shown").inner_text() == "Showing 4 of 18 rows"
    page.get_by_role("button", name="Skipped (3)", exact=True).click()
    assert shown(page) == [("skipped", "false")] * 2, "the filter and the search combine"
    assert page.url.endswith("#filter=skipped&q=BONN")
    search.fill("")
    assert len(shown(page)) == 3
    search.press_sequentially("30 s  judge")
    page.get_by_role("button", name="All (18)", exact=True).click()
    assert shown(page) == [("error", "true")], "every word must match"
    assert page.locator(f"{ROWS}:visible th").inner_text() == "slow [repeat 2]"
    search.fill("no such text")
    assert shown(page) == []
    assert page.locator("#shown").inner_text() == "Showing 0 of 18 rows"


def test_the_address_opens_a_filtered_view(page: Page, tmp_path: Path) -> None:
    url = write(repeated_report(), tmp_path)
    page.goto(f"{url}#filter=error&q=exact")
    assert shown(page) == [("error", "true")]
    assert page.get_by_label("Search").input_value() == "exact"
    assert (
        page.get_by_role("button", name="Errors (2)", exact=True).get_attribute("aria-pressed")
        == "true"
    )
    page.evaluate("location.hash = 'filter=skipped'")
    page.wait_for_function("document.getElementById('shown').textContent.startsWith('Showing 3')")
    assert shown(page) == [("skipped", "false")] * 3
    assert page.get_by_label("Search").input_value() == ""
    page.goto(f"{url}#filter=nonsense")
    assert len(shown(page)) == 18, "an unknown filter shows everything"


def test_without_scripts_every_row_shows(browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(write(repeated_report(), tmp_path) + "#filter=failed")
        assert not page.locator("#filters").is_visible()
        assert len(shown(page)) == 18
        assert "every row is shown" in page.locator("main").inner_text()
    finally:
        context.close()


def test_hostile_values_run_nothing(page: Page, tmp_path: Path) -> None:
    attack = f"<img src=x onerror=alert(1)>{HOSTILE}"
    sample = EvaluationSample(attack, [attack], attack, tags=[attack], metadata={attack: attack})
    rows = [
        EvaluationRow.from_result(sample, attack, attack, EvaluationResult.failing(0.0, attack)),
        EvaluationRow.from_result(sample, "Exact", "ok", EvaluationResult.passing(), position=1),
    ]
    page.goto(write(EvaluationReport(rows), tmp_path))
    page.get_by_role("button", name="Failed (1)", exact=True).click()
    assert shown(page) == [("failed", "false")]
    assert page.locator(f"{ROWS}:visible th").inner_text().startswith("<img src=x")
    page.get_by_label("Search").fill("onerror=alert(1)>")
    assert len(shown(page)) == 1
    assert page.evaluate("document.querySelectorAll('img, script').length") == 1


def test_chromium_applies_the_filter_in_the_address(tmp_path: Path) -> None:
    url = write(repeated_report(), tmp_path)
    result = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            *ARGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            f"{url}#filter=skipped&q=bonn",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    root = parse("<!DOCTYPE html>" + result.stdout)
    [table] = [t for t in root.find_all("table") if t.attrs.get("id") == "rows"]
    rows: list[Node] = table.find("tbody").find_all("tr")
    visible = [tr.attrs["data-outcome"] for tr in rows if "hidden" not in tr.attrs]
    assert visible == ["skipped", "skipped"]
    [form] = [f for f in root.find_all("form") if f.attrs.get("id") == "filters"]
    assert "hidden" not in form.attrs
    [status] = [p for p in form.find_all("p") if p.attrs.get("id") == "shown"]
    assert status.text() == "Showing 2 of 18 rows"


def _names(page: Page) -> list[str]:
    return page.locator(f"{ROWS} th").all_inner_texts()


def test_a_large_report_shows_every_row_a_page_at_a_time(page: Page, tmp_path: Path) -> None:
    report = many_rows(450)
    url = write(report, tmp_path)
    page.goto(url)
    failed = [f"sample {i}" for i in range(0, 450, 5)]
    passed = [f"sample {i}" for i in range(450) if i % 5]
    assert _names(page) == (failed + passed)[:200]
    assert page.locator("#shown").inner_text() == "Showing 450 of 450 rows (1–200 on this page)"
    assert page.locator("#page").inner_text() == "Page 1 of 3"
    assert page.locator("#previous").is_disabled()
    page.locator("#next").click()
    assert _names(page) == (failed + passed)[200:400]
    assert page.url.endswith("#page=2")
    page.locator("#next").click()
    assert _names(page) == (failed + passed)[400:]
    assert page.locator("#next").is_disabled()
    page.get_by_role("button", name="Failed (90)", exact=True).click()
    assert _names(page) == failed, "a filter looks at every row, from its first page"
    assert page.locator("#shown").inner_text() == "Showing 90 of 450 rows"
    assert not page.locator("#pages").is_visible()
    page.get_by_label("Search").fill("town 445")
    assert _names(page) == ["sample 445"], "the search reads every row's output"
    page.goto(f"{url}#filter=passed&page=2")
    assert _names(page) == passed[200:360]
    # the rows the script builds read as the page's static rows do
    static = body_rows(parse(report.format("html")))[0]
    page.goto(url)
    built = parse("<!DOCTYPE html>" + page.content())
    first = body_rows(built)[0]
    assert [td.text() for td in first.find_all("td")[:5]] == [
        td.text() for td in static.find_all("td")[:5]
    ]
    assert {k: v.text() for k, v in detail_nodes(first).items()} == {
        k: v.text() for k, v in detail_nodes(static).items()
    }


def test_without_scripts_a_large_report_shows_its_first_page(
    browser: Browser, tmp_path: Path
) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(write(many_rows(450), tmp_path))
        assert len(shown(page)) == 200
        text = page.locator("main").inner_text()
        assert "the first 200 of 450 rows are shown below" in text
        assert "… and 250 more rows" in text and "report.json holds every row" in text
    finally:
        context.close()


def test_the_script_builds_the_trace_timeline_the_static_rows_show(
    page: Page, tmp_path: Path
) -> None:
    attack = f"<img src=x onerror=alert(1)>{HOSTILE}"
    trace = Trace(
        tool_calls=(
            ToolCall(attack, {"q": attack}, {"r": attack}, mocked=True),
            ToolCall("book", {}, None, CallError(attack, attack)),
        ),
        retrievals=(Retrieval(attack, (Document(attack, attack, 0.5),)),),
    )
    sample = EvaluationSample("s", ["q"], "ok")
    rows = [
        EvaluationRow.from_result(sample, "Exact", "ok", EvaluationResult.passing(), trace=trace)
    ]
    report = EvaluationReport(rows)
    page.goto(write(report, tmp_path))
    built = page.evaluate(
        """() => {
          const dt = [...document.querySelectorAll("#rows tbody tr dl > dt")]
            .find((node) => node.textContent === "Trace");
          return dt ? dt.nextElementSibling.textContent : null;
        }"""
    )
    static = detail_nodes(body_rows(parse(report.format("html")))[0])["Trace"].text()
    assert built == static
    assert static.startswith("2 tool calls · 1 retrieval")
    assert page.evaluate("document.querySelectorAll('img, script').length") == 1
