"""What a strategy returns, and the rows a Scorer produces."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from .._util._jsonsafe import int_text, safe_str
from .._util._numbers import check_fraction
from ..trace import Trace

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = [
    "ErrorInfo",
    "ErrorSource",
    "EvaluationResult",
    "EvaluationRow",
    "Outcome",
    "StrayCancellation",
    "int_text",
    "make_result",
    "outcome_of",
    "safe_str",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _freeze(metadata: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not metadata:
        return _EMPTY
    if type(metadata) is dict:
        return MappingProxyType(metadata.copy())
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
    return MappingProxyType(dict(metadata))


class Outcome(StrEnum):
    """The verdict of one row.

    ``UNSCORED`` is a strategy that could not reach a verdict (an unparseable judge reply);
    ``ERROR`` is a function under test or a strategy that raised; ``SKIPPED`` is a strategy
    that did not run because a check it depends on failed. All three count as not passed.
    ``NOT_APPLICABLE`` is a strategy whose expectation the sample does not state (a tool check
    on a sample without ``expected-calls``): it neither passes nor fails, and the score leaves
    it out (see :class:`EvaluationReport`).
    """

    PASSED = "passed"
    FAILED = "failed"
    UNSCORED = "unscored"
    ERROR = "error"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"


_PASSED, _FAILED, _UNSCORED, _SKIPPED, _NOT_APPLICABLE = (
    Outcome.PASSED,
    Outcome.FAILED,
    Outcome.UNSCORED,
    Outcome.SKIPPED,
    Outcome.NOT_APPLICABLE,
)
"""The outcomes read once per row: an enum's member read through its class costs CPython
3.11 about 140 ns (a module global, 10)."""


@dataclass(frozen=True, slots=True, init=False)
class EvaluationResult:
    """The verdict of one strategy on one output.

    ``passed`` and ``score`` are independent: a strategy may pass with a score of 0.3.
    ``score`` is ``None`` only for an *unscored* result (see :meth:`unscored`), a *skipped*
    one (:meth:`skip`) and a *not applicable* one (:meth:`not_applicable`, ``inapplicable``
    set: the sample does not state the expectation the strategy checks).

    Example:
        >>> EvaluationResult.failing(0.2, "too short").with_metadata({"length": 3}).score
        0.2
    """

    passed: bool
    score: float | None
    explanation: str | None
    metadata: Mapping[str, Any]
    skipped: bool
    inapplicable: bool

    def __init__(
        self,
        passed: bool,
        score: float | None,
        explanation: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        skipped: bool = False,
        inapplicable: bool = False,
    ) -> None:
        if passed is not True and passed is not False:
            raise TypeError(f"passed must be a bool, got {passed!r}")
        if score is None:
            if passed:
                raise ValueError("An unscored result cannot pass: give it a score")
        elif type(score) is not float or not 0.0 <= score <= 1.0:  # NaN fails the range too
            score = check_fraction(score, "Score", bounds="0.0 and 1.0", got="got: {}")
        if skipped and (passed or score is not None):
            raise ValueError("A skipped result neither passes nor has a score")
        if inapplicable and (passed or score is not None or skipped):
            raise ValueError(
                "A not-applicable result neither passes, nor has a score, nor is skipped"
            )
        if explanation is not None and type(explanation) is not str:
            explanation = explanation if isinstance(explanation, str) else str(explanation)
        _set_passed(self, passed)  # object.__setattr__, without looking the names up
        _set_score(self, score)
        _set_explanation(self, explanation)
        _set_metadata(self, _freeze(metadata))
        _set_skipped(self, skipped is True or bool(skipped))
        _set_inapplicable(self, inapplicable is True or bool(inapplicable))

    @classmethod
    def passing(cls, score: float = 1.0, explanation: str | None = None) -> EvaluationResult:
        """A passing result (Java's ``passed(score)``)."""
        return cls(True, score, explanation)

    @classmethod
    def failing(cls, score: float | str = 0.0, explanation: str | None = None) -> EvaluationResult:
        """A failing result: ``failing(0.2, "why")`` or ``failing("why")`` (score 0.0)."""
        if isinstance(score, str):
            if explanation is not None:
                raise TypeError("failing() takes (score, explanation) or (explanation)")
            return cls(False, 0.0, score)
        return cls(False, score, explanation)

    @classmethod
    def from_boolean(cls, passed: bool, explanation: str | None = None) -> EvaluationResult:
        """Score 1.0 when ``passed``, else 0.0."""
        return cls(bool(passed), 1.0 if passed else 0.0, explanation)

    @classmethod
    def unscored(
        cls, explanation: str, metadata: Mapping[str, Any] | None = None
    ) -> EvaluationResult:
        """A strategy could not reach a verdict; the row is counted apart, never as a pass."""
        return cls(False, None, explanation, metadata)

    @classmethod
    def skip(cls, explanation: str, metadata: Mapping[str, Any] | None = None) -> EvaluationResult:
        """The strategy did not run because a check it depends on failed (see ``Gated``).

        Its row is *skipped*: counted apart, as not passed, never as a pass.
        """
        return cls(False, None, explanation, metadata, skipped=True)

    @classmethod
    def not_applicable(
        cls, reason: str, metadata: Mapping[str, Any] | None = None
    ) -> EvaluationResult:
        """The sample does not state what the strategy checks against (say which key).

        Its row is *not applicable*: it neither passes nor fails, and the score leaves it
        out (a sample whose rows all are is left out of the score's denominator).

        Example:
            >>> EvaluationResult.not_applicable(
            ...     "the sample states no expected-calls"
            ... ).inapplicable
            True
        """
        return cls(False, None, reason, metadata, inapplicable=True)

    @property
    def is_unscored(self) -> bool:
        """Whether no verdict could be reached (a skipped or not-applicable result is not
        unscored)."""
        return self.score is None and not self.skipped and not self.inapplicable

    def with_metadata(self, metadata: Mapping[str, Any]) -> EvaluationResult:
        """Return a copy with ``metadata`` merged in (new keys win)."""
        return EvaluationResult(
            self.passed,
            self.score,
            self.explanation,
            {**self.metadata, **metadata},
            skipped=self.skipped,
            inapplicable=self.inapplicable,
        )

    def with_explanation(self, explanation: str | None) -> EvaluationResult:
        """Return a copy with the explanation replaced."""
        return EvaluationResult(
            self.passed,
            self.score,
            explanation,
            self.metadata,
            skipped=self.skipped,
            inapplicable=self.inapplicable,
        )


_set_passed = EvaluationResult.__dict__["passed"].__set__
_set_score = EvaluationResult.__dict__["score"].__set__
_set_explanation = EvaluationResult.__dict__["explanation"].__set__
_set_metadata = EvaluationResult.__dict__["metadata"].__set__
_set_skipped = EvaluationResult.__dict__["skipped"].__set__
_set_inapplicable = EvaluationResult.__dict__["inapplicable"].__set__

_new = object.__new__


def make_result(
    passed: bool,
    score: float | None,
    explanation: str | None,
    metadata: Mapping[str, Any],
    skipped: bool,
    inapplicable: bool = False,
) -> EvaluationResult:
    """``EvaluationResult`` of values already valid, positionally (passed as a bool, score as a
    float in [0, 1] or ``None``, explanation as a ``str`` or ``None``, metadata as a read-only
    mapping nobody else holds, skipped, inapplicable), without its ``__init__``'s checks and
    copy: for the built-in checks, which make one per row."""
    result: EvaluationResult = _new(EvaluationResult)
    _set_passed(result, passed)
    _set_score(result, score)
    _set_explanation(result, explanation)
    _set_metadata(result, metadata)
    _set_skipped(result, skipped)
    _set_inapplicable(result, inapplicable)
    return result


def outcome_of(result: EvaluationResult) -> Outcome:
    """The outcome of the row of ``result``: the one place a verdict becomes an outcome."""
    if result.skipped:
        return _SKIPPED
    if result.inapplicable:
        return _NOT_APPLICABLE
    if result.score is None:
        return _UNSCORED
    return _PASSED if result.passed else _FAILED


ErrorSource = Literal["function", "strategy"]


class StrayCancellation(Exception):
    """A ``CancelledError`` raised by user code while the run was not being cancelled.

    Awaiting a task or future that something else cancelled raises ``CancelledError`` in the
    awaiter (a shared in-flight request, a ``wait_for`` race, a client library's pool). That
    is a failure of the function or strategy that raised it, not a cancellation of the run:
    it becomes an error row of type ``CancelledError`` (the original is its ``__cause__``).
    """

    def __init__(self, who: str) -> None:
        super().__init__(
            f"{who} raised CancelledError, but the run was not cancelled: it came from "
            "something awaited there (a task or future that something else cancelled, a "
            "wait_for race), so it is an error of this sample, not a cancellation of the run"
        )


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An exception turned into data.

    Attributes:
        type: The exception's class name.
        message: Its message.
        traceback: The formatted traceback, when kept.
        source: ``"function"`` when the function under test failed (the strategy could not
            run), ``"strategy"`` when the strategy itself raised.
    """

    type: str
    message: str
    traceback: str | None = None
    source: ErrorSource = "strategy"

    @classmethod
    def from_exception(
        cls,
        exc: BaseException,
        *,
        with_traceback: bool = True,
        source: ErrorSource = "strategy",
    ) -> ErrorInfo:
        """Capture an exception (the traceback is formatted only when asked).

        Never raises: an exception whose ``__str__`` raises is described instead.
        """
        tb = None
        if with_traceback:
            import traceback

            try:
                tb = "".join(traceback.format_exception(exc))
            except Exception:
                tb = None
        kind = "CancelledError" if isinstance(exc, StrayCancellation) else type(exc).__name__
        return cls(kind, safe_str(exc), tb, source)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True, slots=True, init=False)
class EvaluationRow:
    """One (sample, repeat, strategy) evaluation in a report.

    Every (sample, repeat, strategy) yields exactly one row, so every sample weighs the same:
    a function under test that raises or times out yields one error row per strategy (its
    ``error.source`` is ``"function"``), or one row with ``strategy=None`` when the run has no
    strategies.

    Attributes:
        sample: The sample evaluated.
        strategy: The strategy's name; ``None`` only on the row of a run without strategies.
        output: What the function under test returned (``None`` if it raised).
        outcome: passed, failed, unscored, error, skipped or not_applicable.
        score: The strategy's 0-1 score (``None`` when unscored, skipped or not applicable;
            0.0 on an error row).
        explanation: Why; on an error row, the error message.
        metadata: What the strategy attached.
        error: The exception, as data, on an error row.
        duration: Seconds the function under test took for this sample.
        strategy_duration: Seconds the strategy took.
        index: The sample's position in the run (orders the report).
        repeat: Which repeat of the sample (0-based).
        position: The strategy's position (orders rows within a sample).
        timestamp: When the output was produced (Unix time), on rows of live traffic
            (``aeval.online``); ``None`` on the rows of a run over samples.
        trace: What the sample's run did (tool calls, model calls, retrievals), shared by
            every row of that (sample, repeat); ``None`` when nothing was recorded.
    """

    sample: EvaluationSample
    strategy: str | None
    output: Any
    outcome: Outcome
    score: float | None
    explanation: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    error: ErrorInfo | None = None
    duration: float = 0.0
    strategy_duration: float = 0.0
    index: int = 0
    repeat: int = 0
    position: int = 0
    timestamp: float | None = None
    trace: Trace | None = None

    def __init__(
        self,
        sample: EvaluationSample,
        strategy: str | None,
        output: Any,
        outcome: Outcome,
        score: float | None,
        explanation: str | None = None,
        metadata: Mapping[str, Any] = _EMPTY,
        error: ErrorInfo | None = None,
        duration: float = 0.0,
        strategy_duration: float = 0.0,
        index: int = 0,
        repeat: int = 0,
        position: int = 0,
        timestamp: float | None = None,
        trace: Trace | None = None,
    ) -> None:
        # the dataclass's own __init__ sets each field by name through object.__setattr__;
        # a row is made per (sample, strategy), so each slot is set through its descriptor
        _row_sample(self, sample)
        _row_strategy(self, strategy)
        _row_output(self, output)
        _row_outcome(self, outcome)
        _row_score(self, score)
        _row_explanation(self, explanation)
        _row_metadata(self, metadata)
        _row_error(self, error)
        _row_duration(self, duration)
        _row_strategy_duration(self, strategy_duration)
        _row_index(self, index)
        _row_repeat(self, repeat)
        _row_position(self, position)
        _row_timestamp(self, timestamp)
        _row_trace(self, trace)

    @property
    def passed(self) -> bool:
        """Whether the row passed."""
        return self.outcome is _PASSED

    @property
    def function_failed(self) -> bool:
        """Whether the function under test failed for this sample (so the strategy never ran)."""
        error = self.error
        return error is not None and (error.source == "function" or self.strategy is None)

    @property
    def name(self) -> str:
        """The sample's name."""
        return self.sample.name

    @property
    def expected_output(self) -> Any:
        """The sample's expected output."""
        return self.sample.expected_output

    @property
    def tags(self) -> tuple[str, ...]:
        """The sample's tags."""
        return self.sample.tags

    @property
    def sort_key(self) -> tuple[int, int, int]:
        """Sample order, then repeat, then strategy order."""
        return (self.index, self.repeat, self.position)

    @classmethod
    def from_result(
        cls,
        sample: EvaluationSample,
        strategy: str,
        output: Any,
        result: EvaluationResult,
        *,
        duration: float = 0.0,
        strategy_duration: float = 0.0,
        index: int = 0,
        repeat: int = 0,
        position: int = 0,
        timestamp: float | None = None,
        trace: Trace | None = None,
    ) -> EvaluationRow:
        """The row of a strategy that returned a result."""
        return cls(
            sample,
            strategy,
            output,
            outcome_of(result),
            result.score,
            result.explanation,
            result.metadata,
            None,
            duration,
            strategy_duration,
            index,
            repeat,
            position,
            timestamp,
            trace,
        )

    @classmethod
    def from_error(
        cls,
        sample: EvaluationSample,
        strategy: str | None,
        output: Any,
        error: ErrorInfo,
        *,
        duration: float = 0.0,
        strategy_duration: float = 0.0,
        index: int = 0,
        repeat: int = 0,
        position: int = 0,
        metadata: Mapping[str, Any] | None = None,
        timestamp: float | None = None,
        trace: Trace | None = None,
    ) -> EvaluationRow:
        """The row of a strategy that raised, or of a function under test that failed.

        A function error (``error.source == "function"``) yields one such row per strategy,
        each saying that the call failed and the strategy could not run.
        """
        if error.source == "function" or strategy is None:
            explanation = f"Failed to execute sample {sample.name!r}: {error}"
            if strategy is not None:
                explanation += f"; the strategy {strategy} could not run"
        else:
            explanation = str(error)
        return cls(
            sample=sample,
            strategy=strategy,
            output=output,
            outcome=Outcome.ERROR,
            score=0.0,
            explanation=explanation,
            metadata=_freeze(metadata),
            error=error,
            duration=duration,
            strategy_duration=strategy_duration,
            index=index,
            repeat=repeat,
            position=position,
            timestamp=timestamp,
            trace=trace,
        )

    def to_dict(self) -> dict[str, Any]:
        """The row as plain JSON-ready data: the shape of one ``rows.jsonl`` line.

        :meth:`from_dict` reads it back; ``aeval.read_run`` reads a whole file.

        Returns:
            A new dict of JSON types (the output, when a :class:`~aeval.Transcript`, as data).
        """
        from ._codec import row_to_dict

        return row_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationRow:
        """Rebuild a row from :meth:`to_dict`'s data, checking every field.

        Args:
            data: One row's data, as :meth:`to_dict` made it (a ``rows.jsonl`` line, parsed).

        Raises:
            ValueError: The data is not a row; the message names the field that is wrong
                (a score of ``"high"``, a negative index, a missing outcome).
        """
        from ._codec import row_from_dict

        return row_from_dict(data)


_row_sample = EvaluationRow.__dict__["sample"].__set__
_row_strategy = EvaluationRow.__dict__["strategy"].__set__
_row_output = EvaluationRow.__dict__["output"].__set__
_row_outcome = EvaluationRow.__dict__["outcome"].__set__
_row_score = EvaluationRow.__dict__["score"].__set__
_row_explanation = EvaluationRow.__dict__["explanation"].__set__
_row_metadata = EvaluationRow.__dict__["metadata"].__set__
_row_error = EvaluationRow.__dict__["error"].__set__
_row_duration = EvaluationRow.__dict__["duration"].__set__
_row_strategy_duration = EvaluationRow.__dict__["strategy_duration"].__set__
_row_index = EvaluationRow.__dict__["index"].__set__
_row_repeat = EvaluationRow.__dict__["repeat"].__set__
_row_position = EvaluationRow.__dict__["position"].__set__
_row_timestamp = EvaluationRow.__dict__["timestamp"].__set__
_row_trace = EvaluationRow.__dict__["trace"].__set__
