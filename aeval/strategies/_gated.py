"""Gated strategies: run an expensive check only when cheap ones passed (seed 003)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._engine._apply import apply_strategy
from .._engine._callables import prepare_strategies, strategy_name
from .._reporting._results import EvaluationResult
from ._base import NamedStrategy

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["Gated", "GatedStrategy"]


class Gated(NamedStrategy):
    """Runs ``strategy`` only when every check in ``after`` passes on the same output.

    ``Gated(AiJudgeStrategy(model), after=[NotBlankStrategy(), ContainsStrategy(...)])``
    calls the judge only for outputs that are not blank and contain what they must: seed
    003's "run the judge only on cases that pass the string checks". The gated strategy
    still yields its row for every sample, so every sample weighs the same: when a check
    fails, the row is *skipped* (counted apart, as not passed), its explanation names the
    check that failed and why, and no model call is made. The report counts skipped rows per
    strategy: the judge calls saved.

    The checks run in order, inside the gate, and stop at the first that does not pass (a
    check that raises stops the gate too, and the row is an error row naming it). List them
    in the run as well when you want their own rows; text checks cost microseconds.

    Args:
        strategy: The strategy to run when the gate opens (anything a Scorer accepts).
        after: The checks that must pass first, in order (at least one).
        name: The rows' name; by default the gated strategy's own name.

    Raises:
        TypeError: ``strategy`` or a check is not a strategy.
        ValueError: ``after`` is empty.
    """

    __slots__ = ("_after", "_inner", "_strategy")

    def __init__(
        self, strategy: object, *, after: Sequence[object], name: str | None = None
    ) -> None:
        super().__init__(name=name)
        if isinstance(after, str | bytes) or not isinstance(after, Sequence):
            raise TypeError("after takes a list of strategies, e.g. after=[NotBlankStrategy()]")
        if not after:
            raise ValueError("after needs at least one check: Gated(strategy, after=[check])")
        (inner,) = prepare_strategies([strategy])
        self._strategy = strategy
        self._inner = inner
        self._after = prepare_strategies(after)

    @property
    def name(self) -> str:
        """The rows' name: the one given, else the gated strategy's."""
        return self._name if self._name is not None else self._inner.name

    @property
    def strategy(self) -> object:
        """The gated strategy."""
        return self._strategy

    @property
    def checks(self) -> tuple[str, ...]:
        """The names of the checks, in order."""
        return tuple(check.name for check in self._after)

    async def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Run the checks, then the gated strategy when all passed; else a skipped result."""
        for check in self._after:
            result = await apply_strategy(
                check.evaluate, check.name, sample, output, inline=check.inline
            )
            if not result.passed:
                why = result.explanation or ("unscored" if result.is_unscored else "failed")
                return EvaluationResult.skip(
                    f"not run: the check {check.name} did not pass ({why})",
                    {"gate": check.name, "gate_passed": False},
                )
        inner = self._inner
        result = await apply_strategy(
            inner.evaluate, inner.name, sample, output, inline=inner.inline
        )
        return result.with_metadata({"gate": "passed"})

    def _config(self) -> dict[str, Any]:
        return {
            "strategy": strategy_name(self._strategy),
            "after": list(self.checks),
        }


GatedStrategy = Gated
"""The class's public name, with the ``Strategy`` suffix every other strategy has."""
