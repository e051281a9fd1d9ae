"""The simulated user: a chat model that writes the user's next message of a conversation.

The user model gets a system prompt with the user's persona and goal and, as one user
message, the transcript so far; it answers with the user's next message, or with exactly
``GOAL REACHED`` (:data:`GOAL_REACHED`) once the goal is reached. Any other reply that holds
``GOAL REACHED``, or an empty reply, is malformed: the conversation ends as an error row of
type :class:`UserModelError` that quotes it. Calls go through a judge cache when one is
given (identical transcripts are asked once; a cached reply counts no tokens), and their
calls and tokens are added to the conversation's first row as ``user_model`` metadata, which
the report sums into its usage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from .._reporting._values import USER_MODEL_KEY
from ..abc import ChatModel
from ._apply import stray_cancellation

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from .._conversation import SimulatedUser, Transcript
    from .._model_types import ChatMessage, ChatResponse

__all__ = [
    "GOAL_REACHED",
    "USER_MODEL_KEY",
    "UserModel",
    "UserModelError",
    "UserUsage",
    "user_prompt",
]

GOAL_REACHED = "GOAL REACHED"
"""The user model's whole reply when the simulated user's goal is reached."""

_SYSTEM = """\
You play a user talking to an AI assistant, to test the assistant.
Persona: {persona}
Goal: {goal}
Write only the user's next message, in the persona's voice, one message and nothing else.
When the goal is reached (the assistant has given the user what the goal asks for), reply \
with exactly {done} and nothing else."""


class UserModelError(Exception):
    """The user model failed or gave a reply that is neither a message nor the goal signal."""


class _Cache(Protocol):
    def key(self, model: str, messages: Sequence[ChatMessage], *, json_mode: bool) -> str: ...

    async def get_or_call(
        self, key: str, call: Callable[[], Awaitable[ChatResponse]]
    ) -> tuple[ChatResponse, bool]: ...


class UserUsage:
    """The user model's calls and tokens over one conversation."""

    __slots__ = ("cached", "calls", "completion_tokens", "prompt_tokens", "retries", "unreported")

    def __init__(self) -> None:
        self.calls = self.cached = self.prompt_tokens = self.completion_tokens = 0
        self.retries = self.unreported = 0

    def count(self, tokens: object) -> None:
        """Add a reply's token usage; a reply without countable usage is counted apart."""
        prompt = getattr(tokens, "prompt_tokens", None)
        completion = getattr(tokens, "completion_tokens", None)
        if not (_is_count(prompt) and _is_count(completion)):
            self.unreported += 1
            return
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    def metadata(self) -> dict[str, Any] | None:
        """``{"user_model": {...}}`` for the conversation's first row, ``None`` without calls."""
        if not self.calls:
            return None
        return {
            USER_MODEL_KEY: {
                "calls": self.calls,
                "cached": self.cached,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "retries": self.retries,
                **({"calls_without_usage": self.unreported} if self.unreported else {}),
            }
        }


def _is_count(tokens: object) -> TypeGuard[int]:
    return isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0


def user_prompt(user: SimulatedUser, transcript: Transcript) -> list[ChatMessage]:
    """The messages the user model is asked with (see the module documentation)."""
    from .._model_types import ChatMessage  # a simulated user's run only

    lines = ["The conversation so far:"]
    for turn in transcript.turns:
        lines.append(f"USER: {turn.user}")
        lines.append(f"ASSISTANT: {'(no answer)' if turn.assistant is None else turn.assistant}")
    lines.append(f"Write the user's next message, or {GOAL_REACHED} if the goal is reached.")
    return [
        ChatMessage(
            "system", _SYSTEM.format(persona=user.persona, goal=user.goal, done=GOAL_REACHED)
        ),
        ChatMessage("user", "\n".join(lines)),
    ]


class UserModel:
    """A :class:`~aeval.abc.ChatModel` playing simulated users (``Scorer(user_model=...)``).

    Args:
        model: Any chat model.
        cache: A :class:`~aeval.JudgeCache` the calls go through, or ``None``.
    """

    def __init__(self, model: ChatModel, cache: Any = None) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(
                f"user_model must be a chat model (an object with async chat(messages)), got "
                f"{type(model).__name__}"
            )
        if cache is not None and not callable(getattr(cache, "get_or_call", None)):
            raise TypeError(f"user_cache must be an aeval.JudgeCache, got {type(cache).__name__}")
        self.model = model
        self.cache: _Cache | None = cache
        name = getattr(model, "model", None)
        self.name = name if isinstance(name, str) else type(model).__name__

    @staticmethod
    def usage() -> UserUsage:
        """A new counter for one conversation."""
        return UserUsage()

    async def next_message(
        self, user: SimulatedUser, transcript: Transcript, usage: UserUsage
    ) -> str | None:
        """The user's next message, or ``None`` when the user model says the goal is reached.

        Raises:
            UserModelError: The call failed, or the reply is malformed (quoted).
        """
        messages = user_prompt(user, transcript)
        turn = len(transcript.turns) + 1
        try:
            if self.cache is None:
                response, cached = await self.model.chat(messages), False
            else:
                key = self.cache.key(self.name, messages, json_mode=False)
                response, cached = await self.cache.get_or_call(
                    key, lambda: self.model.chat(messages)
                )
        except BaseException as exc:
            failure: BaseException = exc
            if not isinstance(exc, Exception):
                # a CancelledError the user model raised itself, not a cancellation of the
                # run: one error row, like any failure of the model, and the run goes on
                stray = stray_cancellation(exc, "the user model")
                if stray is None:
                    raise
                failure = stray
            retries = getattr(exc, "retries", 0)
            usage.calls += 1
            usage.retries += retries if isinstance(retries, int) else 0
            raise UserModelError(
                f"the user model failed while writing user turn {turn}: "
                f"{type(failure).__name__}: {failure}"
            ) from failure
        usage.calls += 1
        text = getattr(response, "text", None)
        if not isinstance(text, str):
            shown = repr(response)
            raise UserModelError(
                f"the user model returned {shown[:197] + '...' if len(shown) > 200 else shown} "
                f"for user turn {turn}, not a chat response with a text (aeval.abc.ChatModel's "
                "chat() returns an aeval.models.ChatResponse)"
            )
        if cached:
            usage.cached += 1
        else:
            usage.count(getattr(response, "usage", None))
        text = text.strip()
        if text == GOAL_REACHED:
            return None
        if not text or GOAL_REACHED in text.upper():
            shown = text if len(text) <= 200 else text[:197] + "..."
            raise UserModelError(
                f"the user model's reply for user turn {turn} is malformed ({shown!r}): it "
                f"must be the user's next message, or exactly {GOAL_REACHED} once the goal is "
                "reached"
            )
        return text
