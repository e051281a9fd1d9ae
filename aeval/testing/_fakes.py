"""In-process fakes of the model protocols: scripted replies, recorded calls, no socket."""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .._model_types import ChatMessage, ChatOptions, ChatResponse, Embeddings, TokenUsage
from .._util._closing import AsyncClosing
from ._openai import hashed_embedding

__all__ = [
    "ChatCall",
    "ChatReplyTypes",
    "EmbedCall",
    "FakeChatModel",
    "FakeEmbedder",
    "VectorTypes",
]

ChatReplyTypes = str | ChatResponse | Exception
"""A scripted chat reply: its text, a whole response, or an exception to raise."""

VectorTypes = Sequence[float] | Exception
"""A scripted embedding: the vector, or an exception to raise."""

_NO_USAGE = TokenUsage()


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One call of :meth:`FakeChatModel.chat`.

    Attributes:
        messages: The conversation sent, oldest first.
        json_mode: Whether a JSON object reply was asked for.
        options: The sampling options passed (``max_tokens``…), if any.
    """

    messages: tuple[ChatMessage, ...]
    json_mode: bool = False
    options: ChatOptions | None = None


@dataclass(frozen=True, slots=True)
class EmbedCall:
    """One call of :meth:`FakeEmbedder.embed`.

    Attributes:
        texts: The texts to embed, in order.
    """

    texts: tuple[str, ...]


class _FakeModel(AsyncClosing):
    """What both fakes share: a model name and ``async with`` that does nothing."""

    model: str

    async def aclose(self) -> None:
        """Nothing to close; there for code that closes its model."""


class FakeChatModel(_FakeModel):
    """A :class:`~aeval.abc.ChatModel` that answers from a script, in-process.

    Each call is recorded in :attr:`calls`, then answered by the next scripted reply, or by
    ``replies(call)`` when ``replies`` is a function (sync or async, deciding per call). A
    reply is a string (a :class:`~aeval.models.ChatResponse` carrying ``usage``,
    ``retries`` and the model name), a whole ``ChatResponse`` (returned as is) or an
    exception (raised). A call beyond the scripted replies raises :class:`LookupError`.

    Example:
        >>> async def test_the_judge_reads_both_verdicts() -> None:
        ...     judge = FakeChatModel(["true", "false"], model="judge")
        ...     strategy = AiJudgeStrategy(judge)
        ...     assert (await strategy.evaluate(sample, "Paris")).passed
        ...     assert not (await strategy.evaluate(sample, "Lyon")).passed
        ...     assert "Lyon" in judge.calls[1].messages[0].content

    Args:
        replies: The replies in order, or a function of the :class:`ChatCall` returning one.
        model: The model name (what strategies and reports show).
        usage: The token usage of each string reply.
        retries: The retries each string reply reports.
    """

    def __init__(
        self,
        replies: Iterable[ChatReplyTypes]
        | Callable[[ChatCall], ChatReplyTypes | Awaitable[ChatReplyTypes]] = (),
        *,
        model: str = "fake-chat-model",
        usage: TokenUsage = _NO_USAGE,
        retries: int = 0,
    ) -> None:
        self.model = model
        self.usage = usage
        self.retries = retries
        self.calls: list[ChatCall] = []
        self._decide = replies if callable(replies) else None
        self._replies: deque[ChatReplyTypes] = deque(() if callable(replies) else replies)

    def __repr__(self) -> str:
        return f"FakeChatModel(model={self.model!r}, calls={len(self.calls)})"

    async def chat(
        self,
        messages: Sequence[ChatMessage] | str,
        *,
        json_mode: bool = False,
        options: ChatOptions | None = None,
    ) -> ChatResponse:
        """Record the call and answer it from the script.

        Args:
            messages: The conversation, oldest first; a string is one user message.
            json_mode: Whether a JSON object reply is asked for (recorded).
            options: The sampling options (recorded; the fake does not apply them).

        Raises:
            LookupError: The scripted replies ran out.
        """
        if isinstance(messages, str):
            messages = [ChatMessage("user", messages)]
        call = ChatCall(tuple(messages), json_mode, options)
        self.calls.append(call)
        reply: ChatReplyTypes
        if self._decide is not None:
            decided = self._decide(call)
            reply = await decided if inspect.isawaitable(decided) else decided
        elif self._replies:
            reply = self._replies.popleft()
        else:
            raise LookupError(
                f"FakeChatModel {self.model!r} has no scripted reply left for call "
                f"{len(self.calls)}: script more replies or pass a function"
            )
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        return ChatResponse(reply, self.usage, self.model, self.retries)


class FakeEmbedder(_FakeModel):
    """An :class:`~aeval.abc.Embedder` that embeds from a script, in-process.

    Each call is recorded in :attr:`calls`. A text's vector comes from ``vectors``: a
    mapping (a text it lacks raises :class:`LookupError`), or a function of the text (sync
    or async); an exception in its place is raised. Without ``vectors`` every text gets
    its :func:`~aeval.testing.hashed_embedding` of ``dimensions``, as the test server
    sends: equal texts are equal vectors, texts sharing words are similar.

    Example:
        >>> async def test_similar_meaning_passes() -> None:
        ...     embedder = FakeEmbedder({"Paris": [1.0, 0.0], "It is Paris": [0.9, 0.1]})
        ...     strategy = SemanticSimilarityStrategy(0.9, embedder=embedder)
        ...     assert (await strategy.evaluate(sample, "It is Paris")).passed

    Args:
        vectors: Vectors by text, or a function of a text returning its vector.
        model: The model name (what strategies and reports show).
        usage: The token usage each call reports.
        retries: The retries each call reports.
        dimensions: The size of the hashed vectors used without ``vectors``.
    """

    def __init__(
        self,
        vectors: Mapping[str, VectorTypes]
        | Callable[[str], VectorTypes | Awaitable[VectorTypes]]
        | None = None,
        *,
        model: str = "fake-embedder",
        usage: TokenUsage = _NO_USAGE,
        retries: int = 0,
        dimensions: int = 64,
    ) -> None:
        self.model = model
        self.usage = usage
        self.retries = retries
        self.dimensions = dimensions
        self.calls: list[EmbedCall] = []
        self._vectors = vectors

    def __repr__(self) -> str:
        return f"FakeEmbedder(model={self.model!r}, calls={len(self.calls)})"

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Record the call and return one scripted vector per text, in order.

        Raises:
            LookupError: A mapping of vectors lacks one of ``texts``.
        """
        if isinstance(texts, str):
            texts = [texts]
        self.calls.append(EmbedCall(tuple(texts)))
        vectors = [await self._vector(text) for text in texts]
        return Embeddings(vectors, self.usage, self.model, self.retries)

    async def _vector(self, text: str) -> Sequence[float]:
        scripted = self._vectors
        if scripted is None:
            return hashed_embedding(text, self.dimensions)
        if isinstance(scripted, Mapping):
            if text not in scripted:
                raise LookupError(
                    f"FakeEmbedder {self.model!r} has no vector for {text!r}: add it to "
                    "vectors or pass a function"
                )
            vector = scripted[text]
        else:
            decided = scripted(text)
            vector = await decided if inspect.isawaitable(decided) else decided
        if isinstance(vector, Exception):
            raise vector
        return vector
