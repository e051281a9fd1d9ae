"""A trace as JSON-safe data and back, losslessly (times as ISO 8601 with their offset)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ._values import CallError, Document, ModelCall, Retrieval, ToolCall, Trace

__all__ = ["trace_from_dict", "trace_to_dict"]


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _tool_call(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": call.name,
        "arguments": _plain(call.arguments),
        "result": _plain(call.result),
        "error": None
        if call.error is None
        else {"type": call.error.type, "message": call.error.message},
        "started": _time(call.started),
        "ended": _time(call.ended),
        "mocked": call.mocked,
    }
    if call.truncated:
        data["truncated"] = call.truncated
    return data


def _model_call(call: ModelCall) -> dict[str, Any]:
    return {
        "model": call.model,
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "duration": call.duration,
        "requested_tools": list(call.requested_tools),
        "started": _time(call.started),
    }


def _retrieval(retrieval: Retrieval) -> dict[str, Any]:
    return {
        "query": retrieval.query,
        "documents": [
            {"id": document.id, "text": document.text, "score": document.score}
            for document in retrieval.documents
        ],
        "started": _time(retrieval.started),
    }


def trace_to_dict(trace: Trace) -> dict[str, Any]:
    """``trace`` as JSON-safe data (see :meth:`Trace.to_dict`)."""
    data: dict[str, Any] = {
        "tool_calls": [_tool_call(call) for call in trace.tool_calls],
        "model_calls": [_model_call(call) for call in trace.model_calls],
        "retrievals": [_retrieval(retrieval) for retrieval in trace.retrievals],
    }
    if trace.truncated:
        data["truncated"] = trace.truncated
    if trace.dropped:
        data["dropped"] = trace.dropped
    return data


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _Reader:
    __slots__ = ("_where",)

    def __init__(self, where: str) -> None:
        self._where = where

    def fail(self, key: str, expected: str, value: object) -> ValueError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        path = ".".join(part for part in (self._where, key) if part)
        return ValueError(f"trace field {path or '(top level)'} must be {expected}, got {shown}")

    def mapping(self, value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(key, "a mapping", value)
        return value

    def items(self, data: Mapping[str, Any], key: str) -> list[Any]:
        value = data.get(key, [])
        if not isinstance(value, list | tuple):
            raise self.fail(key, "a list", value)
        return list(value)

    def checked(
        self, data: Mapping[str, Any], key: str, expected: str, valid: Callable[[Any], bool]
    ) -> Any:
        """``data[key]`` when ``valid`` says so, ``None`` when it is missing or null."""
        value = data.get(key)
        if value is None:
            return None
        if not valid(value):
            raise self.fail(key, expected, value)
        return value

    def text(self, data: Mapping[str, Any], key: str, *, optional: bool = True) -> str | None:
        value: str | None = self.checked(data, key, "a string", _is_text)
        if value is None and not optional:
            raise self.fail(key, "a string", value)
        return value

    def count(self, data: Mapping[str, Any], key: str) -> int | None:
        count: int | None = self.checked(data, key, "a count (an integer of at least 0)", _is_count)
        return count

    def number(self, data: Mapping[str, Any], key: str) -> float | None:
        value = self.checked(data, key, "a number", _is_number)
        return None if value is None else float(value)

    def time(self, data: Mapping[str, Any], key: str) -> datetime | None:
        value = self.text(data, key)
        if value is None:
            return None
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(key, "an ISO 8601 time", value) from None

    def at(self, suffix: str) -> _Reader:
        return _Reader(f"{self._where}{suffix}" if self._where else suffix.lstrip("."))


def _read_tool_call(reader: _Reader, data: Mapping[str, Any]) -> ToolCall:
    arguments = data.get("arguments") or {}
    reader.mapping(arguments, "arguments")
    error = data.get("error")
    failure = None
    if error is not None:
        error = reader.mapping(error, "error")
        failure = CallError(
            reader.text(error, "type", optional=False) or "",
            reader.text(error, "message") or "",
        )
    mocked = data.get("mocked", False)
    if not isinstance(mocked, bool):
        raise reader.fail("mocked", "true or false", mocked)
    return ToolCall(
        name=reader.text(data, "name", optional=False) or "",
        arguments=arguments,
        result=data.get("result"),
        error=failure,
        started=reader.time(data, "started"),
        ended=reader.time(data, "ended"),
        mocked=mocked,
        truncated=reader.count(data, "truncated") or 0,
    )


def _read_model_call(reader: _Reader, data: Mapping[str, Any]) -> ModelCall:
    tools = reader.items(data, "requested_tools")
    for tool in tools:
        if not isinstance(tool, str):
            raise reader.fail("requested_tools", "a list of tool names", tools)
    return ModelCall(
        model=reader.text(data, "model"),
        prompt_tokens=reader.count(data, "prompt_tokens"),
        completion_tokens=reader.count(data, "completion_tokens"),
        duration=reader.number(data, "duration"),
        requested_tools=tuple(tools),
        started=reader.time(data, "started"),
    )


def _read_retrieval(reader: _Reader, data: Mapping[str, Any]) -> Retrieval:
    documents = []
    for index, item in enumerate(reader.items(data, "documents")):
        inner = reader.at(f".documents[{index}]")
        item = inner.mapping(item, "")
        documents.append(
            Document(
                id=inner.text(item, "id"),
                text=inner.text(item, "text"),
                score=inner.number(item, "score"),
            )
        )
    return Retrieval(
        query=reader.text(data, "query"),
        documents=tuple(documents),
        started=reader.time(data, "started"),
    )


def trace_from_dict(data: Mapping[str, Any]) -> Trace:
    """Read a trace written by :func:`trace_to_dict` (see :meth:`Trace.from_dict`)."""
    root = _Reader("")
    data = root.mapping(data, "")
    kinds = (
        ("tool_calls", _read_tool_call),
        ("model_calls", _read_model_call),
        ("retrievals", _read_retrieval),
    )
    read: dict[str, tuple[Any, ...]] = {}
    for key, reader_of in kinds:
        values = []
        for index, item in enumerate(root.items(data, key)):
            reader = root.at(f"{key}[{index}]")
            values.append(reader_of(reader, reader.mapping(item, "")))
        read[key] = tuple(values)
    return Trace(
        tool_calls=read["tool_calls"],
        model_calls=read["model_calls"],
        retrievals=read["retrievals"],
        truncated=root.count(data, "truncated") or 0,
        dropped=root.count(data, "dropped") or 0,
    )
