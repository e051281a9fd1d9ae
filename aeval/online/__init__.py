"""Online evaluation: evaluate a live service's responses in the background.

``OnlineEvaluator`` runs inside the service (created in its lifespan), samples which
strategies run on each response, evaluates off the request path with bounded queue and
concurrency, and accounts for every response it was given (see ``docs/online.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import (
    lazy_package as _lazy_package,
    returned as _returned,
    type_alias as _type_alias,
)
from ._evaluator import OnlineEvaluator
from ._statistics import OnlineStatistics

if TYPE_CHECKING:
    from ._sampling import (
        RateFunction as RateFunction,
        Sampler as Sampler,
        SampleRates as SampleRates,
    )
    from ._window import Since as Since, WindowScore as WindowScore

_DEPRECATED: dict[str, tuple[str, str]] = {
    "Sampler": (
        "._sampling",
        "it is aeval's own machinery: OnlineEvaluator(sample_rates=...) builds one "
        "(online.sampler)",
    ),
    "RateFunction": (
        "._sampling",
        _type_alias("pass what it names: a function (name, input, output) -> rate"),
    ),
    "SampleRates": (
        "._sampling",
        _type_alias("pass what it names: a rate, a {name: rate} mapping or a function"),
    ),
    "Since": ("._window", _type_alias("pass what it names: seconds, a datetime or a timedelta")),
    "WindowScore": ("._window", _returned("online.by_strategy(), online.by_tag()")),
}

__all__ = [
    "OnlineEvaluator",
    "OnlineStatistics",
]

__getattr__, __dir__ = _lazy_package(globals(), {}, deprecated=_DEPRECATED)
