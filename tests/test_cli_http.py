"""``aeval run`` against an HTTP target served on 127.0.0.1 by the test."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _cli import DATA, Cli, cli, rows_of

__all__ = ["cli"]


class Handler(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        if body["message"] == "boom":
            payload = b"overloaded, try later"
            self.send_response(503)
            self.send_header("Content-Type", "text/plain")
        else:
            reply = {"choices": [{"message": {"content": f"echo: {body['message']}"}}]}
            payload = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("RecordingHandler", (Handler,), {"received": received})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", received
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


CONFIG = """\
samples: http_samples.yaml
target:
  http:
    url: {url}/v1/chat?n={{count}}
    method: POST
    headers:
      Authorization: "Bearer ${{BOT_TOKEN}}"
    body:
      message: "{{question}}"
      repeat: "{{count}}"
      note: "asked: {{question}} ({{{{raw}}}})"
    response_path: choices.0.message.content
    timeout: 10
strategies:
  - name: exact_match
thresholds:
  min_score: 60
output:
  dir: out
"""


def test_http_target_fills_the_template_and_records_status_codes(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]]], cli: Cli
) -> None:
    url, received = server
    shutil.copy(DATA / "http_samples.yaml", tmp_path / "http_samples.yaml")
    config = tmp_path / "aeval.yaml"
    config.write_text(CONFIG.format(url=url), encoding="utf-8")

    result = cli("run", config, "--quiet", cwd=tmp_path, env={"BOT_TOKEN": "s3cret"})

    assert result.returncode == 0, result.stderr
    assert result.stdout == "PASSED: score 66.67% >= 60.00%\n"
    by_question = {entry["body"]["message"]: entry for entry in received}
    assert by_question['a {literal} and "quotes"'] == {
        "path": "/v1/chat?n=2",
        "body": {
            "message": 'a {literal} and "quotes"',
            "repeat": 2,
            "note": 'asked: a {literal} and "quotes" ({raw})',
        },
        "auth": "Bearer s3cret",
    }
    assert by_question["hello there"]["body"]["repeat"] == 3
    rows = {row["name"]: row for row in rows_of(tmp_path / "out" / "rows.jsonl")}
    assert rows["greeting"]["outcome"] == "passed"
    assert rows["greeting"]["output"] == "echo: hello there"
    assert rows["greeting"]["metadata"] == {"http_status": 200}
    assert rows["braces"]["metadata"] == {"http_status": 200}
    overloaded = rows["overloaded"]
    assert overloaded["outcome"] == "error"
    assert overloaded["strategy"] == "ExactMatchStrategy"
    assert overloaded["error"]["source"] == "function"
    assert overloaded["error"]["type"] == "HttpStatusError"
    assert overloaded["error"]["message"] == (
        f"HTTP 503 Service Unavailable from POST {url}/v1/chat?n=1: overloaded, try later"
    )


def test_a_missing_response_path_is_an_error_row_naming_the_keys(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]]], cli: Cli
) -> None:
    url, _ = server
    shutil.copy(DATA / "http_samples.yaml", tmp_path / "http_samples.yaml")
    config = tmp_path / "aeval.yaml"
    config.write_text(
        CONFIG.format(url=url).replace("choices.0.message.content", "choices.0.text"),
        encoding="utf-8",
    )

    result = cli("run", config, "--quiet", "--tags", "smoke", cwd=tmp_path, env={"BOT_TOKEN": "x"})

    assert result.returncode == 1
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    assert (row["error"]["type"], row["error"]["message"]) == (
        "HttpResponseError",
        "the response has no 'choices.0.text': choices.0 has the keys 'message'",
    )


def test_http_config_errors_exit_2_before_any_request(
    tmp_path: Path,
    server: tuple[str, list[dict[str, Any]]],
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = server
    shutil.copy(DATA / "http_samples.yaml", tmp_path / "http_samples.yaml")
    config = tmp_path / "aeval.yaml"
    config.write_text(CONFIG.format(url=url).replace("{count}", "{lang}"), encoding="utf-8")

    missing_parameter = cli("run", config, cwd=tmp_path, env={"BOT_TOKEN": "x"})

    assert missing_parameter.returncode == 2
    assert missing_parameter.stderr == (
        f"aeval: error: {config}:4: target.http.url: the placeholder {{lang}} names a parameter "
        "that sample 'greeting' does not have (it has Parameters(question='hello there', "
        "count=3))\n"
    )

    config.write_text(CONFIG.format(url=url), encoding="utf-8")
    monkeypatch.delenv("BOT_TOKEN", raising=False)
    missing_variable = cli("run", config, cwd=tmp_path)
    assert missing_variable.returncode == 2
    assert missing_variable.stderr == (
        f"aeval: error: {config}:7: target.http.headers.Authorization: the environment "
        "variable BOT_TOKEN is not set\n"
    )
    assert received == []


class SlowHandler(BaseHTTPRequestHandler):
    """Sends its headers, then one byte of the promised body every half second."""

    stop: threading.Event
    started: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.started.set()
        try:
            while not self.stop.is_set():
                self.wfile.write(b"x")
                self.wfile.flush()
                self.stop.wait(0.5)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def slow_server() -> Iterator[tuple[str, threading.Event]]:
    stop, started = threading.Event(), threading.Event()
    handler = type("Slow", (SlowHandler,), {"stop": stop, "started": started})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", started
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.mark.anyio
async def test_the_http_timeout_bounds_the_whole_call_not_each_read(
    slow_server: tuple[str, threading.Event],
) -> None:
    import anyio
    import httpx

    from aeval import Parameters
    from aeval._cli._config import HttpSpec
    from aeval._cli._http import HttpTarget, HttpTimeoutError

    url, started = slow_server
    spec = HttpSpec(url=f"{url}/answer?q={{0}}", method="GET", timeout=1.5)

    async with httpx.AsyncClient() as client:
        target = HttpTarget(spec, client, {})
        with anyio.fail_after(20), pytest.raises(HttpTimeoutError) as caught:
            await target(Parameters(["slow loris"]))

    assert started.is_set()
    assert str(caught.value) == (
        f"no complete answer from GET {url}/answer?q=slow%20loris within 1.5 s "
        "(target.http.timeout): raise the timeout, or check why the endpoint is slow"
    )
    assert isinstance(caught.value, TimeoutError)


def test_a_trickling_http_target_gives_timeout_rows(
    tmp_path: Path, slow_server: tuple[str, threading.Event], cli: Cli
) -> None:
    url, _ = slow_server
    (tmp_path / "samples.yaml").write_text(
        "- name: slow\n  parameters: [x]\n  expected-output: x\n", encoding="utf-8"
    )
    config = tmp_path / "aeval.yaml"
    config.write_text(
        f"samples: samples.yaml\ntarget:\n  http:\n    url: {url}/answer\n    method: GET\n"
        "    timeout: 1\nstrategies:\n  - name: exact_match\nthresholds:\n  min_score: 100\n"
        "output:\n  dir: out\n",
        encoding="utf-8",
    )

    result = cli("run", config, "--quiet", cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    assert row["outcome"] == "error"
    assert (row["error"]["type"], row["error"]["message"]) == (
        "HttpTimeoutError",
        f"no complete answer from GET {url}/answer within 1 s (target.http.timeout): "
        "raise the timeout, or check why the endpoint is slow",
    )


class ApiHandler(BaseHTTPRequestHandler):
    """A REST endpoint that validates its input: 400 for a blank message, 404 for 'nobody'."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["message"]
        if not message:
            status, payload = 400, b'{"error": "message must not be blank"}'
        elif message == "nobody":
            status, payload = 404, b""
        elif message == "boom":
            status, payload = 503, b"overloaded"
        else:
            status, payload = 200, json.dumps({"answer": f"echo: {message}"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def api_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ApiHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


API_SAMPLES = """\
- name: greeting
  parameters: [hi]
  expected-output: "echo: hi"
- name: empty_input_validation
  parameters: [""]
  expected-output: "HTTP 400"
- name: unknown_user
  parameters: [nobody]
  expected-output: "HTTP 404"
- name: overloaded
  parameters: [boom]
  expected-output: "HTTP 503"
"""


def test_accepted_statuses_reach_the_strategies_as_http_status_text(
    tmp_path: Path, api_server: str, cli: Cli
) -> None:
    (tmp_path / "samples.yaml").write_text(API_SAMPLES, encoding="utf-8")
    config = tmp_path / "aeval.yaml"
    config.write_text(
        f"samples: samples.yaml\ntarget:\n  http:\n    url: {api_server}/chat\n"
        '    body: {message: "{0}"}\n    response_path: answer\n    accept_status: [400, 404]\n'
        "strategies:\n  - name: contains\noutput:\n  dir: out\n",
        encoding="utf-8",
    )

    result = cli("run", config, "--quiet", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in rows_of(tmp_path / "out" / "rows.jsonl")}
    assert {name: row["outcome"] for name, row in rows.items()} == {
        "greeting": "passed",
        "empty_input_validation": "passed",
        "unknown_user": "passed",
        "overloaded": "error",
    }
    assert rows["empty_input_validation"]["output"] == (
        'HTTP 400: {"error": "message must not be blank"}'
    )
    assert rows["empty_input_validation"]["metadata"]["http_status"] == 400
    assert rows["unknown_user"]["output"] == "HTTP 404"
    assert rows["unknown_user"]["metadata"]["http_status"] == 404
    assert rows["greeting"]["output"] == "echo: hi"
    assert rows["overloaded"]["error"]["message"] == (
        f"HTTP 503 Service Unavailable from POST {api_server}/chat: overloaded"
    )
