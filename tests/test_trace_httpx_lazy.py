"""Model calls recorded by ``httpx_event_hooks`` are made on first read of the trace (issue 25):
the hooks keep the bodies and the clock readings, and the ``ModelCall`` is parsed from them
only when someone reads the trace. These tests compare those model calls with what the hooks
made at once before (an oracle written from that code), over varied responses from a real
server on 127.0.0.1, through sync and async clients, lazy and redacting recorders, trace
limits, the trace's JSON and a Scorer run with budgets."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import anyio.to_thread
import httpx
import orjson
import pytest
from _calls import Calls

from aeval import EvaluationSample, JsonlSink, Scorer, read_run
from aeval.strategies import BudgetStrategy
from aeval.testing import HTTPReply, RecordedRequest, ScriptedHTTPServer
from aeval.trace import (
    ModelCall,
    Recorder,
    Trace,
    TraceLimits,
    _chat,
    _context,
    _entries,
    httpx_event_hooks,
    record_tool_call,
    recording,
    redact_trace,
)

pytestmark = pytest.mark.anyio

TOOLS = [
    {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
    {"id": "2", "type": "function", "function": {"name": "", "arguments": "{}"}},
    {"id": "3", "type": "function", "function": {"arguments": "{}"}},
    {"id": "4", "type": "function", "function": {"name": "book", "arguments": "{}"}},
    "not a call",
]


def chat(**fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": fields.pop("content", "ok")}
    if "tool_calls" in fields:
        message["tool_calls"] = fields.pop("tool_calls")
    return {"id": "x", "choices": [{"index": 0, "message": message}], **fields}


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
REPLIES: dict[str, HTTPReply] = {
    "usage": HTTPReply.json(chat(model="served", usage=USAGE, tool_calls=TOOLS)),
    "no-usage": HTTPReply.json(chat(model="served")),
    "no-model": HTTPReply.json(chat(usage=USAGE)),
    "number-model": HTTPReply.json(chat(model=5, usage=USAGE)),
    "odd-usage": HTTPReply.json(
        chat(model="m", usage={"prompt_tokens": -1, "completion_tokens": True})
    ),
    "half-usage": HTTPReply.json(chat(model="m", usage={"prompt_tokens": 4})),
    "usage-list": HTTPReply.json(chat(model="m", usage=[1, 2])),
    "odd-tools": HTTPReply.json(chat(model="m", tool_calls={"function": {"name": "x"}})),
    "malformed": HTTPReply.text('{"choices": [', content_type="application/json"),
    "text": HTTPReply.text("plain words, no JSON"),
    "array": HTTPReply.json([1, 2, 3]),
    "empty": HTTPReply(status=200, body=b"", content_type="application/json"),
    "created": HTTPReply.json(chat(model="made", usage=USAGE), status=201),
    "big": HTTPReply.json(chat(model="big", usage=USAGE, content="x" * 20_000)),
    "sse": HTTPReply(
        status=200, body=b'data: {"model": "s"}\n\n', content_type="text/event-stream"
    ),
    "sse-charset": HTTPReply(
        status=200, body=b"data: {}\n\n", content_type="text/event-stream; charset=utf-8"
    ),
    "error": HTTPReply.json({"error": {"message": "no"}}, status=500),
    "redirect": HTTPReply.json(chat(model="m"), status=302),
    "stream-asked": HTTPReply.json(chat(model="m", usage=USAGE)),
    "stream-false": HTTPReply.json(chat(model="m", usage=USAGE)),
}
EXTRA: dict[str, dict[str, Any]] = {
    "stream-asked": {"stream": True},
    "stream-false": {"stream": False},
}
PATHS = {"escaped": "/v1/chat/%63ompletions", "embeddings": "/v1/embeddings"}
CASES = [*REPLIES, *PATHS]
Fields = tuple[str | None, int | None, int | None, tuple[str, ...]]


def request_of(case: str) -> tuple[str, dict[str, Any]]:
    """The path and the JSON body a case posts."""
    body = {"model": case, "messages": [], **EXTRA.get(case, {})}
    return PATHS.get(case, "/v1/chat/completions"), body


def expected(case: str) -> Fields | None:
    """What the eager hooks (before issue 25) recorded for ``case``, clocks aside: ``None``
    when they recorded nothing. Written from that code: only 2xx, non-SSE responses of a
    chat path whose request did not ask for a stream; the model as reported, else as asked;
    the tokens when they are non-negative integers; the named tools the model asked for.
    Since issue 35 an SSE response is recorded too, once read: the model its chunks report,
    else the one asked for (these streams carry no usage and no tool calls)."""
    path, body = request_of(case)
    reply = REPLIES.get(case, REPLIES["usage"])
    if not unquote(path).endswith("/chat/completions") or not 200 <= reply.status < 300:
        return None
    if "text/event-stream" in (reply.content_type or ""):
        reported = orjson.loads(reply.body.removeprefix(b"data: ")).get("model")
        return reported or body["model"], None, None, ()
    if body.get("stream") is True:
        return None
    try:
        parsed: Any = orjson.loads(reply.body)
    except orjson.JSONDecodeError:
        parsed = None
    data: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}

    def count(key: str) -> int | None:
        value = usage.get(key)
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return value if ok else None

    tools: list[str] = []
    for choice in data.get("choices") or ():
        calls = choice.get("message", {}).get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            name = call.get("function", {}).get("name") if isinstance(call, dict) else None
            if isinstance(name, str) and name:
                tools.append(name)
    model = data.get("model") if isinstance(data.get("model"), str) else body["model"]
    return model, count("prompt_tokens"), count("completion_tokens"), tuple(tools)


def fields(call: ModelCall) -> Fields:
    return call.model, call.prompt_tokens, call.completion_tokens, call.requested_tools


@pytest.fixture
async def server() -> AsyncIterator[ScriptedHTTPServer]:
    def handler(request: RecordedRequest) -> HTTPReply:
        body = request.json if isinstance(request.json, dict) else {}
        if unquote(request.path).endswith("/chat/completions"):
            return REPLIES.get(str(body.get("model")), REPLIES["usage"])
        return HTTPReply.json({"data": [], "usage": {"prompt_tokens": 1}})

    async with ScriptedHTTPServer(handler=handler) as served:
        yield served


Window = tuple[datetime, datetime]  # before the call, after it


async def run_async(url: str, cases: list[str]) -> list[Window]:
    windows: list[Window] = []
    async with httpx.AsyncClient(base_url=url, event_hooks=httpx_event_hooks()) as client:
        for case in cases:
            path, body = request_of(case)
            before = datetime.now(UTC)
            await client.post(path, json=body)
            windows.append((before, datetime.now(UTC)))
    return windows


async def run_sync(url: str, cases: list[str]) -> list[Window]:
    def agent() -> list[Window]:
        windows: list[Window] = []
        hooks = httpx_event_hooks(sync=True)
        with httpx.Client(base_url=url, event_hooks=hooks) as client:
            for case in cases:
                path, body = request_of(case)
                before = datetime.now(UTC)
                client.post(path, json=body)
                windows.append((before, datetime.now(UTC)))
        return windows

    return await anyio.to_thread.run_sync(agent)


def redact(value: Any) -> Any:
    return value


def snapshot(recorder: Recorder) -> tuple[Trace, bool]:
    """The recorder's snapshot, and whether it left its model calls to be made on first read
    (it made none)."""
    with Calls() as profile:
        trace = recorder.snapshot()
    assert trace is not None
    return trace, "frozen_model_call" not in profile.names


def eager(trace: Trace) -> Trace:
    """The same trace through the dataclass's own constructor, every field read."""
    return Trace(
        tuple(trace.tool_calls),
        tuple(trace.model_calls),
        trace.retrievals,
        trace.truncated,
        trace.dropped,
    )


@pytest.mark.parametrize("client", ["async", "sync"])
@pytest.mark.parametrize("redacting", [False, True])
async def test_model_calls_made_on_first_read_are_what_the_eager_hooks_made(
    server: ScriptedHTTPServer, client: str, redacting: bool
) -> None:
    run = run_async if client == "async" else run_sync
    with recording(redact=redact if redacting else None) as recorder:
        windows = await run(server.url, CASES)
    trace, unmade = snapshot(recorder)
    assert unmade is not redacting  # a redacting recorder makes its trace at once
    wanted = [(case, expected(case)) for case in CASES]
    recorded = [(case, want) for case, want in wanted if want is not None]
    left_alone = {"error", "redirect", "stream-asked", "embeddings"}
    assert {case for case, want in wanted if want is None} == left_alone
    calls = trace.model_calls
    assert [fields(call) for call in calls] == [want for _, want in recorded]
    spans = [window for (_, want), window in zip(wanted, windows, strict=True) if want]
    for call, (before, after) in zip(calls, spans, strict=True):
        assert call.started is not None and before <= call.started <= after
        assert call.duration is not None and call.duration >= 0
        assert call.duration <= (after - before).total_seconds() + 1e-3
    assert trace.dropped == 0 and trace.tool_calls == () and trace.truncated == 0
    again = recorder.snapshot()
    assert again is not None and all(a is b for a, b in zip(again.model_calls, calls, strict=True))


async def test_a_lazy_trace_reads_like_the_same_trace_made_at_once(
    server: ScriptedHTTPServer,
) -> None:
    with recording() as recorder:
        await run_async(server.url, CASES)
    reads: dict[str, Callable[[Trace], Any]] = {
        "model_calls": lambda t: t.model_calls,
        "bool": bool,
        "repr": repr,
        "eq": lambda t: t == eager(recorder.trace()),
        "hash": hash,
        "to_dict": lambda t: t.to_dict(),
        "json": lambda t: orjson.dumps(t.to_dict()),
        "from_dict": lambda t: Trace.from_dict(t.to_dict()),
        "events": lambda t: list(t.events()),
        "tokens": lambda t: t.tokens,
        "seconds": lambda t: t.seconds,
        "asdict": dataclasses.asdict,
        "pickle": lambda t: pickle.loads(pickle.dumps(t)),
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "replace": lambda t: dataclasses.replace(t, dropped=3),
        "redact": lambda t: redact_trace(t, redact).model_calls,
    }
    made = eager(recorder.trace())
    for name, read in reads.items():
        first, unmade = snapshot(recorder)
        assert unmade, name
        assert read(first) == read(made), name
    tokens = [want for want in map(expected, CASES) if want is not None]
    assert recorder.trace().tokens == sum((p or 0) + (c or 0) for _, p, c, _ in tokens) > 0


async def test_the_limit_of_events_counts_a_chat_completion_when_it_arrives(
    server: ScriptedHTTPServer,
) -> None:
    cases = ["usage", "error", "no-model", "sse", "stream-asked", "malformed", "text", "big"]
    with recording(limits=TraceLimits(max_events=3)) as recorder:
        await run_async(server.url, cases)
    trace, unmade = snapshot(recorder)
    assert unmade
    assert trace.dropped == 3  # "malformed", "text" and "big": the error is no event
    assert [call.model for call in trace.model_calls] == ["served", "no-model", "s"]
    assert trace.to_dict()["dropped"] == 3


async def test_large_bodies_are_parsed_when_they_arrive(
    server: ScriptedHTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace keeps at most ``KEPT_BYTES`` of bodies per call until it is read."""
    parsed = parses(monkeypatch)
    with recording() as recorder:
        await run_async(server.url, ["usage", "big"])
    assert parsed == ["big"]
    trace = recorder.trace()
    assert [call.model for call in trace.model_calls] == ["served", "big"]


def parses(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The models of the chat completions parsed from here on, in order."""
    parsed: list[str | None] = []
    real = _chat.chat_model_call

    def spy(*args: Any) -> ModelCall:
        call = real(*args)
        parsed.append(call.model)
        return call

    monkeypatch.setattr(_entries, "chat_model_call", spy)
    monkeypatch.setattr(_context, "chat_model_call", spy)
    return parsed


def test_an_unread_trace_parses_no_body(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks keep the bodies: a snapshot parses none, its first read parses each once."""
    (on_response,) = httpx_event_hooks(sync=True)["response"]
    body = orjson.dumps(chat(model="m", usage=USAGE))
    parsed = parses(monkeypatch)
    with recording() as recorder:
        for _ in range(4):
            request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json={})
            on_response(httpx.Response(200, content=body, request=request))
        trace = recorder.snapshot()
    assert parsed == []
    assert trace is not None and [call.model for call in trace.model_calls] == ["m"] * 4
    assert parsed == ["m"] * 4
    assert recorder.trace().model_calls == trace.model_calls and parsed == ["m"] * 4


@pytest.mark.parametrize("client", ["async", "sync"])
async def test_a_call_lasts_from_sending_the_request_to_reading_the_response(client: str) -> None:
    """There is no request hook: the call's duration is the client's own clock (what
    ``response.elapsed`` measures) and it started that long before the response was read,
    so a server that waits 50 ms makes a call of at least 50 ms that started before it."""
    slow = HTTPReply(
        status=200,
        body=orjson.dumps(chat(model="slow")),
        content_type="application/json",
        delay=0.05,
    )
    async with ScriptedHTTPServer(handler=lambda request: slow) as served:
        run = run_async if client == "async" else run_sync
        with recording() as recorder:
            ((before, after),) = await run(served.url, ["usage"])
    (call,) = recorder.trace().model_calls
    assert call.model == "slow" and call.started is not None and call.duration is not None
    assert 0.05 <= call.duration <= (after - before).total_seconds()
    assert before <= call.started <= after - timedelta(seconds=0.05)


async def test_a_call_kept_after_a_tool_call_that_started_during_it_comes_first() -> None:
    """A model call is kept when its response is read, with the start it had (a float of
    nanoseconds): a tool call recorded while the server held the request started later,
    so the trace puts the model call first, whatever the order the two were kept in."""
    arrived, release = threading.Event(), threading.Event()

    def handler(request: RecordedRequest) -> HTTPReply:
        arrived.set()
        release.wait(10)
        return HTTPReply.json(chat(model="held", usage=USAGE))

    async with ScriptedHTTPServer(handler=handler) as served:
        with recording() as recorder:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run_async, served.url, ["usage"])
                assert await anyio.to_thread.run_sync(arrived.wait, 10)
                record_tool_call("meanwhile", {}, result="done")
                release.set()
    trace = recorder.trace()
    assert [type(event).__name__ for event in trace.events()] == ["ModelCall", "ToolCall"]
    (call,), (tool,) = trace.model_calls, trace.tool_calls
    assert call.started is not None and tool.started is not None
    assert call.started < tool.started and call.model == "held"


def test_a_response_made_by_hand_has_the_duration_its_elapsed_says_or_none() -> None:
    """Without a client's stream the hooks read the public ``response.elapsed`` (set by
    whoever made the response), and without that the duration is unknown and the call
    started when it was recorded."""
    (on_response,) = httpx_event_hooks(sync=True)["response"]
    body = orjson.dumps(chat(model="m"))
    with recording() as recorder:
        for elapsed in (timedelta(seconds=2), None):
            request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json={})
            response = httpx.Response(200, content=body, request=request)
            if elapsed is not None:
                response.elapsed = elapsed
            before = datetime.now(UTC)
            on_response(response)
            after = datetime.now(UTC)
            if elapsed is not None:
                timed = (before - elapsed, after - elapsed)
            else:
                untimed = (before, after)
    first, second = recorder.trace().model_calls
    assert first.duration == 2.0 and first.started is not None
    assert timed[0] - timedelta(microseconds=1) <= first.started <= timed[1]
    assert second.duration is None and second.started is not None
    assert untimed[0] - timedelta(microseconds=1) <= second.started <= untimed[1]


async def test_budgets_and_rows_jsonl_read_the_model_calls_of_a_scorer_run(
    server: ScriptedHTTPServer, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(base_url=server.url, event_hooks=httpx_event_hooks()) as client:

        async def agent(calls: int) -> str:
            for _ in range(calls):
                path, body = request_of("usage")
                await client.post(path, json=body)
            return "done"

        samples = [EvaluationSample(f"s{calls}", [calls]) for calls in range(1, 5)]
        budget = BudgetStrategy(max_model_calls=2, max_tokens=40)
        jsonl = tmp_path / "rows.jsonl"
        report = await Scorer(sinks=[JsonlSink(jsonl)]).evaluate(samples, agent, budget)
    outcomes = {row.name: row.outcome.value for row in report.evaluations}
    assert outcomes == {"s1": "passed", "s2": "passed", "s3": "failed", "s4": "failed"}
    rows, _ = await read_run(jsonl)
    counts = {row.name: 0 if row.trace is None else len(row.trace.model_calls) for row in rows}
    assert counts == {"s1": 1, "s2": 2, "s3": 3, "s4": 4}
    kept = {row.name: row.trace for row in report.evaluations}
    assert {row.name: row.trace for row in rows} == kept
    assert all(
        fields(call) == expected("usage") for trace in kept.values() if trace
        for call in trace.model_calls
    )  # fmt: skip


def test_a_recorder_made_by_hand_keeps_raw_model_calls_apart_from_tool_calls() -> None:
    """The snapshot sorts the kinds apart; ``absorb`` (a watched call inside a sample) makes
    the inner recording's model calls, and the outer trace holds them in start order."""
    (on_response,) = httpx_event_hooks(sync=True)["response"]
    with recording() as outer:
        record_tool_call("first", {"a": 1}, result=1)
        with recording() as inner:
            request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json={})
            on_response(httpx.Response(200, content=orjson.dumps(chat(model="m")), request=request))
        outer.absorb(inner)
    trace = outer.trace()
    assert trace.tool_names() == ("first",)
    assert [call.model for call in trace.model_calls] == ["m"]
    assert [type(event).__name__ for event in trace.events()] == ["ToolCall", "ModelCall"]


URLS = [
    "http://127.0.0.1/v1/chat/completions",
    "http://127.0.0.1/chat/completions?api-version=2024-10-21",
    "http://127.0.0.1/v1/chat/completions/",
    "http://127.0.0.1/v1/chat/%63ompletions",
    "http://127.0.0.1/v1/chat%2Fcompletions",
    "http://127.0.0.1/v1/chat/completions%20",
    "http://127.0.0.1/v1/embeddings",
    "http://127.0.0.1",
    "http://127.0.0.1/",
    "http://127.0.0.1/v1/chat/completions#frag",
    "http://127.0.0.1/v1/caf%C3%A9/chat/completions",
]


@pytest.mark.parametrize("url", URLS)
def test_the_hooks_read_the_path_as_url_path_reads_it(url: str) -> None:
    (on_response,) = httpx_event_hooks(sync=True)["response"]
    request = httpx.Request("POST", url, json={})
    with recording() as recorder:
        on_response(httpx.Response(200, content=orjson.dumps(chat(model="m")), request=request))
    recorded = recorder.snapshot() is not None
    assert recorded is request.url.path.endswith("/chat/completions")


class _PlainHeaders:
    """Headers with only ``get``: what the hooks fall back to without httpx's own list."""

    def __init__(self, headers: httpx.Headers) -> None:
        self._headers = headers

    def get(self, key: str, default: str = "") -> str:
        return str(self._headers.get(key, default))


HEADERS: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"content-type", b"application/json")],
    [(b"Content-Type", b"text/event-stream")],
    [(b"CONTENT-TYPE", b"text/event-stream; charset=utf-8")],
    [(b"content-type", b"Text/Event-Stream")],
    [(b"content-type", b"application/json"), (b"content-type", b"text/event-stream")],
    [(b"content-type", b"text/event"), (b"content-type", b"-stream")],
    [(b"x-kind", b"text/event-stream"), (b"content-type", b"application/json")],
    [(b"content-type", "application/json; v=\u00e9".encode("latin-1"))],
    [(b"content-type", "text/event-stream; v=\u00e9".encode())],
]


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("headers", HEADERS)
def test_the_hooks_read_the_content_type_as_headers_get_reads_it(
    headers: list[tuple[bytes, bytes]], plain: bool
) -> None:
    (on_response,) = httpx_event_hooks(sync=True)["response"]
    body = orjson.dumps(chat(model="m"))
    with recording() as recorder:
        request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json={})
        response = httpx.Response(200, content=body, headers=headers, request=request)
        stream = "text/event-stream" in response.headers.get("content-type", "")
        if plain:
            response.headers = _PlainHeaders(response.headers)  # type: ignore[assignment]
        on_response(response)
    assert (recorder.snapshot() is None) is stream
