"""The aggregator's counters: model usage, per strategy, per tag, the samples being assembled,
and the repeats of a sample (pass@k, flakiness)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .._util._stats import MomentsCounter, pass_at_k, pass_hat_k
from ._results import EvaluationRow, Outcome, safe_str
from ._values import (
    USER_MODEL_KEY,
    FlakyCase,
    ModelUsage,
    RepeatStatistics,
    StrategyStatistics,
)

__all__ = [
    "NOT_APPLICABLE",
    "OpenPair",
    "OpenSample",
    "RepeatCounter",
    "StrategyCounter",
    "TagCounter",
    "UsageCounter",
    "add_cluster",
    "count_row",
    "output_key",
]

_PASSED = Outcome.PASSED
_FAILED = Outcome.FAILED
NOT_APPLICABLE = Outcome.NOT_APPLICABLE
_STRATEGY_COUNTS = (
    "total",
    "passed",
    "failed",
    "unscored",
    "errors",
    "skipped",
    "scored",
    "not_applicable",
)
"""The counts a strategy's counter sums up and its statistics hold, by the same names."""


def _fields(counter: object, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(counter, name) for name in names}


class UsageCounter:
    __slots__ = ("completion_tokens", "cost", "prompt_tokens", "retries", "user_model_calls")

    def __init__(self) -> None:
        self.retries = self.prompt_tokens = self.completion_tokens = self.user_model_calls = 0
        self.cost = 0.0

    def add(self, metadata: Mapping[str, Any]) -> None:
        for key in ("completion_tokens", "cost", "prompt_tokens", "retries"):
            value = metadata.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                setattr(self, key, getattr(self, key) + value)
        user = metadata.get(USER_MODEL_KEY)
        if isinstance(user, Mapping):
            self.add(user)
            calls = user.get("calls")
            if isinstance(calls, int) and not isinstance(calls, bool):
                self.user_model_calls += calls

    def absorb(self, other: UsageCounter) -> None:
        for key in self.__slots__:
            setattr(self, key, getattr(self, key) + getattr(other, key))

    def freeze(self) -> ModelUsage:
        return ModelUsage(**_fields(self, self.__slots__))


class StrategyCounter:
    __slots__ = (
        "errors",
        "failed",
        "moments",
        "not_applicable",
        "passed",
        "score_sum",
        "scored",
        "skipped",
        "total",
        "unscored",
    )

    def __init__(self) -> None:
        self.total = self.passed = self.failed = self.unscored = self.errors = 0
        self.skipped = self.scored = self.not_applicable = 0
        self.score_sum = 0.0
        self.moments = MomentsCounter()

    def absorb_counts(self, other: StrategyCounter) -> None:
        for key in _STRATEGY_COUNTS:
            setattr(self, key, getattr(self, key) + getattr(other, key))
        self.score_sum += other.score_sum

    def freeze(self, moments: MomentsCounter) -> StrategyStatistics:
        return StrategyStatistics(
            **_fields(self, _STRATEGY_COUNTS), score_sum=self.score_sum, moments=moments.freeze()
        )


class TagCounter:
    __slots__ = ("moments", "not_applicable", "passed", "total")

    def __init__(self) -> None:
        self.total = self.passed = self.not_applicable = 0
        self.moments = MomentsCounter()


def count_row(
    tags: dict[str, TagCounter],
    sample_tags: tuple[str, ...],
    strategy: StrategyCounter,
    outcome: Outcome,
    score: float | None,
    times: int = 1,
) -> None:
    """Count ``times`` rows of ``outcome`` in their tags' and their strategy's counters: the
    one rule for counting a row, whether the row was made or only counted
    (``RowAggregator.count_passed``).

    A row counts once in ``total`` and once under its outcome; its 0-1 score (``score``:
    the sum of the ``times`` rows' scores) counts in the strategy's mean only when it passed
    or failed; a not-applicable row counts apart from both ``passed`` and the rows the score
    is over (see :func:`add_cluster`).
    """
    passed = outcome is _PASSED
    inapplicable = outcome is NOT_APPLICABLE
    for tag in sample_tags:
        counter = tags.get(tag)
        if counter is None:
            counter = tags[tag] = TagCounter()
        counter.total += times
        if passed:
            counter.passed += times
        elif inapplicable:
            counter.not_applicable += times
    strategy.total += times
    if passed:
        strategy.passed += times
    elif outcome is _FAILED:
        strategy.failed += times
    elif inapplicable:
        strategy.not_applicable += times
    elif outcome is Outcome.UNSCORED:
        strategy.unscored += times
    elif outcome is Outcome.SKIPPED:
        strategy.skipped += times
    else:
        strategy.errors += times
    if score is not None and (passed or outcome is _FAILED):
        strategy.scored += times
        strategy.score_sum += score


def add_cluster(moments: MomentsCounter, rows: int, applicable: int, passed: int) -> None:
    """Count one sample's (or one sample and strategy's) ``rows`` in ``moments``: the score
    rule, in one place.

    The cluster's value is its pass rate over its applicable rows, weighted by its rows:
    ``rows × passed / applicable`` (``passed`` itself when every row applies, so the score is
    then passed rows / rows, to the last digit). A cluster with no applicable row is left
    out: it neither raises nor lowers the mean, and its rows are not in the denominator.
    """
    if applicable == rows:
        moments.add_cluster(rows, passed)
    elif applicable:
        moments.add_cluster(rows, passed * rows / applicable)


class OpenSample:
    """The rows of one sample seen so far, until all its rows have arrived."""

    __slots__ = ("applicable", "name", "outputs", "passed", "rows", "tags")

    def __init__(self, name: str, tags: tuple[str, ...]) -> None:
        self.name = name
        self.rows = 0
        self.passed = 0
        self.applicable = 0
        self.tags = tags
        self.outputs: dict[int, bytes] = {}


class OpenPair:
    """The repeats of one (sample, strategy) pair seen so far."""

    __slots__ = ("applicable", "name", "passed", "runs")

    def __init__(self, name: str) -> None:
        self.name = name
        self.runs = 0
        self.passed = 0
        self.applicable = 0


class RepeatCounter:
    __slots__ = (
        "agreement_samples",
        "agreement_sum",
        "flaky",
        "inconsistent",
        "pairs",
        "pass_at",
        "pass_count",
        "pass_hat",
        "repeats",
    )

    def __init__(self) -> None:
        self.repeats = 0
        self.pairs = 0
        self.flaky: list[FlakyCase] = []
        self.pass_at: list[float] = []
        self.pass_hat: list[float] = []
        self.pass_count: list[int] = []
        self.agreement_sum = 0.0
        self.agreement_samples = 0
        self.inconsistent: list[tuple[str, float]] = []

    def add_pair(self, name: str, strategy: str | None, runs: int, passed: int) -> None:
        self.pairs += 1
        self.repeats = max(self.repeats, runs)
        while len(self.pass_at) < runs:
            self.pass_at.append(0.0)
            self.pass_hat.append(0.0)
            self.pass_count.append(0)
        for k in range(1, runs + 1):
            self.pass_at[k - 1] += pass_at_k(runs, passed, k)
            self.pass_hat[k - 1] += pass_hat_k(runs, passed, k)
            self.pass_count[k - 1] += 1
        if 0 < passed < runs:
            self.flaky.append(FlakyCase(sample=name, strategy=strategy, passed=passed, runs=runs))

    def add_outputs(self, name: str, outputs: Mapping[int, bytes]) -> None:
        if len(outputs) < 2:
            return
        counts: dict[bytes, int] = {}
        for key in outputs.values():
            counts[key] = counts.get(key, 0) + 1
        agreement = max(counts.values()) / len(outputs)
        self.agreement_sum += agreement
        self.agreement_samples += 1
        if agreement < 1.0:
            self.inconsistent.append((name, agreement))

    def absorb(self, other: RepeatCounter) -> None:
        self.repeats = max(self.repeats, other.repeats)
        self.pairs += other.pairs
        self.flaky += other.flaky
        while len(self.pass_at) < len(other.pass_at):
            self.pass_at.append(0.0)
            self.pass_hat.append(0.0)
            self.pass_count.append(0)
        for i in range(len(other.pass_at)):
            self.pass_at[i] += other.pass_at[i]
            self.pass_hat[i] += other.pass_hat[i]
            self.pass_count[i] += other.pass_count[i]
        self.agreement_sum += other.agreement_sum
        self.agreement_samples += other.agreement_samples
        self.inconsistent += other.inconsistent

    def freeze(self) -> RepeatStatistics | None:
        if self.repeats < 2:
            return None
        counts = self.pass_count
        pass_at = {k + 1: self.pass_at[k] / n for k, n in enumerate(counts)}
        pass_hat = {k + 1: self.pass_hat[k] / n for k, n in enumerate(counts)}
        agreement = self.agreement_sum / self.agreement_samples if self.agreement_samples else None
        return RepeatStatistics(
            repeats=self.repeats,
            pairs=self.pairs,
            flaky=tuple(self.flaky),
            pass_at_k=pass_at,
            pass_hat_k=pass_hat,
            output_agreement=agreement,
            inconsistent=tuple(self.inconsistent),
        )


def normalized(output: Any) -> bytes:
    """The key two outputs share when they agree after whitespace and case normalisation."""
    if isinstance(output, str):
        return " ".join(output.split()).casefold().encode("utf-8", "backslashreplace")
    try:
        return orjson.dumps(output, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return safe_str(output).encode("utf-8", "backslashreplace")


def output_key(row: EvaluationRow) -> bytes:
    if row.function_failed and row.error is not None:
        return b"\x00error:" + row.error.type.encode()
    return normalized(row.output)
