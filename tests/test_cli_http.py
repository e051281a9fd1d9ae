"""``aeval run`` against an HTTP target served on 127.0.0.1 by the test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cli import DATA, Cli, cli, rows_of

from aeval.testing import HTTPReply, RecordedRequest, ScriptedHTTPServer

__all__ = ["cli"]


def _echo_chat(request: RecordedRequest) -> HTTPReply:
    message = request.json["message"]
    if message == "boom":
        return HTTPReply.error(503, "overloaded, try later")
    return HTTPReply.json({"choices": [{"message": {"content": f"echo: {message}"}}]})


def _received(server: ScriptedHTTPServer) -> list[dict[str, Any]]:
    return [
        {"path": r.path, "body": r.json, "auth": r.headers.get("authorization")}
        for r in server.requests
    ]


@pytest.fixture
def server() -> Iterator[ScriptedHTTPServer]:
    with ScriptedHTTPServer(handler=_echo_chat) as scripted:
        yield scripted


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
    tmp_path: Path, server: ScriptedHTTPServer, cli: Cli
) -> None:
    url = server.url
    shutil.copy(DATA / "http_samples.yaml", tmp_path / "http_samples.yaml")
    config = tmp_path / "aeval.yaml"
    config.write_text(CONFIG.format(url=url), encoding="utf-8")

    result = cli("run", config, "--quiet", cwd=tmp_path, env={"BOT_TOKEN": "s3cret"})

    assert result.returncode == 0, result.stderr
    assert result.stdout == "PASSED: score 66.67% >= 60.00%\n"
    by_question = {entry["body"]["message"]: entry for entry in _received(server)}
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
    tmp_path: Path, server: ScriptedHTTPServer, cli: Cli
) -> None:
    url = server.url
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
    server: ScriptedHTTPServer,
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = server.url
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
    assert server.requests == []


@pytest.fixture
def slow_server() -> Iterator[ScriptedHTTPServer]:
    """Sends its headers, then one byte of the promised 1000 every half second."""
    trickle = HTTPReply.endless(
        b"x", interval=0.5, headers={"Content-Length": "1000"}, content_type="text/plain"
    )
    with ScriptedHTTPServer(handler=lambda request: trickle) as scripted:
        yield scripted


def test_the_http_timeout_bounds_the_whole_call_not_each_read(
    tmp_path: Path, slow_server: ScriptedHTTPServer, cli: Cli
) -> None:
    url = slow_server.url
    (tmp_path / "samples.yaml").write_text(
        "- name: slow\n  parameters: [slow loris]\n", encoding="utf-8"
    )
    config = tmp_path / "aeval.yaml"
    config.write_text(
        f"samples: samples.yaml\ntarget:\n  http:\n    url: '{url}/answer?q={{0}}'\n"
        "    method: GET\n    timeout: 1.5\nstrategies:\n  - name: not_blank\n"
        "output:\n  dir: out\n",
        encoding="utf-8",
    )

    assert cli("run", config, "--quiet", cwd=tmp_path).returncode == 1  # the only row: an error

    assert [r.path for r in slow_server.requests] == ["/answer?q=slow%20loris"]
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    assert row["error"]["message"] == (
        f"no complete answer from GET {url}/answer?q=slow%20loris within 1.5 s "
        "(target.http.timeout): raise the timeout, or check why the endpoint is slow"
    )
    assert row["error"]["type"] == "HttpTimeoutError"


def test_a_trickling_http_target_gives_timeout_rows(
    tmp_path: Path, slow_server: ScriptedHTTPServer, cli: Cli
) -> None:
    url = slow_server.url
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


def _validating_api(request: RecordedRequest) -> HTTPReply:
    """A REST endpoint that validates its input: 400 for a blank message, 404 for 'nobody'."""
    message = request.json["message"]
    if not message:
        return HTTPReply.text(
            '{"error": "message must not be blank"}', status=400, content_type="application/json"
        )
    if message == "nobody":
        return HTTPReply.text(b"", status=404, content_type="application/json")
    if message == "boom":
        return HTTPReply.text(b"overloaded", status=503, content_type="application/json")
    return HTTPReply.json({"answer": f"echo: {message}"})


@pytest.fixture
def api_server() -> Iterator[str]:
    with ScriptedHTTPServer(handler=_validating_api) as scripted:
        yield scripted.url


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


def test_an_http_target_answer_over_max_response_bytes_is_an_error_row(
    tmp_path: Path, cli: Cli
) -> None:
    endless = HTTPReply.endless(b"x" * 65536, content_type="application/json")
    (tmp_path / "samples.yaml").write_text(
        "- name: endless\n  parameters: [x]\n  expected-output: x\n", encoding="utf-8"
    )
    with ScriptedHTTPServer(handler=lambda request: endless) as server:
        url = server.url
        config = tmp_path / "aeval.yaml"
        config.write_text(
            f"samples: samples.yaml\ntarget:\n  http:\n    url: {url}/answer\n"
            "    method: GET\n    max_response_bytes: 100000\n"
            "strategies:\n  - name: exact_match\nthresholds:\n  min_score: 100\n"
            "output:\n  dir: out\n",
            encoding="utf-8",
        )
        result = cli("run", config, "--quiet", cwd=tmp_path)

    assert result.returncode == 1, result.stderr
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    assert (row["outcome"], row["error"]["type"], row["error"]["message"]) == (
        "error",
        "HttpResponseTooLargeError",
        f"the response of GET {url}/answer is larger than the limit of 97.7 KiB "
        "(100,000 bytes) (counted after decompression), so reading stopped: check the "
        "endpoint, or raise target.http.max_response_bytes",
    )


def test_a_secret_that_straddles_the_cut_of_an_error_body_is_redacted_whole(
    tmp_path: Path, cli: Cli
) -> None:
    secret = "tok-" + "S" * 40
    echo = HTTPReply.error(500, "e" * 180 + " token " + secret + " rejected")
    (tmp_path / "samples.yaml").write_text(
        "- name: echo\n  parameters: [x]\n  expected-output: x\n", encoding="utf-8"
    )
    with ScriptedHTTPServer(handler=lambda request: echo) as server:
        config = tmp_path / "aeval.yaml"
        config.write_text(
            f"samples: samples.yaml\ntarget:\n  http:\n    url: {server.url}/answer\n"
            '    method: GET\n    headers: {Authorization: "Bearer ${BOT_TOKEN}"}\n'
            "strategies:\n  - name: exact_match\nthresholds:\n  min_score: 100\n"
            "output:\n  dir: out\n",
            encoding="utf-8",
        )
        result = cli("run", config, "--quiet", cwd=tmp_path, env={"BOT_TOKEN": secret})

    assert result.returncode == 1, result.stderr
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    message = row["error"]["message"]
    assert "tok-SSSS" not in message
    assert message.endswith(": " + "e" * 180 + " token [REDACTED]...")
