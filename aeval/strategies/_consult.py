"""One judge's verdict on one output: the call, the reading of the reply, the re-ask.

:class:`AiJudgeStrategy` consults one judge (or several, for an ensemble) per row; a
:class:`Judge` makes the calls and a :class:`Consultation` records what happened, for the
row's verdict, its metadata and the report's judge statistics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

from .._model_types import ChatMessage, ChatOptions, ChatResponse, TokenUsage
from ..abc import ChatModel
from ._cache import JudgeCache
from ._judge_parse import ParseError, StructuredVerdict

__all__ = ["Consultation", "Judge", "Verdict", "add_retries", "limit_text"]

Verdict = bool | StructuredVerdict | ParseError
"""A reply as read: a true/false verdict, a structured one, or why it could not be read."""

Reader = Callable[[str, str | None], Verdict]
"""Reads a reply, given the limit that cut it off (``"max_tokens=64"``) if one did."""


def add_retries(error: BaseException, retries: int) -> None:
    """Add the retries of earlier calls to the ``retries`` an error carries to its row."""
    if retries <= 0:
        return
    own = getattr(error, "retries", 0)
    with contextlib.suppress(AttributeError):
        error.retries = (own if isinstance(own, int) else 0) + retries  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Consultation:
    """What one judge answered for one row.

    Attributes:
        name: The judge's name in the row (its model's, numbered when an ensemble repeats
            a model).
        calls: Each reply, and whether it came from the cache.
        verdict: The last reply as read, or ``None`` when a call raised.
        error: The exception a call raised (its ``retries`` include the earlier calls').
        limit: The ``max_tokens`` the replies were generated under, when known.
        not_reasked: Why an unreadable first reply was not asked again.
    """

    name: str
    calls: tuple[tuple[ChatResponse, bool], ...]
    verdict: Verdict | None
    error: Exception | None = None
    limit: int | None = None
    not_reasked: str | None = None

    @property
    def reply(self) -> str:
        """The last reply's text ("" when none came)."""
        return self.calls[-1][0].text if self.calls else ""

    @property
    def model(self) -> str | None:
        """The model the server named in its last reply, if any."""
        return self.calls[-1][0].model if self.calls else None

    @property
    def readable(self) -> bool:
        """Whether the last reply was read as a verdict."""
        return self.verdict is not None and not isinstance(self.verdict, ParseError)

    @property
    def unreadable_first(self) -> bool:
        """Whether the first reply could not be read (a parse failure)."""
        return len(self.calls) > 1 or isinstance(self.verdict, ParseError)

    @property
    def reasked(self) -> bool:
        """Whether the judge was asked again."""
        return len(self.calls) > 1

    @property
    def repeated(self) -> bool:
        """Whether the judge, asked again, gave the same unreadable reply."""
        return (
            len(self.calls) > 1
            and isinstance(self.verdict, ParseError)
            and self.calls[0][0].text == self.calls[1][0].text
        )

    @property
    def cut_off(self) -> bool:
        """Whether the last reply was cut off at the token limit."""
        return bool(self.calls) and self.calls[-1][0].metadata.get("finish_reason") == "length"

    @property
    def salvaged(self) -> bool:
        """Whether a cut-off reply was used as far as its score went."""
        return isinstance(self.verdict, StructuredVerdict) and self.verdict.salvaged

    @property
    def usage(self) -> TokenUsage:
        """Tokens of the calls that reached the model (cached ones count none)."""
        total = TokenUsage()
        for response, cached in self.calls:
            if not cached:
                total += response.usage
        return total

    @property
    def retries(self) -> int:
        """Retries of the calls that reached the model, a failed call's included."""
        made = sum(response.retries for response, cached in self.calls if not cached)
        if self.error is not None:
            retries = getattr(self.error, "retries", 0)
            made = retries if isinstance(retries, int) else made
        return made


def limit_text(limit: int | None) -> str:
    """``max_tokens=64``, or what is known of an unknown limit."""
    return f"max_tokens={limit}" if limit is not None else "the model's token limit"


@dataclass(frozen=True, slots=True, eq=False)
class Judge:
    """One judge of a strategy: a chat model, its options and how its replies are read.

    Args:
        model: The chat model.
        name: The judge's name in rows.
        options: The options sent with each call; ``None`` when the model takes none.
        json_mode: Ask for a JSON object reply.
        cache: The judge cache, if any.
        cache_name: The model name in the cache key.
    """

    model: ChatModel
    name: str
    _: KW_ONLY
    options: ChatOptions | None
    json_mode: bool
    cache: JudgeCache | None
    cache_name: str

    def _limit(self, response: ChatResponse) -> int | None:
        sent = response.metadata.get("max_tokens")
        if isinstance(sent, int) and not isinstance(sent, bool):
            return sent
        return self.options.max_tokens if self.options is not None else None

    def read(self, response: ChatResponse, reader: Reader) -> Verdict:
        """``response`` as read, knowing whether the server cut it off."""
        cut = None
        if response.metadata.get("finish_reason") == "length":
            cut = limit_text(self._limit(response))
        return reader(response.text, cut)

    async def _call(self, messages: list[ChatMessage], reader: Reader) -> tuple[ChatResponse, bool]:
        options = self.options

        async def call() -> ChatResponse:
            if options is None:
                return await self.model.chat(messages, json_mode=self.json_mode)
            chat: Any = self.model.chat
            response: ChatResponse = await chat(messages, json_mode=self.json_mode, options=options)
            return response

        if self.cache is None:
            return await call(), False
        key = JudgeCache.key(self.cache_name, messages, json_mode=self.json_mode, options=options)

        def usable(response: ChatResponse) -> bool:
            return not isinstance(self.read(response, reader), ParseError)

        return await self.cache.get_or_call(key, call, usable=usable)

    async def consult(
        self,
        messages: list[ChatMessage],
        reader: Reader,
        corrective: Callable[[str], str],
    ) -> Consultation:
        """Ask, read, and ask once more when that can help.

        An unreadable reply is asked again once, the conversation continued with the reply
        and ``corrective(reason)``, unless it was cut off at the token limit before it could
        be read (the same limit would cut the second reply off too). A call that raises ends
        the consultation; its error carries the retries of the calls before it.
        """
        calls: list[tuple[ChatResponse, bool]] = []
        try:
            calls.append(await self._call(messages, reader))
            verdict = self.read(calls[0][0], reader)
            not_reasked = None
            if isinstance(verdict, ParseError):
                if verdict.cut_off:
                    not_reasked = "the same limit would cut the reply off again"
                else:
                    again = [
                        *messages,
                        ChatMessage("assistant", calls[0][0].text),
                        ChatMessage("user", corrective(verdict.reason)),
                    ]
                    calls.append(await self._call(again, reader))
                    verdict = self.read(calls[1][0], reader)
        except Exception as error:
            add_retries(error, sum(r.retries for r, cached in calls if not cached))
            limit = self._limit(calls[-1][0]) if calls else None
            return Consultation(self.name, tuple(calls), None, error, limit)
        return Consultation(
            self.name, tuple(calls), verdict, None, self._limit(calls[-1][0]), not_reasked
        )
