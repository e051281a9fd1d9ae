"""Evaluations on a Ray cluster (the ``aeval-engine[ray]`` extra).

``Scorer(concurrency=100, executor=RayExecutor(workers=8))`` evaluates on eight async Ray
actors, each running aeval's own Scorer with a concurrency of 100, and absorbs every row in
this process: the report, sinks, streaming and progress work as in one process. Importing
this module does not import Ray; the executor does when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import RETURNED as _RETURNED, lazy_package as _lazy_package
from ._executor import RayExecutor

if TYPE_CHECKING:
    from ._limits import LimitUsage as LimitUsage

_DEPRECATED: dict[str, tuple[str, str]] = {
    "LimitUsage": ("._limits", _RETURNED),
}

__all__ = ["RayExecutor"]

__getattr__, __dir__ = _lazy_package(globals(), {}, deprecated=_DEPRECATED)
