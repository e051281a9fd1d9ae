"""A streamed chat completion recorded as it is read: the response's body is watched as the
client reads it, and the model call is recorded once the stream ends (``data: [DONE]``, its
last byte, or the client closing it early with what had arrived)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from time import perf_counter, time
from typing import Any

import orjson

from ._chat import named_tool_calls, requested_model
from ._context import Recorder
from ._route import record_model

__all__ = ["ChunkReader", "watch_stream"]

_DATA = b"data:"
_DONE = b"[DONE]"


class ChunkReader:
    """Reads the server-sent events of a streamed chat completion, piece by piece.

    Attributes:
        model: The model the chunks report (else ``None``).
        prompt_tokens: From the usage chunk (``stream_options.include_usage``), if any.
        completion_tokens: From the usage chunk, if any.
        tools: The names of the tools the model asks to call, by call index.
        ids: The ids of those calls, by call index.
        done: Whether ``data: [DONE]`` arrived.
    """

    __slots__ = ("_buffer", "completion_tokens", "done", "ids", "model", "prompt_tokens", "tools")

    def __init__(self) -> None:
        self._buffer = b""
        self.model: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.tools: dict[tuple[int, int], str] = {}
        self.ids: dict[tuple[int, int], str] = {}
        self.done = False

    def feed(self, piece: bytes) -> None:
        """Read the complete lines of ``piece`` (the rest waits for the next piece)."""
        lines = (self._buffer + piece).split(b"\n")
        self._buffer = lines.pop()
        for line in lines:
            self._line(line.strip())

    def close(self) -> None:
        """Read what is left (a last line without its newline)."""
        if self._buffer:
            line, self._buffer = self._buffer.strip(), b""
            self._line(line)

    def _line(self, line: bytes) -> None:
        if not line.startswith(_DATA):
            return
        data = line[len(_DATA) :].strip()
        if data == _DONE:
            self.done = True
            return
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if isinstance(chunk, dict):
            self._chunk(chunk)

    def _chunk(self, chunk: dict[str, Any]) -> None:
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self.model = model
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _count(usage.get("prompt_tokens"))
            self.completion_tokens = _count(usage.get("completion_tokens"))
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            for call, name in named_tool_calls(delta):
                index = call.get("index")
                position = (
                    choice.get("index") if isinstance(choice.get("index"), int) else 0,
                    index if isinstance(index, int) else len(self.tools),
                )
                self.tools.setdefault(position, name)
                identifier = call.get("id")
                if isinstance(identifier, str):
                    self.ids.setdefault(position, identifier)


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


class _Watch:
    """What one watched stream records when it ends (once)."""

    __slots__ = ("_content", "_recorder", "_started", "_wall", "reader", "recorded")

    def __init__(self, recorder: Recorder, content: bytes, started: float) -> None:
        self._recorder = recorder
        self._content = content
        self._started = started
        self._wall = time() - (perf_counter() - started)
        self.reader = ChunkReader()
        self.recorded = False

    def feed(self, piece: bytes) -> None:
        if not self.recorded:
            self.reader.feed(piece)
            if self.reader.done:
                self.record()

    def record(self) -> None:
        if self.recorded:
            return
        self.recorded = True
        reader = self.reader
        reader.close()
        record_model(
            model=reader.model or requested_model(self._content)[0],
            prompt_tokens=reader.prompt_tokens,
            completion_tokens=reader.completion_tokens,
            duration=perf_counter() - self._started,
            requested_tools=[reader.tools[key] for key in sorted(reader.tools)],
            tool_call_ids=[reader.ids[key] for key in sorted(reader.ids)],
            started=datetime.fromtimestamp(self._wall, UTC),
            recorder=self._recorder,
        )


def _watched_async(base: type) -> type:
    class WatchedAsync(base):  # type: ignore[misc]
        def __init__(self, stream: Any, watch: _Watch) -> None:
            self._stream = stream
            self._watch = watch

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self._stream:
                self._watch.feed(piece)
                yield piece
            self._watch.record()

        async def aclose(self) -> None:
            self._watch.record()
            await self._stream.aclose()

    return WatchedAsync


def _watched_sync(base: type) -> type:
    class WatchedSync(base):  # type: ignore[misc]
        def __init__(self, stream: Any, watch: _Watch) -> None:
            self._stream = stream
            self._watch = watch

        def __iter__(self) -> Iterator[bytes]:
            for piece in self._stream:
                self._watch.feed(piece)
                yield piece
            self._watch.record()

        def close(self) -> None:
            self._watch.record()
            self._stream.close()

    return WatchedSync


_WATCHED: dict[type, type] = {}
"""The watching stream class made for each byte stream base class (httpx's, or a fork's such
as the ``httpx2`` the openai SDK uses), which the response checks its stream against."""


def _watched(stream: Any) -> type | None:
    package = sys.modules.get(type(stream).__module__.split(".")[0])
    for name, make in (("AsyncByteStream", _watched_async), ("SyncByteStream", _watched_sync)):
        base = getattr(package, name, None)
        if isinstance(base, type) and isinstance(stream, base):
            made = _WATCHED.get(base)
            if made is None:
                made = _WATCHED.setdefault(base, make(base))
            return made
    return None


def watch_stream(
    response: Any, recorder: Recorder, content: bytes, started: float | None = None
) -> None:
    """Record the streamed chat completion ``response`` in ``recorder`` once it has been read.

    A body sent compressed is not read: its call records the model the request named, without
    tokens or tools.

    Args:
        response: The ``httpx.Response`` (or the same of a fork of httpx), its body not read
            yet.
        recorder: Where the call goes (the sample's, whatever context reads the stream).
        content: The request's body.
        started: When the request was sent (``time.perf_counter()``); now (the response's
            headers have arrived) when not known.
    """
    stream = response.stream
    watch = _Watch(recorder, content, perf_counter() if started is None else started)
    if response.headers.get("content-encoding", "identity").lower() not in ("", "identity"):
        watch.record()
        return
    watched = _watched(stream)
    if watched is None:
        watch.record()
    else:
        response.stream = watched(stream, watch)
