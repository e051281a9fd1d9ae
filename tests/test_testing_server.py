from __future__ import annotations

import math
import subprocess
import sys
import threading

import anyio
import anyio.to_thread
import httpx
import orjson
import pytest

from aeval import testing
from aeval.testing import OpenAICompatibleServer, RecordedRequest, Reply, hashed_embedding

pytestmark = pytest.mark.anyio

openai_server = testing.openai_server

CHAT = {"model": "judge", "messages": [{"role": "user", "content": "Is the sky blue?"}]}


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.hypot(*a) / math.hypot(*b)


# --- the deterministic embedding -----------------------------------------------------------


def test_hashed_embedding_is_deterministic_and_normalised() -> None:
    vector = hashed_embedding("The cat sat", dimensions=32)
    assert len(vector) == 32
    assert vector == hashed_embedding("the CAT sat!", dimensions=32)
    assert math.isclose(math.hypot(*vector), 1.0)


def test_hashed_embedding_separates_different_texts() -> None:
    cat = hashed_embedding("the cat sat on the mat")
    assert cosine(cat, hashed_embedding("the cat sat on a mat")) > cosine(
        cat, hashed_embedding("quantum chromodynamics lecture")
    )
    assert hashed_embedding("!!!") != hashed_embedding("???")
    assert math.isclose(math.hypot(*hashed_embedding("")), 1.0)


# --- replies -------------------------------------------------------------------------------


def test_reply_factories() -> None:
    assert Reply.text("ok") == Reply(content="ok")
    assert Reply.json({"a": [1, True]}).content == '{"a":[1,true]}'
    assert Reply.fenced_json({"a": 1}).content == '```json\n{\n  "a": 1\n}\n```'
    assert Reply.rate_limited(2).headers == {"Retry-After": "2"}
    assert Reply.rate_limited(None).headers == {}
    assert (Reply.server_error().status, Reply.server_error().content) == (
        500,
        "Internal Server Error",
    )
    assert Reply.slow(3).delay == 3
    assert Reply.dropped().drop is True
    assert Reply.wrong_content_type().content_type == "text/html"


async def test_chat_completion_reply_shape() -> None:
    async with OpenAICompatibleServer(default="It is blue.") as server, httpx.AsyncClient() as c:
        response = await c.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "judge"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "It is blue."},
            "finish_reason": "stop",
        }
    ]
    assert body["usage"] == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}


async def test_a_tool_calling_reply_has_the_openai_shape_and_is_traced() -> None:
    from aeval.trace import capture, httpx_event_hooks

    reply = Reply.calling(
        ("get_weather", {"city": "Mysore"}), ("find_attractions", {"city": "Mysore"})
    )
    hooks = httpx_event_hooks()
    async with (
        OpenAICompatibleServer([reply]) as server,
        capture() as trace,
        httpx.AsyncClient(event_hooks=hooks) as c,
    ):
        response = await c.post(f"{server.base_url}/chat/completions", json=CHAT)
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Mysore"}'},
            },
            {
                "id": "call_1_1",
                "type": "function",
                "function": {"name": "find_attractions", "arguments": '{"city":"Mysore"}'},
            },
        ],
    }
    assert response.json()["usage"]["completion_tokens"] == 0
    (call,) = trace.model_calls
    assert call.requested_tools == ("get_weather", "find_attractions")
    with pytest.raises(ValueError, match="at least one"):
        Reply.calling()


async def test_queue_then_handler_then_default() -> None:
    seen: list[str] = []

    def handler(request: RecordedRequest) -> str | None:
        content = request.messages[-1]["content"]
        seen.append(content)
        return "from handler" if content == "route me" else None

    async with OpenAICompatibleServer(["queued 1"], handler=handler, default="dflt") as server:
        server.enqueue(Reply.text("queued 2"))
        async with httpx.AsyncClient(base_url=server.base_url) as client:

            async def ask(content: str) -> str:
                payload = {"model": "m", "messages": [{"role": "user", "content": content}]}
                response = await client.post("/chat/completions", json=payload)
                return str(response.json()["choices"][0]["message"]["content"])

            answers = [await ask(text) for text in ("a", "b", "route me", "other")]
    assert answers == ["queued 1", "queued 2", "from handler", "dflt"]
    assert seen == ["route me", "other"]


async def test_a_handler_that_raises_gives_a_500_naming_the_error() -> None:
    def handler(request: RecordedRequest) -> str:
        raise KeyError("missing")

    async with OpenAICompatibleServer(handler=handler) as server, httpx.AsyncClient() as client:
        response = await client.post(f"{server.base_url}/chat/completions", json=CHAT)
    assert response.status_code == 500
    assert response.json() == {
        "error": {"message": "handler raised KeyError: 'missing'", "type": "error", "code": 500}
    }


async def test_embeddings_are_hashed_or_scripted() -> None:
    async with OpenAICompatibleServer(dimensions=16) as server:
        server.enqueue_embeddings(Reply.embeddings([[1.0, 2.0]]))
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            scripted = await client.post("/embeddings", json={"model": "e", "input": ["x"]})
            hashed = await client.post("/embeddings", json={"model": "e", "input": "two words"})
    assert scripted.json()["data"] == [{"object": "embedding", "index": 0, "embedding": [1, 2]}]
    body = hashed.json()
    assert body["data"][0]["embedding"] == hashed_embedding("two words", 16)
    assert body["usage"] == {"prompt_tokens": 2, "total_tokens": 2}
    assert body["model"] == "e"


async def test_models_route_unknown_routes_and_bad_bodies() -> None:
    server = OpenAICompatibleServer(model="local-judge")
    async with server, httpx.AsyncClient() as client:
        models = await client.get(f"{server.base_url}/models")
        unknown = await client.post(f"{server.base_url}/completions", json={})
        bad = await client.post(f"{server.base_url}/chat/completions", content=b"not json")
    assert models.json() == {"object": "list", "data": [{"id": "local-judge", "object": "model"}]}
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == "no route for POST /v1/completions"
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "the request body is not a JSON object"


async def test_paths_without_the_v1_prefix_are_served() -> None:
    async with OpenAICompatibleServer(["ok"]) as server:
        root = server.base_url.removesuffix("/v1")
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{root}/chat/completions", json=CHAT)
    assert response.json()["choices"][0]["message"]["content"] == "ok"


# --- faults --------------------------------------------------------------------------------


async def test_faults_as_a_client_sees_them() -> None:
    replies = [
        Reply.rate_limited(3),
        Reply.server_error(503),
        Reply.malformed(),
        Reply.wrong_content_type(),
        Reply.error(401, "bad key"),
    ]
    async with OpenAICompatibleServer(replies) as server, httpx.AsyncClient() as client:
        url = f"{server.base_url}/chat/completions"
        responses = [await client.post(url, json=CHAT) for _ in replies]
    limited, unavailable, malformed, html, unauthorized = responses
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    assert unavailable.status_code == 503
    assert (malformed.status_code, malformed.content) == (200, b'{"choices": [{"message": ')
    assert malformed.headers["content-type"] == "application/json"
    assert (html.headers["content-type"], html.text) == (
        "text/html",
        "<html><body>Welcome</body></html>",
    )
    assert unauthorized.json()["error"]["message"] == "bad key"


async def test_a_dropped_connection_gives_no_response() -> None:
    server = OpenAICompatibleServer([Reply.dropped(), "after"])
    async with server, httpx.AsyncClient() as client:
        url = f"{server.base_url}/chat/completions"
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post(url, json=CHAT)
        response = await client.post(url, json=CHAT)
    assert response.json()["choices"][0]["message"]["content"] == "after"
    assert len(server.requests) == 2


async def test_a_slow_reply_outlasts_the_client_timeout() -> None:
    server = OpenAICompatibleServer([Reply.slow(30)])
    async with server, httpx.AsyncClient(timeout=0.2) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(f"{server.base_url}/chat/completions", json=CHAT)


def test_stopping_releases_slow_replies() -> None:
    server = OpenAICompatibleServer(default=Reply.slow(60))
    server.start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            httpx.post(f"{server.base_url}/chat/completions", json=CHAT, timeout=30)
        except httpx.HTTPError as error:
            errors.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    assert server.wait_for_concurrent(1)
    server.stop()
    caller.join()
    assert [type(error) for error in errors] == [httpx.RemoteProtocolError]


# --- recording, keep-alive and concurrency -------------------------------------------------


def test_sync_use_records_requests_over_one_kept_alive_connection() -> None:
    with OpenAICompatibleServer() as server, httpx.Client(base_url=server.base_url) as client:
        for n in range(3):
            client.post("/chat/completions", json={**CHAT, "n": n}, headers={"X-Run": "7"})
        requests = server.requests
    assert [r.json["n"] for r in requests] == [0, 1, 2]
    assert [r.path for r in requests] == ["/v1/chat/completions"] * 3
    assert {r.headers["x-run"] for r in requests} == {"7"}
    assert orjson.loads(requests[0].body) == requests[0].json
    assert requests[0].received_at <= requests[1].received_at <= requests[2].received_at
    assert len({r.client_address for r in requests}) == 1


async def test_one_hundred_concurrent_requests() -> None:
    def gather_all(request: RecordedRequest) -> str:
        return "ok" if server.wait_for_concurrent(100) else "timed out"

    server = OpenAICompatibleServer(handler=gather_all)
    limits = httpx.Limits(max_connections=100)
    async with server, httpx.AsyncClient(limits=limits, timeout=30) as client:
        answers: list[str] = []

        async def ask() -> None:
            response = await client.post(f"{server.base_url}/chat/completions", json=CHAT)
            answers.append(response.json()["choices"][0]["message"]["content"])

        async with anyio.create_task_group() as group:
            for _ in range(100):
                group.start_soon(ask)
    assert answers == ["ok"] * 100
    assert server.max_concurrent == 100
    assert server.in_flight == 0


async def test_reset_forgets_requests_and_queues() -> None:
    async with OpenAICompatibleServer(["queued"]) as server, httpx.AsyncClient() as client:
        url = f"{server.base_url}/chat/completions"
        await client.post(url, json=CHAT)
        server.enqueue("never sent")
        server.reset()
        response = await client.post(url, json=CHAT)
    assert response.json()["choices"][0]["message"]["content"] == "true"
    assert len(server.requests) == 1
    assert server.max_concurrent == 1


def test_base_url_needs_a_started_server() -> None:
    server = OpenAICompatibleServer()
    with pytest.raises(RuntimeError, match="the server is not started"):
        _ = server.base_url
    with server:
        with pytest.raises(RuntimeError, match="already started"):
            server.start()
        assert server.base_url.startswith("http://127.0.0.1:")
    server.stop()


def test_the_fixture_gives_a_started_server(openai_server: OpenAICompatibleServer) -> None:
    openai_server.enqueue("from the fixture")
    response = httpx.post(f"{openai_server.base_url}/chat/completions", json=CHAT)
    assert response.json()["choices"][0]["message"]["content"] == "from the fixture"


async def test_the_fixture_works_in_async_tests(openai_server: OpenAICompatibleServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{openai_server.base_url}/models")
    assert response.status_code == 200


def test_aeval_testing_needs_no_pytest() -> None:
    """Importing it leaves pytest alone; without pytest the server works and the fixture says
    what it needs (issue 32: a script using the server must run where pytest is not installed)."""
    code = (
        "import sys\n"
        "import aeval.testing as testing\n"
        "print('pytest' in sys.modules)\n"
        "sys.modules['pytest'] = None\n"
        "with testing.OpenAICompatibleServer() as server:\n"
        "    print(server.base_url.startswith('http://127.0.0.1:'))\n"
        "try:\n"
        "    testing.openai_server\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "False",
        "True",
        "aeval.testing.openai_server is a pytest fixture, and pytest is not installed: "
        "pip install pytest, or start an aeval.testing.OpenAICompatibleServer yourself",
    ]
