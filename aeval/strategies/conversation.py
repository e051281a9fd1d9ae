"""Strategies for conversations: any check on every turn, and a judge of the whole transcript.

A conversation sample's row output is an :class:`aeval.Transcript`.
:class:`EachTurn` applies a single-turn strategy to each assistant turn (agent
strategies see that turn's trace);
:class:`ConversationJudgeStrategy` asks a chat model about the whole conversation. Checks on
the whole conversation's tool calls need nothing new: the engine makes the transcript's
combined trace current, so ``ToolSequenceStrategy`` and ``BudgetStrategy`` read every turn's
calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

from .._conversation import Transcript, Turn
from .._engine._apply import apply_strategy
from .._engine._callables import prepare_strategies, strategy_name
from .._reporting._results import EvaluationResult
from .._samples import EvaluationSample
from .._samples._conversation_keys import turn_sample
from .._util._jsonsafe import safe_str
from .._util._numbers import truncate
from ..abc import ChatModel
from ..trace import Trace, current, render_trace, using
from ._base import NamedStrategy
from .judge import AiJudgeStrategy, JudgeOptions

if TYPE_CHECKING:
    pass

__all__ = [
    "CONVERSATION_CRITERIA",
    "CONVERSATION_PROMPT",
    "ConversationJudgeStrategy",
    "EachTurn",
    "EachTurnStrategy",
    "each_turn_sample",
    "render_transcript",
]

_EXCERPT = 60
_NOTHING_CALLED = Trace()
_USAGE = ("prompt_tokens", "completion_tokens", "retries", "cost")


def each_turn_sample(sample: EvaluationSample, number: int, user: str) -> EvaluationSample:
    """The sample turn ``number`` (from 1) of a conversation is judged against.

    It is :func:`turn_sample`'s (the conversation sample's metadata, without the conversation
    keys, with the scripted turn's expectations merged in: a turn's ``must_contain`` replaces
    the sample's; its expected output is the turn's ``expected_output`` when it has one, else
    the sample's), with the turn's user message as its ``question`` parameter, so a judge's
    ``{question}`` is what the user asked on that turn.

    Args:
        sample: The conversation sample.
        number: The turn's number, from 1.
        user: The turn's user message.
    """
    base = turn_sample(sample, number)
    return EvaluationSample(
        base.name,
        {"question": user},
        base.expected_output,
        tags=base.tags,
        metadata=base.metadata,
    )


def _excerpt(text: str) -> str:
    return truncate(" ".join(text.split()), _EXCERPT)


def _transcript(output: Any, who: str) -> Transcript:
    if isinstance(output, Transcript):
        return output
    raise TypeError(
        f"{who} judges conversations, but this row's output is "
        f"{'None' if output is None else type(output).__name__}, not a Transcript: give it a "
        "conversation sample (turns: [...] or user: {persona, goal, ...}) and a target that "
        "takes an aeval.Conversation"
    )


def _turn_error(
    who: str, number: int, turn: Turn, exc: Exception, usage: Mapping[str, float]
) -> RuntimeError:
    """The error of a row whose inner strategy raised on a turn: it names the turn, and
    carries the retries of that call and of the turns before it to the row."""
    said = safe_str(exc)
    error = RuntimeError(
        f"{who}: the strategy raised on turn {number} ({_excerpt(turn.user)!r}): "
        f"{type(exc).__name__}" + (f": {said}" if said else "")
    )
    retries = getattr(exc, "retries", 0)
    total = int(usage.get("retries", 0)) + (retries if isinstance(retries, int) else 0)
    if total:
        error.retries = total  # type: ignore[attr-defined]
    return error


def _outcome(result: EvaluationResult) -> str:
    if result.skipped:
        return "skipped"
    if result.inapplicable:
        return "not_applicable"
    if result.is_unscored:
        return "unscored"
    return "passed" if result.passed else "failed"


class EachTurn(NamedStrategy):
    """Applies a single-turn strategy to every assistant turn of a conversation.

    Each turn is judged as a sample of its own (:func:`each_turn_sample`): its answer is the
    output, its user message the ``question``, its own expectations
    (``turns: [{user: ..., must-contain: [...], expected-tools: [...]}]``) merged over the
    conversation sample's, so a strategy built without explicit lists (``ContainsStrategy()``,
    ``ToolCalledStrategy()``) reads each turn's. The turn's trace is the current one while it
    is judged, so agent strategies see only that turn's calls (a turn that recorded nothing
    while others did called nothing: its trace is empty). A sync strategy runs as the Scorer
    runs it (in a worker thread unless it is a cheap inline check), an async one on the event
    loop.

    The row passes when every turn passes. Its score is the share of turns that passed (a
    ten-turn conversation with one bad turn scores 0.9 and fails). A turn the inner
    strategy finds *not applicable* (a turn without ``expected-tools`` for
    ``ToolCalledStrategy()``) neither passes nor fails: the share is over the other
    turns, and a conversation none of whose turns applies gives a not-applicable row. Its
    explanation names the first turn that did not pass: its number, an excerpt of its user
    message, and the inner strategy's explanation. A turn with no answer (it raised or timed
    out) does not pass.
    The metadata holds ``turns``, one verdict per turn (``turn``, ``outcome``, ``score``,
    ``explanation``), and ``failed_turn``, the first turn that did not pass (the reports mark
    it); ``None`` when all passed. A judged inner strategy's ``prompt_tokens``,
    ``completion_tokens``, ``retries`` and ``cost`` are summed over the turns, so the report's
    usage counts every turn's calls.

    A row whose output is not a :class:`~aeval.Transcript` (a single-turn sample) is an error
    row saying the strategy needs a conversation sample; an inner strategy that raises on a
    turn makes an error row naming the turn and the error (its retries, and those of the
    turns before it, counted).

    Args:
        strategy: The strategy applied to each turn (anything a Scorer accepts).
        name: The rows' name; by default ``EachTurn(<the strategy's name>)``.

    Raises:
        TypeError: ``strategy`` is not a strategy.

    Example:
        >>> from aeval.strategies import ContainsStrategy
        >>> EachTurn(ContainsStrategy()).name
        'EachTurn(ContainsStrategy)'
    """

    __slots__ = ("_inner", "_strategy")

    def __init__(self, strategy: object, *, name: str | None = None) -> None:
        super().__init__(name=name)
        (inner,) = prepare_strategies([strategy])
        self._strategy = strategy
        self._inner = inner

    @property
    def name(self) -> str:
        """The rows' name: the one given, else ``EachTurn(<the strategy's name>)``."""
        return self._name if self._name is not None else f"EachTurn({self._inner.name})"

    @property
    def strategy(self) -> object:
        """The strategy applied to each turn."""
        return self._strategy

    async def _turn(
        self, sample: EvaluationSample, number: int, turn: Turn, *, traced: bool
    ) -> EvaluationResult:
        if turn.assistant is None:
            return EvaluationResult.failing(
                "the turn has no answer: the target raised or ran out of time on it"
            )
        inner = self._inner
        trace = turn.trace if turn.trace is not None or not traced else _NOTHING_CALLED
        with using(trace):
            return await apply_strategy(
                inner.evaluate,
                inner.name,
                each_turn_sample(sample, number, turn.user),
                turn.assistant,
                inline=inner.inline,
            )

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge every turn of the transcript ``output``; see the class documentation."""
        transcript = _transcript(output, self.name)
        if not transcript.turns:
            return EvaluationResult(
                False, 0.0, "the conversation has no turns", {"turns": [], "failed_turn": None}
            )
        traced = any(turn.trace is not None for turn in transcript.turns)
        verdicts: list[dict[str, Any]] = []
        usage: dict[str, float] = {}
        first: tuple[int, Turn, EvaluationResult] | None = None
        for number, turn in enumerate(transcript.turns, 1):
            try:
                result = await self._turn(sample, number, turn, traced=traced)
            except Exception as exc:
                raise _turn_error(self.name, number, turn, exc, usage) from exc
            verdicts.append(
                {
                    "turn": number,
                    "outcome": _outcome(result),
                    "score": result.score,
                    "explanation": result.explanation,
                }
            )
            if first is None and not result.passed and not result.inapplicable:
                first = (number, turn, result)
            for key in _USAGE:
                value = result.metadata.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    usage[key] = usage.get(key, 0) + value
        passed = sum(verdict["outcome"] == "passed" for verdict in verdicts)
        applicable = sum(verdict["outcome"] != "not_applicable" for verdict in verdicts)
        metadata: dict[str, Any] = {
            "turns": verdicts,
            "failed_turn": None if first is None else first[0],
            **usage,
        }
        if not applicable:
            return EvaluationResult.not_applicable(
                f"{self._inner.name} applies to none of the {len(verdicts)} turns: "
                f"{verdicts[0]['explanation']}",
                metadata,
            )
        score = passed / applicable
        left_out = len(verdicts) - applicable
        turns = (
            f"{applicable} turns"
            if not left_out
            else (f"{applicable} applicable turns ({left_out} not applicable)")
        )
        if first is None:
            return EvaluationResult(True, score, f"all {turns} passed {self._inner.name}", metadata)
        number, turn, result = first
        why = result.explanation or _outcome(result)
        return EvaluationResult(
            False,
            score,
            f"turn {number} of {len(verdicts)} ({_excerpt(turn.user)!r}) did not pass "
            f"{self._inner.name}: {why}; {passed} of {turns} passed",
            metadata,
        )

    def _config(self) -> dict[str, Any]:
        return {"strategy": strategy_name(self._strategy)}


EachTurnStrategy = EachTurn
"""The class's public name, with the ``Strategy`` suffix every other strategy has; its rows
keep the name ``EachTurn(<the strategy's name>)``."""


CONVERSATION_CRITERIA: tuple[str, ...] = (
    "The assistant reached the user's goal, or said clearly why it could not.",
    "Constraints the user gave (budgets, dates, corrections) were kept in every later turn.",
    "The facts the assistant stated were consistent from turn to turn.",
)
"""The default criteria of :class:`ConversationJudgeStrategy`."""

CONVERSATION_PROMPT = """\
You are an AI that judges a whole conversation between a user and an assistant.
{goal}
Criteria, all of which must hold:
{criteria}

The conversation, turn by turn:
{response}

Decide whether the assistant met every criterion over the whole conversation.
"""
"""The conversation judge's prompt: ``{goal}``, ``{criteria}`` and ``{response}`` (the
transcript, turn by turn) are filled in; true/false mode appends the one-word answer it needs,
structured mode the JSON format."""

_VERDICT_LINE = "Answer true if it did and false if it did not."
_TRACE_SHOWN = 160


def render_transcript(transcript: Transcript, *, traces: bool = True) -> str:
    """The transcript as a judge reads it: each turn's user message, the tools the assistant
    called (``traces``) and its answer."""
    blocks: list[str] = []
    for number, turn in enumerate(transcript.turns, 1):
        lines = [f"Turn {number}", f"User: {turn.user}"]
        if traces and turn.trace:
            calls = render_trace(turn.trace, limit=_TRACE_SHOWN).replace("\n", "\n  ")
            lines.append(f"Assistant's tool calls:\n  {calls}")
        answer = "(no answer: the assistant failed on this turn)"
        lines.append(f"Assistant: {answer if turn.assistant is None else turn.assistant}")
        blocks.append("\n".join(lines))
    blocks.append(f"(The conversation ended: {transcript.ended}.)")
    return "\n\n".join(blocks)


class ConversationJudgeStrategy(AiJudgeStrategy):
    """Ask a chat model whether a whole conversation meets criteria.

    The judge reads the transcript turn by turn (each user message, the tools called with
    their results, each answer; :func:`render_transcript`), the simulated user's goal when the
    sample has one, and the criteria, by default :data:`CONVERSATION_CRITERIA`: the goal
    reached, the user's constraints kept across turns, the facts consistent. Everything else
    is :class:`AiJudgeStrategy`'s: true/false or structured judging with ``scale`` and
    ``threshold``, several judges, the cache, prices, the token limit, and the honesty rules
    (an unreadable reply is asked again once, then the row is unscored; a failed call is an
    error row; tokens, retries and cost in the metadata are counted in the report's usage).

    A row whose output is not a :class:`~aeval.Transcript` is an error row.

    Args:
        model: The judge, or a list of judges.
        criteria: What the conversation must show, one item each (numbered in the prompt).
        prompt: A template with ``{response}`` (the transcript) and optionally
            ``{criteria}`` and ``{goal}``; :data:`CONVERSATION_PROMPT` by default.
        structured: Ask for a JSON score instead of true/false.
        scale: The (lowest, highest) score of structured mode.
        threshold: The normalised score (0-1) that passes when the judge gives no ``passed``.
        cache: A :class:`~aeval.JudgeCache`; identical judge calls are then made once.
        prices: Model name to (USD per 1k prompt tokens, USD per 1k completion tokens).
        system_prompt: A system message sent before the prompt.
        max_tokens: The most tokens a reply may have; the mode's default when ``None``.
        temperature: The sampling temperature sent, if any.
        seed: The sampling seed sent, if any.
        aggregate: How several judges decide: ``"majority"`` or ``"mean"``.
        name: The rows' name; the class name by default.

    Raises:
        TypeError: An option has the wrong type.
        ValueError: ``criteria`` is empty or holds a blank item, or an option is out of range.
    """

    __slots__ = ("_criteria",)

    def __init__(
        self,
        model: ChatModel | Sequence[ChatModel],
        *,
        criteria: Sequence[str] = CONVERSATION_CRITERIA,
        prompt: str | None = None,
        structured: bool = False,
        scale: tuple[float, float] = (0.0, 100.0),
        **options: Unpack[JudgeOptions],
    ) -> None:
        if isinstance(criteria, str) or not isinstance(criteria, Sequence):
            raise TypeError(
                "criteria takes a list of texts, e.g. criteria=['The budget is kept.'], "
                f"got {type(criteria).__name__}"
            )
        if not criteria or not all(isinstance(c, str) and c.strip() for c in criteria):
            raise ValueError(
                f"criteria must be a non-empty list of non-blank texts, got {list(criteria)!r}"
            )
        if prompt is not None and (not isinstance(prompt, str) or "{response}" not in prompt):
            raise ValueError(
                "prompt must be a string holding {response} (the transcript, turn by turn) and "
                f"may hold {{criteria}} and {{goal}}, got {truncate(repr(prompt), 80)}"
            )
        self._criteria = tuple(criteria)
        listed = "\n".join(f"{index}. {item}" for index, item in enumerate(criteria, 1))
        template = CONVERSATION_PROMPT if prompt is None else prompt
        if not structured and prompt is None:
            template = template + _VERDICT_LINE + "\n"
        super().__init__(
            model,
            template.replace("{criteria}", listed),
            structured=structured,
            scale=scale,
            **options,
        )

    @property
    def criteria(self) -> tuple[str, ...]:
        """What the conversation must show."""
        return self._criteria

    def render(self, sample: EvaluationSample, output: Any) -> str:
        """The prompt the judge receives for the transcript ``output`` of ``sample``."""
        transcript = _transcript(output, self.name)
        user = sample.user
        goal = "" if user is None else f"The user's goal: {user.goal}\n"
        prompt = self.prompt.replace("{goal}", goal).replace(
            "{response}", render_transcript(transcript)
        )
        if "{trace}" in prompt:
            prompt = prompt.replace("{trace}", render_trace(current()))
        return prompt

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Ask the judge about the whole conversation ``output``."""
        _transcript(output, self.name)
        result = await super().evaluate(sample, output)
        return result.with_metadata({"criteria": list(self._criteria)})

    def _config(self) -> dict[str, Any]:
        options = super()._config()
        if self._criteria != CONVERSATION_CRITERIA:
            options["criteria"] = list(self._criteria)
        return options
