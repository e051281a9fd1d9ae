"""Conversation samples in a run: the target called once per user turn, a transcript per row.

A :class:`ConversationRun` is the :class:`~aeval._engine._run.Run` of a target that takes an
:class:`~aeval.Conversation`; single-turn samples keep the plain run and its fast path. Each
(sample, repeat) is one conversation: user turns come from the sample's script or, for a
simulated user, from its first messages and then from the user model (:mod:`._simulated`);
each turn is recorded on its own trace; the row's output is the :class:`~aeval.Transcript`
and its trace the transcript's combined trace. A turn that raises or times out, or a
conversation that outlasts ``conversation_timeout``, ends the conversation as error rows
whose output is the transcript so far.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

import anyio

from .._conversation import (
    Conversation,
    ConversationEnding,
    ScriptedTurn,
    SimulatedUser,
    Transcript,
    Turn,
)
from .._exceptions import AbandonedCallsError
from .._samples import EvaluationSample
from .._samples._conversation_keys import SIMULATED_USER, TURNS, is_conversation
from ..trace._context import Recorder
from ..trace._recording import activate, deactivate
from ._apply import Judged, stray_cancellation
from ._callables import names_class
from ._executor import IndexedSample
from ._run import Run, SampleTimeout, TargetInterrupt
from ._simulated import UserModel, UserModelError, UserUsage
from ._tools import tool_source

if TYPE_CHECKING:
    from .._samples._model import Parameters

__all__ = [
    "ConversationRun",
    "check_conversation_kinds",
    "takes_conversation",
]


def takes_conversation(function: Callable[..., Any]) -> bool | None:
    """Whether ``function`` is a conversation target.

    ``True`` when its first parameter is annotated :class:`~aeval.Conversation`; ``None``
    when it takes both kinds of sample (an object whose ``accepts_conversations`` is
    ``True``, such as the HTTP target); else ``False``.
    """
    if getattr(function, "accepts_conversations", False) is True:
        return None
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    parameters = list(signature.parameters.values())
    if not parameters:
        return False
    annotation = parameters[0].annotation
    return names_class(annotation, Conversation)


def check_conversation_kinds(
    kind: bool | None, name: str, samples: Sequence[object], *, user_model: bool
) -> None:
    """Refuse, before the run, samples of the kind the target does not take, and simulated
    users with no user model to play them (items that are not samples are left to the run,
    which names them). One pass of two dict lookups per sample.

    Raises:
        TypeError: Naming the first such sample and what to change.
    """
    if kind is None and user_model:
        return
    if kind is False:  # only conversations to refuse: a sample without metadata is none
        for item in samples:
            sample = item.sample if type(item) is IndexedSample else item
            if type(sample) is not EvaluationSample and not isinstance(sample, EvaluationSample):
                continue
            metadata = sample.metadata
            if metadata and (SIMULATED_USER in metadata or TURNS in metadata):
                check_conversation_kind(False, name, sample)
        return
    for item in samples:
        sample = item.sample if type(item) is IndexedSample else item
        if not isinstance(sample, EvaluationSample):
            continue
        metadata = sample.metadata
        simulated = SIMULATED_USER in metadata
        if (simulated or TURNS in metadata) is not kind:
            check_conversation_kind(kind, name, sample)
        if simulated and not user_model:
            _check_user_model(sample, user_model=False)


def _check_user_model(sample: EvaluationSample, *, user_model: bool) -> None:
    if not user_model and SIMULATED_USER in sample.metadata:
        raise TypeError(
            f"Sample {sample.name!r} has a simulated user (user:), but the Scorer has no "
            "user model to play it: pass Scorer(user_model=ChatModel) (user-model: in a "
            "config), or script the conversation with turns: [...]"
        )


def check_conversation_kind(kind: bool | None, name: str, sample: EvaluationSample) -> None:
    """Refuse one sample of the kind the target does not take (see above)."""
    if kind is None or is_conversation(sample) == kind:
        return
    if kind:
        raise TypeError(
            f"Sample {sample.name!r} is a single-turn sample, but the function under test "
            f"{name} takes an aeval.Conversation: give the sample turns: [...] (or user: "
            "{...}), or evaluate it with a target that takes its parameters"
        )
    raise TypeError(
        f"Sample {sample.name!r} is a conversation (turns: or user:), but the function under "
        f"test {name} takes the sample's parameters: make it a conversation target, "
        "async def reply(conversation: aeval.Conversation) -> str"
    )


class _TurnFailure(Exception):
    def __init__(self, error: BaseException, ended: ConversationEnding) -> None:
        super().__init__(str(error))
        self.error = error
        self.ended = ended


class ConversationRun(Run):
    """A run whose samples are conversations (see the module documentation).

    Args:
        kind: ``True`` when the target takes only conversations, ``None`` when it takes
            single-turn samples too (those run as in a plain run), ``False`` when it takes
            only single-turn samples from a source checked as it is read (a conversation
            sample stops the run, named).
        user_model: Plays the simulated users (``Scorer(user_model=...)``).
        conversation_timeout: Seconds one whole conversation may take.
    """

    def __init__(
        self,
        *args: Any,
        kind: bool | None,
        user_model: UserModel | None,
        conversation_timeout: float | None,
    ) -> None:
        super().__init__(*args)
        self.kind = kind
        self.user_model = user_model
        self.conversation_timeout = conversation_timeout

    def _produce(
        self, sample: EvaluationSample, index: int, repeat: int
    ) -> Coroutine[Any, Any, Judged | None]:
        """A conversation's, else ``Run``'s own (its coroutine, handed on unawaited: this
        runs once per sample)."""
        metadata = sample.metadata  # is_conversation(sample), inline
        if not (metadata and (TURNS in metadata or SIMULATED_USER in metadata)):
            if self.kind is not True:
                return Run._produce(self, sample, index, repeat)
            check_conversation_kind(True, self.function.name, sample)
        elif self.kind is False:
            check_conversation_kind(False, self.function.name, sample)
        return self._converse(sample, index, repeat)

    async def _converse(self, sample: EvaluationSample, index: int, repeat: int) -> Judged | None:
        settings = self.settings
        turns: list[Turn] = []
        started = perf_counter()
        failure: _TurnFailure | None = None
        ended: ConversationEnding = "script"
        tools = None if self._live else tool_source(settings.tools, sample, repeat)
        _check_user_model(sample, user_model=self.user_model is not None)
        usage = self.user_model.usage() if self.user_model is not None else None
        script, user = sample.turns, sample.user
        state: dict[str, Any] = {}
        conversation_id = f"{sample.name}#{repeat}"
        try:
            with anyio.move_on_after(self.conversation_timeout) as scope:
                number = 0
                while True:
                    number += 1
                    message, end = await self._next_message(script, user, number, turns, usage)
                    if end is not None:
                        ended = end
                        break
                    turns.append(
                        await self._turn(message, number, turns, conversation_id, state, tools)
                    )
            if scope.cancelled_caught:
                assert self.conversation_timeout is not None
                failure = _TurnFailure(
                    SampleTimeout(
                        f"the conversation did not finish within {self.conversation_timeout:g} s "
                        "(Scorer conversation_timeout), after "
                        f"{sum(turn.assistant is not None for turn in turns)} answered turn(s)"
                    ),
                    "timeout",
                )
        except _TurnFailure as exc:
            failure = exc
        duration = perf_counter() - started
        extra = None if usage is None else usage.metadata()
        if failure is not None:
            transcript = Transcript(tuple(turns), failure.ended)
            await self._add_call_failure(
                sample,
                failure.error,
                duration,
                index,
                repeat,
                transcript.trace,
                output=transcript,
                extra=extra,
            )
            return None
        transcript = Transcript(tuple(turns), ended)
        return Judged(
            sample,
            transcript,
            duration=duration,
            index=index,
            repeat=repeat,
            trace=transcript.trace,
            extra=extra,
        )

    async def _next_message(
        self,
        script: tuple[ScriptedTurn, ...],
        user: SimulatedUser | None,
        number: int,
        turns: list[Turn],
        usage: UserUsage | None,
    ) -> tuple[str, ConversationEnding | None]:
        """The user's message of turn ``number``, or why the conversation ends."""
        if user is None:
            return (script[number - 1].user, None) if number <= len(script) else ("", "script")
        if number > user.max_turns:
            return "", "max-turns"
        if number <= len(user.first):
            return user.first[number - 1], None
        assert self.user_model is not None and usage is not None
        try:
            reply = await self.user_model.next_message(user, Transcript(tuple(turns)), usage)
        except UserModelError as exc:
            raise _TurnFailure(exc, "error") from None
        return ("", "goal") if reply is None else (reply, None)

    async def _turn(
        self,
        message: str,
        number: int,
        turns: list[Turn],
        conversation_id: str,
        state: dict[str, Any],
        tools: Any,
    ) -> Turn:
        """Call the target for one user turn; a failure ends the conversation."""
        settings = self.settings
        history = [entry for turn in turns for entry in _messages(turn)]
        history.append({"role": "user", "content": message})
        conversation = Conversation(tuple(history), conversation_id, state, number)
        recorder = Recorder(limits=settings.trace_limits, tools=tools, redact=self._redact)
        started = perf_counter()
        tokens = activate(recorder)
        try:
            if settings.timeout is None:
                answer = await self._call_function(_as_argument(conversation))
            else:
                answer = await self._call_with_timeout(_as_argument(conversation), settings.timeout)
        except BaseException as exc:
            error: BaseException = exc
            if isinstance(exc, self._cancelled()):
                stray = stray_cancellation(exc, "the function under test")
                if stray is None:  # the conversation's time ran out, or the run stopped
                    turns.append(Turn(message, None, recorder.snapshot(), perf_counter() - started))
                    raise
                error = stray
            elif isinstance(exc, AbandonedCallsError):
                raise
            elif isinstance(exc, KeyboardInterrupt):
                raise TargetInterrupt(exc) from None
            if recorder.unmocked is not None:
                error = recorder.unmocked
            turns.append(Turn(message, None, recorder.snapshot(), perf_counter() - started))
            ended: ConversationEnding = "timeout" if isinstance(error, SampleTimeout) else "error"
            raise _TurnFailure(_on_turn(error, number), ended) from None
        finally:
            deactivate(tokens)
        duration = perf_counter() - started
        trace = recorder.snapshot()
        if recorder.unmocked is not None:
            turns.append(Turn(message, None, trace, duration))
            raise _TurnFailure(_on_turn(recorder.unmocked, number), "error")
        if not isinstance(answer, str):
            turns.append(Turn(message, None, trace, duration))
            raise _TurnFailure(
                TypeError(
                    f"turn {number}: the conversation target returned "
                    f"{type(answer).__name__}, not the assistant's message: return a str"
                ),
                "error",
            )
        return Turn(message, answer, trace, duration)


def _messages(turn: Turn) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": turn.user}]
    if turn.assistant is not None:
        messages.append({"role": "assistant", "content": turn.assistant})
    return messages


def _as_argument(conversation: Conversation) -> Parameters:
    return conversation  # type: ignore[return-value]  # the target takes it whole


def _on_turn(error: BaseException, number: int) -> BaseException:
    if isinstance(error, SampleTimeout):
        return SampleTimeout(f"turn {number}: {error}")
    if isinstance(error, Exception):
        error.add_note(f"aeval: raised on turn {number} of the conversation")
    return error
