"""A package's names that load their module on first use (PEP 562), and the names it keeps
for one release behind a :class:`DeprecationWarning`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    namespace: MutableMapping[str, Any],
    modules: Mapping[str, str],
    *,
    deprecated: Mapping[str, tuple[str, str]] | None = None,
    claim: Callable[[object], None] | None = None,
) -> Callable[[str], object]:
    """The module ``__getattr__`` of the package (or module) whose globals are ``namespace``.

    Args:
        namespace: The package's globals.
        modules: Public name to the relative module that defines it (relative as an import
            in that package or module is), imported on first use; the value is kept in the
            package. A name mapped to ``".<name>"`` is that
            subpackage itself.
        deprecated: Name to (relative module, what to use instead): the name still resolves
            to its module's object but warns with a :class:`DeprecationWarning` on every use.
        claim: Called with each public value once, when it is first loaded.

    Any other name is an ``AttributeError``.
    """
    package = namespace["__name__"]
    anchor = namespace.get("__package__") or package
    old_names = dict(deprecated or {})

    def __getattr__(name: str) -> object:
        old = old_names.get(name)
        if old is not None:
            old_module, instead = old
            warnings.warn(
                f"{package}.{name} is deprecated and leaves {package} in the next release: "
                f"{instead}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(importlib.import_module(old_module, anchor), name)
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == f".{name}":
            return importlib.import_module(module, anchor)
        value = getattr(importlib.import_module(module, anchor), name)
        if claim is not None:
            claim(value)
        namespace[name] = value
        return value

    return __getattr__
