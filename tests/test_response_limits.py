"""Bodies from servers aeval does not control are read within a cap on decompressed bytes.

The judge's and embedder's replies and the HTTP target's answers come from a real server
on 127.0.0.1 sending an endless body, a gzip that never ends, or a small gzip that expands
far past the cap; each is an error saying so, and reading stops at the cap.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from _cli import Cli, cli, rows_of

from aeval import (
    ModelResponseError,
    ModelResponseTooLargeError,
)
from aeval.models import OpenAIChatModel, OpenAIEmbedder
from aeval.testing import FakeClock, HTTPReply, ScriptedHTTPServer

__all__ = ["cli"]

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
CAP = 1 * MIB
BOMB_SIZE = 50 * MIB


def _gzip_bomb() -> HTTPReply:
    """A finite gzip body of 50 MiB of zeros: about 50 KB on the wire."""
    return HTTPReply(
        body=gzip.compress(bytes(BOMB_SIZE), compresslevel=9),
        headers={"Content-Encoding": "gzip"},
        content_type="application/json",
    )


def _endless_gzip() -> HTTPReply:
    """A gzip stream of zeros that never ends: each 1 KB piece expands to 1 MiB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return HTTPReply(
        body=head,
        stream=piece,
        headers={"Content-Encoding": "gzip"},
        content_type="application/json",
    )


REPLIES = {
    "endless": HTTPReply.endless(b"x" * 65536, content_type="application/json"),
    "endless-gzip": _endless_gzip(),
    "gzip-bomb": _gzip_bomb(),
}


@pytest.fixture(params=sorted(REPLIES))
def hostile(request: pytest.FixtureRequest) -> Iterator[ScriptedHTTPServer]:
    reply = REPLIES[request.param]
    with ScriptedHTTPServer(handler=lambda _: reply) as server:
        yield server


def _chat(server: ScriptedHTTPServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "judge-1", base_url=f"{server.url}/v1", clock=FakeClock(), timeout=30.0, **options
    )


async def test_a_chat_reply_over_the_cap_is_an_error_and_is_not_retried(
    hostile: ScriptedHTTPServer,
) -> None:
    async with _chat(hostile, max_response_bytes=CAP) as model:
        with anyio.fail_after(60), pytest.raises(ModelResponseTooLargeError) as caught:
            await model.chat("hi")

    url = f"{hostile.url}/v1/chat/completions"
    assert str(caught.value) == (
        f"chat reply from {url} is larger than the limit of 1 MiB (1,048,576 bytes) (counted "
        "after decompression), so reading stopped: check the server, or raise "
        "max_response_bytes=..."
    )
    assert caught.value.limit == CAP
    assert isinstance(caught.value, ModelResponseError)
    assert caught.value.retries == 0
    assert len(hostile.requests) == 1


async def test_the_default_cap_of_a_chat_reply_is_a_few_mib(hostile: ScriptedHTTPServer) -> None:
    async with _chat(hostile) as model:
        with anyio.fail_after(60), pytest.raises(ModelResponseTooLargeError) as caught:
            await model.chat("hi")
    assert caught.value.limit == 4 * MIB  # the default max_response_bytes


async def test_an_embeddings_reply_over_the_cap_is_an_error() -> None:
    with ScriptedHTTPServer(handler=lambda _: REPLIES["gzip-bomb"]) as server:
        url = server.url
        embedder = OpenAIEmbedder(
            "embed-1", base_url=f"{server.url}/v1", clock=FakeClock(), max_response_bytes=CAP
        )
        async with embedder:
            with anyio.fail_after(60), pytest.raises(ModelResponseTooLargeError) as caught:
                await embedder.embed(["a", "b"])
    assert str(caught.value).startswith(f"embeddings reply from {url}/v1/embeddings is larger")


async def test_a_declared_length_over_the_cap_fails_before_the_body_is_read() -> None:
    reply = HTTPReply(body=b"[" + b"0," * 600_000 + b"0]", content_type="application/json")
    with ScriptedHTTPServer(handler=lambda _: reply) as server:
        async with _chat(server, max_response_bytes=CAP) as model:
            with pytest.raises(ModelResponseTooLargeError) as caught:
                await model.chat("hi")
    assert "is 1.14 MiB (1,200,003 bytes), larger than the limit of 1 MiB" in str(caught.value)


def test_the_cap_must_be_a_positive_int() -> None:
    with pytest.raises(ValueError, match="max_response_bytes must be at least 1, got 0"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", max_response_bytes=0)
    with pytest.raises(TypeError, match="max_response_bytes must be an int"):
        OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", max_response_bytes=1.5)  # type: ignore[arg-type]


def http_row(tmp_path: Path, cli: Cli, url: str, options: str = "") -> dict[str, Any]:
    """The one row of ``aeval run`` against the HTTP target ``url``/answer (``options``: more
    lines of ``target.http``)."""
    (tmp_path / "samples.yaml").write_text(
        "- name: s\n  parameters: [x]\n  expected-output: x\n", encoding="utf-8"
    )
    config = tmp_path / "aeval.yaml"
    config.write_text(
        f"samples: samples.yaml\ntarget:\n  http:\n    url: {url}/answer\n{options}"
        "strategies:\n  - name: not_blank\noutput:\n  dir: out\n",
        encoding="utf-8",
    )
    result = cli("run", config, "--quiet", "--no-store", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    [row] = rows_of(tmp_path / "out" / "rows.jsonl")
    return row


def test_an_http_target_answer_over_the_cap_is_an_error(
    hostile: ScriptedHTTPServer, tmp_path: Path, cli: Cli
) -> None:
    options = f"    method: GET\n    max_response_bytes: {CAP}\n"
    row = http_row(tmp_path, cli, hostile.url, options)
    assert (row["outcome"], row["error"]["type"]) == ("error", "HttpResponseTooLargeError")
    assert row["error"]["message"] == (
        f"the response of GET {hostile.url}/answer is larger than the limit of 1 MiB "
        "(1,048,576 bytes) (counted after decompression), so reading stopped: check the "
        "endpoint, or raise target.http.max_response_bytes"
    )


def test_an_http_target_answer_under_the_cap_is_read_whole(tmp_path: Path, cli: Cli) -> None:
    reply = HTTPReply(
        body=gzip.compress(b'{"answer": "' + b"a" * 100_000 + b'"}'),
        headers={"Content-Encoding": "gzip"},
        content_type="application/json",
    )
    with ScriptedHTTPServer(handler=lambda _: reply) as server:
        options = f"    response_path: answer\n    max_response_bytes: {CAP}\n"
        row = http_row(tmp_path, cli, server.url, options)
    assert (row["outcome"], row["output"]) == ("passed", "a" * 100_000)


def test_an_endless_error_body_still_gives_the_status_error(tmp_path: Path, cli: Cli) -> None:
    from aeval import ModelHTTPError

    reply = HTTPReply(status=500, body=b"broken: ", stream=b"x" * 65536)
    with ScriptedHTTPServer(handler=lambda _: reply) as server:
        row = http_row(tmp_path, cli, server.url, "    method: GET\n")

        async def chat() -> None:
            async with _chat(server, max_attempts=1) as model:
                with anyio.fail_after(60), pytest.raises(ModelHTTPError) as http:
                    await model.chat("hi")
            assert http.value.status == 500
            assert http.value.body == "broken: " + "x" * 192

        anyio.run(chat)
    assert (row["outcome"], row["error"]["type"]) == ("error", "HttpStatusError")
    assert "500" in row["error"]["message"] and "broken: xxx" in row["error"]["message"]


def _deflated(data: bytes, *, header: bool) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS if header else -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", lambda data: _deflated(data, header=True)),
        ("deflate", lambda data: _deflated(data, header=False)),
        ("identity", lambda data: data),
    ],
    ids=["gzip", "deflate-zlib", "deflate-raw", "identity"],
)
async def test_compressed_replies_under_the_cap_are_decoded_whole(
    encoding: str, encode: Any
) -> None:
    text = "a long verdict " * 20_000
    completion = orjson.dumps({"choices": [{"message": {"content": text}}]})
    reply = HTTPReply(
        body=encode(completion),
        headers={"Content-Encoding": encoding},
        content_type="application/json",
    )
    with ScriptedHTTPServer(handler=lambda _: reply) as server:
        async with _chat(server, max_response_bytes=len(completion)) as model:
            response = await model.chat("hi")
    assert response.text == text


def test_a_corrupt_gzip_body_is_a_response_error(tmp_path: Path, cli: Cli) -> None:
    reply = HTTPReply(
        body=gzip.compress(b"{}")[:10] + b"\xff" * 20,
        headers={"Content-Encoding": "gzip"},
        content_type="application/json",
    )
    with ScriptedHTTPServer(handler=lambda _: reply) as server:

        async def chat() -> None:
            async with _chat(server) as model:
                with pytest.raises(ModelResponseError, match="cannot be decoded"):
                    await model.chat("hi")

        anyio.run(chat)
        row = http_row(tmp_path, cli, server.url)
    assert (row["outcome"], row["error"]["type"]) == ("error", "HttpResponseError")
    assert "cannot be decoded" in row["error"]["message"]
