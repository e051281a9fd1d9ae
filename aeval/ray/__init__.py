"""Evaluations on a Ray cluster (the ``aeval-engine[ray]`` extra).

``Scorer(concurrency=100, executor=RayExecutor(workers=8))`` evaluates on eight async Ray
actors, each running aeval's own Scorer with a concurrency of 100, and absorbs every row in
this process: the report, sinks, streaming and progress work as in one process. Importing
this module does not import Ray; the executor does when it runs.
"""

from __future__ import annotations

from .._util._publish import publish as _publish
from ._executor import RayExecutor
from ._limits import LimitUsage

__all__ = ["LimitUsage", "RayExecutor"]

_publish(globals(), __all__, __name__)
