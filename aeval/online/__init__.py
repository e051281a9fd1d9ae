"""Online evaluation: evaluate a live service's responses in the background.

``OnlineEvaluator`` runs inside the service (created in its lifespan), samples which
strategies run on each response, evaluates off the request path with bounded queue and
concurrency, and accounts for every response it was given (see ``docs/online.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import lazy_names as _lazy_names
from .._util._publish import publish as _publish
from ._evaluator import OnlineEvaluator
from ._statistics import OnlineStatistics

if TYPE_CHECKING:
    from ._sampling import (
        RateFunction as RateFunction,
        Sampler as Sampler,
        SampleRates as SampleRates,
    )
    from ._window import Since as Since, WindowScore as WindowScore

_ALIAS = "it is aeval's own type alias; pass what it names: {0}"

_RETURNED = "it is a value aeval hands back ({0}); use it where it is returned"

_DEPRECATED: dict[str, tuple[str, str]] = {
    "Sampler": (
        "._sampling",
        "it is aeval's own machinery: OnlineEvaluator(sample_rates=...) builds one "
        "(online.sampler)",
    ),
    "RateFunction": ("._sampling", _ALIAS.format("a function (name, input, output) -> rate")),
    "SampleRates": ("._sampling", _ALIAS.format("a rate, a {name: rate} mapping or a function")),
    "Since": ("._window", _ALIAS.format("seconds, a datetime or a timedelta")),
    "WindowScore": (
        "._window",
        _RETURNED.format("online.by_strategy(), online.by_tag()"),
    ),
}
"""Names that left ``__all__``: each still resolves for one release, with a
:class:`DeprecationWarning` saying what to use instead."""

__getattr__ = _lazy_names(globals(), {}, deprecated=_DEPRECATED)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "OnlineEvaluator",
    "OnlineStatistics",
]

_publish(globals(), __all__, __name__)
