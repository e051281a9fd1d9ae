"""Assertions on one case's answer: ``eval_assert.assert_eval(answer, *strategies)`` (seed 002)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._conversation import Transcript
from .._engine._callables import PreparedStrategy, is_async_callable, prepare_strategies
from .._engine._sync import running_loop
from .._reporting._report import EvaluationReport
from .._reporting._results import ErrorInfo, EvaluationResult, EvaluationRow, Outcome
from .._samples import EvaluationSample
from .._util._numbers import format_number, truncate

if TYPE_CHECKING:
    from ..abc import ChatModel

__all__ = ["EvalAssert", "EvalAssertion", "StrategyScore", "check_threshold"]

_REASON_LIMIT = 200


def check_threshold(threshold: object) -> float:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 <= threshold <= 1.0
    ):
        raise ValueError(f"threshold must be a number between 0.0 and 1.0, got {threshold!r}")
    return float(threshold)


@dataclass(frozen=True, slots=True)
class StrategyScore:
    """What one strategy said about the answer.

    Attributes:
        strategy: The strategy's name.
        result: What it returned; ``None`` when it raised.
        error: The exception it raised, as data; ``None`` when it returned.
    """

    strategy: str
    result: EvaluationResult | None
    error: ErrorInfo | None = None

    @property
    def score(self) -> float | None:
        """The 0-1 score; ``None`` when unscored or when the strategy raised."""
        return None if self.result is None else self.result.score

    def reaches(self, threshold: float) -> bool:
        """Whether the score is at least ``threshold``."""
        return self.score is not None and self.score >= threshold

    def describe(self) -> str:
        """``"ExactMatchStrategy: score 0.00 (Expected ..., got ...)"``."""
        if self.error is not None:
            return f"{self.strategy}: error {truncate(str(self.error), _REASON_LIMIT)}"
        assert self.result is not None
        score = "unscored" if self.score is None else f"score {format_number(self.score)}"
        reason = self.result.explanation
        return f"{self.strategy}: {score}" + (
            f" ({truncate(reason, _REASON_LIMIT)})" if reason else ""
        )


class EvalAssertion:
    """The scores of one ``assert_eval`` call, to assert on.

    Every check returns the assertion, so checks chain:
    ``eval_assert.assert_eval(answer, strategy).with_threshold(0.8).passes()``.
    """

    __slots__ = ("_case", "_scores", "_threshold")

    def __init__(
        self, case: EvaluationSample, scores: Sequence[StrategyScore], *, threshold: float
    ) -> None:
        self._case = case
        self._scores = tuple(scores)
        self._threshold = check_threshold(threshold)

    @property
    def threshold(self) -> float:
        """The lowest passing score."""
        return self._threshold

    @property
    def scores(self) -> tuple[StrategyScore, ...]:
        """Each strategy's outcome, in the order the strategies were given."""
        return self._scores

    def __repr__(self) -> str:
        return (
            f"<EvalAssertion case={self._case.name!r} threshold={format_number(self._threshold)} "
            f"strategies={len(self._scores)}>"
        )

    def with_threshold(self, threshold: float) -> EvalAssertion:
        """The same scores, checked against ``threshold`` (0-1) instead."""
        return EvalAssertion(self._case, self._scores, threshold=threshold)

    def results(self) -> list[EvaluationResult]:
        """The results, in strategy order; a strategy that raised gives a failing result
        whose explanation is the error."""
        return [
            s.result if s.result is not None else EvaluationResult.failing(0.0, str(s.error))
            for s in self._scores
        ]

    def passes(self) -> EvalAssertion:
        """Every score is at least the threshold.

        Raises:
            AssertionError: Lists each strategy below the threshold (or that raised or gave
                no score) with its score and explanation.
        """
        __tracebackhide__ = True
        below = [s for s in self._scores if not s.reaches(self._threshold)]
        if below:
            raise AssertionError(
                f"Case {self._case.name!r}: {len(below)} of {self._count()} scored below the "
                f"threshold {format_number(self._threshold)}:\n"
                + "\n".join(f"  - {s.describe()}" for s in below)
            )
        return self

    def fails(self) -> EvalAssertion:
        """Every score is below the threshold.

        A strategy that raised or gave no score has no score to compare: it fails this check
        too, so that a broken strategy does not pass for a bad answer.

        Raises:
            AssertionError: Lists each strategy that reached the threshold or had no score.
        """
        __tracebackhide__ = True
        unscored = [s for s in self._scores if s.score is None]
        if unscored:
            raise AssertionError(
                f"Case {self._case.name!r}: fails() needs a score from every strategy, but "
                f"{len(unscored)} of {self._count()} gave none:\n"
                + "\n".join(f"  - {s.describe()}" for s in unscored)
            )
        reached = [s for s in self._scores if s.reaches(self._threshold)]
        if reached:
            raise AssertionError(
                f"Case {self._case.name!r}: expected every score below the threshold "
                f"{format_number(self._threshold)}, but {len(reached)} of {self._count()} "
                "reached it:\n" + "\n".join(f"  - {s.describe()}" for s in reached)
            )
        return self

    def _count(self) -> str:
        return f"{len(self._scores)} strateg{'y' if len(self._scores) == 1 else 'ies'}"


class EvalAssert:
    """Runs strategies on a case's answer (the ``eval_assert`` fixture of ``@eval_cases``).

    Metadata given to one call is kept for the later calls of the same test: strategies see it
    merged into ``sample.metadata``. Every call's scores go into one report for the test,
    where a row passes when its score reaches this object's threshold.

    Args:
        case: The case being tested.
        threshold: The lowest passing score (0-1), 0.7 by default as in seed 002.
        on_report: Receives the test's report after each call (the plugin records it).
    """

    __slots__ = ("_calls", "_case", "_metadata", "_on_report", "_rows", "_threshold")

    def __init__(
        self,
        case: EvaluationSample,
        *,
        threshold: float = 0.7,
        on_report: Callable[[EvaluationReport], None] | None = None,
    ) -> None:
        self._case = case
        self._threshold = check_threshold(threshold)
        self._on_report = on_report
        self._metadata: dict[str, Any] = {}
        self._rows: list[EvaluationRow] = []
        self._calls = 0

    def __repr__(self) -> str:
        return f"<EvalAssert case={self._case.name!r} threshold={format_number(self._threshold)}>"

    @property
    def case(self) -> EvaluationSample:
        """The case being tested."""
        return self._case

    @property
    def threshold(self) -> float:
        """The lowest passing score of new assertions."""
        return self._threshold

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The metadata given so far, merged."""
        return dict(self._metadata)

    def report(self) -> EvaluationReport:
        """Every score of this test so far, as a report."""
        return EvaluationReport(self._rows)

    def assert_eval(
        self, answer: Any, *strategies: object, metadata: Mapping[str, Any] | None = None
    ) -> EvalAssertion:
        """Run ``strategies`` on ``answer`` and return the assertion on their scores.

        Sync strategies run inline. Async strategies need a loop: from a sync test this runs
        one; inside a running loop (an async test) it raises and you ``await``
        :meth:`assert_eval_async` instead.

        Args:
            answer: What the application answered for this case.
            *strategies: Strategy objects (or functions ``(sample, output) -> result``).
            metadata: Added to the case's metadata for this and later calls.

        Raises:
            RuntimeError: An async strategy inside a running event loop.
        """
        prepared = self._prepare(strategies)
        if any(is_async_callable(p.evaluate) for p in prepared):
            if running_loop() is not None:
                raise RuntimeError(self._needs_await())
            run = partial(self.assert_eval_async, answer, *strategies, metadata=metadata)
            return anyio.run(run)
        sample = self._sample(metadata)
        scores = [self._score(strategy, sample, answer) for strategy in prepared]
        return self._finish(sample, answer, scores)

    async def assert_eval_async(
        self, answer: Any, *strategies: object, metadata: Mapping[str, Any] | None = None
    ) -> EvalAssertion:
        """Like :meth:`assert_eval`, awaiting async strategies; for async tests.

        A plain (sync) strategy runs in a worker thread, as a Scorer runs it, so one that
        blocks (an HTTP call) does not stall the event loop; the built-in text checks and
        ``@aeval.strategies.inline`` ones run on the loop.
        """
        prepared = self._prepare(strategies)
        sample = self._sample(metadata)
        scores = []
        for strategy in prepared:
            try:
                if strategy.inline:
                    result = strategy.evaluate(sample, answer)
                else:
                    result = await anyio.to_thread.run_sync(strategy.evaluate, sample, answer)
                if inspect.isawaitable(result):
                    result = await result
                scores.append(self._checked(strategy, result))
            except Exception as exc:
                scores.append(StrategyScore(strategy.name, None, ErrorInfo.from_exception(exc)))
        return self._finish(sample, answer, scores)

    async def converse(
        self,
        target: Callable[..., Any],
        *,
        turn_timeout: float | None = None,
        conversation_timeout: float | None = None,
        user_model: ChatModel | None = None,
    ) -> Transcript:
        """Hold this case's conversation with ``target`` and return its transcript.

        The case is a conversation sample (``turns:`` or ``user:``); ``target`` is called once
        per user turn with an :class:`~aeval.Conversation`, as a Scorer calls it. Check the
        transcript with :meth:`assert_eval_async` (e.g. ``EachTurn(...)``).

        Args:
            target: ``async def reply(conversation: aeval.Conversation) -> str`` (or sync).
            turn_timeout: Seconds per turn.
            conversation_timeout: Seconds for the whole conversation.
            user_model: Plays a simulated user (``user:``).

        Raises:
            AssertionError: A turn raised or timed out (the message shows the transcript so
                far), or the user model failed.
            TypeError: The case is not a conversation, or ``target`` does not take one.
        """
        from .._engine._scorer import Scorer

        def keep(sample: EvaluationSample, output: Any) -> EvaluationResult:
            return EvaluationResult.from_boolean(True)

        scorer = Scorer(
            timeout=turn_timeout,
            conversation_timeout=conversation_timeout,
            user_model=user_model,
        )
        report = await scorer.evaluate([self._case], target, keep)
        (row,) = report.evaluations
        transcript = row.output
        if not isinstance(transcript, Transcript):
            raise TypeError(f"Case {self._case.name!r} is not a conversation (turns: or user:)")
        if row.error is not None:
            raise AssertionError(
                f"Case {self._case.name!r}: the conversation ended with {row.error} "
                f"({transcript.ended}) after:\n{transcript}"
            )
        return transcript

    def _prepare(self, strategies: Sequence[object]) -> tuple[PreparedStrategy, ...]:
        if not strategies:
            raise ValueError("assert_eval needs at least one strategy")
        return prepare_strategies(strategies)

    def _sample(self, metadata: Mapping[str, Any] | None) -> EvaluationSample:
        if metadata:
            self._metadata.update(metadata)
        if not self._metadata:
            return self._case
        case = self._case
        return EvaluationSample(
            case.name,
            case.parameters,
            case.expected_output,
            tags=case.tags,
            metadata={**case.metadata, **self._metadata},
        )

    def _call_sync(self, strategy: PreparedStrategy, sample: EvaluationSample, answer: Any) -> Any:
        result = strategy.evaluate(sample, answer)
        if inspect.isawaitable(result):
            if running_loop() is not None:
                if inspect.iscoroutine(result):
                    result.close()
                raise _NeedsAwaitError(self._needs_await())
            return anyio.run(_wait, result)
        return result

    def _score(
        self,
        strategy: PreparedStrategy,
        sample: EvaluationSample,
        answer: Any,
    ) -> StrategyScore:
        try:
            return self._checked(strategy, self._call_sync(strategy, sample, answer))
        except _NeedsAwaitError:
            raise
        except Exception as exc:
            return StrategyScore(strategy.name, None, ErrorInfo.from_exception(exc))

    @staticmethod
    def _checked(strategy: PreparedStrategy, result: object) -> StrategyScore:
        if not isinstance(result, EvaluationResult):
            raise TypeError(
                f"strategy {strategy.name} returned {type(result).__name__}, expected an "
                "EvaluationResult"
            )
        return StrategyScore(strategy.name, result)

    def _finish(
        self, sample: EvaluationSample, answer: Any, scores: list[StrategyScore]
    ) -> EvalAssertion:
        index = self._calls
        self._calls += 1
        for position, score in enumerate(scores):
            self._rows.append(self._row(sample, answer, score, index, position))
        if self._on_report is not None:
            self._on_report(self.report())
        return EvalAssertion(self._case, scores, threshold=self._threshold)

    def _row(
        self, sample: EvaluationSample, answer: Any, score: StrategyScore, index: int, position: int
    ) -> EvaluationRow:
        if score.error is not None:
            return EvaluationRow.from_error(
                sample, score.strategy, answer, score.error, index=index, position=position
            )
        assert score.result is not None
        if score.score is None:
            outcome = Outcome.UNSCORED
        else:
            outcome = Outcome.PASSED if score.reaches(self._threshold) else Outcome.FAILED
        return EvaluationRow(
            sample,
            score.strategy,
            answer,
            outcome,
            score.score,
            score.result.explanation,
            score.result.metadata,
            index=index,
            position=position,
        )

    def _needs_await(self) -> str:
        return (
            f"Case {self._case.name!r}: an async strategy cannot run inside a running event "
            "loop from assert_eval(); use `await eval_assert.assert_eval_async(...)`"
        )


class _NeedsAwaitError(RuntimeError):
    pass


async def _wait(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
