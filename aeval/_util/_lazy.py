"""A package's names that load their module on first use (PEP 562), and the names it keeps
for one release behind a :class:`DeprecationWarning`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from ._publish import claim as _claim, publish

__all__ = [
    "ABC",
    "MACHINERY",
    "RETURNED",
    "deprecations",
    "lazy_names",
    "lazy_package",
    "name_modules",
    "returned",
    "type_alias",
]

ABC = "import it from aeval.abc, where every contract lives (the same object)"
"""Why a contract left a package: :mod:`aeval.abc` is its one home."""

MACHINERY = "it is aeval's own machinery, not a user's concept"
"""Why a name of aeval's inner workings left a package."""

RETURNED = "it is a value aeval hands back; use it where it is returned, no import needed"
"""Why the type of a value aeval returns left a package."""


def returned(where: str) -> str:
    """Why the type of the value that ``where`` (a call) returns left a package."""
    return f"it is a value aeval hands back ({where}); use it where it is returned"


def type_alias(advice: str) -> str:
    """Why a type alias left a package, and ``advice`` on what to write instead."""
    return f"it is aeval's own type alias; {advice}"


def name_modules(modules: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Each name of ``modules`` (a module to the names it defines) to its module."""
    return {name: module for module, names in modules.items() for name in names}


def deprecations(why: str, modules: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, str]]:
    """A package's table of deprecated names (see :func:`lazy_names`) that all left it for
    the same reason, ``why``: each name of ``modules`` (a module to the names it defines) to
    its module and ``why``."""
    return {name: (module, why) for name, module in name_modules(modules).items()}


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
        deprecated: Name to (relative module, what to use instead), for the names that left
            the package's ``__all__`` (its ``_DEPRECATED``): each still resolves to its module's
            object for one release, with a :class:`DeprecationWarning` on every use saying
            what to use instead.
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
    ``claim``. ``__dir__`` lists the package's globals, every name of its ``__all__`` and the
    subpackages of ``modules``.
    """
    package = namespace["__name__"]
    public = namespace["__all__"]
    publish(namespace, (name for name in public if name not in modules), package)
    listed = {*public, *(name for name, module in modules.items() if module == f".{name}")}

    def __dir__() -> list[str]:
        return sorted({*namespace, *listed})

    def claimed(value: object) -> None:
        _claim(value, package)

    getter = lazy_names(namespace, modules, deprecated=deprecated, claim=claimed if claim else None)
    return getter, __dir__
