"""A package's names that load their module on first use (PEP 562), and the names it keeps
for one release behind a :class:`DeprecationWarning`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from ._publish import claim as _claim, publish

__all__ = ["lazy_names", "lazy_package"]


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


def lazy_package(
    namespace: MutableMapping[str, Any],
    modules: Mapping[str, str],
    *,
    deprecated: Mapping[str, tuple[str, str]] | None = None,
    claim: bool = False,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of the package whose globals are
    ``namespace``, which holds its ``__all__`` already.

    The names of ``__all__`` bound already are claimed for the package (see
    :func:`~aeval._util._publish.publish`); the others load on first use (see
    :func:`lazy_names`, with ``modules`` and ``deprecated``), claimed for it too when
    ``claim``. ``__dir__`` lists the package's globals and every name of its ``__all__``.
    """
    package = namespace["__name__"]
    public = namespace["__all__"]
    publish(namespace, (name for name in public if name not in modules), package)

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    def claimed(value: object) -> None:
        _claim(value, package)

    getter = lazy_names(namespace, modules, deprecated=deprecated, claim=claimed if claim else None)
    return getter, __dir__
