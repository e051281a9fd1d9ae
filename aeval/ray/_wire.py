"""How samples, rows and strategies travel between the driver and the workers.

Ray's own serialiser is cloudpickle; aeval's values hold read-only mappings
(``types.MappingProxyType``), which pickle cannot copy, so they travel as plain dicts and are
made read-only again on arrival. Batches travel as one blob each, so Ray handles one object
per batch rather than one per row.
"""

from __future__ import annotations

import importlib
import io
from collections import ChainMap
from types import MappingProxyType
from typing import Any

from .._exceptions import MissingExtraError

__all__ = ["dumps", "import_ray", "loads"]


def import_ray() -> Any:
    """The ``ray`` module, or a ``MissingExtraError`` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError(
            "the Ray executor needs Ray: pip install 'aeval-engine[ray]' "
            "(or pip install 'ray>=2.40'), or run without --executor ray"
        ) from exc
    return ray


def _read_only(data: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(data)


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, tuple[Any, ...]]:
    return _read_only, (dict(proxy),)


def dumps(value: object) -> bytes:
    """Serialise ``value`` with cloudpickle (functions and classes by value where needed)."""
    cloudpickle: Any = importlib.import_module("ray.cloudpickle")
    buffer = io.BytesIO()
    pickler = cloudpickle.CloudPickler(buffer, protocol=5)
    pickler.dispatch_table = ChainMap({MappingProxyType: _reduce_proxy}, pickler.dispatch_table)
    pickler.dump(value)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """Read what :func:`dumps` wrote."""
    import pickle

    return pickle.loads(data)
