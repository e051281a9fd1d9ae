"""The comparison's HTML page in headless Chromium: the filters work offline, and with scripts
off every changed pair shows (skips, saying what is missing, without Chromium or Playwright)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from _compare import run
from test_formatter_html_browser import browser, needs_chromium, page

from aeval import Comparison

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = ["browser", "page"]

pytestmark = needs_chromium
PAIRS = "#pairs tbody tr"


def write(directory: Path) -> str:
    """Three regressions (one a new error), one fix, one more new error, one newly unscored."""
    before = {f"s{i}": {"x": "P" if i < 6 else "F"} for i in range(10)}
    after = {f"s{i}": {"x": "PPPFFEEPUF"[i]} for i in range(10)}
    comparison = Comparison.of(run(before), run(after))
    path = directory / "comparison.html"
    path.write_text(comparison.format("html"), encoding="utf-8")
    return path.as_uri()


def shown(page: Page) -> list[str]:
    return [row.get_attribute("data-kinds") or "" for row in page.locator(f"{PAIRS}:visible").all()]


def test_the_filters_show_each_kind_of_change(page: Page, tmp_path: Path) -> None:
    page.goto(write(tmp_path))
    assert page.locator("#filters").is_visible()
    assert len(shown(page)) == 6
    page.get_by_role("button", name="Regressions (3)", exact=True).click()
    assert shown(page) == ["regression", "regression", "regression new-error"]
    assert page.url.endswith("comparison.html#filter=regression")
    page.get_by_role("button", name="Fixes (1)", exact=True).click()
    assert shown(page) == ["fix"]
    page.get_by_role("button", name="New errors (2)", exact=True).click()
    assert shown(page) == ["regression new-error", "new-error"]
    assert page.locator("#shown").inner_text() == "Showing 2 of 6 changed pairs"
    page.get_by_role("button", name="Newly unscored (1)", exact=True).click()
    assert shown(page) == ["newly-unscored"]
    page.get_by_role("button", name="All changed (6)", exact=True).click()
    assert len(shown(page)) == 6 and page.url.endswith("comparison.html")


def test_the_address_opens_a_filtered_view(page: Page, tmp_path: Path) -> None:
    page.goto(write(tmp_path) + "#filter=fix")
    assert shown(page) == ["fix"]
    page.goto(write(tmp_path) + "#filter=nonsense")
    assert len(shown(page)) == 6


def test_without_scripts_every_changed_pair_shows(browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(write(tmp_path) + "#filter=fix")
        assert not page.locator("#filters").is_visible()
        assert len(shown(page)) == 6
        assert "every changed pair is shown" in page.locator("main").inner_text()
    finally:
        context.close()
