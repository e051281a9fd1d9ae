"""Which strategies run on a response: a sample rate per strategy, drawn once per response."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from .._util._numbers import check_fraction

__all__ = ["RateFunction", "SampleRates", "Sampler", "review_sampler"]

RateFunction: TypeAlias = Callable[[str, Any, Any], float]
"""``rate(strategy_name, inputs, output) -> float`` in [0, 1], asked per response."""

SampleRates: TypeAlias = float | Mapping[str, float] | RateFunction
"""One rate for every strategy, a rate per strategy name (others 1.0), or a function."""


class Sampler:
    """Decides, per response, which strategies run.

    One uniform number ``u`` is drawn per response and strategy ``i`` runs when
    ``u < rate_i``: the draws are *nested*, so a strategy sampled at 10 % runs on a subset of
    the responses that one sampled at 50 % runs on (two judges at 10 % judge the same
    responses, which makes them comparable). With a ``seed`` the decisions are the same for
    the same sequence of responses.

    Args:
        names: The strategies' names, in order.
        rates: See :data:`SampleRates`; ``None`` means 1.0 for every strategy.
        seed: Seeds the draws; ``None`` seeds from the system.

    Raises:
        ValueError: A rate is outside [0, 1], or a mapping names no strategy of the evaluator.
        TypeError: A rate is not a number, or ``rates`` is none of the accepted kinds.
    """

    __slots__ = ("_all", "_always", "_every", "_function", "_names", "_random", "_rates")

    def __init__(self, names: tuple[str, ...], rates: SampleRates | None, *, seed: int | None):
        self._names = names
        self._random = random.Random(seed).random
        self._function: RateFunction | None = None
        if rates is None:
            self._rates = (1.0,) * len(names)
        elif isinstance(rates, Mapping):
            unknown = sorted(set(rates) - set(names))
            if unknown:
                raise ValueError(
                    f"sample_rates names no strategy called {', '.join(map(repr, unknown))}; "
                    f"the strategies are {', '.join(map(repr, names))}"
                )
            self._rates = tuple(
                check_fraction(rates.get(name, 1.0), f"the sample rate of {name}") for name in names
            )
        elif callable(rates):
            self._function = rates
            self._rates = ()
        else:
            self._rates = (check_fraction(rates, "sample_rates"),) * len(names)
        self._all = tuple(range(len(names)))
        self._always = self._function is None and all(rate >= 1.0 for rate in self._rates)
        # what select() returns when no draw can change it (else empty): the evaluator reads
        # it without a call per response
        self._every: tuple[int, ...] = self._all if self._always else ()

    @property
    def rates(self) -> Mapping[str, float] | None:
        """The fixed rate of each strategy; ``None`` when a function decides."""
        if self._function is not None:
            return None
        return dict(zip(self._names, self._rates, strict=True))

    def select(self, inputs: Any, output: Any) -> tuple[int, ...]:
        """The positions of the strategies that run on this response (maybe none).

        Raises:
            Exception: Whatever a rate function raised, or a ``TypeError``/``ValueError`` for
                a rate it returned outside [0, 1].
        """
        if self._always:  # every strategy on every response: no draw can change that
            return self._all
        u = self._random()
        if self._function is None:
            rates = self._rates
        else:
            function = self._function
            rates = tuple(
                check_fraction(function(name, inputs, output), f"the rate returned for {name}")
                for name in self._names
            )
        return tuple(i for i in self._all if u < rates[i])


def review_sampler(rate: object, seed: int | None) -> Callable[[], bool]:
    """Draws, per evaluated response, whether it is queued for review (``rate`` of them).

    The draws are apart from the strategies' (another stream), and reproducible for a
    ``seed`` and the same sequence of responses.

    Raises:
        TypeError, ValueError: ``rate`` is not a number between 0 and 1.
    """
    value = check_fraction(rate, "review_rate")
    if value == 0.0:
        return lambda: False
    draw = random.Random(None if seed is None else f"review:{seed}").random
    return lambda: draw() < value
