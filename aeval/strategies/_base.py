"""The strategy contract and the base class of the text strategies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from .._reporting._results import EvaluationResult
from ..abc import Strategy

if TYPE_CHECKING:
    from .._samples import EvaluationSample

__all__ = ["NamedStrategy", "Strategy", "TextStrategy", "inline"]

_S = TypeVar("_S")

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


def inline(strategy: _S) -> _S:
    """Mark a sync strategy as pure and quick: it runs on the event loop, not in a thread.

    A plain (sync) strategy may block (an HTTP call to a moderation API), so by default the
    Scorer and the online evaluator call it in a worker thread: the loop stays responsive
    and ``timeout=`` abandons a call that hangs. The hand-off costs far more than a check
    that only computes (measured in docs/performance.md: tens of microseconds a row, against
    a few for the check itself). Mark such a strategy with ``@inline`` and it is called on
    the event loop, as the built-in text checks are.

    The price: a call on the event loop cannot be interrupted. ``timeout=`` does not stop a
    marked strategy that runs long (it bounds only an awaitable it returns), and while it
    runs nothing else on the loop does. Mark only strategies that return quickly and never
    wait on I/O.

    Works on a function (or a ``functools.partial``), on a class whose instances have a
    sync ``evaluate`` method, and on such an instance when it can take an attribute.

    Example:
        >>> from aeval import EvaluationResult
        >>> @inline
        ... def short_enough(sample, output):
        ...     return EvaluationResult.from_boolean(len(output) <= 200)

    Args:
        strategy: The strategy to mark.

    Returns:
        The same strategy, marked.

    Raises:
        TypeError: ``strategy`` is an ``async`` callable (it runs on the loop already), or
            an instance that cannot take the mark (mark its class instead).
    """
    from .._engine._callables import is_async_callable

    target = getattr(strategy, "evaluate", strategy)
    if is_async_callable(target):
        raise TypeError(
            f"{strategy!r} is async: it runs on the event loop already; @inline is for "
            "sync strategies"
        )
    try:
        strategy._runs_inline = True  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        raise TypeError(
            f"{type(strategy).__name__} instances cannot be marked (no attribute can be set "
            f"on them): mark the class instead, @inline on class {type(strategy).__name__}"
        ) from None
    return strategy
