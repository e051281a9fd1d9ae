"""``aeval view`` in a real browser: Debian's headless Chromium driven by Playwright (never a
downloaded browser; see ``test_formatter_html_browser.py``), against the app served by
uvicorn on 127.0.0.1 by each test. The assertions read the page, not screenshots."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from anyio.from_thread import start_blocking_portal
from test_formatter_html_browser import ARGS, CHROMIUM, needs_chromium
from test_view import COMMIT, failing_sample_1, labels_of, report, store_runs, viewer

from aeval import EvaluationRow, RunInfo, RunStore

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = needs_chromium

ROWS = "#rows tbody tr[data-row]"
HOSTILE = (
    "<img src=x onerror=\"window.__xss='img';alert(1)\">"
    "</script><script>window.__xss='script';alert(2)</script>"
    "\"'><svg onload=\"window.__xss='svg'\">"
)


@pytest.fixture(scope="module")
def sync_api() -> Any:
    return pytest.importorskip(
        "playwright.sync_api",
        reason="no Playwright: pip install playwright (its driver only; "
        "never run 'playwright install')",
    )


@pytest.fixture(scope="module")
def browser(sync_api: Any) -> Iterator[Browser]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def problems() -> list[str]:
    return []


@pytest.fixture
def page(browser: Browser, problems: list[str]) -> Iterator[Page]:
    """A fresh page; any script error, dialog or policy violation fails the test."""
    context = browser.new_context()
    page = context.new_page()
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if "Content Security Policy" in message.text or message.type == "error"
            else None
        ),
    )
    page.on("dialog", lambda dialog: problems.append(f"dialog: {dialog.message}"))
    yield page
    context.close()
    assert problems == [], "a script failed, a policy was violated or a dialog opened"


def samples(page: Page) -> list[str]:
    return [row.get_attribute("data-sample") or "" for row in page.locator(ROWS).all()]


def labels(page: Page) -> dict[str, tuple[str, str, str]]:
    """Each labelled row's sample: (verdict, stale flag, text) of its first label."""
    found = {}
    for row in page.locator(ROWS).all():
        item = row.locator("ul.labels li")
        if item.count():
            found[row.get_attribute("data-sample") or ""] = (
                item.first.get_attribute("data-verdict") or "",
                item.first.get_attribute("data-stale") or "",
                item.first.inner_text(),
            )
    return found


def test_browse_filter_search_label_by_keyboard_reload_and_compare(
    page: Page, sync_api: Any, tmp_path: Path
) -> None:
    expect = sync_api.expect
    store = tmp_path / "runs.sqlite"
    (old,) = store_runs(store, report(12))
    with viewer(store) as settings:
        page.goto(settings.origin + "/")
        page.get_by_role("link", name=old).click()
        expect(page.locator("h1")).to_contain_text("geo")
        assert samples(page)[:4] == ["sample 0", "sample 3", "sample 6", "sample 9"]

        page.get_by_role("link", name="Failed (4)").click()
        expect(page.locator("#shown")).to_have_text("Showing 4 of 12 rows")
        assert {r.get_attribute("data-outcome") for r in page.locator(ROWS).all()} == {"failed"}
        page.get_by_label("Search").fill("sample 3")
        page.get_by_label("Search").press("Enter")
        expect(page.locator("#shown")).to_have_text("Showing 1 of 12 rows")
        assert samples(page) == ["sample 3"], "the filter and the search combine"
        assert "filter=failed" in page.url and "q=sample+3" in page.url

        page.get_by_label("Search").fill("")
        page.get_by_label("Search").press("Enter")
        expect(page.locator("#shown")).to_have_text("Showing 4 of 12 rows")
        page.get_by_role("link", name="All (12)").click()
        expect(page.locator("#shown")).to_have_text("Showing 12 of 12 rows")
        page.get_by_label("Reviewer").fill("ana")
        page.locator("h1").click()
        status = page.locator("#status")
        counter = page.locator("#labelled")
        current = page.locator(f"{ROWS}.current")
        expect(counter).to_have_text("0 of 12 rows labelled")
        page.keyboard.press("j")
        page.keyboard.press("p")
        expect(status).to_have_text("Saved: sample 0 pass")
        expect(counter).to_have_text("1 of 12 rows labelled")
        expect(current).to_have_attribute("data-sample", "sample 3"), "a label moves on"
        contradicts = page.locator(f'{ROWS}[data-sample="sample 0"] .contradicts')
        expect(contradicts).to_have_count(1), "a pass on a failed row is marked"
        page.keyboard.press("f")
        expect(status).to_have_text("Saved: sample 3 fail")
        expect(counter).to_have_text("2 of 12 rows labelled")
        page.keyboard.press("n")
        page.keyboard.type("capital is wrong")
        page.keyboard.press("Enter")
        page.keyboard.press("f")
        expect(status).to_have_text("Saved: sample 6 fail")
        expect(current).to_have_attribute("data-sample", "sample 9")
        page.keyboard.press("k")
        expect(current).to_have_attribute("data-sample", "sample 6")
        page.locator(f'{ROWS}[data-sample="sample 9"] button[data-verdict="pass"]').click()
        expect(status).to_have_text("Saved: sample 9 pass")
        expect(current).to_have_attribute("data-sample", "sample 9"), "a click stays"
        expect(counter).to_have_text("4 of 12 rows labelled")
        expect(page.locator("#agreement")).to_have_text(
            "agreement with the verdicts: 50.00% of 4 labels, "
            "kappa undefined until labels and verdicts each hold both pass and fail"
        )

        page.reload()
        assert labels(page) == {
            "sample 0": ("pass", "false", "ana: pass"),
            "sample 3": ("fail", "false", "ana: fail"),
            "sample 6": ("fail", "false", "ana: fail: capital is wrong"),
            "sample 9": ("pass", "false", "ana: pass"),
        }
        assert page.get_by_label("Reviewer").input_value() == "ana", "the name is kept"
    assert labels_of(store, old) == [
        ("sample 0", "ana", "pass", False),
        ("sample 3", "ana", "fail", False),
        ("sample 6", "ana", "fail", False),
        ("sample 9", "ana", "pass", False),
    ]

    (new,) = store_runs(store, report(12, changed=frozenset({0})))
    with viewer(store) as settings:
        page.goto(f"{settings.origin}/runs/{new}")
        shown = labels(page)
        assert shown["sample 0"][:2] == ("pass", "true")
        assert shown["sample 0"][2].endswith("stale")
        assert shown["sample 3"][:2] == ("fail", "false")
        page.get_by_role("link", name="Compare with the previous run").click()
        expect(page.locator("h1")).to_contain_text("Comparison")
        assert page.get_by_role("link", name=f"Baseline {old}").count() == 1
        assert "Changed pairs: 0" in page.locator("main").inner_text(), "aeval compare's page"
        page.get_by_role("link", name="All runs").click()
        page.get_by_role("link", name="history").first.click()
        expect(page.locator("svg circle")).to_have_count(2)


def test_hostile_values_in_every_field_never_run(page: Page, sync_api: Any, tmp_path: Path) -> None:
    expect = sync_api.expect
    store = tmp_path / "runs.sqlite"
    old, new = store_runs(
        store,
        report(4, hostile=HOSTILE),
        report(4, hostile=HOSTILE, changed=frozenset({1})),
        name=HOSTILE,
    )
    with viewer(store) as settings:
        page.goto(f"{settings.origin}/runs/{old}")
        page.get_by_label("Reviewer").fill(HOSTILE)
        page.locator("h1").click()
        page.keyboard.press("j")
        page.keyboard.press("n")
        page.keyboard.type(HOSTILE)
        page.keyboard.press("Enter")
        page.keyboard.press("f")
        expect(page.locator("#status")).to_contain_text("Saved:")
        addresses = [
            "/",
            f"/runs/{old}",
            f"/runs/{new}",
            f"/runs/{new}/review",
            f"/runs/{old}?q={quote(HOSTILE)}",
            f"/history/{quote(HOSTILE, safe='')}",
            f"/compare?old={old}&new={new}",
            f"/grid?run={old}&run={new}",
        ]
        for address in addresses:
            page.goto(settings.origin + address)
            for details in page.locator("details").all():
                details.evaluate("node => { node.open = true; }")
            assert page.evaluate("window.__xss") is None, address
            assert page.locator("main img, main svg[onload], main script").count() == 0, address
            if "/runs/" in address:
                assert "<img src=x" in page.locator("main").inner_text(), "shown as text"
        page.goto(f"{settings.origin}/runs/{new}")
        note = page.locator(f"{ROWS} ul.labels li").first
        assert HOSTILE in note.inner_text(), "the reviewer and the note show as text"


def test_a_reviewer_follows_a_live_run_labels_it_grids_three_runs_and_exports(
    page: Page, sync_api: Any, tmp_path: Path
) -> None:
    expect = sync_api.expect
    store = tmp_path / "runs.sqlite"
    base = report(6)
    first, second = store_runs(store, base, failing_sample_1(base))
    started = RunInfo(started_at=1764530200.0, git_commit=COMMIT, samples_expected=6)
    with start_blocking_portal() as portal:
        opened = RunStore(store)
        sink = opened.sink("geo")
        portal.call(sink.run_started, started)

        def send(rows: list[EvaluationRow]) -> None:
            async def sent() -> None:
                for row in rows:
                    await sink.send(row)
                await sink.flush()

            portal.call(sent)

        send(list(base.evaluations[:3]))
        live = sink.run_id
        assert live is not None
        page.set_viewport_size({"width": 1400, "height": 900})
        with viewer(store) as settings:
            page.goto(f"http://localhost:{settings.port}/")
            expect(page.locator(f'tr[data-run="{live}"]')).to_contain_text("running")
            page.get_by_role("link", name=live).click()
            banner = page.locator("#banner")
            expect(banner).to_contain_text("RUNNING: 3 of 6 samples so far")
            expect(page.locator("#shown")).to_have_text("Showing 3 of 3 rows")
            page.evaluate("window.__stayed = true")
            send(list(base.evaluations[3:]))
            expect(page.locator("#shown")).to_have_text("Showing 6 of 6 rows", timeout=15_000)
            expect(banner).to_contain_text("RUNNING: 6 of 6 samples so far")
            portal.call(sink.run_finished, replace(started, finished_at=1764530300.0))
            expect(page.locator("#review")).to_have_attribute(
                "data-running", "false", timeout=15_000
            )
            expect(banner).to_have_count(0), "a complete run has no banner"
            assert page.evaluate("window.__stayed") is True, "followed without a reload"

            page.get_by_label("Reviewer").fill("ana")
            page.locator("h1").click()
            counter = page.locator("#labelled")
            page.keyboard.press("j")
            for verdict, count in (("f", 1), ("f", 2), ("p", 3), ("p", 4)):
                page.keyboard.press(verdict)
                expect(counter).to_have_text(f"{count} of 6 rows labelled")
            expect(page.locator("#agreement")).to_contain_text("100.00% of 4 labels, kappa 1.00")
            page.reload()
            expect(page.locator("#agreement")).to_contain_text("kappa 1.00")

            page.locator("#rows tr.more summary").first.click()
            details = page.locator("#rows tr.more details").first
            box = details.bounding_box()
            assert box is not None and box["width"] > 1000, "details span the table"
            badge = page.locator("#rows .badge").first.bounding_box()
            assert badge is not None and badge["height"] < 30, "FAILED on one line"
            page.screenshot(path=str(tmp_path / "run-1400.png"), full_page=True)

            page.goto(f"http://localhost:{settings.port}/")
            for run in (first, second, live):
                page.get_by_label(f"Grid: {run}").check()
            page.get_by_role("button", name="Grid of the checked runs").click()
            expect(page.locator("h1")).to_have_text("Grid of 3 runs")
            page.get_by_role("link", name="Verdicts differ (1)").click()
            expect(page.locator("#grid tbody tr")).to_have_count(1)
            assert page.locator("#grid tbody tr").get_attribute("data-sample") == "sample 1"
            assert page.locator("#paired tbody tr").count() == 2, "each against the first"
            page.screenshot(path=str(tmp_path / "grid-1400.png"), full_page=True)

            page.goto(f"{settings.origin}/runs/{live}")
            with page.expect_download() as download:
                page.get_by_role("link", name="Labels as CSV").click()
            lines = Path(download.value.path()).read_text().splitlines()
            assert lines[0].startswith("run,name,sample,strategy,repeat,outcome,reviewer,verdict")
            assert len(lines) == 5
            with page.expect_download() as download:
                page.get_by_role("link", name="Labels as JSONL").click()
            exported = Path(download.value.path()).read_text().splitlines()
            assert len(exported) == 4 and all('"reviewer":"ana"' in line for line in exported)
        portal.call(opened.aclose)


class _Elsewhere(BaseHTTPRequestHandler):
    """Another site: one empty page, no policy."""

    def do_GET(self) -> None:
        body = b"<!DOCTYPE html><title>elsewhere</title><p>elsewhere</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def elsewhere() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Elsewhere)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)


def test_a_post_without_the_token_or_from_another_site_is_refused(
    page: Page, problems: list[str], tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    (run,) = store_runs(store, report(3))
    body = (
        f'{{"run": "{run}", "sample": "sample 0", "strategy": "Exact", "verdict": "fail", '
        '"reviewer": "mallory"}'
    )
    post = (
        "([url, type, headers, body]) => fetch(url, {method: 'POST', mode: 'no-cors', body, "
        "headers: {'Content-Type': type, ...headers}}).then(() => 'sent', () => 'blocked')"
    )
    with viewer(store) as settings, elsewhere() as address:
        page.goto(f"{settings.origin}/runs/{run}")
        without = page.evaluate(
            "body => fetch('/api/labels', {method: 'POST', body, "
            "headers: {'Content-Type': 'application/json'}}).then(r => r.status)",
            body,
        )
        page.goto(address)
        url = f"{settings.origin}/api/labels"
        simple = page.evaluate(post, [url, "text/plain", {}, body])
        with_token = page.evaluate(
            post, [url, "text/plain", {"X-Aeval-Token": settings.token}, body]
        )
        page.set_content(
            f'<form method="post" action="{url}" enctype="text/plain">'
            f"<input name='{{\"a\":\"' value='\"}}'></form>"
        )
        with page.expect_navigation():
            page.locator("form").evaluate("form => form.submit()")
        form_answer = page.locator("body").inner_text()
    problems.clear()
    assert without == 403
    assert simple == with_token == "blocked", "no answer is readable by another site"
    assert "missing or wrong token" in form_answer, "a cross-site form post is refused"
    assert labels_of(store, run) == [], "no attempt wrote a label"
