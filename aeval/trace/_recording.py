"""The recording API: the current recorder and trace of this context, making them current,
and recording tool calls, retrievals and model calls into them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Unpack

from ._context import (
    CURRENT,
    EMPTY_TRACE,
    RECORDER,
    Recorder,
    RecorderOptions,
    Tokens,
    started_at,
)
from ._route import ModelCallFields, record_model
from ._values import Document, Retrieval, Trace

__all__ = [
    "Scope",
    "activate",
    "current",
    "current_recorder",
    "deactivate",
    "idle",
    "make_current",
    "make_ran_current",
    "record_model_call",
    "record_retrieval",
    "record_tool_call",
    "recording",
    "using",
]


def current_recorder() -> Recorder | None:
    """The recorder of the sample being run here, or ``None`` (nothing is recorded)."""
    return RECORDER.get()


def current() -> Trace | None:
    """The trace of the sample being run or evaluated here; ``None`` outside any.

    While the function under test runs it is what was recorded so far (empty at first);
    while strategies evaluate it is the trace the engine made current (:func:`using`).
    """
    trace = CURRENT.get()
    if trace is not None:
        return trace
    recorder = RECORDER.get()
    return None if recorder is None else recorder.trace()


class recording:
    """Record what runs inside the block (and the tasks and copied contexts it starts).

    The engine's hook around one call of the function under test: afterwards
    ``recorder.snapshot()`` is the row's trace (``None`` when nothing was recorded) and
    ``recorder.unmocked`` an unmocked tool call the function may have swallowed.

    Args:
        limits: What is kept of each value.
        tools: Where ``@aeval.tool`` functions get their results; ``None`` calls them.
        redact: Applied to every argument, result and error message before it is bounded
            (``Redactor.value``), so no secret is kept, cut or not.
    """

    __slots__ = ("_recorder", "_tokens")

    def __init__(self, **options: Unpack[RecorderOptions]) -> None:
        self._recorder = Recorder(**options)
        self._tokens: Tokens | None = None

    def __enter__(self) -> Recorder:
        recorder = self._recorder
        self._tokens = RECORDER.set(recorder), None if CURRENT.get() is None else CURRENT.set(None)
        return recorder

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tokens = self._tokens
        if tokens is not None:  # deactivate(tokens), without its call
            self._tokens = None
            if tokens[1] is not None:
                CURRENT.reset(tokens[1])
            RECORDER.reset(tokens[0])


def activate(recorder: Recorder | None) -> Tokens:
    """Record into ``recorder`` here (``None``: record nothing), no trace being current, until
    :func:`deactivate`: :func:`recording` without a generator, for the engine's hot path."""
    return RECORDER.set(recorder), None if CURRENT.get() is None else CURRENT.set(None)


def make_current(trace: Trace | None) -> Tokens:
    """Make ``trace`` current and record nothing, until :func:`deactivate`: :func:`using`
    without a generator, for the engine's hot path."""
    return RECORDER.set(None), CURRENT.set(trace)


def make_ran_current(trace: Trace | None) -> Tokens:
    """:func:`make_current` for a sample the engine ran, and so traced: one that recorded
    nothing has an empty trace, so a check of its calls sees that none was made."""
    return RECORDER.set(None), CURRENT.set(EMPTY_TRACE if trace is None else trace)


def deactivate(tokens: Tokens) -> None:
    """Restore what :func:`activate` or :func:`make_current` changed."""
    recorder_token, current_token = tokens
    if current_token is not None:
        CURRENT.reset(current_token)
    RECORDER.reset(recorder_token)


def idle() -> bool:
    """Whether nothing is being recorded here and no trace is current."""
    return RECORDER.get() is None and CURRENT.get() is None


class Scope:
    """A ``with`` block that changes this context's recorder and current trace: what its
    ``__enter__`` set (``_tokens``) is restored on leaving, once."""

    __slots__ = ("_tokens",)

    def __init__(self) -> None:
        self._tokens: Tokens | None = None

    def __exit__(self, *exc_info: object) -> None:
        if self._tokens is not None:
            tokens, self._tokens = self._tokens, None
            deactivate(tokens)


class using(Scope):
    """Make ``trace`` current (for strategies evaluating a row) and record nothing meanwhile.

    Model calls made inside the block (an AI judge's) do not belong to the sample's trace,
    so recording is off in it.
    """

    __slots__ = ("_trace",)

    def __init__(self, trace: Trace | None) -> None:
        super().__init__()
        self._trace = trace

    def __enter__(self) -> None:
        self._tokens = make_current(self._trace)


def record_tool_call(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    result: Any = None,
    error: BaseException | str | None = None,
) -> None:
    """Record a tool call that was made without ``@aeval.tool`` (ignored outside a sample).

    Args:
        name: The tool's name.
        arguments: Its arguments by name.
        result: What it returned.
        error: What it raised (an exception or a message).
    """
    recorder = RECORDER.get()
    if recorder is None:
        return
    if not isinstance(name, str) or not name:
        raise TypeError(f"a tool's name must be a non-empty string, got {name!r}")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, Mapping):
        raise TypeError(
            f"a tool call's arguments must be a mapping of names to values, got {arguments!r}"
        )
    recorder.add_tool_call(recorder.start(), name, arguments, result=result, error=error)


def _document(item: Document | Mapping[str, Any] | str, recorder: Recorder) -> Document:
    if isinstance(item, str):
        text, _ = recorder.keep(item)
        return Document(text=text)
    if isinstance(item, Document):
        fields: Mapping[str, Any] = {"id": item.id, "text": item.text, "score": item.score}
    elif isinstance(item, Mapping):
        fields = item
    else:
        raise TypeError(
            "a retrieved document must be an aeval.trace.Document, a mapping with id, text "
            f"and score, or a string, got {type(item).__name__}"
        )
    identifier, text, score = fields.get("id"), fields.get("text"), fields.get("score")
    if text is not None:
        text, _ = recorder.keep(text if isinstance(text, str) else str(text))
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise TypeError(f"a document's score must be a number, got {score!r}")
    return Document(
        id=None if identifier is None else str(identifier),
        text=text,
        score=None if score is None else float(score),
    )


def record_retrieval(
    documents: Iterable[Document | Mapping[str, Any] | str], *, query: str | None = None
) -> None:
    """Record a retrieval (ignored outside a sample).

    Args:
        documents: What was retrieved, best first: :class:`Document` values, mappings with
            ``id``, ``text`` and ``score``, or texts.
        query: The query.
    """
    recorder = RECORDER.get()
    if recorder is None:
        return
    pending = recorder.start()
    kept = tuple(_document(item, recorder) for item in documents)
    if query is not None:
        query, _ = recorder.keep(query if isinstance(query, str) else str(query))
    recorder.add_retrieval(
        pending, Retrieval(query=query, documents=kept, started=started_at(pending))
    )


def record_model_call(**call: Unpack[ModelCallFields]) -> None:
    """Record a chat model call (ignored outside a sample); model clients call this.

    Args:
        model: The model's name.
        prompt_tokens: Tokens of the prompt, when known.
        completion_tokens: Tokens of the completion, when known.
        duration: Seconds from the request to the response.
        requested_tools: The tools the model asked to call.
        started: When the request was sent; now when not given.
    """
    record_model(**call)
