"""Online evaluation: evaluate a live service's responses in the background.

``OnlineEvaluator`` runs inside the service (created in its lifespan), samples which
strategies run on each response, evaluates off the request path with bounded queue and
concurrency, and accounts for every response it was given (see ``docs/online.md``).
"""

from __future__ import annotations

from .._util._publish import publish as _publish
from ._evaluator import OnlineEvaluator
from ._sampling import RateFunction, Sampler, SampleRates
from ._statistics import OnlineStatistics
from ._window import Since, WindowScore

__all__ = [
    "OnlineEvaluator",
    "OnlineStatistics",
    "RateFunction",
    "SampleRates",
    "Sampler",
    "Since",
    "WindowScore",
]

_publish(globals(), __all__, __name__)
