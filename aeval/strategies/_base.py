"""The strategy contract and the base class of the text strategies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from .._reporting._results import EvaluationResult
from ..abc import Strategy

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["NamedStrategy", "Strategy", "TextStrategy"]

_OUTPUT_IS_NONE = EvaluationResult.failing("output is None")


class NamedStrategy:
    """Base of the built-in strategies: the name their rows carry, and their ``repr``.

    Subclasses list their options in :meth:`_config` (constructor order); ``repr`` shows
    them, then the name when one was given.

    Args:
        name: The name the report gives this strategy's rows; the class name by default.
    """

    __slots__ = ("_name",)

    def __init__(self, *, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValueError(f"name must be a non-blank string or None, got {name!r}")
        self._name = name

    @property
    def name(self) -> str:
        """The name of this strategy's rows in a report."""
        return self._name if self._name is not None else type(self).__name__

    def _config(self) -> dict[str, Any]:
        """The options shown by ``repr``, in constructor order."""
        return {}

    def __repr__(self) -> str:
        options = self._config()
        if self._name is not None:
            options["name"] = self._name
        shown = ", ".join(f"{key}={value!r}" for key, value in options.items())
        return f"{type(self).__name__}({shown})"


class TextStrategy(NamedStrategy):
    """Base of the synchronous strategies that judge the text of an output.

    Subclasses implement :meth:`_evaluate_text`; :meth:`evaluate` fails a ``None`` output
    with the explanation ``"output is None"`` and turns any other non-``str`` output into
    text with ``str()``. Subclasses that read richer outputs override :meth:`evaluate` and
    fall back to ``super().evaluate``.

    Text checks are pure and cheap, so they run on the event loop rather than in a worker
    thread (``_runs_inline``): the hand-off would cost more than the check. A subclass that
    may block sets ``_runs_inline = False``.

    Args:
        name: The name the report gives this strategy's rows; the class name by default.
    """

    __slots__ = ()
    _runs_inline: ClassVar[bool] = True

    def evaluate(self, sample: EvaluationSample, output: Any) -> EvaluationResult:
        """Judge ``output`` against ``sample``."""
        if output is None:
            return _OUTPUT_IS_NONE
        return self._evaluate_text(sample, output if isinstance(output, str) else str(output))

    def _evaluate_text(self, sample: EvaluationSample, text: str) -> EvaluationResult:
        raise NotImplementedError(f"{type(self).__name__} must implement _evaluate_text")
