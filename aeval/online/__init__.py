"""Online evaluation: evaluate a live service's responses in the background.

``OnlineEvaluator`` runs inside the service (created in its lifespan), samples which
strategies run on each response, evaluates off the request path with bounded queue and
concurrency, and accounts for every response it was given (see ``docs/online.md``).
"""

from __future__ import annotations

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

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("aeval.online._"):
        _obj.__module__ = "aeval.online"
del _name, _obj
