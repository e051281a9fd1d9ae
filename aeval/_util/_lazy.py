"""A package's names that load their module on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: MutableMapping[str, Any], modules: Mapping[str, str]
) -> Callable[[str], object]:
    """The module ``__getattr__`` of the package whose globals are ``namespace``: a name of
    ``modules`` (name to relative module) is imported from its module on first use and kept
    in the package, any other name is an ``AttributeError``."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
