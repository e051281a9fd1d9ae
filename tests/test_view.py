"""``aeval view`` over HTTP: a real uvicorn server on 127.0.0.1 started by each test, read and
posted to with httpx (the browser tests, in ``test_view_browser.py``, use these helpers)."""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import anyio
import httpx
import orjson
import pytest
from _benchmarks import quick_figures
from _cli import main

from aeval import (
    Conversation,
    EvaluationReport,
    EvaluationResult,
    EvaluationRow,
    EvaluationSample,
    RunInfo,
    RunStore,
    Scorer,
)
from aeval.strategies import NotBlankStrategy

_T = TypeVar("_T")
ROOT = Path(__file__).resolve().parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def report(
    count: int = 12,
    *,
    changed: frozenset[int] = frozenset(),
    hostile: str | None = None,
    complete: bool = True,
) -> EvaluationReport:
    """``count`` rows of the strategy ``Exact``, every third one failed; the outputs of the
    samples in ``changed`` differ; ``hostile`` goes into every field a user writes."""
    rows = []
    for index in range(count):
        name = f"sample {index}" if hostile is None else f"{hostile} {index}"
        sample = EvaluationSample(
            name,
            [f"What is the capital of country {index}?" + (hostile or "")],
            f"City {index}",
            tags=["geo"],
            metadata={"id": index, **({"note": hostile} if hostile else {})},
        )
        failed = index % 3 == 0
        explanation = f"Expected 'City {index}'" + (hostile or "")
        result = (
            EvaluationResult.failing(0.0, explanation)
            if failed
            else EvaluationResult.passing(explanation=explanation)
        )
        output = f"Town {index}" if failed else f"City {index}"
        if index in changed:
            output += " (changed)"
        if hostile is not None:
            output += hostile
        rows.append(EvaluationRow.from_result(sample, "Exact", output, result, index=index))
    run = RunInfo(
        started_at=1764530000.0,
        finished_at=1764530100.0,
        complete=complete,
        git_commit=COMMIT,
        samples_expected=count if complete else count + 5,
    )
    return EvaluationReport(rows, run=run)


def store_runs(path: Path, *reports: EvaluationReport, name: str = "geo") -> list[str]:
    """Save ``reports`` as runs of ``name`` in the store at ``path``; their ids."""

    async def save() -> list[str]:
        async with RunStore(path) as store:
            return [await store.save(r, name, git_dirty=False) for r in reports]

    return in_thread(save)


def in_thread(function: Callable[[], Awaitable[_T]]) -> _T:
    """``anyio.run(function)`` in a thread of its own (the browser tests' Playwright holds an
    event loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, function).result()


@dataclass(frozen=True)
class Viewer:
    """An ``aeval view`` process's address, as it printed it, and its token, as its pages
    carry it.

    Attributes:
        host: The address it is bound to.
        port: The port it listens on.
        origin: ``http://HOST:PORT``, the origin its pages are served from.
        token: The token its pages send with a label (empty without a run to page).
    """

    host: str
    port: int
    origin: str
    token: str


_SERVING = re.compile(r"aeval view: serving .* at (http://(\[[^\]]+\]|[^:/]+):(\d+))/ ")


@contextmanager
def viewer(store: Path, host: str = "127.0.0.1", **options: Any) -> Iterator[Viewer]:
    """``aeval view --port 0`` over ``store`` on ``host`` in a process of its own, until the
    block ends (then interrupted as Ctrl-C would); serving when the block starts."""
    argv = ["view", "--store", str(store), "--host", host, "--port", "0"]
    for option, value in options.items():
        argv += [f"--{option}", str(value)]
    process = subprocess.Popen(
        [sys.executable, "-m", "aeval", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = _SERVING.match(line)
        if found is None:
            process.kill()
            raise RuntimeError(f"the viewer did not start: {line}{process.communicate()[1]}")
        origin, address, port = found.groups()
        base = f"http://127.0.0.1:{port}" if host == "0.0.0.0" else origin
        yield Viewer(address.strip("[]"), int(port), origin, _page_token(base))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _page_token(base: str) -> str:
    """The token the viewer at ``base`` puts in its first run's page ("" with no run)."""
    with httpx.Client(base_url=base, timeout=30) as http:
        first = re.search(r'href="/runs/([^"/?#]+)', http.get("/").text)
        if first is None:
            return ""
        token = re.search(r'data-token="([^"]+)"', http.get(f"/runs/{first[1]}").text)
        return "" if token is None else token[1]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


def client(settings: Viewer) -> httpx.Client:
    """A client of the viewer, connecting to 127.0.0.1 when it is bound to every interface."""
    base = f"http://127.0.0.1:{settings.port}" if settings.host == "0.0.0.0" else settings.origin
    return httpx.Client(base_url=base, timeout=30)


def post_label(settings: Viewer, run: str, **changes: Any) -> httpx.Response:
    body = {
        "run": run,
        "sample": "sample 0",
        "strategy": "Exact",
        "repeat": 0,
        "verdict": "fail",
        "note": "wrong city",
        "reviewer": "ana",
    }
    headers = {
        "X-Aeval-Token": settings.token,
        "Origin": settings.origin,
        "Content-Type": "application/json",
    }
    headers.update(changes.pop("headers", {}))
    body.update(changes)
    with client(settings) as http:
        return http.post("/api/labels", json=body, headers={k: v for k, v in headers.items() if v})


def test_import_aeval_loads_neither_starlette_nor_uvicorn() -> None:
    code = (
        "import sys, aeval, aeval._cli\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn')"
        " or m.startswith('aeval._view'))\n"
        "print(loaded)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_view_without_the_extra_names_it(store: Path) -> None:
    store_runs(store, report())
    code = (
        "import runpy, sys\n"
        "sys.modules['starlette'] = None\n"
        f"sys.argv = ['aeval', 'view', '--store', {str(store)!r}, '--port', '0']\n"
        "runpy.run_module('aeval', run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 2
    assert "pip install 'aeval-engine[view]'" in out.stderr


def test_view_without_a_store_says_where_it_looked(tmp_path: Path, capsys: Any) -> None:
    assert main(["view", "--store", str(tmp_path / "none.sqlite")]) == 2
    assert "none.sqlite: no run store there" in capsys.readouterr().err


def test_view_on_a_taken_port_says_so(store: Path, capsys: Any) -> None:
    store_runs(store, report())
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        assert main(["view", "--store", str(store), "--port", str(port)]) == 2
    finally:
        taken.close()
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_the_command_prints_its_address_serves_and_exits_130_on_ctrl_c(store: Path) -> None:
    store_runs(store, report())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-m", "aeval", "view", "--store", str(store), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        try:
            line = process.stdout.readline()
            found = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
            assert found, line
            response = httpx.get(found.group(1) + "/", timeout=30)
            assert response.status_code == 200
            assert "<h1>Runs</h1>" in response.text
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(30)
        errors = process.stderr.read()
    assert process.returncode == 130, errors
    assert "Traceback" not in errors


def test_the_runs_page_lists_each_run_with_links(store: Path) -> None:
    first, second = store_runs(store, report(), report(changed=frozenset({1})))
    (partial,) = store_runs(store, report(complete=False), name="other")
    with viewer(store) as settings, client(settings) as http:
        page = http.get("/").text
    rows = re.findall(r'<tr data-run="([^"]+)">(.*?)</tr>', page)
    assert [run for run, _ in rows] == [partial, second, first], "newest first"
    cells = dict(rows)
    assert "67.00%" in cells[first] or "66.67%" in cells[first]
    assert "complete" in cells[first] and "partial" in cells[partial]
    assert f"<td>{COMMIT[:10]}</td>" in cells[first]
    assert "partial (12 of 17 samples)" in cells[partial]
    assert f'href="/runs/{first}"' in cells[first]
    assert 'href="/history/geo"' in cells[first]
    assert f'href="/compare?old={first}&amp;new={second}"' in cells[second]
    assert "/compare?" not in cells[first], "the first run of a name has nothing to compare to"


def test_the_runs_page_says_which_runs_have_labels(store: Path) -> None:
    first, second = store_runs(store, report(), report())
    with viewer(store) as settings:
        post_label(settings, second, sample="sample 0")
        post_label(settings, second, sample="sample 1", verdict="pass")
        with client(settings) as http:
            page = http.get("/").text
    cells = dict(re.findall(r'<tr data-run="([^"]+)">(.*?)</tr>', page))
    assert '<td class="num">2</td>' in cells[second]
    assert '<td class="num"></td>' in cells[first], "no label made in it"


def test_a_run_page_filters_searches_and_pages_on_the_server(store: Path) -> None:
    (run,) = store_runs(store, report(120))
    with viewer(store) as settings, client(settings) as http:
        first = http.get(f"/runs/{run}").text
        failed = http.get(f"/runs/{run}", params={"filter": "failed"}).text
        searched = http.get(f"/runs/{run}", params={"q": "Country 17?"}).text
        last = http.get(f"/runs/{run}", params={"page": "3"}).text
        beyond = http.get(f"/runs/{run}", params={"page": "99"}).text

    def outcomes(page: str) -> list[str]:
        return re.findall(r'<tr data-row="\d+"[^>]* data-outcome="(\w+)"', page)

    assert len(outcomes(first)) == 50
    assert outcomes(first)[:40] == ["failed"] * 40, "failures first"
    assert "Showing 120 of 120 rows (1–50 on this page)" in first
    assert "Page 1 of 3" in first and 'rel="next"' in first and 'rel="prev"' not in first
    assert outcomes(failed) == ["failed"] * 40
    assert 'data-filter="failed" aria-current="true">Failed (40)' in failed
    assert re.findall(r'data-sample="([^"]+)"', searched) == ["sample 117", "sample 17"]
    assert "Showing 2 of 120 rows" in searched, "every word, in any field, any case"
    assert len(outcomes(last)) == 20 and "Page 3 of 3" in last
    assert "Page 3 of 3" in beyond, "a page past the end shows the last one"


def test_a_bad_query_value_is_refused_naming_it(store: Path) -> None:
    (run,) = store_runs(store, report(12))
    with viewer(store) as settings, client(settings) as http:
        answers = {
            bad: http.get(f"/runs/{run}", params=dict([bad]))
            for bad in [("page", "abc"), ("page", "0"), ("filter", "bogus"), ("pick", "odd")]
        }
        review = http.get(f"/runs/{run}/review", params={"pick": "odd"})
    for (name, value), answer in answers.items():
        if name == "pick":
            assert answer.status_code == 200, "the run page has no pick"
            continue
        assert answer.status_code == 400
        assert f"?{name}=" in answer.text and repr(value).replace("'", "&#x27;") in answer.text
    assert "not-passed" in answers["filter", "bogus"].text, "the known filters are listed"
    assert review.status_code == 400 and "pick is one of" in review.text


def test_details_span_the_table_and_cells_keep_words_whole(store: Path) -> None:
    (run,) = store_runs(store, report(3))
    with viewer(store) as settings, client(settings) as http:
        page = http.get(f"/runs/{run}").text
    head = re.search(r'<table id="rows">\s*<thead><tr>(.*?)</tr></thead>', page)
    assert head is not None
    columns = re.findall(r"<th scope=\"col\">(\w+)</th>", head.group(1))
    assert "Details" not in columns and columns[-1] == "Review"
    more = re.findall(r'<tr class="more" data-more="(\d+)"><td colspan="(\d+)"', page)
    assert [span for _, span in more] == [str(len(columns))] * 3, "a full-width row each"
    assert "<summary>Details</summary>" in page.split('<tr class="more"')[1]
    assert "overflow-wrap: anywhere" not in page, "no word broken where it fits"


def test_every_page_carries_a_strict_policy_and_refuses_other_hosts(store: Path) -> None:
    old, new = store_runs(store, report(), report(changed=frozenset({1})))
    with viewer(store) as settings, client(settings) as http:
        for path in ("/", f"/runs/{old}", "/history/geo", f"/compare?old={old}&new={new}"):
            response = http.get(path)
            assert response.status_code == 200, path
            policy = response.headers["content-security-policy"]
            assert policy.startswith("default-src 'none'"), path
            assert "unsafe-inline" not in policy and "http" not in policy, path
            assert "frame-ancestors 'none'" in policy
            assert response.headers["x-content-type-options"] == "nosniff"
            meta = re.search(
                r'http-equiv="Content-Security-Policy" content="([^"]+)"', response.text
            )
            assert meta and policy.startswith(meta.group(1)), "the header is the page's own"
        rebound = http.get("/", headers={"Host": f"evil.example:{settings.port}"})
        wrong_port = http.get("/", headers={"Host": "127.0.0.1:1"})
        missing = http.get("/api/labels")
    assert rebound.status_code == 403 and "evil.example" in rebound.text
    assert wrong_port.status_code == 403
    assert missing.status_code == 405


def test_history_and_comparison_pages_are_the_formatters_pages(store: Path) -> None:
    old, new = store_runs(store, report(), report(changed=frozenset({1, 3})))
    with viewer(store) as settings, client(settings) as http:
        history = http.get("/history/geo").text
        comparison = http.get("/compare", params={"old": old, "new": new}).text
        unknown = http.get("/compare", params={"old": old, "new": "no-such-run"})
        file_ref = http.get("/compare", params={"old": old, "new": str(ROOT / "pyproject.toml")})
        run_page = http.get(f"/runs/{new}").text
    assert "<svg" in history and old in history and new in history
    assert "History of geo" in history and '<a href="/">All runs</a>' in history
    for run in (old, new):
        assert f'<tr><td><a href="/runs/{run}">{run}</a></td>' in history, "ids are links"
    assert "Changed rows" in comparison or "changed" in comparison.lower()
    assert f'<a href="/runs/{old}">Baseline {old}</a>' in comparison
    assert (
        f'</a><span aria-hidden="true"> · </span><a href="/runs/{new}">Candidate {new}</a>'
        in comparison
    ), "the links on top are set apart"
    assert unknown.status_code == 404 and "no-such-run" in unknown.text
    assert file_ref.status_code == 404, "a side is a stored run, never a file on disk"
    assert f'href="/compare?old={old}&amp;new={new}"' in run_page
    assert 'href="/history/geo"' in run_page


def test_a_run_of_100k_rows_serves_a_bounded_page(store: Path) -> None:
    big = report(100_000)
    (run,) = store_runs(store, big)
    with viewer(store) as settings, client(settings) as http:
        first = http.get(f"/runs/{run}")
        later = http.get(f"/runs/{run}", params={"page": "1500", "q": "country 99999?"})
    assert first.status_code == 200
    assert first.text.count('<tr data-row="') == 50
    assert len(first.content) < 500_000, "a page holds its rows, not the run's"
    assert "Showing 100000 of 100000 rows (1–50 on this page)" in first.text
    assert "Page 1 of 2000" in first.text
    assert re.findall(r'data-sample="([^"]+)"', later.text) == ["sample 99999"]


def test_hostile_values_are_escaped_in_every_page(store: Path) -> None:
    hostile = "<img src=x onerror=alert(1)>\"'</script><script>alert(2)</script>"
    (run,) = store_runs(store, report(4, hostile=hostile), name=hostile)
    with viewer(store) as settings, client(settings) as http:
        pages = [http.get("/").text, http.get(f"/runs/{run}").text]
        pages.append(http.get(f"/history/{quote(hostile, safe='')}").text)
    for page in pages:
        assert "<img src=x" not in page and "<script>alert" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_label_needs_the_token_the_origin_and_json(store: Path) -> None:
    (run,) = store_runs(store, report())
    with viewer(store) as settings:
        refused = {
            "no token": post_label(settings, run, headers={"X-Aeval-Token": ""}),
            "wrong token": post_label(settings, run, headers={"X-Aeval-Token": "guess"}),
            "other origin": post_label(settings, run, headers={"Origin": "http://evil.example"}),
            "no origin": post_label(settings, run, headers={"Origin": ""}),
            "cross-site": post_label(settings, run, headers={"Sec-Fetch-Site": "cross-site"}),
            "rebound host": post_label(settings, run, headers={"Host": "evil.example"}),
            "form": post_label(
                settings, run, headers={"Content-Type": "application/x-www-form-urlencoded"}
            ),
            "bad verdict": post_label(settings, run, verdict="maybe"),
            "no such row": post_label(settings, run, sample="sample 999"),
        }
        codes = {why: response.status_code for why, response in refused.items()}
        stored = labels_of(store, run)
        accepted = post_label(settings, run)
        with client(settings) as http:
            page = http.get(f"/runs/{run}", params={"q": "sample 0"}).text
    assert codes == {
        "no token": 403,
        "wrong token": 403,
        "other origin": 403,
        "no origin": 403,
        "cross-site": 403,
        "rebound host": 403,
        "form": 415,
        "bad verdict": 400,
        "no such row": 400,
    }
    assert "token" in refused["no token"].json()["error"]
    assert "sample 999" in refused["no such row"].json()["error"]
    assert stored == [], "no refused request wrote a label"
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["label"] == {
        "sample": "sample 0",
        "strategy": "Exact",
        "reviewer": "ana",
        "verdict": "fail",
        "note": "wrong city",
    }
    assert labels_of(store, run) == [("sample 0", "ana", "fail", False)]
    assert (
        '<li data-reviewer="ana" data-verdict="fail" data-stale="false">ana: '
        "<strong>fail</strong>: wrong city</li>"
    ) in page


def _label_request_head(settings: Viewer, framing: str) -> bytes:
    host = settings.origin.removeprefix("http://")
    return (
        f"POST /api/labels HTTP/1.1\r\nHost: {host}\r\nOrigin: {settings.origin}\r\n"
        f"X-Aeval-Token: {settings.token}\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("framing", ["declared", "chunked"])
def test_a_label_body_past_the_limit_is_refused_before_it_is_read_whole(
    store: Path, framing: str
) -> None:
    """The 413 comes while most of a 200 MB body is still unsent: the viewer reads at most
    its limit (a server reading the whole body would wait for the rest, and time out)."""
    (run,) = store_runs(store, report())
    with viewer(store) as settings:
        host, port = settings.origin.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=20) as conn:
            if framing == "declared":
                conn.sendall(_label_request_head(settings, f"Content-Length: {200 * 2**20}"))
                conn.sendall(b"{" + b" " * 1000)
            else:
                conn.sendall(_label_request_head(settings, "Transfer-Encoding: chunked"))
                chunk = b" " * 16384
                for _ in range(8):  # 128 KiB, past the 64 KiB limit; no last chunk is sent
                    conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            answer = b""
            while b"bytes" not in answer and (more := conn.recv(65536)):
                answer += more
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"a label's request is at most 65536 bytes" in answer
    assert labels_of(store, run) == []


def own_address() -> str:
    """A non-loopback IPv4 address of this machine (one its name resolves to, else one the
    kernel lists as local); the test is skipped on a machine with loopback alone. Nothing is
    sent anywhere to find it."""
    try:
        names = socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        names = []
    fib = Path("/proc/net/fib_trie")
    if fib.exists():
        lines = fib.read_text().splitlines()
        names += [
            lines[i - 1].split()[-1]
            for i, line in enumerate(lines)
            if i and line.strip() == "/32 host LOCAL"
        ]
    address = next((a for a in names if not a.startswith("127.")), None)
    if address is None:
        pytest.skip("this machine has no address but loopback")
    return address


def test_bound_to_every_interface_it_answers_its_own_addresses_and_labels_from_them(
    store: Path,
) -> None:
    (run,) = store_runs(store, report())
    mine = own_address()
    with viewer(store, host="0.0.0.0") as settings:
        port = settings.port
        with client(settings) as http:
            codes = {
                host: http.get("/", headers={"Host": host}).status_code
                for host in (
                    f"{mine}:{port}",
                    f"127.0.0.1:{port}",
                    f"localhost:{port}",
                    f"evil.example:{port}",
                    f"203.0.113.9:{port}",
                    f"{mine}:1",
                )
            }
            refused = http.get("/", headers={"Host": f"evil.example:{port}"}).text
        other_origin = post_label(
            settings,
            run,
            headers={"Host": f"{mine}:{port}", "Origin": f"http://127.0.0.1:{port}"},
        )
        stored = labels_of(store, run)
        accepted = post_label(
            settings, run, headers={"Host": f"{mine}:{port}", "Origin": f"http://{mine}:{port}"}
        )
    assert codes == {
        f"{mine}:{port}": 200,
        f"127.0.0.1:{port}": 200,
        f"localhost:{port}": 200,
        f"evil.example:{port}": 403,
        f"203.0.113.9:{port}": 403,
        f"{mine}:1": 403,
    }
    assert f"an IP address of this machine or localhost, port {port}" in refused
    assert other_origin.status_code == 403 and f"http://{mine}:{port}" in other_origin.text
    assert stored == []
    assert accepted.status_code == 200, accepted.text
    assert labels_of(store, run) == [("sample 0", "ana", "fail", False)]


def test_a_page_opened_at_localhost_labels(store: Path) -> None:
    (run,) = store_runs(store, report())
    with viewer(store) as settings:
        address = f"localhost:{settings.port}"
        accepted = post_label(
            settings, run, headers={"Host": address, "Origin": f"http://{address}"}
        )
        other = post_label(settings, run, headers={"Host": address})
    assert other.status_code == 403, "the origin is the page's: http://localhost:PORT"
    assert accepted.status_code == 200, accepted.text
    assert labels_of(store, run) == [("sample 0", "ana", "fail", False)]


def labels_of(path: Path, run: str) -> list[tuple[str, str, str, bool]]:
    """(sample, reviewer, verdict, stale) of each label of ``run`` in the store at ``path``."""

    async def read() -> list[tuple[str, str, str, bool]]:
        async with RunStore(path) as store:
            return [(x.sample, x.reviewer, x.verdict, x.stale) for x in await store.labels(run)]

    return in_thread(read)


def test_a_label_shows_stale_in_a_run_whose_output_changed(store: Path) -> None:
    (old,) = store_runs(store, report())
    with viewer(store) as settings:
        assert post_label(settings, old, sample="sample 1", verdict="pass").status_code == 200
        assert post_label(settings, old, sample="sample 2", verdict="pass").status_code == 200
    (new,) = store_runs(store, report(changed=frozenset({1})))
    with viewer(store) as settings, client(settings) as http:
        page = http.get(f"/runs/{new}").text
    labelled = dict(
        re.findall(r'data-sample="(sample \d+)".*?<ul class="labels">(.*?)</ul>', page, re.S)
    )
    assert 'data-stale="true"' in labelled["sample 1"]
    assert '<span class="stale">stale</span>' in labelled["sample 1"]
    assert 'data-stale="false"' in labelled["sample 2"]
    assert labelled["sample 3"] == ""


def test_the_review_queue_shows_the_picked_rows_reproducibly(store: Path) -> None:
    (run,) = store_runs(store, report(30))
    with viewer(store, pick="failures", sample=4, seed=7) as settings, client(settings) as http:
        queue = http.get(f"/runs/{run}/review").text
        again = http.get(f"/runs/{run}/review").text
        other_seed = http.get(f"/runs/{run}/review", params={"seed": "8"}).text
        everything = http.get(f"/runs/{run}/review", params={"pick": "all"}).text
        bad = http.get(f"/runs/{run}/review", params={"pick": "some"})
        run_page = http.get(f"/runs/{run}").text

    def samples(page: str) -> list[str]:
        return re.findall(r'data-sample="([^"]+)"', page)

    assert len(samples(queue)) == 4 and samples(queue) == samples(again)
    assert all(int(name.split()[1]) % 3 == 0 for name in samples(queue)), "failures only"
    assert samples(other_seed) != samples(queue)
    assert "Review queue: failures, a random sample of 4 (seed 7): 4 rows." in queue
    assert len(samples(everything)) == 4, "the sample still applies"
    assert "Review queue: all, a random sample of 4 (seed 7)" in everything
    assert f'action="/runs/{run}/review"' in queue
    assert bad.status_code == 400 and "pick is one of" in bad.text
    assert f'href="/runs/{run}/review">Review</a>' in run_page
    assert len(samples(run_page)) == 30


def test_the_benchmark_prints_each_page(tmp_path: Path) -> None:
    done, figures = quick_figures("bench_view.py", tmp_path / "view.json")
    assert "aeval view over a 5,000-row run (quick mode)" in done.stdout
    assert "baseline: RunStore.load of the run" in done.stdout
    assert figures["figures"]["baseline"]["RunStore.load"] > 0
    assert set(figures["figures"]["pages"]) == {
        "first page (cold)",
        "first page (warm)",
        "page 50",
        "failed filter",
        "search",
        "search every row",
        "review queue",
        "runs list",
    }
    assert (
        figures["figures"]["pages"]["search"]["bytes"]
        < figures["figures"]["pages"]["first page (warm)"]["bytes"]
    ), "the search keeps one row"


def test_a_damaged_row_or_a_bad_ref_is_an_error_page_naming_it(store: Path) -> None:
    (run,) = store_runs(store, report(12))
    with closing(sqlite3.connect(store)) as connection, connection:
        connection.execute(
            "UPDATE rows SET data = '{\"name\": 1}' WHERE id = (SELECT min(id) FROM rows)"
        )
    with viewer(store) as settings, client(settings) as http:
        damaged = http.get(f"/runs/{run}")
        passed = http.get(f"/runs/{run}", params={"filter": "passed"})
        bad_ref = http.get("/runs/geo@yesterday")
    assert damaged.status_code == 500
    assert str(store) in damaged.text and f"{run}: row 1: field" in damaged.text
    assert passed.status_code == 200, "pages without the row are served"
    assert bad_ref.status_code == 404 and "geo@yesterday" in bad_ref.text


def test_a_conversation_row_shows_its_transcript_turn_by_turn(store: Path) -> None:
    async def reply(conversation: Conversation) -> str:
        return f"answer to <{conversation.messages[-1]['content']}>"

    async def evaluated() -> EvaluationReport:
        sample = EvaluationSample("trip", turns=["Plan a trip", "Make it cheaper"])
        async with Scorer() as scorer:
            return await scorer.evaluate([sample], reply, NotBlankStrategy())

    (run,) = store_runs(store, in_thread(evaluated))
    with viewer(store) as settings, client(settings) as http:
        page = http.get(f"/runs/{run}").text
    assert '<ol class="turns">' in page
    assert "Turn 1" in page and "Turn 2" in page
    assert "answer to &lt;Make it cheaper&gt;" in page


def judged_report() -> EvaluationReport:
    """Four rows of the judge ``Judge``: two read at once, one re-asked after an unreadable
    reply, one unreadable twice; tagged ``easy`` or ``hard``."""
    records = [
        [{"judge": "m", "verdict": "passed"}],
        [{"judge": "m", "verdict": "failed"}],
        [{"judge": "m", "verdict": "passed", "unreadable": True, "reasked": True}],
        [{"judge": "m", "verdict": "unscored", "unreadable": True, "reasked": True}],
    ]
    rows = []
    for index, judges in enumerate(records):
        sample = EvaluationSample(f"q{index}", [index], "a", tags=["easy" if index else "hard"])
        result = EvaluationResult(
            index != 1, 1.0 if index != 1 else 0.0, metadata={"judges": judges}
        )
        rows.append(EvaluationRow.from_result(sample, "Judge", "a", result, index=index))
    return EvaluationReport(rows, run=RunInfo(started_at=1.0, finished_at=2.0))


def test_the_run_page_shows_scores_per_strategy_and_tag_and_the_judges_rates(
    store: Path,
) -> None:
    (run,) = store_runs(store, judged_report())
    with viewer(store) as settings, client(settings) as http:
        page = http.get(f"/runs/{run}").text

    def table(key: str) -> list[list[str]]:
        found = re.search(rf'<table class="groups" id="by-{key}">.*?<tbody>(.*?)</tbody>', page)
        assert found is not None, key
        return [
            re.findall(r"<t[hd][^>]*>([^<]*)</t[hd]>", row)
            for row in re.findall(r"<tr>(.*?)</tr>", found.group(1))
        ]

    assert [row[:3] for row in table("strategy")] == [["Judge", "4", "75.00%"]]
    assert [row[:3] for row in table("tag")] == [["easy", "3", "66.67%"], ["hard", "1", "100.00%"]]
    assert table("judge") == [["Judge", "4", "50.00%", "50.00%"]]


def test_the_run_page_counts_labels_and_their_kappa_and_marks_contradictions(
    store: Path,
) -> None:
    (run,) = store_runs(store, report(12))
    with viewer(store) as settings:
        with client(settings) as http:
            assert "0 of 12 rows labelled" in http.get(f"/runs/{run}").text
        answers = [
            post_label(settings, run, sample=f"sample {i}", verdict=verdict).json()
            for i, verdict in [(0, "fail"), (1, "pass"), (2, "fail"), (3, "fail")]
        ]
        with client(settings) as http:
            page = http.get(f"/runs/{run}").text
    assert [a["labelled"] for a in answers] == [f"{n} of 12 rows labelled" for n in (1, 2, 3, 4)]
    said = "agreement with the verdicts: 75.00% of 4 labels, kappa 0.50 [-0.23, 1.00]"
    assert answers[-1]["agreement"] == said
    assert '<span id="labelled">4 of 12 rows labelled</span>' in page and said in page
    marked = re.findall(r'data-sample="([^"]+)"[^>]*>(?:(?!</tr>).)*class="contradicts"', page)
    assert marked == ["sample 2"], "a fail on a passed row is marked, agreeing labels are not"


def test_labels_export_as_jsonl_and_csv(store: Path) -> None:
    (run,) = store_runs(store, report(12))
    with viewer(store) as settings:
        post_label(settings, run, sample="sample 0", verdict="pass", note="=HYPERLINK(1)")
        post_label(settings, run, sample="sample 1", verdict="fail", note=None, reviewer="bo")
        with client(settings) as http:
            page = http.get(f"/runs/{run}").text
            jsonl = http.get(f"/runs/{run}/labels.jsonl")
            csv_answer = http.get(f"/runs/{run}/labels.csv")
            unknown = http.get(f"/runs/{run}/labels.xml")
            missing = http.get("/runs/nosuchrun/labels.csv")
    assert f'href="/runs/{run}/labels.jsonl"' in page and f'href="/runs/{run}/labels.csv"' in page
    lines = [orjson.loads(line) for line in jsonl.text.splitlines()]
    assert [(x["sample"], x["reviewer"], x["verdict"], x["outcome"]) for x in lines] == [
        ("sample 0", "ana", "pass", "failed"),
        ("sample 1", "bo", "fail", "passed"),
    ]
    assert lines[0]["note"] == "=HYPERLINK(1)" and lines[0]["run"] == run
    assert lines[0]["stale"] is False and lines[0]["labelled_at"].endswith("+00:00")
    assert f'filename="labels-{run}.jsonl"' in jsonl.headers["content-disposition"]
    assert csv_answer.headers["content-type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(csv_answer.text)))
    assert table[0][:9] == [
        "run", "name", "sample", "strategy", "repeat", "outcome", "reviewer", "verdict", "note",
    ]  # fmt: skip
    assert table[1][2:9] == ["sample 0", "Exact", "0", "failed", "ana", "pass", "'=HYPERLINK(1)"]
    assert table[2][8] == "", "no note is an empty cell"
    assert unknown.status_code == 404 and "labels.csv" in unknown.text
    assert missing.status_code == 404


def test_the_run_page_filters_by_strategy_and_sorts_by_score(store: Path) -> None:
    rows = []
    for index in range(6):
        sample = EvaluationSample(f"s{index}", [index], "a")
        for strategy, score in (("Exact", index / 10), ("Other", 1 - index / 10)):
            result = EvaluationResult(score >= 0.5, score)
            rows.append(EvaluationRow.from_result(sample, strategy, "a", result, index=index))
    (run,) = store_runs(store, EvaluationReport(rows, run=RunInfo(started_at=1.0)))
    with viewer(store) as settings, client(settings) as http:
        other = http.get(f"/runs/{run}", params={"strategy": "Other"}).text
        low = http.get(f"/runs/{run}", params={"strategy": "Exact", "sort": "score"}).text
        high = http.get(f"/runs/{run}", params={"sort": "-score"}).text
        unknown = http.get(f"/runs/{run}", params={"strategy": "Nope"})
        bad_sort = http.get(f"/runs/{run}", params={"sort": "name"})

    def shown(page: str) -> list[tuple[str, str]]:
        return re.findall(r'data-sample="([^"]+)" data-repeat="0" data-strategy="([^"]+)"', page)

    assert {strategy for _, strategy in shown(other)} == {"Other"} and len(shown(other)) == 6
    assert "Showing 6 of 6 rows" in other, "the counts are the strategy's"
    assert f'href="/runs/{run}?strategy=Other&amp;filter=failed"' in other, "links keep it"
    assert [sample for sample, _ in shown(low)] == [f"s{i}" for i in range(6)]
    assert shown(high)[0] == ("s0", "Other") and shown(high)[-1] == ("s0", "Exact")
    assert unknown.status_code == 400 and "Exact, Other" in unknown.text
    assert bad_sort.status_code == 400 and "?sort=" in bad_sort.text


def test_a_grid_of_three_runs_aligns_rows_filters_and_pairs_each_with_the_first(
    store: Path,
) -> None:
    first, second, third = store_runs(
        store, report(6), report(6, changed=frozenset({1})), report(6, changed=frozenset({2}))
    )
    runs: list[tuple[str, str | int | float | bool | None]]
    runs = [("run", first), ("run", second), ("run", third)]
    with viewer(store) as settings, client(settings) as http:
        grid = http.get("/grid", params=runs).text
        differ = http.get("/grid", params=[*runs, ("filter", "differ")]).text
        failed = http.get("/grid", params=[*runs, ("filter", "any-failed")]).text
        one = http.get("/grid", params=runs[:1])
        eleven = http.get("/grid", params=[("run", first)] * 11)
        bogus = http.get("/grid", params=[*runs, ("filter", "bogus")])
        missing = http.get("/grid", params=[*runs[:2], ("run", "no-such-run")])
        listed = http.get("/").text

    def samples(page: str) -> list[str]:
        return re.findall(r'<tr data-sample="([^"]+)"', page)

    assert samples(grid) == [f"sample {i}" for i in range(6)], "in the first run's order"
    row = re.search(r'<tr data-sample="sample 0".*?</tr>', grid)
    assert row is not None and row.group(0).count('data-outcome="failed"') == 3
    assert "Town 0" in row.group(0), "each run's output"
    assert "Grid of 3 runs" in grid and f'<a href="/runs/{third}">{third}</a>' in grid
    assert re.findall(r'<tr data-run="([^"]+)"><th scope="row">', grid) == [second, third]
    assert "Each run against " + first in grid
    assert samples(differ) == [], "a changed output with the same verdict does not differ"
    assert samples(failed) == ["sample 0", "sample 3"]
    assert 'data-filter="any-failed" aria-current="true">Any run failed (2)' in failed
    assert one.status_code == 400 and "2 to 10 runs" in one.text
    assert eleven.status_code == 400
    assert bogus.status_code == 400 and "differ" in bogus.text
    assert missing.status_code == 404 and "run 3 of the grid" in missing.text
    assert '<form id="grid-form" method="get" action="/grid">' in listed
    assert f'<input type="checkbox" name="run" value="{first}"' in listed


def failing_sample_1(base: EvaluationReport) -> EvaluationReport:
    """``base`` with the row of sample 1 failed: a second run whose verdicts differ there."""
    rows = [
        EvaluationRow.from_result(
            row.sample, "Exact", "City 1", EvaluationResult.failing(0.0, "no"), index=1
        )
        if row.name == "sample 1"
        else row
        for row in base.evaluations
    ]
    return EvaluationReport(rows, run=base.run)


def test_the_grid_shows_where_verdicts_differ(store: Path) -> None:
    base = report(6)
    first, second = store_runs(store, base, failing_sample_1(base))
    with viewer(store) as settings, client(settings) as http:
        differ = http.get("/grid", params=[("run", first), ("run", second), ("filter", "differ")])
    assert re.findall(r'<tr data-sample="([^"]+)"', differ.text) == ["sample 1"]
    assert 'data-differ="true"' in differ.text
