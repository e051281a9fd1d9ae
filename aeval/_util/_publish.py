"""Name a package's public home for the names it re-exports from private modules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["claim", "publish"]


def claim(value: object, home: str) -> None:
    """Set ``value.__module__`` to ``home`` if it names a private aeval module.

    Names already claimed by another public module, and values from outside aeval (typing
    aliases, builtins), are left as they are.
    """
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or not module.startswith("aeval."):
        return
    if any(part.startswith("_") for part in module.split(".")[1:]):
        value.__module__ = home


def publish(namespace: Mapping[str, object], names: Iterable[str], home: str) -> None:
    """Claim each of ``names`` in ``namespace`` (a module's globals) for ``home``."""
    for name in names:
        claim(namespace[name], home)
