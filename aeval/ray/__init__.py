"""Evaluations on a Ray cluster (the ``aeval-engine[ray]`` extra).

``Scorer(concurrency=100, executor=RayExecutor(workers=8))`` evaluates on eight async Ray
actors, each running aeval's own Scorer with a concurrency of 100, and absorbs every row in
this process: the report, sinks, streaming and progress work as in one process. Importing
this module does not import Ray; the executor does when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util._lazy import lazy_names as _lazy_names
from .._util._publish import publish as _publish
from ._executor import RayExecutor

if TYPE_CHECKING:
    from ._limits import LimitUsage as LimitUsage

_DEPRECATED: dict[str, tuple[str, str]] = {
    "LimitUsage": (
        "._limits",
        "it is a value aeval hands back; use it where it is returned, no import needed",
    ),
}
"""Names that left ``__all__``: each still resolves for one release, with a
:class:`DeprecationWarning` saying what to use instead."""

__getattr__ = _lazy_names(globals(), {}, deprecated=_DEPRECATED)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = ["RayExecutor"]

_publish(globals(), __all__, __name__)
