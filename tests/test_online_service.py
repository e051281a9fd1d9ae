"""The example service under load: a real uvicorn server, real HTTP, a real judge server.

``examples/online_service.py`` answers questions and evaluates its answers online (checks
on every answer, the judge on 10 %). These tests start it with uvicorn on 127.0.0.1, send
thousands of requests with httpx at high concurrency, and check that every answer was
right, that every response is accounted for, that the judge saw about its share, and that
with a tiny queue and a stuck judge the drops are counted while no request fails or waits.
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from aeval import read_run
from aeval.online import OnlineEvaluator
from aeval.testing import OpenAICompatibleServer, RecordedRequest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))
create_app = importlib.import_module("online_service").create_app

pytestmark = pytest.mark.anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Any]


@contextmanager
def serve(app: ASGI) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free port; its base URL once started."""
    ready = threading.Event()

    async def signalling(scope: Scope, receive: Any, send: Any) -> None:
        async def forward(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                ready.set()

        await app(scope, receive, forward if scope["type"] == "lifespan" else send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # connections queue in the kernel until uvicorn accepts them
    config = uvicorn.Config(
        signalling, log_level="warning", lifespan="on", backlog=2048, timeout_keep_alive=60
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert ready.wait(30), "the service did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()
    assert not thread.is_alive()


async def ask_many(base_url: str, count: int, concurrency: int) -> list[tuple[int, str]]:
    """Ask "What is i plus 7i?" for each i, ``concurrency`` at once; (status, answer).

    ``concurrency`` workers share the questions; every ten share one client, because an
    httpx pool's bookkeeping grows with its connections times its waiting requests (at 100
    connections in one pool the client, not the service, would be what is measured).
    """
    results: list[tuple[int, str]] = [(0, "")] * count
    questions = iter(range(count))
    per_client = 10
    limits = httpx.Limits(max_connections=per_client, max_keepalive_connections=per_client)
    clients = [
        httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60)
        for _ in range(math.ceil(concurrency / per_client))
    ]

    async def worker(client: httpx.AsyncClient) -> None:
        for i in questions:
            reply = await client.post("/ask", json={"question": f"What is {i} plus {7 * i}?"})
            results[i] = (reply.status_code, reply.json()["answer"])

    try:
        async with anyio.create_task_group() as group:
            for w in range(concurrency):
                group.start_soon(worker, clients[w // per_client])
    finally:
        for client in clients:
            await client.aclose()
    return results


async def evaluation(base_url: str, *, settle: bool) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        reply = await client.get("/evaluation", params={"settle": "1"} if settle else {})
    reply.raise_for_status()
    data: dict[str, Any] = reply.json()
    return data


def chat_calls(server: OpenAICompatibleServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def within_binomial(calls: int, n: int, p: float, sigmas: float = 5.0) -> bool:
    return abs(calls - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


async def test_thousands_of_requests_are_answered_and_every_response_accounted_for(
    tmp_path: Path,
) -> None:
    count, concurrency, rate = 3000, 100, 0.1
    rows_path = tmp_path / "rows.jsonl"
    async with OpenAICompatibleServer(default="true") as judge:
        app = create_app(judge.base_url, judge_rate=rate, rows=rows_path, queue_size=count, seed=13)
        with serve(app) as base_url:
            results = await ask_many(base_url, count, concurrency)
            data = await evaluation(base_url, settle=True)
        judged = len(chat_calls(judge))
    assert results == [(200, f"{i} plus {7 * i} is {8 * i}.") for i in range(count)]
    stats = data["statistics"]
    assert stats["submitted"] == count
    assert stats["evaluated"] + stats["sampled_out"] + stats["dropped"] == count
    assert (stats["dropped"], stats["evaluated"], stats["queue_depth"]) == (0, count, 0)
    assert within_binomial(judged, count, rate), (judged, count * rate)
    by_strategy = data["by_strategy"]
    assert by_strategy["AiJudgeStrategy"]["rows"] == judged  # one call per judged answer
    assert by_strategy["NotBlankStrategy"]["passed"] == count
    assert by_strategy["ContainsStrategy"]["passed"] == count
    assert data["average_score"] == 100.0
    rows, run = await read_run(rows_path)
    assert len(rows) == 2 * count + judged
    assert run is not None and run.complete
    assert all(row.timestamp is not None for row in rows)


async def test_with_a_tiny_queue_and_a_stuck_judge_drops_are_counted_and_nobody_waits() -> None:
    assert not inspect.iscoroutinefunction(OnlineEvaluator.submit)  # nothing to await
    count, concurrency = 500, 100
    release = threading.Event()

    def stuck(request: RecordedRequest) -> str:
        release.wait(60)
        return "true"

    async with OpenAICompatibleServer(handler=stuck) as judge:
        app = create_app(judge.base_url, judge_rate=1.0, rows=None, queue_size=1, concurrency=1)
        try:
            with serve(app) as base_url:
                results = await ask_many(base_url, count, concurrency)
                # Every request was answered while the first judge call is still held:
                # the handlers never waited for the evaluation.
                assert judge.in_flight == 1 and len(chat_calls(judge)) == 1
                stats = (await evaluation(base_url, settle=False))["statistics"]
                release.set()
                settled = (await evaluation(base_url, settle=True))["statistics"]
        finally:
            release.set()
    assert results == [(200, f"{i} plus {7 * i} is {8 * i}.") for i in range(count)]
    assert (stats["in_flight"], stats["queue_depth"]) == (1, 1)
    assert stats["queue_full"] == stats["dropped"] == count - 2
    assert settled["submitted"] == count
    assert (settled["evaluated"], settled["dropped"], settled["sampled_out"]) == (2, count - 2, 0)


async def test_run_as_a_program_it_prints_its_address_once_it_serves(tmp_path: Path) -> None:
    root = EXAMPLES.parent
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, str(root / "examples" / "online_service.py"), "--port", "0"]
    command += ["--rows", str(tmp_path / "rows.jsonl"), "--seed", "1"]
    async with await anyio.open_process(
        command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": path}
    ) as process:
        assert process.stdout is not None
        first = b""
        async for chunk in process.stdout:
            first += chunk
            if b"\n" in first:
                break
        line = first.decode().splitlines()[0]
        assert line.startswith("online_service: serving on http://127.0.0.1:"), line
        assert line.endswith("/v1); Ctrl-C stops it"), line
        base_url = line.split()[3]
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            reply = await client.post("/ask", json={"question": "What is 17 plus 25?"})
        assert reply.json() == {"answer": "17 plus 25 is 42."}
        assert (await evaluation(base_url, settle=True))["statistics"]["evaluated"] == 1
        process.send_signal(signal.SIGINT)
        # uvicorn stops cleanly, then re-raises the signal it caught (the Ctrl-C convention)
        assert await process.wait() in {0, -signal.SIGINT}
