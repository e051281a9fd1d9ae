"""One registry for the plugins of a kind (sample loaders, report formatters).

A registry holds built-ins, explicit registrations and the objects declared in an
entry-point group, which are loaded once, the first time the registry is used (never at
import). Plugins are kept in priority order (higher first, then registration order);
each has a key, and registering a plugin whose key is taken replaces the old one or is an
error, as the registry says. :meth:`PluginRegistry.isolated` gives a test a registry of
built-ins only and restores the previous state afterwards.

Reading the entry points through :mod:`importlib.metadata` costs its import (about 20 ms)
and a parse of every distribution's ``entry_points.txt``. When that module is not imported
yet, :func:`may_declare` first reads those files as bytes, where ``importlib.metadata`` would
find them: when none names the group, the group has no entry point and nothing more is read;
otherwise ``importlib.metadata`` reads them, as always.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.machinery import PathFinder
from typing import Any, Generic, TypeVar

__all__ = ["PluginRegistry", "may_declare"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Entry(Generic[_T]):
    plugin: _T
    key: Hashable
    priority: int
    order: int


class PluginRegistry(Generic[_T]):
    """The plugins of one kind.

    Args:
        group: The entry-point group (``aeval.loaders``, ``aeval.formatters``).
        key: The identity of a plugin: a second plugin with the same key replaces the first
            (or is refused, see ``replace``).
        build: Loads an entry point (an ``importlib.metadata.EntryPoint``) and returns its
            plugin, raising the kind's own error, naming the entry point, when it cannot.
        builtins: Makes the built-in plugins (called again for :meth:`isolated`).
        duplicate: Builds the error raised when a key is taken and ``replace`` is false;
            ``None`` means a registration always replaces.
        same: Whether an entry point's plugin is the one already registered under its key
            (then it is skipped, not a clash); by default, whether they have the same type.
    """

    def __init__(
        self,
        *,
        group: str,
        key: Callable[[_T], Hashable],
        build: Callable[[Any], _T],
        builtins: Callable[[], Iterable[_T]],
        duplicate: Callable[[_T, _T], Exception] | None = None,
        same: Callable[[_T, _T], bool] | None = None,
    ) -> None:
        self.group = group
        self._key = key
        self._build = build
        self._builtins = builtins
        self._duplicate = duplicate
        self._same = same if same is not None else _same_type
        self._lock = threading.RLock()
        self._counter = itertools.count()
        self._entries: list[_Entry[_T]] = []
        self._entry_points_loaded = False
        for plugin in builtins():
            self._add(plugin, priority=0, replace=False)

    def _add(self, plugin: _T, *, priority: int, replace: bool) -> None:
        key = self._key(plugin)
        with self._lock:
            taken = next((e for e in self._entries if e.key == key), None)
            if taken is not None and not replace and self._duplicate is not None:
                raise self._duplicate(taken.plugin, plugin)
            kept = [e for e in self._entries if e.key != key]
            order = taken.order if taken is not None and self._duplicate is not None else None
            if order is None:
                order = next(self._counter)
            kept.append(_Entry(plugin, key, priority, order))
            self._entries = kept

    def register(self, plugin: _T, *, priority: int = 0, replace: bool = False) -> _T:
        """Add ``plugin``, loading the entry points first so that they cannot override it."""
        self._load_entry_points()
        self._add(plugin, priority=priority, replace=replace)
        return plugin

    def unregister(self, key: Hashable) -> _T | None:
        """Remove the plugin with ``key``; return it, or ``None`` when there is none."""
        self._load_entry_points()
        with self._lock:
            found = next((e for e in self._entries if e.key == key), None)
            if found is not None:
                self._entries = [e for e in self._entries if e is not found]
        return None if found is None else found.plugin

    def get(self, key: Hashable) -> _T | None:
        """The plugin with ``key``, or ``None``."""
        self._load_entry_points()
        return next((e.plugin for e in self._entries if e.key == key), None)

    def plugins(self) -> list[_T]:
        """Every plugin, higher priority first, then in registration order."""
        self._load_entry_points()
        with self._lock:
            entries = sorted(self._entries, key=lambda e: (-e.priority, e.order))
        return [e.plugin for e in entries]

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        with self._lock:
            if self._entry_points_loaded:
                return
            if "importlib.metadata" not in sys.modules and not may_declare(self.group):
                self._entry_points_loaded = True
                return

            loaded: list[tuple[_T, int]] = []
            for entry_point in _entry_points(self.group):
                plugin = self._build(entry_point)
                loaded.append((plugin, _priority(plugin)))
            for plugin, priority in loaded:
                taken = self.get_loaded(self._key(plugin))
                if taken is not None and self._same(taken, plugin):
                    continue
                self._add(plugin, priority=priority, replace=False)
            self._entry_points_loaded = True

    def get_loaded(self, key: Hashable) -> _T | None:
        """The plugin with ``key`` among those registered so far (entry points not loaded)."""
        return next((e.plugin for e in self._entries if e.key == key), None)

    @contextmanager
    def isolated(self, *, entry_points: bool = False) -> Iterator[PluginRegistry[_T]]:
        """Within the block, the registry holds the built-ins only; then the old state returns.

        Args:
            entry_points: Load the entry-point group again on first use inside the block
                (to test a plugin declared by a package); by default none is loaded.
        """
        with self._lock:
            saved = (self._entries, self._entry_points_loaded)
            self._entries = []
            for plugin in self._builtins():
                self._add(plugin, priority=0, replace=False)
            self._entry_points_loaded = not entry_points
        try:
            yield self
        finally:
            with self._lock:
                self._entries, self._entry_points_loaded = saved


def _entry_points(group: str) -> list[Any]:
    """``importlib.metadata.entry_points(group=group)``, or, when one distribution on
    ``sys.path`` breaks it (CPython 3.11 raises ``TypeError`` for a zip whose metadata has
    no ``Name``), the group's entry points of every distribution that can be read, each
    name once (the first on ``sys.path``), with a warning naming what was passed over."""
    import importlib.metadata

    try:
        return list(importlib.metadata.entry_points(group=group))
    except Exception as exc:
        failure = exc
    found: list[Any] = []
    seen: set[str] = set()
    skipped: list[str] = []
    for distribution in importlib.metadata.distributions():
        where = distribution.locate_file("")
        try:
            metadata = distribution.metadata
            if "Name" not in metadata or not metadata["Name"]:
                skipped.append(f"{where} (its metadata has no Name)")
                continue
            name = metadata["Name"]
            points = [point for point in distribution.entry_points if point.group == group]
        except Exception as exc:
            skipped.append(f"{where} ({type(exc).__name__}: {exc})")
            continue
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key not in seen:
            seen.add(key)
            found.extend(points)
    warnings.warn(
        f"aeval: reading the {group!r} entry points failed "
        f"({type(failure).__name__}: {failure}); the distributions that can be read were "
        f"read, and these were passed over: {'; '.join(skipped) or 'none'}. Fix or remove "
        "them from sys.path.",
        RuntimeWarning,
        stacklevel=1,
    )
    return found


_SKIPPED_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
"""The errors :mod:`importlib.metadata` takes for "no such file" when it reads one."""


def may_declare(group: str) -> bool:
    """Whether a distribution on ``sys.path`` may declare entry points in ``group``.

    ``False`` means that ``importlib.metadata.entry_points(group=group)`` is empty: no
    ``entry_points.txt`` of a ``*.dist-info`` or ``*.egg-info`` folder on ``sys.path`` names
    the group, and nothing else can hold one (another finder of distributions on
    ``sys.path``'s meta path, a ``sys.path`` entry that is a zip file or an egg, a file that
    cannot be read or decoded, which ``importlib.metadata`` would read or refuse). When in
    doubt it says ``True``.
    """
    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None) is not None:
            return True
    needle = group.encode()
    for entry in sys.path:
        try:
            root = os.fspath(entry) or "."
            if os.path.basename(root).lower().endswith(".egg"):
                return True
            children = os.scandir(root)
        except FileNotFoundError:
            continue
        except (OSError, TypeError, ValueError):
            return True
        with children:
            for child in children:
                if not child.name.lower().endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(child.path, "entry_points.txt"), "rb") as handle:
                        text = handle.read()
                except _SKIPPED_ERRORS:
                    continue
                except OSError:
                    return True
                if needle in text:
                    return True
                try:
                    text.decode()
                except UnicodeDecodeError:
                    return True
    return False


def _same_type(a: object, b: object) -> bool:
    return type(a) is type(b)


def _priority(plugin: object) -> int:
    priority = getattr(plugin, "priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise TypeError(f"{plugin!r}: a plugin's priority must be an int, got {priority!r}")
    return priority
